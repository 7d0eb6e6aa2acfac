/**
 * The first authenticated call for an engineer's own agent, as the README walks it: `hmcp dev-auth-server` registers
 * the engineer's client for the agent's resource and prints the issuer and credentials; `hmcp token` gets a token the
 * agent's JWT bearer authenticator accepts; HMCPClient with the printed credentials makes an HMCP call.
 */
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createClientCredentialsTokenProvider,
  createHttpApp,
  createJwtBearerAuthenticator,
  HMCPClient,
  HMCPServer,
  listen,
  type Listening,
} from "hmcp";
import { main } from "../../src/cli/main.js";
import { runDevAuthServerCommand } from "../../src/cli/dev-auth-command.js";

interface Printed {
  issuer: string;
  jwksUri: string;
  tokenEndpoint: string;
  clients: Array<{ clientId: string; clientSecret: string; scopes: string[]; patient?: string }>;
}

/**
 * A loopback port held by a placeholder server until `release()`: the agent's URL must be known before the
 * authorization server starts, and that server (listening on port 0) must not be given the same port meanwhile.
 */
async function reservePort(): Promise<{ port: number; release: () => Promise<void> }> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  return { port, release: () => new Promise<void>((r) => s.close(() => r())) };
}

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const stop = new AbortController();
let served: Promise<number>;
let printed: Printed;
let resource: string;
let agent: Listening;

beforeAll(async () => {
  const { port, release } = await reservePort();
  resource = `http://127.0.0.1:${port}/mcp`;
  const lines: string[] = [];
  served = runDevAuthServerCommand(
    ["--resource", resource, "--client", "my-orchestrator=hmcp:sample,hmcp:access", "--client", "my-app=patient/hmcp:read,hmcp:sample@pat-7", "--format", "json"],
    { out: (s) => lines.push(s), err: (s) => lines.push(s) },
    stop.signal,
  );
  while (lines.length === 0) await new Promise((r) => setTimeout(r, 20));
  printed = JSON.parse(lines[0]!) as Printed;
  const bearer = createJwtBearerAuthenticator({ issuer: printed.issuer, audience: resource, jwks: { uri: printed.jwksUri } });
  const app = createHttpApp({
    createServer: () => new HMCPServer({ name: "my-agent", version: "1.0.0" }).sampling(() => ({ content: { type: "text", text: "hello from my agent" }, stopReason: "endTurn" })),
    bearer,
  });
  await release();
  agent = await listen(app, { port });
}, 30_000);

afterAll(async () => {
  await agent?.close();
  stop.abort();
  expect(await served).toBe(0);
});

describe("hmcp dev-auth-server and hmcp token", () => {
  it("prints the issuer and a generated secret per client", () => {
    expect(printed.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(printed.clients.map((c) => [c.clientId, c.scopes, c.patient])).toEqual([
      ["my-orchestrator", ["hmcp:sample", "hmcp:access"], undefined],
      ["my-app", ["patient/hmcp:read", "hmcp:sample"], "pat-7"],
    ]);
    expect(printed.clients[0]!.clientSecret.length).toBeGreaterThanOrEqual(32);
  });

  it("hmcp token prints a token the agent accepts, bound to the client's patient", async () => {
    const orch = printed.clients[0]!;
    const t = await cli("token", "--issuer", printed.issuer, "--client-id", orch.clientId, "--client-secret", orch.clientSecret, "--resource", resource, "--scope", "hmcp:sample hmcp:access");
    expect([t.code, t.err]).toEqual([0, ""]);
    expect(t.out).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const res = await fetch(resource, {
      method: "POST",
      headers: { authorization: `Bearer ${t.out}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } } }),
    });
    expect(res.status).toBe(200);
    await res.body?.cancel();
    const app = printed.clients[1]!;
    const bound = await cli("token", "--issuer", printed.issuer, "--client-id", app.clientId, "--client-secret", app.clientSecret, "--resource", resource, "--scope", "patient/hmcp:read");
    const claims = JSON.parse(Buffer.from(bound.out.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ patient: "pat-7", aud: resource, iss: printed.issuer });
    expect(bound.err).toBe("");
  });

  it("hmcp token warns on stderr when the token lacks a scope it asked for (the client is not registered for it)", async () => {
    const orch = printed.clients[0]!;
    const t = await cli("token", "--issuer", printed.issuer, "--client-id", orch.clientId, "--client-secret", orch.clientSecret, "--resource", resource, "--scope", "hmcp:sample system/Observation.cu");
    expect(t.code).toBe(0);
    expect(t.out).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(t.err).toBe(
      "hmcp token: warning: the token does not carry system/Observation.cu (is the client registered for it?); calls that need it will be refused with insufficient_scope",
    );
  });

  it("HMCPClient with the printed credentials makes an authenticated HMCP call", async () => {
    const orch = printed.clients[0]!;
    const client = new HMCPClient(
      { name: "my-orchestrator", version: "1.0.0" },
      {
        tokenProvider: createClientCredentialsTokenProvider({
          issuer: printed.issuer,
          clientId: orch.clientId,
          auth: { type: "client_secret_basic", clientSecret: orch.clientSecret },
          scope: "hmcp:sample hmcp:access",
          resource,
          allowInsecureRequests: true,
        }),
      },
    );
    await client.connect({ type: "http", url: resource });
    const r = await client.ask("say hello");
    expect(r.content).toEqual({ type: "text", text: "hello from my agent" });
    await client.close();
  });

  it("refusals name their cause: a wrong secret, a missing option, a bad --client", async () => {
    const wrong = await cli("token", "--issuer", printed.issuer, "--client-id", "my-orchestrator", "--client-secret", "nope", "--resource", resource);
    expect(wrong.code).toBe(1);
    expect(wrong.err).toMatch(/invalid_client/);
    expect(wrong.err).not.toContain("nope");
    expect((await cli("token", "--issuer", printed.issuer)).err).toMatch(/--issuer and --client-id are required/);
    expect((await cli("token", "--issuer", "http://example.test", "--client-id", "x", "--client-secret", "s")).err).toMatch(/non-loopback/);
    const none = await runDevAuthServerCommand(["--client", "a=hmcp:sample"], { out: () => {}, err: () => {} });
    expect(none).toBe(2);
    const errs: string[] = [];
    expect(await runDevAuthServerCommand(["--resource", resource, "--client", "a"], { out: () => {}, err: (s) => errs.push(s) })).toBe(2);
    expect(errs.join("\n")).toMatch(/expected <id>=<scope>/);
  });
});
