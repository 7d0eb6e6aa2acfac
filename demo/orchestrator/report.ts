/**
 * The machine-readable report of a demo run (`--report <file.json>`, shape fixed by issue 5):
 * `{ patients: [{ name, birthDate, patientId, sent, written, refused }], defences, audit, emr, durationMs }`.
 * `written` counts what is in the EMR store at the end of the run and came from this input (by source identity),
 * so a rerun reports the same numbers; `created` (an extension) says how much of it this run added.
 */
import type { EmrStore } from "../emr-store/store.js";
import type { PatientRun, TaskRun } from "./orchestrator.js";
import type { DatabaseKind } from "../runtime/instances.js";

export interface DemoReport {
  patients: Array<{
    name: string;
    birthDate: string;
    patientId: string | null;
    sent: Record<string, number>;
    written: Record<string, number>;
    /** Of `written`, what this run added to the store, by type; the rest was already there (a rerun: none). An extension of the shape. */
    created: Record<string, number>;
    /** One entry per (type, reason); `count` says how many resources (an extension of the shape). */
    refused: Array<{ resourceType: string; reason: string; count: number }>;
    /**
     * The MCP tasks the EMR agent ran this patient's writes as, one per encounter (MCP 2026-07-28; `[]` on the legacy
     * era): task id, final status and `life` (`working`, one `input_required (<method>)` per question, the final
     * status). Ids and statuses only, no PHI. An extension of the shape.
     */
    tasks: TaskRun[];
    /** A resource this run wrote, read back through its `resource_link` (`resources/read`). An extension of the shape. */
    readBack?: { uri: string; resourceType: string };
  }>;
  /** The defences shown after the writes; `deidentified`: a record read for an outside model came back de-identified. */
  defences: {
    injectionBlocked: boolean;
    insufficientScopeRefused: boolean;
    crossPatientRefused: boolean;
    deidentified: boolean;
    /** What the outside model's client replaced in that record (`_meta["hmcp/redactions"]`: entity type → count). */
    redactions?: Record<string, number>;
  };
  /**
   * `files`, `dir`, `publicKey` (the checkpoint key, to re-verify with `hmcp audit verify`), `anchors` (the JSON Lines
   * file of checkpoint anchors, kept outside `dir`) and `anchored` (anchors in it) extend the shape.
   */
  audit: { file: string; files: string[]; records: number; verified: boolean; dir: string; publicKey: string; anchors: string; anchored: number; error?: string };
  /** The MCP protocol era the clients spoke: "modern" (2026-07-28) or "legacy" (2025-11-25). An extension of the shape. */
  era: "modern" | "legacy";
  /**
   * `--instances <n>`: each agent ran as `count` processes behind `proxy`, sharing one PostgreSQL (`database`). Per
   * instance: its audit chain (`chain`: it wrote one, which an instance that served nothing has not; `records`,
   * `verified` against its own checkpoint key and the anchors) and what it served,
   * read from that chain (`served`: records by MCP method; `tasksCompleted`: write tasks whose run finished there).
   * An extension of the shape.
   */
  instances?: {
    count: number;
    proxy: "haproxy" | "http-proxy-3";
    database: DatabaseKind;
    agents: Array<{ id: string; agent: "emr-writeback" | "patient-data"; url: string; chain: boolean; records: number; verified: boolean; error?: string; served: Record<string, number>; tasksCompleted: number }>;
  };
  emr: { dataDir: string } | { databaseUrl: string };
  durationMs: number;
}

/**
 * Counts, per patient and type, the stored resources whose source identity is one this patient's input sent,
 * stored under that patient's id. A resource stored under another id is not counted (and would be a bug).
 */
export async function countWritten(store: EmrStore, runs: PatientRun[]): Promise<Array<Record<string, number>>> {
  const out: Array<Record<string, number>> = [];
  for (const run of runs) {
    const counts: Record<string, number> = {};
    if (run.patientId) {
      for (const row of await store.findBySourceKeys(run.sourceKeys)) {
        if (row.patientId !== run.patientId) continue;
        counts[row.resourceType] = (counts[row.resourceType] ?? 0) + 1;
      }
    }
    out.push(counts);
  }
  return out;
}
