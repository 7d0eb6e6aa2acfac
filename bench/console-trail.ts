/**
 * The compliance console's data layer (issue 26) on a large trail: `openAuditTrail` over N records in audit files.
 *
 * Usage: `npx tsx --expose-gc bench/console-trail.ts [--records 1000000] [--keep] [--pglite] [--postgresql]` (without
 * `--expose-gc` the memory figures are taken without a forced GC and read higher). `--pglite` also loads the same
 * entries into the PostgreSQL sink's table on PGlite (in memory: keep N to ~100,000) and measures the table path;
 * `--postgresql` does the same on a throwaway PostgreSQL server (demo/runtime/postgres-server.ts; needs its package).
 *
 * Writes a realistic trail into a temp folder: three agents (three chains, one file-name prefix each, files rotated at
 * 64 MiB as the file sink does), ~2,000 patients, 60 practitioners and 6 clients, outcomes with refusals (denied,
 * blocked with the guardrails that blocked, failed) over 30 days, a few records written late (out of time order).
 * Lines are sealed with the chain functions (`canonicalJson`, `sealEntry`), with a signed checkpoint every 10,000
 * entries, at each rotation and at the end: what the sink writes, written directly (the sink's fsync per batch would
 * make generation the slowest part). Then measures, and prints as Markdown: generation time and size, index time on
 * open, RSS and heap after the index (and per record), the index's typed arrays per record, and the latency of the
 * calls the console's pages make, first while the background verification runs (what a first visitor sees), then again
 * after it; and the verification time (key given: signatures checked).
 *
 * Targets (issue 26): first activity page < 1 s, a patient-filtered page < 2 s, memory bounded per record.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, open, readdir, readFile, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { PGlite } from "@electric-sql/pglite";
import type { JWK } from "jose";
import { canonicalJson } from "../src/audit/canonical-json.js";
import { createCheckpointSigner, generateAuditSigningKey, GENESIS_HASH, sealEntry, type CheckpointSigner } from "../src/audit/chain.js";
import { PostgresAuditSink, type AuditQueryable } from "../src/audit/postgres-sink.js";
import type { AuditRecordInput } from "../src/audit/record.js";
import { openAuditTrail } from "../src/console/trail.js";
import { startAuditConsole } from "../src/console/app.js";
import { FileAuditSink } from "../src/audit/file-sink.js";
import { startDevAuthorizationServer } from "../src/dev-auth/index.js";
import { HttpDriver } from "../test/fixtures/console-driver.js";
import { startPostgresServer } from "../demo/runtime/postgres-server.js";
import type { AuditTrailView } from "../src/console/trail-types.js";

const arg = (name: string, fallback: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
const N = arg("--records", 1_000_000);
const KEEP = process.argv.includes("--keep");
const PGLITE = process.argv.includes("--pglite");
const POSTGRESQL = process.argv.includes("--postgresql");
const log = (s: string) => process.stderr.write(`[console-trail ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
const gc = (globalThis as { gc?: () => void }).gc;
const MiB = 1024 * 1024;

// deterministic pseudo-random numbers (mulberry32), so two runs write the same trail shape
let seed = 26;
function rand(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(a: readonly T[]): T => a[Math.floor(rand() * a.length)]!;

const AGENTS = [
  { prefix: "emr_writeback", agent: "emr-writeback", methods: ["tools/call", "sampling/createMessage", "resources/read"] },
  { prefix: "patient_data", agent: "patient-data", methods: ["resources/read", "tools/call", "resources/list"] },
  { prefix: "orchestrator", agent: "orchestrator", methods: ["sampling/createMessage", "tools/call", "elicitation/create"] },
] as const;
const PATIENTS = Array.from({ length: 2000 }, () => randomUUID());
const PRACTITIONERS = Array.from({ length: 60 }, (_, k) => ({ sub: `user-${k}`, fhirUser: `Practitioner/pr-${k}` }));
const CLIENTS = ["ehr-portal", "nurse-app", "scheduler", "orchestrator", "research-export", "billing"];
const DENY_REASONS = ["insufficient_scope", "patient_mismatch", "invalid_token", "consent_required"];
const BLOCKERS = ["prompt-injection", "phi-output", "policy-deny"];
const FAIL_REASONS = ["handler_error", "upstream_timeout"];
const START = Date.UTC(2026, 9, 27);
const SPAN = 30 * 24 * 3_600_000;
const FILE_MAX = 64 * MiB;
const CHECKPOINT_EVERY = 10_000;

function record(i: number, agent: (typeof AGENTS)[number]): AuditRecordInput {
  const u = rand();
  const outcome = u < 0.85 ? "allowed" : u < 0.92 ? "denied" : u < 0.96 ? "blocked" : "failed";
  const pr = pick(PRACTITIONERS);
  const http = outcome === "denied" && rand() < 0.2;
  const blocked = outcome === "blocked" ? pick(BLOCKERS) : undefined;
  const late = rand() < 0.01 ? 2_000 + rand() * 60_000 : 0; // written up to a minute late
  const patients = http ? [] : rand() < 0.05 ? [pick(PATIENTS), pick(PATIENTS)] : [pick(PATIENTS)];
  return {
    v: 1,
    id: randomUUID(),
    time: new Date(START + Math.floor((i / N) * SPAN - late)).toISOString(),
    type: http ? "http" : "request",
    actor: rand() < 0.1 ? { clientId: pick(CLIENTS) } : { sub: pr.sub, clientId: pick(CLIENTS), fhirUser: pr.fhirUser, tenant: "t1" },
    source: { address: `10.0.${Math.floor(rand() * 4)}.${Math.floor(rand() * 250)}` },
    transport: "http",
    sessionId: randomUUID(),
    agent: agent.agent,
    method: http ? "POST /mcp" : pick(agent.methods),
    requestId: i,
    patients,
    scopes: ["user/Patient.rs", "user/Observation.rs", "launch/patient"],
    outcome,
    ...(outcome === "denied" && { reason: http ? "invalid_token" : pick(DENY_REASONS), status: http ? 401 : -32003 }),
    ...(outcome === "blocked" && { reason: "guardrail_blocked", status: -32051 }),
    ...(outcome === "failed" && { reason: pick(FAIL_REASONS), status: -32603 }),
    guardrails: [
      { guardrail: "prompt-injection", stage: "input", action: blocked === "prompt-injection" ? "block" : "allow", ...(blocked === "prompt-injection" && { reasonClass: "instruction_override", score: 0.93, threshold: 0.8 }) },
      ...(blocked === "policy-deny" ? [{ guardrail: "policy-deny", stage: "input" as const, action: "block" as const }] : []),
      { guardrail: blocked === "phi-output" ? "phi-output" : "phi-redactor", stage: "output", action: blocked === "phi-output" ? "block" : "redact", entityTypes: ["NAME", "DATE"] },
    ],
    latencyMs: Math.round(rand() * 4000) / 10,
    digests: { request: randomUUID().replaceAll("-", "").repeat(2), response: randomUUID().replaceAll("-", "").repeat(2) },
  };
}

/** One chain written as the file sink writes it: sealed lines, rotation at 64 MiB with a checkpoint, checkpoints. */
class ChainWriter {
  private seq = 0;
  private prev = GENESIS_HASH;
  private counter = 0;
  private bytes = 0;
  private out: string[] = [];
  private outBytes = 0;
  private fh: Awaited<ReturnType<typeof open>> | undefined;
  private sinceCheckpoint = 0;
  private lastTime = START;

  constructor(
    private readonly dir: string,
    private readonly prefix: string,
    private readonly signer: CheckpointSigner,
  ) {}

  async add(r: AuditRecordInput): Promise<void> {
    this.lastTime = Math.max(this.lastTime, Date.parse(r.time));
    await this.entry(canonicalJson(r));
    if (++this.sinceCheckpoint >= CHECKPOINT_EVERY) await this.checkpoint("interval");
  }

  async close(): Promise<void> {
    await this.checkpoint("close");
    await this.flush();
    await this.fh?.close();
  }

  private async checkpoint(why: "interval" | "rotate" | "close"): Promise<void> {
    const time = new Date(this.lastTime).toISOString();
    const jws = await this.signer.sign(this.prefix, this.seq + 1, this.prev, time, why);
    await this.entry(canonicalJson({ type: "checkpoint", time, chain: this.prefix, kid: this.signer.kid, why, jws }), true);
    this.sinceCheckpoint = 0;
  }

  private async entry(canonical: string, isCheckpoint = false): Promise<void> {
    // rotate before a record that would not fit (the line is the record and ~190 bytes; room for the rotate checkpoint)
    if (this.fh === undefined || (!isCheckpoint && this.bytes + Buffer.byteLength(canonical) + 2048 > FILE_MAX)) {
      if (this.fh !== undefined) {
        await this.checkpoint("rotate");
        await this.flush();
        await this.fh.close();
      }
      this.counter++;
      this.fh = await open(path.join(this.dir, `${this.prefix}-${new Date(this.lastTime).toISOString().slice(0, 10).replaceAll("-", "")}-${String(this.counter).padStart(6, "0")}.jsonl`), "w");
      this.bytes = 0;
    }
    const { line, hash } = sealEntry(this.seq + 1, this.prev, canonical);
    const size = Buffer.byteLength(line) + 1;
    this.seq++;
    this.prev = hash;
    this.out.push(line, "\n");
    this.outBytes += size;
    this.bytes += size;
    if (this.outBytes > 4 * MiB) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.out.length === 0) return;
    await this.fh!.write(this.out.join(""));
    this.out = [];
    this.outBytes = 0;
  }
}

/** RSS, JS heap used and array buffers (the index's typed arrays live there), after a forced GC when available. */
function memory(): { rss: number; heap: number; buffers: number } {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed, buffers: m.arrayBuffers };
}

async function time<T>(fn: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/** Each call once (first), then 5 more: first and median ms. */
async function calls(t: AuditTrailView, patient: string, id: string): Promise<Array<[string, number, number]>> {
  const rows: Array<[string, () => Promise<unknown> | unknown]> = [
    ["activity, first page (limit 50, no filter)", () => t.activity({}, { offset: 0, limit: 50 })],
    ["activity, patient filter (limit 50)", () => t.activity({ patient }, { offset: 0, limit: 50 })],
    ["activity, outcome denied (scan, limit 50)", () => t.activity({ outcome: "denied" }, { offset: 0, limit: 50 })],
    [`activity, page at offset ${Math.floor(t.size / 2).toLocaleString("en")} (no filter)`, () => t.activity({}, { offset: Math.floor(t.size / 2), limit: 50 })],
    ["activity, one day (since/until, limit 50)", () => t.activity({ since: START + 10 * 86_400_000, until: START + 11 * 86_400_000 }, { offset: 0, limit: 50 })],
    ["stats(), no filter", () => t.stats({})],
    ["stats(), patient filter", () => t.stats({ patient })],
    ["record(id)", () => t.record(id)],
    [
      "records(patient): accounting of disclosures",
      async () => {
        let n = 0;
        for await (const _ of t.records({ patient })) n++;
        return n;
      },
    ],
  ];
  const out: Array<[string, number, number]> = [];
  for (const [label, fn] of rows) {
    const first = (await time(fn)).ms;
    const more: number[] = [];
    for (let k = 0; k < 5; k++) more.push((await time(fn)).ms);
    more.sort((a, b) => a - b);
    out.push([label, first, more[2]!]);
  }
  return out;
}

/** The same trail in the PostgreSQL sink's table (one instance per chain): index time and the same calls. */
async function tableRun(kind: "pglite" | "postgresql", dir: string, publicKey: JWK, patient: string, id: string): Promise<void> {
  const lite = kind === "pglite" ? new PGlite() : undefined;
  const server = lite ? undefined : await startPostgresServer();
  const db: AuditQueryable = lite ?? server!.db;
  try {
    const sink = await PostgresAuditSink.open({ db, instanceId: "probe", signing: false }); // creates the table
    await sink.close();
    const load = await time(async () => {
      for (const f of (await readdir(dir)).filter((x) => x.endsWith(".jsonl")).sort()) {
        const instance = f.split("-")[0]!;
        let rows: unknown[] = [];
        const insert = async () => {
          if (rows.length === 0) return;
          const values = Array.from({ length: rows.length / 7 }, (_, k) => `(${Array.from({ length: 7 }, (_, j) => `$${k * 7 + j + 1}`).join(", ")})`);
          await db.query(`INSERT INTO hmcp_audit (instance_id, seq, prev, hash, time, type, line) VALUES ${values.join(", ")}`, rows);
          rows = [];
        };
        for (const line of (await readFile(path.join(dir, f), "utf8")).split("\n")) {
          if (line === "") continue;
          const e = JSON.parse(line) as { seq: number; prev: string; hash: string; record: { time: string; type: string } };
          rows.push(instance, e.seq, e.prev, e.hash, e.record.time, e.record.type, line);
          if (rows.length >= 7 * 1000) await insert();
        }
        await insert();
      }
    });
    await db.query("DELETE FROM hmcp_audit WHERE instance_id = 'probe'");
    const start = performance.now();
    const opened = await time(() => openAuditTrail({ db, publicKey }));
    const t = opened.value;
    const during = await calls(t, patient, id);
    await t.verified;
    const verifyMs = performance.now() - start - opened.ms;
    const lines = [
      "",
      `PostgreSQL sink table on ${lite ? "PGlite (in memory)" : "PostgreSQL (throwaway server, loopback)"}, the same entries (loaded in ${(load.ms / 1000).toFixed(1)} s): index on open ${(opened.ms / 1000).toFixed(2)} s (${((opened.ms * 1000) / t.size).toFixed(1)} µs per record), ${t.size.toLocaleString("en")} records, ${t.skipped} skipped; verification ${(verifyMs / 1000).toFixed(1)} s (${t.integrity().map((c) => `${c.name} ${c.status}`).join(", ")}).`,
      "",
      "| call (table, while verifying) | first ms | median ms |",
      "| --- | ---: | ---: |",
      ...during.map(([label, first, median]) => `| ${label} | ${first.toFixed(1)} | ${median.toFixed(1)} |`),
    ];
    process.stdout.write(lines.join("\n") + "\n");
    await t.close();
  } finally {
    await (lite ?? server!).close();
  }
}

/**
 * The same trail through the console itself (`startAuditConsole`, signed in through the development authorization
 * server as a compliance officer): each page's latency over HTTP, rendering and the view's own audit record included.
 */
async function httpRun(t: AuditTrailView, dir: string, patient: string, id: string, openMs: number): Promise<void> {
  const as = await startDevAuthorizationServer({
    resources: [],
    clients: [{ clientId: "console", scopes: ["openid", "profile", "user/AuditEvent.rs"], grantType: "authorization_code" }],
    users: [{ username: "officer", password: "bench-only", scopes: ["user/AuditEvent.rs"] }],
  });
  const viewKey = await generateAuditSigningKey();
  const views = await FileAuditSink.open({ dir: path.join(dir, "views"), prefix: "console", signing: { privateKey: viewKey.privateJwk } });
  const started = performance.now();
  const app = await startAuditConsole({ trail: t, audit: views, signIn: { issuer: as.issuer, clientId: "console" } });
  as.addRedirectUri("console", app.redirectUri);
  const browser = new HttpDriver();
  await browser.signIn(app.url, "officer", "bench-only");
  const signedIn = performance.now() - started;
  const pages: Array<[string, string]> = [
    ["Activity, first page (no filter)", "/activity"],
    ["Activity, one patient", `/activity?patient=${patient}`],
    ["Activity, outcome denied (scans every record)", "/activity?outcome=denied"],
    ["Activity, page 100", "/activity?offset=4950"],
    ["Record detail", `/records/${id}`],
    ["Pictures, no filter (stats over the whole trail)", "/pictures"],
    ["Accounting of disclosures, one patient", `/accounting?patient=${patient}`],
    ["Accounting CSV, one patient", `/accounting.csv?patient=${patient}`],
    ["Integrity", "/integrity"],
  ];
  const rows: string[] = ["", `#### Through the console over HTTP (signed in; each page 7 times)`, "", "| page | status | first ms | median ms |", "| --- | ---: | ---: | ---: |"];
  for (const [label, url] of pages) {
    const ms: number[] = [];
    let status = 0;
    for (let k = 0; k < 7; k++) {
      const t0 = performance.now();
      status = (await browser.open(`${app.url}${url}`)).status;
      ms.push(performance.now() - t0);
    }
    const sorted = [...ms].sort((a, b) => a - b);
    rows.push(`| ${label} | ${status} | ${ms[0]!.toFixed(1)} | ${sorted[3]!.toFixed(1)} |`);
  }
  const m = memory();
  rows.push("", `From opening the trail to the console's first page: index on open ${(openMs / 1000).toFixed(2)} s, then start, sign-in and first page ${signedIn.toFixed(0)} ms. RSS with the console serving: ${(m.rss / MiB).toFixed(1)} MiB.`);
  process.stdout.write(rows.join("\n") + "\n");
  await app.close();
  await views.close();
  await as.stop();
}

const dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-console-trail-"));
try {
  log(`writing ${N.toLocaleString("en")} records to ${dir}`);
  const keys = await generateAuditSigningKey();
  const signer = await createCheckpointSigner({ privateKey: keys.privateJwk });
  const writers = AGENTS.map((a) => new ChainWriter(dir, a.prefix, signer));
  const sampleIds: string[] = [];
  const gen = await time(async () => {
    for (let i = 0; i < N; i++) {
      // the agents' shares of the traffic: 50 %, 30 %, 20 %
      const u = rand();
      const a = u < 0.5 ? 0 : u < 0.8 ? 1 : 2;
      const r = record(i, AGENTS[a]!);
      if (i % Math.max(1, Math.floor(N / 7)) === 3) sampleIds.push(r.id);
      await writers[a]!.add(r);
    }
    for (const w of writers) await w.close();
  });
  const files = (await readdir(dir)).filter((f) => f.endsWith(".jsonl"));
  let bytes = 0;
  for (const f of files) bytes += (await stat(path.join(dir, f))).size;
  log(`written in ${(gen.ms / 1000).toFixed(1)} s: ${files.length} files, ${(bytes / MiB).toFixed(0)} MiB`);

  const before = memory();
  const verifyStart = performance.now();
  const opened = await time(() => openAuditTrail({ paths: [dir], publicKey: keys.publicJwk }));
  const t = opened.value;
  const after = memory();
  log(`indexed in ${(opened.ms / 1000).toFixed(2)} s`);
  const patient = PATIENTS[7]!;
  const id = sampleIds[3]!;
  const during = await calls(t, patient, id);
  const pendingAfterCalls = t.integrity().filter((c) => c.status === "pending").length;
  await t.verified;
  const verifyMs = performance.now() - verifyStart - opened.ms;
  log(`verified in ${(verifyMs / 1000).toFixed(1)} s`);
  const quiet = await calls(t, patient, id);
  const patientRecords = (await t.activity({ patient }, { offset: 0, limit: 1 })).total;
  const end = memory();

  const mib = (b: number) => (b / MiB).toFixed(1);
  const perRecord = (b: number) => (b / t.size).toFixed(0);
  const lines: string[] = [];
  lines.push(`### openAuditTrail, ${t.size.toLocaleString("en")} records (${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC)`, "");
  lines.push(`Machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), Node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(" ")} at the end; forced GC before memory figures: ${gc ? "yes" : "no (run with --expose-gc)"}.`, "");
  lines.push("| figure | value |", "| --- | ---: |");
  lines.push(`| trail | ${files.length} files, ${mib(bytes)} MiB, 3 chains, ${(bytes / t.size).toFixed(0)} bytes per record line |`);
  lines.push(`| generation (seal + write, signed checkpoints every ${CHECKPOINT_EVERY.toLocaleString("en")}) | ${(gen.ms / 1000).toFixed(1)} s |`);
  lines.push(`| index on open | ${(opened.ms / 1000).toFixed(2)} s (${((opened.ms * 1000) / t.size).toFixed(2)} µs per record), ${t.skipped} lines skipped |`);
  lines.push(`| index typed arrays (\`indexBytes\`) | ${mib(t.indexBytes)} MiB (${perRecord(t.indexBytes)} bytes per record) |`);
  lines.push(`| RSS before open / after index / at the end | ${mib(before.rss)} / ${mib(after.rss)} / ${mib(end.rss)} MiB |`);
  const grew = after.heap + after.buffers - before.heap - before.buffers;
  lines.push(`| JS heap + array buffers after index, minus before | ${mib(grew)} MiB (${perRecord(grew)} bytes per record; heap ${mib(after.heap - before.heap)}, buffers ${mib(after.buffers - before.buffers)}) |`);
  lines.push(`| verification of every chain (background, key given) | ${(verifyMs / 1000).toFixed(1)} s; ${t.integrity().map((c) => `${c.name} ${c.status} ${c.records.toLocaleString("en")}`).join(", ")} |`);
  lines.push(`| records of the patient the patient rows ask for | ${patientRecords} |`);
  lines.push("");
  lines.push(`| call | first ms (verifying) | median ms (verifying) | first ms (verified) | median ms (verified) |`, "| --- | ---: | ---: | ---: | ---: |");
  during.forEach(([label, first, median], k) => lines.push(`| ${label} | ${first.toFixed(1)} | ${median.toFixed(1)} | ${quiet[k]![1].toFixed(1)} | ${quiet[k]![2].toFixed(1)} |`));
  lines.push("", `Chains still pending after the first round of calls: ${pendingAfterCalls}.`);
  for (const c of t.integrity()) if (c.failure) lines.push(`Chain ${c.name} broken: ${JSON.stringify(c.failure)}`);
  process.stdout.write(lines.join("\n") + "\n");
  await httpRun(t, dir, patient, id, opened.ms);
  await t.close();
  if (PGLITE) await tableRun("pglite", dir, keys.publicJwk, patient, id);
  if (POSTGRESQL) await tableRun("postgresql", dir, keys.publicJwk, patient, id);
} finally {
  if (KEEP) log(`kept ${dir}`);
  else await rm(dir, { recursive: true, force: true });
}
