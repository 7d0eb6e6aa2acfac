/**
 * Issue #25 item 3, the PostgreSQL audit sink's faults, through the public API over HTTP on both eras.
 *
 * On a real PostgreSQL server (test/fixtures/postgres.ts; `.ci/run` installs it): the server is killed
 * (`pg_ctl stop -m immediate`) while the sink's INSERT is in flight, then refuses connections while it is down, then is
 * started again on the same data directory and port. The INSERT in flight is made to hang where it hurts most: its
 * transaction is committed locally and waits for a synchronous standby that does not exist, so the kill leaves a batch
 * the sink was never told about in the table (a commit whose answer was lost).
 *
 * On PGlite (no server to kill): the sink's database handle is closed under it, the case of a handle that refuses
 * everything from then on and cannot come back.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import { afterEach, describe, expect, it } from "vitest";
import {
  HMCPErrorCode,
  HMCPServer,
  PostgresAuditSink,
  SAMPLING_TOOL_NAME,
  createHttpApp,
  generateAuditSigningKey,
  listen,
  verifyAuditTable,
  type AuditRecordInput,
  type AuditSink,
  type Listening,
} from "hmcp";
import { MCP_HEADERS, openSession } from "../fixtures/raw-http.js";
import { startTestDatabase, testDatabaseKinds, type TestDatabase } from "../fixtures/postgres.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let handled = 0;
const agentWith = (sink: AuditSink) => () =>
  new HMCPServer({ name: "audited", version: "1" }, { auth: false, audit: sink, guardrails: false }).sampling(async () => {
    handled++;
    return { content: { type: "text", text: "ok" } };
  });

interface Reply {
  status: number;
  result?: unknown;
  error?: { code: number; data?: { reason?: string } };
}

/** The JSON-RPC message answering `id` in a JSON or SSE body. */
async function replyTo(res: Response, id: number): Promise<Reply> {
  const text = await res.text();
  const messages = res.headers.get("content-type")?.startsWith("application/json")
    ? [JSON.parse(text) as Reply & { id?: number }]
    : text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)) as Reply & { id?: number });
  const m = messages.find((x) => x.id === id);
  if (m === undefined) throw new Error(`no answer to request ${id} (HTTP ${res.status})`);
  return { ...m, status: res.status };
}

const sampling = { messages: [{ role: "user", content: { type: "text", text: "hello" } }], maxTokens: 5 };

/** One sampling request on a 2025-era session. */
async function askLegacy(endpoint: URL, sid: string, id: number): Promise<Reply> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "sampling/createMessage", params: sampling }),
  });
  return replyTo(res, id);
}

const MODERN = "2026-07-28";
/** One 2026-07-28 request (no session) calling HMCP sampling as its tool. */
async function askModern(endpoint: URL, id: number): Promise<Reply> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": SAMPLING_TOOL_NAME },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: SAMPLING_TOOL_NAME, arguments: sampling, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } },
    }),
  });
  return replyTo(res, id);
}

const get = async (base: URL, route: string) => {
  const res = await fetch(new URL(route, base));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

async function rows(db: TestDatabase["db"], instanceId: string): Promise<AuditRecordInput[]> {
  const { rows: r } = await db.query("SELECT line FROM hmcp_audit WHERE instance_id = $1 ORDER BY seq", [instanceId]);
  return (r as Array<{ line: string }>).map((x) => (JSON.parse(x.line) as { record: AuditRecordInput }).record);
}

/** Serves `answered` on both eras and checks each got a result. */
async function serveBoth(endpoint: URL, sid: string, ids: [number, number], answered: number[]): Promise<void> {
  expect((await askLegacy(endpoint, sid, ids[0])).result).toBeDefined();
  expect((await askModern(endpoint, ids[1])).result).toBeDefined();
  answered.push(...ids);
}

/** Both eras refused with the typed -32055 (the handler does not run), and a new 2025 session with HTTP 503. */
async function expectRefusedBoth(endpoint: URL, sid: string, ids: [number, number]): Promise<void> {
  const before = handled;
  const legacy = await askLegacy(endpoint, sid, ids[0]);
  expect(legacy.error).toMatchObject({ code: HMCPErrorCode.AuditUnavailable, data: { reason: "audit_unavailable" } });
  const modern = await askModern(endpoint, ids[1]);
  expect(modern.error).toMatchObject({ code: HMCPErrorCode.AuditUnavailable, data: { reason: "audit_unavailable" } });
  await expect(openSession(endpoint)).rejects.toThrow(/503 .*-32055/);
  expect(handled).toBe(before);
}

const kinds = testDatabaseKinds();

if (kinds.includes("postgresql")) describe("PostgreSQL audit sink on a real PostgreSQL server: killed mid-request, refusing connections, restarted", () => {
  it("[postgresql] requests fail closed with -32055, readiness names the fault, the sink recovers once the server is back, the chain verifies and every answered request is in it", async () => {
    const db = await startTestDatabase("postgresql");
    cleanups.push(() => db.close());
    // the sink's own pool, with no 'error' listener of ours: the sink must keep the process up when the server dies
    // idle clients are kept (no idle timeout), so some are idle when the server dies, however slow the machine
    const pool = new pg.Pool({ connectionString: db.url, max: 4, idleTimeoutMillis: 0 });
    cleanups.push(() => pool.end());
    const keys = await generateAuditSigningKey();
    const notices: Array<{ message: string; meta: Record<string, unknown> }> = [];
    const sink = await PostgresAuditSink.open({ db: pool, instanceId: "agent-1", signing: { privateKey: keys.privateJwk }, retry: false, onNotice: (message, meta) => notices.push({ message, meta }) });
    // idle connections in the pool when the server dies (each makes the pool emit 'error')
    await Promise.all([pool.query("SELECT pg_sleep(0.05)"), pool.query("SELECT pg_sleep(0.05)"), pool.query("SELECT pg_sleep(0.05)")]);
    handled = 0;
    const http: Listening = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    cleanups.push(() => http.close());
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    const answered: number[] = [];
    await serveBoth(endpoint, sid, [1, 2], answered);
    await sink.flush();
    expect(await get(http.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });

    // the next INSERT commits and then waits for a synchronous standby that never comes: in flight, and committed
    await db.db.query("ALTER SYSTEM SET synchronous_standby_names = 'hmcp_no_such_standby'");
    await db.db.query("SELECT pg_reload_conf()");
    // (the reload reaches the backends through the postmaster, which can lag under load: once another backend shows the
    // new value, the postmaster has re-read the file and signalled every backend, the sink's idle ones included, so the
    // sink's next INSERT runs with it; without this wait an INSERT could still commit without waiting for the standby)
    for (let i = 0; i < 250; i++) {
      const { rows: s } = await db.db.query("SHOW synchronous_standby_names");
      if ((s[0] as { synchronous_standby_names: string }).synchronous_standby_names === "hmcp_no_such_standby") break;
      await new Promise((r2) => setTimeout(r2, 20));
    }
    await serveBoth(endpoint, sid, [3, 4], answered);
    let waiting = 0;
    for (let i = 0; i < 300 && waiting === 0; i++) {
      const { rows: r } = await db.db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
      waiting = (r[0] as { n: number }).n;
      if (waiting === 0) await new Promise((r2) => setTimeout(r2, 20));
    }
    expect(waiting).toBe(1);
    // served while that INSERT hangs: their records queue behind it
    await serveBoth(endpoint, sid, [5, 6], answered);
    // the restart must not wait for the standby again (ALTER SYSTEM is read at start; no reload now)
    await db.db.query("ALTER SYSTEM RESET synchronous_standby_names");
    await db.stop!("immediate");

    // the write in flight failed: the sink is in a fault, says so, and refuses new requests on both eras
    await expect(sink.flush()).rejects.toMatchObject({ name: "AuditSinkError", code: "write_failed" });
    expect(notices.some((n) => n.message === "audit write failed")).toBe(true);
    // an idle client's 'error' reaches the pool when its socket closes: soon, not necessarily before the flush fails
    for (let i = 0; i < 250 && !notices.some((n) => n.message === "audit database connection lost"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(notices.some((n) => n.message === "audit database connection lost")).toBe(true);
    expect(await get(http.url, "/healthz")).toMatchObject({ status: 200, body: { status: "ok", ready: false } });
    const down = await get(http.url, "/readyz");
    expect(down).toMatchObject({ status: 503, body: { status: "not_ready", problems: [{ component: "audit", reason: "audit_sink_failed", recovers: true }] } });
    await expectRefusedBoth(endpoint, sid, [7, 8]);

    // the server refuses connections: a retry now is refused with the code an operator can act on
    const refused = await sink.recover().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toMatchObject({ name: "AuditSinkError", code: "write_failed" });
    expect(((refused as Error).cause as { code?: string }).code).toBe("ECONNREFUSED");
    expect(await get(http.url, "/readyz")).toMatchObject({ status: 503, body: { problems: [{ reason: "audit_sink_failed", code: "ECONNREFUSED", recovers: true }] } });
    expect(JSON.stringify((await get(http.url, "/readyz")).body)).not.toContain(db.url!);

    // back on the same data directory and port: the batch committed before the kill is there, and the sink goes on
    await db.start!();
    await sink.recover();
    expect(notices.some((n) => n.message === "audit batch found committed after a lost answer")).toBe(true);
    expect(await get(http.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
    await serveBoth(endpoint, sid, [9, 10], answered);
    expect(handled).toBe(answered.length);

    await http.close();
    await sink.close();
    const verified = await verifyAuditTable(db.db, { instanceId: "agent-1", publicKey: keys.publicJwk });
    expect(verified).toMatchObject({ ok: true, closed: true, signaturesChecked: true });
    expect(verified.recoveries).toHaveLength(1);
    const records = await rows(db.db, "agent-1");
    // nothing answered is missing, and nothing is written twice
    const allowed = records.filter((r) => r.type === "request" && r.outcome === "allowed").map((r) => r.requestId);
    expect(allowed.sort()).toEqual([...answered].sort());
    const ids = records.map((r) => r.id).filter((id) => id !== undefined); // checkpoints have none
    expect(new Set(ids).size).toBe(ids.length);
    // the refusals while it was down are kept too (they waited in the sink): two requests, one session
    expect(records.filter((r) => r.type === "request" && r.reason === "audit_unavailable").map((r) => r.requestId).sort()).toEqual([7, 8]);
    expect(records.filter((r) => r.type === "http" && r.reason === "audit_unavailable")).toHaveLength(1);
  });
});

describe("PostgreSQL audit sink on PGlite: the database handle closed under the sink", () => {
  it("[pglite] requests fail closed with -32055, readiness says a restart is needed (HANDLE_CLOSED), shutdown completes, and the reopened chain verifies with every answered request", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hmcp-pglite-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const lite = new PGlite(dir);
    const keys = await generateAuditSigningKey();
    const notices: Array<{ message: string; meta: Record<string, unknown> }> = [];
    const sink = await PostgresAuditSink.open({ db: lite, instanceId: "agent-1", signing: { privateKey: keys.privateJwk }, retry: { minDelayMs: 5, maxDelayMs: 10 }, onNotice: (message, meta) => notices.push({ message, meta }) });
    handled = 0;
    const http: Listening = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    cleanups.push(() => http.close());
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    const answered: number[] = [];
    await serveBoth(endpoint, sid, [1, 2], answered);
    await sink.flush();

    await lite.close();
    // the sink sees the closed handle before it admits a request: no request is answered whose record cannot be kept
    await expectRefusedBoth(endpoint, sid, [3, 4]);
    const ready = await get(http.url, "/readyz");
    expect(ready).toMatchObject({ status: 503, body: { problems: [{ component: "audit", reason: "audit_sink_failed", code: "HANDLE_CLOSED", recovers: false }] } });
    expect((ready.body["problems"] as Array<{ message: string }>)[0]!.message).toMatch(/restart/);
    await expect(sink.recover()).rejects.toMatchObject({ name: "AuditSinkError", code: "write_failed" });
    expect(notices.some((n) => n.message === "audit write failed" && n.meta["code"] === "HANDLE_CLOSED")).toBe(true);

    // the documented shutdown completes; the sink's close says nothing answered was left unwritten
    await http.close();
    await expect(sink.close()).rejects.toThrow(/HANDLE_CLOSED.*: 0 records not written/);

    // a new process (here: a new handle on the same data) continues the chain after a recover checkpoint
    const again = new PGlite(dir);
    cleanups.push(() => again.close());
    const reopened = await PostgresAuditSink.open({ db: again, instanceId: "agent-1", signing: { privateKey: keys.privateJwk }, onNotice: () => undefined });
    await reopened.close();
    const verified = await verifyAuditTable(again, { instanceId: "agent-1", publicKey: keys.publicJwk });
    expect(verified).toMatchObject({ ok: true, closed: true, signaturesChecked: true });
    expect(verified.recoveries).toHaveLength(1);
    const records = await rows(again, "agent-1");
    expect(records.filter((r) => r.type === "request" && r.outcome === "allowed").map((r) => r.requestId).sort()).toEqual(answered.sort());
    expect(handled).toBe(answered.length);
  });
});
