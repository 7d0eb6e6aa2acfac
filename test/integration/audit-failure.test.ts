import { mkdtempSync, rmSync } from "node:fs";
import { readFile, readdir } from "node:fs/promises";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditSinkError, FileAuditSink, HMCPClient, HMCPErrorCode, HMCPServer, createHttpApp, listen, type AuditRecordInput, type AuditSink, type Listening } from "hmcp";
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

/** A sink that records nothing: `append` throws once `broken()`, or (`viaCheck`) `assertWritable` reports write_failed. */
function switchableSink(broken: () => boolean, viaCheck: boolean, outcomes: string[] = []): AuditSink {
  return {
    append: (r: AuditRecordInput) => {
      if (!viaCheck && broken()) throw new Error("disk full");
      outcomes.push(`${r.type}:${r.outcome}`);
    },
    ...(viaCheck && {
      assertWritable: () => {
        if (broken()) throw new AuditSinkError("write_failed", "audit write failed");
      },
    }),
    flush: async () => undefined,
    close: async () => undefined,
  };
}

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
  it("once the shared sink has refused a record, every session refuses requests (handler not run) and no session opens", async () => {
    let broken = false;
    const sink = switchableSink(() => broken, false);
    handled = 0;
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const a = await openSession(endpoint);
    expect((await ask(endpoint, a, 1)).result).toBeDefined();
    broken = true;
    // the request whose record fails is answered (its record is what failed) ...
    expect((await ask(endpoint, a, 2)).result).toBeDefined();
    // ... and from then on no session is served: the open one refuses requests, a new one is not opened (503)
    expect((await ask(endpoint, a, 3)).error?.code).toBe(HMCPErrorCode.AuditUnavailable);
    await expect(openSession(endpoint)).rejects.toThrow(/initialize failed: 503 .*-32055/);
    expect(handled).toBe(2);
  });

  it("a sink that reports itself unwritable: new sessions get 503 and open ones -32055 before any handler runs", async () => {
    let broken = false;
    const outcomes: string[] = [];
    const sink = switchableSink(() => broken, true, outcomes);
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

describe("audit backpressure (FileAuditSink, maxQueued)", () => {
  it("every answered request has its record; requests beyond the queue's room are refused, and served again once it drains", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "hmcp-audit-backpressure-"));
    dirs.push(dir);
    const sink = await FileAuditSink.open({ dir, signing: false, durability: { mode: "group", intervalMs: 60_000, maxRecords: 1000 }, maxQueued: 3 });
    const server = new HMCPServer({ name: "audited", version: "1" }, { auth: false, audit: sink, guardrails: false });
    server.sampling(async () => {
      await new Promise((r) => setTimeout(r, 30));
      return { content: { type: "text", text: "ok" } };
    });
    const client = new HMCPClient({ name: "c", version: "1" }, { guardrails: false });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    await client.connect({ type: "transport", transport: a });
    const ask = (i: number) =>
      client.createMessage({ messages: [{ role: "user", content: { type: "text", text: `n${i}` } }], maxTokens: 5 }).then(
        () => "served",
        (e: { code?: number }) => String(e.code),
      );
    const first = await Promise.all([0, 1, 2, 3, 4, 5].map(ask));
    expect(first.filter((x) => x === "served")).toHaveLength(3);
    expect(first.filter((x) => x === String(HMCPErrorCode.AuditUnavailable))).toHaveLength(3);
    await sink.flush();
    expect(await ask(6)).toBe("served");
    await client.close();
    await server.close();
    await sink.close();
    const records = (await readFile(path.join(dir, (await readdir(dir)).find((f) => f.endsWith(".jsonl"))!), "utf8"))
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { record: AuditRecordInput }).record);
    // the four answered requests are all in the trail
    expect(records.filter((r) => r.type === "request" && r.outcome === "allowed")).toHaveLength(4);
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
    expect(() => sink.assertWritable(3)).toThrow(expect.objectContaining({ code: "backpressure" }));
    sink.append(record());
    expect(() => sink.assertWritable(1)).not.toThrow();
    sink.append(record());
    expect(() => sink.assertWritable()).toThrow(expect.objectContaining({ code: "backpressure" }));
    await sink.flush();
    expect(() => sink.assertWritable()).not.toThrow();
    await sink.close();
    expect(() => sink.assertWritable()).toThrow(expect.objectContaining({ code: "closed" }));
  });
});
