/**
 * Two agent instances behind a reverse proxy against one instance (issue #24): the same agent processes the
 * multi-instance tests run (test/fixtures/instance-agent.ts: JWT bearer, a PostgreSQL audit sink with a chain per
 * instance and `replyAfterAuditDurable`, the shared request-state ledger, event store and task store; guardrails off),
 * driven with MCP 2026-07-28 `tools/call`s of a plain tool, `--concurrency` client loops for `--seconds`:
 * - `one`: one instance, directly;
 * - `one+proxy`: one instance behind the proxy (what the proxy costs);
 * - `two+proxy`: two instances behind the proxy (round-robin).
 * Plus a task's round trip (`approve_write`: create, answer its question, wait: 4+ requests) through the proxy.
 *
 * Usage: `npx tsx bench/instances.ts [--seconds 5] [--concurrency 16]`. The proxy is HAProxy where installed, else
 * http-proxy-3 (test/fixtures/proxy.ts); the database a PostgreSQL server where installed, else PGlite behind a query
 * bridge (much slower: compare rows of one run only). On a 2-core machine two instances, the proxy, the database and the
 * client loops share the same two cores, so `two+proxy` against `one` says little about scaling out; what it does show
 * is that the second instance costs nothing in correctness. Prints a Markdown table.
 */
import { HMCPClient } from "../src/index.js";
import { makeKeys, mint } from "../test/fixtures/bearer.js";
import { startInstance, type Instance } from "../test/fixtures/instances.js";
import { startProxy, type Proxy } from "../test/fixtures/proxy.js";
import { startSharedDatabase } from "../test/fixtures/shared-database.js";
import { quantile } from "./lib/stats.js";

const arg = (name: string, fallback: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback);
const SECONDS = arg("--seconds", 5);
const CONCURRENCY = arg("--concurrency", 16);
const MODERN = "2026-07-28";

const keys = await makeKeys();
const token = await mint(keys, { scope: "hmcp:access" });
const database = await startSharedDatabase();
const env = { ...database.env, HMCP_TEST_JWK: JSON.stringify(keys.jwk), HMCP_REQUEST_STATE_KEY: "one requestState key shared by every instance, for benchmarks only" };
const instances: Instance[] = [];
for (const id of ["bench-a", "bench-b"]) instances.push(await startInstance(id, env));
const proxies: Proxy[] = [await startProxy([instances[0]!.url]), await startProxy(instances.map((i) => i.url))];

async function load(url: URL): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "whoami", arguments: {}, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } });
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "whoami" };
  const lat: number[] = [];
  let errors = 0;
  const run = async (until: number, keep: boolean) => {
    while (performance.now() < until) {
      const t = performance.now();
      const res = await fetch(url, { method: "POST", headers, body });
      await res.text();
      if (res.status !== 200) errors++;
      else if (keep) lat.push(performance.now() - t);
    }
  };
  const warm = performance.now() + 1_000;
  await Promise.all(Array.from({ length: CONCURRENCY }, () => run(warm, false)));
  const end = performance.now() + SECONDS * 1_000;
  await Promise.all(Array.from({ length: CONCURRENCY }, () => run(end, true)));
  return { rps: lat.length / SECONDS, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), errors };
}

const rows: string[] = ["| row | req/s | p50 ms | p99 ms | non-200 |", "| --- | ---: | ---: | ---: | ---: |"];
for (const [row, url] of [["one", new URL("/mcp", instances[0]!.url)], ["one+proxy", new URL("/mcp", proxies[0]!.url)], ["two+proxy", new URL("/mcp", proxies[1]!.url)]] as const) {
  const r = await load(url);
  rows.push(`| ${row} | ${r.rps.toFixed(0)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.errors} |`);
}
// a task's whole round trip through the proxy, one at a time
const client = new HMCPClient({ name: "bench", version: "1" }, { protocolEra: "modern", guardrails: false, onElicitation: async () => ({ action: "accept", content: {} }) });
await client.connect({ type: "http", url: new URL("/mcp", proxies[1]!.url).href, headers: { authorization: `Bearer ${token}` } });
const taskLat: number[] = [];
const end = performance.now() + SECONDS * 1_000;
for (let i = 0; performance.now() < end; i++) {
  const t = performance.now();
  await client.callTool({ name: "approve_write", arguments: { label: `bench-${i}` } }, { pollIntervalMs: 20 });
  taskLat.push(performance.now() - t);
}
rows.push(`| task round trip (two+proxy, 1 at a time) | ${(taskLat.length / SECONDS).toFixed(1)} | ${quantile(taskLat, 0.5).toFixed(2)} | ${quantile(taskLat, 0.99).toFixed(2)} | 0 |`);
await client.close();
console.log(`Two instances behind ${proxies[1]!.kind} against one (${database.kind}; ${CONCURRENCY} client loops, ${SECONDS} s per row; 2026-07-28 tools/call of a plain tool)\n`);
console.log(rows.join("\n"));
for (const p of proxies) await p.close();
for (const i of instances) await i.stop();
await database.close();
