/**
 * Pending input rounds at their bound (issue #25 item 4): on MCP 2026-07-28 a question to the caller ends the request
 * and the state travels with the client, sealed; what the agent keeps is the single-use ledger of the states claimed
 * (`MemoryRequestStateStore`, one id per answered round until its state expires). At `maxEntries` a retry is refused
 * with JSON-RPC -32000 `too_many_input_rounds` and one audit record before its handler runs, and the agent keeps
 * serving everything else. (On 2025-11-25 a question is a server → client request inside the request that asked it:
 * bounded by `maxConcurrentRequests`, test/integration/http-exhaustion.test.ts.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpApp, HMCPConfigError, HMCPServer, hmcpContext, listen, MemoryRequestStateStore, PostgresRequestStateStore, RequestStateStoreFull, type AuditRecordInput, type AuditSink, type RequestStateStore } from "hmcp";
import { bearerFor, makeKeys, mint } from "../fixtures/bearer.js";
import { startTestDatabase, testDatabaseKinds } from "../fixtures/postgres.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

const MODERN = "2026-07-28";
const KEY = "a requestState key of at least 32 bytes, for tests only";

/** An audit sink that keeps records in memory (the server's and the HTTP app's records go to it). */
function memorySink(records: AuditRecordInput[]): AuditSink {
  return { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined } as unknown as AuditSink;
}

type Rpc = { status: number; result?: { resultType?: string; requestState?: string; inputRequests?: Record<string, unknown>; content?: unknown }; error?: { code: number; message: string; data?: { reason?: string } } };

/** A raw 2026-07-28 tools/call, optionally a retry with `requestState` and `inputResponses`. */
async function call(url: URL, token: string, id: number, name: string, args: Record<string, unknown>, retry: { requestState?: string; inputResponses?: Record<string, unknown> } = {}): Promise<Rpc> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, ...retry, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": { elicitation: { form: {} } } } } }),
  });
  return { status: res.status, ...((await res.json()) as Omit<Rpc, "status">) };
}

type Ledger = { store: RequestStateStore; size: () => Promise<number> };
type Bounds = { maxEntries: number; maxEntriesPerPrincipal?: number };
const ledgers: Array<[string, (bounds: Bounds) => Promise<Ledger>]> = [
  [
    "memory",
    async (bounds) => {
      const store = new MemoryRequestStateStore(bounds);
      return { store, size: async () => store.size };
    },
  ],
  ...testDatabaseKinds().map((kind): (typeof ledgers)[number] => [
    kind,
    async (bounds) => {
      const database = await startTestDatabase(kind);
      closers.push(() => database.close());
      const store = await PostgresRequestStateStore.open({ db: database.db, ...bounds });
      return { store, size: async () => Number(((await database.db.query("SELECT count(*) AS n FROM hmcp_request_state")).rows[0] as { n: string }).n) };
    },
  ]),
];

type Flow = { what: string; state: string; key: string };

/** An agent whose "approve" tool asks one question, then writes; "ping" answers at once. Behind bearer auth, on `store`. */
async function serve(store: RequestStateStore) {
  const keys = await makeKeys();
  const records: AuditRecordInput[] = [];
  const writes: string[] = [];
  const sink = memorySink(records);
  // one store for every server the app builds (one per modern request), as documented
  const agent = () => {
    const s = new HMCPServer({ name: "approver", version: "1" }, { guardrails: false, audit: sink, requestState: { keys: [KEY], store } });
    s.registerTool("approve", { inputSchema: z.object({ what: z.string() }) }, async ({ what }, extra) => {
      const answer = await hmcpContext(extra).elicit({ message: `Approve ${what}?`, requestedSchema: { type: "object", properties: {} } });
      await hmcpContext(extra).step("write", () => void writes.push(what));
      return { content: [{ type: "text", text: answer.action }] };
    });
    s.registerTool("ping", { inputSchema: z.object({}) }, async () => ({ content: [{ type: "text", text: "pong" }] }));
    return s;
  };
  const http = await listen(createHttpApp({ createServer: agent, bearer: bearerFor(keys), audit: sink }));
  closers.push(() => http.close());
  return { url: new URL("/mcp", http.url), keys, token: await mint(keys), records, writes };
}

/** Asks flow `what` (its question comes back as an input-required round). */
async function ask(url: URL, token: string, id: number, what: string): Promise<Flow> {
  const first = await call(url, token, id, "approve", { what });
  expect(first.result?.resultType).toBe("input_required");
  return { what, state: first.result!.requestState!, key: Object.keys(first.result!.inputRequests!)[0]! };
}

/** Answers `flow`'s question (accept): the retry claims its state. */
const answerAs = (url: URL, token: string, id: number, flow: Flow) => call(url, token, id, "approve", { what: flow.what }, { requestState: flow.state, inputResponses: { [flow.key]: { action: "accept", content: {} } } });

describe.each(ledgers)("pending input rounds at their bound (MCP 2026-07-28), the %s ledger", (_name, make) => {
  it("at maxEntries unexpired claims a retry gets -32000 too_many_input_rounds and one audit record, its handler does not run, and other requests are served", async () => {
    const { store, size } = await make({ maxEntries: 2 });
    const { url, token, records, writes } = await serve(store);

    // three flows ask their question; answering them claims one id each
    const asked: Flow[] = [];
    for (const [i, what] of ["order 1", "order 2", "order 3"].entries()) asked.push(await ask(url, token, 10 + i, what));
    const answer = (id: number, flow: Flow) => answerAs(url, token, id, flow);
    expect((await answer(21, asked[0]!)).result?.content).toEqual([{ type: "text", text: "accept" }]);
    expect((await answer(22, asked[1]!)).result?.content).toEqual([{ type: "text", text: "accept" }]);
    expect(await size()).toBe(2);

    // the bound: the third answer is refused before its handler runs, and the ledger does not grow
    const refused = await answer(23, asked[2]!);
    expect(refused.status).toBe(200);
    expect(refused.error).toMatchObject({ code: -32000, data: { reason: "too_many_input_rounds" } });
    expect(refused.error!.message).toMatch(/retry later/);
    expect(writes).toEqual(["order 1", "order 2"]);
    expect(await size()).toBe(2);
    // a replay of a claimed state is still a replay (not a full ledger): told apart, nothing written twice
    expect((await answer(24, asked[0]!)).error).toMatchObject({ code: -32602, data: { reason: "request_state_replayed" } });

    // everything else is served: a new flow's question, a plain call
    expect((await call(url, token, 25, "approve", { what: "order 4" })).result?.resultType).toBe("input_required");
    expect((await call(url, token, 26, "ping", {})).result?.content).toEqual([{ type: "text", text: "pong" }]);

    // one record for the refused retry: the pipeline's, failed (the agent is full, not the caller at fault)
    const mine = records.filter((r) => r.requestId === 23);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ type: "request", method: "tools/call", outcome: "failed", reason: "too_many_input_rounds" });
    expect(records.filter((r) => r.reason === "too_many_input_rounds")).toHaveLength(1);
  });

  it("at maxEntriesPerPrincipal one caller's retry gets -32000 too_many_input_rounds and one audit record, while another principal's rounds are still claimed and served", async () => {
    const { store, size } = await make({ maxEntries: 10, maxEntriesPerPrincipal: 2 });
    const { url, keys, token, records, writes } = await serve(store);
    const other = await mint(keys, { sub: "nurse-7", client_id: "ward-app" });

    const mine: Flow[] = [];
    for (const [i, what] of ["a 1", "a 2", "a 3"].entries()) mine.push(await ask(url, token, 10 + i, what));
    const theirs = await ask(url, other, 20, "b 1");
    expect((await answerAs(url, token, 31, mine[0]!)).result?.content).toEqual([{ type: "text", text: "accept" }]);
    expect((await answerAs(url, token, 32, mine[1]!)).result?.content).toEqual([{ type: "text", text: "accept" }]);

    // the caller's own bound, with room left in the ledger: refused before the handler runs
    const refused = await answerAs(url, token, 33, mine[2]!);
    expect(refused.error).toMatchObject({ code: -32000, data: { reason: "too_many_input_rounds" } });
    expect(refused.error!.message).toMatch(/for this caller/);
    expect(writes).toEqual(["a 1", "a 2"]);
    expect(records.filter((r) => r.reason === "too_many_input_rounds").map((r) => [r.requestId, r.type, r.outcome])).toEqual([[33, "request", "failed"]]);

    // another principal is served: its answer is claimed and its handler runs
    expect((await answerAs(url, other, 34, theirs)).result?.content).toEqual([{ type: "text", text: "accept" }]);
    expect(writes).toEqual(["a 1", "a 2", "b 1"]);
    expect(await size()).toBe(3);
  });
});

describe.each(testDatabaseKinds())("PostgresRequestStateStore bound on %s", (kind) => {
  it("refuses a new id at maxEntries unexpired ones with RequestStateStoreFull, still tells a replay apart, and takes claims again once ids expire", async () => {
    const database = await startTestDatabase(kind);
    closers.push(() => database.close());
    const store = await PostgresRequestStateStore.open({ db: database.db, table: "bounded_ledger", maxEntries: 2 });
    const soon = Date.now() + 500;
    const later = Date.now() + 600_000;
    expect(await store.claim("short", soon)).toBe(true);
    expect(await store.claim("long", later)).toBe(true);
    await expect(store.claim("next", later)).rejects.toBeInstanceOf(RequestStateStoreFull);
    expect(await store.claim("long", later)).toBe(false);
    while (Date.now() <= soon + 50) await new Promise((r) => setTimeout(r, 50));
    expect(await store.claim("next", later)).toBe(true);
    await expect(store.claim("another", later)).rejects.toBeInstanceOf(RequestStateStoreFull);
  });

  it("refuses bad options with HMCPConfigError, as the memory store does: an unknown (misspelt) option, a bound or interval that is not a positive integer, a bad table name or db", async () => {
    const database = await startTestDatabase(kind);
    closers.push(() => database.close());
    for (const [options, key] of [
      [{ maxEntires: 5 }, "maxEntires"],
      [{ maxEntries: 0 }, "maxEntries"],
      [{ maxEntries: 1.5 }, "maxEntries"],
      [{ maxEntriesPerPrincipal: 0 }, "maxEntriesPerPrincipal"],
      [{ maxEntriesPerPrincipal: "10" }, "maxEntriesPerPrincipal"],
      [{ sweepIntervalMs: -1 }, "sweepIntervalMs"],
      [{ table: "bad name" }, "table"],
    ] as const) {
      const refused = await PostgresRequestStateStore.open({ db: database.db, ...(options as object) }).then(() => undefined, (e: unknown) => e);
      expect(refused).toBeInstanceOf(HMCPConfigError);
      expect(refused).toMatchObject({ name: "HMCPConfigError", key });
    }
    await expect(PostgresRequestStateStore.open({ db: {} as never })).rejects.toMatchObject({ name: "HMCPConfigError", key: "db" });
    await expect(PostgresRequestStateStore.open({ db: database.db, maxEntires: 5 } as never)).rejects.toThrow(/did you mean 'maxEntries'/);
    // nothing was created for a refused store
    expect((await database.db.query("SELECT 1 FROM pg_tables WHERE tablename = 'hmcp_request_state'")).rows).toEqual([]);
  });

  it("counts one principal's unexpired ids at maxEntriesPerPrincipal (RequestStateStoreFull, scope 'principal'), and opens a table of an earlier version (no principal column)", async () => {
    const database = await startTestDatabase(kind);
    closers.push(() => database.close());
    await database.db.query("CREATE TABLE old_ledger (id text PRIMARY KEY, expires_at timestamptz NOT NULL)");
    await database.db.query("INSERT INTO old_ledger VALUES ('before', now() + interval '10 minutes')");
    const store = await PostgresRequestStateStore.open({ db: database.db, table: "old_ledger", maxEntries: 10, maxEntriesPerPrincipal: 2 });
    const later = Date.now() + 600_000;
    expect([await store.claim("p1", later, "P"), await store.claim("p2", later, "P"), await store.claim("before", later, "P")]).toEqual([true, true, false]);
    await expect(store.claim("p3", later, "P")).rejects.toMatchObject({ name: "RequestStateStoreFull", scope: "principal", maxEntries: 2 });
    expect([await store.claim("q1", later, "Q"), await store.claim("n1", later), await store.claim("n2", later)]).toEqual([true, true, true]);
  });

  it("does not count the whole table on every claim (a caller filling the ledger would make each claim pay a scan): one count serves many claims, and the bound still holds on one instance", async () => {
    const database = await startTestDatabase(kind);
    closers.push(() => database.close());
    const statements: string[] = [];
    // the real database, each statement it is sent noted
    const db = { query: (text: string, params?: unknown[]) => (statements.push(text), database.db.query(text, params)) };
    const store = await PostgresRequestStateStore.open({ db, table: "counted_ledger", maxEntries: 120, maxEntriesPerPrincipal: 50 });
    statements.length = 0;
    const later = Date.now() + 600_000;
    for (let i = 0; i < 100; i++) expect(await store.claim(`c${i}`, later, `P${i % 4}`)).toBe(true);
    // a count of the table's unexpired ids is "… WHERE expires_at > now() LIMIT …" (a principal's count is "WHERE principal = … AND …")
    const tableCounts = statements.filter((t) => /WHERE expires_at > now\(\) LIMIT/.test(t)).length;
    expect(tableCounts).toBeGreaterThan(0);
    expect(tableCounts).toBeLessThan(25);
    for (let i = 100; i < 120; i++) expect(await store.claim(`c${i}`, later, `Q${i % 4}`)).toBe(true);
    await expect(store.claim("over", later, "R")).rejects.toMatchObject({ name: "RequestStateStoreFull", scope: "agent", maxEntries: 120 });
    expect(await store.claim("c7", later, "P3")).toBe(false); // a replay is still told apart at the bound
    const held = (await database.db.query("SELECT count(*) AS n FROM counted_ledger")).rows[0] as { n: string | number };
    expect(Number(held.n)).toBe(120);
  });

  it("lets several instances open the same fresh table at the same moment (PostgreSQL's IF NOT EXISTS race does not fail a startup), and each then claims", async () => {
    const database = await startTestDatabase(kind);
    closers.push(() => database.close());
    const later = Date.now() + 600_000;
    for (const table of ["raced_a", "raced_b", "raced_c", "raced_d"]) {
      const stores = await Promise.all([1, 2, 3, 4].map(() => PostgresRequestStateStore.open({ db: database.db, table })));
      expect(await Promise.all(stores.map((s, i) => s.claim(`${table}-${i}`, later, "P")))).toEqual([true, true, true, true]);
      expect(await stores[1]!.claim(`${table}-0`, later, "P")).toBe(false);
      const indexes = (await database.db.query("SELECT indexname FROM pg_indexes WHERE tablename = $1 ORDER BY indexname", [table])).rows;
      expect(indexes).toEqual([{ indexname: `${table}_expires_at_idx` }, { indexname: `${table}_pkey` }, { indexname: `${table}_principal_idx` }]);
    }
  });
});
