/**
 * The express adapter (DESIGN.md §2): host check → body limit → bearer check → Streamable HTTP session → the
 * server's pipeline. The only folder that imports express.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import type { Server as NodeHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { createMcpHandler, isInitializeRequest, PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import type { AuthInfo } from "@modelcontextprotocol/server";
import { hostHeaderValidation } from "@modelcontextprotocol/express";
import { NodeStreamableHTTPServerTransport } from "@modelcontextprotocol/node";
import { HMCPConfigError, HMCPErrorCode, refuseUnknownOptions, type Principal } from "../protocol/index.js";
import type { BearerAuthenticator } from "../auth/types.js";
import { AUDIT_RECORD_VERSION, markInternalRecord, type AuditRecordInput, type AuditSink } from "../audit/record.js";
import { defaultOperationalLogger, type HMCPServer, type OperationalLogger } from "../server/index.js";
import { appendUnreserved, auditSinkUnavailable } from "../audit/admission.js";
import { BoundedEventStore, EventStoreBudget, type EventStoreLimits } from "./event-store.js";

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  /**
   * Builds a server: one per MCP session on the 2025 era, one per request on MCP 2026-07-28 (which has no sessions), so
   * keep it cheap and share guardrails / audit instances across the servers it builds.
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
   * Limits of each session's event store (resumability), and `totalBytes` for all sessions together (default 64 MiB);
   * `false` disables resumability. Default: see {@link EventStoreLimits}.
   */
  eventStore?: EventStoreLimits | false;
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
   * Never rejects.
   */
  close(options?: { drainTimeoutMs?: number }): Promise<void>;
}

interface Session {
  transport: NodeStreamableHTTPServerTransport;
  eventStore: BoundedEventStore | undefined;
  server: HMCPServer;
  /** Who may use the session: {@link ownerOf} its opener. */
  owner: string;
  /** Whose session cap it counts against: {@link principalKeyOf} its opener. */
  holder: string;
  /** The opener's granted scopes: a GET or DELETE on the session needs a token with all of them. */
  scopes: ReadonlySet<string>;
  principal: Principal | undefined;
  lastSeen: number;
  sourceAddress: string | undefined;
}

const HTTP_APP_OPTIONS = new Set([
  "createServer", "bearer", "path", "allowedHosts", "bodyLimitBytes", "eventStore", "maxSessions", "maxSessionsPerPrincipal", "sessionIdleTimeoutMs",
  "audit", "logger", "agentName", "sseRetryMs", "enableJsonResponse",
]);

/** @throws HMCPConfigError (a TypeError) naming the first unknown option (and the closest known one) or bad value. */
function validateHttpAppOptions(options: HttpAppOptions): void {
  if (typeof options !== "object" || options === null) throw new HMCPConfigError("createHttpApp: options must be an object", "");
  refuseUnknownOptions("createHttpApp", options, HTTP_APP_OPTIONS);
  if (typeof options.createServer !== "function") throw new HMCPConfigError("createHttpApp: 'createServer' must be a function returning an HMCPServer", "createServer");
  const positive = (name: "bodyLimitBytes" | "maxSessions" | "maxSessionsPerPrincipal" | "sessionIdleTimeoutMs" | "sseRetryMs") => {
    const v = options[name];
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0)) throw new HMCPConfigError(`createHttpApp: '${name}' must be a positive integer`, name);
  };
  positive("bodyLimitBytes");
  positive("maxSessions");
  positive("maxSessionsPerPrincipal");
  positive("sessionIdleTimeoutMs");
  positive("sseRetryMs");
  if (options.path !== undefined && !(typeof options.path === "string" && options.path.startsWith("/"))) throw new HMCPConfigError("createHttpApp: 'path' must start with '/'", "path");
  if (options.allowedHosts !== undefined && !(Array.isArray(options.allowedHosts) && options.allowedHosts.length > 0)) {
    throw new HMCPConfigError("createHttpApp: 'allowedHosts' must be a non-empty list of host names", "allowedHosts");
  }
}

/**
 * Creates the express app serving MCP over Streamable HTTP (MCP spec 2025-06-18, "Transports"), with RFC 9728
 * protected resource metadata, `GET /healthz`, bounded resumable sessions and graceful shutdown.
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
  const agent = options.agentName ?? "hmcp";
  const maxSessions = options.maxSessions ?? 10_000;
  const maxPerPrincipal = options.maxSessionsPerPrincipal ?? Math.min(1_000, maxSessions);
  const idleMs = options.sessionIdleTimeoutMs ?? 1_800_000;
  const sessions = new Map<string, Session>();
  /** Sessions ended (client DELETE, transport closed) while requests in them were still running, until those return. */
  const retiring = new Set<Session>();
  // Sessions per principal (whatever their patient context), open or being opened (an initialize request between its
  // checks and onsessioninitialized), and initialize requests in progress: concurrent initialize requests cannot
  // overrun either cap.
  const held = new Map<string, number>();
  let opening = 0;
  const hold = (holder: string, delta: 1 | -1) => {
    const n = (held.get(holder) ?? 0) + delta;
    if (n > 0) held.set(holder, n);
    else held.delete(holder);
  };
  // one byte budget for the event stores of all sessions (EventStoreLimits.totalBytes)
  const eventBudget = new EventStoreBudget(options.eventStore === false ? 0 : (options.eventStore?.totalBytes ?? 64 * 1024 * 1024));

  const audit = (r: Omit<AuditRecordInput, "v" | "id" | "time" | "agent" | "patients" | "scopes" | "guardrails" | "digests"> & Partial<AuditRecordInput>) => {
    if (!options.audit) return;
    try {
      appendUnreserved(options.audit, markInternalRecord({
        v: AUDIT_RECORD_VERSION,
        id: randomUUID(),
        time: new Date().toISOString(),
        agent,
        patients: [],
        scopes: [],
        guardrails: [],
        digests: {},
        ...r,
      } as AuditRecordInput));
    } catch {
      // the sink reports its own failures
    }
  };
  const actorOf = (p: Principal | undefined) =>
    p ? Object.fromEntries(Object.entries({ sub: p.sub, clientId: p.clientId, fhirUser: p.fhirUser, tenant: p.tenant }).filter(([, v]) => v !== undefined)) : {};

  // The principal as SECURITY.md defines it (issuer, tenant, client, subject); JSON so no value can forge a separator.
  const principalKeyOf = (p: Principal | undefined) => (p ? JSON.stringify([p.issuer ?? null, p.tenant ?? null, p.clientId, p.sub ?? null]) : "anonymous");
  // Who may use a session: the principal and its SMART patient launch context, so a token of the same client and
  // subject launched for another patient (or for none) cannot read what the session produced for the first.
  const ownerOf = (p: Principal | undefined) =>
    p ? JSON.stringify([p.issuer ?? null, p.tenant ?? null, p.clientId, p.sub ?? null, p.patient ?? null]) : "anonymous";
  const principalOf = (req: Request) => ((req as Request & { auth?: AuthInfo }).auth?.extra?.["principal"] as Principal | undefined);
  const logger = options.logger ?? defaultOperationalLogger();

  // MCP 2026-07-28 (the modern era): no session; every request carries its protocol version and client capabilities in
  // `_meta` and is served by a fresh server from the same factory, through the SDK's per-request handler. The bearer
  // check, Host check and size limit in front are the ones the 2025 era passes; the server's pipeline audits it.
  /** The servers built for modern-era requests now in progress (drained and recorded by close() like sessions). */
  const modernServers = new Set<HMCPServer>();
  const modernBatch = new AsyncLocalStorage<HMCPServer[]>();
  const modern = createMcpHandler(() => {
    const server = options.createServer().serveModernEra();
    modernServers.add(server);
    modernBatch.getStore()?.push(server);
    return server;
  }, {
    legacy: "reject",
    maxRequestBodySize: options.bodyLimitBytes ?? 1024 * 1024,
    responseMode: options.enableJsonResponse ? "json" : "auto",
    onerror: (error) => logger.warn("modern-era request failed in the SDK handler", { agent, error: error.name }),
  });
  const serveModernNode = toNodeHandler(modern, { maxRequestBodySize: options.bodyLimitBytes ?? 1024 * 1024, onerror: (error) => logger.error("modern-era request failed", { agent, error: error.name }) });
  /** Open 2026-07-28 `subscriptions/listen` streams: each counts like a session toward maxSessions and its holder's cap. */
  let listening = 0;
  /**
   * A `subscriptions/listen` stream stays open (SSE keep-alive) like a 2025 session's GET stream, so it is held like
   * one: refused over the principal's `maxSessionsPerPrincipal` (429) or the app's `maxSessions` (503), and recorded
   * when it ends (an `http` record, outcome allowed, reason `subscription_closed`, latency = how long it was open).
   * @returns false when the stream was refused (the response is sent)
   */
  const holdSubscription = (req: Request, res: Response): boolean => {
    const principal = principalOf(req);
    const holder = principalKeyOf(principal);
    const id = (req.body as { id?: unknown }).id ?? null;
    if (principal !== undefined && (held.get(holder) ?? 0) >= maxPerPrincipal) {
      refused(req, res, 429, "too_many_sessions_for_principal");
      res.status(429).set("retry-after", "30").json({ ...jsonRpcError(-32000, `Too many sessions and subscriptions for this client (${maxPerPrincipal})`), id });
      return false;
    }
    if (sessions.size + opening + listening >= maxSessions) {
      refused(req, res, 503, "too_many_sessions", "failed");
      res.status(503).set("retry-after", "5").json({ ...jsonRpcError(-32000, "Too many sessions"), id });
      return false;
    }
    hold(holder, 1);
    listening++;
    res.once("close", () => {
      hold(holder, -1);
      listening--;
      httpRecord(req, res, { method: "subscriptions/listen", outcome: "allowed", reason: "subscription_closed", status: res.statusCode, principal });
    });
    return true;
  };
  const serveModern = async (req: Request, res: Response) => {
    if ((req.body as { method?: unknown }).method === "subscriptions/listen" && !holdSubscription(req, res)) return;
    const built: HMCPServer[] = [];
    try {
      await modernBatch.run(built, () => serveModernNode(req, res, req.body));
    } finally {
      // its record is written when its handler returns, which may be after the response was sent
      for (const server of built) void server.pipeline.whenIdle().then(() => modernServers.delete(server));
      // refused by the SDK before any handler ran, so no HMCP pipeline recorded it: a method the server does not serve or
      // 2026-07-28 removed (404, -32601), a malformed envelope or an unsupported revision (400); one record here
      if (res.statusCode === 404 || res.statusCode === 400) refused(req, res, res.statusCode, res.statusCode === 404 ? "method_not_found" : "invalid_request", "failed");
    }
  };

  /**
   * One audit record for a request refused before it reached a server (bearer, host, limits, sessions). `principal`:
   * who was refused when the request's own auth is not set (a verified token refused for a missing scope).
   */
  const refused = (req: Request, res: Response, status: number, reason: string, outcome: "denied" | "failed" = "denied", principal = principalOf(req)) =>
    httpRecord(req, res, { method: `${req.method} ${path}`, outcome, reason, status, principal });

  /** One `http` audit record about `req` (latency: since the request arrived). */
  const httpRecord = (req: Request, res: Response, r: { method: string; outcome: AuditRecordInput["outcome"]; reason: string; status: number; principal: Principal | undefined }) =>
    audit({
      type: "http",
      actor: actorOf(r.principal),
      scopes: r.principal?.scopes ? [...r.principal.scopes] : [],
      source: compact({ address: req.socket.remoteAddress }),
      transport: "http",
      method: r.method,
      outcome: r.outcome,
      reason: r.reason,
      status: r.status,
      latencyMs: Math.round((performance.now() - ((res.locals["t0"] as number | undefined) ?? performance.now())) * 1000) / 1000,
    });

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  const hostCheck = hostHeaderValidation(options.allowedHosts ?? ["localhost", "127.0.0.1", "[::1]"]);
  app.use((req, res, next) => {
    res.locals["t0"] = performance.now();
    let passed = false;
    hostCheck(req, res, () => {
      passed = true;
      next();
    });
    if (!passed && res.headersSent) refused(req, res, res.statusCode, "host_not_allowed");
  });

  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok", sessions: sessions.size });
  });
  if (options.bearer !== false) {
    // RFC 9728 protected resource metadata, at the path of the bearer check in force (known once a factory is bound)
    app.get(/^\/\.well-known\/oauth-protected-resource(?:\/.*)?$/, (req, res, next) => {
      const b = bearer;
      if (!b || req.path !== b.resourceMetadataPath) return next();
      res.set("cache-control", "public, max-age=300").json(b.resourceMetadata());
    });
  }

  // Body limit first, then the bearer check: the check reads the JSON-RPC method(s) to answer a missing method scope
  // with 403 insufficient_scope and the scope to request (RFC 6750 §3.1; MCP authorization, "Scope challenge").
  app.use(path, express.json({ limit: options.bodyLimitBytes ?? 1024 * 1024 }));

  // Without a bearer authenticator the session handler sets an anonymous AuthInfo itself (one middleware less).
  if (options.bearer !== false) app.use(path, async (req: Request, res: Response, next: NextFunction) => {
    const sourceAddress = req.socket.remoteAddress;
    const bearerNow = bearer;
    if (!bearerNow) {
      // a bearer factory not yet bound to the resource identifier (listen() binds it): fail closed
      refused(req, res, 503, "resource_not_bound", "failed");
      res.status(503).set("retry-after", "1").json(jsonRpcError(-32000, "Not ready: the resource identifier is not bound yet"));
      return;
    }
    const authorization: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      if (req.rawHeaders[i]!.toLowerCase() === "authorization") authorization.push(req.rawHeaders[i + 1]!);
    }
    let check;
    try {
      // In a session the session's server states its method scopes too (e.g. a sampling handler's requiredScopes),
      // so the HTTP 403 and the pipeline agree; the authenticator's own methodScopes entries still hold beside them. A
      // request without a session (initialize) uses the authenticator's table. GET (the session's SSE stream, replays
      // included) and DELETE carry no JSON-RPC body: they are checked as initialize, so using a session needs the
      // scopes opening it did.
      const sid = req.headers["mcp-session-id"];
      const session = typeof sid === "string" && req.method === "POST" ? sessions.get(sid) : undefined;
      check = await bearerNow.check({
        authorization,
        url: req.originalUrl,
        contentType: req.headers["content-type"],
        body: req.method === "GET" || req.method === "DELETE" ? AS_INITIALIZE : req.body,
        ...(session && { methodScopes: (m: string) => session.server.pipeline.requiredScopes(m) }),
      });
    } catch {
      check = undefined;
    }
    if (!check) {
      logger.error("bearer authenticator failed", { agent });
      refused(req, res, 500, "authenticator_error", "failed");
      res.status(500).json(jsonRpcError(-32603, "Internal error"));
      return;
    }
    if (!check.ok) {
      refused(req, res, check.status, check.reason ?? check.error ?? "no_token", "denied", check.principal);
      res
        .status(check.status)
        .set("www-authenticate", check.wwwAuthenticate)
        .set("cache-control", "no-store")
        // RFC 6750 §3.1: a request without credentials gets no error code, in the body as in the challenge; the body
        // repeats the challenge's scope and resource metadata URL, so a client that sees only the body can act on it
        .json({
          ...(check.error !== undefined && { error: check.error }),
          error_description: check.description,
          ...(check.scope !== undefined && check.status === 403 && { scope: check.scope }),
          ...(check.resourceMetadata !== undefined && { resource_metadata: check.resourceMetadata }),
        });
      return;
    }
    const p = check.verified.principal;
    (req as Request & { auth?: AuthInfo }).auth = {
      token: check.verified.token,
      clientId: p.clientId,
      scopes: p.scopes,
      ...(p.expiresAt !== undefined && { expiresAt: p.expiresAt }),
      extra: { principal: p, sourceAddress },
    };
    next();
  });


  app.all(path, async (req: Request, res: Response, next: NextFunction) => {
    try {
      if (!bearer) (req as Request & { auth?: AuthInfo }).auth = { token: "", clientId: "", scopes: [], extra: { sourceAddress: req.socket.remoteAddress } };
      const sid = req.headers["mcp-session-id"];
      // Shutting down: no new session and no new request; what serves requests already running still passes.
      if (closing && (typeof sid !== "string" || (req.method === "POST" && carriesRequest(req.body)))) {
        refused(req, res, 503, "shutting_down", "failed");
        res.status(503).set("retry-after", "5").json(jsonRpcError(-32000, "Server shutting down"));
        return;
      }
      if (req.method === "POST" && (carriesModernEnvelope(req.body) || claimsModernRevision(req.headers["mcp-protocol-version"]))) {
        await serveModern(req, res);
        return;
      }
      const principal = principalOf(req);
      if (typeof sid === "string") {
        const s = sessions.get(sid);
        // A session belongs to the principal that opened it, in the patient launch context it opened it in; for anyone
        // else (another principal, or the same one launched for another patient or none) it does not exist.
        if (!s || s.owner !== ownerOf(principal)) {
          refused(req, res, 404, "session_not_found");
          res.status(404).json(jsonRpcError(-32001, "Session not found"));
          return;
        }
        // GET (the session's SSE stream: replayed events carry results of requests the opener's token was allowed)
        // and DELETE need a token with every scope the session was opened with; a POST's methods are checked one by one.
        if (req.method !== "POST" && !coversScopes(principal?.scopes ?? [], s.scopes)) {
          refused(req, res, 404, "session_scopes_not_covered");
          res.status(404).json(jsonRpcError(-32001, "Session not found"));
          return;
        }
        s.lastSeen = Date.now();
        await s.transport.handleRequest(req, res, req.body);
        return;
      }
      if (req.method !== "POST" || !isInitializeRequest(req.body)) {
        refused(req, res, 400, "no_session");
        res.status(400).json(jsonRpcError(-32000, "Bad Request: no valid session id (send initialize first)"));
        return;
      }
      // Fail closed: no new session while the audit sink cannot take records (failed before, or its own health check).
      if (options.audit !== undefined && auditSinkUnavailable(options.audit)) {
        res.status(503).set("retry-after", "30").json(jsonRpcError(HMCPErrorCode.AuditUnavailable, "Audit trail unavailable"));
        return;
      }
      if (sessions.size + opening >= maxSessions) {
        refused(req, res, 503, "too_many_sessions", "failed");
        res.status(503).set("retry-after", "5").json(jsonRpcError(-32000, "Too many sessions"));
        return;
      }
      const owner = ownerOf(principal);
      const holder = principalKeyOf(principal);
      if (principal !== undefined && (held.get(holder) ?? 0) >= maxPerPrincipal) {
        refused(req, res, 429, "too_many_sessions_for_principal");
        res
          .status(429)
          .set("retry-after", "30")
          .json(jsonRpcError(-32000, `Too many sessions for this client (${maxPerPrincipal}): close one (DELETE) before opening another`));
        return;
      }
      hold(holder, 1);
      opening++;
      let initialized = false;
      try {
        // once the session is in `sessions` it counts there, not as being opened
        await openSession(req, res, principal, owner, holder, () => {
          initialized = true;
          opening--;
        });
      } finally {
        if (!initialized) {
          opening--;
          hold(holder, -1);
        }
      }
    } catch (error) {
      next(error);
    }
  });

  /** Creates the session's server and transport and answers its initialize request. */
  const openSession = async (req: Request, res: Response, principal: Principal | undefined, owner: string, holder: string, onInitialized: () => void) => {
    const server = options.createServer();
    const eventStore = options.eventStore === false ? undefined : new BoundedEventStore(options.eventStore ?? {}, Date.now, eventBudget);
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      ...(eventStore && { eventStore }),
      ...(options.enableJsonResponse && { enableJsonResponse: true }),
      retryInterval: options.sseRetryMs ?? 1000,
      onsessioninitialized: (sessionId) => {
        onInitialized();
        sessions.set(sessionId, { transport, eventStore, server, owner, holder, scopes: new Set(principal?.scopes ?? []), principal, lastSeen: Date.now(), sourceAddress: req.socket.remoteAddress });
        audit({ type: "session.start", actor: actorOf(principal), source: compact({ address: req.socket.remoteAddress }), transport: "http", sessionId, outcome: "allowed", latencyMs: 0, scopes: principal?.scopes ?? [] });
      },
      onsessionclosed: (sessionId) => endSession(sessionId, "client_closed"),
    });
    transport.onclose = () => {
      if (transport.sessionId) endSession(transport.sessionId, "closed");
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  };

  const endSession = (sessionId: string, reason: string) => {
    const s = sessions.get(sessionId);
    if (!s) return;
    sessions.delete(sessionId);
    // requests still running in it are waited for and recorded by close() like those of open sessions
    if (s.server.pipeline.inFlight > 0) {
      retiring.add(s);
      void s.server.pipeline.whenIdle().then(() => retiring.delete(s));
    }
    hold(s.holder, -1);
    s.eventStore?.clear();
    audit({ type: "session.end", actor: actorOf(s.principal), source: compact({ address: s.sourceAddress }), transport: "http", sessionId, outcome: "allowed", reason, latencyMs: 0 });
    void s.server.close().catch(() => undefined);
  };

  // Error boundary: body-parser errors become 4xx JSON-RPC errors; anything else a fixed 500 (no message echoed).
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = error as { type?: string; status?: number };
    if (res.headersSent) {
      logger.error("request failed after the response started", { agent, error });
      res.end();
      return;
    }
    if (e?.type === "entity.too.large") {
      refused(req, res, 413, "body_too_large");
      res.status(413).json(jsonRpcError(-32600, "Request body too large"));
    } else if (e?.type === "entity.parse.failed") {
      refused(req, res, 400, "parse_error");
      res.status(400).json(jsonRpcError(-32700, "Parse error"));
    } else if (typeof e?.status === "number" && e.status >= 400 && e.status < 500) {
      refused(req, res, e.status, "invalid_request");
      res.status(e.status).json(jsonRpcError(-32600, "Invalid request"));
    } else {
      logger.error("request failed", { agent, error });
      refused(req, res, 500, "internal_error", "failed");
      res.status(500).json(jsonRpcError(-32603, "Internal error"));
    }
  });

  const sweeper = setInterval(() => {
    const cutoff = Date.now() - idleMs;
    for (const [id, s] of sessions) {
      s.eventStore?.evictExpired(); // an idle session's expired events return their bytes to the shared budget
      // a request still running keeps its session (it was seen when the request came, however long ago)
      if (s.lastSeen < cutoff && s.server.pipeline.inFlight === 0) {
        endSession(id, "idle_timeout");
        void s.transport.close().catch(() => undefined);
      }
    }
  }, Math.max(1000, Math.min(60_000, idleMs / 2)));
  sweeper.unref();

  let closing = false;
  const idle = (list: Array<Pick<Session, "server">>, ms: number) => settleWithin(Promise.all(list.map((s) => s.server.pipeline.whenIdle())), ms);

  return {
    app,
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
    async close(closeOptions = {}) {
      closing = true;
      clearInterval(sweeper);
      const drainMs = closeOptions.drainTimeoutMs ?? 10_000;
      const modernNow = () => [...modernServers].map((server) => ({ server }));
      await idle([...sessions.values(), ...retiring, ...modernNow()], drainMs);
      const all = [...sessions.entries()];
      await Promise.allSettled(
        all.map(async ([id, s]) => {
          endSession(id, "shutdown");
          await s.transport.close();
        }),
      );
      // requests that outlived the drain saw their signal aborted: give them a moment to return and leave their records
      // modern-era requests hold no session: what still runs after the drain is aborted like a session's requests
      await modern.close();
      const servers = [...all.map(([, s]) => s), ...retiring, ...modernNow()];
      await idle(servers, 1000);
      // their records are written now, while the caller's audit sink is still open, and not again when they return
      const running = servers.reduce((n, s) => n + s.server.pipeline.inFlight, 0);
      const recorded = servers.reduce((n, s) => n + s.server.pipeline.recordAbandoned("abandoned_at_shutdown"), 0);
      if (running > 0) {
        logger.warn("shutdown: requests still running after their sessions closed (recorded: audit records written for them now, as failed with reason abandoned_at_shutdown)", { agent, requests: running, recorded });
      }
    },
  };
}

/**
 * Whether a JSON-RPC body is an MCP 2026-07-28 message: it carries the per-request `_meta` envelope's protocol version
 * (`io.modelcontextprotocol/protocolVersion`; MCP 2026-07-28 basic/index, "_meta"). The 2025 era never sends it.
 */
function carriesModernEnvelope(body: unknown): boolean {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const meta = (body as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  return typeof meta === "object" && meta !== null && meta[PROTOCOL_VERSION_META_KEY] !== undefined;
}

/**
 * Whether an `MCP-Protocol-Version` header names the 2026-07-28 revision or a later one: such a request belongs to the
 * modern era even when its body lacks the envelope (the SDK's handler then answers -32602, naming what is missing).
 */
function claimsModernRevision(header: string | string[] | undefined): boolean {
  return typeof header === "string" && /^\d{4}-\d{2}-\d{2}$/.test(header) && header >= "2026-07-28";
}

/** Whether a JSON-RPC body holds a request (a message with a method and an id), alone or in a batch. */
function carriesRequest(body: unknown): boolean {
  const isRequest = (m: unknown) => typeof m === "object" && m !== null && typeof (m as { method?: unknown }).method === "string" && "id" in m;
  return Array.isArray(body) ? body.some(isRequest) : isRequest(body);
}

/** Resolves when `p` settles or after `ms`, whichever comes first. */
async function settleWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** A running HTTP listener. */
export interface Listening {
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  url: URL;
  server: NodeHttpServer;
  /** Graceful shutdown: {@link HttpApp.close} (drains running requests, then closes sessions), then stops accepting and ends open connections. */
  close(options?: { drainTimeoutMs?: number }): Promise<void>;
}

/**
 * Listens on `host:port` (default 127.0.0.1 and a free port).
 */
export async function listen(httpApp: HttpApp, options: { port?: number; host?: string } = {}): Promise<Listening> {
  const host = options.host ?? "127.0.0.1";
  const server = await new Promise<NodeHttpServer>((resolve, reject) => {
    const s = httpApp.app.listen(options.port ?? 0, host, (err?: Error) => (err ? reject(err) : resolve(s)));
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

/** Whether `granted` holds every scope in `needed`. */
function coversScopes(granted: readonly string[], needed: ReadonlySet<string>): boolean {
  if (needed.size === 0) return true;
  const have = new Set(granted);
  for (const s of needed) if (!have.has(s)) return false;
  return true;
}

/** The JSON-RPC body a GET or DELETE on the endpoint is checked as by the bearer authenticator. */
const AS_INITIALIZE = Object.freeze({ jsonrpc: "2.0", method: "initialize" });

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: "2.0", error: { code, message }, id: null };
}

function compact<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}
