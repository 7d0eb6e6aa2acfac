/**
 * A/B of two variants of one benchmark server, chosen by an environment variable of the server process: paired,
 * interleaved short runs (A B, B A, A B, ...), each pair's req/s ratio and both servers' CPU µs per request.
 * For deciding whether a change helps when the machine's speed drifts (compare within a pair, not across runs).
 *
 * Usage: `npx tsx bench/ab.ts --config full --env NAME --a value1 --b value2 [--pairs 8] [--seconds 4] [--connections 10]`
 * where NAME is an environment variable the experiment has bench/server.ts read (e.g. to pick one of two sinks).
 * Prints, per pair and as medians: req/s, the server's CPU µs per request (all threads) and its event loop's share.
 */
import { parseArgs } from "node:util";
import { needsToken, requestText, type ServerConfig } from "./lib/configs.js";
import { benchKeys, clinicalText, samplingBody, signAccessToken, PATIENT } from "./lib/fixtures.js";
import { ensureBuilt } from "./lib/hmcp.js";
import { openSession } from "./lib/mcp-http.js";
import { ServerProc, runLoadProcess, stopLoadProcess } from "./lib/procs.js";

const { values } = parseArgs({
  options: {
    config: { type: "string", default: "full" },
    env: { type: "string" },
    a: { type: "string", default: "" },
    b: { type: "string", default: "" },
    pairs: { type: "string", default: "8" },
    seconds: { type: "string", default: "4" },
    connections: { type: "string", default: "10" },
  },
});
if (!values.env) throw new Error("--env NAME is required (the variable that selects the variant in bench/server.ts)");
const config = values.config as ServerConfig;
const connections = Number(values.connections);
const seconds = Number(values.seconds);

await ensureBuilt();
const keys = await benchKeys();
const token = await signAccessToken(keys.privateKey);
const text = clinicalText(1024).text;

async function start(value: string) {
  const saved = process.env[values.env!];
  process.env[values.env!] = value;
  try {
    const server = await ServerProc.start({ config, ...(needsToken(config) && { publicJwk: keys.publicJwk }) });
    const auth: Record<string, string> = needsToken(config) ? { authorization: `Bearer ${token}` } : {};
    const { headers } = await openSession(server.url, auth);
    const body = JSON.stringify(samplingBody(requestText(config, text), "[<id>]", needsToken(config) ? PATIENT : undefined));
    return { value, server, headers, body };
  } finally {
    if (saved === undefined) delete process.env[values.env!];
    else process.env[values.env!] = saved;
  }
}

const variants = [await start(values.a), await start(values.b)];
async function run(v: (typeof variants)[number]) {
  const before = await v.server.stats();
  const r = await runLoadProcess({ url: v.server.url, headers: v.headers, body: v.body, connections, durationSec: seconds });
  const after = await v.server.stats();
  const served = after.served - before.served;
  const n = Math.max(1, served);
  const main = after.mainCpuUs !== undefined && before.mainCpuUs !== undefined ? (after.mainCpuUs - before.mainCpuUs) / n : NaN;
  return { rps: r.rps, p50: r.p50Ms, cpu: (after.cpuUs - before.cpuUs) / n, main };
}

// warm-up
for (const v of variants) await run(v);
const rows: { a: Awaited<ReturnType<typeof run>>; b: Awaited<ReturnType<typeof run>> }[] = [];
for (let i = 0; i < Number(values.pairs); i++) {
  const order = i % 2 === 0 ? [0, 1] : [1, 0];
  const got: Awaited<ReturnType<typeof run>>[] = [];
  for (const k of order) got[k] = await run(variants[k]!);
  rows.push({ a: got[0]!, b: got[1]! });
  console.log(`pair ${i + 1}: ${values.a || "(unset)"} ${got[0]!.rps.toFixed(0)} req/s ${got[0]!.cpu.toFixed(0)} µs/req (event loop ${got[0]!.main.toFixed(0)}) | ${values.b || "(unset)"} ${got[1]!.rps.toFixed(0)} req/s ${got[1]!.cpu.toFixed(0)} µs/req (event loop ${got[1]!.main.toFixed(0)}) | b/a ${(got[1]!.rps / got[0]!.rps).toFixed(3)}`);
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
console.log(
  `\n${config} @${connections} conns, ${values.env}: ${values.a || "(unset)"} → ${values.b || "(unset)"}: req/s ratio b/a median ${median(rows.map((r) => r.b.rps / r.a.rps)).toFixed(3)} ` +
    `(min ${Math.min(...rows.map((r) => r.b.rps / r.a.rps)).toFixed(3)}, max ${Math.max(...rows.map((r) => r.b.rps / r.a.rps)).toFixed(3)}); ` +
    `CPU µs/req a ${median(rows.map((r) => r.a.cpu)).toFixed(0)}, b ${median(rows.map((r) => r.b.cpu)).toFixed(0)}; ` +
    `event loop µs/req a ${median(rows.map((r) => r.a.main)).toFixed(0)}, b ${median(rows.map((r) => r.b.main)).toFixed(0)}; ` +
    `p50 ms a ${median(rows.map((r) => r.a.p50)).toFixed(2)}, b ${median(rows.map((r) => r.b.p50)).toFixed(2)}`,
);
for (const v of variants) await v.server.stop();
stopLoadProcess();
