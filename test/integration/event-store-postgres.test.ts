/**
 * The PostgreSQL resumability event store (2025 era): sessions kept apart, bounded per session and in all, expiring,
 * and wired into createHttpApp. On a real PostgreSQL server where its Debian package is installed (.ci/run installs
 * it) and on PGlite everywhere.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import { EventNotFoundError, HMCPConfigError, type EventStoreLimits, HMCPServer, PostgresEventStore, createHttpApp, listen, type AuditRecordInput, type Listening, type SessionEventStore } from "hmcp";
import { startTestDatabase, testDatabaseKinds, type TestDatabase } from "../fixtures/postgres.js";
import { MCP_HEADERS, openSession, readSse } from "../fixtures/raw-http.js";

const databases = new Map<TestDatabase["kind"], TestDatabase>();
let table = 0;
/** A database of `kind` (one per kind for the file) and a fresh table name in it. */
async function database(kind: TestDatabase["kind"]): Promise<{ db: TestDatabase["db"]; table: string }> {
  let d = databases.get(kind);
  if (!d) databases.set(kind, (d = await startTestDatabase(kind)));
  return { db: d.db, table: `events_${++table}` };
}
afterAll(async () => {
  for (const d of databases.values()) await d.close();
});
let http: Listening | undefined;
afterEach(async () => {
  await http?.close();
  http = undefined;
});

const note = (n: number, pad = ""): JSONRPCMessage => ({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "t", progress: n, message: pad } });

async function replay(store: SessionEventStore, id: string) {
  const got: Array<[string, number]> = [];
  const stream = await store.replayEventsAfter(id, { send: async (eventId, m) => void got.push([eventId, (m as unknown as { params: { progress: number } }).params.progress]) });
  return { stream, got };
}

describe.each(testDatabaseKinds())("PostgresEventStore on %s", (kind) => {
  it("replays the events of the Last-Event-ID's stream after it, in order; another session's id is not found there", async () => {
    const store = await PostgresEventStore.open(await database(kind));
    const a = store.forSession("session-a");
    const b = store.forSession("session-b");
    const a1 = await a.storeEvent("S1", note(1));
    await a.storeEvent("S2", note(100));
    const a2 = await a.storeEvent("S1", note(2));
    const b1 = await b.storeEvent("S1", note(900)); // same stream name, other session
    const a3 = await a.storeEvent("S1", note(3));
    expect(await replay(a, a1)).toEqual({ stream: "S1", got: [[a2, 2], [a3, 3]] });
    expect(await a.getStreamIdForEventId!(a1)).toBe("S1");
    // session B knows nothing of A's events, and A nothing of B's
    expect([await b.holds(a1), await b.getStreamIdForEventId!(a1), await a.holds(b1)]).toEqual([false, undefined, false]);
    await expect(replay(b, a1)).rejects.toBeInstanceOf(EventNotFoundError);
    expect(await replay(b, b1)).toEqual({ stream: "S1", got: [] });
    // ids grow in the order the messages were stored, even when the stores are not awaited one by one
    const ids = await Promise.all([1, 2, 3, 4, 5].map((n) => a.storeEvent("S3", note(n))));
    expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((x, y) => x - y));
    expect((await replay(a, ids[0]!)).got.map(([, n]) => n)).toEqual([2, 3, 4, 5]);
  });

  it("keeps each session within maxEvents and maxBytes (oldest dropped first) and forgets events past ttlMs", async () => {
    let now = 1_000_000;
    const store = await PostgresEventStore.open({ ...(await database(kind)), limits: { maxEvents: 3, maxBytes: 400, ttlMs: 60_000 }, now: () => now });
    const s = store.forSession("s");
    const other = store.forSession("other");
    const o1 = await other.storeEvent("X", note(1));
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) ids.push(await s.storeEvent("A", note(i)));
    expect([await s.holds(ids[1]!), await s.holds(ids[2]!)]).toEqual([false, true]);
    expect((await replay(s, ids[2]!)).got.map(([, n]) => n)).toEqual([4, 5]);
    expect(await other.holds(o1)).toBe(true); // another session's events do not count against this one
    // one event of ~300 bytes: with it the session is over 400 bytes, so the older ones go
    const big = await s.storeEvent("A", note(6, "x".repeat(240)));
    expect([await s.holds(ids[4]!), await s.holds(big)]).toEqual([false, true]);
    // an event larger than maxBytes on its own is sent but not kept
    const huge = await s.storeEvent("A", note(7, "x".repeat(500)));
    expect(await s.holds(huge)).toBe(false);
    // past ttlMs: nothing can be resumed
    now += 60_001;
    expect([await s.holds(big), await other.holds(o1)]).toEqual([false, false]);
    await expect(replay(other, o1)).rejects.toBeInstanceOf(EventNotFoundError);
    expect(await store.sweep()).toBeGreaterThan(0);
  });

  it("sweep() holds the whole table to totalBytes (the oldest events of the sessions holding the most) and deletes expired events; clear() ends a session", async () => {
    let now = 5_000_000;
    const { db, table } = await database(kind);
    const store = await PostgresEventStore.open({ db, table, limits: { totalBytes: 1_000, ttlMs: 60_000 }, sweepIntervalMs: 3_600_000, now: () => now });
    const a = store.forSession("a");
    const b = store.forSession("b");
    const old = await a.storeEvent("A", note(1, "x".repeat(300)));
    now += 30_000;
    const ids = [await b.storeEvent("B", note(2, "x".repeat(300))), await a.storeEvent("A", note(3, "x".repeat(300))), await b.storeEvent("B", note(4, "x".repeat(300)))];
    const total = async () => Number(((await db.query(`SELECT coalesce(sum(bytes), 0) AS n FROM ${table}`)).rows[0] as { n: string }).n);
    expect(await total()).toBeGreaterThan(1_000);
    expect(await store.sweep()).toBe(2);
    expect(await total()).toBeLessThanOrEqual(1_000);
    expect([await a.holds(old), await b.holds(ids[0]!), await a.holds(ids[1]!), await b.holds(ids[2]!)]).toEqual([false, false, true, true]);
    now += 30_001; // ids[1] and ids[2] were stored 30,000 ms ago; nothing expired yet
    expect(await store.sweep()).toBe(0);
    now += 30_000;
    expect(await store.sweep()).toBe(2);
    const c = store.forSession("c");
    const c1 = await c.storeEvent("C", note(5));
    c.clear();
    const after = await c.storeEvent("C", note(6)); // the session ended: sent, not kept
    expect([await c.holds(c1), await c.holds(after)]).toEqual([false, false]);
    expect(await total()).toBe(0);
  });

  it("a failed insert still hands out an id (the message is sent), which cannot be resumed from", async () => {
    const { db, table } = await database(kind);
    const store = await PostgresEventStore.open({ db, table });
    const s = store.forSession("s");
    const first = await s.storeEvent("A", note(1));
    await db.query(`ALTER TABLE ${table} RENAME TO ${table}_gone`);
    const lost = await s.storeEvent("A", note(2));
    expect([store.failures, /^[1-9][0-9]{15}$/.test(lost)]).toEqual([1, true]);
    await db.query(`ALTER TABLE ${table}_gone RENAME TO ${table}`);
    expect([await s.holds(first), await s.holds(lost)]).toEqual([true, false]);
  });
});

describe("PostgresEventStore options", () => {
  it("refuses unknown options and limits, bad table names and non-positive limits, naming them", async () => {
    const { db } = await database("pglite");
    await expect(PostgresEventStore.open({ db, tabel: "x" } as never)).rejects.toThrow(/tabel/);
    await expect(PostgresEventStore.open({ db, table: "x; DROP TABLE y" })).rejects.toThrow(/'table'/);
    await expect(PostgresEventStore.open({ db, limits: { maxEvent: 3 } as never })).rejects.toThrow(/maxEvent/);
    await expect(PostgresEventStore.open({ db, limits: { ttlMs: 0 } })).rejects.toThrow(/limits.ttlMs/);
    await expect(PostgresEventStore.open({ db: {} as never })).rejects.toThrow(/'db'/);
    expect(() => createHttpApp({ createServer: () => new HMCPServer({ name: "x", version: "1" }), bearer: false, eventStore: { maxEvents: -1 } })).toThrow(HMCPConfigError);
  });
});

// ---- wired into createHttpApp ----

/** An agent whose sampling handler reports progress `n` times, then answers with the session's secret. */
function progressAgent() {
  const s = new HMCPServer({ name: "progress-agent", version: "1" }, { auth: false, guardrails: false });
  s.sampling(async (params, ctx) => {
    const text = JSON.stringify(params.messages);
    for (let i = 1; i <= 6; i++) {
      await new Promise((r) => setTimeout(r, 20));
      await ctx.progress(i, 6);
    }
    return { content: { type: "text", text: `RESULT-FOR-${/secret-(\w+)/.exec(text)?.[1]}` }, stopReason: "endTurn" };
  });
  return s;
}

const headers = (sid: string) => ({ ...MCP_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" });

/** Starts a slow request in session `sid`, reads up to its second progress event and drops the stream: the last event id. */
async function cutOff(endpoint: URL, sid: string, secret: string): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(endpoint, {
    method: "POST",
    headers: headers(sid),
    signal: abort.signal,
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: `secret-${secret}` } }], maxTokens: 5, _meta: { progressToken: "t" } } }),
  });
  const first = await readSse(res, (_e, all) => all.filter((x) => x.data.includes("notifications/progress")).length === 2);
  abort.abort();
  return first.at(-1)!.id!;
}

async function resume(endpoint: URL, sid: string, lastId: string) {
  const res = await fetch(endpoint, { method: "GET", headers: { ...headers(sid), accept: "text/event-stream", "last-event-id": lastId } });
  const events = res.status === 200 ? await readSse(res, (e) => e.data.includes('"result"')) : (await res.body?.cancel(), []);
  return { status: res.status, text: events.map((e) => e.data).join("\n") };
}

/** Runs one request of the progress agent to its end in `sid`; its event ids (six progress notifications and the result). */
async function runToEnd(endpoint: URL, sid: string, secret: string): Promise<string[]> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: headers(sid),
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: `secret-${secret}` } }], maxTokens: 5, _meta: { progressToken: "t" } } }),
  });
  return (await readSse(res, (e) => e.data.includes('"result"'))).filter((e) => e.data !== "").map((e) => e.id!);
}

type StoreOption = PostgresEventStore | EventStoreLimits | undefined;
const stores: Array<[string, (limits?: EventStoreLimits) => Promise<{ eventStore: StoreOption; count: () => Promise<number>; bytes: () => Promise<number> }>]> = [
  ["memory", async (limits) => ({ eventStore: limits, count: async () => -1, bytes: async () => -1 })],
  ...testDatabaseKinds().map((kind): (typeof stores)[number] => [
    kind,
    async (limits) => {
      const { db, table } = await database(kind);
      const eventStore = await PostgresEventStore.open({ db, table, ...(limits && { limits }) });
      return {
        eventStore,
        count: async () => Number(((await db.query(`SELECT count(*) AS n FROM ${table}`)).rows[0] as { n: string }).n),
        bytes: async () => Number(((await db.query(`SELECT coalesce(sum(bytes), 0) AS n FROM ${table}`)).rows[0] as { n: string }).n),
      };
    },
  ]),
];

describe.each(stores)("createHttpApp with the %s event store", (_name, make) => {
  it("a client cut off mid-request resumes in its session; a Last-Event-ID of session A presented on session B is refused (400 last_event_id_unknown) and leaks nothing", async () => {
    const { eventStore, count } = await make();
    const records: AuditRecordInput[] = [];
    const audit = { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    http = await listen(createHttpApp({ createServer: progressAgent, bearer: false, audit, ...(eventStore && { eventStore }) }));
    const endpoint = new URL("/mcp", http.url);
    const sidA = await openSession(endpoint);
    const sidB = await openSession(endpoint);
    const lastA = await cutOff(endpoint, sidA, "alpha");
    // B runs a request of its own first, so it has stored events too
    const lastB = await cutOff(endpoint, sidB, "beta");

    const onB = await resume(endpoint, sidB, lastA);
    expect(onB).toEqual({ status: 400, text: "" });
    expect(records.filter((r) => r.type === "http" && r.reason === "last_event_id_unknown").map((r) => r.status)).toEqual([400]);

    const onA = await resume(endpoint, sidA, lastA);
    expect(onA.status).toBe(200);
    expect(onA.text).toContain("RESULT-FOR-alpha");
    expect(onA.text).not.toContain("beta");
    const backOnB = await resume(endpoint, sidB, lastB);
    expect(backOnB.text).toContain("RESULT-FOR-beta");
    expect(backOnB.text).not.toContain("alpha");

    if (eventStore instanceof PostgresEventStore) {
      // the events are rows of the shared table until their sessions end
      expect(await count()).toBeGreaterThan(0);
      for (const sid of [sidA, sidB]) await (await fetch(endpoint, { method: "DELETE", headers: headers(sid) })).body?.cancel();
      await expect.poll(count, { timeout: 10_000 }).toBe(0);
    }
  });

  // a request's seven events are about 1 KB
  it.each([
    // the oldest event kept: the third newest at maxEvents, the second newest (the last progress) within 400 bytes
    ["maxEvents", { maxEvents: 3 }, -3, "count", 3],
    ["maxBytes", { maxBytes: 400 }, -2, "bytes", 400],
  ] as const)(
    "at %s per session the oldest events are dropped: resuming from one is refused (400 last_event_id_unknown, one audit record), from a kept one it replays, and the session keeps no more",
    async (_limit, limits, oldestKept, measure, bound) => {
      const made = await make(limits);
      const records: AuditRecordInput[] = [];
      const audit = { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined };
      http = await listen(createHttpApp({ createServer: progressAgent, bearer: false, audit, eventStore: made.eventStore }));
      const endpoint = new URL("/mcp", http.url);
      const sid = await openSession(endpoint);
      const ids = await runToEnd(endpoint, sid, "gamma");
      expect(ids).toHaveLength(7);

      const dropped = await resume(endpoint, sid, ids[0]!);
      expect(dropped).toEqual({ status: 400, text: "" });
      const refusals = records.filter((r) => r.reason === "last_event_id_unknown");
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toMatchObject({ type: "http", status: 400, outcome: "denied" });
      const kept = await resume(endpoint, sid, ids.at(oldestKept)!);
      expect(kept.status).toBe(200);
      expect(kept.text).toContain("RESULT-FOR-gamma");
      if (made.eventStore instanceof PostgresEventStore) expect(await made[measure]()).toBeLessThanOrEqual(bound);
    },
  );
});

describe("createHttpApp's in-memory event stores at totalBytes (all sessions together)", () => {
  it("a session over the shared budget gives up its own oldest events, never another session's: resuming from one it gave up is refused (400 last_event_id_unknown, one audit record)", async () => {
    const records: AuditRecordInput[] = [];
    const audit = { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    // room for one request's seven events (about 1 KB) and a half
    http = await listen(createHttpApp({ createServer: progressAgent, bearer: false, audit, eventStore: { totalBytes: 1500 } }));
    const endpoint = new URL("/mcp", http.url);
    const sidA = await openSession(endpoint);
    const sidB = await openSession(endpoint);
    const idsA = await runToEnd(endpoint, sidA, "alpha");
    const idsB = await runToEnd(endpoint, sidB, "beta");

    // B did not fit beside A: it gave up its own oldest events
    expect(await resume(endpoint, sidB, idsB[0]!)).toEqual({ status: 400, text: "" });
    expect(records.filter((r) => r.type === "http" && r.reason === "last_event_id_unknown").map((r) => [r.status, r.outcome])).toEqual([[400, "denied"]]);
    // A kept all of its events, B its newest
    expect((await resume(endpoint, sidA, idsA[0]!)).text).toContain("RESULT-FOR-alpha");
    expect((await resume(endpoint, sidB, idsB.at(-2)!)).text).toContain("RESULT-FOR-beta");
  });
});


describe.each(testDatabaseKinds())("createHttpApp's PostgreSQL event store on %s at totalBytes (the whole table, applied by sweep())", (kind) => {
  it("after a sweep, the session that stored the most gives up its own oldest events, never another session's: resuming from one is refused (400 last_event_id_unknown, one audit record), kept ones replay", async () => {
    const { db, table } = await database(kind);
    const bytes = async () => Number(((await db.query(`SELECT coalesce(sum(bytes), 0) AS n FROM ${table}`)).rows[0] as { n: string }).n);
    // swept only when the test says so (the first store's sweep finds the table empty, the next is an hour away)
    const eventStore = await PostgresEventStore.open({ db, table, limits: { totalBytes: 2500 }, sweepIntervalMs: 3_600_000 });
    const records: AuditRecordInput[] = [];
    const audit = { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    http = await listen(createHttpApp({ createServer: progressAgent, bearer: false, audit, eventStore }));
    const endpoint = new URL("/mcp", http.url);
    const sidA = await openSession(endpoint);
    const sidB = await openSession(endpoint);
    // A's one request (about 1 KB) is the oldest in the table; B then stores three (about 3 KB)
    const idsA = await runToEnd(endpoint, sidA, "alpha");
    const idsB: string[][] = [];
    for (const secret of ["beta", "gamma", "epsilon"]) idsB.push(await runToEnd(endpoint, sidB, secret));
    expect(await bytes()).toBeGreaterThan(2500);

    expect(await eventStore.sweep()).toBeGreaterThan(0);
    expect(await bytes()).toBeLessThanOrEqual(2500);
    expect(await resume(endpoint, sidB, idsB[0]![0]!)).toEqual({ status: 400, text: "" });
    expect(records.filter((r) => r.reason === "last_event_id_unknown").map((r) => [r.type, r.status, r.outcome])).toEqual([["http", 400, "denied"]]);
    // A, under its share, kept every event, the oldest of the table included; B its newest
    expect((await resume(endpoint, sidA, idsA[0]!)).text).toContain("RESULT-FOR-alpha");
    const keptB = await resume(endpoint, sidB, idsB[2]![0]!);
    expect(keptB.status).toBe(200);
    expect(keptB.text).toContain("RESULT-FOR-epsilon");
  });
});
