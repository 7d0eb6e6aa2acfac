/**
 * Session binding over HTTP with real tokens: a session belongs to the principal that opened it and to the patient
 * launch context it was opened in, and using it (a JSON-RPC request, its SSE stream and replays, DELETE) needs what
 * opening it did. Complements token-attacks.test.ts case 33 (another tenant, client or subject).
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { HMCPServer, createHttpApp, listen, type AuditRecordInput, type JwtBearerOptions, type Listening } from "hmcp";
import { MCP_HEADERS, openSession, readSse } from "../fixtures/raw-http.js";
import { bearerFor, makeKeys, mint, type TestKeys } from "../fixtures/bearer.js";

let keys: TestKeys;
let http: Listening | undefined;
beforeAll(async () => {
  keys = await makeKeys();
});
afterEach(async () => {
  await http?.close();
  http = undefined;
});

/** A chart agent for patient p1: its sampling handler reports progress six times, then answers with p1's chart. */
function chartAgent() {
  const s = new HMCPServer({ name: "chart-agent", version: "1" }, { guardrails: false });
  s.sampling(async (_params, ctx) => {
    ctx.require({ action: "r", resourceType: "Observation", patient: "p1" });
    for (let i = 1; i <= 6; i++) {
      await new Promise((r) => setTimeout(r, 25));
      await ctx.progress(i, 6);
    }
    return { content: { type: "text", text: "CHART-OF-p1: HbA1c 9.1%" }, stopReason: "endTurn" };
  });
  return s;
}

async function start(auth: Partial<JwtBearerOptions> = {}) {
  const records: AuditRecordInput[] = [];
  const audit = { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined };
  http = await listen(createHttpApp({ createServer: chartAgent, bearer: bearerFor(keys, auth), audit }));
  return { endpoint: new URL("/mcp", http.url), records };
}

const headers = (token: string, sid: string) => ({ ...MCP_HEADERS, authorization: `Bearer ${token}`, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" });

/** Starts the p1 chart request with `token`, reads up to its first progress event and drops the stream: the last event id. */
async function cutOffChart(endpoint: URL, token: string, sid: string): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(endpoint, {
    method: "POST",
    headers: headers(token, sid),
    signal: abort.signal,
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "sampling/createMessage",
      params: { messages: [{ role: "user", content: { type: "text", text: "chart" } }], maxTokens: 5, _meta: { progressToken: "t", "hmcp/patient": "p1" } },
    }),
  });
  const first = await readSse(res, (e) => e.data.includes("notifications/progress"));
  abort.abort();
  return first.at(-1)!.id!;
}

/** GET with Last-Event-ID: the status, and whether the replay delivered p1's chart. */
async function resume(endpoint: URL, token: string, sid: string, lastId: string): Promise<{ status: number; leaked: boolean }> {
  const res = await fetch(endpoint, { method: "GET", headers: { ...headers(token, sid), accept: "text/event-stream", "last-event-id": lastId } });
  const got = res.status === 200 ? await readSse(res, (e) => e.data.includes('"result"')) : (await res.body?.cancel(), []);
  return { status: res.status, leaked: got.some((e) => e.data.includes("CHART-OF-p1")) };
}

describe("an HTTP session is bound to the patient launch context it was opened in", () => {
  it("a token of the same client and subject for another patient cannot replay the session's results (404), one for the same patient can", async () => {
    const { endpoint, records } = await start();
    const tokenP1 = await mint(keys, { scope: "hmcp:sample patient/Observation.rs", patient: "p1" });
    const sid = await openSession(endpoint, { authorization: `Bearer ${tokenP1}` });
    const lastId = await cutOffChart(endpoint, tokenP1, sid);

    // One SMART app, one user, a second launch for p2 (holding no HMCP scope at all): the session does not exist for it.
    const tokenP2 = await mint(keys, { scope: "openid", patient: "p2" });
    expect(await resume(endpoint, tokenP2, sid, lastId)).toEqual({ status: 404, leaked: false });
    const refusal = records.find((r) => r.type === "http" && r.reason === "session_not_found");
    expect(refusal).toMatchObject({ status: 404, outcome: "denied", method: "GET /mcp", actor: { sub: "orchestrator", clientId: "orchestrator" } });

    // A fresh token of the same launch (same patient) resumes and gets the result.
    const again = await mint(keys, { scope: "hmcp:sample patient/Observation.rs", patient: "p1", jti: "second" });
    expect(await resume(endpoint, again, sid, lastId)).toEqual({ status: 200, leaked: true });
  });

  it("a token without a patient claim cannot use a session opened with one, nor the other way round", async () => {
    const { endpoint } = await start();
    const ping = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
    const post = async (token: string, sid: string) => (await fetch(endpoint, { method: "POST", headers: headers(token, sid), body: ping })).status;
    const withPatient = await mint(keys, { scope: "hmcp:sample", patient: "p1" });
    const without = await mint(keys, { scope: "hmcp:sample" });
    const sidP1 = await openSession(endpoint, { authorization: `Bearer ${withPatient}` });
    const sidNone = await openSession(endpoint, { authorization: `Bearer ${without}` });
    expect([await post(withPatient, sidP1), await post(without, sidNone)]).toEqual([200, 200]);
    expect([await post(without, sidP1), await post(withPatient, sidNone)]).toEqual([404, 404]);
  });

  it("the per-principal session cap counts the sessions of all its patient contexts", async () => {
    http = await listen(createHttpApp({ createServer: chartAgent, bearer: bearerFor(keys), maxSessionsPerPrincipal: 1 }));
    const endpoint = new URL("/mcp", http.url);
    await openSession(endpoint, { authorization: `Bearer ${await mint(keys, { patient: "p1" })}` });
    await expect(openSession(endpoint, { authorization: `Bearer ${await mint(keys, { patient: "p2" })}` })).rejects.toThrow(/429/);
  });
});

describe("GET and DELETE on a session need the scopes initialize needs", () => {
  it("a token of the session's principal lacking them gets 403 insufficient_scope on its stream and on DELETE, and the session lives on", async () => {
    const { endpoint, records } = await start({ methodScopes: { initialize: ["hmcp:sample"] } });
    const opener = await mint(keys, { scope: "hmcp:sample patient/Observation.rs", patient: "p1" });
    const sid = await openSession(endpoint, { authorization: `Bearer ${opener}` });
    const lastId = await cutOffChart(endpoint, opener, sid);

    const weak = await mint(keys, { scope: "openid", patient: "p1" });
    const get = await fetch(endpoint, { method: "GET", headers: { ...headers(weak, sid), accept: "text/event-stream", "last-event-id": lastId } });
    await get.body?.cancel();
    expect([get.status, get.headers.get("www-authenticate")]).toEqual([403, expect.stringMatching(/error="insufficient_scope".*scope="hmcp:sample"/)]);
    const del = await fetch(endpoint, { method: "DELETE", headers: headers(weak, sid) });
    await del.body?.cancel();
    expect(del.status).toBe(403);
    expect(records.filter((r) => r.type === "http" && r.reason === "insufficient_scope").map((r) => [r.method, r.status])).toEqual([
      ["GET /mcp", 403],
      ["DELETE /mcp", 403],
    ]);

    expect(await resume(endpoint, opener, sid, lastId)).toEqual({ status: 200, leaked: true });
    const closed = await fetch(endpoint, { method: "DELETE", headers: headers(opener, sid) });
    await closed.body?.cancel();
    expect(closed.status).toBe(200);
  });
});

describe("a session's stream and DELETE need every scope the session was opened with", () => {
  it("a token of the same client, subject and patient with fewer scopes cannot replay the session's results (default configuration)", async () => {
    const { endpoint, records } = await start();
    const opener = await mint(keys, { scope: "hmcp:sample patient/Observation.rs", patient: "p1" });
    const sid = await openSession(endpoint, { authorization: `Bearer ${opener}` });
    const lastId = await cutOffChart(endpoint, opener, sid);
    const weak = await mint(keys, { scope: "hmcp:sample", patient: "p1", jti: "weak" });
    expect(await resume(endpoint, weak, sid, lastId)).toEqual({ status: 404, leaked: false });
    const del = await fetch(endpoint, { method: "DELETE", headers: headers(weak, sid) });
    await del.body?.cancel();
    expect(del.status).toBe(404);
    expect(records.filter((r) => r.type === "http" && r.reason === "session_scopes_not_covered").map((r) => [r.method, r.status])).toEqual([
      ["GET /mcp", 404],
      ["DELETE /mcp", 404],
    ]);
    // a token with the same scopes and more resumes
    const wider = await mint(keys, { scope: "hmcp:sample patient/Observation.rs patient/Condition.rs", patient: "p1", jti: "wider" });
    expect(await resume(endpoint, wider, sid, lastId)).toEqual({ status: 200, leaked: true });
  });
});
