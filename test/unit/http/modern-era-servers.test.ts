/**
 * The modern era's per-request servers (src/http/modern-era.ts): each is matched to its HTTP request (by the tag `serve`
 * sets in a request header) and released once its request is done, so the set shutdown drains (`ModernEra.servers()`)
 * does not grow with the requests served; also when the endpoint is served without the JSON body parser (the adapter
 * then reads the body itself: the parsed-body identity the match relied on before did not hold there).
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import express from "express";
import { createServer as createNodeServer } from "node:http";
import type { AddressInfo } from "node:net";
import { HMCPServer, type AuditRecordInput } from "../../../src/index.js";
import { ModernEra } from "../../../src/http/modern-era.js";
import { LegacySessions } from "../../../src/http/legacy-sessions.js";
import { RefusalAudit, timing } from "../../../src/http/refusal-audit.js";

const MODERN = "2026-07-28";
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

function setup(parseJson: boolean) {
  const records: AuditRecordInput[] = [];
  const warnings: string[] = [];
  const logger = { error: () => undefined, info: () => undefined, warn: (m: string) => warnings.push(m) };
  const createServer = () => {
    const server = new HMCPServer({ name: "per-request", version: "1.0.0" }, { guardrails: false, auth: false, hooks: { audit: (r) => records.push(r) } });
    server.registerTool("noop", { description: "does nothing" }, async () => ({ content: [] }));
    return server;
  };
  const audit = new RefusalAudit({ append: (r: AuditRecordInput) => void records.push(r), flush: async () => undefined, close: async () => undefined }, "t", "/mcp");
  const sessions = new LegacySessions({ createServer, eventStore: false, enableJsonResponse: undefined, sseRetryMs: 1000, maxSessions: 10, maxSessionsPerPrincipal: 10, idleTimeoutMs: 60_000, audit });
  closers.push(async () => sessions.stopSweeper());
  const modern = new ModernEra({ createServer, bodyLimitBytes: 1 << 20, enableJsonResponse: undefined, sessions, audit, logger, agent: "t" });
  const app = express();
  app.use(timing);
  if (parseJson) app.use(express.json());
  app.post("/mcp", modern.serve);
  return { app, modern, records, warnings };
}

function post(url: URL, id: number, method: string) {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
  });
}

describe("ModernEra per-request servers", () => {
  for (const parseJson of [true, false]) {
    it(`are matched to their requests and released once they finish (${parseJson ? "with" : "without"} the JSON body parser)`, async () => {
      const { app, modern, warnings } = setup(parseJson);
      const http = createNodeServer(app);
      await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
      closers.push(() => new Promise<void>((resolve) => http.close(() => resolve())));
      const url = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
      for (let i = 1; i <= 3; i++) {
        const res = await post(url, i, "tools/list");
        expect(res.status).toBe(200);
        await res.text();
      }
      await vi.waitFor(() => expect(modern.servers()).toHaveLength(0));
      expect(warnings.filter((w) => w.includes("not matched"))).toEqual([]);
    });
  }
});
