/**
 * The resource identifier bound late: `createHttpApp({ bearer: (resource) => authenticator })` lets `listen()` build
 * the bearer check for the URL actually bound (the port chosen by the system), so the audience (RFC 8707) and the
 * protected resource metadata (RFC 9728) name the real endpoint without a wrapper around the authenticator; an app not
 * bound yet refuses requests (503, audited) rather than serving them unchecked.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createHttpApp, createJwtBearerAuthenticator, HMCPConfigError, HMCPServer, listen, type AuditRecordInput, type AuditSink, type Listening } from "hmcp";
import { makeKeys, mint, TEST_ISSUER } from "../fixtures/bearer.js";
import { MCP_HEADERS } from "../fixtures/raw-http.js";

const open: Listening[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) await l.close();
});

const agent = () => new HMCPServer({ name: "late", version: "1.0.0" }).sampling(() => ({ content: { type: "text", text: "ok" }, stopReason: "endTurn" }));
const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });

describe("a bearer factory binds the resource identifier at listen()", () => {
  it("listen() builds the check for the bound URL: the audience and the metadata name the real endpoint", async () => {
    const keys = await makeKeys();
    const seen: string[] = [];
    const app = createHttpApp({
      createServer: agent,
      bearer: (resource) => {
        seen.push(resource.href);
        return createJwtBearerAuthenticator({ issuer: TEST_ISSUER, audience: resource.href, jwks: { keys: { keys: [keys.jwk] } } });
      },
    });
    expect(app.awaitingResource).toBe(true);
    const l = await listen(app);
    open.push(l);
    const resource = new URL("/mcp", l.url).href;
    expect(seen).toEqual([resource]);
    expect(app.awaitingResource).toBe(false);
    const meta = (await (await fetch(new URL("/.well-known/oauth-protected-resource/mcp", l.url))).json()) as { resource: string };
    expect(meta.resource).toBe(resource);
    const ok = await fetch(resource, { method: "POST", headers: { ...MCP_HEADERS, authorization: `Bearer ${await mint(keys, { aud: resource })}` }, body: initialize });
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
    const other = await fetch(resource, { method: "POST", headers: { ...MCP_HEADERS, authorization: `Bearer ${await mint(keys, { aud: "https://elsewhere.example/mcp" })}` }, body: initialize });
    expect(other.status).toBe(401);
    expect(() => app.bindResource!(new URL(l.url))).toThrow(HMCPConfigError);
  });

  it("before it is bound, the endpoint refuses (503, one audit record) and publishes no metadata", async () => {
    const records: AuditRecordInput[] = [];
    const audit = { append: (r: AuditRecordInput) => void records.push(r), flush: async () => {}, close: async () => {} } as unknown as AuditSink;
    const keys = await makeKeys();
    const app = createHttpApp({ createServer: agent, audit, bearer: (resource) => createJwtBearerAuthenticator({ issuer: TEST_ISSUER, audience: resource.href, jwks: { keys: { keys: [keys.jwk] } } }) });
    // served by hand (not through listen): nothing has bound the resource yet
    const server = app.app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const refused = await fetch(`${base}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, authorization: `Bearer ${await mint(keys)}` }, body: initialize });
      expect(refused.status).toBe(503);
      expect((await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).status).toBe(404);
      expect(records.map((r) => [r.status, r.reason])).toEqual([[503, "resource_not_bound"]]);
      // bound by hand: served from then on
      expect(app.bindResource!(new URL(base)).href).toBe(`${base}/mcp`);
      expect((await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).status).toBe(200);
    } finally {
      await app.close();
      await new Promise((r) => server.close(r));
    }
  });

  it("an app with a fixed authenticator or none has nothing to bind", () => {
    const app = createHttpApp({ createServer: agent, bearer: false });
    expect(app.awaitingResource).toBe(false);
    expect(() => app.bindResource!(new URL("http://127.0.0.1:1"))).toThrow(/needs a bearer factory/);
    void app.close();
  });
});
