/**
 * End to end on all 30 bundles of ../shared/data/synthea with --all: every clinical resource of each bundle is in
 * the EMR store exactly once, under the right patient id, with its values unchanged; the audit chain verifies.
 */
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runDemo } from "../../demo/run-demo.js";
import { isClinicalType, type FhirResource } from "../../demo/fhir/resource.js";
import { diffStored, EmrStore, syntheaData, tempDir } from "./demo-helpers.js";

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanup) await c();
});

describe("demo --all on the 30 Synthea bundles", () => {
  // 735 encounters, each a full HMCP exchange and, on MCP 2026-07-28 (the default), an MCP task: created, polled, asked
  // twice (approval, summary) and answered with tasks/update; 77 s to 203 s on the 2-core machine, by its load
  it("stores every clinical resource exactly once, for the right patient, unchanged; audit verifies", { timeout: 480_000 }, async () => {
    const tmp = await tempDir("hmcp-demo-e2e-");
    cleanup.push(tmp.remove);
    const store = { dataDir: path.join(tmp.dir, "emr") };
    const { report, ok } = await runDemo({ dataDir: syntheaData, store, auditRoot: path.join(tmp.dir, "audit"), all: true, out: null });

    expect(report.audit.verified).toBe(true);
    expect(report.audit.records).toBeGreaterThan(30);
    expect(report.defences.insufficientScopeRefused).toBe(true);
    expect(report.defences.crossPatientRefused).toBe(true);
    expect(report.patients).toHaveLength(30);
    expect(report.defences.injectionBlocked).toBe(true);
    expect(ok).toBe(true);
    // every encounter's write ran as a task that completed
    expect(report.patients.every((p) => p.tasks.length > 0 && p.tasks.every((t) => t.status === "completed"))).toBe(true);

    const db = await EmrStore.open(store);
    try {
      let expected = 0;
      const files = (await readdir(syntheaData)).filter((f) => f.endsWith(".json")).sort();
      for (const f of files) {
        const bundle = JSON.parse(await readFile(path.join(syntheaData, f), "utf8")) as { entry: Array<{ fullUrl: string; resource: FhirResource }> };
        const patientEntry = bundle.entry.find((e) => e.resource.resourceType === "Patient")!;
        const patientId = patientEntry.resource.id!;
        const clinical = bundle.entry.filter((e) => isClinicalType(e.resource.resourceType));
        expected += clinical.length;
        const rows = await db.findBySourceKeys(clinical.map((e) => e.fullUrl));
        expect(rows.length, f).toBe(clinical.length);
        const bySource = new Map(rows.map((r) => [r.sourceKey, r]));
        const refs = new Set([patientEntry.fullUrl]);
        for (const e of clinical) {
          const row = bySource.get(e.fullUrl)!;
          expect(row.patientId).toBe(patientId);
          expect(row.resourceType).toBe(e.resource.resourceType);
          expect(diffStored(e.resource, row.resource, patientId, refs), `${f} ${e.fullUrl}`).toEqual([]);
        }
        const rp = report.patients.find((p) => p.patientId === patientId)!;
        expect(Object.values(rp.written).reduce((a, b) => a + b, 0)).toBe(clinical.length);
      }
      // Nothing else in the store: no duplicates, no financial resources.
      expect(await db.count()).toBe(expected);
      expect(expected).toBe(4918);
    } finally {
      await db.close();
    }
  });
});
