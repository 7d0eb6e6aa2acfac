/**
 * The 2025-era session registry (MCP 2025-11-25 and older: Streamable HTTP with `Mcp-Session-Id`): each session's
 * transport, server and event store, who may use it, the session caps (per principal and in all), the idle sweeper,
 * and what shutdown drains. MCP 2026-07-28 `subscriptions/listen` streams hold seats under the same caps.
 */
import { randomUUID } from "node:crypto";
import type { Request, Response } from "express";
import { NodeStreamableHTTPServerTransport } from "@modelcontextprotocol/node";
import type { Principal } from "../protocol/index.js";
import type { HMCPServer } from "../server/index.js";
import { BoundedEventStore, EventStoreBudget, type EventStoreLimits } from "./event-store.js";
import { PostgresEventStore, type SessionEventStore } from "./event-store-postgres.js";
import { actorOf, sourceOf, type RefusalAudit } from "./refusal-audit.js";
import { principalIdentity, principalKeyOf } from "../auth/principal.js";

/** One open session. */
export interface LegacySession {
  transport: NodeStreamableHTTPServerTransport;
  eventStore: SessionEventStore | undefined;
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

export { principalKeyOf };

/**
 * Who may use a session: the principal and its SMART patient launch context, so a token of the same client and
 * subject launched for another patient (or for none) cannot read what the session produced for the first.
 */
export function ownerOf(p: Principal | undefined): string {
  return p ? principalIdentity(p).owner : "anonymous";
}

/** How the registry builds and bounds sessions (resolved `HttpAppOptions`). */
export interface LegacySessionsOptions {
  createServer: () => HMCPServer;
  /**
   * Each session's in-memory event store limits, and `totalBytes` for all together; a {@link PostgresEventStore} (one
   * table for every session); `false`: no resumability.
   */
  eventStore: EventStoreLimits | PostgresEventStore | false | undefined;
  enableJsonResponse: boolean | undefined;
  /** SSE `retry:` field, ms. */
  sseRetryMs: number;
  maxSessions: number;
  maxSessionsPerPrincipal: number;
  /** A session idle this long (and running nothing) is closed, ms. */
  idleTimeoutMs: number;
  audit: RefusalAudit;
}

/** The cap a new session or subscription stream would exceed: `maxSessionsPerPrincipal` or `maxSessions`. */
export type SessionCap = "principal" | "total";

export class LegacySessions {
  readonly maxSessions: number;
  readonly maxSessionsPerPrincipal: number;
  readonly #options: LegacySessionsOptions;
  readonly #sessions = new Map<string, LegacySession>();
  /** Sessions ended (client DELETE, transport closed) while requests in them were still running, until those return. */
  readonly #retiring = new Set<LegacySession>();
  // Sessions per principal (whatever their patient context), open or being opened (an initialize request between its
  // checks and onsessioninitialized), and initialize requests in progress: concurrent initialize requests cannot
  // overrun either cap.
  readonly #held = new Map<string, number>();
  #opening = 0;
  /** Open 2026-07-28 `subscriptions/listen` streams: each counts like a session toward maxSessions and its holder's cap. */
  #streams = 0;
  /** One byte budget for the event stores of all sessions (EventStoreLimits.totalBytes). */
  readonly #eventBudget: EventStoreBudget;
  readonly #sweeper: NodeJS.Timeout;

  constructor(options: LegacySessionsOptions) {
    this.#options = options;
    this.maxSessions = options.maxSessions;
    this.maxSessionsPerPrincipal = options.maxSessionsPerPrincipal;
    const limits = options.eventStore === false || options.eventStore instanceof PostgresEventStore ? undefined : options.eventStore;
    this.#eventBudget = new EventStoreBudget(limits?.totalBytes ?? 64 * 1024 * 1024);
    this.#sweeper = setInterval(() => this.#sweep(), Math.max(1000, Math.min(60_000, options.idleTimeoutMs / 2)));
    this.#sweeper.unref();
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** The server of session `sessionId`, whoever asks (the bearer check reads its method scopes). */
  serverOf(sessionId: string): HMCPServer | undefined {
    return this.#sessions.get(sessionId)?.server;
  }

  /**
   * Session `sessionId` when `principal` may use it: the principal that opened it, in the patient launch context it
   * opened it in. For anyone else (another principal, or the same one launched for another patient or none) it does
   * not exist.
   */
  find(sessionId: string, principal: Principal | undefined): LegacySession | undefined {
    const s = this.#sessions.get(sessionId);
    return s && s.owner === ownerOf(principal) ? s : undefined;
  }

  /**
   * The cap a new session of `principal` would exceed: first `maxSessions` (sessions open and being opened, and open
   * `subscriptions/listen` streams), then its own.
   */
  sessionCapFor(principal: Principal | undefined): SessionCap | undefined {
    if (this.#sessions.size + this.#opening + this.#streams >= this.maxSessions) return "total";
    if (principal !== undefined && (this.#held.get(principalKeyOf(principal)) ?? 0) >= this.maxSessionsPerPrincipal) return "principal";
    return undefined;
  }

  /**
   * Takes a seat for a stream held like a session (a 2026-07-28 `subscriptions/listen`): refused over the principal's
   * cap first, then over `maxSessions` (sessions open, being opened, and streams).
   * @returns the cap that refused it, or the release to call when the stream ends
   */
  holdStream(principal: Principal | undefined): { refused: SessionCap } | { release: () => void } {
    const holder = principalKeyOf(principal);
    if (principal !== undefined && (this.#held.get(holder) ?? 0) >= this.maxSessionsPerPrincipal) return { refused: "principal" };
    if (this.#sessions.size + this.#opening + this.#streams >= this.maxSessions) return { refused: "total" };
    this.#hold(holder, 1);
    this.#streams++;
    return {
      release: () => {
        this.#hold(holder, -1);
        this.#streams--;
      },
    };
  }

  /**
   * Opens a session for `principal` on its initialize request `req` and answers it: held against the caps from now
   * on, registered (and recorded, `session.start`) once the transport has initialized it.
   */
  async open(req: Request, res: Response, principal: Principal | undefined): Promise<void> {
    const owner = ownerOf(principal);
    const holder = principalKeyOf(principal);
    this.#hold(holder, 1);
    this.#opening++;
    let initialized = false;
    try {
      // once the session is in `sessions` it counts there, not as being opened
      await this.#open(req, res, principal, owner, holder, () => {
        initialized = true;
        this.#opening--;
      });
    } finally {
      if (!initialized) {
        this.#opening--;
        this.#hold(holder, -1);
      }
    }
  }

  /** Creates the session's server and transport and answers its initialize request. */
  async #open(req: Request, res: Response, principal: Principal | undefined, owner: string, holder: string, onInitialized: () => void): Promise<void> {
    const o = this.#options;
    const server = o.createServer();
    // the id is chosen here, so a PostgreSQL event store can be bound to it before the transport issues it
    const id = randomUUID();
    const eventStore: SessionEventStore | undefined =
      o.eventStore === false ? undefined : o.eventStore instanceof PostgresEventStore ? o.eventStore.forSession(id) : new BoundedEventStore(o.eventStore ?? {}, Date.now, this.#eventBudget);
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      ...(eventStore && { eventStore }),
      ...(o.enableJsonResponse && { enableJsonResponse: true }),
      retryInterval: o.sseRetryMs,
      onsessioninitialized: (sessionId) => {
        onInitialized();
        this.#sessions.set(sessionId, { transport, eventStore, server, owner, holder, scopes: new Set(principal?.scopes ?? []), principal, lastSeen: Date.now(), sourceAddress: req.socket.remoteAddress });
        o.audit.write({ type: "session.start", actor: actorOf(principal), source: sourceOf(req.socket.remoteAddress), transport: "http", sessionId, outcome: "allowed", latencyMs: 0, scopes: principal?.scopes ?? [] });
      },
      onsessionclosed: (sessionId) => this.end(sessionId, "client_closed"),
    });
    transport.onclose = () => {
      if (transport.sessionId) this.end(transport.sessionId, "closed");
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  }

  /** Ends session `sessionId` (no-op when it is not open): releases its seat and event store, records `session.end`. */
  end(sessionId: string, reason: string): void {
    const s = this.#sessions.get(sessionId);
    if (!s) return;
    this.#sessions.delete(sessionId);
    // requests still running in it are waited for and recorded by close() like those of open sessions
    if (s.server.pipeline.inFlight > 0) {
      this.#retiring.add(s);
      void s.server.pipeline.whenIdle().then(() => this.#retiring.delete(s));
    }
    this.#hold(s.holder, -1);
    s.eventStore?.clear();
    this.#options.audit.write({ type: "session.end", actor: actorOf(s.principal), source: sourceOf(s.sourceAddress), transport: "http", sessionId, outcome: "allowed", reason, latencyMs: 0 });
    void s.server.close().catch(() => undefined);
  }

  /** The servers of open sessions and of ended ones whose requests are still running (what shutdown drains). */
  servers(): HMCPServer[] {
    return [...this.#sessions.values(), ...this.#retiring].map((s) => s.server);
  }

  /** The servers of sessions ended while requests in them were still running, until those return. */
  retiringServers(): HMCPServer[] {
    return [...this.#retiring].map((s) => s.server);
  }

  /**
   * Shutdown: ends every open session (`session.end`, reason `shutdown`) and closes its transport.
   * @returns the servers of the sessions it closed
   */
  async closeAll(): Promise<HMCPServer[]> {
    const all = [...this.#sessions.entries()];
    await Promise.allSettled(
      all.map(async ([id, s]) => {
        this.end(id, "shutdown");
        await s.transport.close();
      }),
    );
    return all.map(([, s]) => s.server);
  }

  /** Stops the idle sweeper (shutdown has begun). */
  stopSweeper(): void {
    clearInterval(this.#sweeper);
  }

  #sweep(): void {
    const cutoff = Date.now() - this.#options.idleTimeoutMs;
    for (const [id, s] of this.#sessions) {
      s.eventStore?.evictExpired(); // an idle session's expired events return their bytes to the shared budget
      // a request still running keeps its session (it was seen when the request came, however long ago)
      if (s.lastSeen < cutoff && s.server.pipeline.inFlight === 0) {
        this.end(id, "idle_timeout");
        void s.transport.close().catch(() => undefined);
      }
    }
  }

  #hold(holder: string, delta: 1 | -1): void {
    const n = (this.#held.get(holder) ?? 0) + delta;
    if (n > 0) this.#held.set(holder, n);
    else this.#held.delete(holder);
  }
}
