/**
 * The Markdown summary and the target check of a benchmark run (issue 6 "Targets").
 */
import type { Spread, LatencySummary } from "./stats.js";
import type { MemoryFigure } from "./memory.js";
import type { LatencyFigure } from "./latency.js";
import type { ComponentResults } from "../components.js";
import type { ServerConfig } from "./configs.js";

/** Medians over the rounds of one configuration at one connection count (bench/run.ts builds them). */
export interface ThroughputSummary {
  name: ServerConfig;
  connections: number;
  rps: Spread;
  p50Ms: Spread;
  p99Ms: Spread;
  /** Server process CPU µs per request (all threads). */
  cpuUsPerReq: Spread;
  /** Event loop (main thread) CPU µs per request (Linux). */
  eventLoopUsPerReq?: Spread;
  /** Decision-cache counters of the server's guardrails, summed over the measured runs (configurations with guardrails). */
  decisionCache?: { hits: number; misses: number };
}

/** The subset of the run report this module reads. */
export interface ReportView {
  mode: string;
  startedAt: string;
  machine: { node: string; cpus: number; cpuModel: string; platform: string; loadAvgAtStart: number[]; loadAvgAtEnd: number[] };
  options: { rounds: number; durationSec: number; connections: number[]; textChars: number; latencyCalls: number; memSessions: number };
  workload: { text: { chars: number; source: string } };
  throughput?: {
    summary: ThroughputSummary[];
  };
  ratios: Array<
    | {
        connections: number;
        fullVsBaselineRps: number;
        fullVsBaselineP50: number;
        bareVsBaselineRps: number;
        bareVsBaselineP50: number;
        baselineVsCeilingRps: number;
        fullVsBaselineCpuCapacity: number;
        bareVsBaselineCpuCapacity: number;
        fullDistinctVsBaselineRps?: number;
        fullDistinctVsBaselineP50?: number;
        fullDistinctVsBaselineCpuCapacity?: number;
        /** `full-distinct-workers` (`--phi-workers`): `full-distinct` with phi-redaction `workers: 1`. */
        fullDistinctWorkersVsBaselineRps?: number;
        fullDistinctWorkersVsBaselineP50?: number;
        /** `baseline-v1` (the plain SDK 1.x, history) against `baseline` (the plain SDK v2), and HMCP against it. */
        baselineV1VsBaselineRps?: number;
        baselineV1VsBaselineP50?: number;
        baselineV1VsBaselineCpuCapacity?: number;
        fullVsBaselineV1Rps?: number;
        fullVsBaselineV1P50?: number;
        fullDistinctVsBaselineV1Rps?: number;
        fullDistinctVsBaselineV1P50?: number;
        /** MCP 2026-07-28: `full-modern` (HMCP full, its sampling tool) against `baseline-modern` (the plain SDK v2's per-request handler). */
        fullModernVsBaselineModernRps?: number;
        fullModernVsBaselineModernP50?: number;
        fullModernVsBaselineModernCpuCapacity?: number;
        /** The plain SDK v2 on 2026-07-28 (a server per request) against itself on 2025-11-25 (one session). */
        baselineModernVsBaselineRps?: number;
        paired: {
          fullVsBaselineRps: Spread;
          fullVsBaselineP50: Spread;
          bareVsBaselineRps: Spread;
          fullVsBaselineCpu: Spread;
          bareVsBaselineCpu: Spread;
          fullDistinctVsBaselineRps?: Spread;
          fullDistinctVsBaselineP50?: Spread;
          fullDistinctWorkersVsBaselineRps?: Spread;
          fullDistinctWorkersVsBaselineP50?: Spread;
          baselineV1VsBaselineRps?: Spread;
          fullVsBaselineV1Rps?: Spread;
          fullModernVsBaselineModernRps?: Spread;
          fullModernVsBaselineModernP50?: Spread;
        };
      }
    | undefined
  >;
  latency?: LatencyFigure[] | { error: string };
  components?: {
    direct: ComponentResults | { error: string };
    audit: { lines: Array<{ policy: string; records: number; recordsPerSec: number; appendUsPerRecord: number }> } | { error: string };
    guardrailsBench?: { source: string; output: string; rows?: Array<{ case: string; text: string; p99: number }>; newText?: Array<{ case: string; text: string; p99: number }> };
  };
  memory?: MemoryFigure[] | { error: string };
  demo?: {
    available: boolean;
    note?: string;
    resourcesPerSec?: number;
    report?: Record<string, unknown>;
    output?: string;
    source?: string;
    code?: number | null;
  };
  targets?: Target[];
}

export interface Target {
  name: string;
  target: string;
  measured: string;
  met: boolean | null;
}

const fmt = (x: number, d = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "n/a");


/** Evaluates the issue's targets against a run. `met: null` when the figure was not measured. */
export function targetsOf(r: Omit<ReportView, "targets">): Target[] {
  const out: Target[] = [];
  const r10 = r.ratios.find((x) => x?.connections === 10);
  if (r10) {
    out.push({ name: "HMCP full throughput vs baseline (10 conns)", target: ">= 0.90", measured: r10.fullVsBaselineRps.toFixed(3), met: r10.fullVsBaselineRps >= 0.9 });
    out.push({ name: "HMCP full p50 latency vs baseline (10 conns)", target: "<= 1.15", measured: r10.fullVsBaselineP50.toFixed(3), met: r10.fullVsBaselineP50 <= 1.15 });
    if (r10.fullDistinctVsBaselineRps !== undefined && r10.fullDistinctVsBaselineP50 !== undefined) {
      const name = "HMCP full-distinct (a new text every request: no decision-cache hits)";
      out.push({ name: `${name} throughput vs baseline (10 conns)`, target: ">= 0.90", measured: r10.fullDistinctVsBaselineRps.toFixed(3), met: r10.fullDistinctVsBaselineRps >= 0.9 });
      out.push({ name: `${name} p50 latency vs baseline (10 conns)`, target: "<= 1.15", measured: r10.fullDistinctVsBaselineP50.toFixed(3), met: r10.fullDistinctVsBaselineP50 <= 1.15 });
    }
    if (r10.fullModernVsBaselineModernRps !== undefined && r10.fullModernVsBaselineModernP50 !== undefined) {
      out.push({ name: "HMCP full throughput vs baseline, MCP 2026-07-28 (10 conns)", target: ">= 0.90", measured: r10.fullModernVsBaselineModernRps.toFixed(3), met: r10.fullModernVsBaselineModernRps >= 0.9 });
      out.push({ name: "HMCP full p50 latency vs baseline, MCP 2026-07-28 (10 conns)", target: "<= 1.15", measured: r10.fullModernVsBaselineModernP50.toFixed(3), met: r10.fullModernVsBaselineModernP50 <= 1.15 });
    }
    out.push({ name: "HMCP bare throughput vs baseline (10 conns)", target: ">= 0.95", measured: r10.bareVsBaselineRps.toFixed(3), met: r10.bareVsBaselineRps >= 0.95 });
  }
  const direct = r.components?.direct;
  const rows = r.components?.guardrailsBench?.rows?.filter((x) => x.case === "default.yaml input");
  // new text (a different message each call, what a server meets) when the bench gives it: the one-text rows keep the
  // message's work in cache and read lower
  const fresh = r.components?.guardrailsBench?.newText?.filter((x) => x.case === "default.yaml input");
  if (fresh?.length) {
    const worst = Math.max(...fresh.map((x) => x.p99));
    out.push({ name: "guardrail input stage p99 per 4 KB of new text (bench/guardrails.ts, worst of MTSamples / PhysioNet)", target: "<= 1,000 µs", measured: `${fmt(worst)} µs`, met: worst <= 1000 });
  } else if (rows?.length) {
    const worst = Math.max(...rows.map((x) => x.p99));
    out.push({ name: "guardrail input stage p99 per 4 KB message (bench/guardrails.ts, worst of with/without PHI)", target: "<= 1,000 µs", measured: `${fmt(worst)} µs`, met: worst <= 1000 });
  } else if (direct && "guardrails" in direct && Array.isArray(direct.guardrails)) {
    const worst = Math.max(...direct.guardrails.filter((g) => g.stage === "input").map((g) => g.us.p99));
    out.push({ name: "guardrail input stage p99 per 4 KB message (worst of with/without PHI)", target: "<= 1,000 µs", measured: `${fmt(worst)} µs`, met: worst <= 1000 });
  }
  const audit = r.components?.audit;
  if (audit && "lines" in audit) {
    const group = audit.lines.find((l) => l.policy.startsWith("group commit (default"));
    if (group) out.push({ name: "audit records/s, group commit (default policy)", target: ">= 20,000", measured: fmt(group.recordsPerSec), met: group.recordsPerSec >= 20_000 });
  }
  if (Array.isArray(r.memory)) {
    const m = r.memory.find((x) => x.config === "mem-hmcp");
    if (m) out.push({ name: `RSS per idle session (${m.sessions} sessions)`, target: "<= 64 KB", measured: `${fmt(m.rssPerSession / 1024, 1)} KB`, met: m.rssPerSession <= 64 * 1024 });
  }
  return out;
}

const spreadCell = (s: Spread, d = 0) => `${fmt(s.median, d)} (${fmt(s.min, d)}–${fmt(s.max, d)})`;

function latencyRow(name: string, client: string, ms: LatencySummary, chunks: number[]): string {
  const lo = Math.min(...chunks);
  const hi = Math.max(...chunks);
  return `| ${name} | ${client} | ${fmt(ms.n)} | ${fmt(ms.p50, 3)} | ${fmt(ms.p90, 3)} | ${fmt(ms.p99, 3)} | ${fmt(lo, 3)}–${fmt(hi, 3)} |`;
}

/** Renders the run as Markdown (tables of medians with min–max over the interleaved runs). */
export function renderMarkdown(r: ReportView): string {
  const L: string[] = [];
  const m = r.machine;
  L.push(`### HMCP benchmarks (${r.mode}), ${r.startedAt.slice(0, 16).replace("T", " ")} UTC`);
  L.push("");
  L.push(
    `Node ${m.node}, ${m.cpus} × ${m.cpuModel}, ${m.platform}; load average ${m.loadAvgAtStart.join(" / ")} at start, ${m.loadAvgAtEnd.join(" / ")} at end. ` +
      `${r.options.rounds} interleaved rounds × ${r.options.durationSec} s per configuration and connection count; request text ${r.workload.text.chars} characters (${r.workload.text.source}).`,
  );
  if (r.targets?.length) {
    L.push("", "**Targets**", "", "| target | goal | measured | |", "| --- | --- | --- | --- |");
    for (const t of r.targets) L.push(`| ${t.name} | ${t.target} | ${t.measured} | ${t.met === null ? "not measured" : t.met ? "met" : "**MISSED**"} |`);
  }
  if (r.throughput) {
    L.push("", "**Throughput** (autocannon in its own process; medians, min–max over the rounds)", "");
    L.push(
      "| configuration | connections | req/s | p50 ms | p99 ms | req/s vs baseline | server CPU µs/request | event loop µs/request |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
    );
    for (const s of r.throughput.summary) {
      const base = r.throughput.summary.find((x) => x.name === "baseline" && x.connections === s.connections);
      const rel = base ? (s.rps.median / base.rps.median).toFixed(3) : "";
      const loop = s.eventLoopUsPerReq ? spreadCell(s.eventLoopUsPerReq) : "n/a";
      L.push(`| ${s.name} | ${s.connections} | ${spreadCell(s.rps)} | ${spreadCell(s.p50Ms, 2)} | ${spreadCell(s.p99Ms, 2)} | ${rel} | ${spreadCell(s.cpuUsPerReq)} | ${loop} |`);
    }
    const cached = r.throughput.summary.filter((x) => x.decisionCache !== undefined);
    if (cached.length) {
      L.push(
        "",
        "Guardrail decision cache, text items answered from the cache / checked afresh (server counters, all measured runs): " +
          cached.map((x) => `${x.name}@${x.connections} ${fmt(x.decisionCache!.hits)} / ${fmt(x.decisionCache!.misses)}`).join("; ") +
          ". `full` resends one text, `full-distinct` a new one every request.",
      );
    }
    const rs = r.ratios.filter((x): x is NonNullable<typeof x> => x !== undefined);
    if (rs.length) {
      L.push("", "| ratio | " + rs.map((x) => `${x.connections} conns`).join(" | ") + " |", "| --- | " + rs.map(() => "---").join(" | ") + " |");
      const row = (label: string, f: (x: (typeof rs)[number]) => string) => L.push(`| ${label} | ${rs.map(f).join(" | ")} |`);
      row("full / baseline req/s (paired per round: median, min–max)", (x) => `${x.fullVsBaselineRps.toFixed(3)} (${x.paired.fullVsBaselineRps.min.toFixed(2)}–${x.paired.fullVsBaselineRps.max.toFixed(2)})`);
      row("full / baseline p50", (x) => `${x.fullVsBaselineP50.toFixed(3)} (${x.paired.fullVsBaselineP50.min.toFixed(2)}–${x.paired.fullVsBaselineP50.max.toFixed(2)})`);
      const pairedCell = (v: number | undefined, p: Spread | undefined) => (v === undefined ? "n/a" : `${v.toFixed(3)}${p ? ` (${p.min.toFixed(2)}–${p.max.toFixed(2)})` : ""}`);
      if (rs.some((x) => x.fullDistinctVsBaselineRps !== undefined)) {
        row("full-distinct / baseline req/s (paired per round)", (x) => pairedCell(x.fullDistinctVsBaselineRps, x.paired.fullDistinctVsBaselineRps));
        row("full-distinct / baseline p50", (x) => pairedCell(x.fullDistinctVsBaselineP50, x.paired.fullDistinctVsBaselineP50));
      }
      if (rs.some((x) => x.fullDistinctWorkersVsBaselineRps !== undefined)) {
        row("full-distinct-workers (phi-redaction workers: 1) / baseline req/s (paired per round)", (x) => pairedCell(x.fullDistinctWorkersVsBaselineRps, x.paired.fullDistinctWorkersVsBaselineRps));
        row("full-distinct-workers / baseline p50", (x) => pairedCell(x.fullDistinctWorkersVsBaselineP50, x.paired.fullDistinctWorkersVsBaselineP50));
      }
      if (rs.some((x) => x.fullModernVsBaselineModernRps !== undefined)) {
        row("MCP 2026-07-28: full-modern / baseline-modern req/s (paired per round)", (x) => pairedCell(x.fullModernVsBaselineModernRps, x.paired.fullModernVsBaselineModernRps));
        row("MCP 2026-07-28: full-modern / baseline-modern p50", (x) => pairedCell(x.fullModernVsBaselineModernP50, x.paired.fullModernVsBaselineModernP50));
        row("CPU capacity full-modern vs baseline-modern", (x) => x.fullModernVsBaselineModernCpuCapacity?.toFixed(3) ?? "n/a");
        row("baseline-modern (SDK v2, a server per request) / baseline (SDK v2, one session) req/s", (x) => x.baselineModernVsBaselineRps?.toFixed(3) ?? "n/a");
      }
      row("bare / baseline req/s", (x) => `${x.bareVsBaselineRps.toFixed(3)} (${x.paired.bareVsBaselineRps.min.toFixed(2)}–${x.paired.bareVsBaselineRps.max.toFixed(2)})`);
      row("bare / baseline p50", (x) => x.bareVsBaselineP50.toFixed(3));
      row("baseline / ceiling req/s", (x) => x.baselineVsCeilingRps.toFixed(3));
      if (rs.some((x) => x.baselineV1VsBaselineRps !== undefined)) {
        row("baseline-v1 (plain SDK 1.x) / baseline (plain SDK v2) req/s (paired per round)", (x) => pairedCell(x.baselineV1VsBaselineRps, x.paired.baselineV1VsBaselineRps));
        row("baseline-v1 / baseline p50", (x) => x.baselineV1VsBaselineP50?.toFixed(3) ?? "n/a");
        row("CPU capacity baseline-v1 vs baseline (baseline CPU/req ÷ baseline-v1 CPU/req)", (x) => x.baselineV1VsBaselineCpuCapacity?.toFixed(3) ?? "n/a");
        row("history: full / baseline-v1 req/s (paired per round)", (x) => pairedCell(x.fullVsBaselineV1Rps, x.paired.fullVsBaselineV1Rps));
        row("history: full / baseline-v1 p50", (x) => x.fullVsBaselineV1P50?.toFixed(3) ?? "n/a");
        row("history: full-distinct / baseline-v1 req/s", (x) => x.fullDistinctVsBaselineV1Rps?.toFixed(3) ?? "n/a");
      }
      row("CPU capacity full vs baseline (baseline CPU/req ÷ full CPU/req)", (x) => x.fullVsBaselineCpuCapacity.toFixed(3));
      if (rs.some((x) => x.fullDistinctVsBaselineCpuCapacity !== undefined)) {
        row("CPU capacity full-distinct vs baseline", (x) => x.fullDistinctVsBaselineCpuCapacity?.toFixed(3) ?? "n/a");
      }
      row("CPU capacity bare vs baseline", (x) => x.bareVsBaselineCpuCapacity.toFixed(3));
    }
  }
  const layers = r.throughput?.summary.filter((x) => x.name.startsWith("bare+")) ?? [];
  if (layers.length) {
    L.push("", "**Where the cost of `full` comes from** (one layer at a time on top of `bare`; server CPU is the steadier figure)", "");
    L.push("| layer | connections | req/s vs bare | added server CPU µs/request (vs bare) | added event loop µs/request |", "| --- | --- | --- | --- | --- |");
    const rows = [...layers, ...(r.throughput?.summary.filter((x) => x.name.startsWith("full")) ?? [])];
    const label = (name: string) =>
      name === "full"
        ? "full (all layers)"
        : name === "full-distinct"
          ? "full-distinct (all layers, no cache hits)"
          : name === "full-distinct-workers"
            ? "full-distinct-workers (the same, PHI scans on a worker)"
            : name.slice(5);
    for (const x of rows) {
      const bare = r.throughput!.summary.find((b) => b.name === "bare" && b.connections === x.connections);
      if (!bare) continue;
      const loop = x.eventLoopUsPerReq && bare.eventLoopUsPerReq ? fmt(x.eventLoopUsPerReq.median - bare.eventLoopUsPerReq.median) : "n/a";
      L.push(`| ${label(x.name)} | ${x.connections} | ${(x.rps.median / bare.rps.median).toFixed(3)} | ${fmt(x.cpuUsPerReq.median - bare.cpuUsPerReq.median)} | ${loop} |`);
    }
  }
  if (r.latency) {
    L.push("", `**Sequential round-trip latency** (one call at a time, one session; chunks of 250 calls interleaved)`, "");
    if ("error" in r.latency) L.push(`not measured: ${r.latency.error}`);
    else {
      L.push("| configuration | client | calls | p50 ms | p90 ms | p99 ms | chunk p50 range ms |", "| --- | --- | --- | --- | --- | --- | --- |");
      for (const f of r.latency) L.push(latencyRow(f.name, f.client, f.ms, f.chunkP50s));
    }
  }
  if (r.components) {
    L.push("", "**Components**", "");
    const d = r.components.direct;
    if ("error" in d) L.push(`components: ${d.error}`);
    else {
      if (Array.isArray(d.guardrails)) {
        L.push("| guardrails/default.yaml stage | text | p50 µs | p90 µs | p99 µs | decision |", "| --- | --- | --- | --- | --- | --- |");
        for (const g of d.guardrails) {
          L.push(`| ${g.stage} | ${g.chars} chars, ${g.phi ? "with PHI" : "no PHI"} | ${fmt(g.us.p50)} | ${fmt(g.us.p90)} | ${fmt(g.us.p99)} | ${g.action}${g.entityTypes.length ? ` (${g.entityTypes.join(", ")})` : ""} |`);
        }
        L.push("");
      } else if ("error" in d.guardrails) L.push(`guardrails: ${d.guardrails.error}`, "");
      L.push("| bearer check (ES256 JWT, local key set) | p50 µs | p90 µs | p99 µs |", "| --- | --- | --- | --- |");
      for (const t of d.tokens) L.push(`| ${t.mode === "cold" ? "cold (signature + claims)" : "cached (verified-token cache hit)"} | ${fmt(t.us.p50, 1)} | ${fmt(t.us.p90, 1)} | ${fmt(t.us.p99, 1)} |`);
    }
    const a = r.components.audit;
    L.push("");
    if ("error" in a) L.push(`audit: ${a.error}`);
    else {
      L.push("| audit durability policy (bench/audit.ts) | records | records/s | append µs/record |", "| --- | --- | --- | --- |");
      for (const l of a.lines) L.push(`| ${l.policy} | ${fmt(l.records)} | ${fmt(l.recordsPerSec)} | ${l.appendUsPerRecord.toFixed(2)} |`);
    }
    if (r.components.guardrailsBench) {
      const g = r.components.guardrailsBench;
      const table = g.output
        .split("\n")
        .filter((l) => !l.trimStart().startsWith("{"))
        .join("\n");
      L.push("", `${g.source} (the guardrail component's own benchmark; each guardrail alone and the default pipelines):`, "", "```", table, "```");
    }
  }
  if (r.memory) {
    L.push("", `**Memory per idle session** (server process, after forced GC; delta over ${r.options.memSessions} open sessions / ${r.options.memSessions})`, "");
    if ("error" in r.memory) L.push(`not measured: ${r.memory.error}`);
    else {
      L.push("| server | RSS KB/session | heap KB/session | external KB/session | RSS before → after MB |", "| --- | --- | --- | --- | --- |");
      for (const x of r.memory) {
        const name = x.config === "mem-hmcp" ? "HMCP createHttpApp (bearer false, defaults)" : "plain SDK v2 (McpServer + transport per session)";
        L.push(`| ${name} | ${fmt(x.rssPerSession / 1024, 1)} | ${fmt(x.heapPerSession / 1024, 1)} | ${fmt(x.externalPerSession / 1024, 1)} | ${fmt(x.rssBefore / 2 ** 20, 1)} → ${fmt(x.rssAfter / 2 ** 20, 1)} |`);
      }
    }
  }
  if (r.demo) {
    L.push("", "**Demo `--all` import**", "");
    if (!r.demo.available) L.push(`not measured: ${r.demo.note}`);
    else if (r.demo.resourcesPerSec !== undefined) {
      type Phase = { patients?: number; resourcesWritten?: number; importSec?: number; wallSec?: number; resourcesPerSec?: number; ok?: boolean };
      const rep = r.demo.report ?? {};
      L.push(`${r.demo.source}, data ${String(rep["data"] ?? "?")}, transport ${String(rep["transport"] ?? "?")}:`, "");
      L.push("| run | patients | resources written | import s | wall s | resources/s |", "| --- | --- | --- | --- | --- | --- |");
      for (const name of ["fresh", "replay"]) {
        const ph = rep[name] as Phase | undefined;
        if (ph) L.push(`| ${name === "fresh" ? "fresh store" : "replay (idempotent, all present)"} | ${ph.patients ?? ""} | ${ph.resourcesWritten ?? ""} | ${ph.importSec ?? ""} | ${ph.wallSec ?? ""} | ${fmt(ph.resourcesPerSec ?? Number.NaN, 1)} |`);
      }
      if (!rep["fresh"]) L.push(`| run | | | | | ${fmt(r.demo.resourcesPerSec, 1)} |`);
    }
    else L.push(`${r.demo.source} exited ${r.demo.code}; no resources/s figure found in its output:`, "", "```", (r.demo.output ?? "").slice(-1500), "```");
  }
  return L.join("\n");
}
