/**
 * Reads and filters audit records (issue 4 "hmcp audit query"). Does not verify the chain: run
 * {@link verifyAuditFiles} first when the answer must be trusted.
 */
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { readLines } from "./lines.js";
import { StoredAuditRecordSchema, type AuditEventType, type AuditOutcome, type AuditRecordInput } from "./record.js";

/** Filters of {@link queryAudit}; all given filters must match (AND). */
export interface AuditQuery {
  /** A FHIR Patient id among the record's `patients`. */
  patient?: string;
  /** Matches the actor's `sub`, `clientId` or `fhirUser` exactly. */
  actor?: string;
  outcome?: AuditOutcome;
  /** The record's `reason`, exact (e.g. `patient_context_mismatch`, which a -32052 refusal and a patient-context guardrail block share). */
  reason?: string;
  /** MCP method (or "<HTTP method> <path>" for records of type "http"), exact. */
  method?: string;
  type?: AuditEventType;
  /** Inclusive lower bound on `time` (RFC 3339 string or Date). */
  since?: string | Date;
  /** Exclusive upper bound on `time`. */
  until?: string | Date;
  /** At most this many records (the first ones in chain order). */
  limit?: number;
}

/** Counts from a scan: lines that were not audit records (checkpoints excluded) are skipped and counted. */
export interface ScanStats {
  scanned: number;
  skipped: number;
}

/**
 * Expands directories to the `*.jsonl` files in them, sorted by name (= chain order for the files
 * {@link FileAuditSink} writes); files are kept as given.
 * @throws Error (ENOENT) when a path does not exist.
 */
export async function expandAuditPaths(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    if ((await stat(p)).isDirectory()) {
      out.push(...(await readdir(p)).filter((f) => f.endsWith(".jsonl")).sort().map((f) => path.join(p, f)));
    } else out.push(p);
  }
  return out;
}

/**
 * Streams the audit records of `files` (chain entries that are not checkpoints) matching `query`.
 * `stats` (if given) is updated with scanned and skipped line counts.
 * @throws Error when `since`/`until` are not parseable times.
 */
export async function* iterateAudit(files: string[], query: AuditQuery = {}, stats?: ScanStats): AsyncGenerator<AuditRecordInput> {
  const since = bound(query.since, "since");
  const until = bound(query.until, "until");
  let n = 0;
  for (const file of files) {
    for await (const l of readLines(file)) {
      if (stats) stats.scanned++;
      let rec: unknown;
      try {
        rec = (JSON.parse(l.text) as { record?: unknown }).record;
      } catch {
        if (stats) stats.skipped++;
        continue;
      }
      if ((rec as { type?: unknown } | undefined)?.type === "checkpoint") continue;
      const parsed = StoredAuditRecordSchema.safeParse(rec);
      if (!parsed.success) {
        if (stats) stats.skipped++;
        continue;
      }
      const r = parsed.data;
      if (!matches(r, query, since, until)) continue;
      yield r;
      if (query.limit !== undefined && ++n >= query.limit) return;
    }
  }
}

/**
 * Returns the audit records of `files` (directories expand to their `*.jsonl`) matching `query`, in chain order.
 * @throws Error when a path does not exist or `since`/`until` are not parseable times.
 */
export async function queryAudit(files: string[], query: AuditQuery = {}): Promise<AuditRecordInput[]> {
  const out: AuditRecordInput[] = [];
  for await (const r of iterateAudit(await expandAuditPaths(files), query)) out.push(r);
  return out;
}

function bound(v: string | Date | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const t = v instanceof Date ? v.getTime() : Date.parse(v);
  if (Number.isNaN(t)) throw new Error(`audit query: '${name}' is not a valid time (use RFC 3339, e.g. 2026-11-22T06:00:00Z)`);
  return t;
}

function matches(r: AuditRecordInput, q: AuditQuery, since: number | undefined, until: number | undefined): boolean {
  if (q.patient !== undefined && !r.patients.includes(q.patient)) return false;
  if (q.actor !== undefined && r.actor.sub !== q.actor && r.actor.clientId !== q.actor && r.actor.fhirUser !== q.actor) return false;
  if (q.outcome !== undefined && r.outcome !== q.outcome) return false;
  if (q.reason !== undefined && r.reason !== q.reason) return false;
  if (q.method !== undefined && r.method !== q.method) return false;
  if (q.type !== undefined && r.type !== q.type) return false;
  if (since !== undefined || until !== undefined) {
    const t = Date.parse(r.time);
    if (since !== undefined && !(t >= since)) return false;
    if (until !== undefined && !(t < until)) return false;
  }
  return true;
}
