import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import { HMCPErrorCode, HMCPServer, createHttpApp, listen, type AuditRecordInput, type Listening } from "hmcp";
import { TEST_PRINCIPAL, createEchoAgent } from "../fixtures/echo-agent.js";
import { connectPlainClient } from "../fixtures/harness.js";
import { MCP_HEADERS, openSession, readSse } from "../fixtures/raw-http.js";

let http: Listening | undefined;
afterEach(async () => {
  await http?.close();
  http = undefined;
});

// Transport behaviour, not authorization: no bearer check, and the agent runs with `auth: false` (over HTTP a server's
// localPrincipal does not stand in for a caller).
async function start(options: Partial<Parameters<typeof createHttpApp>[0]> = {}) {
  const app = createHttpApp({ createServer: () => createEchoAgent({ auth: false }), bearer: false, ...options });
  http = await listen(app);
  return { app, endpoint: new URL("/mcp", http.url) };
}

const sessionHeaders = (sid: string) => ({ ...MCP_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" });

describe("Streamable HTTP app", () => {
  it("resumption: a client cut off mid-request reconnects with Last-Event-ID and gets exactly the missed events and the result", async () => {
    const { endpoint } = await start();
    const sid = await openSession(endpoint);
    const abort = new AbortController();
    const res = await fetch(endpoint, {
      method: "POST",
      headers: sessionHeaders(sid),
      signal: abort.signal,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "sampling/createMessage",
        params: { messages: [{ role: "user", content: { type: "text", text: "slow:12" } }], maxTokens: 5, _meta: { progressToken: "p" } },
      }),
    });
    expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
    const first = await readSse(res, (_e, all) => all.filter((x) => x.data.includes("notifications/progress")).length === 3);
    abort.abort();
    const firstProgress = first.filter((e) => e.data.includes("notifications/progress"));
    expect(firstProgress.map((e) => JSON.parse(e.data).params.progress)).toEqual([1, 2, 3]);
    const lastId = firstProgress.at(-1)!.id!;
    expect(lastId).toBeTruthy();

    await new Promise((r) => setTimeout(r, 120)); // the handler keeps running while the client is away
    const resumed = await fetch(endpoint, { method: "GET", headers: { ...sessionHeaders(sid), accept: "text/event-stream", "last-event-id": lastId } });
    expect(resumed.status).toBe(200);
    const rest = await readSse(resumed, (e) => e.data.includes('"result"'));
    const messages = rest.map((e) => JSON.parse(e.data));
    const progress = messages.filter((m) => m.method === "notifications/progress").map((m) => m.params.progress);
    expect(progress).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const result = messages.find((m) => m.id === 7);
    expect(result.result.content.text).toBe("done after 12 steps");
    // event ids only grow, and none was delivered twice
    const ids = [...first, ...rest].map((e) => Number(e.id)).filter((n) => !Number.isNaN(n));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("an unknown Last-Event-ID is refused, not answered with another stream's events", async () => {
    const { endpoint } = await start();
    const sid = await openSession(endpoint);
    const res = await fetch(endpoint, { method: "GET", headers: { ...sessionHeaders(sid), accept: "text/event-stream", "last-event-id": "999999" } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    await res.body?.cancel();
  });

  it("refuses a foreign Host header (DNS rebinding protection)", async () => {
    const { endpoint } = await start();
    // fetch may not set Host (a forbidden header), so use node:http
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(endpoint, { method: "POST", headers: { ...MCP_HEADERS, host: "evil.example:80" } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", reject);
      req.end("{}");
    });
    expect(status).toBe(403);
  });

  it("refuses a body over the limit with 413 and bad JSON with a JSON-RPC parse error", async () => {
    const { endpoint } = await start({ bodyLimitBytes: 1000 });
    const big = await fetch(endpoint, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify({ x: "a".repeat(5000) }) });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { code: number } }).error.code).toBe(-32600);
    const bad = await fetch(endpoint, { method: "POST", headers: MCP_HEADERS, body: "{not json" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  it("answers 404 for an unknown session and 400 for a non-initialize request without one", async () => {
    const { endpoint } = await start();
    const unknown = await fetch(endpoint, { method: "POST", headers: sessionHeaders("nope"), body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
    expect(unknown.status).toBe(404);
    const none = await fetch(endpoint, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
    expect(none.status).toBe(400);
  });

  it("caps the number of sessions and reports them on /healthz; shutdown closes them", async () => {
    const { app, endpoint } = await start({ maxSessions: 2 });
    await openSession(endpoint);
    await openSession(endpoint);
    await expect(openSession(endpoint)).rejects.toThrow(/503/);
    const health = await (await fetch(new URL("/healthz", http!.url))).json();
    expect(health).toEqual({ status: "ok", sessions: 2, ready: true });
    await app.close();
    expect(app.sessionCount).toBe(0);
  });

  it("SSE polling (SEP-1699): a 2025-11-25 client's POST stream opens with a priming event carrying sseRetryMs; an older client's does not", async () => {
    const { endpoint } = await start({ sseRetryMs: 250 });
    const sid = await openSession(endpoint);
    /** The raw text of the POST stream's first SSE event. */
    const firstEvent = async (version: string, id: number) => {
      const res = await fetch(endpoint, {
        method: "POST",
        headers: { ...sessionHeaders(sid), "mcp-protocol-version": version },
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 } }),
      });
      expect(res.headers.get("content-type")).toMatch(/text\/event-stream/);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      while (!/\r?\n\r?\n/.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      await reader.cancel().catch(() => undefined);
      return text.split(/\r?\n\r?\n/)[0]!;
    };
    expect(await firstEvent("2025-11-25", 1)).toMatch(/^id: \S+\nretry: 250\ndata: ?$/);
    const older = await firstEvent("2025-06-18", 2);
    // the first event already carries a message (here the echo agent's own sampling request back to the client)
    expect(older).not.toMatch(/retry:/);
    expect(older).toMatch(/\ndata: \{"/);
  });

  it("DELETE ends a session", async () => {
    const { app, endpoint } = await start();
    const sid = await openSession(endpoint);
    expect(app.sessionCount).toBe(1);
    const del = await fetch(endpoint, { method: "DELETE", headers: sessionHeaders(sid) });
    expect(del.status).toBe(200);
    expect(app.sessionCount).toBe(0);
  });

  it("every refusal before a server (host, body limit, parse error, session) writes one audit record", async () => {
    const records: AuditRecordInput[] = [];
    const sink = { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    const { endpoint } = await start({ bodyLimitBytes: 1000, audit: sink, agentName: "edge" });
    await new Promise<void>((resolve, reject) => {
      const req = request(endpoint, { method: "POST", headers: { ...MCP_HEADERS, host: "evil.example" } }, (res) => {
        res.resume();
        resolve();
      });
      req.on("error", reject);
      req.end("{}");
    });
    await (await fetch(endpoint, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify({ x: "a".repeat(5000) }) })).body?.cancel();
    await (await fetch(endpoint, { method: "POST", headers: MCP_HEADERS, body: "{bad" })).body?.cancel();
    await (await fetch(endpoint, { method: "POST", headers: sessionHeaders("nope"), body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) })).body?.cancel();
    await (await fetch(endpoint, { method: "POST", headers: MCP_HEADERS, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) })).body?.cancel();
    expect(records.map((r) => [r.type, r.status, r.reason, r.outcome, r.agent])).toEqual([
      ["http", 403, "host_not_allowed", "denied", "edge"],
      ["http", 413, "body_too_large", "denied", "edge"],
      ["http", 400, "parse_error", "denied", "edge"],
      ["http", 404, "session_not_found", "denied", "edge"],
      ["http", 400, "no_session", "denied", "edge"],
    ]);
    for (const r of records) expect(r.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("bearer: false: an anonymous request is refused (Unauthenticated), not run as the server's localPrincipal, which stdio and in-memory keep", async () => {
    const records: AuditRecordInput[] = [];
    const ran: Array<string | undefined> = [];
    // One factory for every transport, as an agent serving both stdio and HTTP would have.
    const agent = () =>
      new HMCPServer(
        { name: "two-transport-agent", version: "1" },
        { guardrails: false, auth: { localPrincipal: TEST_PRINCIPAL }, hooks: { audit: (r) => void records.push(r) } },
      ).sampling(async (_p, ctx) => {
        ran.push(ctx.principal?.clientId);
        return { content: { type: "text", text: "ok" }, stopReason: "endTurn" };
      });
    const { endpoint } = await start({ createServer: agent, enableJsonResponse: true });
    const sid = await openSession(endpoint);
    const res = await fetch(endpoint, {
      method: "POST",
      headers: sessionHeaders(sid),
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 } }),
    });
    expect(((await res.json()) as { error?: { code: number } }).error?.code).toBe(HMCPErrorCode.Unauthenticated);
    expect(ran).toEqual([]);
    expect(records.map((r) => [r.transport, r.outcome, r.reason, r.actor])).toEqual([["http", "denied", "unauthenticated", {}]]);

    // The same server in memory runs the request as its localPrincipal.
    const closers: Array<() => Promise<void>> = [];
    const client = await connectPlainClient(agent(), closers, { sampling: {} });
    await client.request({ method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 } });
    for (const c of closers) await c();
    expect(ran).toEqual(["test-client"]);
  });

  it("nor does a server on another HTTP transport (the SDK's web-standard one, for Hono or Workers): localPrincipal is for stdio and in-memory only", async () => {
    const records: AuditRecordInput[] = [];
    const ran: Array<string | undefined> = [];
    const server = new HMCPServer({ name: "edge-agent", version: "1" }, { guardrails: false, auth: { localPrincipal: TEST_PRINCIPAL }, hooks: { audit: (r) => void records.push(r) } }).sampling(async (_p, ctx) => {
      ran.push(ctx.principal?.clientId);
      return { content: { type: "text", text: "ok" }, stopReason: "endTurn" };
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    // an anonymous request: no authInfo reaches the server
    const res = await transport.handleRequest(
      new Request("http://127.0.0.1/mcp", {
        method: "POST",
        headers: MCP_HEADERS,
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 } }),
      }),
    );
    expect(((await res.json()) as { error?: { code: number } }).error?.code).toBe(HMCPErrorCode.Unauthenticated);
    expect(ran).toEqual([]);
    expect(records.map((r) => [r.transport, r.outcome, r.reason])).toEqual([["http", "denied", "unauthenticated"]]);
    await server.close();
  });

  it("requires an explicit bearer choice, and names an unknown option or a bad limit", () => {
    expect(() => createHttpApp({ createServer: () => createEchoAgent() } as never)).toThrow(/'bearer' is required/);
    const base = { createServer: () => createEchoAgent(), bearer: false as const };
    expect(() => createHttpApp({ ...base, bodyLimit: 10 } as never)).toThrow("createHttpApp: unknown option 'bodyLimit'; did you mean 'bodyLimitBytes'?");
    expect(() => createHttpApp({ ...base, bodyLimitBytes: -1 })).toThrow(/'bodyLimitBytes' must be a positive integer/);
    expect(() => createHttpApp({ ...base, maxSessions: 1.5 })).toThrow(/'maxSessions' must be a positive integer/);
    expect(() => createHttpApp({ ...base, path: "mcp" })).toThrow(/'path' must start with '\/'/);
  });
});
