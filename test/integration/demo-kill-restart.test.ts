/**
 * Crash safety of the import: the EMR agent process is killed (SIGKILL) in the middle of an `--all` run over stdio;
 * running the demo again on the same data directory completes the import with no resource missing or duplicated.
 * Also: a clean second run on the same store writes nothing new and reports the same numbers.
 */
import { spawn } from "node:child_process";
import { copyFile, mkdir, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { loadPatientBundles } from "../../demo/fhir/synthea.js";
import { startTestDatabase, testDatabaseKinds } from "../fixtures/postgres.js";
import { isClinicalType } from "../../demo/fhir/resource.js";
import type { DemoReport } from "../../demo/orchestrator/report.js";
import { EmrStore, repoRoot, shippedData, tempDir } from "./demo-helpers.js";

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanup) await c();
});

interface Run {
  code: number | null;
  stdout: string;
}

/** Runs the demo CLI; `onLine` sees each stdout line with the child's pid. */
function demo(args: string[], onLine?: (line: string, pid: number) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "demo/main.ts"), ...args], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let buf = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      buf += d;
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        onLine?.(buf.slice(0, i), child.pid!);
        buf = buf.slice(i + 1);
      }
    });
    child.stderr.resume();
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout }));
  });
}

/** Pids of the processes whose parent is `ppid` and whose command line contains `needle` (Linux /proc). */
async function childrenMatching(ppid: number, needle: string): Promise<number[]> {
  const out: number[] = [];
  for (const d of await readdir("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = await readFile(`/proc/${d}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parent !== ppid) continue;
      if ((await readFile(`/proc/${d}/cmdline`, "utf8")).includes(needle)) out.push(Number(d));
    } catch {
      // the process ended meanwhile
    }
  }
  return out;
}

async function expectCompleteStore(dataDir: string, bundles: string): Promise<number> {
  const patients = await loadPatientBundles(bundles);
  const keys = new Map<string, string>();
  for (const p of patients) for (const e of p.encounters) for (const x of e.entries) if (isClinicalType(x.resource.resourceType)) keys.set(x.fullUrl, p.patient.id!);
  const db = await EmrStore.open({ dataDir });
  try {
    const rows = await db.findBySourceKeys([...keys.keys()]);
    expect(rows.length).toBe(keys.size);
    for (const r of rows) expect(r.patientId).toBe(keys.get(r.sourceKey));
    expect(await db.count()).toBe(keys.size);
    return keys.size;
  } finally {
    await db.close();
  }
}

describe("demo crash safety and clean restart", () => {
  it("kill the EMR agent mid --all (stdio), run again: nothing missing, nothing duplicated", { timeout: 240_000 }, async () => {
    const tmp = await tempDir("hmcp-demo-kill-");
    cleanup.push(tmp.remove);
    const store = path.join(tmp.dir, "emr");
    // Three of the shipped patients keep the test short; the kill lands during the second one.
    const bundles = path.join(tmp.dir, "bundles");
    await mkdir(bundles);
    for (const f of (await readdir(shippedData)).filter((x) => /^(Claudie|Eboni|Marcos)_/.test(x))) await copyFile(path.join(shippedData, f), path.join(bundles, f));
    const common = ["--all", "--data", bundles, "--store", store, "--audit-dir", path.join(tmp.dir, "audit")];
    let killed = 0;
    let patientsDone = 0;
    const first = await demo([...common, "--transport", "stdio"], (line, pid) => {
      if (line.startsWith("✔ ") || line.startsWith("✖ ")) patientsDone++;
      // After the first patient is fully written, kill the EMR agent while the second patient's encounters go in.
      if (patientsDone === 1 && line.startsWith("▶ ") && killed === 0) {
        killed = -1;
        setTimeout(() => {
          void childrenMatching(pid, "emr-writeback/main.ts").then((pids) => {
            for (const p of pids) process.kill(p, "SIGKILL");
            killed = pids.length;
          });
        }, 400);
      }
    });
    // One agent process per patient session: the previous patient's may still be exiting when the kill lands.
    expect(killed).toBeGreaterThanOrEqual(1);
    expect(first.code).not.toBe(0);

    // The rerun may use either transport; in-process HTTP keeps the test short.
    const second = await demo([...common, "--report", path.join(tmp.dir, "report.json")]);
    expect(second.code).toBe(0);
    const total = await expectCompleteStore(store, bundles);
    const report = JSON.parse(await readFile(path.join(tmp.dir, "report.json"), "utf8")) as DemoReport;
    expect(report.patients.reduce((n, p) => n + Object.values(p.written).reduce((a, b) => a + b, 0), 0)).toBe(total);
  });

  it("npm run demo (default) twice on the same store: exit 0, same report numbers, nothing duplicated", { timeout: 120_000 }, async () => {
    const tmp = await tempDir("hmcp-demo-restart-");
    cleanup.push(tmp.remove);
    const store = path.join(tmp.dir, "emr");
    const audit = ["--audit-dir", path.join(tmp.dir, "audit")];
    const r1 = await demo(["--store", store, ...audit, "--report", path.join(tmp.dir, "r1.json")]);
    expect(r1.code).toBe(0);
    const r2 = await demo(["--store", store, ...audit, "--report", path.join(tmp.dir, "r2.json")]);
    expect(r2.code).toBe(0);
    const a = JSON.parse(await readFile(path.join(tmp.dir, "r1.json"), "utf8")) as DemoReport;
    const b = JSON.parse(await readFile(path.join(tmp.dir, "r2.json"), "utf8")) as DemoReport;
    // The same numbers, except what each run added (everything the first time, nothing the second) and the ids of the
    // MCP tasks each write ran as (one per patient's encounter, completed, on both runs).
    const withoutCreated = (r: DemoReport) => r.patients.map(({ created: _c, tasks: _t, ...p }) => p);
    for (const r of [a, b]) expect(r.patients.map((p) => p.tasks.map((t) => t.status))).toEqual(r.patients.map(() => ["completed"]));
    expect(new Set([...a.patients, ...b.patients].map((p) => p.tasks[0]!.taskId)).size).toBe(12);
    expect(withoutCreated(b)).toEqual(withoutCreated(a));
    expect(a.patients.map((p) => p.created)).toEqual(a.patients.map((p) => p.written));
    expect(b.patients.every((p) => Object.keys(p.created).length === 0)).toBe(true);
    expect(a.patients.length).toBe(6);
    expect(a.patients.every((p) => p.patientId && Object.keys(p.written).length > 0)).toBe(true);
    expect(a.audit.verified && b.audit.verified).toBe(true);
    expect(a.defences).toMatchObject({ insufficientScopeRefused: true, crossPatientRefused: true });
    // No PHI in the audit trail: no name, SSN, MRN, phone or street of any input patient.
    const patients = await loadPatientBundles(shippedData);
    const trail = (await Promise.all([...a.audit.files, ...b.audit.files].map((f) => readFile(f, "utf8")))).join("\n");
    expect(trail.length).toBeGreaterThan(0);
    for (const p of patients) {
      const ids = (p.patient["identifier"] as Array<{ value: string }>).map((i) => i.value).filter((v) => v !== p.patient.id);
      const telecom = ((p.patient["telecom"] as Array<{ value: string }> | undefined) ?? []).map((t) => t.value);
      const lines = ((p.patient["address"] as Array<{ line: string[] }> | undefined) ?? []).flatMap((x) => x.line);
      for (const phi of [...p.name.split(" "), ...ids, ...telecom, ...lines]) expect(trail.includes(phi), "audit trail contains PHI").toBe(false);
    }
    const db = await EmrStore.open({ dataDir: store });
    try {
      expect(await db.count()).toBe(a.patients.reduce((n, p) => n + Object.values(p.written).reduce((x, y) => x + y, 0), 0));
    } finally {
      await db.close();
    }
  });
});

if (testDatabaseKinds().includes("postgresql")) describe("demo EMR store on PostgreSQL (DATABASE_URL) while the server restarts", () => {
  it("[postgresql] the idle connections the restart breaks are logged by code, without PHI, and do not end the process; the store answers once the server is back", { timeout: 120_000 }, async () => {
    const pg = await startTestDatabase("postgresql");
    cleanup.push(() => pg.close());
    const store = await EmrStore.open({ databaseUrl: pg.url! });
    cleanup.push(() => store.close());
    const patientId = "restart-patient-7";
    const item = { sourceKey: "urn:uuid:restart-obs-1", resourceType: "Observation" as const, resource: { resourceType: "Observation", status: "final", code: { text: "Body temperature" } } };
    // several connections in the pool, idle when the server stops (each then makes the pool emit 'error')
    await Promise.all([store.importResources(patientId, [item]), store.count(), store.count(), store.listByPatient(patientId)]);
    const logged: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (String(chunk).startsWith("emr-store:")) logged.push(String(chunk));
      return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
    });
    try {
      await pg.stop!("fast");
      // the pool's 'error' events arrive as the server closes each idle connection
      await vi.waitFor(() => expect(logged.length).toBeGreaterThan(0), { timeout: 30_000, interval: 20 });
      await pg.start!();
      expect(await store.count()).toBe(1);
      expect((await store.listByPatient(patientId)).map((r) => r.sourceKey)).toEqual([item.sourceKey]);
    } finally {
      spy.mockRestore();
    }
    for (const line of logged) {
      expect(line).toMatch(/^emr-store: an idle PostgreSQL connection failed \([0-9A-Z]{5}|E[A-Z]+|no code\); the pool reconnects on next use\n$/);
      expect(line).not.toContain(patientId);
    }
  });
});
