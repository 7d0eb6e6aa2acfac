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
import { HMCPServer, SAMPLING_TOOL_NAME, serveStdio, type AuditRecordInput } from "hmcp";

function stdioPair() {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const replies = createInterface({ input: stdout })[Symbol.asyncIterator]();
  const send = (m: object) => stdin.write(`${JSON.stringify(m)}\n`);
  const next = async () => JSON.parse(((await replies.next()).value as string) ?? "null") as { id?: number; result?: Record<string, unknown>; error?: { code: number } };
  return { stdin, stdout, send, next };
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
    for (const call of calls) {
      io.send({ jsonrpc: "2.0", ...call });
      const reply = await io.next();
      expect(reply.id).toBe(call.id);
      expect(reply.error?.code).toBe(-32601);
    }
    io.stdin.end();
    await close();
    // one record per refusal, none of it the SDK's alone
    const refused = audit.filter((r) => r.reason === "method_not_found");
    expect(refused.map((r) => r.method)).toEqual(calls.map((c) => c.method));
    expect(refused.every((r) => r.outcome === "failed")).toBe(true);
  });
});
