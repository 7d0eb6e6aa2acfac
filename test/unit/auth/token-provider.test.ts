/**
 * The client credentials token provider against a minimal local token endpoint that records what it receives:
 * the SMART Backend Services client assertion, resource indicator and scope, caching, refresh before expiry,
 * one request for concurrent callers, and error mapping.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createServer } from "node:http";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify } from "jose";
import type { CryptoKey, JWK } from "jose";
import { createClientCredentialsTokenProvider, TokenRequestError } from "hmcp";

let server: Server;
let base: string;
const seen: URLSearchParams[] = [];
const seenAuth: Array<string | undefined> = [];
let reply: { status: number; body: Record<string, unknown> } = { status: 200, body: {} };
let issued = 0;
let publicKey: CryptoKey;
let privateJwk: JWK;

beforeAll(async () => {
  const pair = await generateKeyPair("ES384", { extractable: true });
  publicKey = pair.publicKey;
  privateJwk = { ...(await exportJWK(pair.privateKey)), kid: "client-key-7" };
  server = createServer((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      seen.push(new URLSearchParams(data));
      seenAuth.push(req.headers.authorization);
      issued++;
      res.statusCode = reply.status;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(reply.status === 200 ? { access_token: `tok-${issued}`, token_type: "Bearer", expires_in: 300, ...reply.body } : reply.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

function provider(extra: Partial<Parameters<typeof createClientCredentialsTokenProvider>[0]> = {}) {
  return createClientCredentialsTokenProvider({
    issuer: base,
    authorizationServer: { issuer: base, token_endpoint: `${base}/oauth/token` },
    clientId: "backend-svc",
    auth: { type: "private_key_jwt", privateKey: privateJwk },
    scope: ["system/Observation.rs", "hmcp:sample"],
    resource: "https://agent.example/mcp",
    allowInsecureRequests: true,
    ...extra,
  });
}

describe("createClientCredentialsTokenProvider", () => {
  it("sends a SMART Backend Services client assertion, the scope and the resource indicator", async () => {
    reply = { status: 200, body: {} };
    seen.length = 0;
    await provider().getToken();
    const form = seen[0]!;
    expect(form.get("grant_type")).toBe("client_credentials");
    expect(form.get("scope")).toBe("system/Observation.rs hmcp:sample");
    expect(form.get("resource")).toBe("https://agent.example/mcp");
    expect(form.get("client_assertion_type")).toBe("urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
    const assertion = form.get("client_assertion")!;
    expect(decodeProtectedHeader(assertion)).toMatchObject({ alg: "ES384", kid: "client-key-7" });
    const { payload } = await jwtVerify(assertion, publicKey, { audience: `${base}/oauth/token`, issuer: "backend-svc", subject: "backend-svc" });
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
    expect(typeof payload.jti).toBe("string");
  });

  it("uses a fresh jti each time and the issuer as audience when asked (SEP-1046)", async () => {
    seen.length = 0;
    const p = provider({ auth: { type: "private_key_jwt", privateKey: privateJwk, audience: "issuer" } });
    await p.getToken();
    p.invalidate();
    await p.getToken();
    const [a, b] = seen.map((f) => decodeJwt(f.get("client_assertion")!));
    expect(a!.aud).toBe(base);
    expect(a!.jti).not.toBe(b!.jti);
  });

  it("caches, shares one request among concurrent callers, and refreshes before expiry", async () => {
    seen.length = 0;
    const p = provider({ refreshSkewSec: 60 });
    const [x, y, z] = await Promise.all([p.getToken(), p.getToken(), p.getToken()]);
    expect(new Set([x, y, z]).size).toBe(1);
    expect(seen.length).toBe(1);
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 200_000); // 100 s before expiry: still cached
      expect(await p.getToken()).toBe(x);
      vi.setSystemTime(Date.now() + 50_000); // inside the 60 s refresh window
      expect(await p.getToken()).not.toBe(x);
      expect(seen.length).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("reuses short-lived tokens for half their lifetime instead of refetching every time", async () => {
    reply = { status: 200, body: { expires_in: 30 } };
    seen.length = 0;
    const p = provider({ refreshSkewSec: 60 });
    const a = await p.getToken();
    expect(await p.getToken()).toBe(a);
    expect(seen.length).toBe(1);
    reply = { status: 200, body: {} };
  });

  it("supports client_secret_basic", async () => {
    seenAuth.length = 0;
    await provider({ auth: { type: "client_secret_basic", clientSecret: "pa:ss" } }).getToken();
    expect(seenAuth[0]).toBe(`Basic ${Buffer.from("backend%2Dsvc:pa%3Ass") /* RFC 6749 §2.3.1 form-encodes both */.toString("base64")}`);
  });

  it("maps an OAuth error response to TokenRequestError with the error code and no secrets", async () => {
    reply = { status: 400, body: { error: "invalid_scope", error_description: "nope" } };
    const err = await provider({ auth: { type: "client_secret_basic", clientSecret: "top-secret-value" } }).getToken().catch((e: unknown) => e);
    reply = { status: 200, body: {} };
    expect(err).toBeInstanceOf(TokenRequestError);
    expect(err).toMatchObject({ code: "token_request_failed", oauthError: "invalid_scope", status: 400 });
    expect(String((err as Error).message)).not.toContain("top-secret-value");
  });

  it("refuses non-Bearer tokens, assertion lifetimes over 5 minutes, and keys without kid", async () => {
    reply = { status: 200, body: { token_type: "DPoP" } };
    await expect(provider().getToken()).rejects.toMatchObject({ code: "token_request_failed" });
    reply = { status: 200, body: {} };
    await expect(provider({ auth: { type: "private_key_jwt", privateKey: privateJwk, assertionLifetimeSec: 301 } }).getToken()).rejects.toMatchObject({
      code: "invalid_configuration",
    });
    const { kid: _kid, ...noKid } = privateJwk;
    await expect(provider({ auth: { type: "private_key_jwt", privateKey: noKid } }).getToken()).rejects.toMatchObject({ code: "invalid_configuration" });
  });

  it("names an unknown option at construction", () => {
    expect(() => provider({ scopes: "x" } as never)).toThrow("createClientCredentialsTokenProvider: unknown option 'scopes'; did you mean 'scope'?");
  });

  it("never sends a client secret to an authorization server the resource names, unless it is in trustedIssuers", async () => {
    // a hostile resource whose RFC 9728 metadata names a hostile authorization server (this file's token endpoint)
    const hostile = createServer((req, res) => {
      const me = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
      res.setHeader("content-type", "application/json");
      // it names an unknown server first (nothing listens on port 1) and this file's token endpoint second
      if (req.url === "/.well-known/oauth-protected-resource/mcp") res.end(JSON.stringify({ resource: `${me}/mcp`, authorization_servers: ["http://127.0.0.1:1", base] }));
      else res.writeHead(404).end("{}");
    });
    await new Promise<void>((r) => hostile.listen(0, "127.0.0.1", () => r()));
    const resource = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/mcp`;
    try {
      const secret = { type: "client_secret_basic" as const, clientSecret: "hospital-secret" };
      const discovered = (extra: object) =>
        createClientCredentialsTokenProvider({ clientId: "orchestrator", auth: secret, resource, allowInsecureRequests: true, ...extra });
      expect(() => discovered({})).toThrow(TokenRequestError);
      expect(() => discovered({})).toThrow(/set issuer or trustedIssuers/);
      seenAuth.length = 0;
      // a trusted list without the named server: refused before any request reaches that server
      await expect(discovered({ trustedIssuers: ["https://as.hospital.example"] }).getToken()).rejects.toThrow(/no authorization server that is in trustedIssuers/);
      expect(seenAuth).toEqual([]);
      // with the second named server trusted, discovery picks it and goes on to its metadata (which this server lacks)
      await expect(discovered({ trustedIssuers: [base] }).getToken()).rejects.toThrow(/Authorization server metadata discovery failed/);
      // private_key_jwt may follow discovery: its assertion is bound to the server it goes to (aud) and short-lived
      const viaKey = createClientCredentialsTokenProvider({ clientId: "orchestrator", auth: { type: "private_key_jwt", privateKey: privateJwk }, resource, allowInsecureRequests: true });
      await expect(viaKey.getToken()).rejects.toThrow(/Authorization server metadata discovery failed/);
    } finally {
      await new Promise<void>((r) => hostile.close(() => r()));
    }
  });

  it("says how to allow an http: issuer when discovery refuses it", async () => {
    const p = createClientCredentialsTokenProvider({ issuer: base, clientId: "x", auth: { type: "private_key_jwt", privateKey: privateJwk } });
    await expect(p.getToken()).rejects.toThrow(/http: URL \(set allowInsecureRequests for loopback tests only\)/);
  });

  it("fails discovery cleanly when the issuer serves no metadata", async () => {
    const p = createClientCredentialsTokenProvider({
      issuer: base,
      clientId: "x",
      auth: { type: "client_secret_basic", clientSecret: "s" },
      allowInsecureRequests: true,
    });
    await expect(p.getToken()).rejects.toMatchObject({ code: "discovery_failed" });
  });
});
