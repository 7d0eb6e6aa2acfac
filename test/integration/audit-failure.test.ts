import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditSinkError, FileAuditSink, HMCPErrorCode, HMCPServer, createHttpApp, listen, type AuditRecordInput, type AuditSink, type Listening } from "hmcp";
import { MCP_HEADERS, openSession } from "../fixtures/raw-http.js";

let http: Listening | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await http?.close();
  http = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Handler runs, over all sessions. */
let handled = 0;
/** A server per session, auditing to `sink`; its sampling handler counts its runs. */
const agentWith = (sink: AuditSink) => () => {
  const server = new HMCPServer({ name: "audited", version: "1" }, { auth: false, audit: sink, guardrails: false });
  server.sampling(async () => {
    handled++;
    return { content: { type: "text", text: "ok" } };
  });
  return server;
};

/** One sampling request on a session; the JSON-RPC reply. */
async function ask(endpoint: URL, sid: string, id: number): Promise<{ result?: unknown; error?: { code: number } }> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, accept: "application/json, text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hello" } }], maxTokens: 5 } }),
  });
  const text = await res.text();
  const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)) as { id?: number; result?: unknown; error?: { code: number } });
  return data.find((m) => m.id === id)!;
}

describe("audit failure over HTTP: fail closed across sessions", () => {
  it("once the shared sink has refused a record, every session refuses requests (handler not run)", async () => {
    let broken = false;
    const sink: AuditSink = {
      append: () => {
        if (broken) throw new Error("disk full");
      },
      flush: async () => undefined,
      close: async () => undefined,
    };
    handled = 0;
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const a = await openSession(endpoint);
    expect((await ask(endpoint, a, 1)).result).toBeDefined();
    broken = true;
    // the request whose record fails is answered (its record is what failed) ...
    expect((await ask(endpoint, a, 2)).result).toBeDefined();
    // ... and from then on no session is served, including one opened afterwards (its own server and pipeline)
    const b = await openSession(endpoint);
    expect((await ask(endpoint, b, 3)).error?.code).toBe(HMCPErrorCode.AuditUnavailable);
    expect((await ask(endpoint, a, 4)).error?.code).toBe(HMCPErrorCode.AuditUnavailable);
    expect(handled).toBe(2);
  });

  it("a sink that reports itself unwritable: new sessions get 503 and open ones -32055 before any handler runs", async () => {
    let broken = false;
    const outcomes: string[] = [];
    const sink: AuditSink = {
      append: (r: AuditRecordInput) => void outcomes.push(`${r.type}:${r.outcome}`),
      assertWritable: () => {
        if (broken) throw new AuditSinkError("write_failed", "audit write failed");
      },
      flush: async () => undefined,
      close: async () => undefined,
    };
    handled = 0;
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const a = await openSession(endpoint);
    broken = true;
    expect((await ask(endpoint, a, 1)).error?.code).toBe(HMCPErrorCode.AuditUnavailable);
    const init = await fetch(endpoint, {
      method: "POST",
      headers: MCP_HEADERS,
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } } }),
    });
    expect(init.status).toBe(503);
    expect(((await init.json()) as { error: { code: number } }).error.code).toBe(HMCPErrorCode.AuditUnavailable);
    expect(handled).toBe(0);
    expect(outcomes.filter((o) => o.startsWith("request:allowed"))).toEqual([]);
  });
});

describe("FileAuditSink.assertWritable", () => {
  it("throws what append would: backpressure while maxQueued records wait, closed after close", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hmcp-audit-writable-"));
    dirs.push(dir);
    const sink = await FileAuditSink.open({ dir, signing: false, durability: { mode: "group", intervalMs: 60_000, maxRecords: 1000 }, maxQueued: 2 });
    const record = (): AuditRecordInput => ({
      v: 1, id: crypto.randomUUID(), time: new Date().toISOString(), type: "request", actor: {}, source: {}, agent: "t",
      patients: [], scopes: [], outcome: "allowed", guardrails: [], latencyMs: 0, digests: {},
    });
    expect(() => sink.assertWritable()).not.toThrow();
    sink.append(record());
    sink.append(record());
    expect(() => sink.assertWritable()).toThrow(expect.objectContaining({ code: "backpressure" }));
    await sink.flush();
    expect(() => sink.assertWritable()).not.toThrow();
    await sink.close();
    expect(() => sink.assertWritable()).toThrow(expect.objectContaining({ code: "closed" }));
  });
});
