/**
 * The express adapter (DESIGN.md §2): a short list of named middlewares around the SDK's handlers. In order: timing
 * (the clock of refusal records) → Host check → the `/healthz` and RFC 9728 metadata routes → on the endpoint: body
 * limit → bearer check → shutdown gate → era routing (MCP 2026-07-28 to the SDK's per-request handler, the 2025 era to
 * its sessions) → error boundary. Each refusal on the way is audited where it is decided (refusal-audit.ts). The only
 * folder that imports express.
 */
import { createServer as createNodeServer, type Server as NodeHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import express, { type Express } from "express";
import type { ServerNotifier } from "@modelcontextprotocol/server";
import { HMCPConfigError } from "../protocol/index.js";
import type { BearerAuthenticator } from "../auth/types.js";
import type { AuditSink } from "../audit/record.js";
import { auditSinkStatus, type AuditSinkStatus } from "../audit/admission.js";
import { defaultOperationalLogger, type HMCPServer, type OperationalLogger } from "../server/index.js";
import { STOP_TASK_RUNS } from "../server/hmcp-server.js";
import type { EventStoreLimits } from "./event-store.js";
import type { PostgresEventStore } from "./event-store-postgres.js";
import { anonymousCaller, bearerCheck, protectedResourceMetadata, RESOURCE_METADATA_ROUTE } from "./bearer-check.js";
import { bodyLimit, DEFAULT_BODY_LIMIT_BYTES } from "./body-limit.js";
import { eraRouting } from "./era-routing.js";
import { errorBoundary } from "./error-boundary.js";
import { DEFAULT_ALLOWED_HOSTS, hostCheck } from "./host-check.js";
import { legacyEra } from "./legacy-era.js";
import { LegacySessions } from "./legacy-sessions.js";
import { ModernEra } from "./modern-era.js";
import { validateHttpAppOptions } from "./options.js";
import { RefusalAudit, timing } from "./refusal-audit.js";
import { shutdownGate } from "./shutdown-gate.js";
import { clientErrorHandler } from "./client-error.js";
import { requestChecks } from "./request-checks.js";
import { requestCap } from "./request-cap.js";
import { settleWithin } from "../util/settle.js";

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  /**
   * Builds a server: one per MCP session on the 2025 era, one per request on MCP 2026-07-28 (which has no sessions), so
   * keep it cheap and share guardrails / audit instances across the servers it builds. Each call must return a new
   * `HMCPServer`: an instance returned before fails that session or request (HTTP 500 / internal error, an
   * `HMCPConfigError` in the operational log), as one server cannot serve two transports.
   */
  createServer: () => HMCPServer;
  /**
   * The bearer check (src/auth). Required: pass `false` explicitly to serve without authentication (local
   * development only; requests then reach the pipeline with no principal and are refused unless the server
   * runs with `auth: false`). A function `(resource: URL) => BearerAuthenticator` binds the resource identifier late:
   * {@link listen} calls it once with the URL actually bound (`http://127.0.0.1:<port>/mcp`), so the audience need not be
   * known before the port is chosen (or call {@link HttpApp.bindResource} when serving the app yourself). Until then
   * the endpoint answers 503 and the metadata 404.
   */
  bearer: BearerAuthenticator | false | ((resource: URL) => BearerAuthenticator);
  /** Path of the MCP endpoint. Default "/mcp". */
  path?: string;
  /** Host header names accepted (DNS rebinding protection). Default: `["localhost", "127.0.0.1", "[::1]"]`. */
  allowedHosts?: string[];
  /** Largest JSON body accepted, bytes. Default 1,048,576 (1 MiB); larger bodies get HTTP 413. */
  bodyLimitBytes?: number;
  /**
   * Where 2025-era sessions keep the events a client can resume from (`Last-Event-ID`): limits of each session's
   * in-memory store, and `totalBytes` for all sessions together (default 64 MiB; see {@link EventStoreLimits}); or a
   * {@link PostgresEventStore} (one table shared by every session, and by every instance pointed at it; its limits are
   * its own); `false` disables resumability. Default: in memory, with the default limits.
   */
  eventStore?: EventStoreLimits | PostgresEventStore | false;
  /** Most concurrent sessions; further initialize requests get HTTP 503. Default 10,000. */
  maxSessions?: number;
  /**
   * Most concurrent sessions one authenticated principal (issuer, tenant, client, subject) may hold, counting sessions
   * being opened; its further initialize requests get HTTP 429 with `Retry-After` until it closes one (DELETE) or one
   * times out. Keeps one client from taking every session of {@link maxSessions}. An open MCP 2026-07-28
   * `subscriptions/listen` stream counts as a session here and in `maxSessions`. Not applied without a principal
   * (`bearer: false`). Default 1,000 (or `maxSessions`, if smaller).
   */
  maxSessionsPerPrincipal?: number;
  /**
   * Most JSON-RPC requests served at once, both eras together; a further one gets HTTP 503 with `Retry-After: 1` and an
   * audit record (`too_many_requests`) until one ends. Default 1,024.
   */
  maxConcurrentRequests?: number;
  /** A session with no request for this long, and none running, is closed, ms. Default 1,800,000 (30 minutes). */
  sessionIdleTimeoutMs?: number;
  /** Receives records for requests refused at the HTTP layer and for session start/end. */
  audit?: AuditSink;
  /** Operational logger for failures. Default: the server's default redacting logger on stderr. */
  logger?: OperationalLogger;
  /** Agent name used in those records. Default "hmcp". */
  agentName?: string;
  /**
   * Reconnection delay suggested to clients in the SSE `retry:` field (MCP 2025-11-25 SSE polling, SEP-1699), ms.
   * Default 1,000.
   */
  sseRetryMs?: number;
  /** Answer with JSON instead of SSE streams when the server sends nothing back mid-request (no resumability then). Default false. */
  enableJsonResponse?: boolean;
}

/** The app and its lifecycle. */
export interface HttpApp {
  readonly app: Express;
  /**
   * For an app created with a bearer factory: builds the bearer check for `base` + the endpoint's path (e.g.
   * `http://127.0.0.1:3001` → resource `http://127.0.0.1:3001/mcp`); {@link listen} calls it. Returns the resource
   * identifier (present on every app `createHttpApp` returns). @throws HMCPConfigError when the app has no bearer
   * factory or was bound already
   */
  bindResource?(base: URL): URL;
  /** True while an app created with a bearer factory waits for {@link HttpApp.bindResource}. */
  readonly awaitingResource?: boolean;
  /** Open MCP sessions. */
  readonly sessionCount: number;
  /**
   * Readiness, as `GET /readyz` answers it (`/healthz` is liveness: the process is up): `ready`, or `not_ready` with
   * each problem (the audit sink failed, with its error code and since when; the bearer resource not bound yet;
   * shutting down). Present on every app `createHttpApp` returns.
   */
  readiness?(): Readiness;
  /**
   * The Node HTTP server's `clientError` listener: a request Node's HTTP parser refuses before express sees it (headers
   * over `maxHeaderSize`: 431; malformed HTTP: 400; a request not received within `requestTimeout` or headers within
   * `headersTimeout`: 408) is answered as Node would and gets one `http` audit record with what is known (the peer's
   * address, the status, the reason; no method or path: the parser had none). {@link listen} installs it; when you
   * serve the app on your own server, install it yourself: `server.on("clientError", httpApp.clientError)` (present on
   * every app `createHttpApp` returns).
   */
  readonly clientError?: (error: Error & { code?: string }, socket: Duplex) => void;
  /**
   * Tells connected clients that what the agent offers changed: `toolsChanged()`, `promptsChanged()`,
   * `resourcesChanged()` send `notifications/{tools,prompts,resources}/list_changed`, `resourceUpdated(uri)` sends
   * `notifications/resources/updated`, to every open MCP 2026-07-28 `subscriptions/listen` stream that opted in to it
   * and to every open 2025-era session (on its standalone SSE stream, when its server has the capability). Call it when
   * the tools, prompts or resources the `createServer` factory registers change. Never throws; a no-op without clients.
   * (A per-request server's own `sendToolListChanged()` and siblings publish to the streams the same way.)
   */
  readonly notify: ServerNotifier;
  /**
   * Graceful shutdown of the MCP endpoint; the HTTP listener is the caller's (see {@link listen}).
   * 1. From the call on, new sessions and new JSON-RPC requests get HTTP 503 (`Retry-After`); what open sessions send
   *    for requests already running (responses to the server's own requests, notifications, their SSE streams) is
   *    still served.
   * 2. Waits for the running requests to finish, at most `drainTimeoutMs` (default 10,000 ms): they are answered and
   *    their audit records appended, so closing the audit sink after this resolves loses none.
   * 3. Closes every session (transport and server; a request still running then sees its signal aborted) and waits up
   *    to 1,000 ms more for such requests to return. Any still running after that get their audit record now
   *    (`outcome: "failed"`, `reason: "abandoned_at_shutdown"`; not again when they return) and are logged (count only),
   *    so closing the audit sink after this resolves still loses no record.
   * 4. Task runs this app's servers started (they outlive their requests; another app's runs go on) drain within the
   *    same `drainTimeoutMs`; the rest are aborted (logged, count only) and waited for up to 1,000 ms, so their records
   *    are written too, and none of its runs starts after that (a request still in flight cannot start one). An
   *    aborted or unstarted run's task is not stored as ended: it stays `working` until its lease runs out, then an
   *    instance still serving fails it (`task_runner_lost`) or re-runs it (idempotent tools), as after a crash.
   * Never rejects.
   */
  close(options?: { drainTimeoutMs?: number }): Promise<void>;
}

/**
 * Creates the express app serving MCP over Streamable HTTP (MCP spec 2025-06-18, "Transports"), with RFC 9728
 * protected resource metadata, `GET /healthz` (liveness), `GET /readyz` (readiness), bounded resumable sessions and graceful shutdown.
 * @throws HMCPConfigError (a TypeError) on an unknown option (naming the closest known one), a missing `bearer` or
 *   `createServer`, or a limit that is not a positive integer
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  validateHttpAppOptions(options);
  if (options.bearer === undefined) {
    throw new HMCPConfigError("createHttpApp: 'bearer' is required (a BearerAuthenticator, or false to serve without authentication)", "bearer");
  }
  const path = options.path ?? "/mcp";
  const bearerFactory = typeof options.bearer === "function" ? options.bearer : undefined;
  // the bearer check in force: false (none), undefined (a factory not yet bound: 503), or the authenticator
  let bearer: BearerAuthenticator | false | undefined = bearerFactory ? undefined : (options.bearer as BearerAuthenticator | false);
  const bearerInForce = () => bearer || undefined;
  const agent = options.agentName ?? "hmcp";
  const logger = options.logger ?? defaultOperationalLogger();
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const maxSessions = options.maxSessions ?? 10_000;
  const audit = new RefusalAudit(options.audit, agent, path);
  // the task runs this app's servers start are marked as this app's (a run outlives its request), so close stops
  // them and no other app's: per task runtime (one per store), how to stop them
  const runOrigin = {};
  const taskRuns = new Map<object, (drainMs: number) => Promise<number>>();
  // a factory that hands out one instance again would wire it to a second transport: later sessions then fail with
  // -32601 and nothing says why, so a reused instance is refused where it happens
  const built = new WeakSet<HMCPServer>();
  const createServer = (): HMCPServer => {
    const server = options.createServer();
    if (built.has(server)) {
      throw new HMCPConfigError("createHttpApp: createServer returned a server it had returned before; build a new HMCPServer on each call (share the guardrails and audit instances, not the server)", "createServer");
    }
    built.add(server);
    const runs = server[STOP_TASK_RUNS](runOrigin);
    if (runs !== undefined && !taskRuns.has(runs.runtime)) taskRuns.set(runs.runtime, runs.stop);
    return server;
  };
  const sessions = new LegacySessions({
    createServer,
    eventStore: options.eventStore,
    enableJsonResponse: options.enableJsonResponse,
    sseRetryMs: options.sseRetryMs ?? 1000,
    maxSessions,
    maxSessionsPerPrincipal: options.maxSessionsPerPrincipal ?? Math.min(1_000, maxSessions),
    idleTimeoutMs: options.sessionIdleTimeoutMs ?? 1_800_000,
    audit,
  });
  const modern = new ModernEra({ createServer, bodyLimitBytes, enableJsonResponse: options.enableJsonResponse, sessions, audit, logger, agent });
  // without a bearer check every request reaches the server as an anonymous caller
  const auth = options.bearer === false ? anonymousCaller : bearerCheck({ bearer: bearerInForce, sessionServer: (sid) => sessions.serverOf(sid), audit, logger, agent });
  let closing = false;

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(timing, hostCheck(options.allowedHosts ?? DEFAULT_ALLOWED_HOSTS, audit));
  const readiness = (): Readiness => {
    const problems: ReadinessProblem[] = [];
    if (closing) problems.push({ component: "http", reason: "shutting_down", message: "the agent is shutting down (HttpApp.close was called)" });
    if (bearerFactory !== undefined && !bearer) {
      problems.push({ component: "bearer", reason: "resource_not_bound", message: "the bearer check waits for its resource identifier (listen() binds it, or call HttpApp.bindResource)" });
    }
    const sink = options.audit === undefined ? undefined : auditSinkStatus(options.audit);
    if (sink !== undefined) problems.push(auditProblem(sink));
    return problems.length === 0 ? { status: "ready" } : { status: "not_ready", problems };
  };
  // liveness: the process is up and answers (restart it only when this fails)
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok", sessions: sessions.size, ready: readiness().status === "ready" });
  });
  // readiness: whether requests can be served now, and if not, why
  app.get("/readyz", (_req, res) => {
    const r = readiness();
    res.status(r.status === "ready" ? 200 : 503).set("cache-control", "no-store").json(r);
  });
  if (options.bearer !== false) app.get(RESOURCE_METADATA_ROUTE, protectedResourceMetadata(bearerInForce));
  app.use(path, ...bodyLimit(bodyLimitBytes), auth);
  app.all(path, requestChecks(audit), shutdownGate(() => closing, audit), requestCap(options.maxConcurrentRequests ?? 1_024, audit), eraRouting({ modern: modern.serve, legacy: legacyEra(sessions, audit, options.audit) }));
  app.use(errorBoundary(audit, logger, agent));

  return {
    app,
    readiness,
    clientError: clientErrorHandler(audit),
    bindResource(base: URL): URL {
      if (!bearerFactory) throw new HMCPConfigError("createHttpApp: bindResource needs a bearer factory ((resource: URL) => BearerAuthenticator)", "bearer");
      if (bearer) throw new HMCPConfigError("createHttpApp: the resource identifier is bound already", "bearer");
      const resource = new URL(path, base);
      bearer = bearerFactory(resource);
      return resource;
    },
    get awaitingResource() {
      return bearerFactory !== undefined && !bearer;
    },
    get sessionCount() {
      return sessions.size;
    },
    notify: {
      toolsChanged: () => {
        modern.notify.toolsChanged();
        for (const server of sessions.servers()) server.sendToolListChanged();
      },
      promptsChanged: () => {
        modern.notify.promptsChanged();
        for (const server of sessions.servers()) server.sendPromptListChanged();
      },
      resourcesChanged: () => {
        modern.notify.resourcesChanged();
        for (const server of sessions.servers()) server.sendResourceListChanged();
      },
      resourceUpdated: (uri: string) => {
        modern.notify.resourceUpdated(uri);
        for (const server of sessions.servers()) void server.server.sendResourceUpdated({ uri }).catch(() => undefined);
      },
    },
    async close(closeOptions = {}) {
      closing = true;
      sessions.stopSweeper();
      const drainMs = closeOptions.drainTimeoutMs ?? 10_000;
      // task runs (they outlive their requests) drain within the same budget as requests, then the rest are aborted:
      // their tasks stay working until their lease runs out, then are failed or re-run by an instance still serving
      const stopping = new Set(taskRuns.keys());
      const runsStopped = Promise.all([...taskRuns.values()].map((stop) => stop(drainMs)));
      await idle([...sessions.servers(), ...modern.servers()], drainMs);
      const closed = await sessions.closeAll();
      // requests that outlived the drain saw their signal aborted: give them a moment to return and leave their records
      // modern-era requests hold no session: what still runs after the drain is aborted like a session's requests
      await modern.close();
      const servers = [...closed, ...sessions.retiringServers(), ...modern.servers()];
      await idle(servers, 1000);
      // their records are written now, while the caller's audit sink is still open, and not again when they return
      const running = servers.reduce((n, s) => n + s.pipeline.inFlight, 0);
      const recorded = servers.reduce((n, s) => n + s.pipeline.recordAbandoned("abandoned_at_shutdown"), 0);
      if (running > 0) {
        logger.warn("shutdown: requests still running after their sessions closed (recorded: audit records written for them now, as failed with reason abandoned_at_shutdown)", { agent, requests: running, recorded });
      }
      // a runtime first used by a server built during the drain: its runs are stopped now, without more waiting
      const late = [...taskRuns.entries()].filter(([runtime]) => !stopping.has(runtime)).map(([, stop]) => stop(0));
      const aborted = [...(await runsStopped), ...(await Promise.all(late))].reduce((n, k) => n + k, 0);
      if (aborted > 0) logger.warn("shutdown: task runs still going after the drain were aborted (their tasks stay working until their lease expires, then are failed or re-run elsewhere)", { agent, taskRuns: aborted });
    },
  };
}

/** What the readiness check reports, as on `GET /readyz`. */
export type Readiness = { status: "ready" } | { status: "not_ready"; problems: ReadinessProblem[] };

/**
 * One reason the app cannot serve requests now; no PHI, no paths, no secrets.
 * - `audit` / `audit_sink_failed`: the audit sink's write failed (`code`: `ENOSPC` disk full, `EROFS` read-only file
 *   system, `EACCES`, `EIO`, a PostgreSQL SQLSTATE ...) `since` when; requests get -32055 until it recovers. HMCP's
 *   sinks retry on their own and recover once the cause is fixed (free space, remount read-write);
 *   `recovers: false` (a sink of your own that refused a record): restart the process once it is fixed.
 * - `audit` / `audit_sink_closed`: the sink was closed (shutdown). `audit` / `audit_backpressure`: its queue is full
 *   (the disk is slower than the load); passes as it drains.
 * - `bearer` / `resource_not_bound`: a bearer factory waiting for {@link HttpApp.bindResource}.
 * - `http` / `shutting_down`: {@link HttpApp.close} was called.
 */
export interface ReadinessProblem {
  component: "audit" | "bearer" | "http";
  reason: string;
  /** What to do, in words. */
  message: string;
  code?: string;
  since?: string;
  /** Audit records waiting for the sink's recovery. */
  waiting?: number;
  recovers?: boolean;
}

function auditProblem(s: AuditSinkStatus): ReadinessProblem {
  const message =
    s.reason === "audit_sink_closed"
      ? "the audit sink is closed; requests are refused (-32055)"
      : s.reason === "audit_backpressure"
        ? "the audit sink's queue is full (storage slower than the load); requests are refused (-32055) until it drains"
        : s.recovers
          ? `the audit sink cannot write${s.code ? ` (${s.code})` : ""}; requests are refused (-32055) until it recovers: fix the cause (free space, make the folder writable, bring the database back) and it resumes on its next retry`
          : `the audit sink refused a record${s.code ? ` (${s.code})` : ""}; requests are refused (-32055): restart the process once the sink is fixed`;
  return { component: "audit", reason: s.reason, message, ...(s.code !== undefined && { code: s.code }), ...(s.since !== undefined && { since: s.since }), ...(s.waiting !== undefined && { waiting: s.waiting }), recovers: s.recovers };
}

/** Resolves when every server in `servers` is idle (its running requests answered and recorded) or after `ms`. */
function idle(servers: HMCPServer[], ms: number): Promise<void> {
  return settleWithin(Promise.all(servers.map((s) => s.pipeline.whenIdle())), ms);
}


/** A running HTTP listener. */
export interface Listening {
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  url: URL;
  server: NodeHttpServer;
  /** Graceful shutdown: {@link HttpApp.close} (drains running requests, then closes sessions), then stops accepting and ends open connections. */
  close(options?: { drainTimeoutMs?: number }): Promise<void>;
}

/** Options of {@link listen}. */
export interface ListenOptions {
  /** Port; default a free one. */
  port?: number;
  /** Interface; default 127.0.0.1. */
  host?: string;
  /**
   * Time a client has to send its request headers, ms (Node's `headersTimeout`); a client that trickles them (slowloris)
   * gets 408 and an audit record (`request_timeout`). Default 10,000 (Node's own is 60,000).
   */
  headersTimeoutMs?: number;
  /**
   * Time a client has to send its whole request, body included, ms (Node's `requestTimeout`): a body trickled byte by
   * byte is cut off with 408 and an audit record. Not the time to answer: a long-running request or SSE stream is not
   * affected. Default 30,000 (Node's own is 300,000).
   */
  requestTimeoutMs?: number;
}

/**
 * Listens on `host:port` (default 127.0.0.1 and a free port) on a Node HTTP server whose header and request timeouts
 * ({@link ListenOptions}) cut slow clients off, with the app's {@link HttpApp.clientError} listener.
 * @throws HMCPConfigError when a timeout is not a positive integer; the listen error (EADDRINUSE …)
 */
export async function listen(httpApp: HttpApp, options: ListenOptions = {}): Promise<Listening> {
  const host = options.host ?? "127.0.0.1";
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  for (const [name, v] of [["headersTimeoutMs", headersTimeout], ["requestTimeoutMs", requestTimeout]] as const) {
    if (!(Number.isSafeInteger(v) && v > 0)) throw new HMCPConfigError(`listen: '${name}' must be a positive integer (ms)`, name);
  }
  const server = await new Promise<NodeHttpServer>((resolve, reject) => {
    // Node checks both timeouts every connectionsCheckingInterval (its default 30 s would let a slow client hold a
    // connection long past them): checked at a tenth of the shorter one, at most every second
    const s = createNodeServer({ headersTimeout: Math.min(headersTimeout, requestTimeout), requestTimeout, connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(Math.min(headersTimeout, requestTimeout) / 10))) }, httpApp.app);
    s.once("error", reject);
    s.listen(options.port ?? 0, host, () => resolve(s));
    // refusals of Node's HTTP parser (431 headers too large, 400 malformed HTTP, 408 timeouts), answered and audited
    if (httpApp.clientError) s.on("clientError", httpApp.clientError);
  });
  const { port } = server.address() as AddressInfo;
  const url = new URL(`http://${host.includes(":") ? `[${host}]` : host}:${port}`);
  // a bearer factory gets the resource identifier of the address actually bound
  if (httpApp.awaitingResource) httpApp.bindResource!(url);
  return {
    url,
    server,
    async close(closeOptions) {
      await httpApp.close(closeOptions);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
