/**
 * Two agent instances, each its own process, behind a real reverse proxy (HAProxy where installed, else http-proxy-3;
 * test/fixtures/proxy.ts), sharing one database (a real PostgreSQL server where installed, else one PGlite behind a
 * query bridge; test/fixtures/shared-database.ts) and one requestState key: MCP 2026-07-28 requests go round-robin, a
 * 2025-era session sticks to the instance that opened it, and `kill -9` of one instance loses no acknowledged request
 * from the audit trail. Each test's name says which proxy and database ran.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HMCPClient, listAuditChains, verifyAuditTable } from "hmcp";
import { makeKeys, mint, type TestKeys } from "../fixtures/bearer.js";
import { startInstance, type Instance } from "../fixtures/instances.js";
import { defaultProxyKind, startProxy, type Proxy } from "../fixtures/proxy.js";
import { MCP_HEADERS, openSession, readSse } from "../fixtures/raw-http.js";
import { sharedDatabaseKind, startSharedDatabase, type SharedDatabase } from "../fixtures/shared-database.js";

const MODERN = "2026-07-28";
const KEY = "one requestState key shared by every instance, for tests only";

let keys: TestKeys;
let token: string;
let database: SharedDatabase | undefined;
let proxy: Proxy | undefined;
const instances: Instance[] = [];
let endpoint: URL;
/** What each instance's process is started with. */
let instanceEnv: Record<string, string>;

beforeAll(async () => {
  keys = await makeKeys();
  token = await mint(keys, { scope: "hmcp:access" });
  database = await startSharedDatabase();
  const env = (instanceEnv = { ...database.env, HMCP_TEST_JWK: JSON.stringify(keys.jwk), HMCP_REQUEST_STATE_KEY: KEY });
  // one after the other: the first creates the shared tables
  for (const id of ["instance-a", "instance-b"]) instances.push(await startInstance(id, env));
  proxy = await startProxy(instances.map((i) => i.url));
  endpoint = new URL("/mcp", proxy.url);
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  for (const i of instances) await i.kill9();
  await database?.close();
}, 60_000);

// which ones are expected to run here, so the names say it before the fixtures start
const ran = `${defaultProxyKind()}, ${sharedDatabaseKind()}`;

type Rpc = {
  status: number;
  result?: { resultType?: string; requestState?: string; inputRequests?: Record<string, { method: string; params: { message?: string } }>; content?: Array<{ text: string }> };
  error?: { code: number; data?: { reason?: string } };
};

/** A raw MCP 2026-07-28 tools/call through `url` (no session: the proxy balances it round-robin). */
async function call(id: number, name: string, args: Record<string, unknown>, retry: { requestState?: string; inputResponses?: Record<string, unknown> } = {}, url = endpoint): Promise<Rpc> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, ...MCP_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, ...retry, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } } } }),
  });
  if (res.status !== 200) return { status: res.status, ...(await res.text().then(() => ({}))) };
  const text = await res.text();
  // JSON, or one SSE stream whose last data line is the response
  const json = res.headers.get("content-type")?.startsWith("text/event-stream") ? text.split("\n").filter((l) => l.startsWith("data: ") && l.includes('"id"')).at(-1)!.slice(6) : text;
  return { status: 200, ...(JSON.parse(json) as Omit<Rpc, "status">) };
}

const whoami = async (id: number) => (await call(id, "whoami", {})).result?.content?.[0]?.text;

/** Every audit record in the shared table: the instance (chain) that wrote it and the record. */
async function auditRecords(): Promise<Array<{ chain: string; record: { method?: string; requestId?: unknown; reason?: string; outcome?: string } }>> {
  const { rows } = (await database!.db.query("SELECT instance_id, line FROM hmcp_audit ORDER BY instance_id, seq")) as { rows: Array<{ instance_id: string; line: string }> };
  return rows.map((r) => ({ chain: r.instance_id, record: (JSON.parse(r.line) as { record?: object }).record ?? JSON.parse(r.line) }));
}

describe(`two instances behind a reverse proxy, one shared database (${ran})`, () => {
  it("modern era: an input round started through one instance is answered through the other; its replay is refused through either", async () => {
    expect([proxy!.kind, database!.kind]).toEqual(ran.split(", "));
    const first = await call(1, "approve", { what: "order 1" });
    expect(first.result?.resultType).toBe("input_required");
    const [key, request] = Object.entries(first.result!.inputRequests!)[0]!;
    const asker = /\(asked by (instance-[ab])\)/.exec(request.params.message!)![1];
    const retry = { requestState: first.result!.requestState!, inputResponses: { [key]: { action: "accept", content: {} } } };
    const done = await call(2, "approve", { what: "order 1" }, retry);
    const text = done.result?.content?.[0]?.text;
    const answerer = /answered by (instance-[ab])/.exec(text ?? "")?.[1];
    expect(text).toBe(`accept order 1: asked by ${asker}, answered by ${answerer}`);
    // round-robin: the answer went to the other instance, which opened the state sealed by the first
    expect(new Set([asker, answerer])).toEqual(new Set(["instance-a", "instance-b"]));

    // the same retry twice more: round-robin sends one to each instance, and the shared ledger refuses both
    const replays = [await call(3, "approve", { what: "order 1" }, retry), await call(4, "approve", { what: "order 1" }, retry)];
    expect(replays.map((r) => r.error?.data?.reason)).toEqual(["request_state_replayed", "request_state_replayed"]);
    await expect
      .poll(async () => new Set((await auditRecords()).filter((r) => r.record.reason === "request_state_replayed").map((r) => r.chain)), { timeout: 10_000 })
      .toEqual(new Set(["instance-a", "instance-b"]));
  });

  it("legacy era: a session opened through the proxy stays on its instance, works end to end, and resumes from the PostgreSQL event store", async () => {
    const client = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, { protocolEra: "legacy", guardrails: false, onElicitation: async () => ({ action: "accept", content: {} }) });
    await client.connect({ type: "http", url: endpoint.href, headers: { authorization: `Bearer ${token}` } });
    try {
      expect(client.protocolEra).toBe("legacy");
      const served: string[] = [];
      const balanced: Array<string | undefined> = [];
      for (let i = 0; i < 4; i++) {
        served.push(((await client.callTool({ name: "whoami", arguments: {} })).content as Array<{ text: string }>)[0]!.text);
        balanced.push(await whoami(100 + i)); // stateless requests in between still alternate
      }
      expect(new Set(served).size).toBe(1);
      expect(new Set(balanced)).toEqual(new Set(["instance-a", "instance-b"]));
      // end to end in the session: a server → client elicitation and its answer
      const approved = await client.callTool({ name: "approve", arguments: { what: "discharge letter" } });
      expect((approved.content as Array<{ text: string }>)[0]!.text).toBe(`accept discharge letter: asked by ${served[0]}, answered by ${served[0]}`);
    } finally {
      await client.close();
    }

    // resumability through the proxy: cut off mid-request, resume with Last-Event-ID
    const auth = { authorization: `Bearer ${token}` };
    const sid = await openSession(endpoint, auth);
    const headers = { ...MCP_HEADERS, ...auth, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" };
    const abort = new AbortController();
    const res = await fetch(endpoint, {
      method: "POST",
      headers,
      signal: abort.signal,
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "steps", arguments: { n: 8 }, _meta: { progressToken: "p" } } }),
    });
    const first = await readSse(res, (_e, all) => all.filter((x) => x.data.includes("notifications/progress")).length === 2);
    abort.abort();
    const lastId = first.at(-1)!.id!;
    // the events are rows of the shared table, under this session's id
    const { rows } = (await database!.db.query("SELECT count(*) AS n FROM hmcp_events WHERE session_id = $1", [sid])) as { rows: Array<{ n: string }> };
    expect(Number(rows[0]!.n)).toBeGreaterThanOrEqual(2);
    // until the server has seen the cut-off stream close, the stream is still its (409): a client retries after `retry:`
    let resumed = await fetch(endpoint, { method: "GET", headers: { ...headers, accept: "text/event-stream", "last-event-id": lastId } });
    for (let i = 0; i < 50 && resumed.status === 409; i++) {
      await resumed.body?.cancel();
      await new Promise((r) => setTimeout(r, 100));
      resumed = await fetch(endpoint, { method: "GET", headers: { ...headers, accept: "text/event-stream", "last-event-id": lastId } });
    }
    expect(resumed.status).toBe(200);
    const rest = await readSse(resumed, (e) => e.data.includes('"result"'));
    const progress = rest.map((e) => JSON.parse(e.data) as { method?: string; params?: { progress: number } }).filter((m) => m.method === "notifications/progress");
    expect(progress.map((m) => m.params!.progress)).toEqual([3, 4, 5, 6, 7, 8]);
    const owner = /8 steps by (instance-[ab])/.exec(rest.at(-1)!.data)![1]!;
    // the session lives in its instance's memory only: the other instance, asked directly, does not know it
    const other = instances.find((i) => i.id !== owner)!;
    const direct = await fetch(new URL("/mcp", other.url), { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 8, method: "ping" }) });
    await direct.body?.cancel();
    expect(direct.status).toBe(404);
    await (await fetch(endpoint, { method: "DELETE", headers })).body?.cancel();
  });

  it("tasks: a task started through the proxy is read and answered through either instance; killing the instance running an idempotent task (kill -9) hands it to the others, its write replayed, not repeated", { timeout: 120_000 }, async () => {
    const client = async (url: URL) => {
      const c = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, { protocolEra: "modern", guardrails: false, onElicitation: async () => ({ action: "accept", content: {} }) });
      await c.connect({ type: "http", url: url.href, headers: { authorization: `Bearer ${token}` } });
      return c;
    };
    const viaProxy = await client(endpoint);
    const [a, b] = [await client(new URL("/mcp", instances[0]!.url)), await client(new URL("/mcp", instances[1]!.url))];
    try {
      const started = await viaProxy.startToolCall({ name: "approve_write", arguments: { label: "obs-1" } });
      if (!("task" in started)) throw new Error("not a task");
      const taskId = started.task.taskId;
      // read through each instance directly, whichever created it
      for (let i = 0; i < 300 && (await a.getTask(taskId)).status === "working"; i++) await new Promise((r) => setTimeout(r, 20));
      expect((await a.getTask(taskId)).status).toBe("input_required");
      expect((await b.getTask(taskId)).status).toBe("input_required");
      // answered and awaited through instance B: the question came from whichever instance ran the first round
      const result = await b.waitForTask(taskId);
      expect(result.content).toEqual([{ type: "text", text: expect.stringMatching(/^written obs-1: asked by instance-[ab], written by instance-b, finished by instance-b$/) }]);
      expect((await a.getTask(taskId)).result).toEqual(result);

      // a third instance, outside the proxy, runs an idempotent task and is killed mid-run
      const c = await startInstance("instance-c", instanceEnv);
      const viaC = await client(new URL("/mcp", c.url));
      const held = await viaC.startToolCall({ name: "write_then_hold", arguments: { label: "obs-2" } });
      if (!("task" in held)) throw new Error("not a task");
      await c.waitForLine(/^task-written obs-2$/);
      await c.kill9();
      // past its lease, the next read through the proxy takes it over and runs it again: the write is replayed
      await new Promise((r) => setTimeout(r, 1_200));
      let state = await viaProxy.getTask(held.task.taskId);
      for (let i = 0; i < 300 && !/^written by instance-c, running on instance-[ab]$/.test(state.statusMessage ?? ""); i++) {
        await new Promise((r) => setTimeout(r, 20));
        state = await viaProxy.getTask(held.task.taskId);
      }
      expect(state).toMatchObject({ status: "working", statusMessage: expect.stringMatching(/^written by instance-c, running on instance-[ab]$/) });
      await viaProxy.cancelTask(held.task.taskId);
      const { rows } = (await database!.db.query("SELECT label, instance FROM multi_emr_writes ORDER BY id")) as { rows: Array<{ label: string; instance: string }> };
      expect(rows).toEqual([{ label: "obs-1", instance: "instance-b" }, { label: "obs-2", instance: "instance-c" }]);
      await viaC.close().catch(() => undefined);
    } finally {
      for (const x of [viaProxy, a, b]) await x.close();
    }
  });

  it("kill -9 of one instance mid-request: that request fails, later ones succeed through the other, and both audit chains verify with every acknowledged request in them", async () => {
    const acknowledged: Array<{ id: number; chain: string }> = [];
    for (let id = 1001; id <= 1004; id++) acknowledged.push({ id, chain: (await whoami(id))! });
    expect(new Set(acknowledged.map((a) => a.chain))).toEqual(new Set(["instance-a", "instance-b"]));

    // a slow tool: whichever instance it lands on says so, and is killed while running it
    const slow = call(2000, "slow", { tag: "t1" }).catch((e: Error) => ({ status: 0, failure: `${e.message}: ${String((e.cause as Error | undefined)?.message)}` }) as Rpc & { failure: string });
    const started = await Promise.race(instances.map((i) => i.waitForLine(/^slow-started t1$/).then(() => i)));
    await started.kill9();
    const survivor = instances.find((i) => i !== started)!;
    const failed = await slow;
    // never a result: http-proxy-3 answers 502; HAProxy closes the client's connection (its request was on a reused
    // server connection, so it leaves the retry to the client, which does not retry a POST): fetch fails
    expect(failed.result, JSON.stringify(failed)).toBeUndefined();
    expect(failed.status === 0 || failed.status === 502, JSON.stringify(failed)).toBe(true);

    for (let id = 1005; id <= 1010; id++) {
      const served = await whoami(id);
      expect(served).toBe(survivor.id);
      acknowledged.push({ id, chain: served! });
    }
    expect(await survivor.stop()).toBe(0); // graceful: its chain is flushed and closed

    const chains = await listAuditChains(database!.db);
    expect(chains).toEqual(expect.arrayContaining(["instance-a", "instance-b"]));
    for (const chain of ["instance-a", "instance-b"]) {
      const verified = await verifyAuditTable(database!.db, { instanceId: chain });
      expect(verified.ok, JSON.stringify(verified.firstError)).toBe(true);
      expect(verified.records).toBeGreaterThan(0);
    }
    const records = await auditRecords();
    for (const a of acknowledged) {
      expect(records.filter((r) => r.chain === a.chain && r.record.method === "tools/call" && r.record.requestId === a.id && r.record.outcome === "allowed"), `request ${a.id} on ${a.chain}`).toHaveLength(1);
    }
    // the killed request was never acknowledged, and no instance recorded it as answered
    expect(records.filter((r) => r.record.requestId === 2000 && r.record.outcome === "allowed")).toEqual([]);
  });
});
