/**
 * Issue #25 item 3, the authorization server's key set (JWKS) failing, through the public API over HTTP on both eras:
 * a real JWKS endpoint on loopback that is stopped (connection refused), made to hang (never answers), and rotated.
 * The bearer check uses jose's remote key set with HMCP's options (`jwks.timeoutMs`, `cooldownMs`, `cacheMaxAgeMs`).
 * The clock is moved (Date only) to pass the re-fetch cooldown, never to measure anything.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { JWK } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HMCPServer, createHttpApp, createJwtBearerAuthenticator, listen, type AuditRecordInput, type AuditSink, type Listening } from "hmcp";
import { MCP_HEADERS } from "../fixtures/raw-http.js";
import { TEST_ISSUER, TEST_RESOURCE, makeKeys, mint, type TestKeys } from "../fixtures/bearer.js";

/** A JWKS endpoint on loopback that can be stopped, started again on its port, made to hang, and rotated. */
interface JwksServer {
  uri: string;
  set(keys: JWK[]): void;
  /** Requests received (fetches of the key set). */
  fetches(): number;
  /** From now on requests are held without an answer, until {@link release}. */
  hang(): void;
  release(): void;
  stop(): Promise<void>;
  start(): Promise<void>;
}

async function startJwksServer(keys: JWK[]): Promise<JwksServer> {
  let current = keys;
  let hanging = false;
  let fetches = 0;
  const held: ServerResponse[] = [];
  const answer = (res: ServerResponse) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: current }));
  let server: Server;
  const open = (port: number) =>
    new Promise<number>((resolve) => {
      server = createServer((_req, res) => {
        fetches++;
        if (hanging) held.push(res);
        else answer(res);
      });
      server.listen(port, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
  const port = await open(0);
  return {
    uri: `http://127.0.0.1:${port}/jwks`,
    set: (k) => (current = k),
    fetches: () => fetches,
    hang: () => (hanging = true),
    release: () => {
      hanging = false;
      for (const res of held.splice(0)) if (!res.destroyed) answer(res);
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
    start: async () => {
      await open(port);
    },
  };
}

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Agent {
  endpoint: URL;
  http: Listening;
  records: AuditRecordInput[];
}

/** An agent whose bearer check reads its keys from `jwks` (timeout 300 ms, cooldown 30 s, max age 10 min). */
async function agent(jwks: JwksServer): Promise<Agent> {
  const records: AuditRecordInput[] = [];
  const sink: AuditSink = { append: (r) => void records.push(r), flush: async () => undefined, close: async () => undefined };
  const bearer = createJwtBearerAuthenticator({ issuer: TEST_ISSUER, audience: TEST_RESOURCE, jwks: { uri: jwks.uri, timeoutMs: 300, cooldownMs: 30_000, cacheMaxAgeMs: 600_000 } });
  const createServer = () =>
    new HMCPServer({ name: "keyed", version: "1" }, { audit: sink, guardrails: false }).sampling(async () => ({ content: { type: "text", text: "ok" } }));
  const http = await listen(createHttpApp({ createServer, bearer, audit: sink }));
  cleanups.push(() => http.close());
  return { endpoint: new URL("/mcp", http.url), http, records };
}

interface Answer {
  status: number;
  wwwAuthenticate: string | null;
  ok: boolean;
}

/** A 2025-era initialize with `token`. */
async function initialize(endpoint: URL, token: string): Promise<Answer> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }),
  });
  const text = await res.text();
  return { status: res.status, wwwAuthenticate: res.headers.get("www-authenticate"), ok: res.status === 200 && text.includes('"result"') };
}

const MODERN = "2026-07-28";
/** A 2026-07-28 `tools/list` with `token`. */
async function listTools(endpoint: URL, token: string): Promise<Answer> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, "mcp-protocol-version": MODERN, "mcp-method": "tools/list" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
  });
  const text = await res.text();
  return { status: res.status, wwwAuthenticate: res.headers.get("www-authenticate"), ok: res.status === 200 && text.includes('"tools"') };
}

/** Both eras accept `token`. */
async function acceptedBoth(a: Agent, token: string): Promise<void> {
  expect(await initialize(a.endpoint, token)).toMatchObject({ ok: true });
  expect(await listTools(a.endpoint, token)).toMatchObject({ ok: true });
}

/** Both eras refuse `token` with 401 invalid_token, each with one http record: `reason`, `outcome`. */
async function refusedBoth(a: Agent, token: string, reason: string, outcome: "denied" | "failed"): Promise<void> {
  const before = a.records.length;
  for (const answer of [await initialize(a.endpoint, token), await listTools(a.endpoint, token)]) {
    expect(answer.status).toBe(401);
    expect(answer.wwwAuthenticate).toMatch(/error="invalid_token"/);
  }
  const added = a.records.slice(before);
  expect(added).toHaveLength(2);
  expect(added.every((r) => r.type === "http" && r.reason === reason && r.outcome === outcome && r.status === 401)).toBe(true);
}

/** Moves Date (only) past the re-fetch cooldown. */
function passCooldown(): void {
  vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 31_000 });
}

describe("the authorization server's key set (JWKS) unreachable, slow or rotating", () => {
  it("unreachable: known keys keep verifying from the cache; a key not cached is refused 401 key_set_unavailable (audited failed) once it may be fetched; accepted once the server is back", async () => {
    const k1 = await makeKeys("k1");
    const k2 = await makeKeys("k2");
    const jwks = await startJwksServer([k1.jwk]);
    cleanups.push(() => jwks.stop().catch(() => undefined));
    const a = await agent(jwks);
    await acceptedBoth(a, await mint(k1));
    expect(jwks.fetches()).toBe(1);

    await jwks.stop();
    // the agent keeps serving what it can verify: a new token signed with a cached key
    await acceptedBoth(a, await mint(k1, { jti: "second" }));
    // a key it has not seen, within the cooldown: not fetched (jose's cooldown), refused as unknown
    const rotated = await mint(k2);
    await refusedBoth(a, rotated, "unknown_key", "denied");
    // past the cooldown it is fetched, and the refused connection fails closed, audited as the server side's fault
    passCooldown();
    await refusedBoth(a, rotated, "key_set_unavailable", "failed");

    jwks.set([k1.jwk, k2.jwk]);
    await jwks.start();
    await acceptedBoth(a, rotated);
    expect(await (await fetch(new URL("/readyz", a.http.url))).json()).toEqual({ status: "ready" });
  });

  it("slow: a key set that never answers is given up after jwks.timeoutMs, refused 401 key_set_timeout (audited failed), while the agent keeps answering; accepted once it answers again", async () => {
    const k1: TestKeys = await makeKeys("k1");
    const jwks = await startJwksServer([k1.jwk]);
    cleanups.push(() => jwks.stop());
    cleanups.push(() => jwks.release());
    jwks.hang();
    const a = await agent(jwks);
    const token = await mint(k1);
    const waiting = refusedBoth(a, token, "key_set_timeout", "failed");
    // while the bearer check waits for the key set, the agent answers other requests
    const health = await fetch(new URL("/healthz", a.http.url));
    expect(health.status).toBe(200);
    await waiting;
    expect(jwks.fetches()).toBeGreaterThanOrEqual(1);

    jwks.release();
    await acceptedBoth(a, token);
  });

  it("rotation: made-up kids cost no fetch within the cooldown; a token of a newly published key is accepted after one re-fetch; a removed key's tokens are refused", async () => {
    const k1 = await makeKeys("k1");
    const k2 = await makeKeys("k2");
    const jwks = await startJwksServer([k1.jwk]);
    cleanups.push(() => jwks.stop());
    const a = await agent(jwks);
    const old = await mint(k1);
    await acceptedBoth(a, old);
    expect(jwks.fetches()).toBe(1);

    // an attacker's tokens with made-up kids: refused, and the authorization server is not asked again
    for (let i = 0; i < 5; i++) {
      const forged = await makeKeys(`forged-${i}`);
      await refusedBoth(a, await mint(forged), "unknown_key", "denied");
    }
    expect(jwks.fetches()).toBe(1);

    // the issuer rotates: k2 published, k1 removed
    jwks.set([k2.jwk]);
    passCooldown();
    await acceptedBoth(a, await mint(k2));
    expect(jwks.fetches()).toBe(2);
    // the old key's token, verified and cached before, is refused now that its key left the set
    await refusedBoth(a, old, "unknown_key", "denied");
  });
});
