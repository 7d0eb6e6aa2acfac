/**
 * serveStdio serves both protocol eras on one stdin/stdout: the opening message picks the era. A client whose
 * `server/discover` probe is refused (a revision the server does not speak) and which then opens with `initialize`
 * (2025) gets the agent in its 2025 shape: no sampling tool it did not ask for, unknown methods through the HMCP
 * pipeline, client → server sampling/createMessage served. (The SDK refuses such a probe before it builds an instance,
 * and a probe it accepts pins the connection to 2026-07-28, where initialize is not a method.)
 */
import { PassThrough } from "node:stream";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { HMCPServer, SAMPLING_TOOL_NAME, serveStdio, type AuditRecordInput } from "hmcp";

function stdioPair() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const replies = createInterface({ input: stdout })[Symbol.asyncIterator]();
  const send = (m: object) => stdin.write(`${JSON.stringify(m)}\n`);
  const next = async () => JSON.parse(((await replies.next()).value as string) ?? "null") as { id?: number; result?: Record<string, unknown>; error?: { code: number } };
  return { stdin, stdout, send, next };
}

/** Sends each call in turn and expects its reply to be the JSON-RPC error `code` for that id. */
async function expectRefused(io: ReturnType<typeof stdioPair>, calls: Array<{ id: number; method: string; params: object }>, code: number): Promise<void> {
  for (const call of calls) {
    io.send({ jsonrpc: "2.0", ...call });
    const reply = await io.next();
    expect(reply.id).toBe(call.id);
    expect(reply.error?.code).toBe(code);
  }
}

describe("serveStdio, both eras", () => {
  it("a refused server/discover probe followed by initialize leaves no modern-era state on the 2025 connection", async () => {
    const audit: AuditRecordInput[] = [];
    const server = new HMCPServer({ name: "agent", version: "1" }, { guardrails: false, auth: { localPrincipal: { clientId: "local", scopes: ["hmcp:access", "hmcp:sample"] } }, hooks: { audit: (r) => audit.push(r) } });
    server.sampling(() => ({ content: { type: "text", text: "ok" }, stopReason: "endTurn" }));
    const io = stdioPair();
    const close = await serveStdio(server, { stdin: io.stdin, stdout: io.stdout });
    io.send({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {} } } });
    // a revision this server does not speak: -32022 naming the ones it does; the client then opens with initialize
    const refused = await io.next();
    expect(refused.error?.code).toBe(-32022);

    io.send({ jsonrpc: "2.0", id: 2, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } } });
    const init = await io.next();
    expect(init.result?.["protocolVersion"]).toBe("2025-11-25");
    io.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    io.send({ jsonrpc: "2.0", id: 3, method: "tools/list", params: {} });
    const tools = (await io.next()).result?.["tools"] as Array<{ name: string }> | undefined;
    expect((tools ?? []).map((t) => t.name)).not.toContain(SAMPLING_TOOL_NAME);
    io.send({ jsonrpc: "2.0", id: 4, method: "no/such/method", params: {} });
    expect((await io.next()).error?.code).toBe(-32601);
    // the unknown method went through the pipeline (2025 era): one record
    expect(audit.filter((r) => r.method === "no/such/method").map((r) => r.reason)).toEqual(["method_not_found"]);
    io.send({ jsonrpc: "2.0", id: 5, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 } });
    expect((await io.next()).result?.["content"]).toEqual({ type: "text", text: "ok" });
    io.stdin.end();
    await close();
  });

  it("2026-07-28: tasks/* and other unknown methods on a server without tasks are -32601 with one audit record each (method_not_found)", async () => {
    const audit: AuditRecordInput[] = [];
    const server = new HMCPServer({ name: "agent", version: "1" }, { guardrails: false, auth: { localPrincipal: { clientId: "local", scopes: ["hmcp:access"] } }, hooks: { audit: (r) => audit.push(r) } });
    const io = stdioPair();
    const close = await serveStdio(server, { stdin: io.stdin, stdout: io.stdout });
    const meta = (extensions: Record<string, object>) => ({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { extensions } });
    io.send({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: meta({}) } });
    expect((await io.next()).result).toBeDefined();
    const calls = [
      { id: 2, method: "tasks/get", params: { taskId: "t-1", _meta: meta({ "io.modelcontextprotocol/tasks": {} }) } },
      { id: 3, method: "tasks/cancel", params: { taskId: "t-1", _meta: meta({ "io.modelcontextprotocol/tasks": {} }) } },
      { id: 4, method: "tasks/update", params: { taskId: "t-1", inputResponses: {}, _meta: meta({ "io.modelcontextprotocol/tasks": {} }) } },
      // a client that did not declare the extension: the same answer over stdio
      { id: 5, method: "tasks/get", params: { taskId: "t-2", _meta: meta({}) } },
      { id: 6, method: "no/such/method", params: { _meta: meta({}) } },
    ];
    await expectRefused(io, calls, -32601);
    io.stdin.end();
    await close();
    // one record per refusal, none of it the SDK's alone
    const refused = audit.filter((r) => r.reason === "method_not_found");
    expect(refused.map((r) => r.method)).toEqual(calls.map((c) => c.method));
    expect(refused.every((r) => r.outcome === "failed")).toBe(true);
  });
  it("2026-07-28: what the SDK refuses itself before any handler (earlier revisions' methods, an unsupported revision, a malformed envelope) gets its error and exactly one audit record", async () => {
    const audit: AuditRecordInput[] = [];
    const server = new HMCPServer({ name: "agent", version: "1" }, { guardrails: false, auth: { localPrincipal: { clientId: "local", scopes: ["hmcp:access"] } }, hooks: { audit: (r) => audit.push(r) } });
    server.registerTool("echo", { description: "echo" }, () => ({ content: [{ type: "text", text: "ok" }] }));
    const io = stdioPair();
    const close = await serveStdio(server, { stdin: io.stdin, stdout: io.stdout });
    const meta = (version = "2026-07-28") => ({ "io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {} });
    // the opening message claims a revision the server does not speak: refused by the SDK's stdio entry
    io.send({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: meta("2099-01-01") } });
    expect((await io.next()).error?.code).toBe(-32022);
    io.send({ jsonrpc: "2.0", id: 2, method: "server/discover", params: { _meta: meta() } });
    expect((await io.next()).result).toBeDefined();
    const PHI = "Patient John Smith, MRN 12345";
    const calls = [
      // methods of earlier revisions that 2026-07-28 removed: refused by the SDK's dispatch, before any handler
      { id: 3, method: "tasks/list", params: { _meta: meta() }, code: -32601, reason: "method_not_found" },
      { id: 4, method: "tasks/result", params: { taskId: "t-1", _meta: meta() }, code: -32601, reason: "method_not_found" },
      { id: 5, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: PHI } }], maxTokens: 5, _meta: meta() }, code: -32601, reason: "method_not_found" },
      { id: 6, method: "resources/subscribe", params: { uri: "file:///x", _meta: meta() }, code: -32601, reason: "method_not_found" },
      { id: 7, method: "roots/list", params: { _meta: meta() }, code: -32601, reason: "method_not_found" },
      // a 2025-era handshake on a 2026-07-28 connection
      { id: 8, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: PHI, version: "1" } }, code: -32022, reason: "unsupported_protocol_version" },
      // no per-request envelope / a malformed one
      { id: 9, method: "tools/call", params: { name: "echo", arguments: { note: PHI } }, code: -32602, reason: "invalid_envelope" },
      { id: 10, method: "tools/list", params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } }, code: -32602, reason: "invalid_envelope" },
    ];
    for (const call of calls) {
      const { code: _code, reason: _reason, ...message } = call;
      io.send({ jsonrpc: "2.0", ...message });
      const reply = await io.next();
      expect(reply.id).toBe(call.id);
      expect(reply.error?.code).toBe(call.code);
    }
    // served by the pipeline as before: its own record, not a second one
    io.send({ jsonrpc: "2.0", id: 11, method: "tools/call", params: { name: "echo", arguments: {}, _meta: meta() } });
    expect((await io.next()).result).toBeDefined();
    io.stdin.end();
    await close();
    const requests = audit.filter((r) => r.type === "request");
    expect(requests.find((r) => r.requestId === 1)).toMatchObject({ method: "server/discover", outcome: "failed", reason: "unsupported_protocol_version", status: -32022, transport: "stdio" });
    for (const call of calls) {
      const records = requests.filter((r) => r.requestId === call.id);
      expect(records, `${call.method} (${call.id})`).toHaveLength(1);
      expect(records[0]).toMatchObject({ method: call.method, outcome: "failed", reason: call.reason, status: call.code, transport: "stdio", actor: { clientId: "local" } });
    }
    expect(requests.filter((r) => r.requestId === 11).map((r) => r.outcome)).toEqual(["allowed"]);
    // identifiers and codes only, never the request's content
    expect(JSON.stringify(audit)).not.toContain("John Smith");
  });
  it("2025-11-25: a 2026-07-28 method the SDK refuses itself gets -32601 and exactly one audit record, through serveStdio and a StdioServerTransport connected directly", async () => {
    for (const direct of [false, true]) {
      const audit: AuditRecordInput[] = [];
      const server = new HMCPServer({ name: "agent", version: "1" }, { guardrails: false, auth: { localPrincipal: { clientId: "local", scopes: ["hmcp:access"] } }, hooks: { audit: (r) => audit.push(r) } });
      const io = stdioPair();
      const close = direct
        ? (await server.connect(new StdioServerTransport(io.stdin, io.stdout)), () => server.close())
        : await serveStdio(server, { stdin: io.stdin, stdout: io.stdout });
      io.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } } });
      expect((await io.next()).result?.["protocolVersion"]).toBe("2025-11-25");
      io.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      const calls = [
        { id: 2, method: "server/discover", params: {} },
        { id: 3, method: "no/such/method", params: {} },
      ];
      await expectRefused(io, calls, -32601);
      io.stdin.end();
      await close();
      for (const call of calls) {
        const records = audit.filter((r) => r.type === "request" && r.requestId === call.id);
        expect(records.map((r) => [r.method, r.reason, r.outcome, r.transport]), `${call.method}, direct: ${direct}`).toEqual([[call.method, "method_not_found", "failed", "stdio"]]);
      }
      // the handshake is not a refusal: no record of it
      expect(audit.filter((r) => r.requestId === 1)).toEqual([]);
    }
  });
});
