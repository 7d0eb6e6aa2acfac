/**
 * MCP 2026-07-28 (the modern era): no session; every request carries its protocol version and client capabilities in
 * `_meta` and is served by a fresh server from the same factory, through the SDK's per-request handler. The bearer
 * check, Host check and size limit in front are the ones the 2025 era passes; the server's pipeline audits it.
 */
import type { Request, Response } from "express";
import { createMcpHandler, ProtocolErrorCode, type ServerNotifier } from "@modelcontextprotocol/server";
import { declaresTasks, TASKS_EXTENSION_ID } from "../server/tasks.js";
import { TRANSPORT_ERROR } from "../protocol/errors.js";
import { HMCPConfigError } from "../protocol/config-error.js";
import type { HMCPServer, OperationalLogger } from "../server/index.js";
import { principalOf } from "./bearer-check.js";
import type { LegacySessions } from "./legacy-sessions.js";
import type { RefusalAudit } from "./refusal-audit.js";
import { serveWebExchange } from "./web-exchange.js";

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
  /**
   * The servers built for one HTTP request, found by the factory through the Web `Request` the SDK hands it
   * (`requestInfo`), which is the one {@link serve} built (src/http/web-exchange.ts). (An AsyncLocalStorage did this
   * once; once used it keeps Node's promise hooks on for the whole process, a cost on every promise of every request.
   * Then the parsed body's identity; then a random header tag, while the SDK's adapter built the `Request`.)
   */
  readonly #builtByRequest = new WeakMap<globalThis.Request, HMCPServer[]>();
  readonly #handler: ReturnType<typeof createMcpHandler>;
  readonly #sessions: LegacySessions;
  readonly #audit: RefusalAudit;
  readonly #logger: OperationalLogger;
  readonly #agent: string;
  readonly #bodyLimitBytes: number;
  /** Whether a server not matched to its request was logged (once per app). */
  #missLogged = false;

  constructor(options: ModernEraOptions) {
    const { logger, agent } = options;
    this.#logger = logger;
    this.#agent = agent;
    this.#bodyLimitBytes = options.bodyLimitBytes;
    this.#sessions = options.sessions;
    this.#audit = options.audit;
    this.#handler = createMcpHandler((ctx) => {
      const server = options.createServer().serveModernEra();
      // a list change made while serving one request (a tool registered or removed) reaches the open
      // subscriptions/listen streams, which hear only this handler's bus, not the per-request server's transport
      server.sendToolListChanged = () => this.#handler.notify.toolsChanged();
      server.sendPromptListChanged = () => this.#handler.notify.promptsChanged();
      server.sendResourceListChanged = () => this.#handler.notify.resourcesChanged();
      this.#servers.add(server);
      const request = ctx.requestInfo as globalThis.Request | undefined;
      const built = request === undefined ? undefined : this.#builtByRequest.get(request);
      if (built) built.push(server);
      else this.#unmatched(server);
      return server;
    }, {
      legacy: "reject",
      maxRequestBodySize: options.bodyLimitBytes,
      responseMode: options.enableJsonResponse ? "json" : "auto",
      onerror: (error) => logger.warn("modern-era request failed in the SDK handler", { agent, ...errorMeta(error) }),
    });
  }

  /**
   * A server the factory could not match to its HTTP request (the SDK handed it no `Request`, or one without the tag
   * `serve` set): logged once, and removed from {@link servers} once it closes
   * (the SDK closes a per-request server when its exchange ends, or without connecting it when it refuses the request)
   * and its pipeline is idle, so it is neither kept for ever nor drained at shutdown. Its request's refusal, if the
   * pipeline recorded one, may get a second `http` record (the HTTP layer cannot tell that the pipeline saw it).
   */
  #unmatched(server: HMCPServer): void {
    if (!this.#missLogged) {
      this.#missLogged = true;
      this.#logger.warn("modern-era: a per-request server was not matched to its HTTP request; such servers are released when they close (a refusal the pipeline recorded may get a second http record)", { agent: this.#agent });
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      void server.pipeline.whenIdle().then(() => this.#servers.delete(server));
    };
    const inner = server.server;
    const previousOnClose = inner.onclose;
    inner.onclose = () => {
      release();
      previousOnClose?.();
    };
    const close = server.close.bind(server);
    server.close = async () => {
      try {
        await close();
      } finally {
        release();
      }
    };
  }

  /** Serves one modern-era request (the era routing's `modern`). */
  readonly serve = async (req: Request, res: Response): Promise<void> => {
    const method = (req.body as { method?: unknown } | undefined)?.method;
    if (method === "subscriptions/listen") {
      if (this.#refuseTaskNotifications(req, res)) return;
      if (!this.#holdSubscription(req, res)) return;
    } else if (typeof method === "string" && TASK_METHODS.has(method) && this.#refuseTaskMethod(req, res)) return;
    const built: HMCPServer[] = [];
    try {
      await serveWebExchange(this.#handler, req, res, {
        // the Request the factory finds this request's servers by
        onRequest: (request) => this.#builtByRequest.set(request, built),
        maxRequestBodySize: this.#bodyLimitBytes,
        onerror: (error) => this.#logger.error("modern-era request failed", { agent: this.#agent, ...errorMeta(error) }),
      });
    } finally {
      // its record is written when its handler returns, which may be after the response was sent
      for (const server of built) void server.pipeline.whenIdle().then(() => this.#servers.delete(server));
      // refused by the SDK before any handler ran, so no HMCP pipeline recorded it: a method the server does not serve or
      // 2026-07-28 removed (404, -32601), a malformed envelope, an unsupported revision, headers that disagree with the
      // body or a missing client capability (400), a scope challenge (403); one record here. A request the pipeline
      // took (an in-band -32021 is HTTP 400 too) has its own record; 499 is the client gone, not a refusal.
      const status = res.statusCode;
      if (status >= 400 && status !== 499 && !built.some((s) => s.pipeline.handled > 0)) {
        this.#audit.refused(req, res, status, modernRefusalReason(status), "failed");
      }
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
   * Task status notifications (`notifications.taskIds`) asked for by a client that did not declare the tasks extension:
   * -32021 with the missing capability (SEP-2663, "Task Status Notifications"), HTTP 400, one audit record.
   * @returns true when refused (the response is sent)
   */
  #refuseTaskNotifications(req: Request, res: Response): boolean {
    const params = (req.body as { params?: { notifications?: { taskIds?: unknown }; _meta?: Record<string, unknown> } }).params;
    if (params?.notifications?.taskIds === undefined || declaresTasks(params._meta)) return false;
    this.#refuseWithoutTasks(req, res, "Task notifications need the io.modelcontextprotocol/tasks extension");
    return true;
  }

  /**
   * `tasks/get`, `tasks/update` or `tasks/cancel` from a client that did not declare the tasks extension: -32021 with
   * the missing capability (SEP-2663), HTTP 400, one audit record, decided here before any server is built, so the
   * answer is the same whether or not the agent's servers offer tasks (a server without task support registers no
   * tasks/* handler: a client declaring the extension gets -32601 from it).
   * @returns true when refused (the response is sent)
   */
  #refuseTaskMethod(req: Request, res: Response): boolean {
    const body = req.body as { id?: unknown; params?: { _meta?: Record<string, unknown> } };
    // a notification of that name is not a call: the SDK's to ignore
    if (!("id" in body) || declaresTasks(body.params?._meta)) return false;
    this.#refuseWithoutTasks(req, res, "The tasks/* methods need the io.modelcontextprotocol/tasks extension");
    return true;
  }

  #refuseWithoutTasks(req: Request, res: Response, message: string): void {
    this.#audit.refuse(req, res, {
      status: 400,
      code: ProtocolErrorCode.MissingRequiredClientCapability,
      message,
      reason: "missing_client_capability",
      data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } },
      id: (req.body as { id?: string | number }).id ?? null,
    });
  }

  /**
   * A `subscriptions/listen` stream stays open (SSE keep-alive) like a 2025 session's GET stream, so it is held like
   * one: refused over the principal's `maxSessionsPerPrincipal` (429) or the app's `maxSessions` (503), and recorded
   * when it ends (an `http` record, outcome allowed, reason `subscription_closed`, latency = how long it was open).
   * @returns false when the stream was refused (the response is sent)
   */
  #holdSubscription(req: Request, res: Response): boolean {
    const principal = principalOf(req);
    const id = (req.body as { id?: string | number }).id ?? null;
    const seat = this.#sessions.holdStream(principal);
    if ("refused" in seat && seat.refused === "principal") {
      this.#audit.refuse(req, res, {
        status: 429,
        code: TRANSPORT_ERROR,
        message: `Too many sessions and subscriptions for this client (${this.#sessions.maxSessionsPerPrincipal})`,
        reason: "too_many_sessions_for_principal",
        headers: { "retry-after": "30" },
        id,
      });
      return false;
    }
    if ("refused" in seat) {
      this.#audit.refuse(req, res, { status: 503, code: TRANSPORT_ERROR, message: "Too many sessions", reason: "too_many_sessions", outcome: "failed", headers: { "retry-after": "5" }, id });
      return false;
    }
    res.once("close", () => {
      seat.release();
      this.#audit.httpRecord(req, res, { method: "subscriptions/listen", outcome: "allowed", reason: "subscription_closed", status: res.statusCode, principal });
    });
    return true;
  }
}

/** The tasks extension's methods (SEP-2663), which a client must declare the extension to call. */
const TASK_METHODS: ReadonlySet<string> = new Set(["tasks/get", "tasks/update", "tasks/cancel"]);

/** The audit reason of a status the SDK's 2026-07-28 handler answered before any handler ran. */
function modernRefusalReason(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request";
    case 403:
      return "insufficient_scope";
    case 404:
      return "method_not_found";
    case 413:
      return "body_too_large";
    case 415:
      return "unsupported_media_type";
    default:
      return status >= 500 ? "internal_error" : `refused_${status}`;
  }
}

/**
 * What a log line says of an error that failed a modern-era request: its name only (a handler's message may hold PHI),
 * and the message of a configuration error (HMCP's own words, no request content), which tells the operator the fix.
 */
function errorMeta(error: Error): { error: string; message?: string } {
  return error instanceof HMCPConfigError ? { error: error.name, message: error.message } : { error: error.name };
}
