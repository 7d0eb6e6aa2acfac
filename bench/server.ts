/**
 * One benchmark server, run as a child process of bench/run.ts (`fork` with `--import tsx`), so load, servers and the
 * runner never share an event loop. Usage: `node --import tsx bench/server.ts <config>` with `BENCH_SERVER` (JSON of
 * {@link ServerSpec}) in the environment.
 *
 * Configurations:
 * - `ceiling`   raw express 5 JSON echo of the request body (no MCP);
 * - `baseline`  the plain SDK v2 `McpServer` (`@modelcontextprotocol/express`'s `createMcpExpressApp`, one stateful
 *               `NodeStreamableHTTPServerTransport` from `@modelcontextprotocol/node`, `enableJsonResponse`, protocol
 *               2025-11-25: the era HMCP serves) answering `tools/call` with an echo tool;
 * - `baseline-v1` the same with the plain SDK 1.x (`@modelcontextprotocol/sdk` as the devDependency alias
 *               `mcp-sdk-v1`: `StreamableHTTPServerTransport`, its `createMcpExpressApp`), kept for history;
 * - `baseline-modern` the plain SDK v2 on MCP 2026-07-28: `createMcpHandler` (a fresh `McpServer` with the echo tool per
 *               request, `legacy: "reject"`, JSON responses) behind `@modelcontextprotocol/node`'s `toNodeHandler` in express;
 * - `bare`      `HMCPServer` via `createHttpApp` answering client → server `sampling/createMessage`; bearer, auth,
 *               guardrails and audit off;
 * - `full`      the same with JWT bearer verification (local ES256 key set), scope and patient-context checks,
 *               `guardrails/default.yaml` input + output (with its per-session decision cache), and `FileAuditSink`
 *               (default durability) on a temp dir;
 * - `full-distinct` the same server as `full`; the runner sends it a different text every request (no cache hits);
 * - `full-modern` the same server as `full`, driven with 2026-07-28 `tools/call`s of its sampling tool (a fresh
 *               HMCPServer per request, no session, so no per-session decision cache either);
 * - `full-distinct-workers` `full-distinct` with `workers: 1` on the output stage's `phi-redaction` (PHI scans of long
 *               items on a worker thread);
 * - `mem-hmcp`  `createHttpApp` with bearer false, default sessions (event store, SSE), for the idle-session figure;
 * - `mem-sdk`   the plain SDK v2 equivalent (one McpServer + transport per session), for reference;
 * - `bare+auth`, `bare+guardrails`, `bare+audit`: one layer of `full` at a time (the runner's `--layers`).
 *
 * `HMCP_DROP` (environment, e.g. `guard`, `audit`, `auth`, or several: `guard,audit`) leaves those layers out of any HMCP
 * configuration above, for `bench/ab.ts --env HMCP_DROP --b guard`: what one layer costs on `full-modern` or `full`.
 * (Without `auth` the guardrails' decision cache has no principal to key by: a stateless `full-modern` then checks every
 * text afresh.)
 *
 * IPC: the child sends `{ type: "ready", url }`; it answers `{ type: "stats" }` with {@link ServerStats},
 * `{ type: "gc" }` with stats after two full collections (needs `--expose-gc`), `{ type: "prof-start" }` and
 * `{ type: "prof-stop", file }` (a CPU profile of just that window, via the inspector) with `{ type: "prof" }`, and
 * `{ type: "stop" }` by closing (flushing the audit sink) and exiting.
 */
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { mkdtemp, rm, readdir, stat } from "node:fs/promises";
import type { Server as NodeHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import express from "express";
import { z } from "zod";
import { NodeStreamableHTTPServerTransport } from "@modelcontextprotocol/node";
import { createMcpExpressApp } from "@modelcontextprotocol/express";
import { McpServer, createMcpHandler, isInitializeRequest } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
// The plain SDK 1.x, for the `baseline-v1` row only (devDependency alias; nothing in src/ imports it).
import { McpServer as McpServerV1 } from "mcp-sdk-v1/server/mcp.js";
import { createMcpExpressApp as createMcpExpressAppV1 } from "mcp-sdk-v1/server/express.js";
import { StreamableHTTPServerTransport as StreamableHTTPServerTransportV1 } from "mcp-sdk-v1/server/streamableHttp.js";
import { isInitializeRequest as isInitializeRequestV1 } from "mcp-sdk-v1/types.js";
import type { JWK } from "jose";
import { parse as parseYaml } from "yaml";
import type { AuditSink, GuardrailRunner, Listening } from "../src/index.js";
import { AUDIENCE, ISSUER, REPO_ROOT } from "./lib/fixtures.js";
import { loadHmcp } from "./lib/hmcp.js";
import { mainThreadCpuMs } from "./lib/threads.js";
import { mapProfileToSource } from "./lib/sourcemap.js";
import { isDistinct, type LayerConfig, type ServerConfig } from "./lib/configs.js";

export type { ServerConfig, LayerConfig } from "./lib/configs.js";

/** What the runner passes to a server child. */
export interface ServerSpec {
  config: ServerConfig;
  /** Public key set for the `full` configuration's bearer check. */
  publicJwk?: JWK;
}

/** What a server child reports. */
export interface ServerStats {
  config: ServerConfig;
  /** Requests the handler (echo route, tool, sampling handler) has answered. */
  served: number;
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  sessions: number;
  /** process.cpuUsage() user + system since start, µs (every thread of the process). */
  cpuUs: number;
  /** The main thread's (event loop's) user + system CPU since start, µs, in 10 ms steps (Linux; absent elsewhere). */
  mainCpuUs?: number;
  /** Audit files size in bytes (`full` only). */
  auditBytes?: number;
  /** The guardrail pipeline's decision cache counters (text items answered from the cache / checked afresh). */
  guardrailCache?: { hits: number; misses: number };
}

const INFO = { name: "bench-agent", version: "1.0.0" };

let served = 0;
let sessionCount = () => 0;
let closers: Array<() => Promise<void>> = [];
let auditDir: string | undefined;
let guardrailRunner: GuardrailRunner | undefined;

/**
 * Loads the guardrail policy the issue names, `loadGuardrailPolicy("guardrails/default.yaml")`, from the build; with
 * `phiWorkers`, its `phi-redaction` entries get `params.workers` set to that (relative paths still resolve beside it).
 */
async function loadDefaultPolicy(phiWorkers?: number): Promise<GuardrailRunner> {
  const { loadGuardrailPolicy } = await loadHmcp();
  const file = path.join(REPO_ROOT, "guardrails/default.yaml");
  if (phiWorkers === undefined) return loadGuardrailPolicy(file);
  const policy = parseYaml(readFileSync(file, "utf8")) as { stages: Record<string, Array<{ guardrail: string; params?: Record<string, unknown> }>> };
  let set = 0;
  for (const entries of Object.values(policy.stages)) {
    for (const entry of entries) {
      if (entry.guardrail !== "phi-redaction") continue;
      entry.params = { ...entry.params, workers: phiWorkers };
      set++;
    }
  }
  if (set === 0) throw new Error("guardrails/default.yaml has no phi-redaction entry to give workers");
  return loadGuardrailPolicy(policy, { baseDir: path.dirname(file) });
}

function echoSampling(params: { messages: Array<{ content: unknown }> }) {
  served++;
  const last = params.messages[params.messages.length - 1]?.content as { type?: string; text?: string } | undefined;
  return { content: { type: "text" as const, text: last?.type === "text" ? (last.text ?? "") : "" }, stopReason: "endTurn" };
}

async function listenExpress(app: express.Express): Promise<{ url: string; server: NodeHttpServer }> {
  const server = await new Promise<NodeHttpServer>((resolve, reject) => {
    const s = app.listen(0, "127.0.0.1", (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const { port } = server.address() as AddressInfo;
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${port}`, server };
}

async function startCeiling(): Promise<string> {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(express.json({ limit: 1024 * 1024 }));
  app.post("/echo", (req, res) => {
    served++;
    res.json(req.body);
  });
  return `${(await listenExpress(app)).url}/echo`;
}

/** The plain SDK v2: one McpServer and one stateful transport per session (the SDK's documented pattern). */
async function startSdk(): Promise<string> {
  const app = createMcpExpressApp();
  const transports = new Map<string, NodeStreamableHTTPServerTransport>();
  sessionCount = () => transports.size;
  const newServer = () => {
    const server = new McpServer(INFO);
    server.registerTool("echo", { description: "Echoes text", inputSchema: z.object({ text: z.string() }) }, ({ text }) => {
      served++;
      return { content: [{ type: "text", text }] };
    });
    return server;
  };
  app.all("/mcp", async (req, res) => {
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const t = transports.get(sid);
      if (!t) {
        res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
        return;
      }
      await t.handleRequest(req, res, req.body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(req.body)) {
      res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request" }, id: null });
      return;
    }
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        transports.set(id, transport);
      },
      onsessionclosed: (id) => {
        transports.delete(id);
      },
    });
    await newServer().connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  closers.push(async () => {
    await Promise.allSettled([...transports.values()].map((t) => t.close()));
  });
  return `${(await listenExpress(app)).url}/mcp`;
}

/** The plain SDK v2 on MCP 2026-07-28: its per-request handler, a fresh McpServer per request (the SDK's pattern). */
async function startSdkModern(): Promise<string> {
  const handler = createMcpHandler(
    () => {
      const server = new McpServer(INFO);
      server.registerTool("echo", { description: "Echoes text", inputSchema: z.object({ text: z.string() }) }, ({ text }) => {
        served++;
        return { content: [{ type: "text", text }] };
      });
      return server;
    },
    { legacy: "reject", responseMode: "json" },
  );
  const node = toNodeHandler(handler);
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(express.json({ limit: 1024 * 1024 }));
  app.post("/mcp", (req, res) => void node(req, res, req.body));
  closers.push(() => handler.close());
  return `${(await listenExpress(app)).url}/mcp`;
}

/**
 * The plain SDK 1.x, wired exactly as `startSdk` (and as this bench's baseline was before the move to v2): one
 * McpServer and one stateful `StreamableHTTPServerTransport` per session, `enableJsonResponse`.
 */
async function startSdkV1(): Promise<string> {
  const app = createMcpExpressAppV1();
  const transports = new Map<string, StreamableHTTPServerTransportV1>();
  sessionCount = () => transports.size;
  const newServer = () => {
    const server = new McpServerV1(INFO);
    server.registerTool("echo", { description: "Echoes text", inputSchema: { text: z.string() } }, ({ text }) => {
      served++;
      return { content: [{ type: "text", text }] };
    });
    return server;
  };
  app.all("/mcp", async (req, res) => {
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const t = transports.get(sid);
      if (!t) {
        res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });
        return;
      }
      await t.handleRequest(req, res, req.body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequestV1(req.body)) {
      res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request" }, id: null });
      return;
    }
    const transport: StreamableHTTPServerTransportV1 = new StreamableHTTPServerTransportV1({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        transports.set(id, transport);
      },
      onsessionclosed: (id) => {
        transports.delete(id);
      },
    });
    await newServer().connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  closers.push(async () => {
    await Promise.allSettled([...transports.values()].map((t) => t.close()));
  });
  return `${(await listenExpress(app)).url}/mcp`;
}

async function startHmcp(config: "bare" | "full" | "full-distinct" | "full-distinct-workers" | "full-modern" | "mem-hmcp" | LayerConfig, spec: ServerSpec): Promise<string> {
  // the built package (bench/lib/hmcp.ts says why)
  const { FileAuditSink, HMCPServer, createHttpApp, createJwtBearerAuthenticator, generateAuditSigningKey, listen } = await loadHmcp();
  let listening: Listening;
  const full = config === "full" || config === "full-modern" || isDistinct(config);
  const drop = process.env.HMCP_DROP ?? "";
  const withAuth = (full || config === "bare+auth") && !drop.includes("auth");
  const withGuardrails = (full || config === "bare+guardrails") && !drop.includes("guard");
  const withAudit = (full || config === "bare+audit") && !drop.includes("audit");
  if (withAuth || withGuardrails || withAudit) {
    const guardrails = withGuardrails ? await loadDefaultPolicy(config === "full-distinct-workers" ? 1 : undefined) : false;
    if (guardrails) guardrailRunner = guardrails;
    let sink: AuditSink | undefined;
    if (withAudit) {
      auditDir = await mkdtemp(path.join(os.tmpdir(), "hmcp-bench-audit-"));
      const keys = await generateAuditSigningKey();
      const opened = await FileAuditSink.open({ dir: auditDir, signing: { privateKey: keys.privateJwk } });
      sink = opened;
      closers.push(() => opened.close());
    }
    let bearer: ReturnType<typeof createJwtBearerAuthenticator> | false = false;
    if (withAuth) {
      if (!spec.publicJwk) throw new Error(`${config}: publicJwk missing`);
      bearer = createJwtBearerAuthenticator({ issuer: ISSUER, audience: AUDIENCE, jwks: { keys: { keys: [spec.publicJwk] } } });
    }
    const http = createHttpApp({
      createServer: () => new HMCPServer(INFO, { ...(!withAuth && { auth: false as const }), guardrails, audit: sink ?? false }).sampling(echoSampling),
      bearer,
      enableJsonResponse: true,
      ...(sink && { audit: sink }),
    });
    sessionCount = () => http.sessionCount;
    listening = await listen(http);
  } else {
    const http = createHttpApp({
      createServer: () => new HMCPServer(INFO, { auth: false, guardrails: false, audit: false }).sampling(echoSampling),
      bearer: false,
      ...(config === "bare" && { enableJsonResponse: true }),
    });
    sessionCount = () => http.sessionCount;
    listening = await listen(http);
  }
  closers.unshift(() => listening.close());
  return new URL("/mcp", listening.url).toString();
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const f of await readdir(dir)) total += (await stat(path.join(dir, f))).size;
  return total;
}

async function stats(config: ServerConfig): Promise<ServerStats> {
  const m = process.memoryUsage();
  const cpu = process.cpuUsage();
  const mainMs = mainThreadCpuMs();
  const cache = (guardrailRunner as { decisionCacheStats?: () => { hits: number; misses: number } | undefined } | undefined)?.decisionCacheStats?.();
  return {
    cpuUs: cpu.user + cpu.system,
    ...(mainMs !== undefined && { mainCpuUs: mainMs * 1000 }),
    config,
    served,
    rss: m.rss,
    heapUsed: m.heapUsed,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    sessions: sessionCount(),
    ...(auditDir !== undefined && { auditBytes: await dirBytes(auditDir) }),
    ...(cache && { guardrailCache: { hits: cache.hits, misses: cache.misses } }),
  };
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.env["BENCH_SERVER"] ?? "{}") as ServerSpec;
  const config = spec.config;
  let url: string;
  switch (config) {
    case "ceiling":
      url = await startCeiling();
      break;
    case "baseline":
    case "mem-sdk":
      url = await startSdk();
      break;
    case "baseline-v1":
      url = await startSdkV1();
      break;
    case "baseline-modern":
      url = await startSdkModern();
      break;
    case "bare":
    case "full":
    case "full-distinct":
    case "full-distinct-workers":
    case "full-modern":
    case "mem-hmcp":
    case "bare+auth":
    case "bare+guardrails":
    case "bare+audit":
      url = await startHmcp(config, spec);
      break;
    default:
      throw new Error(`unknown server config ${String(config)}`);
  }
  let inspector: Session | undefined;
  process.on("message", (msg: { type: string; file?: string }) => {
    void (async () => {
      if (msg.type === "prof-start") {
        inspector = new Session();
        inspector.connect();
        await inspector.post("Profiler.enable");
        await inspector.post("Profiler.setSamplingInterval", { interval: 200 });
        await inspector.post("Profiler.start");
        process.send!({ type: "prof" });
      } else if (msg.type === "prof-stop" && inspector) {
        const { profile } = await inspector.post("Profiler.stop");
        await mapProfileToSource(inspector, profile, REPO_ROOT);
        writeFileSync(msg.file!, JSON.stringify(profile));
        inspector.disconnect();
        inspector = undefined;
        process.send!({ type: "prof" });
      } else if (msg.type === "stats") process.send!({ type: "stats", stats: await stats(config) });
      else if (msg.type === "gc") {
        const gc = (globalThis as { gc?: () => void }).gc;
        for (let i = 0; i < 3; i++) {
          gc?.();
          await new Promise((r) => setTimeout(r, 50));
        }
        process.send!({ type: "stats", stats: await stats(config) });
      } else if (msg.type === "stop") {
        for (const close of closers) await close().catch(() => undefined);
        closers = [];
        const final = await stats(config);
        if (auditDir) await rm(auditDir, { recursive: true, force: true });
        process.send!({ type: "stopped", stats: final }, () => process.exit(0));
      }
    })();
  });
  // The runner died: do not linger as an orphan.
  process.on("disconnect", () => process.exit(0));
  process.send!({ type: "ready", url });
}

// Only as a child of the runner: importing this module for its types must not start a server.
if (process.send && process.env["BENCH_SERVER"]) {
  main().catch((error: unknown) => {
    console.error(`bench server failed: ${(error as Error).stack ?? String(error)}`);
    process.exit(1);
  });
}
