/**
 * Session limits per principal (createHttpApp `maxSessionsPerPrincipal`): one authenticated client cannot take every
 * session of the server. Real ES256 tokens verified by the JWT bearer authenticator against a local key set.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from "jose";
import { createHttpApp, createJwtBearerAuthenticator, listen, type AuditRecordInput, type AuditSink, type Listening } from "hmcp";
import { createEchoAgent } from "../fixtures/echo-agent.js";
import { MCP_HEADERS } from "../fixtures/raw-http.js";

const ISSUER = "https://as.example.test";
const RESOURCE = "https://agents.example.test/mcp";

let signingKey: CryptoKey;
let publicJwk: JWK;
let http: Listening | undefined;

beforeAll(async () => {
  const kp = await generateKeyPair("ES256");
  signingKey = kp.privateKey;
  publicJwk = { ...(await exportJWK(kp.publicKey)), kid: "k1", alg: "ES256", use: "sig" };
});

afterEach(async () => {
  await http?.close();
  http = undefined;
});

async function token(sub: string, scope = "hmcp:sample hmcp:read"): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISSUER, aud: RESOURCE, sub, client_id: sub, scope, iat: now, exp: now + 300 })
    .setProtectedHeader({ alg: "ES256", kid: "k1", typ: "at+jwt" })
    .sign(signingKey);
}

async function start(options: Partial<Parameters<typeof createHttpApp>[0]>) {
  const bearer = createJwtBearerAuthenticator({ issuer: ISSUER, audience: RESOURCE, jwks: { keys: { keys: [publicJwk] } }, requiredScopes: ["hmcp:sample"] });
  const app = createHttpApp({ createServer: () => createEchoAgent({}), bearer, enableJsonResponse: true, ...options });
  http = await listen(app);
  return { app, endpoint: new URL("/mcp", http.url) };
}

interface Opened {
  status: number;
  sessionId: string | null;
  retryAfter: string | null;
  body: { error?: { code: number; message: string } };
}

async function initialize(endpoint: URL, bearerToken: string): Promise<Opened> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, authorization: `Bearer ${bearerToken}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  return { status: res.status, sessionId: res.headers.get("mcp-session-id"), retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Opened["body"] };
}

const MODERN = "2026-07-28";
/** An MCP 2026-07-28 `subscriptions/listen` request: a stream held open like a session (until `signal` aborts it). */
function listenStream(endpoint: URL, bearerToken: string, id: number, signal?: AbortSignal): Promise<Response> {
  return fetch(endpoint, {
    method: "POST",
    ...(signal && { signal }),
    headers: { ...MCP_HEADERS, authorization: `Bearer ${bearerToken}`, "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "subscriptions/listen", params: { notifications: { toolsListChanged: true }, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
  });
}

describe("sessions in all (maxSessions)", () => {
  it("at maxSessions a new 2025 session or 2026-07-28 subscriptions/listen stream gets 503 with Retry-After and one audit record each; ending one frees its place", async () => {
    const records: AuditRecordInput[] = [];
    const sink: AuditSink = { append: (r) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    const { endpoint } = await start({ maxSessions: 1, audit: sink });
    // other principals each time: the per-principal cap is not what refuses
    const alice = await token("alice");
    const held = await initialize(endpoint, alice);
    expect(held.status).toBe(200);

    const refused = await initialize(endpoint, await token("bob"));
    expect(refused).toMatchObject({ status: 503, retryAfter: "5", sessionId: null, body: { error: { code: -32000 } } });
    const carol = await token("carol", "hmcp:sample hmcp:access");
    const stream = await listenStream(endpoint, carol, 7);
    expect(stream.status).toBe(503);
    expect(stream.headers.get("retry-after")).toBe("5");
    expect(await stream.json()).toMatchObject({ id: 7, error: { code: -32000 } });
    const refusals = records.filter((r) => r.reason === "too_many_sessions");
    expect(refusals).toHaveLength(2);
    expect(refusals.map((r) => [r.type, r.status, r.outcome, r.actor.sub])).toEqual([
      ["http", 503, "failed", "bob"],
      ["http", 503, "failed", "carol"],
    ]);

    // the session ends: its place goes to the stream, which holds it in turn until it ends
    const del = await fetch(endpoint, { method: "DELETE", headers: { ...MCP_HEADERS, authorization: `Bearer ${alice}`, "mcp-session-id": held.sessionId!, "mcp-protocol-version": "2025-06-18" } });
    expect(del.status).toBe(200);
    const listening = new AbortController();
    const open = await listenStream(endpoint, carol, 8, listening.signal);
    expect(open.status).toBe(200);
    expect((await initialize(endpoint, await token("dave"))).status).toBe(503);
    listening.abort();
    await open.body?.cancel().catch(() => undefined);
    let again = await initialize(endpoint, await token("erin"));
    // the stream's place is given back when the server sees the connection close
    for (let i = 0; i < 100 && again.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 20));
      again = await initialize(endpoint, await token("erin"));
    }
    expect(again.status).toBe(200);
    expect(records.filter((r) => r.reason === "too_many_sessions").length).toBeGreaterThanOrEqual(3);
  });
});

describe("sessions per principal", () => {
  it("a principal at its cap gets 429 with Retry-After and an audit record; other principals are unaffected; closing a session frees its place", async () => {
    const records: AuditRecordInput[] = [];
    const sink: AuditSink = { append: (r) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    const { app, endpoint } = await start({ maxSessionsPerPrincipal: 2, audit: sink });
    const alice = await token("alice");
    const first = await initialize(endpoint, alice);
    const second = await initialize(endpoint, alice);
    expect([first.status, second.status]).toEqual([200, 200]);

    const third = await initialize(endpoint, alice);
    expect(third.status).toBe(429);
    expect(third.retryAfter).toBe("30");
    expect(third.sessionId).toBeNull();
    expect(third.body.error?.message).toMatch(/Too many sessions for this client \(2\)/);
    const refusal = records.filter((r) => r.reason === "too_many_sessions_for_principal");
    expect(refusal).toHaveLength(1);
    expect(refusal[0]).toMatchObject({ type: "http", outcome: "denied", status: 429, actor: { sub: "alice", clientId: "alice" } });

    // another principal still gets sessions
    expect((await initialize(endpoint, await token("bob"))).status).toBe(200);
    expect(app.sessionCount).toBe(3);

    // a new token of the same principal does not reset its count; DELETE of one of its sessions does
    expect((await initialize(endpoint, await token("alice"))).status).toBe(429);
    const del = await fetch(endpoint, { method: "DELETE", headers: { ...MCP_HEADERS, authorization: `Bearer ${alice}`, "mcp-session-id": first.sessionId!, "mcp-protocol-version": "2025-06-18" } });
    expect(del.status).toBe(200);
    expect((await initialize(endpoint, alice)).status).toBe(200);
  });

  /** A server whose connect takes `ms`: initialize requests of one burst overlap between the checks and the session. */
  const slowConnect = (ms: number) => () => {
    const server = createEchoAgent({});
    const connect = server.connect.bind(server);
    server.connect = async (t) => {
      await new Promise((r) => setTimeout(r, ms));
      return connect(t);
    };
    return server;
  };

  it("concurrent initialize requests cannot overrun the cap", async () => {
    const { app, endpoint } = await start({ maxSessionsPerPrincipal: 3, createServer: slowConnect(30) });
    const alice = await token("alice");
    const replies = await Promise.all(Array.from({ length: 12 }, () => initialize(endpoint, alice)));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(3);
    expect(replies.filter((r) => r.status === 429)).toHaveLength(9);
    expect(app.sessionCount).toBe(3);
  });

  it("a refused initialize (bad request) does not use up a place", async () => {
    const { endpoint } = await start({ maxSessionsPerPrincipal: 1 });
    const alice = await token("alice");
    for (let i = 0; i < 3; i++) {
      // an initialize request the SDK transport refuses (406: the client must accept both JSON and SSE)
      const bad = await fetch(endpoint, {
        method: "POST",
        headers: { ...MCP_HEADERS, accept: "application/json", authorization: `Bearer ${alice}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
      });
      expect(bad.status).toBe(406);
      await bad.body?.cancel();
    }
    expect((await initialize(endpoint, alice)).status).toBe(200);
  });

  it("maxSessions counts sessions being opened once: a slow initialize neither lets a burst past the cap nor blocks the last place", async () => {
    const { app, endpoint } = await start({ maxSessions: 3, maxSessionsPerPrincipal: 100, createServer: slowConnect(30) });
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => token(`user-${i}`).then((t) => initialize(endpoint, t))));
    expect(replies.filter((r) => r.status === 200)).toHaveLength(3);
    expect(replies.filter((r) => r.status === 503)).toHaveLength(5);
    expect(app.sessionCount).toBe(3);
  });

  it("a session whose initialize answer is still being written does not count twice against maxSessions", async () => {
    // the first initialize is answered only after the second one has been checked: with the session counted both as
    // open and as being opened, the second would be refused although only one of two places is taken
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let n = 0;
    const createServer = () => {
      const server = createEchoAgent({});
      if (n++ === 0) {
        const connect = server.connect.bind(server);
        server.connect = async (t) => {
          await connect(t);
          const onmessage = t.onmessage!;
          t.onmessage = (msg, extra) => {
            // the session is registered when the transport reads the initialize request; hold its answer back
            void gate.then(() => onmessage(msg, extra));
          };
        };
      }
      return server;
    };
    const { app, endpoint } = await start({ maxSessions: 2, createServer });
    const first = initialize(endpoint, await token("alice"));
    while (app.sessionCount < 1) await new Promise((r) => setTimeout(r, 5));
    const second = await initialize(endpoint, await token("bob"));
    release();
    expect(second.status).toBe(200);
    expect((await first).status).toBe(200);
  });

  it("refuses a limit that is not a positive integer", () => {
    const base = { createServer: () => createEchoAgent(), bearer: false as const };
    expect(() => createHttpApp({ ...base, maxSessionsPerPrincipal: 0 })).toThrow(/'maxSessionsPerPrincipal' must be a positive integer/);
  });
});
