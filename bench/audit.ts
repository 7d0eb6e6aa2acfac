// Audit sink throughput per durability policy, the cost of append() on the request path, and the
// added latency per request through HMCPServer. Not a test: prints figures.
// Run: npx tsx bench/audit.ts [records] [calls]
// Target (issue 4): >= 20,000 records/s with group commit on the team machines (2 cores).
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { PGlite } from "@electric-sql/pglite";
import {
  FileAuditSink,
  PostgresAuditSink,
  verifyAuditTable,
  HMCPClient,
  HMCPServer,
  generateAuditSigningKey,
  newAuditRecord,
  verifyAuditFiles,
  type AuditDurability,
  type AuditRecordInput,
  type AuditSink,
} from "../src/index.js";

const N = Number(process.argv[2] ?? 50_000);
const keys = await generateAuditSigningKey();

function record(i: number): AuditRecordInput {
  return newAuditRecord({
    type: "request",
    agent: "emr-writeback",
    outcome: i % 10 === 0 ? "denied" : "allowed",
    actor: { sub: "svc-orchestrator", clientId: "orchestrator", tenant: "t1" },
    source: { address: "10.0.0.7" },
    transport: "http",
    sessionId: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    method: "sampling/createMessage",
    requestId: i,
    patients: ["8f1c2d3e-1111-2222-3333-444455556666"],
    scopes: ["system/Patient.rs", "system/Observation.rs"],
    guardrails: [
      { guardrail: "prompt-injection", stage: "input", action: "allow" },
      { guardrail: "phi-redactor", stage: "output", action: "redact", entityTypes: ["NAME", "DATE"] },
    ],
    latencyMs: 12.5,
    digests: { request: "a".repeat(64), response: "b".repeat(64) },
  });
}

async function run(label: string, durability: AuditDurability, n: number): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-bench-audit-"));
  const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, durability });
  const records = Array.from({ length: n }, (_, i) => record(i));
  let appendNs = 0n;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  // Offered load arrives in bursts of 100 per event-loop turn, as concurrent requests would.
  for (let i = 0; i < n; i += 100) {
    const a = process.hrtime.bigint();
    for (let k = i; k < Math.min(n, i + 100); k++) sink.append(records[k]!);
    appendNs += process.hrtime.bigint() - a;
    await new Promise<void>((r) => setImmediate(r));
  }
  await sink.flush();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  await sink.close();
  const v0 = performance.now();
  const files = (await import("node:fs/promises")).readdir(dir).then((fs) => fs.sort().map((f) => path.join(dir, f)));
  const verified = await verifyAuditFiles(await files, { publicKey: keys.publicJwk });
  const vms = performance.now() - v0;
  console.log(
    `${label.padEnd(34)} ${String(n).padStart(7)} records  ${Math.round((n / ms) * 1000).toLocaleString("en-US").padStart(9)} records/s  ` +
      `append ${(Number(appendNs) / n / 1000).toFixed(2)} µs/record  verify ${Math.round((verified.records / vms) * 1000).toLocaleString("en-US")} records/s (ok=${verified.ok})  ` +
      `cpu ${((cpu.user + cpu.system) / n).toFixed(1)} µs/record (${Math.round((n / (cpu.user + cpu.system)) * 1e6).toLocaleString("en-US")} records per CPU-second)`,
  );
  await rm(dir, { recursive: true, force: true });
}

console.log(`node ${process.version}, ${os.cpus().length} cpus, ${os.tmpdir()}`);
await run("group commit (default 5 ms / 256)", { mode: "group" }, N);
await run("group commit (1 ms / 64)", { mode: "group", intervalMs: 1, maxRecords: 64 }, N);
await run("fsync per record", { mode: "fsync" }, Math.min(N, 5_000));

// The Postgres sink on embedded PGlite (in-process, in-memory): one multi-row INSERT per batch.
{
  const n = Math.min(N, 20_000);
  const db = new PGlite();
  const sink = await PostgresAuditSink.open({ db, instanceId: "bench", signing: { privateKey: keys.privateJwk } });
  const records = Array.from({ length: n }, (_, i) => record(i));
  const t0 = performance.now();
  for (let i = 0; i < n; i += 100) {
    for (let k = i; k < Math.min(n, i + 100); k++) sink.append(records[k]!);
    await new Promise<void>((r) => setImmediate(r));
  }
  await sink.flush();
  const ms = performance.now() - t0;
  await sink.close();
  const v0 = performance.now();
  const v = await verifyAuditTable(db, { instanceId: "bench", publicKey: keys.publicJwk });
  const vms = performance.now() - v0;
  console.log(
    `${"postgres sink on PGlite (group)".padEnd(34)} ${String(n).padStart(7)} records  ${Math.round((n / ms) * 1000).toLocaleString("en-US").padStart(9)} records/s  ` +
      `verify ${Math.round((v.records / vms) * 1000).toLocaleString("en-US")} records/s (ok=${v.ok})`,
  );
  await db.close();
}

// Added latency per request: sequential sampling calls through HMCPServer (auth and guardrails off,
// in-memory transport) without audit and with the file sink per durability policy. The three
// configurations are called in turn (A B C A B C ...) so machine noise falls on all of them alike.
interface LatencyRig {
  label: string;
  call: () => Promise<unknown>;
  times: number[];
  close: () => Promise<void>;
}

async function rig(label: string, durability: AuditDurability | undefined): Promise<LatencyRig> {
  let dir: string | undefined;
  let sink: AuditSink | undefined;
  if (durability) {
    dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-bench-audit-lat-"));
    sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, durability });
  }
  const server = new HMCPServer({ name: "bench", version: "1" }, { auth: false, guardrails: false, audit: sink ?? false });
  server.sampling(async () => ({ content: { type: "text", text: "ok" }, stopReason: "endTurn" }));
  const client = new HMCPClient({ name: "bench-client", version: "1" });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  await client.connect({ type: "transport", transport: a });
  const params = { messages: [{ role: "user" as const, content: { type: "text" as const, text: "hello" } }], maxTokens: 10 };
  return {
    label,
    call: () => client.createMessage(params),
    times: [],
    close: async () => {
      await client.close();
      await server.close();
      await sink?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

const CALLS = Number(process.argv[3] ?? 3000);
const rigs = [await rig("no audit", undefined), await rig("audit, group commit (default)", { mode: "group" }), await rig("audit, fsync per record", { mode: "fsync" })];
for (let i = 0; i < 300; i++) for (const r of rigs) await r.call(); // warm-up
for (let i = 0; i < CALLS; i++) {
  for (const r of rigs) {
    const t = performance.now();
    await r.call();
    r.times.push(performance.now() - t);
  }
}
console.log("\nper-request latency through HMCPServer (in-memory transport, auth/guardrails off, interleaved):");
const medians: number[] = [];
for (const r of rigs) {
  const t = [...r.times].sort((x, y) => x - y);
  const q = (p: number) => t[Math.min(t.length - 1, Math.floor(p * t.length))]!;
  medians.push(q(0.5));
  console.log(`${r.label.padEnd(34)} ${String(CALLS).padStart(7)} calls    median ${(q(0.5) * 1000).toFixed(0).padStart(5)} µs  p90 ${(q(0.9) * 1000).toFixed(0).padStart(5)} µs  p99 ${(q(0.99) * 1000).toFixed(0).padStart(6)} µs`);
  await r.close();
}
console.log(
  `added median latency per request: group commit ${((medians[1]! - medians[0]!) * 1000).toFixed(0)} µs, fsync ${((medians[2]! - medians[0]!) * 1000).toFixed(0)} µs (append never waits for the disk)`,
);
