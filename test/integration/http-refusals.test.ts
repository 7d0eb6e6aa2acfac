/**
 * One refusal path at the edge (issue #25 item 1): every request createHttpApp refuses, before or inside the MCP
 * transport, gets its documented HTTP status, a typed JSON-RPC error (codes by name, src/protocol/errors.ts) or the
 * bearer check's OAuth answer, and exactly ONE audit record with a machine-readable reason. One test per row of
 * SECURITY.md's refusal table, on both eras (MCP 2025-11-25 in a session, MCP 2026-07-28 per request) where the row
 * applies to both. The app's and the server's records go to one in-memory sink, so they are counted together.
 */
import { request } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpApp, HMCPServer, hmcpContext, listen, type AuditRecordInput, type AuditSink, type Listening } from "hmcp";
import { INVALID_REQUEST, PARSE_ERROR, SESSION_NOT_FOUND, TRANSPORT_ERROR } from "../../src/protocol/errors.js";
import { bearerFor, makeKeys, mint, TEST_ISSUER, TEST_RESOURCE, type TestKeys } from "../fixtures/bearer.js";
import { MCP_HEADERS, openSession } from "../fixtures/raw-http.js";

const MODERN = "2026-07-28";
const LEGACY = "2025-11-25";
const META = { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} };

const records: AuditRecordInput[] = [];
const sink: AuditSink = { append: (r) => void records.push(r), flush: async () => undefined, close: async () => undefined };

let keys: TestKeys;
let http: Listening;
let endpoint: URL;
let token: string;
let sid: string;

function agent(): HMCPServer {
  const s = new HMCPServer({ name: "refusals", version: "1.0.0" }, { guardrails: false, audit: sink });
  s.registerTool("echo", { description: "echoes", inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({ content: [{ type: "text", text }] }));
  s.registerTool("approve", { description: "asks the clinician" }, async (ctx) => {
    const answer = await hmcpContext(ctx).elicit({ message: "Approve?", requestedSchema: { type: "object", properties: {} } });
    return { content: [{ type: "text", text: answer.action }] };
  });
  return s;
}

beforeAll(async () => {
  keys = await makeKeys();
  http = await listen(createHttpApp({ createServer: agent, bearer: bearerFor(keys), audit: sink, bodyLimitBytes: 10_000 }));
  endpoint = new URL("/mcp", http.url);
  token = await mint(keys, { scope: "hmcp:access hmcp:read" });
  sid = await openSession(endpoint, { authorization: `Bearer ${token}` });
});
afterAll(async () => {
  await http.close();
});

type Era = "2025-11-25" | "2026-07-28";

/** Headers of a request on `era`: in the session on 2025-11-25, the standard headers on 2026-07-28. */
function eraHeaders(era: Era, method = "tools/list", name?: string): Record<string, string> {
  return era === LEGACY
    ? { ...MCP_HEADERS, authorization: `Bearer ${token}`, "mcp-session-id": sid, "mcp-protocol-version": LEGACY }
    : { ...MCP_HEADERS, authorization: `Bearer ${token}`, "mcp-protocol-version": MODERN, "mcp-method": method, ...(name !== undefined && { "mcp-name": name }) };
}

/** A JSON-RPC request on `era` (the `_meta` envelope on 2026-07-28). */
function message(era: Era, method = "tools/list", params: Record<string, unknown> = {}, id: unknown = 1): Record<string, unknown> {
  return { jsonrpc: "2.0", id, method, params: era === MODERN ? { ...params, _meta: META } : params };
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/**
 * Sends one request and returns the answer and the records it left: waits until at least one record came and then a
 * little longer, so a second record would be seen.
 */
async function send(init: RequestInit & { headers: Record<string, string> }, url: URL = endpoint): Promise<{ answer: Answer; left: AuditRecordInput[] }> {
  const before = records.length;
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  await settle(before);
  return { answer: { status: res.status, headers: res.headers, body }, left: records.slice(before) };
}

async function settle(before: number): Promise<void> {
  for (let i = 0; i < 40 && records.length === before; i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 60));
}

/** The refusal is typed and left exactly one record with `reason`. */
function expectOneRecord(left: AuditRecordInput[], reason: string, status: number, outcome: "denied" | "failed" = "denied"): void {
  expect(left.map((r) => ({ type: r.type, reason: r.reason, status: r.status, outcome: r.outcome }))).toEqual([{ type: "http", reason, status, outcome }]);
}

function expectJsonRpcRefusal(answer: Answer, status: number, code: number, reason: string): void {
  expect(answer.status).toBe(status);
  expect(answer.body).toMatchObject({ jsonrpc: "2.0", error: { code, data: { reason } } });
}

const BOTH: Era[] = [LEGACY, MODERN];

describe.each(BOTH)("refusals at the edge on %s", (era) => {
  it("a body that is JSON but not a JSON-RPC request → 400 -32600 invalid_request, one record (not -32700)", async () => {
    const base = message(era);
    const bodies = [
      { ...base, jsonrpc: "1.0" },
      { jsonrpc: "2.0", id: 1, params: base["params"] },
      { ...base, id: { nested: 1 } },
      { ...base, id: [1] },
      { ...base, params: "not an object" },
      {},
    ];
    for (const body of bodies) {
      const { answer, left } = await send({ method: "POST", headers: eraHeaders(era), body: JSON.stringify(body) });
      expectJsonRpcRefusal(answer, 400, INVALID_REQUEST, "invalid_request");
      expectOneRecord(left, "invalid_request", 400);
    }
  });

  it("a JSON-RPC batch → 400 -32600 batch_not_supported, one record, no element runs", async () => {
    const batch = [message(era, "tools/call", { name: "echo", arguments: { text: "a" } }, 1), message(era, "tools/call", { name: "echo", arguments: { text: "b" } }, 2)];
    const { answer, left } = await send({ method: "POST", headers: eraHeaders(era, "tools/call", "echo"), body: JSON.stringify(batch) });
    expectJsonRpcRefusal(answer, 400, INVALID_REQUEST, "batch_not_supported");
    expectOneRecord(left, "batch_not_supported", 400);
    expect(left.some((r) => r.method === "tools/call")).toBe(false);
  });

  it("an unsupported Content-Type → 415 -32000 unsupported_media_type, one record", async () => {
    const { answer, left } = await send({ method: "POST", headers: { ...eraHeaders(era), "content-type": "text/plain" }, body: JSON.stringify(message(era)) });
    expectJsonRpcRefusal(answer, 415, TRANSPORT_ERROR, "unsupported_media_type");
    expectOneRecord(left, "unsupported_media_type", 415);
  });

  it("no acceptable Accept → 406 -32000 not_acceptable, one record", async () => {
    for (const accept of ["text/html", "application/json"]) {
      const { answer, left } = await send({ method: "POST", headers: { ...eraHeaders(era), accept }, body: JSON.stringify(message(era)) });
      expectJsonRpcRefusal(answer, 406, TRANSPORT_ERROR, "not_acceptable");
      expectOneRecord(left, "not_acceptable", 406);
    }
  });

  it("a body that is not JSON → 400 -32700 parse_error, one record", async () => {
    const { answer, left } = await send({ method: "POST", headers: eraHeaders(era), body: '{"jsonrpc": "2.0", ' });
    expectJsonRpcRefusal(answer, 400, PARSE_ERROR, "parse_error");
    expectOneRecord(left, "parse_error", 400);
  });

  it("a body over the limit → 413 -32600 body_too_large, one record", async () => {
    const { answer, left } = await send({ method: "POST", headers: eraHeaders(era, "tools/call", "echo"), body: JSON.stringify(message(era, "tools/call", { name: "echo", arguments: { text: "x".repeat(20_000) } })) });
    expectJsonRpcRefusal(answer, 413, INVALID_REQUEST, "body_too_large");
    expectOneRecord(left, "body_too_large", 413);
  });

  it("an HTTP method the endpoint does not serve → 405 -32000 method_not_allowed with Allow, one record", async () => {
    const { answer, left } = await send({ method: "PUT", headers: eraHeaders(era), body: JSON.stringify(message(era)) });
    expectJsonRpcRefusal(answer, 405, TRANSPORT_ERROR, "method_not_allowed");
    expect(answer.headers.get("allow")).toBe("GET, POST, DELETE");
    expectOneRecord(left, "method_not_allowed", 405);
  });

  it("a foreign Host header → 403 host_not_allowed (reason and what to change in the body), one record", async () => {
    const before = records.length;
    const answer = await rawAnswer({ ...eraHeaders(era), host: "evil.example:80" }, JSON.stringify(message(era)));
    await settle(before);
    expect(answer.status).toBe(403);
    const body = JSON.parse(answer.body) as { error: { code: number; message: string; data?: { reason?: string } }; id: unknown };
    expect(body).toMatchObject({ error: { code: TRANSPORT_ERROR, data: { reason: "host_not_allowed" } }, id: null });
    expect(body.error.message).toMatch(/evil\.example.*allowedHosts/);
    expectOneRecord(records.slice(before), "host_not_allowed", 403);
  });

  it("no credentials → 401 no_credentials; a token in a form body → 400 invalid_request token_in_body; in the query → 400 token_in_query: one record each", async () => {
    const { authorization: _, ...anonymous } = eraHeaders(era);
    const none = await send({ method: "POST", headers: anonymous, body: JSON.stringify(message(era)) });
    expect(none.answer.status).toBe(401);
    expect(none.answer.headers.get("www-authenticate")).toMatch(/^Bearer /);
    expectOneRecord(none.left, "no_credentials", 401);

    const form = await send({ method: "POST", headers: { ...anonymous, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ access_token: token }).toString() });
    expect(form.answer.status).toBe(400);
    expect(form.answer.body).toMatchObject({ error: "invalid_request" });
    expect(form.answer.headers.get("www-authenticate")).toMatch(/error="invalid_request"/);
    expectOneRecord(form.left, "token_in_body", 400);

    const query = await send({ method: "POST", headers: anonymous, body: JSON.stringify(message(era)) }, new URL(`?access_token=${token}`, endpoint));
    expect(query.answer.status).toBe(400);
    expectOneRecord(query.left, "token_in_query", 400);
  });

  it("a form body without a token → 415 unsupported_media_type (the form is parsed only to refuse a token in it), one record", async () => {
    const { answer, left } = await send({ method: "POST", headers: { ...eraHeaders(era), "content-type": "application/x-www-form-urlencoded" }, body: "method=tools%2Flist" });
    expectJsonRpcRefusal(answer, 415, TRANSPORT_ERROR, "unsupported_media_type");
    expectOneRecord(left, "unsupported_media_type", 415);
  });

  it("a token whose JOSE header lists an unknown crit parameter → 401 invalid_token malformed_token, one record (denied)", async () => {
    const { answer, left } = await send({ method: "POST", headers: { ...eraHeaders(era), authorization: `Bearer ${await critToken()}` }, body: JSON.stringify(message(era)) });
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    expectOneRecord(left, "malformed_token", 401);
  });

  it("a token without a scope the method needs → 403 insufficient_scope, one record", async () => {
    const weak = await mint(keys, { scope: "hmcp:read" });
    const { answer, left } = await send({ method: "POST", headers: { ...eraHeaders(era, "tools/call", "echo"), authorization: `Bearer ${weak}` }, body: JSON.stringify(message(era, "tools/call", { name: "echo", arguments: { text: "a" } })) });
    expect(answer.status).toBe(403);
    expectOneRecord(left, "insufficient_scope", 403);
  });

  it("a request the pipeline serves leaves one record of its own and none at the edge", async () => {
    const { answer, left } = await send({ method: "POST", headers: eraHeaders(era, "tools/call", "echo"), body: JSON.stringify(message(era, "tools/call", { name: "echo", arguments: { text: "a" } })) });
    expect(answer.status).toBe(200);
    expect(left.map((r) => [r.type, r.method, r.outcome])).toEqual([["request", "tools/call", "allowed"]]);
  });
});

describe("a bearer authenticator that throws", () => {
  it.each(BOTH)("on %s → 500 -32603 authenticator_error (failed), one record", async (era) => {
    const failing = { resourceMetadataPath: "/.well-known/oauth-protected-resource/mcp", resourceMetadata: () => ({}), check: async () => Promise.reject(new Error("boom")) };
    const other = await listen(createHttpApp({ createServer: agent, bearer: failing, audit: sink, logger: { error: () => undefined, warn: () => undefined, info: () => undefined } }));
    try {
      const { answer, left } = await send({ method: "POST", headers: eraHeaders(era), body: JSON.stringify(message(era)) }, new URL("/mcp", other.url));
      expectJsonRpcRefusal(answer, 500, -32603, "authenticator_error");
      expectOneRecord(left, "authenticator_error", 500, "failed");
    } finally {
      await other.close();
    }
  });
});

describe("refusals of the 2025 era (sessions, GET streams)", () => {
  it("an unknown session → 404 -32001 session_not_found; a request without one → 400 -32000 no_session: one record each", async () => {
    const unknown = await send({ method: "POST", headers: { ...eraHeaders(LEGACY), "mcp-session-id": "no-such-session" }, body: JSON.stringify(message(LEGACY)) });
    expectJsonRpcRefusal(unknown.answer, 404, SESSION_NOT_FOUND, "session_not_found");
    expectOneRecord(unknown.left, "session_not_found", 404);
    const { "mcp-session-id": _, ...noSession } = eraHeaders(LEGACY);
    const none = await send({ method: "POST", headers: noSession, body: JSON.stringify(message(LEGACY)) });
    expectJsonRpcRefusal(none.answer, 400, TRANSPORT_ERROR, "no_session");
    expectOneRecord(none.left, "no_session", 400);
  });

  it("a token with an unknown crit header parameter on initialize, GET and DELETE → 401 malformed_token, one record each, the session untouched", async () => {
    const bad = `Bearer ${await critToken()}`;
    const { "mcp-session-id": _, ...noSession } = eraHeaders(LEGACY);
    const initialize = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: "crit", version: "1" } } };
    for (const init of [
      { method: "POST", headers: { ...noSession, authorization: bad }, body: JSON.stringify(initialize) },
      { method: "GET", headers: { ...eraHeaders(LEGACY), accept: "text/event-stream", authorization: bad } },
      { method: "DELETE", headers: { ...eraHeaders(LEGACY), authorization: bad } },
    ]) {
      const { answer, left } = await send(init);
      expect(answer.status).toBe(401);
      expectOneRecord(left, "malformed_token", 401);
    }
    const { answer } = await send({ method: "POST", headers: eraHeaders(LEGACY), body: JSON.stringify(message(LEGACY)) });
    expect(answer.status).toBe(200);
  });

  it("an MCP-Protocol-Version the transport does not support → 400 -32000 unsupported_protocol_version, one record", async () => {
    const { answer, left } = await send({ method: "POST", headers: { ...eraHeaders(LEGACY), "mcp-protocol-version": "1999-01-01" }, body: JSON.stringify(message(LEGACY)) });
    expectJsonRpcRefusal(answer, 400, TRANSPORT_ERROR, "unsupported_protocol_version");
    expectOneRecord(left, "unsupported_protocol_version", 400);
  });

  it("a GET that does not accept text/event-stream → 406 not_acceptable, one record", async () => {
    const { answer, left } = await send({ method: "GET", headers: { ...eraHeaders(LEGACY), accept: "application/json" } });
    expectJsonRpcRefusal(answer, 406, TRANSPORT_ERROR, "not_acceptable");
    expectOneRecord(left, "not_acceptable", 406);
  });

  it("a malformed Last-Event-ID → 400 last_event_id_malformed; an unknown one → 400 last_event_id_unknown: one record each", async () => {
    for (const [id, reason] of [["garbage", "last_event_id_malformed"], ["1e3", "last_event_id_malformed"], ["0x10", "last_event_id_malformed"], ["999999", "last_event_id_unknown"]] as const) {
      const { answer, left } = await send({ method: "GET", headers: { ...eraHeaders(LEGACY), accept: "text/event-stream", "last-event-id": id } });
      expectJsonRpcRefusal(answer, 400, TRANSPORT_ERROR, reason);
      expectOneRecord(left, reason, 400);
    }
  });

  it("what the SDK's transport still refuses on its own (a second GET stream: 409) gets one record", async () => {
    const own = await openSession(endpoint, { authorization: `Bearer ${token}` });
    const headers = { ...eraHeaders(LEGACY), "mcp-session-id": own, accept: "text/event-stream" };
    const controller = new AbortController();
    const first = await fetch(endpoint, { method: "GET", headers, signal: controller.signal });
    expect(first.status).toBe(200);
    try {
      const { answer, left } = await send({ method: "GET", headers });
      expect(answer.status).toBe(409);
      expectOneRecord(left, "stream_conflict", 409);
    } finally {
      controller.abort();
    }
  });
});

describe("refusals of the 2026-07-28 era (the SDK's handler)", () => {
  it("a method the server does not serve → 404 -32601 method_not_found, one record", async () => {
    const { answer, left } = await send({ method: "POST", headers: eraHeaders(MODERN, "no/such"), body: JSON.stringify(message(MODERN, "no/such")) });
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ error: { code: -32601 } });
    expectOneRecord(left, "method_not_found", 404, "failed");
  });

  it("headers that disagree with the body → 400 invalid_request, one record", async () => {
    const { answer, left } = await send({ method: "POST", headers: eraHeaders(MODERN, "prompts/list"), body: JSON.stringify(message(MODERN, "tools/list")) });
    expect(answer.status).toBe(400);
    expectOneRecord(left, "invalid_request", 400, "failed");
  });

  it("a request the pipeline took and the SDK answered with HTTP 400 (in-band -32021, a missing client capability) has the pipeline's record only", async () => {
    const { answer, left } = await send({ method: "POST", headers: eraHeaders(MODERN, "tools/call", "approve"), body: JSON.stringify(message(MODERN, "tools/call", { name: "approve", arguments: {} })) });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: -32021 } });
    // before: a second, http record (invalid_request) beside the pipeline's
    expect(left.map((r) => [r.type, r.method, r.reason])).toEqual([["request", "tools/call", "missing_client_capability"]]);
  });
});

describe("refusals of Node's HTTP parser (listen's clientError)", () => {
  it("request headers too large for Node → 431, one http record (headers_too_large), and the server keeps serving", async () => {
    const before = records.length;
    const status = await rawStatus({ ...eraHeaders(LEGACY), "x-padding": "a".repeat(20_000) }, JSON.stringify(message(LEGACY)));
    await settle(before);
    expect(status).toBe(431);
    const left = records.slice(before);
    expectOneRecord(left, "headers_too_large", 431);
    expect(left[0]!.source).toEqual({ address: "127.0.0.1" });
    const { answer } = await send({ method: "POST", headers: eraHeaders(LEGACY, "tools/call"), body: JSON.stringify(message(LEGACY, "tools/call", { name: "echo", arguments: { text: "still here" } })) });
    expect(answer.status).toBe(200);
  });

  it("malformed HTTP → 400, one http record (malformed_http)", async () => {
    const before = records.length;
    const reply = await rawSocket("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Line\r\n\r\n");
    await settle(before);
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expectOneRecord(records.slice(before), "malformed_http", 400);
  });
});

/** A POST with node:http (any header, including Host); resolves with the status. */
function rawStatus(headers: Record<string, string>, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(endpoint, { method: "POST", headers }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** A POST with node:http (any header, including Host); resolves with the status and the body. */
function rawAnswer(headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(endpoint, { method: "POST", headers }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Writes raw bytes to the server; resolves with what it answers before closing. */
function rawSocket(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(endpoint.port), endpoint.hostname, () => socket.write(bytes));
    let data = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (data += d));
    socket.on("close", () => resolve(data));
    socket.on("error", reject);
  });
}

/** A token for this resource, validly signed, whose JOSE header makes an unknown extension critical (RFC 7515 §4.1.11). */
async function critToken(): Promise<string> {
  const b64u = (s: string | Buffer) => Buffer.from(s).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const header = { alg: "ES256", kid: keys.jwk.kid, typ: "at+jwt", crit: ["x-unknown"], "x-unknown": 1 };
  const claims = { iss: TEST_ISSUER, aud: TEST_RESOURCE, client_id: "orchestrator", sub: "orchestrator", scope: "hmcp:access hmcp:read", iat: now, exp: now + 300 };
  const input = `${b64u(JSON.stringify(header))}.${b64u(JSON.stringify(claims))}`;
  const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keys.privateKey, new TextEncoder().encode(input));
  return `${input}.${b64u(Buffer.from(sig))}`;
}

