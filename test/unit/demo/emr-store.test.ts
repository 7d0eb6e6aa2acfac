import { mkdtemp, rm, stat, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EmrStore, sourceKeyOf, type ImportItem } from "../../../demo/emr-store/store.js";
import { type ClinicalType, isClinicalType } from "../../../demo/fhir/resource.js";
import { shippedPatients } from "./fixtures.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) {
    await rm(d, { recursive: true, force: true });
    await rm(`${d}.lock`, { force: true });
  }
});

async function tempStore(): Promise<{ dir: string; store: EmrStore }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-emr-"));
  dirs.push(dir);
  return { dir, store: await EmrStore.open({ dataDir: dir }) };
}

async function encounterWithReport(): Promise<{ patientId: string; items: ImportItem[] }> {
  const p = (await shippedPatients())[0]!;
  const enc = p.encounters.find((e) => e.entries.some((x) => x.resource.resourceType === "DiagnosticReport"))!;
  const items = enc.entries
    .filter((e) => isClinicalType(e.resource.resourceType))
    .map((e) => ({ sourceKey: sourceKeyOf(e), resourceType: e.resource.resourceType as ClinicalType, resource: e.resource }));
  return { patientId: p.patient.id!, items };
}

describe("EmrStore (PGlite)", () => {
  it("writes once, rewrites references, survives reopen and ignores a retried write", async () => {
    const { dir, store } = await tempStore();
    const { patientId, items } = await encounterWithReport();
    const chunks: number[] = [];
    const first = await store.importResources(patientId, items, { chunkSize: 3, onChunk: (done) => void chunks.push(done) });
    expect(first.every((s) => s.status === "created")).toBe(true);
    expect(chunks.at(-1)).toBe(items.length);
    await store.close();

    const again = await EmrStore.open({ dataDir: dir });
    const second = await again.importResources(patientId, items);
    expect(second.map((s) => s.status)).toEqual(items.map(() => "existing"));
    expect(await again.count()).toBe(items.length);

    const reportItem = items.find((i) => i.resourceType === "DiagnosticReport")!;
    const rows = await again.findBySourceKeys([reportItem.sourceKey]);
    expect(rows).toHaveLength(1);
    const stored = rows[0]!.resource;
    expect(stored["subject"]).toEqual({ reference: `Patient/${patientId}` });
    const results = stored["result"] as Array<{ reference: string; display?: string }>;
    const sentResults = reportItem.resource["result"] as Array<{ reference: string; display?: string }>;
    for (const [i, r] of results.entries()) {
      const target = await again.findBySourceKeys([sentResults[i]!.reference]);
      expect(r.reference).toBe(`Observation/${target[0]!.id}`);
      expect(r.display).toBe(sentResults[i]!.display);
    }
    await again.close();
  });

  it("one process per store: a second opener is refused until the first closes; stale locks are taken over; the folder is private", async () => {
    const { dir, store } = await tempStore();
    await expect(EmrStore.open({ dataDir: dir })).rejects.toThrow(/is already open in this process/);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    await store.close();
    const again = await EmrStore.open({ dataDir: dir });
    expect(await again.count()).toBe(0);
    await again.close();
    // a lock left by a process that is gone is taken over, also one that had our pid (a killed earlier process: written
    // before this process started)
    const past = new Date(Date.now() - process.uptime() * 1000 - 60_000);
    for (const stale of ["999999999", String(process.pid)]) {
      await writeFile(`${dir}.lock`, stale);
      await utimes(`${dir}.lock`, past, past);
      const third = await EmrStore.open({ dataDir: dir });
      await third.close();
    }
    // our pid in a lock written since this process started is another open in it (a worker thread): refused
    await writeFile(`${dir}.lock`, String(process.pid));
    await expect(EmrStore.open({ dataDir: dir })).rejects.toThrow();
    await rm(`${dir}.lock`);
    // a live process's lock is respected
    await writeFile(`${dir}.lock`, String(process.ppid));
    await expect(EmrStore.open({ dataDir: dir })).rejects.toThrow(new RegExp(`in use by process ${process.ppid}`));
    await rm(`${dir}.lock`);
  });

  it("refuses the same source resource for another patient or with other content", async () => {
    const { store } = await tempStore();
    const { patientId, items } = await encounterWithReport();
    const one = items.slice(0, 1);
    await store.importResources(patientId, one);
    const other = await store.importResources("another-patient", one);
    expect(other[0]).toMatchObject({ status: "refused", reason: "source_patient_conflict" });
    const changed = [{ ...one[0]!, resource: { ...one[0]!.resource, status: "amended" } }];
    expect((await store.importResources(patientId, changed))[0]).toMatchObject({ status: "refused", reason: "version_conflict" });
    expect(await store.count()).toBe(1);
    await store.close();
  });
});
