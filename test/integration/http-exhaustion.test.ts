/**
 * The agent's edge under exhaustion (issue #25 item 4): slow clients are cut off on a timer (headers trickled byte by
 * byte, a body trickled byte by byte: 408), and requests beyond `maxConcurrentRequests` are refused (503,
 * `Retry-After`), each with one audit record, while the agent keeps serving.
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpApp, HMCPServer, listen, type AuditRecordInput, type AuditSink } from "hmcp";
import { bearerFor, makeKeys, mint } from "../fixtures/bearer.js";

const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

const MODERN = "2026-07-28";

/** An audit sink that keeps records in memory (the HTTP app's refusal records go straight to it). */
function memorySink(records: AuditRecordInput[]): AuditSink {
  return { append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined } as unknown as AuditSink;
}

/** Opens a raw connection and trickles `chunks`, one every `everyMs`, until the server closes it; resolves with what it answered. */
function trickle(port: number, chunks: string[], everyMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, "127.0.0.1");
    let answer = "";
    let i = 0;
    const timer = setInterval(() => {
      if (i < chunks.length && !socket.destroyed) socket.write(chunks[i++]!);
    }, everyMs);
    const guard = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error("the server did not cut the slow client off within 20 s"));
    }, 20_000);
    socket.setEncoding("utf8").on("data", (d: string) => (answer += d));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(guard);
      resolve(answer);
    });
  });
}

describe("slow clients and a full agent", () => {
  it("headers or a body trickled byte by byte are cut off with 408 and one audit record each; a prompt client is served meanwhile", async () => {
    const keys = await makeKeys();
    const records: AuditRecordInput[] = [];
    const server = () => {
      const s = new HMCPServer({ name: "agent", version: "1" }, { guardrails: false });
      s.registerTool("noop", { inputSchema: z.object({}) }, async () => ({ content: [] }));
      return s;
    };
    const http = await listen(createHttpApp({ createServer: server, bearer: bearerFor(keys), audit: memorySink(records) }), { headersTimeoutMs: 400, requestTimeoutMs: 800 });
    closers.push(() => http.close());
    const port = Number(http.url.port);
    const headers = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nX-Slow: ${"a".repeat(200)}\r\n\r\n`.split("");
    const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    const bodyChunks = [`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, ...body.split("")];
    const token = await mint(keys);
    const [slowHeaders, slowBody, prompt] = await Promise.all([
      trickle(port, headers, 50),
      trickle(port, bodyChunks, 50),
      fetch(new URL("/mcp", http.url), {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/list" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
      }),
    ]);
    expect(slowHeaders).toMatch(/^HTTP\/1\.1 408 Request Timeout/);
    expect(slowBody).toMatch(/^HTTP\/1\.1 408 Request Timeout/);
    expect(prompt.status).toBe(200);
    const timeouts = records.filter((r) => r.type === "http" && r.reason === "request_timeout");
    expect(timeouts).toHaveLength(2);
    expect(timeouts.every((r) => r.status === 408 && r.outcome === "denied")).toBe(true);
  });

  it("requests beyond maxConcurrentRequests get 503 with Retry-After and one audit record, on both eras; once one ends, requests are served again", async () => {
    const keys = await makeKeys();
    const records: AuditRecordInput[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered = 0;
    const server = () => {
      const s = new HMCPServer({ name: "agent", version: "1" }, { guardrails: false });
      s.registerTool("hold", { inputSchema: z.object({}) }, async () => {
        entered++;
        await gate;
        return { content: [{ type: "text", text: "released" }] };
      });
      return s;
    };
    const http = await listen(createHttpApp({ createServer: server, bearer: bearerFor(keys), audit: memorySink(records), maxConcurrentRequests: 2 }));
    closers.push(() => http.close());
    const url = new URL("/mcp", http.url);
    const token = await mint(keys);
    const modern = (id: number, name: string) =>
      fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name },
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {}, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
      });
    const held = [modern(1, "hold"), modern(2, "hold")];
    // both held requests are in the tool before the third arrives
    for (let i = 0; i < 500 && entered < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(entered).toBe(2);
    const probe = await modern(3, "hold");
    expect(probe.status).toBe(503);
    expect(probe.headers.get("retry-after")).toBe("1");
    expect(await probe.json()).toMatchObject({ error: { code: -32000 } });
    // the 2025 era shares the cap: initialize is a request too
    const legacy = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } } }),
    });
    expect(legacy.status).toBe(503);
    release();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    expect((await modern(5, "hold")).status).toBe(200);
    const refused = records.filter((r) => r.reason === "too_many_requests");
    expect(refused).toHaveLength(2);
    expect(refused.every((r) => r.status === 503 && r.outcome === "failed")).toBe(true);
    expect(() => createHttpApp({ createServer: server, bearer: false, maxConcurrentRequests: 0 })).toThrow(/maxConcurrentRequests/);
  });
});
