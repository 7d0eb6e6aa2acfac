/**
 * Malformed input never crashes the server: random and malformed JSON-RPC over HTTP and stdio always gets a
 * well-formed JSON-RPC error (or result, for a request that happens to be valid) or an HTTP 4xx, and the server
 * keeps serving afterwards.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { HMCPClient, createHttpApp, listen } from "hmcp";
import { createEchoAgent } from "../fixtures/echo-agent.js";
import { MCP_HEADERS, openSession, readSse } from "../fixtures/raw-http.js";
import { REPO_ROOT } from "../fixtures/harness.js";
import { testAuth } from "../fixtures/bearer.js";

const METHODS = ["sampling/createMessage", "tools/call", "tools/list", "resources/read", "prompts/get", "initialize", "ping", "elicitation/create", "nope/x", ""];

/** Arbitrary bodies: broken JSON text, arbitrary JSON, and JSON-RPC-shaped messages with wrong types. */
const body = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 4 }),
  fc
    .record(
      {
        jsonrpc: fc.oneof(fc.constant("2.0"), fc.string({ maxLength: 4 }), fc.integer()),
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null), fc.boolean(), fc.object()),
        method: fc.oneof(fc.constantFrom(...METHODS), fc.string({ maxLength: 30 }), fc.integer()),
        params: fc.oneof(fc.object({ maxDepth: 3 }), fc.array(fc.anything(), { maxLength: 5 }), fc.string(), fc.integer(), fc.constant(null)),
      },
      { requiredKeys: [] },
    )
    .map((o) => JSON.stringify(o)),
  fc.constantFrom('{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"' + "x".repeat(200_000) + '"}}],"maxTokens":1}}'),
);

function isJsonRpcReply(m: unknown): boolean {
  if (!m || typeof m !== "object") return false;
  const o = m as Record<string, unknown>;
  if (o["jsonrpc"] !== "2.0") return false;
  if ("error" in o) {
    const e = o["error"] as Record<string, unknown>;
    return Number.isInteger(e?.["code"]) && typeof e?.["message"] === "string";
  }
  return "result" in o;
}

describe("malformed input", () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of closers) await c();
  });

  it("over HTTP: every reply is a JSON-RPC error/result or a 4xx, never a 5xx, and the server keeps serving", async () => {
    // A real bearer check and token: the fuzzed requests reach the pipeline as an authenticated caller, its scope and
    // patient checks included.
    const auth = await testAuth();
    const http = await listen(createHttpApp({ createServer: () => createEchoAgent(), bearer: auth.bearer, bodyLimitBytes: 100_000 }));
    closers.push(() => http.close());
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint, auth.headers);
    await fc.assert(
      fc.asyncProperty(body, fc.boolean(), async (text, withSession) => {
        const res = await fetch(endpoint, {
          method: "POST",
          headers: { ...MCP_HEADERS, ...auth.headers, ...(withSession && { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" }) },
          body: text,
          signal: AbortSignal.timeout(10_000),
        });
        expect(res.status).toBeLessThan(500);
        if (res.status === 202) return; // a notification was accepted
        const type = res.headers.get("content-type") ?? "";
        if (type.includes("text/event-stream")) {
          const events = await readSse(res, (e) => /"(result|error)"/.test(e.data));
          const last = JSON.parse(events.at(-1)!.data);
          expect(isJsonRpcReply(last)).toBe(true);
        } else {
          const reply = (await res.json()) as any;
          if (res.status >= 400 && !("jsonrpc" in reply)) expect(typeof reply.error).toBe("string");
          else for (const m of Array.isArray(reply) ? reply : [reply]) expect(isJsonRpcReply(m)).toBe(true);
        }
      }),
      { numRuns: 150, seed: 20261122 },
    );
    const client = new HMCPClient({ name: "after-fuzz", version: "1" }, { tokenProvider: auth.tokenProvider, onSampling: async () => ({ role: "assistant", model: "m", content: { type: "text", text: "ok" } }), onElicitation: async () => ({ action: "accept", content: { approved: true } }) });
    await client.connect({ type: "http", url: endpoint });
    closers.push(() => client.close());
    expect((await client.ask("need-info")).stopReason).toBe("infoNeeded");
  });

  it("over stdio: every line gets a JSON-RPC reply (or none, for notifications), and the process keeps serving", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("../fixtures/stdio-echo-agent.ts", import.meta.url))], {
      cwd: REPO_ROOT,
      stdio: ["pipe", "pipe", "pipe"],
    });
    closers.push(async () => {
      child.kill();
    });
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on("line", (l) => lines.push(l));
    const waitFor = async (pred: () => boolean, ms = 10_000) => {
      const end = Date.now() + ms;
      while (!pred()) {
        if (Date.now() > end) throw new Error("timeout waiting for stdio reply");
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const send = (s: string) => child.stdin!.write(s.replace(/\n/g, " ") + "\n");
    send(JSON.stringify({ jsonrpc: "2.0", id: "init", method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "fuzz", version: "1" } } }));
    await waitFor(() => lines.some((l) => l.includes('"init"')));
    send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        send(text);
        // a marker request after each input proves the process is alive and answering in order
        const marker = `m-${Math.random().toString(36).slice(2)}`;
        send(JSON.stringify({ jsonrpc: "2.0", id: marker, method: "ping" }));
        await waitFor(() => lines.some((l) => l.includes(marker)));
      }),
      { numRuns: 100, seed: 20261122 },
    );
    expect(child.exitCode).toBeNull();
    for (const l of lines) {
      const m = JSON.parse(l);
      if ("method" in m) continue; // a server → client request or notification
      expect(isJsonRpcReply(m)).toBe(true);
    }
    send(JSON.stringify({ jsonrpc: "2.0", id: "final", method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "need-info" } }], maxTokens: 5 } }));
    await waitFor(() => lines.some((l) => l.includes('"final"')));
    expect(JSON.parse(lines.find((l) => l.includes('"final"'))!).result.stopReason).toBe("infoNeeded");
  });
});
