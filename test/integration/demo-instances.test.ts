/**
 * `npm run demo -- --instances 2` through its public entry (demo/main.ts, spawned as a process, as a person runs it):
 * each agent as two processes behind the reverse proxy, one shared PostgreSQL, both eras. The proxy is HAProxy where
 * installed, else `--proxy node` (http-proxy-3: the same balancing, in the demo's process); the database DATABASE_URL,
 * else the throwaway server the demo starts from the machine's PostgreSQL packages, else (no PostgreSQL here, or
 * `HMCP_DEMO_DATABASE=pglite`) one PGlite in the demo's process behind its loopback bridge. The describe's name says
 * which ran; the assertions are the same on each.
 */
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { DemoReport } from "../../demo/orchestrator/report.js";
import { instancesDatabaseKind } from "../../demo/runtime/instances.js";
import { haproxyInstalled } from "../../demo/runtime/proxy.js";
import { repoRoot, shippedData } from "./demo-helpers.js";

const proxy = process.env["HMCP_TEST_PROXY"] !== "http-proxy-3" && haproxyInstalled() ? "haproxy" : "node";
const database = instancesDatabaseKind(process.env["DATABASE_URL"]);
const ran = `proxy ${proxy === "haproxy" ? "HAProxy" : "http-proxy-3 (--proxy node: no HAProxy here)"}, database ${database}`;

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function demo(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-demo-instances-"));
  dirs.push(dir);
  const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "demo/main.ts"), "--json", "--data", shippedData, "--audit-dir", path.join(dir, "audit"), ...args], {
    cwd: repoRoot,
    env: { ...process.env, NODE_OPTIONS: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
  return { code, stdout, stderr };
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** What every run must show: each patient's input written once, defences held, every instance's chain verified. */
function expectWrittenOnceAndVerified(report: DemoReport): NonNullable<DemoReport["instances"]> {
  const instances = report.instances!;
  expect(instances.count).toBe(2);
  expect(instances.proxy).toBe(proxy === "haproxy" ? "haproxy" : "http-proxy-3");
  expect(instances.database).toBe(database);
  expect(instances.agents.map((a) => a.id)).toEqual(["emr-writeback-1", "emr-writeback-2", "patient-data-1", "patient-data-2"]);
  // a fresh database: what the EMR holds from this input is what this run created, and it is everything the agent
  // did not refuse: nothing lost, nothing twice
  for (const p of report.patients) {
    expect(p.patientId).not.toBeNull();
    expect(p.written).toEqual(p.created);
    expect(total(p.written)).toBe(total(p.sent) - p.refused.reduce((n, r) => n + r.count, 0));
    expect(total(p.written)).toBeGreaterThan(0);
  }
  expect(report.defences).toMatchObject({ injectionBlocked: true, insufficientScopeRefused: true, crossPatientRefused: true, deidentified: true });
  // every chain written is verified against its instance's own checkpoint key and the anchors
  const written = instances.agents.filter((a) => a.chain);
  expect(written.every((a) => a.verified && a.records > 0)).toBe(true);
  expect(report.audit.verified).toBe(true);
  expect(report.audit.records).toBe(written.reduce((n, a) => n + a.records, 0));
  // both EMR-writeback instances served requests (sessions per patient on 2025-11-25, round-robin on 2026-07-28)
  expect(instances.agents.filter((a) => a.agent === "emr-writeback").every((a) => a.chain && total(a.served) > 0)).toBe(true);
  return instances;
}

describe(`npm run demo -- --instances 2 (${ran})`, () => {
  it("modern era: six patients through two instances of each agent; each write task ran to completion on exactly one instance; every chain verifies", { timeout: 300_000 }, async () => {
    const run = await demo(["--instances", "2", "--proxy", proxy]);
    expect(run.code, run.stderr.slice(-2_000)).toBe(0);
    const report = JSON.parse(run.stdout) as DemoReport;
    const instances = expectWrittenOnceAndVerified(report);
    // round-robin: each patient's lookup is one stateless request, so both patient-data instances served
    expect(instances.agents.filter((a) => a.agent === "patient-data").every((a) => a.chain && (a.served["tools/call"] ?? 0) > 0)).toBe(true);
    // one write task per patient, each finished by exactly one instance (the audit chains say where)
    const tasks = report.patients.flatMap((p) => p.tasks);
    expect(tasks.length).toBe(report.patients.length);
    expect(tasks.every((t) => t.status === "completed")).toBe(true);
    expect(instances.agents.reduce((n, a) => n + a.tasksCompleted, 0)).toBe(tasks.length);
    // what a person reads (stderr with --json): the instances, what each served, each chain verified
    const text = run.stderr.replace(/\n {2}(?=\S)/g, " ");
    expect(text).toMatch(/^Instances: 2 processes per agent behind (haproxy|http-proxy-3)/m);
    for (const a of instances.agents) expect(text).toContain(`${a.id} (${a.url}): ${a.records} audit records, chain verified: yes`);
  });

  it("legacy era (2025-11-25 sessions, sticky by Mcp-Session-Id): every session stays on one instance; the writes land once and every chain verifies", { timeout: 300_000 }, async () => {
    const run = await demo(["--instances", "2", "--proxy", proxy, "--era", "legacy"]);
    expect(run.code, run.stderr.slice(-2_000)).toBe(0);
    const report = JSON.parse(run.stdout) as DemoReport;
    expect(report.era).toBe("legacy");
    const instances = expectWrittenOnceAndVerified(report);
    // the orchestrator's one patient-data session stuck to one instance: its sibling served nothing
    const pd = instances.agents.filter((a) => a.agent === "patient-data");
    expect(pd.filter((a) => a.chain).length).toBe(1);
    expect(run.stderr.replace(/\n {2}(?=\S)/g, " ")).toMatch(/served nothing, no audit chain \(the orchestrator's session stuck to its sibling/);
  });

  it("HAProxy missing (HMCP_HAPROXY names a binary that does not exist): exit 2 before anything starts, saying how to install it and the --proxy node alternative; no silent fallback", { timeout: 60_000 }, async () => {
    const run = await demo(["--instances", "2"], { HMCP_HAPROXY: path.join(os.tmpdir(), "no-such-dir", "haproxy") });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/HAProxy is not installed here \(.*no-such-dir\/haproxy -v did not run\)/);
    expect(run.stderr).toContain("sudo apt-get install -y haproxy");
    expect(run.stderr).toContain("npm run demo -- --instances 2 --proxy node");
    // nothing ran: no report, no patient
    expect(run.stderr).not.toMatch(/^▶ /m);
  });
});
