/**
 * MCP tasks (extension io.modelcontextprotocol/tasks) against a plain request, on MCP 2026-07-28 over HTTP, one agent
 * process (this one) and one client loop: what a task's round trip costs over answering at once.
 *
 * Usage: `npx tsx bench/tasks.ts [--seconds 5] [--store pglite|postgres://…]`
 *
 * Rows (sequential calls, one at a time, for `--seconds` each after 1 s of warm-up):
 * - `plain`: `tools/call` of a tool answering at once (no task);
 * - `task`: `tools/call` of the same tool declared `taskSupport: "optional"`, by a client declaring the extension: the
 *   `CreateTaskResult`, then `tasks/get` until `completed` (polling at once: `pollIntervalMs` 1), i.e. the whole round trip;
 * - `task-create`: the `tools/call` that creates the task only (its result fetched later, not timed).
 * Prints calls/s and p50 / p99 latency (ms) per row as a Markdown table. The task store is an embedded in-memory PGlite
 * unless `--store` names a PostgreSQL server. Auth and guardrails are off (their costs are the same on every row and are
 * measured by bench/run.ts); the audit trail is off too. Two instances against one need a proxy in front: see
 * test/integration/multi-instance*.test.ts; on a 2-core machine such a ratio says little (the two processes and the
 * client share the two cores).
 */
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { z } from "zod";
import { ensureBuilt, loadHmcp } from "./lib/hmcp.js";
import { quantile } from "./lib/stats.js";

const arg = (name: string, fallback: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : fallback);
const SECONDS = Number(arg("--seconds", "5"));
const STORE = arg("--store", "pglite");
const MODERN = "2026-07-28";
const EXT = "io.modelcontextprotocol/tasks";

ensureBuilt();
const { createHttpApp, HMCPServer, listen, PostgresTaskStore } = await loadHmcp();
const db = STORE === "pglite" ? await PGlite.create() : new pg.Pool({ connectionString: STORE, max: 8 });
const store = await PostgresTaskStore.open({ db: db as { query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }> } });
const tasks = { store, pollIntervalMs: 1 };

function agent() {
  const s = new HMCPServer({ name: "bench", version: "1.0.0" }, { auth: false, guardrails: false, audit: false, tasks });
  const run = async ({ text }: { text: string }) => ({ content: [{ type: "text" as const, text: text.toUpperCase() }] });
  s.registerTool("plain", { inputSchema: z.object({ text: z.string() }) }, run);
  s.registerTool("as_task", { inputSchema: z.object({ text: z.string() }), execution: { taskSupport: "optional" } }, run);
  return s;
}

const http = await listen(createHttpApp({ createServer: agent, bearer: false }));
const url = new URL("/mcp", http.url);

async function rpc(method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const name = (params["name"] ?? params["taskId"]) as string;
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method, "mcp-name": name },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": { extensions: { [EXT]: {} } } } } }),
  });
  const body = (await res.json()) as { result?: Record<string, unknown>; error?: unknown };
  if (!body.result) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

const rows: Record<string, () => Promise<void>> = {
  plain: async () => void (await rpc("tools/call", { name: "plain", arguments: { text: "bp 120/80" } })),
  task: async () => {
    const created = await rpc("tools/call", { name: "as_task", arguments: { text: "bp 120/80" } });
    for (;;) {
      const t = await rpc("tasks/get", { taskId: created["taskId"] as string });
      if (t["status"] === "completed") return;
      if (t["status"] !== "working") throw new Error(`task ${String(t["status"])}`);
    }
  },
  "task-create": async () => void (await rpc("tools/call", { name: "as_task", arguments: { text: "bp 120/80" } })),
};

const table: string[] = ["| row | calls/s | p50 ms | p99 ms |", "| --- | ---: | ---: | ---: |"];
for (const [row, call] of Object.entries(rows)) {
  const warm = performance.now() + 1000;
  while (performance.now() < warm) await call();
  const lat: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    const t = performance.now();
    await call();
    lat.push(performance.now() - t);
  }
  table.push(`| ${row} | ${(lat.length / SECONDS).toFixed(0)} | ${quantile(lat, 0.5).toFixed(2)} | ${quantile(lat, 0.99).toFixed(2)} |`);
}
console.log(`MCP tasks vs a plain request (2026-07-28, HTTP, store ${STORE === "pglite" ? "PGlite in memory" : "PostgreSQL"}, ${SECONDS} s per row, one call at a time)\n`);
console.log(table.join("\n"));
await http.close();
if (db instanceof pg.Pool) await db.end();
else await (db as PGlite).close();
