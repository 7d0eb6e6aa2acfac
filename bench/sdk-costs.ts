/**
 * What the MCP SDK v2's serving entry costs per request, in-process (issue 23): prints figures, asserts nothing.
 *
 * `node --expose-gc --import tsx bench/sdk-costs.ts [--quick] [--json]` (`npx tsx bench/sdk-costs.ts` works too; with
 * `--expose-gc` every batch starts on a collected heap, which steadies the figures on a loaded machine)
 *
 * (a) Per-request server construction, as `createMcpHandler` does it: its factory builds a fresh `McpServer` (one tool)
 *     for every HTTP request and connects it to a stateless transport. Measured alone, and in place: a whole legacy
 *     (2025-era, stateless) `tools/call` through `createMcpHandler(factory).fetch` against the same call on one reused
 *     `McpServer` + stateful `WebStandardStreamableHTTPServerTransport` session (what `baseline` does).
 * (b) The Node ↔ Web conversion: `toWebRequest` alone; the whole `toNodeHandler` adapter (Node request → Web `Request`,
 *     the Web `Response` written back to the Node response) around that same reused session; and the legacy
 *     `NodeStreamableHTTPServerTransport` (its `@hono/node-server` listener) on the same kind of session. Node requests
 *     and responses are real `http.IncomingMessage` / `http.ServerResponse` objects on an unconnected socket (no I/O:
 *     the response is buffered), so the figures are the JavaScript work, not the network's.
 * (c) HMCP: constructing an `HMCPServer` with the default options (the shipped `guardrails/default.yaml` policy,
 *     authorization on, no audit) and its sampling handler per request, alone and in place (a stateless
 *     `sampling/createMessage` through a fresh server + transport per request against one reused session), from the
 *     compiled package (dist/; built first when stale). The decision-cache counters show what a stateless deployment
 *     loses: without a session id (and, here, a principal) nothing is cached.
 *
 * Every figure is the median over interleaved batches (A B C ..., rotated every round) of µs per operation, with min–max
 * over batches: this process's CPU time (user + system; the work is synchronous or microtask-bound, so on an idle
 * machine CPU ≈ wall; on a shared one the CPU figure leaves out the time other processes held the core) and wall time.
 */
import { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import os from "node:os";
import { z } from "zod";
import {
  LATEST_PROTOCOL_VERSION,
  McpServer,
  PROTOCOL_VERSION_META_KEY,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
} from "@modelcontextprotocol/server";
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest } from "@modelcontextprotocol/node";
import { clinicalText, samplingBody, toolsCallBody } from "./lib/fixtures.js";
import { ensureBuilt, loadHmcp } from "./lib/hmcp.js";
import { round, spread, type Spread } from "./lib/stats.js";

const argv = process.argv.slice(2);
const quick = argv.includes("--quick");
const ROUNDS = quick ? 5 : 15;
const BATCH = quick ? 300 : 500;
const INFO = { name: "bench-sdk-costs", version: "1.0.0" };
const URL_ = "http://127.0.0.1:3000/mcp";
const text = clinicalText(1024).text;

// ------------------------------------------------------------------------------------------------------------ helpers
interface Case {
  name: string;
  group: string;
  run: () => Promise<unknown> | unknown;
}
interface Figure {
  name: string;
  group: string;
  /** Wall time per op. */
  us: Spread;
  /** This process's CPU time (user + system, every thread) per op: what the op costs when the machine is shared. */
  cpuUs: Spread;
}

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream", host: "127.0.0.1:3000" };

function webRequest(body: string, extra: Record<string, string> = {}): Request {
  return new Request(URL_, { method: "POST", headers: { ...HEADERS, ...extra }, body });
}

/** A real Node request/response pair, as express hands them over after `express.json()` (body already parsed). */
function nodePair(extra: Record<string, string> = {}): { req: IncomingMessage; res: ServerResponse } {
  const req = new IncomingMessage(new Socket());
  req.method = "POST";
  req.url = "/mcp";
  req.httpVersion = "1.1";
  const headers = { ...HEADERS, ...extra };
  req.headers = headers;
  req.rawHeaders = Object.entries(headers).flat();
  req.push(null);
  const res = new ServerResponse(req);
  return { req, res };
}

/** Checks a JSON-RPC result, sent as JSON or as one SSE event (the stateless legacy leg streams). */
function okJson(body: string): void {
  const sse = /^data: (.+)$/m.exec(body);
  const m = JSON.parse(sse && body.startsWith("event:") ? sse[1]! : body) as { result?: unknown; error?: unknown };
  if (m.result === undefined) throw new Error(`unexpected answer: ${body.slice(0, 300)}`);
}

/** What the Node response buffered (no socket: ServerResponse keeps it in outputData): its head and body. */
function nodeOutput(res: ServerResponse): { head: string; body: string } {
  const out = (res as unknown as { outputData: Array<{ data: string | Uint8Array }> }).outputData;
  const parts = out.map((o) => (typeof o.data === "string" ? o.data : Buffer.from(o.data).toString("utf8")));
  const all = parts.join("");
  const i = all.indexOf("\r\n\r\n");
  const head = i >= 0 ? all.slice(0, i) : "";
  let body = i >= 0 ? all.slice(i + 4) : all;
  // chunked transfer coding when no content-length was set
  if (/transfer-encoding: chunked/i.test(all.slice(0, i))) {
    let out2 = "";
    let rest = body;
    for (;;) {
      const nl = rest.indexOf("\r\n");
      const len = parseInt(rest.slice(0, nl), 16);
      if (!len) break;
      out2 += rest.slice(nl + 2, nl + 2 + len);
      rest = rest.slice(nl + 2 + len + 2);
    }
    body = out2;
  }
  return { head, body };
}

function echoServer(): McpServer {
  const server = new McpServer(INFO);
  server.registerTool("echo", { description: "Echoes text", inputSchema: z.object({ text: z.string() }) }, ({ text: t }) => ({
    content: [{ type: "text", text: t }],
  }));
  return server;
}

/** One reused McpServer on one stateful Web-standard session (the baseline's shape without the Node adapter). */
async function statefulWebSession(server: { connect(t: WebStandardStreamableHTTPServerTransport): Promise<void> }): Promise<{
  transport: WebStandardStreamableHTTPServerTransport;
  headers: Record<string, string>;
}> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID(), enableJsonResponse: true });
  await server.connect(transport);
  const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "c", version: "1" } } };
  const r = await transport.handleRequest(webRequest(JSON.stringify(init)), { parsedBody: init });
  const sid = r.headers.get("mcp-session-id");
  await r.text();
  if (!sid) throw new Error("no session id");
  const headers = { "mcp-session-id": sid, "mcp-protocol-version": LATEST_PROTOCOL_VERSION };
  const ack = { jsonrpc: "2.0", method: "notifications/initialized" };
  await (await transport.handleRequest(webRequest(JSON.stringify(ack), headers), { parsedBody: ack })).text();
  return { transport, headers };
}

/** The same on the legacy Node transport (one session), as `baseline` serves it. */
async function statefulNodeSession(server: McpServer): Promise<{ transport: NodeStreamableHTTPServerTransport; headers: Record<string, string> }> {
  const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID(), enableJsonResponse: true });
  await server.connect(transport);
  const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "c", version: "1" } } };
  const p = nodePair();
  await transport.handleRequest(p.req, p.res, init);
  // the SDK's listener uses writeHead(status, headers): read the session id from the buffered head
  const sid = /^mcp-session-id: (.+)$/im.exec(nodeOutput(p.res).head)?.[1]?.trim();
  if (sid === undefined) throw new Error("node transport: no session id");
  const headers = { "mcp-session-id": sid, "mcp-protocol-version": LATEST_PROTOCOL_VERSION };
  const q = nodePair(headers);
  await transport.handleRequest(q.req, q.res, { jsonrpc: "2.0", method: "notifications/initialized" });
  return { transport, headers };
}

const gc = (globalThis as { gc?: () => void }).gc;

async function runCases(cases: Case[]): Promise<Figure[]> {
  // warm-up: JIT and lazily built schemas
  for (const c of cases) for (let i = 0; i < Math.min(BATCH, 300); i++) await c.run();
  const samples = cases.map(() => [] as number[]);
  const cpu = cases.map(() => [] as number[]);
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < cases.length; k++) {
      const idx = (k + r) % cases.length;
      const c = cases[idx]!;
      // each batch starts on a collected heap, so it pays for its own garbage, not the previous case's
      gc?.();
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < BATCH; i++) await c.run();
      samples[idx]!.push(((performance.now() - t0) * 1000) / BATCH);
      const dc = process.cpuUsage(c0);
      cpu[idx]!.push((dc.user + dc.system) / BATCH);
    }
  }
  return cases.map((c, k) => ({ name: c.name, group: c.group, us: spread(samples[k]!), cpuUs: spread(cpu[k]!) }));
}

// ---------------------------------------------------------------------------------------------------------- the cases
let seq = 0;
const nextId = () => ++seq;

let checkNodeAnswers: () => Promise<void> = async () => undefined;

async function sdkCases(): Promise<Case[]> {
  // the legacy body (no envelope) a 2025-era client sends; parsedBody as express.json() leaves it
  const call = () => toolsCallBody(text, nextId());
  const reused = await statefulWebSession(echoServer());
  const nodeLegacy = await statefulNodeSession(echoServer());
  const perRequest = createMcpHandler(() => echoServer());
  const perRequestNode = toNodeHandler(perRequest);
  const reusedNode = toNodeHandler({ fetch: (req, opts) => reused.transport.handleRequest(req, opts) });
  // every Node path answers the call (checked once, before measuring)
  checkNodeAnswers = async () => {
    const paths: Array<[string, (req: IncomingMessage, res: ServerResponse) => Promise<void>]> = [
      ["toNodeHandler(reused)", (req, res) => reusedNode(req as never, res as never, call())],
      ["NodeStreamableHTTPServerTransport", (req, res) => nodeLegacy.transport.handleRequest(req, res, call())],
      ["toNodeHandler(createMcpHandler)", (req, res) => perRequestNode(req as never, res as never, call())],
    ];
    for (const [name, run] of paths) {
      const { req, res } = nodePair(name === "NodeStreamableHTTPServerTransport" ? nodeLegacy.headers : name === "toNodeHandler(reused)" ? reused.headers : {});
      await run(req, res);
      const { head, body } = nodeOutput(res);
      if (!head.startsWith("HTTP/1.1 200")) throw new Error(`${name}: ${head.split("\r\n")[0]} ${body.slice(0, 200)}`);
      okJson(body);
    }
  };
  // a modern (2026-07-28) tools/call: the per-request envelope in _meta and the protocol-version header
  const MODERN = "2026-07-28";
  const MODERN_HEADERS = { "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "echo" };
  const modernCall = () => {
    const b = toolsCallBody(text, nextId()) as { params: Record<string, unknown> };
    b.params["_meta"] = {
      [PROTOCOL_VERSION_META_KEY]: MODERN,
      "io.modelcontextprotocol/clientInfo": { name: "c", version: "1" },
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    return b;
  };
  let modernOk = true;
  try {
    const b = modernCall();
    const r = await perRequest.fetch(webRequest(JSON.stringify(b), MODERN_HEADERS), { parsedBody: b });
    okJson(await r.text());
  } catch (error) {
    modernOk = false;
    console.error(`modern-era call not measured: ${(error as Error).message}`);
  }
  const modernCases: Case[] = modernOk
    ? [
        {
          group: "a",
          name: "createMcpHandler(factory).fetch: modern (2026-07-28) tools/call, new McpServer per request",
          run: async () => {
            const b = modernCall();
            const r = await perRequest.fetch(webRequest(JSON.stringify(b), MODERN_HEADERS), { parsedBody: b });
            await r.text();
          },
        },
      ]
    : [];
  return [
    { group: "a", name: "new McpServer + registerTool (the factory's work)", run: () => echoServer() },
    {
      group: "a",
      name: "factory + connect to a stateless WebStandard transport + close (the legacy stateless leg's setup)",
      run: async () => {
        const s = echoServer();
        const t = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        await s.connect(t);
        await s.close();
      },
    },
    {
      group: "a",
      name: "createMcpHandler(factory).fetch: legacy tools/call, stateless, new McpServer per request",
      run: async () => {
        const b = call();
        const r = await perRequest.fetch(webRequest(JSON.stringify(b)), { parsedBody: b });
        await r.text();
      },
    },
    ...modernCases,
    {
      group: "a",
      name: "reused McpServer, stateful WebStandard session: tools/call (Request built per call)",
      run: async () => {
        const b = call();
        const r = await reused.transport.handleRequest(webRequest(JSON.stringify(b), reused.headers), { parsedBody: b });
        await r.text();
      },
    },
    {
      group: "b",
      name: "toWebRequest(req, parsedBody) alone (Node IncomingMessage → Request)",
      run: async () => {
        const { req } = nodePair(reused.headers);
        await toWebRequest(req as never, call());
      },
    },
    {
      group: "b",
      name: "new http.IncomingMessage + ServerResponse (the Node pair every Node case below builds)",
      run: () => nodePair(reused.headers),
    },
    {
      group: "b",
      name: "toNodeHandler around the reused stateful WebStandard session: tools/call",
      run: async () => {
        const { req, res } = nodePair(reused.headers);
        await reusedNode(req as never, res as never, call());
      },
    },
    {
      group: "b",
      name: "NodeStreamableHTTPServerTransport (legacy, @hono/node-server), reused stateful session: tools/call",
      run: async () => {
        const { req, res } = nodePair(nodeLegacy.headers);
        await nodeLegacy.transport.handleRequest(req, res, call());
      },
    },
    {
      group: "b",
      name: "toNodeHandler(createMcpHandler(factory)): legacy tools/call, new McpServer per request",
      run: async () => {
        const { req, res } = nodePair();
        await perRequestNode(req as never, res as never, call());
      },
    },
  ];
}

async function hmcpCases(): Promise<{ cases: Case[]; cold: Record<string, number>; cacheStats: () => Record<string, unknown> }> {
  ensureBuilt();
  const t0 = performance.now();
  const hmcp = await loadHmcp();
  const importMs = performance.now() - t0;
  const { HMCPServer, defaultGuardrails } = hmcp;
  const echo = (params: { messages: Array<{ content: unknown }> }) => {
    const last = params.messages[params.messages.length - 1]?.content as { type?: string; text?: string } | undefined;
    return { content: { type: "text" as const, text: last?.type === "text" ? (last.text ?? "") : "" }, stopReason: "endTurn" };
  };
  // the first construction in the process loads and compiles guardrails/default.yaml (defaultGuardrails() memoizes it)
  const t1 = performance.now();
  new HMCPServer(INFO).sampling(echo);
  const firstMs = performance.now() - t1;
  const t2 = performance.now();
  new HMCPServer(INFO).sampling(echo);
  const secondMs = performance.now() - t2;
  const runner = defaultGuardrails() as unknown as { decisionCacheStats?: () => { hits: number; misses: number } | undefined };
  const newHmcp = () => new HMCPServer(INFO, { auth: false }).sampling(echo);
  const reused = await statefulWebSession(newHmcp());
  const body = () => samplingBody(text, nextId());
  // a verified caller as the HTTP layer passes it (authInfo.extra.principal; frozen, as the JWT authenticator's are)
  const principal = Object.freeze({ issuer: "https://auth.bench.invalid", sub: "bench-user", clientId: "bench-client", scopes: Object.freeze(["user/*.read"]) });
  const authInfo = { token: "bench", clientId: "bench-client", scopes: ["user/*.read"], extra: { principal } };
  return {
    cold: { importMs: round(importMs, 1), firstConstructionMs: round(firstMs, 1), secondConstructionMs: round(secondMs, 2) },
    cacheStats: () => ({ ...runner.decisionCacheStats?.() }),
    cases: [
      { group: "c", name: "new HMCPServer(info) (default options: default.yaml guardrails, auth on, no audit) + .sampling()", run: () => new HMCPServer(INFO).sampling(echo) },
      {
        group: "c",
        name: "new HMCPServer + .sampling() + connect to a stateless WebStandard transport + close",
        run: async () => {
          const s = new HMCPServer(INFO).sampling(echo);
          const t = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
          await s.connect(t);
          await s.close();
        },
      },
      {
        group: "c",
        name: "HMCP sampling/createMessage, new HMCPServer (auth: false, default guardrails) + stateless transport per request",
        run: async () => {
          const s = newHmcp();
          const t = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
          await s.connect(t);
          const b = body();
          const r = await t.handleRequest(webRequest(JSON.stringify(b)), { parsedBody: b });
          okOnce(await r.text());
          await s.close();
        },
      },
      {
        group: "c",
        name: "HMCP sampling/createMessage, new HMCPServer + stateless transport per request, caller with a principal (authInfo)",
        run: async () => {
          const s = newHmcp();
          const t = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
          await s.connect(t);
          const b = body();
          const r = await t.handleRequest(webRequest(JSON.stringify(b)), { parsedBody: b, authInfo });
          okOnce(await r.text());
          await s.close();
        },
      },
      {
        group: "c",
        name: "HMCP sampling/createMessage, one reused HMCPServer (auth: false, default guardrails), stateful session",
        run: async () => {
          const b = body();
          const r = await reused.transport.handleRequest(webRequest(JSON.stringify(b), reused.headers), { parsedBody: b });
          okOnce(await r.text());
        },
      },
    ],
  };
}

let checked = 0;
function okOnce(body: string): void {
  if (checked++ < 3) okJson(body);
}

async function main(): Promise<void> {
  const load = os.loadavg().map((x) => round(x, 2));
  const sdk = await sdkCases();
  await checkNodeAnswers();
  const h = await hmcpCases();
  // the default guardrails' decision cache: 200 calls of each HMCP request case, counted apart (outside the timing)
  const cacheByCase: Record<string, { hits: number; misses: number }> = {};
  for (const c of h.cases.filter((x) => x.name.startsWith("HMCP sampling"))) {
    const a = h.cacheStats() as { hits?: number; misses?: number };
    for (let i = 0; i < 200; i++) await c.run();
    const b = h.cacheStats() as { hits?: number; misses?: number };
    cacheByCase[c.name] = { hits: (b.hits ?? 0) - (a.hits ?? 0), misses: (b.misses ?? 0) - (a.misses ?? 0) };
  }
  const figures = await runCases([...sdk, ...h.cases]);
  const result = {
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    loadAvgAtStart: load,
    loadAvgAtEnd: os.loadavg().map((x) => round(x, 2)),
    rounds: ROUNDS,
    batch: BATCH,
    textChars: text.length,
    hmcpCold: h.cold,
    // the default guardrails' decision cache per HMCP request case over 200 calls (same text every call)
    decisionCache: cacheByCase,
    figures: figures.map((f) => ({
      group: f.group,
      name: f.name,
      cpuUsMedian: round(f.cpuUs.median, 1),
      cpuUsMin: round(f.cpuUs.min, 1),
      cpuUsMax: round(f.cpuUs.max, 1),
      wallUsMedian: round(f.us.median, 1),
    })),
  };
  if (argv.includes("--json")) {
    process.stdout.write(JSON.stringify(result, null, 1) + "\n");
    return;
  }
  const L: string[] = [];
  L.push(`SDK v2 per-request costs (bench/sdk-costs.ts${gc ? ", --expose-gc" : ""}): Node ${result.node}, ${result.cpus} × ${result.cpuModel}; load average ${load.join(" / ")} at start, ${result.loadAvgAtEnd.join(" / ")} at end; ${ROUNDS} interleaved batches of ${BATCH}; request text ${text.length} chars.`);
  L.push("", "| | operation | CPU µs per op (median, min–max) | wall µs per op (median) |", "| --- | --- | --- | --- |");
  for (const f of figures) L.push(`| ${f.group} | ${f.name} | ${round(f.cpuUs.median, 1)} (${round(f.cpuUs.min, 1)}–${round(f.cpuUs.max, 1)}) | ${round(f.us.median, 1)} |`);
  L.push(
    "",
    `HMCP cold: import of dist/ ${h.cold.importMs} ms; first HMCPServer construction (loads guardrails/default.yaml) ${h.cold.firstConstructionMs} ms; second ${h.cold.secondConstructionMs} ms.`,
    ...Object.entries(cacheByCase).map(([k, v]) => `Decision cache, 200 calls with the same text, ${k}: ${v.hits} hits / ${v.misses} misses.`),
  );
  process.stdout.write(L.join("\n") + "\n");
}

main()
  .then(() => process.exit(0))
  .catch((error: unknown) => {
    console.error((error as Error).stack ?? String(error));
    process.exit(1);
  });
