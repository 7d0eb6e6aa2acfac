// Audit sink throughput per durability policy, and the cost of append() on the request path.
// Not a test: prints figures. Run: npx tsx bench/audit.ts [records]
// Target (issue 4): >= 20,000 records/s with group commit on the team machines (2 cores).
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { FileAuditSink, generateAuditSigningKey, newAuditRecord, verifyAuditFiles, type AuditDurability, type AuditRecordInput } from "../src/index.js";

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
  await sink.close();
  const v0 = performance.now();
  const files = (await import("node:fs/promises")).readdir(dir).then((fs) => fs.sort().map((f) => path.join(dir, f)));
  const verified = await verifyAuditFiles(await files, { publicKey: keys.publicJwk });
  const vms = performance.now() - v0;
  console.log(
    `${label.padEnd(34)} ${String(n).padStart(7)} records  ${Math.round((n / ms) * 1000).toLocaleString("en-US").padStart(9)} records/s  ` +
      `append ${(Number(appendNs) / n / 1000).toFixed(2)} µs/record  verify ${Math.round((verified.records / vms) * 1000).toLocaleString("en-US")} records/s (ok=${verified.ok})`,
  );
  await rm(dir, { recursive: true, force: true });
}

console.log(`node ${process.version}, ${os.cpus().length} cpus, ${os.tmpdir()}`);
await run("group commit (default 5 ms / 256)", { mode: "group" }, N);
await run("group commit (1 ms / 64)", { mode: "group", intervalMs: 1, maxRecords: 64 }, N);
await run("fsync per record", { mode: "fsync" }, Math.min(N, 5_000));
