/**
 * A/B of two variants of one benchmark server, chosen by an environment variable of the server process: paired,
 * interleaved short runs (A B, B A, A B, ...), each pair's req/s ratio and both servers' CPU µs per request.
 * For deciding whether a change helps when the machine's speed drifts (compare within a pair, not across runs).
 *
 * Usage: `npx tsx bench/ab.ts --config full --env NAME --a value1 --b value2 [--pairs 8] [--seconds 4] [--connections 10]`
 * where NAME is an environment variable the experiment has bench/server.ts read (e.g. to pick one of two sinks); a
 * variant whose `--a`/`--b` is omitted runs with NAME unset. Configurations: those answering `sampling/createMessage`
 * (bare, full, full-distinct, bare+auth, bare+guardrails, bare+audit) and `full-modern` (the `full` server reached on
 * MCP 2026-07-28 through its sampling tool, as bench/run.ts drives it). `--env HMCP_DIST --a /abs/other/dist/src/index.js`
 * compares another build (an older commit in a second worktree) against this one (bench/lib/hmcp.ts). Each server is probed before the runs, and
 * every run is checked as bench/run.ts checks it (the handler answered each 2xx; no errors).
 * Prints, per pair and as medians: req/s, the server's CPU µs per request (all threads) and its event loop's share
 * (Linux; "n/a" elsewhere).
 */
import { parseArgs } from "node:util";
import { COUNTER_PLACEHOLDER, needsToken, requestText, type ServerConfig } from "./lib/configs.js";
import { benchKeys, clinicalText, modernHeaders, modernToolsCallBody, samplingBody, signAccessToken, PATIENT } from "./lib/fixtures.js";
import { ensureBuilt } from "./lib/hmcp.js";
import { openSession, post } from "./lib/mcp-http.js";
import { measure } from "./lib/measure.js";
import { ServerProc, stopLoadProcess } from "./lib/procs.js";
import { median } from "./lib/stats.js";

const SAMPLING_CONFIGS = new Set(["bare", "full", "full-distinct", "full-distinct-workers", "bare+auth", "bare+guardrails", "bare+audit", "full-modern"]);

const { values } = parseArgs({
  options: {
    config: { type: "string", default: "full" },
    env: { type: "string" },
    a: { type: "string" },
    b: { type: "string" },
    pairs: { type: "string", default: "8" },
    seconds: { type: "string", default: "4" },
    connections: { type: "string", default: "10" },
  },
});
const envName = values.env;
if (!envName) throw new Error("--env NAME is required (the variable that selects the variant in bench/server.ts)");
if (!SAMPLING_CONFIGS.has(values.config)) throw new Error(`--config must be one of ${[...SAMPLING_CONFIGS].join(", ")}`);
const config = values.config as ServerConfig;
const pairs = Number(values.pairs);
const connections = Number(values.connections);
const seconds = Number(values.seconds);
for (const [k, v] of [["pairs", pairs], ["connections", connections], ["seconds", seconds]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${k} must be an integer >= 1`);
}
const label = (v: string | undefined) => (v === undefined ? "(unset)" : v);

await ensureBuilt();
const keys = await benchKeys();
const token = await signAccessToken(keys.privateKey);
const text = clinicalText(1024).text;

async function start(value: string | undefined) {
  const saved = process.env[envName!];
  if (value === undefined) delete process.env[envName!];
  else process.env[envName!] = value;
  try {
    const server = await ServerProc.start({ config, ...(needsToken(config) && { publicJwk: keys.publicJwk }) });
    const auth: Record<string, string> = needsToken(config) ? { authorization: `Bearer ${token}` } : {};
    let headers: Record<string, string>;
    let body: string;
    let answered: (result: unknown) => boolean;
    if (config === "full-modern") {
      // no session: every request carries the 2026-07-28 envelope and headers (as bench/run.ts sends them)
      headers = modernHeaders("sampling_createMessage", auth);
      body = JSON.stringify(
        modernToolsCallBody("sampling_createMessage", { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256, _meta: { "hmcp/patient": PATIENT } }, "[<id>]"),
      );
      answered = (r) => typeof (r as { content?: Array<{ text?: unknown }> } | undefined)?.content?.[0]?.text === "string";
    } else {
      headers = (await openSession(server.url, auth)).headers;
      body = JSON.stringify(samplingBody(requestText(config, text), "[<id>]", needsToken(config) ? PATIENT : undefined));
      answered = (r) => typeof (r as { content?: { text?: unknown } } | undefined)?.content?.text === "string";
    }
    const probe = await post(server.url, headers, body.replace("[<id>]", "probe-1").replaceAll(COUNTER_PLACEHOLDER, "0"));
    if (probe.status !== 200 || !answered(probe.message["result"])) {
      throw new Error(`${config} with ${envName}=${label(value)}: probe failed: HTTP ${probe.status} ${JSON.stringify(probe.message).slice(0, 300)}`);
    }
    return { value, server, headers, body };
  } finally {
    if (saved === undefined) delete process.env[envName!];
    else process.env[envName!] = saved;
  }
}

const variants = [await start(values.a), await start(values.b)];
interface Run {
  rps: number;
  p50: number;
  cpu: number;
  /** NaN where /proc is not there. */
  main: number;
}
async function run(v: (typeof variants)[number]): Promise<Run> {
  const m = await measure({ config, server: v.server, url: v.server.url, headers: v.headers, body: v.body }, connections, seconds, (w) =>
    console.warn(`${w} (${envName}=${label(v.value)})`),
  );
  return { rps: m.result.rps, p50: m.result.p50Ms, cpu: m.cpuUsPerReq, main: m.eventLoopUsPerReq ?? NaN };
}

const us = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "n/a");
const med = (xs: number[]) => (xs.every(Number.isFinite) ? median(xs) : NaN);

// warm-up
for (const v of variants) await run(v);
const rows: { a: Run; b: Run }[] = [];
for (let i = 0; i < pairs; i++) {
  const order = i % 2 === 0 ? [0, 1] : [1, 0];
  const got: Run[] = [];
  for (const k of order) got[k] = await run(variants[k]!);
  const [a, b] = [got[0]!, got[1]!];
  rows.push({ a, b });
  console.log(
    `pair ${i + 1}: ${label(values.a)} ${a.rps.toFixed(0)} req/s ${us(a.cpu)} µs/req (event loop ${us(a.main)}) | ` +
      `${label(values.b)} ${b.rps.toFixed(0)} req/s ${us(b.cpu)} µs/req (event loop ${us(b.main)}) | b/a ${(b.rps / a.rps).toFixed(3)}`,
  );
}
const ratios = rows.map((r) => r.b.rps / r.a.rps);
console.log(
  `\n${config} @${connections} conns, ${envName}: ${label(values.a)} → ${label(values.b)}: req/s ratio b/a median ${median(ratios).toFixed(3)} ` +
    `(min ${Math.min(...ratios).toFixed(3)}, max ${Math.max(...ratios).toFixed(3)}); ` +
    `CPU µs/req a ${us(med(rows.map((r) => r.a.cpu)))}, b ${us(med(rows.map((r) => r.b.cpu)))}; ` +
    `event loop µs/req a ${us(med(rows.map((r) => r.a.main)))}, b ${us(med(rows.map((r) => r.b.main)))}; ` +
    `p50 ms a ${median(rows.map((r) => r.a.p50)).toFixed(2)}, b ${median(rows.map((r) => r.b.p50)).toFixed(2)}`,
);
for (const v of variants) await v.server.stop();
stopLoadProcess();
