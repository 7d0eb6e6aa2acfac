/**
 * `npm run bench [-- --quick] [--rounds N] [--duration S] [--only throughput,latency,components,memory,demo] [--update-md]`
 * `[--layers]` adds bare+auth, bare+guardrails and bare+audit; `[--phi-workers]` adds full-distinct-workers
 * (full-distinct with the output stage's phi-redaction given `workers: 1`).
 *
 * The cost of HMCP's safety layers against the plain MCP SDK (issue 6), in one run. Every server runs in its own
 * process on loopback, load comes from separate autocannon processes, and configurations are interleaved
 * (A B C D, then rotated) so machine noise falls on all of them alike. Prints Markdown; writes
 * bench/results/<date>-<mode>.json (every run) and bench/results/latest.json (medians and ratios).
 *
 * Not a test: it prints figures and exits 0 even when a target is missed.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { LoadResult } from "./load.js";
import { COUNTER_PLACEHOLDER, LAYER_CONFIGS, isModern, isSdkBaseline, needsToken, requestText, type ServerConfig } from "./lib/configs.js";
import { benchKeys, clinicalText, modernHeaders, modernToolsCallBody, samplingBody, signAccessToken, toolsCallBody, PATIENT, REPO_ROOT } from "./lib/fixtures.js";
import { openSession, post } from "./lib/mcp-http.js";
import { BENCH_DIR, ServerProc, runScript, stopLoadProcess } from "./lib/procs.js";
import { sequentialLatency, type LatencyFigure } from "./lib/latency.js";
import { ensureBuilt } from "./lib/hmcp.js";
import { measure } from "./lib/measure.js";
import { memoryPerSession, type MemoryFigure } from "./lib/memory.js";
import { round, spread } from "./lib/stats.js";
import { renderMarkdown, targetsOf, type ThroughputSummary } from "./lib/report.js";
import type { ComponentResults } from "./components.js";

// ---------------------------------------------------------------------------------------------------------- options
const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = flag("quick");
const mode = quick ? "quick" : "full";
const rounds = Number(option("rounds") ?? (quick ? 3 : 5));
const durationSec = Number(option("duration") ?? (quick ? 1.5 : 10));
const warmupSec = quick ? 1 : 3;
const connectionsList = (option("connections") ?? "10,50").split(",").map(Number);
const textChars = Number(option("text-chars") ?? 1024);
const latencyCalls = Number(option("latency-calls") ?? (quick ? 2000 : 5000));
const memSessions = Number(option("sessions") ?? 1000);
const only = new Set((option("only") ?? "throughput,latency,components,memory,demo").split(","));
if (rounds < 1 || !Number.isFinite(durationSec) || durationSec <= 0) throw new Error("bad --rounds/--duration");

const THROUGHPUT_CONFIGS: ServerConfig[] = [
  "ceiling",
  "baseline",
  "baseline-v1",
  "bare",
  "full",
  "full-distinct",
  // MCP 2026-07-28: the plain SDK v2's per-request handler, and HMCP full reached through its sampling tool
  "baseline-modern",
  "full-modern",
  ...(flag("phi-workers") ? (["full-distinct-workers"] as const) : []),
  ...(flag("layers") ? LAYER_CONFIGS : []),
];

/** One measured autocannon run. */
export interface ThroughputRun extends LoadResult {
  config: ServerConfig;
  round: number;
  /** Order of this run in the whole sequence. */
  seq: number;
  /** Requests the server's handler answered during the run (must match the 2xx count). */
  served: number;
  /**
   * Server process CPU time (user + system) per answered request, µs. Much less sensitive than req/s to other
   * processes competing for the cores, so its ratios are the steadier estimate of the layers' cost.
   */
  cpuUsPerReq: number;
  /**
   * The server's main thread (its event loop) CPU per answered request, µs (Linux; 10 ms resolution over the run).
   * HTTP, the SDK and HMCP's pipeline all run there: when it nears the run's wall time per request, the event loop
   * is the bottleneck and work on other threads (libuv's pool: the audit fdatasync) does not limit req/s.
   */
  eventLoopUsPerReq?: number;
  /** Text items the server's guardrails answered from their decision cache / checked afresh during the run. */
  cacheHits?: number;
  cacheMisses?: number;
}

const log = (s: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

function machine() {
  const cpus = os.cpus();
  return {
    node: process.version,
    v8: process.versions.v8,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
    cpuModel: cpus[0]?.model ?? "unknown",
    cpus: cpus.length,
    memoryBytes: os.totalmem(),
    loadAvgAtStart: os.loadavg().map((x) => round(x, 2)),
  };
}

// ------------------------------------------------------------------------------------------------------ throughput
interface Target {
  config: ServerConfig;
  server: ServerProc;
  url: string;
  headers: Record<string, string>;
  /** Body with `[<id>]` in the id position. */
  body: string;
  check: (message: Record<string, unknown>) => boolean;
}

/** Starts the throughput servers, opens their sessions and probes each; pushes into `targets` as they come up. */
async function prepareTargets(targets: Target[], text: string, token: string, publicJwk: object): Promise<void> {
  const started = await Promise.allSettled(
    THROUGHPUT_CONFIGS.map((config) => ServerProc.start({ config, ...(needsToken(config) && { publicJwk: publicJwk as never }) })),
  );
  for (const s of started) if (s.status === "fulfilled") targets.push({ config: s.value.spec.config, server: s.value, url: s.value.url, headers: {}, body: "", check: () => false });
  const failed = started.find((s) => s.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
  for (const target of targets) {
    const { config, server } = target;
    let headers: Record<string, string>;
    let body: Record<string, unknown>;
    let check: Target["check"];
    if (config === "ceiling") {
      headers = { "content-type": "application/json" };
      body = toolsCallBody(text, "[<id>]");
      check = (m) => (m["params"] as { arguments?: { text?: string } })?.arguments?.text === text;
    } else if (isModern(config)) {
      // no session: every request carries the envelope and the 2026-07-28 headers
      if (config === "baseline-modern") {
        headers = modernHeaders("echo");
        body = modernToolsCallBody("echo", { text }, "[<id>]");
        check = (m) => (m["result"] as { content?: Array<{ text?: string }> })?.content?.[0]?.text === text;
      } else {
        headers = modernHeaders("sampling_createMessage", { authorization: `Bearer ${token}` });
        body = modernToolsCallBody("sampling_createMessage", { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256, _meta: { "hmcp/patient": PATIENT } }, "[<id>]");
        // the output stage may redact the echoed text (PHI redaction): any text answer is a success
        check = (m) => typeof (m["result"] as { content?: Array<{ text?: string }> })?.content?.[0]?.text === "string";
      }
    } else {
      const auth: Record<string, string> = needsToken(config) ? { authorization: `Bearer ${token}` } : {};
      headers = (await openSession(server.url, auth)).headers;
      if (isSdkBaseline(config)) {
        body = toolsCallBody(text, "[<id>]");
        check = (m) => (m["result"] as { content?: Array<{ text?: string }> })?.content?.[0]?.text === text;
      } else if (config === "bare") {
        body = samplingBody(text, "[<id>]");
        check = (m) => (m["result"] as { content?: { text?: string } })?.content?.text === text;
      } else {
        // The output stage may redact the echoed text (PHI redaction): any text answer is a success.
        body = samplingBody(requestText(config, text), "[<id>]", needsToken(config) ? PATIENT : undefined);
        check = (m) => typeof (m["result"] as { content?: { text?: string } })?.content?.text === "string";
      }
    }
    const bodyText = JSON.stringify(body);
    const probe = await post(server.url, headers, bodyText.replace("[<id>]", "probe-1").replaceAll(COUNTER_PLACEHOLDER, "0"));
    if (probe.status !== 200 || !check(probe.message)) {
      throw new Error(`${config}: probe request failed: HTTP ${probe.status} ${JSON.stringify(probe.message).slice(0, 300)}`);
    }
    Object.assign(target, { headers, body: bodyText, check });
    log(`${config} ready at ${server.url} (request body ${Buffer.byteLength(bodyText)} bytes)`);
  }
}

async function throughput(targets: Target[]): Promise<{ runs: ThroughputRun[]; summary: ThroughputSummary[] }> {
  for (const t of targets) {
    log(`warm-up ${t.config} ${warmupSec}s`);
    await measure(t, connectionsList[0]!, warmupSec, log);
  }
  const runs: ThroughputRun[] = [];
  let seq = 0;
  for (let r = 0; r < rounds; r++) {
    for (const connections of connectionsList) {
      // Rotate the order every round so no configuration always runs first or right after the heaviest one.
      const order = targets.map((_, i) => targets[(i + r) % targets.length]!);
      for (const t of order) {
        const { result, served, cpuUsPerReq, eventLoopUsPerReq, cacheHits, cacheMisses } = await measure(t, connections, durationSec, log);
        runs.push({
          ...result,
          config: t.config,
          round: r + 1,
          seq: seq++,
          served,
          cpuUsPerReq,
          ...(eventLoopUsPerReq !== undefined && { eventLoopUsPerReq }),
          ...(cacheHits !== undefined && { cacheHits, cacheMisses }),
        });
        log(
          `round ${r + 1}/${rounds} ${t.config.padEnd(13)} c=${connections}: ${Math.round(result.rps)} rps, ` +
            `p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, server CPU ${Math.round(cpuUsPerReq)} µs/req` +
            (eventLoopUsPerReq !== undefined ? ` (event loop ${Math.round(eventLoopUsPerReq)})` : "") +
            (cacheHits !== undefined ? `, decision cache ${cacheHits} hits / ${cacheMisses} misses` : ""),
        );
      }
    }
  }
  const summary: ThroughputSummary[] = [];
  for (const connections of connectionsList) {
    for (const t of targets) {
      const mine = runs.filter((x) => x.config === t.config && x.connections === connections);
      const counted = mine.filter((x) => x.cacheHits !== undefined);
      summary.push({
        name: t.config,
        connections,
        rps: spread(mine.map((x) => x.rps)),
        p50Ms: spread(mine.map((x) => x.p50Ms)),
        p99Ms: spread(mine.map((x) => x.p99Ms)),
        cpuUsPerReq: spread(mine.map((x) => x.cpuUsPerReq)),
        ...(mine.every((x) => x.eventLoopUsPerReq !== undefined) && mine.length > 0 && { eventLoopUsPerReq: spread(mine.map((x) => x.eventLoopUsPerReq!)) }),
        ...(counted.length > 0 && {
          decisionCache: { hits: counted.reduce((a, x) => a + x.cacheHits!, 0), misses: counted.reduce((a, x) => a + (x.cacheMisses ?? 0), 0) },
        }),
      });
    }
  }
  return { runs, summary };
}

/** Ratio of medians, and the per-round paired ratios (same round, same connection count) for their spread. */
function ratios(runs: ThroughputRun[], summary: ThroughputSummary[], connections: number) {
  const s = (name: string) => summary.find((x) => x.name === name && x.connections === connections);
  const paired = (a: ServerConfig, b: ServerConfig, key: "rps" | "p50Ms" | "cpuUsPerReq") => {
    const out: number[] = [];
    for (let r = 1; r <= rounds; r++) {
      const x = runs.find((k) => k.config === a && k.round === r && k.connections === connections);
      const y = runs.find((k) => k.config === b && k.round === r && k.connections === connections);
      if (x && y) out.push(x[key] / y[key]);
    }
    return spread(out);
  };
  const base = s("baseline");
  const full = s("full");
  const bare = s("bare");
  const ceiling = s("ceiling");
  if (!base || !full || !bare || !ceiling) return undefined;
  const distinct = s("full-distinct");
  const distinctWorkers = s("full-distinct-workers");
  // the plain SDK 1.x (history): the same ratios against it, and the v1 baseline against v2's
  const v1 = s("baseline-v1");
  // MCP 2026-07-28: HMCP full (its sampling tool) against the plain SDK v2's per-request handler on the same era
  const modernBase = s("baseline-modern");
  const modernFull = s("full-modern");
  return {
    connections,
    fullVsBaselineRps: round(full.rps.median / base.rps.median),
    fullVsBaselineP50: round(full.p50Ms.median / base.p50Ms.median),
    bareVsBaselineRps: round(bare.rps.median / base.rps.median),
    bareVsBaselineP50: round(bare.p50Ms.median / base.p50Ms.median),
    baselineVsCeilingRps: round(base.rps.median / ceiling.rps.median),
    /** Server CPU per request, baseline / full: the throughput ratio a CPU-bound server would reach. */
    fullVsBaselineCpuCapacity: round(base.cpuUsPerReq.median / full.cpuUsPerReq.median),
    bareVsBaselineCpuCapacity: round(base.cpuUsPerReq.median / bare.cpuUsPerReq.median),
    ...(distinct && {
      fullDistinctVsBaselineRps: round(distinct.rps.median / base.rps.median),
      fullDistinctVsBaselineP50: round(distinct.p50Ms.median / base.p50Ms.median),
      fullDistinctVsBaselineCpuCapacity: round(base.cpuUsPerReq.median / distinct.cpuUsPerReq.median),
    }),
    ...(distinctWorkers && {
      fullDistinctWorkersVsBaselineRps: round(distinctWorkers.rps.median / base.rps.median),
      fullDistinctWorkersVsBaselineP50: round(distinctWorkers.p50Ms.median / base.p50Ms.median),
    }),
    ...(modernBase &&
      modernFull && {
        fullModernVsBaselineModernRps: round(modernFull.rps.median / modernBase.rps.median),
        fullModernVsBaselineModernP50: round(modernFull.p50Ms.median / modernBase.p50Ms.median),
        fullModernVsBaselineModernCpuCapacity: round(modernBase.cpuUsPerReq.median / modernFull.cpuUsPerReq.median),
        baselineModernVsBaselineRps: round(modernBase.rps.median / base.rps.median),
      }),
    ...(v1 && {
      baselineV1VsBaselineRps: round(v1.rps.median / base.rps.median),
      baselineV1VsBaselineP50: round(v1.p50Ms.median / base.p50Ms.median),
      baselineV1VsBaselineCpuCapacity: round(base.cpuUsPerReq.median / v1.cpuUsPerReq.median),
      fullVsBaselineV1Rps: round(full.rps.median / v1.rps.median),
      fullVsBaselineV1P50: round(full.p50Ms.median / v1.p50Ms.median),
      ...(distinct && {
        fullDistinctVsBaselineV1Rps: round(distinct.rps.median / v1.rps.median),
        fullDistinctVsBaselineV1P50: round(distinct.p50Ms.median / v1.p50Ms.median),
      }),
    }),
    paired: {
      fullVsBaselineRps: paired("full", "baseline", "rps"),
      fullVsBaselineP50: paired("full", "baseline", "p50Ms"),
      bareVsBaselineRps: paired("bare", "baseline", "rps"),
      fullVsBaselineCpu: paired("full", "baseline", "cpuUsPerReq"),
      bareVsBaselineCpu: paired("bare", "baseline", "cpuUsPerReq"),
      ...(distinct && {
        fullDistinctVsBaselineRps: paired("full-distinct", "baseline", "rps"),
        fullDistinctVsBaselineP50: paired("full-distinct", "baseline", "p50Ms"),
      }),
      ...(distinctWorkers && {
        fullDistinctWorkersVsBaselineRps: paired("full-distinct-workers", "baseline", "rps"),
        fullDistinctWorkersVsBaselineP50: paired("full-distinct-workers", "baseline", "p50Ms"),
      }),
      ...(v1 && {
        baselineV1VsBaselineRps: paired("baseline-v1", "baseline", "rps"),
        fullVsBaselineV1Rps: paired("full", "baseline-v1", "rps"),
      }),
      ...(modernBase &&
        modernFull && {
          fullModernVsBaselineModernRps: paired("full-modern", "baseline-modern", "rps"),
          fullModernVsBaselineModernP50: paired("full-modern", "baseline-modern", "p50Ms"),
        }),
    },
  };
}

// ------------------------------------------------------------------------------------------------------ components
interface AuditLine {
  policy: string;
  records: number;
  recordsPerSec: number;
  appendUsPerRecord: number;
  verifyRecordsPerSec: number;
  verifyOk: boolean;
}

async function auditComponent(): Promise<{ source: string; lines: AuditLine[]; raw: string } | { error: string }> {
  const script = path.join(BENCH_DIR, "audit.ts");
  if (!existsSync(script)) return { error: "bench/audit.ts not found" };
  const out = await runScript(script, [String(quick ? 10_000 : 50_000)], { timeoutMs: 300_000 });
  if (out.code !== 0) return { error: `bench/audit.ts exited ${out.code}: ${out.stderr.slice(-500)}` };
  const re = /^(.+?)\s{2,}(\d+) records\s+([\d,]+) records\/s\s+append ([\d.]+) µs\/record\s+verify ([\d,]+) records\/s \(ok=(\w+)\)/;
  const num = (s: string) => Number(s.replace(/,/g, ""));
  const lines: AuditLine[] = [];
  for (const line of out.stdout.split("\n")) {
    const m = re.exec(line.trim());
    if (m) lines.push({ policy: m[1]!.trim(), records: num(m[2]!), recordsPerSec: num(m[3]!), appendUsPerRecord: Number(m[4]), verifyRecordsPerSec: num(m[5]!), verifyOk: m[6] === "true" });
  }
  return { source: "bench/audit.ts", lines, raw: out.stdout.trim() };
}

async function teammateScript(name: string, args: string[], timeoutMs: number): Promise<{ source: string; code: number | null; seconds: number; output: string } | undefined> {
  const script = path.join(BENCH_DIR, name);
  if (!existsSync(script)) return undefined;
  const out = await runScript(script, args, { timeoutMs });
  return { source: `bench/${name}`, code: out.code, seconds: round(out.ms / 1000, 1), output: (out.stdout.trim() || out.stderr.trim()).slice(-4000) };
}

/** One row of bench/guardrails.ts's JSON line. */
export interface GuardrailBenchRow {
  case: string;
  text: string;
  chars: number;
  p50: number;
  p99: number;
  cpuMean: number;
  action: string;
}

async function components(): Promise<{
  direct: ComponentResults | { error: string };
  audit: Awaited<ReturnType<typeof auditComponent>>;
  guardrailsBench?: { source: string; code: number | null; seconds: number; output: string; rows?: GuardrailBenchRow[]; newText?: Array<Omit<GuardrailBenchRow, "action">> };
}> {
  // The guardrail component's own benchmark, when present, supplies the guardrail figures.
  const g = await teammateScript("guardrails.ts", quick ? ["--n", "500"] : [], 300_000);
  let rows: GuardrailBenchRow[] | undefined;
  let newText: Array<Omit<GuardrailBenchRow, "action">> | undefined;
  for (const line of g?.output.split("\n") ?? []) {
    if (!line.trimStart().startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as { guardrails?: GuardrailBenchRow[]; newText?: Array<Omit<GuardrailBenchRow, "action">> };
      if (Array.isArray(parsed.guardrails)) rows = parsed.guardrails;
      if (Array.isArray(parsed.newText)) newText = parsed.newText;
    } catch {
      // not the JSON line
    }
  }
  const guardrailsBench = g && { ...g, ...(rows && { rows }), ...(newText && { newText }) };
  const args = [...(quick ? ["--quick"] : []), ...(rows ? ["--skip-guardrails"] : [])];
  const out = await runScript(path.join(BENCH_DIR, "components.ts"), args, { timeoutMs: 300_000 });
  let direct: ComponentResults | { error: string };
  try {
    direct = JSON.parse(out.stdout) as ComponentResults;
  } catch {
    direct = { error: `bench/components.ts exited ${out.code}: ${out.stderr.slice(-500)}` };
  }
  const audit = await auditComponent();
  return { direct, audit, ...(guardrailsBench && { guardrailsBench }) };
}

// ------------------------------------------------------------------------------------------------------------ demo
type DemoResult =
  | { available: false; note: string }
  | { available: true; source: string; code: number | null; seconds: number; resourcesPerSec?: number; report?: Record<string, unknown>; output: string };

/** Runs bench/demo-import.ts (the demo's own benchmark) and reads the JSON object it prints. */
async function demo(): Promise<DemoResult> {
  const r = await teammateScript("demo-import.ts", quick ? ["--quick"] : [], quick ? 120_000 : 900_000);
  if (!r) return { available: false, note: "bench/demo-import.ts not in the tree yet" };
  let report: Record<string, unknown> | undefined;
  const start = r.output.indexOf("{");
  if (start >= 0) {
    try {
      report = JSON.parse(r.output.slice(start)) as Record<string, unknown>;
    } catch {
      report = undefined;
    }
  }
  const rps = typeof report?.["resourcesPerSec"] === "number" ? report["resourcesPerSec"] : undefined;
  return { available: true, ...r, ...(report && { report }), ...(rps !== undefined && { resourcesPerSec: rps }) };
}

// ------------------------------------------------------------------------------------------------------------ main
async function main(): Promise<void> {
  // servers, clients and component scripts load the compiled package (bench/lib/hmcp.ts)
  ensureBuilt();
  const started = new Date();
  const mach = machine();
  log(`${mode} run: ${rounds} rounds x ${durationSec}s, connections ${connectionsList.join("/")}, node ${mach.node}, ${mach.cpus} x ${mach.cpuModel}`);
  const text = clinicalText(textChars);
  const keys = await benchKeys();
  const token = await signAccessToken(keys.privateKey);

  let tp: Awaited<ReturnType<typeof throughput>> | undefined;
  let latency: LatencyFigure[] | { error: string } | undefined;
  const targets: Target[] = [];
  try {
    if (only.has("throughput") || only.has("latency")) await prepareTargets(targets, text.text, token, keys.publicJwk);
    if (only.has("throughput")) tp = await throughput(targets);
    if (only.has("latency")) {
      log(`sequential latency: ${latencyCalls} calls per configuration, interleaved`);
      const url = (c: ServerConfig) => targets.find((t) => t.config === c)!.url;
      try {
        latency = await sequentialLatency(
          [
            { name: "baseline", url: url("baseline"), kind: "sdk-tool" },
            { name: "baseline-v1", url: url("baseline-v1"), kind: "sdk-v1-tool" },
            { name: "bare", url: url("bare"), kind: "hmcp" },
            { name: "full", url: url("full"), kind: "hmcp", token, patient: true, redacts: true },
            { name: "full-distinct", url: url("full-distinct"), kind: "hmcp", token, patient: true, redacts: true, distinct: true },
          ],
          text.text,
          latencyCalls,
        );
      } catch (error) {
        latency = { error: (error as Error).message };
      }
    }
  } finally {
    stopLoadProcess();
    const finals = await Promise.all(targets.map(async (t) => ({ config: t.config, stats: await t.server.stop() })));
    const full = finals.find((f) => f.config === "full");
    if (full?.stats?.auditBytes !== undefined) log(`full: audit trail written ${full.stats.auditBytes} bytes`);
  }

  let comp: Awaited<ReturnType<typeof components>> | undefined;
  if (only.has("components")) {
    log("components (guardrails, tokens, audit)");
    comp = await components();
  }
  let memory: MemoryFigure[] | { error: string } | undefined;
  if (only.has("memory")) {
    log(`memory: ${memSessions} idle sessions`);
    try {
      memory = [await memoryPerSession("mem-hmcp", memSessions), await memoryPerSession("mem-sdk", memSessions)];
    } catch (error) {
      memory = { error: (error as Error).message };
    }
  }
  let demoResult: Awaited<ReturnType<typeof demo>> | undefined;
  if (only.has("demo")) {
    log("demo import");
    demoResult = await demo();
  }

  const ratios10 = tp ? ratios(tp.runs, tp.summary, 10) : undefined;
  const ratiosAll = tp ? connectionsList.map((c) => ratios(tp.runs, tp.summary, c)) : [];
  const finished = new Date();
  const report = {
    issue: 6,
    mode,
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    machine: { ...mach, loadAvgAtEnd: os.loadavg().map((x) => round(x, 2)) },
    options: { rounds, durationSec, warmupSec, connections: connectionsList, textChars, latencyCalls, memSessions },
    workload: {
      text: { chars: text.text.length, source: text.source },
      baseline: "the plain MCP SDK v2 (@modelcontextprotocol/server 2.x + /node + /express), protocol 2025-11-25, one stateful session; baseline-v1: the plain SDK 1.x (mcp-sdk-v1 alias), for history",
      note:
        "one stateful Streamable HTTP session per server, JSON responses; every request has a unique JSON-RPC id; handlers echo the text; " +
        "full resends the same text (its guardrail decisions come from the per-session decision cache after the first request), " +
        "full-distinct prefixes 'Request <counter>. ' so every text is new (no cache hits)",
    },
    throughput: tp,
    ratios: ratiosAll,
    latency,
    components: comp,
    memory,
    demo: demoResult,
  };
  const targetsMet = targetsOf(report);
  const resultsDir = path.join(BENCH_DIR, "results");
  mkdirSync(resultsDir, { recursive: true });
  // a second run on the same day gets its start time in the name: an earlier run's file is never overwritten
  const day = path.join(resultsDir, `${started.toISOString().slice(0, 10)}-${mode}.json`);
  const dated = existsSync(day) ? path.join(resultsDir, `${started.toISOString().slice(0, 16).replace(":", "")}-${mode}.json`) : day;
  writeFileSync(dated, resultsJson({ ...report, targets: targetsMet }));
  const latest = {
    mode,
    finishedAt: finished.toISOString(),
    configs: tp?.summary.map((s) => ({
      name: s.name,
      connections: s.connections,
      rps: round(s.rps.median, 1),
      p50Ms: round(s.p50Ms.median),
      p99Ms: round(s.p99Ms.median),
      rpsSpread: round(s.rps.relSpread),
      cpuUsPerReq: round(s.cpuUsPerReq.median, 1),
      ...(s.eventLoopUsPerReq && { eventLoopUsPerReq: round(s.eventLoopUsPerReq.median, 1) }),
    })) ?? [],
    ratios: ratios10
      ? {
          fullVsBaselineRps: ratios10.fullVsBaselineRps,
          fullVsBaselineP50: ratios10.fullVsBaselineP50,
          bareVsBaselineRps: ratios10.bareVsBaselineRps,
          ...(ratios10.fullDistinctVsBaselineRps !== undefined && {
            fullDistinctVsBaselineRps: ratios10.fullDistinctVsBaselineRps,
            fullDistinctVsBaselineP50: ratios10.fullDistinctVsBaselineP50,
          }),
          // history: the plain SDK 1.x against v2 (the baseline of record), and HMCP against it
          ...(ratios10.baselineV1VsBaselineRps !== undefined && {
            baselineV1VsBaselineRps: ratios10.baselineV1VsBaselineRps,
            baselineV1VsBaselineP50: ratios10.baselineV1VsBaselineP50,
            fullVsBaselineV1Rps: ratios10.fullVsBaselineV1Rps,
            fullVsBaselineV1P50: ratios10.fullVsBaselineV1P50,
            fullDistinctVsBaselineV1Rps: ratios10.fullDistinctVsBaselineV1Rps,
          }),
          ...(ratios10.fullDistinctWorkersVsBaselineRps !== undefined && {
            fullDistinctWorkersVsBaselineRps: ratios10.fullDistinctWorkersVsBaselineRps,
            fullDistinctWorkersVsBaselineP50: ratios10.fullDistinctWorkersVsBaselineP50,
          }),
        }
      : {},
    targets: targetsMet,
    results: path.relative(REPO_ROOT, dated),
  };
  writeFileSync(path.join(resultsDir, "latest.json"), JSON.stringify(latest, null, 2) + "\n");
  const md = renderMarkdown({ ...report, targets: targetsMet });
  process.stdout.write(md + "\n");
  if (flag("update-md")) updateBenchmarksMd(md, path.relative(REPO_ROOT, dated));
  log(`wrote ${path.relative(REPO_ROOT, dated)} and bench/results/latest.json in ${round((finished.getTime() - started.getTime()) / 1000, 1)} s`);
}

/**
 * The dated results file: numbers rounded to 3 decimals, one-space indent, and the teammates' raw
 * outputs left out where their parsed figures are kept, so a run stays small enough to commit (< 50 KB).
 */
function resultsJson(report: Record<string, unknown>): string {
  function replacer(this: Record<string, unknown>, key: string, value: unknown): unknown {
    if (typeof value === "number" && !Number.isInteger(value)) return Math.round(value * 1000) / 1000;
    if (key === "output" && (this["rows"] !== undefined || this["report"] !== undefined)) return undefined;
    if (key === "raw" && Array.isArray(this["lines"]) && this["lines"].length > 0) return undefined;
    return value;
  }
  return JSON.stringify(report, replacer, 1) + "\n";
}

const START = "<!-- bench:summary:start -->";
const END = "<!-- bench:summary:end -->";

/** Replaces the summary section of BENCHMARKS.md (between the markers) with this run's Markdown. */
function updateBenchmarksMd(md: string, resultsFile: string): void {
  const file = path.join(REPO_ROOT, "BENCHMARKS.md");
  if (!existsSync(file)) return;
  const doc = readFileSync(file, "utf8");
  const a = doc.indexOf(START);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) return;
  const body = `${START}\n\n${md.trim()}\n\nAll runs: \`${resultsFile}\`.\n\n${END}`;
  writeFileSync(file, doc.slice(0, a) + body + doc.slice(b + END.length));
  log("updated BENCHMARKS.md");
}

main().catch((error: unknown) => {
  console.error((error as Error).stack ?? String(error));
  process.exit(1);
});
