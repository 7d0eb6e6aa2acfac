/**
 * MCP 2026-07-28 (the modern era): no session; every request carries its protocol version and client capabilities in
 * `_meta` and is served by a fresh server from the same factory, through the SDK's per-request handler. The bearer
 * check, Host check and size limit in front are the ones the 2025 era passes; the server's pipeline audits it.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Request, Response } from "express";
import { createMcpHandler, type ServerNotifier } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { TRANSPORT_ERROR } from "../protocol/errors.js";
import type { HMCPServer, OperationalLogger } from "../server/index.js";
import { principalOf } from "./bearer-check.js";
import { jsonRpcError } from "./json-rpc.js";
import type { LegacySessions } from "./legacy-sessions.js";
import type { RefusalAudit } from "./refusal-audit.js";

/** How the modern era is served (resolved `HttpAppOptions`). */
export interface ModernEraOptions {
  createServer: () => HMCPServer;
  bodyLimitBytes: number;
  enableJsonResponse: boolean | undefined;
  /** Whose caps a `subscriptions/listen` stream counts against. */
  sessions: LegacySessions;
  audit: RefusalAudit;
  logger: OperationalLogger;
  agent: string;
}

export class ModernEra {
  /** The servers built for modern-era requests now in progress (drained and recorded by close() like sessions). */
  readonly #servers = new Set<HMCPServer>();
  readonly #batch = new AsyncLocalStorage<HMCPServer[]>();
  readonly #handler: ReturnType<typeof createMcpHandler>;
  readonly #serveNode: ReturnType<typeof toNodeHandler>;
  readonly #sessions: LegacySessions;
  readonly #audit: RefusalAudit;

  constructor(options: ModernEraOptions) {
    const { logger, agent } = options;
    this.#sessions = options.sessions;
    this.#audit = options.audit;
    this.#handler = createMcpHandler(() => {
      const server = options.createServer().serveModernEra();
      // a list change made while serving one request (a tool registered or removed) reaches the open
      // subscriptions/listen streams, which hear only this handler's bus, not the per-request server's transport
      server.sendToolListChanged = () => this.#handler.notify.toolsChanged();
      server.sendPromptListChanged = () => this.#handler.notify.promptsChanged();
      server.sendResourceListChanged = () => this.#handler.notify.resourcesChanged();
      this.#servers.add(server);
      this.#batch.getStore()?.push(server);
      return server;
    }, {
      legacy: "reject",
      maxRequestBodySize: options.bodyLimitBytes,
      responseMode: options.enableJsonResponse ? "json" : "auto",
      onerror: (error) => logger.warn("modern-era request failed in the SDK handler", { agent, error: error.name }),
    });
    this.#serveNode = toNodeHandler(this.#handler, { maxRequestBodySize: options.bodyLimitBytes, onerror: (error) => logger.error("modern-era request failed", { agent, error: error.name }) });
  }

  /** Serves one modern-era request (the era routing's `modern`). */
  readonly serve = async (req: Request, res: Response): Promise<void> => {
    if ((req.body as { method?: unknown }).method === "subscriptions/listen" && !this.#holdSubscription(req, res)) return;
    const built: HMCPServer[] = [];
    try {
      await this.#batch.run(built, () => this.#serveNode(req, res, req.body));
    } finally {
      // its record is written when its handler returns, which may be after the response was sent
      for (const server of built) void server.pipeline.whenIdle().then(() => this.#servers.delete(server));
      // refused by the SDK before any handler ran, so no HMCP pipeline recorded it: a method the server does not serve or
      // 2026-07-28 removed (404, -32601), a malformed envelope or an unsupported revision (400); one record here
      if (res.statusCode === 404 || res.statusCode === 400) this.#audit.refused(req, res, res.statusCode, res.statusCode === 404 ? "method_not_found" : "invalid_request", "failed");
    }
  };

  /** Publishes a change to every open `subscriptions/listen` stream that opted in to it (MCP 2026-07-28, "Subscriptions"). */
  get notify(): ServerNotifier {
    return this.#handler.notify;
  }

  /** The servers of modern-era requests in progress (what shutdown drains). */
  servers(): HMCPServer[] {
    return [...this.#servers];
  }

  /** Shutdown: what still runs after the drain is aborted like a session's requests. */
  close(): Promise<void> {
    return this.#handler.close();
  }

  /**
   * A `subscriptions/listen` stream stays open (SSE keep-alive) like a 2025 session's GET stream, so it is held like
   * one: refused over the principal's `maxSessionsPerPrincipal` (429) or the app's `maxSessions` (503), and recorded
   * when it ends (an `http` record, outcome allowed, reason `subscription_closed`, latency = how long it was open).
   * @returns false when the stream was refused (the response is sent)
   */
  #holdSubscription(req: Request, res: Response): boolean {
    const principal = principalOf(req);
    const id = (req.body as { id?: unknown }).id ?? null;
    const seat = this.#sessions.holdStream(principal);
    if ("refused" in seat && seat.refused === "principal") {
      this.#audit.refused(req, res, 429, "too_many_sessions_for_principal");
      res.status(429).set("retry-after", "30").json({ ...jsonRpcError(TRANSPORT_ERROR, `Too many sessions and subscriptions for this client (${this.#sessions.maxSessionsPerPrincipal})`), id });
      return false;
    }
    if ("refused" in seat) {
      this.#audit.refused(req, res, 503, "too_many_sessions", "failed");
      res.status(503).set("retry-after", "5").json({ ...jsonRpcError(TRANSPORT_ERROR, "Too many sessions"), id });
      return false;
    }
    res.once("close", () => {
      seat.release();
      this.#audit.httpRecord(req, res, { method: "subscriptions/listen", outcome: "allowed", reason: "subscription_closed", status: res.statusCode, principal });
    });
    return true;
  }
}
