/**
 * The framework-free pieces of the bearer check: token extraction (RFC 6750 §2), challenge formatting (RFC 6750 §3,
 * RFC 9728 §5.1), metadata paths (RFC 9728 §3.1), construction-time option checks, and the authenticator on a local
 * key set.
 */
import { describe, expect, it, vi } from "vitest";
import { validateHeaderValue } from "node:http";
import fc from "fast-check";
import { SignJWT, exportJWK, generateKeyPair } from "jose";
import {
  createJwtBearerAuthenticator,
  extractBearerToken,
  formatBearerChallenge,
  principalFromClaims,
  resourceMetadataPathFor,
  resourceMetadataUrlFor,
} from "hmcp";

describe("extractBearerToken", () => {
  const ok = (authorization: string[], url = "/mcp", extra: { contentType?: string; body?: unknown } = {}) =>
    extractBearerToken({ authorization, url, ...extra }, 100);

  it("takes the token from one Authorization header, scheme case-insensitive", () => {
    expect(ok(["Bearer abc.def-ghi_jk~l+/="])).toEqual({ kind: "token", token: "abc.def-ghi_jk~l+/=" });
    expect(ok(["bEaReR  abc  "])).toEqual({ kind: "token", token: "abc" });
  });

  it("no header or another scheme is 'no credentials'", () => {
    expect(ok([])).toEqual({ kind: "none" });
    expect(ok(["Basic Zm9vOmJhcg=="])).toEqual({ kind: "none" });
  });

  it("refuses query-string and form-body tokens, two headers, empty and malformed tokens", () => {
    expect(ok(["Bearer a"], "/mcp?x=1&access_token=abc")).toMatchObject({ status: 400, error: "invalid_request" });
    expect(ok([], "/mcp", { contentType: "application/x-www-form-urlencoded; charset=utf-8", body: "access_token=abc" })).toMatchObject({
      status: 400,
      error: "invalid_request",
    });
    expect(ok([], "/mcp", { contentType: "application/x-www-form-urlencoded", body: { access_token: "abc" } })).toMatchObject({ status: 400 });
    expect(ok(["Bearer a", "Bearer b"])).toMatchObject({ status: 400, error: "invalid_request" });
    expect(ok(["Bearer"])).toMatchObject({ status: 400, error: "invalid_request" });
    expect(ok(["Bearer a b"])).toMatchObject({ status: 400, error: "invalid_request" });
    expect(ok([`Bearer ${"x".repeat(101)}`])).toMatchObject({ status: 401, error: "invalid_token" });
  });

  it("does not mistake a JSON body field for a form token", () => {
    expect(ok(["Bearer a"], "/mcp", { contentType: "application/json", body: { access_token: "x" } })).toEqual({ kind: "token", token: "a" });
  });
});

describe("formatBearerChallenge", () => {
  it("quotes values and strips characters RFC 6750 forbids, so nothing can break out of the header", () => {
    const h = formatBearerChallenge({
      resourceMetadata: 'https://x/.well-known/oauth-protected-resource/a"b\\c',
      error: "invalid_token",
      errorDescription: 'bad "token"\r\nSet-Cookie: a=b \\ é',
      scope: 'hmcp:sample "x"',
    });
    expect(h).toBe(
      'Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/a\\"b\\\\c", error="invalid_token", error_description="bad tokenSet-Cookie: a=b  ", scope="hmcp:sample x"',
    );
    expect(h).not.toMatch(/[\r\n]/);
  });
});

describe("formatBearerChallenge (fuzzed)", () => {
  it("always yields one valid header value with exactly the parameters given, whatever the strings", () => {
    const challenge = /^Bearer [a-z_]+="(?:[^"\\]|\\.)*"(?:, [a-z_]+="(?:[^"\\]|\\.)*")*$/;
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 60 }), fc.string({ unit: "binary", maxLength: 60 }), fc.string({ maxLength: 60 }), (d, sc, rm) => {
        const h = formatBearerChallenge({ resourceMetadata: rm, error: "invalid_token", errorDescription: d, ...(sc && { scope: sc }) });
        expect(() => validateHeaderValue("www-authenticate", h)).not.toThrow();
        expect(h).toMatch(challenge);
        const names = [...h.matchAll(/(?:^Bearer |, )([a-z_]+)="/g)].map((m) => m[1]);
        expect(names.slice(0, 3)).toEqual(["resource_metadata", "error", "error_description"]);
        expect(names.length).toBeLessThanOrEqual(4);
      }),
      { numRuns: 500 },
    );
  });
});

describe("resource metadata location (RFC 9728 §3.1)", () => {
  it.each([
    ["https://agent.example/mcp", "/.well-known/oauth-protected-resource/mcp"],
    ["https://agent.example/", "/.well-known/oauth-protected-resource"],
    ["https://agent.example", "/.well-known/oauth-protected-resource"],
    ["http://127.0.0.1:3001/agents/emr/mcp/", "/.well-known/oauth-protected-resource/agents/emr/mcp"],
  ])("%s → %s", (resource, path) => {
    expect(resourceMetadataPathFor(resource)).toBe(path);
    expect(resourceMetadataUrlFor(resource)).toBe(new URL(path, resource).href);
  });
  it("refuses relative identifiers and fragments", () => {
    expect(() => resourceMetadataPathFor("/mcp")).toThrow(TypeError);
    expect(() => resourceMetadataPathFor("https://a/mcp#x")).toThrow(/fragment/);
  });
});

describe("createJwtBearerAuthenticator options", () => {
  const base = { issuer: "https://as", audience: "https://rs/mcp", jwks: { keys: { keys: [] } } };
  it.each([["none"], ["HS256"], ["hs512"]])("refuses algorithm %s", (alg) => {
    expect(() => createJwtBearerAuthenticator({ ...base, algorithms: [alg] })).toThrow(/not allowed/);
  });
  it("says the audience is the resource identifier when it is not an http(s) URL", () => {
    expect(() => createJwtBearerAuthenticator({ ...base, audience: "urn:labs" })).toThrow(/resource identifier \(the authenticator's audience\) must be an http\(s\) URL/);
  });
  it("names a mistyped required scope instead of refusing every request", () => {
    expect(() => createJwtBearerAuthenticator({ ...base, requiredScopes: ["hmcp:acess"] })).toThrow(/requiredScopes: invalid scope "hmcp:acess"/);
    expect(() => createJwtBearerAuthenticator({ ...base, methodScopes: { "tools/call": ["system/Observation.write?x=1"] } })).toThrow(/tools\/call/);
    expect(() => createJwtBearerAuthenticator({ ...base, requiredScopes: ["hmcp:access", "openid"] })).not.toThrow();
  });
  it("names an unknown option", () => {
    expect(() => createJwtBearerAuthenticator({ ...base, audiance: "x" } as never)).toThrow("createJwtBearerAuthenticator: unknown option 'audiance'; did you mean 'audience'?");
  });
  it("refuses a plain-http JWKS URI except on loopback", () => {
    expect(() => createJwtBearerAuthenticator({ ...base, jwks: { uri: "http://as.example/jwks" } })).toThrow(/https/);
    expect(() => createJwtBearerAuthenticator({ ...base, jwks: { uri: "http://127.0.0.1:9/jwks" } })).not.toThrow();
    expect(() => createJwtBearerAuthenticator({ ...base, jwks: { uri: "https://as.example/jwks" } })).not.toThrow();
  });
  it("refuses symmetric or private keys in a local key set", () => {
    expect(() => createJwtBearerAuthenticator({ ...base, jwks: { keys: { keys: [{ kty: "oct", k: "c2VjcmV0" }] } } })).toThrow(/symmetric/);
    expect(() => createJwtBearerAuthenticator({ ...base, jwks: { keys: { keys: [{ kty: "EC", crv: "P-256", x: "a", y: "b", d: "c" }] } } })).toThrow(/public/);
  });
});

describe("JWT authenticator on a local key set", () => {
  it("verifies, caches by token string, and serves the RFC 9728 document", async () => {
    const { privateKey, publicKey } = await generateKeyPair("EdDSA", { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: "ed" };
    const auth = createJwtBearerAuthenticator({
      issuer: "https://as",
      audience: "https://rs/mcp",
      jwks: { keys: { keys: [jwk] } },
      resourceMetadata: { scopes_supported: ["hmcp:sample"] },
    });
    const token = await new SignJWT({ client_id: "c", scope: "hmcp:sample", patient: "p9", fhirUser: "Practitioner/1", tenant: "t" })
      .setProtectedHeader({ alg: "EdDSA", kid: "ed", typ: "application/at+jwt" })
      .setIssuer("https://as")
      .setAudience(["https://rs/mcp", "https://other"])
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
    const a = await auth.check({ authorization: [`Bearer ${token}`], url: "/mcp" });
    const b = await auth.check({ authorization: [`Bearer ${token}`], url: "/mcp" });
    expect(a.ok && b.ok).toBe(true);
    if (a.ok) expect(a.verified.principal).toMatchObject({ clientId: "c", patient: "p9", fhirUser: "Practitioner/1", tenant: "t", issuer: "https://as" });
    expect(auth.cacheStats()).toEqual({ hits: 1, misses: 1, size: 1 });
    expect(auth.resourceMetadataPath).toBe("/.well-known/oauth-protected-resource/mcp");
    expect(auth.resourceMetadata()).toEqual({
      resource: "https://rs/mcp",
      authorization_servers: ["https://as"],
      bearer_methods_supported: ["header"],
      scopes_supported: ["hmcp:sample"],
    });
  });

  it("requireAtJwtTyp accepts only at+jwt (RFC 9068 §4)", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const keys = { keys: [{ ...(await exportJWK(publicKey)), kid: "k" }] };
    const mint = (typ?: string) =>
      new SignJWT({ client_id: "c" }).setProtectedHeader({ alg: "ES256", kid: "k", ...(typ && { typ }) }).setIssuer("https://as").setAudience("https://rs/mcp").setExpirationTime("5m").sign(privateKey);
    const strict = createJwtBearerAuthenticator({ issuer: "https://as", audience: "https://rs/mcp", jwks: { keys }, requireAtJwtTyp: true });
    const lax = createJwtBearerAuthenticator({ issuer: "https://as", audience: "https://rs/mcp", jwks: { keys } });
    const ok = async (a: typeof strict, typ?: string) => (await a.check({ authorization: [`Bearer ${await mint(typ)}`], url: "/mcp" })).ok;
    expect([await ok(strict, "at+jwt"), await ok(strict, "application/at+jwt"), await ok(strict, "JWT"), await ok(strict)]).toEqual([true, true, false, false]);
    expect([await ok(lax, "JWT"), await ok(lax), await ok(lax, "logout+jwt")]).toEqual([true, true, false]);
  });

  it("maxTokenAgeSec holds for cached tokens too: a token verified once is refused once it is too old", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const auth = createJwtBearerAuthenticator({
      issuer: "https://as",
      audience: "https://rs/mcp",
      jwks: { keys: { keys: [{ ...(await exportJWK(publicKey)), kid: "k" }] } },
      maxTokenAgeSec: 60,
      clockToleranceSec: 0,
    });
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ client_id: "c" }).setProtectedHeader({ alg: "ES256", kid: "k" }).setIssuer("https://as").setAudience("https://rs/mcp").setIssuedAt(now - 50).setExpirationTime(now + 3600).sign(privateKey);
    const check = () => auth.check({ authorization: [`Bearer ${token}`], url: "/mcp" });
    expect((await check()).ok).toBe(true);
    expect((await check()).ok).toBe(true);
    expect(auth.cacheStats()).toMatchObject({ hits: 1, misses: 1 });
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 20_000); // the token is now 70 s old; exp is an hour away
      const late = await check();
      expect(late.ok).toBe(false);
      if (!late.ok) expect(late.status).toBe(401);
    } finally {
      vi.useRealTimers();
    }
  });

  it("verifies a token once when many requests present it at the same time", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const auth = createJwtBearerAuthenticator({ issuer: "https://as", audience: "https://rs/mcp", jwks: { keys: { keys: [{ ...(await exportJWK(publicKey)), kid: "k" }] } } });
    const token = await new SignJWT({ client_id: "c" }).setProtectedHeader({ alg: "ES256", kid: "k" }).setIssuer("https://as").setAudience("https://rs/mcp").setExpirationTime("5m").sign(privateKey);
    const results = await Promise.all(Array.from({ length: 20 }, () => auth.check({ authorization: [`Bearer ${token}`], url: "/mcp" })));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(auth.cacheStats().misses).toBe(1);
  });

  it("applies method scopes to a JSON-RPC body (batch included) when the HTTP layer passes it", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const auth = createJwtBearerAuthenticator({ issuer: "https://as", audience: "https://rs/mcp", jwks: { keys: { keys: [{ ...(await exportJWK(publicKey)), kid: "k" }] } } });
    const token = await new SignJWT({ client_id: "reader", scope: "hmcp:read system/*.rs" })
      .setProtectedHeader({ alg: "ES256", kid: "k" })
      .setIssuer("https://as")
      .setAudience("https://rs/mcp")
      .setExpirationTime("5m")
      .sign(privateKey);
    const read = await auth.check({ authorization: [`Bearer ${token}`], url: "/mcp", body: { jsonrpc: "2.0", id: 1, method: "resources/read", params: {} } });
    expect(read.ok).toBe(true);
    const write = await auth.check({
      authorization: [`Bearer ${token}`],
      url: "/mcp",
      body: [{ jsonrpc: "2.0", id: 1, method: "resources/read" }, { jsonrpc: "2.0", id: 2, method: "tools/call" }],
    });
    expect(write).toMatchObject({ ok: false, status: 403, error: "insufficient_scope", scope: "hmcp:access hmcp:write patient/hmcp:write" });
    // The server's own requirement for a method (e.g. a sampling handler's requiredScopes) replaces the default table.
    const sampling = { jsonrpc: "2.0", id: 3, method: "sampling/createMessage" };
    expect((await auth.check({ authorization: [`Bearer ${token}`], url: "/mcp", body: sampling })).ok).toBe(false);
    const serverScopes = (m: string) => (m === "sampling/createMessage" ? ["hmcp:read"] : undefined);
    const own = await auth.check({ authorization: [`Bearer ${token}`], url: "/mcp", body: sampling, methodScopes: serverScopes });
    expect(own.ok).toBe(true);
    // ... but not an entry configured in the authenticator's methodScopes: the token must satisfy both.
    const configured = createJwtBearerAuthenticator({
      issuer: "https://as",
      audience: "https://rs/mcp",
      jwks: { keys: { keys: [{ ...(await exportJWK(publicKey)), kid: "k" }] } },
      methodScopes: { "sampling/createMessage": ["hmcp:sample"] },
    });
    expect(await configured.check({ authorization: [`Bearer ${token}`], url: "/mcp", body: sampling, methodScopes: serverScopes })).toMatchObject({
      ok: false,
      status: 403,
      scope: "hmcp:sample",
    });
  });
});

describe("principalFromClaims", () => {
  it("reads scp arrays and falls back from client_id to azp to sub", () => {
    expect(principalFromClaims({ azp: "a", sub: "s", scp: ["hmcp:read", 3] })).toMatchObject({ clientId: "a", sub: "s", scopes: ["hmcp:read"] });
    expect(principalFromClaims({ sub: "s" })).toMatchObject({ clientId: "s" });
    expect(principalFromClaims({ scope: "hmcp:read" })).toBeUndefined();
  });
  it("drops patient/ scopes when the token has no patient claim", () => {
    expect(principalFromClaims({ client_id: "c", scope: "patient/*.rs hmcp:sample patient/hmcp:read system/Patient.rs" })?.scopes).toEqual([
      "hmcp:sample",
      "system/Patient.rs",
    ]);
    expect(principalFromClaims({ client_id: "c", patient: "p", scope: "patient/*.rs" })?.scopes).toEqual(["patient/*.rs"]);
  });
});
