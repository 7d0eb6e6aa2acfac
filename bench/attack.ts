/**
 * Under attack, still serving (issue #25 item 5): honest clients' throughput and latency on the `full-modern` server
 * (JWT bearer, scopes and patient context, default guardrails, file audit sink; MCP 2026-07-28 `tools/call`s of the
 * sampling tool) alone, then beside a stream of hostile requests, and the server's memory over both runs.
 *
 * Usage: `npx tsx bench/attack.ts [--seconds 10] [--connections 8] [--hostile-connections 4]`
 *
 * The hostile stream is three autocannon processes at once, each with `--hostile-connections` connections, sending as
 * fast as the server answers: a request with a forged token (right claims, signed by another key: 401), a body that is
 * not JSON (400, -32700), and a body over the 1 MiB limit (413). Each is refused at the edge and audited; the honest
 * clients (`--connections`, one load process) send valid requests meanwhile. Prints, as a Markdown table, honest
 * requests/s, p50 / p99 latency (ms), non-2xx answers to honest requests, hostile requests answered, and the server's
 * RSS and heap (MiB) sampled every second (max over the run) and after a forced GC at the end of each run.
 *
 * On a 2-core machine the hostile load processes and the server share the cores with the honest load process: the
 * attack run's honest throughput measures the CPU the refusals take, which is the point, and also the CPU the attackers'
 * own processes take, which is not (the table says how much CPU the server spent per hostile request).
 */
import { generateKeyPair } from "jose";
import { benchKeys, clinicalText, modernHeaders, modernToolsCallBody, signAccessToken, PATIENT } from "./lib/fixtures.js";
import { post } from "./lib/mcp-http.js";
import { LoadProc, ServerProc } from "./lib/procs.js";
import { ensureBuilt } from "./lib/hmcp.js";
import type { LoadResult, LoadSpec } from "./load.js";

const arg = (name: string, fallback: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
const SECONDS = arg("--seconds", 10);
const CONNECTIONS = arg("--connections", 8);
const HOSTILE = arg("--hostile-connections", 4);
const log = (s: string) => process.stderr.write(`[attack ${new Date().toISOString().slice(11, 19)}] ${s}\n`);

ensureBuilt();
const keys = await benchKeys();
const token = await signAccessToken(keys.privateKey);
const server = await ServerProc.start({ config: "full-modern", publicJwk: keys.publicJwk });
const text = clinicalText(600);
const headers = modernHeaders("sampling_createMessage", { authorization: `Bearer ${token}` });
const body = JSON.stringify(modernToolsCallBody("sampling_createMessage", { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256, _meta: { "hmcp/patient": PATIENT } }, "[<id>]"));
const probe = await post(server.url, headers, body.replace("[<id>]", "probe-1"));
if (probe.status !== 200) throw new Error(`probe failed: HTTP ${probe.status}`);

// a token with the right claims and key id, signed by a key the server does not trust
const forger = await generateKeyPair("ES256");
const forged = await signAccessToken(forger.privateKey);
const hostileSpecs: LoadSpec[] = [
  { url: server.url, headers: { ...headers, authorization: `Bearer ${forged}` }, body, connections: HOSTILE, durationSec: SECONDS },
  { url: server.url, headers, body: '{"jsonrpc":"2.0","id":"[<id>]","method":"tools/call","params":{', connections: HOSTILE, durationSec: SECONDS },
  { url: server.url, headers, body: JSON.stringify({ jsonrpc: "2.0", id: "[<id>]", method: "tools/call", params: { name: "x", arguments: { blob: "A".repeat(1_200_000) } } }), connections: HOSTILE, durationSec: SECONDS },
];

const honest = await LoadProc.start();
const hostile = await Promise.all(hostileSpecs.map(() => LoadProc.start()));
const mib = (b: number) => (b / 1024 / 1024).toFixed(1);

async function run(label: string, attack: boolean) {
  let peakRss = 0;
  let peakHeap = 0;
  const sampler = setInterval(() => {
    void server.stats().then((s) => {
      peakRss = Math.max(peakRss, s.rss);
      peakHeap = Math.max(peakHeap, s.heapUsed);
    }).catch(() => undefined);
  }, 1000);
  const cpu0 = await server.stats();
  const honestRun = honest.run({ url: server.url, headers, body, connections: CONNECTIONS, durationSec: SECONDS });
  const hostileRuns: Array<Promise<LoadResult>> = attack ? hostileSpecs.map((spec, i) => hostile[i]!.run(spec)) : [];
  const [h, ...bad] = await Promise.all([honestRun, ...hostileRuns]);
  clearInterval(sampler);
  const after = await server.gcStats();
  const hostileAnswered = bad.reduce((n, r) => n + r.requests, 0);
  log(`${label}: honest ${h.rps.toFixed(0)} req/s, p99 ${h.p99Ms.toFixed(1)} ms; hostile answered ${hostileAnswered}`);
  return { label, h, hostileAnswered, peakRss, peakHeap, after, served: after.served - cpu0.served };
}

const quiet = await run("quiet", false);
const attacked = await run("under attack", true);
const rows = [quiet, attacked].map(
  (r) =>
    `| ${r.label} | ${r.h.rps.toFixed(0)} | ${r.h.p50Ms.toFixed(2)} | ${r.h.p99Ms.toFixed(2)} | ${r.h.non2xx + r.h.errors + r.h.timeouts} | ${r.hostileAnswered} | ${mib(r.peakRss)} | ${mib(r.peakHeap)} | ${mib(r.after.rss)} / ${mib(r.after.heapUsed)} |`,
);
console.log(`Honest clients (${CONNECTIONS} connections, full-modern) alone and beside 3 x ${HOSTILE} hostile connections (forged token, broken JSON, 1.2 MB body), ${SECONDS} s each\n`);
console.log("| run | honest req/s | p50 ms | p99 ms | honest non-2xx / errors | hostile answered | peak RSS MiB | peak heap MiB | after GC RSS / heap MiB |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
console.log(rows.join("\n"));
console.log(`\nhonest throughput under attack: ${(attacked.h.rps / quiet.h.rps).toFixed(2)}x quiet; p99 ${(attacked.h.p99Ms / quiet.h.p99Ms).toFixed(2)}x`);
honest.stop();
for (const p of hostile) p.stop();
await server.stop();
