/**
 * RFC 7662 introspection verifier against the real oidc-provider: opaque tokens, revocation, audience, fail closed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as oauth from "oauth4webapi";
import { importJWK } from "jose";
import { HMCPClient, HMCPServer, createClientCredentialsTokenProvider, createHttpApp, createIntrospectionAuthenticator, listen } from "hmcp";
import type { BearerAuthenticator, Listening } from "hmcp";
import { defaultDemoClients, startDemoAuthorizationServer } from "../../demo/auth-server/index.js";
import type { DemoAuthorizationServer } from "../../demo/auth-server/index.js";

const OPAQUE = "http://127.0.0.1:9/opaque-agent/mcp";
const OTHER = "http://127.0.0.1:9/other-agent/mcp";
let as: DemoAuthorizationServer;

beforeAll(async () => {
  as = await startDemoAuthorizationServer({
    resources: [{ identifier: OPAQUE, format: "opaque" }, { identifier: OTHER, format: "opaque" }],
    clients: [...defaultDemoClients("p-1"), { clientId: "opaque-agent", scopes: [], introspect: true }],
  });
});
afterAll(async () => {
  await as?.stop();
});

const token = (resource = OPAQUE, clientId = "orchestrator", scope = "hmcp:sample hmcp:access") =>
  createClientCredentialsTokenProvider({
    issuer: as.issuer,
    clientId,
    auth: { type: "private_key_jwt", privateKey: as.clients[clientId]!.privateJwk! },
    scope,
    resource,
    allowInsecureRequests: true,
  }).getToken();

const authenticator = (extra: Partial<Parameters<typeof createIntrospectionAuthenticator>[0]> = {}) =>
  createIntrospectionAuthenticator({
    issuer: as.issuer,
    audience: OPAQUE,
    clientId: "opaque-agent",
    auth: { type: "private_key_jwt", privateKey: as.clients["opaque-agent"]!.privateJwk! },
    allowInsecureRequests: true,
    cacheTtlSec: 0,
    ...extra,
  });

const check = (a: ReturnType<typeof authenticator>, t: string) => a.check({ authorization: [`Bearer ${t}`], url: "/mcp" });

describe("createIntrospectionAuthenticator", () => {
  it("accepts an active opaque token for this resource and builds the principal from the answer", async () => {
    const t = await token(OPAQUE, "patient-app", "hmcp:sample patient/*.rs");
    expect(t.split(".").length).toBe(1); // opaque, not a JWT
    const r = await check(authenticator(), t);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.verified.principal).toMatchObject({ clientId: "patient-app", patient: "p-1", scopes: ["hmcp:sample", "patient/*.rs"] });
  });

  it("refuses a revoked token", async () => {
    const t = await token();
    const a = authenticator();
    expect((await check(a, t)).ok).toBe(true);
    const server = await oauth.processDiscoveryResponse(
      new URL(as.issuer),
      await oauth.discoveryRequest(new URL(as.issuer), { [oauth.allowInsecureRequests]: true }),
    );
    const key = (await importJWK(as.clients["orchestrator"]!.privateJwk!, "ES384")) as oauth.CryptoKey;
    const res = await oauth.revocationRequest(server, { client_id: "orchestrator" }, oauth.PrivateKeyJwt({ key, kid: "orchestrator-key-1" }), t, {
      [oauth.allowInsecureRequests]: true,
    });
    await oauth.processRevocationResponse(res);
    expect(await check(a, t)).toMatchObject({ ok: false, status: 401, error: "invalid_token", description: "The access token is not active" });
  });

  it("refuses a token issued for another resource", async () => {
    expect(await check(authenticator(), await token(OTHER))).toMatchObject({ ok: false, status: 401, error: "invalid_token" });
  });

  it("refuses garbage and fails closed when the introspecting client cannot authenticate", async () => {
    expect(await check(authenticator(), "not-a-real-token")).toMatchObject({ ok: false, error: "invalid_token" });
    const wrongKey = authenticator({ auth: { type: "private_key_jwt", privateKey: { ...as.clients["reader"]!.privateJwk!, kid: "opaque-agent-key-1" } } });
    expect(await check(wrongKey, await token())).toMatchObject({ ok: false, status: 401, error: "invalid_token" });
  });

  it("refuses introspection by a client that is not a registered resource server", async () => {
    const a = authenticator({ clientId: "reader", auth: { type: "private_key_jwt", privateKey: as.clients["reader"]!.privateJwk! } });
    expect((await check(a, await token())).ok).toBe(false);
  });
});

describe("opaque tokens through createHttpApp + HMCPClient", () => {
  it("a revoked token gets 401; the client drops it, fetches a new one and the retry succeeds", async () => {
    // An agent whose resource identifier is known only after it listens; the AS above does not know it, so start one.
    const holder: { auth?: BearerAuthenticator } = {};
    const bearer: BearerAuthenticator = {
      get resourceMetadataPath() {
        return "/.well-known/oauth-protected-resource/mcp";
      },
      resourceMetadata: () => holder.auth!.resourceMetadata(),
      check: (r) => holder.auth!.check(r),
    };
    let ran = 0;
    const http: Listening = await listen(
      createHttpApp({
        bearer,
        createServer: () =>
          new HMCPServer({ name: "opaque-agent", version: "1" }, { guardrails: false }).sampling(async () => {
            ran++;
            return { content: { type: "text", text: "ok" }, stopReason: "endTurn" };
          }),
      }),
    );
    const endpoint = new URL("/mcp", http.url);
    const server = await startDemoAuthorizationServer({
      resources: [{ identifier: endpoint.href, format: "opaque" }],
      clients: [...defaultDemoClients("p-1"), { clientId: "opaque-agent", scopes: [], introspect: true }],
    });
    try {
      holder.auth = createIntrospectionAuthenticator({
        issuer: server.issuer,
        audience: endpoint.href,
        clientId: "opaque-agent",
        auth: { type: "private_key_jwt", privateKey: server.clients["opaque-agent"]!.privateJwk! },
        allowInsecureRequests: true,
        cacheTtlSec: 0,
      });
      const inner = createClientCredentialsTokenProvider({
        issuer: server.issuer,
        clientId: "orchestrator",
        auth: { type: "private_key_jwt", privateKey: server.clients["orchestrator"]!.privateJwk! },
        scope: "hmcp:sample",
        resource: endpoint.href,
        allowInsecureRequests: true,
      });
      const handed: string[] = [];
      const client = new HMCPClient(
        { name: "orchestrator", version: "1" },
        { guardrails: false, tokenProvider: { getToken: async () => (handed.push(await inner.getToken()), handed.at(-1)!), invalidate: () => inner.invalidate() } },
      );
      await client.connect({ type: "http", url: endpoint });
      const ask = () => client.createMessage({ messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 });
      expect((await ask()).content).toMatchObject({ text: "ok" });

      // Revoke the token the client holds.
      const as = await oauth.processDiscoveryResponse(new URL(server.issuer), await oauth.discoveryRequest(new URL(server.issuer), { [oauth.allowInsecureRequests]: true }));
      const key = (await importJWK(server.clients["orchestrator"]!.privateJwk!, "ES384")) as oauth.CryptoKey;
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, { client_id: "orchestrator" }, oauth.PrivateKeyJwt({ key, kid: "orchestrator-key-1" }), handed.at(-1)!, {
          [oauth.allowInsecureRequests]: true,
        }),
      );
      const before = ran;
      const distinct = new Set(handed).size;
      expect((await ask()).content).toMatchObject({ text: "ok" });
      expect(ran).toBe(before + 1);
      expect(new Set(handed).size).toBe(distinct + 1);
      await client.close();
    } finally {
      await http.close();
      await server.stop();
    }
  });
});
