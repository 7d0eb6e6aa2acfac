/**
 * End to end against the real oidc-provider on loopback: demo authorization server → client credentials with
 * private_key_jwt (oauth4webapi) → HMCPClient → createHttpApp + JWT bearer authenticator (jose, remote JWKS) →
 * HMCPServer pipeline → sampling handler.
 */
import { InsufficientScopeError } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProtocolError } from "@modelcontextprotocol/server";
import {
  HMCPClient,
  HMCPError,
  HMCPErrorCode,
  HMCPServer,
  createClientCredentialsTokenProvider,
  createHttpApp,
  createJwtBearerAuthenticator,
  listen,
} from "hmcp";
import type { AuditRecordInput, BearerAuthenticator, JwtBearerOptions, Listening, Principal } from "hmcp";
import { defaultDemoClients, startDemoAuthorizationServer } from "../../demo/auth-server/index.js";
import type { DemoAuthorizationServer } from "../../demo/auth-server/index.js";

const PATIENT = "p-123";

interface Agent {
  http: Listening;
  endpoint: URL;
  ran: string[];
  /** Principals the sampling handler saw, and audit records the pipeline wrote. */
  principals: Principal[];
  records: AuditRecordInput[];
  setAuth(options: Omit<JwtBearerOptions, "audience">): void;
}

/** An agent whose sampling handler writes an Observation for the patient the request names (checked per write). */
async function startAgent(): Promise<Agent> {
  const ran: string[] = [];
  const principals: Principal[] = [];
  const records: AuditRecordInput[] = [];
  const holder: { auth?: BearerAuthenticator } = {};
  const bearer: BearerAuthenticator = {
    get resourceMetadataPath() {
      return holder.auth?.resourceMetadataPath ?? "/.well-known/oauth-protected-resource/mcp";
    },
    resourceMetadata: () => holder.auth!.resourceMetadata(),
    check: (r) => holder.auth!.check(r),
  };
  const app = createHttpApp({
    bearer,
    createServer: () => {
      // Guardrails off: these tests are about authorization alone, independent of the guardrail policy in force.
      const s = new HMCPServer({ name: "emr-writer", version: "1.0.0" }, { guardrails: false, hooks: { audit: (r) => records.push(r) } });
      s.registerTool("write-observation", { description: "writes an Observation" }, async () => {
        ran.push("tool");
        return { content: [{ type: "text", text: "written" }] };
      });
      s.sampling(async (params, ctx) => {
        const patient = (params._meta as Record<string, unknown> | undefined)?.["hmcp/patient"] as string | undefined;
        ctx.require({ action: "c", resourceType: "Observation", ...(patient !== undefined && { patient }) });
        ran.push(ctx.principal?.clientId ?? "?");
        if (ctx.principal) principals.push(ctx.principal);
        return { content: { type: "text", text: `written by ${ctx.principal?.clientId}` }, stopReason: "endTurn" };
      });
      return s;
    },
  });
  const http = await listen(app);
  const endpoint = new URL("/mcp", http.url);
  return {
    http,
    endpoint,
    ran,
    principals,
    records,
    setAuth: (o) => {
      holder.auth = createJwtBearerAuthenticator({ ...o, audience: endpoint.href });
    },
  };
}

let as: DemoAuthorizationServer;
let agent: Agent;
let strict: Agent;
let lenient: Agent;
const clients: HMCPClient[] = [];

function tokenProvider(clientId: string, scope: string, resource: URL) {
  return createClientCredentialsTokenProvider({
    issuer: as.issuer,
    clientId,
    auth: { type: "private_key_jwt", privateKey: as.clients[clientId]!.privateJwk! },
    scope,
    resource: resource.href,
    allowInsecureRequests: true,
  });
}

async function connect(clientId: string, scope: string, target: Agent = agent): Promise<HMCPClient> {
  const c = new HMCPClient({ name: clientId, version: "1.0.0" }, { tokenProvider: tokenProvider(clientId, scope, target.endpoint), guardrails: false });
  await c.connect({ type: "http", url: target.endpoint });
  clients.push(c);
  return c;
}

const message = { messages: [{ role: "user" as const, content: { type: "text" as const, text: "record BP 120/80" } }], maxTokens: 20 };

beforeAll(async () => {
  agent = await startAgent();
  strict = await startAgent();
  lenient = await startAgent();
  as = await startDemoAuthorizationServer({
    resources: [agent.endpoint.href, strict.endpoint.href, lenient.endpoint.href],
    clients: [...defaultDemoClients(PATIENT), { clientId: "sampler-readonly", scopes: ["hmcp:sample", "system/*.rs"] }],
  });
  agent.setAuth({ issuer: as.issuer, jwks: { uri: as.jwksUri } });
  // The strict agent accepts only tokens that may write through HMCP (refused at the HTTP bearer check otherwise).
  strict.setAuth({ issuer: as.issuer, jwks: { uri: as.jwksUri }, requiredScopes: ["hmcp:write", "patient/hmcp:write"] });
  // The lenient agent leaves method scopes to the server pipeline (JSON-RPC errors instead of HTTP 403).
  lenient.setAuth({ issuer: as.issuer, jwks: { uri: as.jwksUri }, methodScopes: false });
});

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await agent?.http.close();
  await strict?.http.close();
  await lenient?.http.close();
  await as?.stop();
});

describe("authorization end to end with oidc-provider", () => {
  it("the orchestrator gets a token with private_key_jwt and calls sampling", async () => {
    const c = await connect("orchestrator", "hmcp:sample hmcp:access system/*.rs system/Observation.cu");
    const r = await c.createMessage(message, { patient: "p-any" });
    expect(r.content).toMatchObject({ type: "text", text: "written by orchestrator" });
    expect(agent.ran).toContain("orchestrator");
  });

  it("a client given only the resource finds the authorization server through RFC 9728 metadata", async () => {
    const tp = createClientCredentialsTokenProvider({
      clientId: "orchestrator",
      auth: { type: "private_key_jwt", privateKey: as.clients["orchestrator"]!.privateJwk! },
      scope: "hmcp:sample system/Observation.cu",
      resource: agent.endpoint.href,
      allowInsecureRequests: true,
    });
    const c = new HMCPClient({ name: "discovering", version: "1" }, { tokenProvider: tp, guardrails: false });
    clients.push(c);
    await c.connect({ type: "http", url: agent.endpoint });
    expect((await c.createMessage(message)).content).toMatchObject({ text: "written by orchestrator" });
  });

  it("serves RFC 9728 metadata naming the demo authorization server", async () => {
    const res = await fetch(new URL("/.well-known/oauth-protected-resource/mcp", agent.endpoint));
    expect(await res.json()).toMatchObject({ resource: agent.endpoint.href, authorization_servers: [as.issuer] });
  });

  it("the read-only client is refused a write at the bearer check: 403 insufficient_scope naming the scope", async () => {
    const token = await tokenProvider("reader", "hmcp:read system/*.rs", strict.endpoint).getToken();
    const before = strict.ran.length;
    const res = await fetch(strict.endpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "r", version: "1" } } }),
    });
    expect(res.status).toBe(403);
    const www = res.headers.get("www-authenticate") ?? "";
    expect(www).toContain('error="insufficient_scope"');
    expect(www).toContain('scope="hmcp:write patient/hmcp:write"');
    expect(www).toContain(`resource_metadata="${new URL("/.well-known/oauth-protected-resource/mcp", strict.endpoint).href}"`);
    expect(strict.ran.length).toBe(before);
    // HMCPClient surfaces the refusal instead of connecting, typed as a refusal inside the pipeline would be
    const refused = await connect("reader", "hmcp:read system/*.rs", strict).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HMCPError);
    expect((refused as HMCPError).code).toBe(HMCPErrorCode.InsufficientScope);
    expect((refused as HMCPError).data).toMatchObject({ reason: "insufficient_scope", required: ["hmcp:write", "patient/hmcp:write"], status: 403 });
  });

  it("the read-only client is refused a write (tools/call) with 403 insufficient_scope naming the scopes", async () => {
    const c = await connect("reader", "hmcp:read system/*.rs");
    const err = await c.sdk.callTool({ name: "write-observation", arguments: {} }).catch((e: unknown) => e);
    // SDK v2 raises a 403 insufficient_scope challenge it cannot step up as InsufficientScopeError, with the scopes
    expect(err).toBeInstanceOf(InsufficientScopeError);
    expect((err as InsufficientScopeError).requiredScope).toBe("hmcp:access hmcp:write patient/hmcp:write");
    // The same request on the wire: the challenge names the scopes that would allow it.
    const token = await tokenProvider("reader", "hmcp:read system/*.rs", agent.endpoint).getToken();
    const res = await fetch(agent.endpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "write-observation", arguments: {} } }),
    });
    expect(res.status).toBe(403);
    const www = res.headers.get("www-authenticate") ?? "";
    expect(www).toContain('error="insufficient_scope"');
    expect(www).toContain('scope="hmcp:access hmcp:write patient/hmcp:write"');
    // through HMCPClient: the typed -32051 with the scopes and where to read the resource's metadata
    const typed = await c.callTool({ name: "write-observation", arguments: {} }).catch((e: unknown) => e);
    expect(typed).toBeInstanceOf(HMCPError);
    expect((typed as HMCPError).code).toBe(HMCPErrorCode.InsufficientScope);
    expect((typed as HMCPError).data).toEqual({
      reason: "insufficient_scope",
      required: ["hmcp:access", "hmcp:write", "patient/hmcp:write"],
      status: 403,
      resourceMetadata: new URL("/.well-known/oauth-protected-resource/mcp", agent.endpoint).href,
    });
  });

  it("a token for another resource reaches HMCPClient as -32054 Unauthenticated naming the expected audience", async () => {
    const c = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, { tokenProvider: tokenProvider("orchestrator", "hmcp:sample", strict.endpoint), guardrails: false });
    clients.push(c);
    const err = await c.connect({ type: "http", url: agent.endpoint }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HMCPError);
    expect((err as HMCPError).code).toBe(HMCPErrorCode.Unauthenticated);
    expect((err as HMCPError).data).toMatchObject({ reason: "invalid_token", status: 401, description: expect.stringContaining(`expected audience ${agent.endpoint.href}`) });
  });

  it("with HTTP method checks off, the server's method check refuses the write as JSON-RPC InsufficientScope", async () => {
    const c = await connect("reader", "hmcp:read system/*.rs", lenient);
    const err = await c.sdk.callTool({ name: "write-observation", arguments: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe(HMCPErrorCode.InsufficientScope);
    expect((err as ProtocolError).data).toMatchObject({ reason: "insufficient_scope", required: expect.arrayContaining(["hmcp:write"]) });
  });

  it("a client that may sample but not write FHIR is refused the Observation write by the handler check", async () => {
    const before = agent.ran.length;
    const c = await connect("sampler-readonly", "hmcp:sample system/*.rs");
    const err = await c.createMessage(message, { patient: "p-1" }).catch((e: unknown) => e);
    expect((err as ProtocolError).code).toBe(HMCPErrorCode.InsufficientScope);
    expect((err as ProtocolError).data).toMatchObject({ reason: "insufficient_scope", required: expect.arrayContaining(["system/Observation.c"]) });
    expect(agent.ran.length).toBe(before);
  });

  it("the patient-bound client is served for its own patient and refused another patient", async () => {
    const c = await connect("patient-app", "hmcp:sample patient/*.rs patient/Observation.c");
    const ok = await c.createMessage(message, { patient: PATIENT });
    expect(ok.content).toMatchObject({ text: "written by patient-app" });
    // The launch context, fhirUser, tenant and subject reach the handler and the audit record.
    expect(agent.principals.at(-1)).toMatchObject({ clientId: "patient-app", sub: "patient-app", patient: PATIENT, fhirUser: `Patient/${PATIENT}`, tenant: "demo-hospital", issuer: as.issuer });
    expect(agent.records.at(-1)).toMatchObject({
      method: "sampling/createMessage",
      outcome: "allowed",
      actor: { clientId: "patient-app", sub: "patient-app", fhirUser: `Patient/${PATIENT}`, tenant: "demo-hospital" },
    });
    const before = agent.ran.length;
    const err = await c.createMessage(message, { patient: "p-999" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe(HMCPErrorCode.PatientContextViolation);
    expect(JSON.stringify((err as ProtocolError).data)).not.toContain(PATIENT);
    expect(agent.ran.length).toBe(before);
    expect(agent.records.at(-1)).toMatchObject({ outcome: "denied", reason: "patient_context_mismatch", actor: { clientId: "patient-app" } });
  });

  it("a token for another resource is refused (RFC 8707 audience), and the client retries once with a fresh token", async () => {
    const wrong = tokenProvider("orchestrator", "hmcp:sample", strict.endpoint);
    let calls = 0;
    const c = new HMCPClient(
      { name: "confused", version: "1" },
      {
        tokenProvider: {
          getToken: () => {
            calls++;
            return wrong.getToken();
          },
          invalidate: () => wrong.invalidate(),
        },
      },
    );
    await expect(c.connect({ type: "http", url: agent.endpoint })).rejects.toThrow();
    expect(calls).toBe(2);
  });
});
