import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { createClientCredentialsTokenProvider, createJwtBearerAuthenticator, TokenRequestError } from "../../src/auth/index.js";
import { startDemoAuthorizationServer, defaultDemoClients } from "../../demo/auth-server/index.js";
import { HMCPClient } from "../../src/index.js";
import type { DemoAuthorizationServer } from "../../demo/auth-server/index.js";

const RESOURCE = "http://127.0.0.1:9/mcp";
let as: DemoAuthorizationServer;

beforeAll(async () => {
  as = await startDemoAuthorizationServer({
    resources: [RESOURCE],
    clients: [...defaultDemoClients("p-123"), { clientId: "secret-client", scopes: ["hmcp:read"], clientSecret: "s3cret-demo-value" }],
  });
});
afterAll(async () => {
  await as?.stop();
});

function provider(clientId: string, scope: string, extra: Partial<Parameters<typeof createClientCredentialsTokenProvider>[0]> = {}) {
  const c = as.clients[clientId]!;
  return createClientCredentialsTokenProvider({
    issuer: as.issuer,
    clientId,
    auth: { type: "private_key_jwt", privateKey: c.privateJwk! },
    scope,
    resource: RESOURCE,
    allowInsecureRequests: true,
    ...extra,
  });
}

describe("discovery: what a SMART or OAuth client reads before asking for a token", () => {
  it("serves /.well-known/smart-configuration (SMART App Launch 2.x, Backend Services) and advertises the clients' scopes", async () => {
    const smart = (await (await fetch(`${as.issuer}/.well-known/smart-configuration`)).json()) as Record<string, unknown>;
    expect(smart).toMatchObject({
      issuer: as.issuer,
      jwks_uri: as.jwksUri,
      token_endpoint: as.tokenEndpoint,
      grant_types_supported: ["client_credentials"],
      token_endpoint_auth_methods_supported: ["private_key_jwt", "client_secret_basic"],
      token_endpoint_auth_signing_alg_values_supported: ["ES384", "RS384"],
    });
    expect(smart["capabilities"]).toContain("client-confidential-asymmetric");
    expect(smart["scopes_supported"]).toEqual(expect.arrayContaining(["hmcp:sample", "system/*.rs", "patient/hmcp:read", "hmcp:read"]));
    const oidc = (await (await fetch(`${as.issuer}/.well-known/openid-configuration`)).json()) as { scopes_supported: string[] };
    expect(oidc.scopes_supported).toEqual(smart["scopes_supported"]);
  });

  it("the agent's protected resource metadata lists the scopes its checks name (scopes_supported, RFC 9728 §2)", () => {
    const bearer = createJwtBearerAuthenticator({ issuer: as.issuer, audience: RESOURCE, jwks: { uri: as.jwksUri } });
    const prm = bearer.resourceMetadata();
    expect(prm.scopes_supported).toEqual(expect.arrayContaining(["hmcp:sample", "hmcp:access", "hmcp:read", "hmcp:write", "patient/hmcp:read", "patient/hmcp:write"]));
    // configured metadata wins
    const own = createJwtBearerAuthenticator({ issuer: as.issuer, audience: RESOURCE, jwks: { uri: as.jwksUri }, resourceMetadata: { scopes_supported: ["hmcp:sample"] } });
    expect(own.resourceMetadata().scopes_supported).toEqual(["hmcp:sample"]);
  });
});

describe("demo authorization server + client credentials token provider", () => {
  it("issues an RFC 9068 at+jwt for the orchestrator via private_key_jwt, verified by the JWT authenticator", async () => {
    const tp = provider("orchestrator", "hmcp:sample system/Observation.cu system/*.rs hmcp:access");
    const token = await tp.getToken();
    expect(decodeProtectedHeader(token)).toMatchObject({ typ: "at+jwt", alg: "ES256" });
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ iss: as.issuer, aud: RESOURCE, client_id: "orchestrator", tenant: "demo-hospital" });
    expect(String(claims.scope).split(" ").sort()).toEqual(["hmcp:access", "hmcp:sample", "system/*.rs", "system/Observation.cu"]);

    const auth = createJwtBearerAuthenticator({ issuer: as.issuer, audience: RESOURCE, jwks: { uri: as.jwksUri } });
    const check = await auth.check({ authorization: [`Bearer ${token}`], url: "/mcp" });
    expect(check.ok).toBe(true);
    if (check.ok) expect(check.verified.principal).toMatchObject({ clientId: "orchestrator", scopes: expect.arrayContaining(["hmcp:sample"]) });
  });

  it("caches the token and fetches a new one after invalidate()", async () => {
    const tp = provider("reader", "hmcp:read");
    const before = as.issuedTokens();
    const a = await tp.getToken();
    const b = await tp.getToken();
    expect(b).toBe(a);
    expect(as.issuedTokens()).toBe(before + 1);
    tp.invalidate();
    const c = await tp.getToken();
    expect(c).not.toBe(a);
    expect(as.issuedTokens()).toBe(before + 2);
  });

  it("narrows scopes to what the client is registered for", async () => {
    const token = await provider("reader", "hmcp:read system/Observation.cu").getToken();
    expect(decodeJwt(token).scope).toBe("hmcp:read");
  });

  it("puts the patient claim in patient-bound tokens", async () => {
    const token = await provider("patient-app", "patient/*.rs hmcp:sample").getToken();
    expect(decodeJwt(token)).toMatchObject({ patient: "p-123", fhirUser: "Patient/p-123", client_id: "patient-app" });
  });

  it("accepts the issuer as assertion audience (SEP-1046 profile)", async () => {
    const c = as.clients["orchestrator"]!;
    const tp = provider("orchestrator", "hmcp:sample", { auth: { type: "private_key_jwt", privateKey: c.privateJwk!, audience: "issuer" } });
    expect(decodeJwt(await tp.getToken()).client_id).toBe("orchestrator");
  });

  it("supports client_secret_basic", async () => {
    const tp = createClientCredentialsTokenProvider({
      issuer: as.issuer,
      clientId: "secret-client",
      auth: { type: "client_secret_basic", clientSecret: "s3cret-demo-value" },
      scope: "hmcp:read",
      resource: RESOURCE,
      allowInsecureRequests: true,
    });
    expect(decodeJwt(await tp.getToken()).client_id).toBe("secret-client");
  });

  it("fails with invalid_client when the assertion is signed by another client's key", async () => {
    const tp = provider("orchestrator", "hmcp:sample", {
      auth: { type: "private_key_jwt", privateKey: { ...as.clients["reader"]!.privateJwk!, kid: "orchestrator-key-1" } },
    });
    const err = await tp.getToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TokenRequestError);
    expect((err as TokenRequestError).oauthError).toBe("invalid_client");
  });

  it("HMCPClient.connect rejects with the TokenRequestError itself on every protocol era (not a version-negotiation failure)", async () => {
    for (const protocolEra of ["modern", "auto", "legacy"] as const) {
      const client = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, {
        protocolEra,
        guardrails: false,
        tokenProvider: createClientCredentialsTokenProvider({
          issuer: as.issuer,
          clientId: "secret-client",
          auth: { type: "client_secret_basic", clientSecret: "not-the-secret" },
          scope: "hmcp:read",
          resource: RESOURCE,
          allowInsecureRequests: true,
        }),
      });
      const err = await client.connect({ type: "http", url: RESOURCE }).catch((e: unknown) => e);
      await client.close();
      expect(err, protocolEra).toBeInstanceOf(TokenRequestError);
      expect((err as TokenRequestError).oauthError, protocolEra).toBe("invalid_client");
    }
  });

  it("fails with invalid_target for an unknown resource", async () => {
    const err = await provider("orchestrator", "hmcp:sample", { resource: "http://127.0.0.1:9/other" }).getToken().catch((e: unknown) => e);
    expect((err as TokenRequestError).oauthError).toBe("invalid_target");
  });

  it("refuses plain http issuers unless allowed", async () => {
    const err = await provider("orchestrator", "hmcp:sample", { allowInsecureRequests: false }).getToken().catch((e: unknown) => e);
    expect((err as TokenRequestError).code).toBe("discovery_failed");
  });

  it("key rotation at the real authorization server: new-key tokens verify after a JWKS refresh; withdrawn keys stop verifying", async () => {
    const auth = createJwtBearerAuthenticator({ issuer: as.issuer, audience: RESOURCE, jwks: { uri: as.jwksUri, cooldownMs: 0 } });
    const check = (t: string) => auth.check({ authorization: [`Bearer ${t}`], url: "/mcp" });
    const tp = provider("orchestrator", "hmcp:sample");
    const before = await tp.getToken();
    expect((await check(before)).ok).toBe(true);

    const kid2 = await as.rotateSigningKey();
    tp.invalidate();
    const after = await tp.getToken();
    expect(decodeProtectedHeader(after).kid).toBe(kid2);
    expect((await check(after)).ok).toBe(true); // unknown kid → key set re-fetched
    expect((await check(before)).ok).toBe(true); // previous key still published

    const kid3 = await as.rotateSigningKey({ keepPrevious: false });
    tp.invalidate();
    const latest = await tp.getToken();
    expect(decodeProtectedHeader(latest).kid).toBe(kid3);
    expect((await check(latest)).ok).toBe(true);
    // Both earlier keys were withdrawn: their tokens, though cached as valid, are refused now.
    expect(await check(before)).toMatchObject({ ok: false, status: 401, reason: "unknown_key" });
    expect(await check(after)).toMatchObject({ ok: false, status: 401, reason: "unknown_key" });
  });
});
