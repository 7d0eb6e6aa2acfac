/**
 * Token attack suite (issue 3): each case sends one request through createHttpApp + HMCPServer on loopback with a
 * forged, broken or misplaced access token, and asserts the HTTP status, the WWW-Authenticate error, and that the
 * sampling handler never ran. Tokens are signed here with keys generated per run; the JWKS is served over HTTP.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServer, request as httpRequest } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHmac } from "node:crypto";
import { SignJWT, exportJWK, exportSPKI, generateKeyPair } from "jose";
import type { CryptoKey, JWK, JWTPayload } from "jose";
import { HMCPErrorCode, HMCPServer, createHttpApp, createJwtBearerAuthenticator, listen } from "hmcp";
import type { BearerFailureReason, JwtBearerAuthenticator, Listening } from "hmcp";

const ISSUER = "https://as.example.test";
const REQUIRED = ["hmcp:sample", "hmcp:access", "patient/hmcp:read"];

interface Reply {
  status: number;
  www: string | undefined;
  body: string;
}

/** POST with node:http so repeated headers reach the server as separate lines. */
function post(url: URL, headers: Record<string, string | string[]>, body: unknown): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: "POST" }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (data += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, www: res.headers["www-authenticate"], body: data }));
    });
    req.on("error", reject);
    req.setHeader("content-type", "application/json");
    req.setHeader("accept", "application/json, text/event-stream");
    req.setHeader("mcp-protocol-version", "2025-06-18");
    for (const [k, v] of Object.entries(headers)) req.setHeader(k, v);
    req.end(JSON.stringify(body));
  });
}

/** The JSON-RPC message in a JSON or SSE reply body. */
function rpc(reply: Reply): { result?: unknown; error?: { code: number; data?: { reason?: string } } } {
  const dataLine = reply.body.split(/\r?\n/).find((l) => l.startsWith("data: "));
  return JSON.parse(dataLine ? dataLine.slice(6) : reply.body);
}

function challengeParam(www: string | undefined, name: string): string | undefined {
  const m = new RegExp(`${name}="((?:[^"\\\\]|\\\\.)*)"`).exec(www ?? "");
  return m?.[1];
}

interface Fixture {
  http: Listening;
  endpoint: URL;
  auth: JwtBearerAuthenticator;
  ran: () => number;
}

async function startResource(jwksUri: string, resourceBase?: string): Promise<Fixture> {
  let ran = 0;
  const makeServer = () => {
    // Guardrails off: this suite tests the authorization layer alone, independent of the guardrail policy in force.
    const s = new HMCPServer({ name: "attack-target", version: "1.0.0" }, { guardrails: false });
    s.sampling(
      async () => {
        ran++;
        return { content: { type: "text", text: "ok" }, stopReason: "endTurn" };
      },
      { requiredScopes: REQUIRED },
    );
    return s;
  };
  // The resource identifier needs the port, so the app is built after listening on a placeholder.
  const holder: { auth?: JwtBearerAuthenticator } = {};
  const proxyBearer = {
    get resourceMetadataPath() {
      // Known before the port is: RFC 9728 §3.1 path for a resource at "/mcp".
      return holder.auth?.resourceMetadataPath ?? "/.well-known/oauth-protected-resource/mcp";
    },
    resourceMetadata: () => holder.auth!.resourceMetadata(),
    check: (r: Parameters<JwtBearerAuthenticator["check"]>[0]) => holder.auth!.check(r),
  };
  const app = createHttpApp({ createServer: makeServer, bearer: proxyBearer as never, enableJsonResponse: true });
  const http = await listen(app);
  const endpoint = new URL("/mcp", resourceBase ?? http.url);
  holder.auth = createJwtBearerAuthenticator({
    issuer: ISSUER,
    audience: endpoint.href,
    jwks: { uri: jwksUri, cooldownMs: 0, timeoutMs: 2000 },
    requiredScopes: REQUIRED,
    // Sampling here may also be used with the patient-level HMCP scope (patient-bound callers).
    methodScopes: { "sampling/createMessage": REQUIRED },
    resourceMetadata: { scopes_supported: ["hmcp:sample", "hmcp:access", "patient/hmcp:read"] },
  });
  return { http, endpoint, auth: holder.auth, ran: () => ran };
}

async function startJwks(): Promise<{ server: Server; uri: string; set: (keys: JWK[]) => void; fetches: () => number }> {
  let keys: JWK[] = [];
  let fetches = 0;
  const server = createServer((_req, res) => {
    fetches++;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ keys }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const { port } = server.address() as AddressInfo;
  return { server, uri: `http://127.0.0.1:${port}/jwks`, set: (k) => (keys = k), fetches: () => fetches };
}

const b64u = (s: string | Buffer) => Buffer.from(s).toString("base64url");

let keyA: { privateKey: CryptoKey; publicKey: CryptoKey };
let jwkA: JWK;
let jwks: Awaited<ReturnType<typeof startJwks>>;
let fx: Fixture;
let sessionId: string;

async function mint(
  claims: JWTPayload = {},
  opts: { key?: CryptoKey; kid?: string; alg?: string; typ?: string; omit?: string[]; header?: Record<string, unknown> } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload: JWTPayload = {
    iss: ISSUER,
    aud: fx.endpoint.href,
    sub: "orchestrator",
    client_id: "orchestrator",
    scope: "hmcp:sample system/*.rs",
    iat: now,
    exp: now + 300,
    jti: Math.random().toString(36).slice(2),
    ...claims,
  };
  for (const k of opts.omit ?? []) delete payload[k];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: opts.alg ?? "ES256", kid: opts.kid ?? "k1", typ: opts.typ ?? "at+jwt", ...opts.header })
    .sign(opts.key ?? keyA.privateKey);
}

const samplingBody = (patient?: string) => ({
  jsonrpc: "2.0",
  id: 7,
  method: "sampling/createMessage",
  params: {
    messages: [{ role: "user", content: { type: "text", text: "hello" } }],
    maxTokens: 5,
    ...(patient !== undefined && { _meta: { "hmcp/patient": patient } }),
  },
});

async function session(token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(fx.endpoint, { method: "POST" }, (res) => {
      res.resume();
      if (res.statusCode !== 200) {
        reject(new Error(`initialize refused: HTTP ${res.statusCode} ${String(res.headers["www-authenticate"])}`));
        return;
      }
      res.on("end", async () => {
        const sid = String(res.headers["mcp-session-id"]);
        await post(fx.endpoint, { authorization: `Bearer ${token}`, "mcp-session-id": sid }, { jsonrpc: "2.0", method: "notifications/initialized" });
        resolve(sid);
      });
    });
    req.on("error", reject);
    req.setHeader("content-type", "application/json");
    req.setHeader("accept", "application/json, text/event-stream");
    req.setHeader("authorization", `Bearer ${token}`);
    req.end(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "attacker", version: "1" } },
      }),
    );
  });
}

/** Sends a sampling request and asserts it was refused at the bearer check: status, error, and no handler run. */
async function expectRefused(
  headers: Record<string, string | string[]>,
  status: number,
  error: string | undefined,
  opts: { url?: URL; body?: unknown; sid?: string; reason?: BearerFailureReason } = {},
): Promise<Reply> {
  const before = fx.ran();
  const res = await post(opts.url ?? fx.endpoint, { "mcp-session-id": opts.sid ?? sessionId, ...headers }, opts.body ?? samplingBody());
  expect(res.status).toBe(status);
  expect(res.www).toMatch(/^Bearer /);
  expect(challengeParam(res.www, "error")).toBe(error);
  expect(challengeParam(res.www, "resource_metadata")).toBe(new URL("/.well-known/oauth-protected-resource/mcp", fx.endpoint).href);
  expect(fx.ran()).toBe(before);
  if (opts.reason !== undefined) {
    // The same request straight to the authenticator: the machine-readable reason the audit record can carry.
    const url = opts.url ?? fx.endpoint;
    const auth = headers["authorization"];
    const check = await fx.auth.check({
      authorization: auth === undefined ? [] : Array.isArray(auth) ? auth : [auth],
      url: url.pathname + url.search,
      body: opts.body ?? samplingBody(),
    });
    expect(check.ok ? "ok" : check.reason).toBe(opts.reason);
  }
  return res;
}

beforeAll(async () => {
  keyA = await generateKeyPair("ES256", { extractable: true });
  jwkA = { ...(await exportJWK(keyA.publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  jwks = await startJwks();
  jwks.set([jwkA]);
  fx = await startResource(jwks.uri);
  sessionId = await session(await mint());
});

afterAll(async () => {
  await fx?.http.close();
  await new Promise<void>((r) => jwks?.server.close(() => r()));
});

describe("token attack suite (createHttpApp + JWT bearer authenticator)", () => {
  it("control: a valid token reaches the sampling handler", async () => {
    const before = fx.ran();
    const res = await post(fx.endpoint, { authorization: `Bearer ${await mint()}`, "mcp-session-id": sessionId }, samplingBody());
    expect(res.status).toBe(200);
    expect(rpc(res).result).toMatchObject({ content: { text: "ok" } });
    expect(fx.ran()).toBe(before + 1);
  });

  it("1 no credentials → 401 without error code, with resource_metadata and scope", async () => {
    const res = await expectRefused({}, 401, undefined, { reason: "no_credentials" });
    expect(challengeParam(res.www, "scope")).toBe("hmcp:sample hmcp:access patient/hmcp:read");
    expect(res.www).not.toContain("error_description");
    // the body agrees with the challenge: no error code when no credentials were sent (RFC 6750 §3.1); it repeats the
    // resource metadata URL, so a client that sees only the body knows where to discover the authorization server
    expect(JSON.parse(res.body)).toEqual({ error_description: expect.any(String) as unknown, resource_metadata: challengeParam(res.www, "resource_metadata") });
  });

  it("2 alg: none (unsecured JWT) → 401 invalid_token", async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = `${b64u(JSON.stringify({ alg: "none", typ: "at+jwt" }))}.${b64u(
      JSON.stringify({ iss: ISSUER, aud: fx.endpoint.href, client_id: "orchestrator", sub: "orchestrator", scope: "hmcp:sample", exp: now + 300 }),
    )}.`;
    await expectRefused({ authorization: `Bearer ${token}` }, 401, "invalid_token", { reason: "alg_not_allowed" });
  });

  it("3 HS256 signed with the public key as the HMAC secret → 401 invalid_token", async () => {
    const pem = await exportSPKI(keyA.publicKey);
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64u(JSON.stringify({ alg: "HS256", kid: "k1", typ: "at+jwt" }))}.${b64u(
      JSON.stringify({ iss: ISSUER, aud: fx.endpoint.href, client_id: "orchestrator", sub: "orchestrator", scope: "hmcp:sample", exp: now + 300 }),
    )}`;
    const sig = createHmac("sha256", pem).update(input).digest("base64url");
    await expectRefused({ authorization: `Bearer ${input}.${sig}` }, 401, "invalid_token", { reason: "alg_not_allowed" });
  });

  it("4 expired token → 401 invalid_token", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused({ authorization: `Bearer ${await mint({ iat: now - 3600, exp: now - 600 })}` }, 401, "invalid_token", { reason: "expired" });
  });

  it("5 nbf in the future (beyond the clock tolerance) → 401 invalid_token", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused({ authorization: `Bearer ${await mint({ nbf: now + 600 })}` }, 401, "invalid_token", { reason: "not_yet_valid" });
  });

  it("5b iat in the future (beyond the clock tolerance, no maxTokenAgeSec) → 401 invalid_token; within it → accepted", async () => {
    const now = Math.floor(Date.now() / 1000);
    await expectRefused({ authorization: `Bearer ${await mint({ iat: now + 365 * 86_400, exp: now + 366 * 86_400 })}` }, 401, "invalid_token", { reason: "not_yet_valid" });
    const res = await post(fx.endpoint, { authorization: `Bearer ${await mint({ iat: now + 10 })}`, "mcp-session-id": sessionId }, samplingBody());
    expect(res.status).toBe(200);
  });

  it("6 wrong iss → 401 invalid_token", async () => {
    await expectRefused({ authorization: `Bearer ${await mint({ iss: "https://evil.example.test" })}` }, 401, "invalid_token", { reason: "wrong_issuer" });
  });

  it("7 wrong aud → 401 invalid_token", async () => {
    await expectRefused({ authorization: `Bearer ${await mint({ aud: "https://as.example.test/userinfo" })}` }, 401, "invalid_token", { reason: "wrong_audience" });
  });

  it("8 no exp → 401 invalid_token", async () => {
    await expectRefused({ authorization: `Bearer ${await mint({}, { omit: ["exp"] })}` }, 401, "invalid_token", { reason: "invalid_claims" });
  });

  it("9 unknown kid → 401 invalid_token (after one JWKS re-fetch)", async () => {
    const other = await generateKeyPair("ES256");
    const before = jwks.fetches();
    await expectRefused({ authorization: `Bearer ${await mint({}, { key: other.privateKey, kid: "k-unknown" })}` }, 401, "invalid_token", { reason: "unknown_key" });
    expect(jwks.fetches()).toBeGreaterThan(before);
  });

  it("10 payload altered after signing (scope escalation) → 401 invalid_token", async () => {
    const [h, p, s] = (await mint({ scope: "hmcp:read" })).split(".");
    const claims = JSON.parse(Buffer.from(p!, "base64url").toString());
    claims.scope = "hmcp:sample system/*.cruds";
    await expectRefused({ authorization: `Bearer ${h}.${b64u(JSON.stringify(claims))}.${s}` }, 401, "invalid_token", { reason: "bad_signature" });
  });

  it("11 signature stripped → 401 invalid_token", async () => {
    const [h, p] = (await mint()).split(".");
    await expectRefused({ authorization: `Bearer ${h}.${p}.` }, 401, "invalid_token", { reason: "bad_signature" });
  });

  it("12 token issued for another resource (RFC 8707 audience) → 401 invalid_token", async () => {
    await expectRefused({ authorization: `Bearer ${await mint({ aud: ["http://127.0.0.1:1/other-agent/mcp"] })}` }, 401, "invalid_token", { reason: "wrong_audience" });
  });

  it("13 missing scope → 403 insufficient_scope naming the needed scopes", async () => {
    const res = await expectRefused({ authorization: `Bearer ${await mint({ scope: "openid system/*.rs" })}` }, 403, "insufficient_scope", { reason: "insufficient_scope" });
    expect(challengeParam(res.www, "scope")).toBe("hmcp:sample hmcp:access patient/hmcp:read");
  });

  it("14 patient-bound token used for another patient → JSON-RPC PatientContextViolation, handler not run", async () => {
    const token = await mint({ client_id: "patient-app", sub: "patient-app", scope: "patient/hmcp:read patient/*.rs", patient: "p-2" });
    const sid = await session(token);
    const before = fx.ran();
    const res = await post(fx.endpoint, { authorization: `Bearer ${token}`, "mcp-session-id": sid }, samplingBody("p-1"));
    expect(res.status).toBe(200);
    expect(res.www).toBeUndefined();
    expect(rpc(res).error).toMatchObject({ code: HMCPErrorCode.PatientContextViolation, data: { reason: "patient_context_mismatch" } });
    expect(res.body).not.toContain("p-2");
    expect(fx.ran()).toBe(before);
    // control: the same token for its own patient is served
    const ok = await post(fx.endpoint, { authorization: `Bearer ${token}`, "mcp-session-id": sid }, samplingBody("p-2"));
    expect(rpc(ok).result).toBeDefined();
    expect(fx.ran()).toBe(before + 1);
  });

  it("15 patient/ scope without a patient claim grants nothing → 403 insufficient_scope", async () => {
    await expectRefused(
      { authorization: `Bearer ${await mint({ client_id: "patient-app", sub: "patient-app", scope: "patient/hmcp:read patient/*.rs" })}` },
      403,
      "insufficient_scope",
      { reason: "insufficient_scope" },
    );
  });

  it("16 malformed scope strings grant nothing → 403 insufficient_scope", async () => {
    const scope = "hmcp:samples hmcp:access.x patient/hmcp:reed system/Observation.xyz system/*.srcud user/.rs hmcp:";
    await expectRefused({ authorization: `Bearer ${await mint({ scope })}` }, 403, "insufficient_scope", { reason: "insufficient_scope" });
  });

  it("17 token in the query string → 400 invalid_request", async () => {
    const url = new URL(fx.endpoint);
    url.searchParams.set("access_token", await mint());
    const res = await expectRefused({}, 400, "invalid_request", { reason: "token_in_query",  url });
    expect(res.body).not.toContain(url.searchParams.get("access_token"));
  });

  it("18 token in the query string and in the header → 400 invalid_request", async () => {
    const token = await mint();
    const url = new URL(fx.endpoint);
    url.searchParams.set("access_token", token);
    await expectRefused({ authorization: `Bearer ${token}` }, 400, "invalid_request", { reason: "token_in_query",  url });
  });

  it("19 two Authorization headers → 400 invalid_request", async () => {
    const token = await mint();
    await expectRefused({ authorization: [`Bearer ${token}`, `Bearer ${token}`] }, 400, "invalid_request", { reason: "multiple_authorization_headers" });
  });

  it("20 lowercase `bearer` scheme is accepted", async () => {
    const before = fx.ran();
    const res = await post(fx.endpoint, { authorization: `bearer ${await mint()}`, "mcp-session-id": sessionId }, samplingBody());
    expect(res.status).toBe(200);
    expect(fx.ran()).toBe(before + 1);
  });

  it("21 oversized token → 401 invalid_token without a verification attempt", async () => {
    const misses = fx.auth.cacheStats().misses;
    await expectRefused({ authorization: `Bearer ${"a".repeat(9000)}` }, 401, "invalid_token", { reason: "token_too_large" });
    expect(fx.auth.cacheStats().misses).toBe(misses);
  });

  it("22 token signed by an attacker's key under the trusted kid → 401 invalid_token", async () => {
    const evil = await generateKeyPair("ES256");
    await expectRefused({ authorization: `Bearer ${await mint({}, { key: evil.privateKey, kid: "k1" })}` }, 401, "invalid_token", { reason: "bad_signature" });
  });

  it("23 algorithm outside the allow-list (ES512) → 401 invalid_token", async () => {
    const k = await generateKeyPair("ES512");
    await expectRefused({ authorization: `Bearer ${await mint({}, { key: k.privateKey, alg: "ES512" })}` }, 401, "invalid_token", { reason: "alg_not_allowed" });
  });

  it("24 a JWT of another type (typ: dpop+jwt / id token) → 401 invalid_token", async () => {
    await expectRefused({ authorization: `Bearer ${await mint({}, { typ: "dpop+jwt" })}` }, 401, "invalid_token", { reason: "wrong_token_type" });
  });

  it("25 unknown critical header → 401 invalid_token", async () => {
    // jose will not sign an unknown crit, so sign by hand (ES256 over WebCrypto gives the JWS r||s form).
    const now = Math.floor(Date.now() / 1000);
    const input = `${b64u(JSON.stringify({ alg: "ES256", kid: "k1", typ: "at+jwt", crit: ["x-unknown"], "x-unknown": 1 }))}.${b64u(
      JSON.stringify({ iss: ISSUER, aud: fx.endpoint.href, client_id: "orchestrator", sub: "orchestrator", scope: "hmcp:sample", exp: now + 300 }),
    )}`;
    const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, keyA.privateKey, new TextEncoder().encode(input));
    await expectRefused({ authorization: `Bearer ${input}.${b64u(Buffer.from(sig))}` }, 401, "invalid_token", { reason: "malformed_token" });
  });

  it("26 token naming no client (no client_id, azp or sub) → 401 invalid_token", async () => {
    await expectRefused({ authorization: `Bearer ${await mint({}, { omit: ["client_id", "sub"] })}` }, 401, "invalid_token", { reason: "no_client" });
  });

  it("27 other auth scheme (Basic) → 401 without error code", async () => {
    await expectRefused({ authorization: `Basic ${b64u("orchestrator:secret")}` }, 401, undefined, { reason: "no_credentials" });
  });

  it("28 empty bearer token and non-token68 characters → 400 invalid_request", async () => {
    await expectRefused({ authorization: "Bearer " }, 400, "invalid_request", { reason: "empty_token" });
    await expectRefused({ authorization: `Bearer ${await mint()}" , error="none` }, 400, "invalid_request", { reason: "malformed_authorization" });
  });

  it("33 a session belongs to the principal that opened it: another tenant, client or subject gets 404", async () => {
    const sid = await session(await mint({ tenant: "hospital-1" }));
    const send = async (claims: JWTPayload) => (await post(fx.endpoint, { authorization: `Bearer ${await mint(claims)}`, "mcp-session-id": sid }, samplingBody())).status;
    expect(await send({ tenant: "hospital-1" })).toBe(200);
    expect(await send({ tenant: "hospital-2" })).toBe(404);
    expect(await send({})).toBe(404);
    expect(await send({ tenant: "hospital-1", sub: "someone-else" })).toBe(404);
    expect(await send({ tenant: "hospital-1", client_id: "other-client" })).toBe(404);
  });

  it("29 a cached valid token is refused once it expires (the cache honours exp)", async () => {
    const token = await mint({ exp: Math.floor(Date.now() / 1000) + 60 });
    const first = await post(fx.endpoint, { authorization: `Bearer ${token}`, "mcp-session-id": sessionId }, samplingBody());
    expect(first.status).toBe(200);
    const hits = fx.auth.cacheStats().hits;
    expect((await post(fx.endpoint, { authorization: `Bearer ${token}`, "mcp-session-id": sessionId }, samplingBody())).status).toBe(200);
    expect(fx.auth.cacheStats().hits).toBe(hits + 1);
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 120_000); // 60 s past exp, beyond the 30 s tolerance
      await expectRefused({ authorization: `Bearer ${token}` }, 401, "invalid_token", { reason: "expired" });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("JWKS availability and key rotation", () => {
  it("32 once the key set is older than its max age, a cached token is verified again against a re-fetched set", async () => {
    // Own resource (own key-set cache), since this case moves the clock.
    const saved = fx;
    fx = await startResource(jwks.uri);
    try {
      const sid = await session(await mint());
      const now = Math.floor(Date.now() / 1000);
      const token = await mint({ iat: now, exp: now + 3600 });
      const send = () => post(fx.endpoint, { authorization: `Bearer ${token}`, "mcp-session-id": sid }, samplingBody());
      expect((await send()).status).toBe(200);
      const { misses } = fx.auth.cacheStats();
      const fetches = jwks.fetches();
      vi.useFakeTimers({ toFake: ["Date"] });
      try {
        vi.setSystemTime(Date.now() + 11 * 60_000); // past the 10 min default max age
        jwks.set([]); // the issuer withdrew every key meanwhile
        await expectRefused({ authorization: `Bearer ${token}` }, 401, "invalid_token", { reason: "unknown_key",  sid });
        expect(fx.auth.cacheStats().misses).toBeGreaterThan(misses);
        expect(jwks.fetches()).toBeGreaterThan(fetches);
      } finally {
        vi.useRealTimers();
        jwks.set([jwkA]);
      }
    } finally {
      await fx.http.close();
      fx = saved;
    }
  });

  it("30 JWKS endpoint down → 401 invalid_token (fail closed)", async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", () => r()));
    const { port } = dead.address() as AddressInfo;
    await new Promise<void>((r) => dead.close(() => r()));
    const saved = fx;
    fx = await startResource(`http://127.0.0.1:${port}/jwks`);
    try {
      await expectRefused({ authorization: `Bearer ${await mint()}` }, 401, "invalid_token", { reason: "key_set_unavailable",  sid: "no-session" });
    } finally {
      await fx.http.close();
      fx = saved;
    }
  });

  it("31 key rotation: a token signed with the new key is accepted after refresh; the dropped key's tokens are refused", async () => {
    const oldToken = await mint();
    expect((await post(fx.endpoint, { authorization: `Bearer ${oldToken}`, "mcp-session-id": sessionId }, samplingBody())).status).toBe(200);

    const keyB = await generateKeyPair("ES256", { extractable: true });
    const jwkB = { ...(await exportJWK(keyB.publicKey)), kid: "k2", alg: "ES256", use: "sig" };
    jwks.set([jwkB]);
    const newToken = await mint({}, { key: keyB.privateKey, kid: "k2" });
    const before = fx.ran();
    const res = await post(fx.endpoint, { authorization: `Bearer ${newToken}`, "mcp-session-id": sessionId }, samplingBody());
    expect(res.status).toBe(200);
    expect(fx.ran()).toBe(before + 1);

    // The old token was cached as valid; its key left the set, so it is re-verified and refused.
    await expectRefused({ authorization: `Bearer ${oldToken}` }, 401, "invalid_token", { reason: "unknown_key" });
    jwks.set([jwkA]);
  });
});
