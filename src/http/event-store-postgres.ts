/**
 * The Streamable HTTP resumability event store (MCP spec 2025-11-25, "Transports: Resumability and Redelivery") in
 * PostgreSQL (or PGlite), for the 2025 era behind several instances: events leave the process's memory, one table
 * holds the events of every session of every instance, and each session reads only its own.
 */
import type { EventStore, JSONRPCMessage } from "@modelcontextprotocol/server";
import { refuseUnknownOptions } from "../protocol/config-error.js";
import { EventNotFoundError, type EventStoreLimits } from "./event-store.js";

/** What the store needs from a database client: `pg.Pool`, `pg.Client` and PGlite all fit. */
export interface EventStoreQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Options of {@link PostgresEventStore.open}. */
export interface PostgresEventStoreOptions {
  /** The connection (pool). It stays the caller's: the store never closes it. */
  db: EventStoreQueryable;
  /** Table name (letters, digits, `_`; optionally schema-qualified). Default "hmcp_events". */
  table?: string;
  /** Create the table (and its index) if missing. Default true. */
  createTable?: boolean;
  /**
   * Limits, as for the in-memory store: `maxEvents` and `maxBytes` per session (defaults 1,000 and 1,048,576 bytes),
   * `ttlMs` (default 300,000 ms), and `totalBytes` for the whole table, all sessions of all instances together (default
   * 67,108,864 bytes = 64 MiB). See {@link PostgresEventStore} for when each is applied.
   */
  limits?: EventStoreLimits;
  /** Apply `ttlMs` and `totalBytes` to the whole table at most this often, ms (on a store; never in its way). Default 10,000. */
  sweepIntervalMs?: number;
  /** Clock of event ages, ms since the epoch. Default `Date.now` (instances sharing the table should agree on the time). */
  now?: () => number;
}

const TABLE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
const KNOWN = new Set(["db", "table", "createTable", "limits", "sweepIntervalMs", "now"]);
const LIMITS = new Set(["maxEvents", "maxBytes", "ttlMs", "totalBytes"]);
/** The event ids HMCP accepts in `Last-Event-ID` (legacy-era.ts): decimal, at most 16 digits. */
const EVENT_ID = /^[1-9][0-9]{0,15}$/;

/**
 * The resumability events of every 2025-era session in one table (`id bigserial` = the SSE event id, `session_id`,
 * `stream_id`, `message` as its JSON text, `bytes`, `at` in ms). Pass it as `createHttpApp({ eventStore })`; the app
 * takes one {@link SessionEventStore} per session with {@link forSession}.
 *
 * - **Sessions apart.** Every read names the session: a `Last-Event-ID` of another session (of this instance or
 *   another) is not found (`400 last_event_id_unknown`), and nothing of that session is replayed.
 * - **Bounds.** After each stored event, the session keeps its newest `maxEvents` events within `maxBytes` and younger
 *   than `ttlMs` (oldest dropped first; one event over `maxBytes` is sent but not kept). `ttlMs` and `totalBytes` are
 *   applied to the whole table by {@link sweep}, run at most every `sweepIntervalMs` after a store (not awaited) and
 *   callable: it deletes expired events, then, over `totalBytes`, the oldest events of the sessions holding the most
 *   bytes (each keeps its newest events within a common share; sessions under it lose nothing). Between sweeps the table can exceed `totalBytes` by what was stored meanwhile (unlike the in-memory
 *   budget, which is exact). A session's events are deleted when it ends; an instance killed before that leaves them
 *   to the sweep's `ttlMs`.
 * - **Order.** One session's events are stored one after the other (each waits for the previous insert), so its ids
 *   grow in the order its messages were sent.
 * - **Database down.** A failed insert does not stop the message: it is sent under an id no row holds (a decimal of
 *   16 digits), so resuming after it fails with `last_event_id_unknown` and the client starts over; {@link failures}
 *   counts them. A failed read answers the GET with HTTP 500.
 * - **Not guaranteed.** Sessions themselves stay in the memory of the instance that opened them (route a session's
 *   requests to it: a sticky proxy); the store does not move a session to another instance.
 *
 * ```ts
 * const eventStore = await PostgresEventStore.open({ db: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 * const app = createHttpApp({ createServer, bearer, eventStore });
 * ```
 */
export class PostgresEventStore {
  readonly #db: EventStoreQueryable;
  readonly #table: string;
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  readonly #ttlMs: number;
  readonly #totalBytes: number;
  readonly #sweepIntervalMs: number;
  readonly #now: () => number;
  #nextSweep = 0;
  #failures = 0;
  /** Ids for events that could not be stored: 16 digits, above any `bigserial` this table will reach. */
  #unstored = 1_000_000_000_000_000 + Math.floor(Math.random() * 1_000_000_000_000_000);

  private constructor(db: EventStoreQueryable, table: string, o: PostgresEventStoreOptions) {
    this.#db = db;
    this.#table = table;
    this.#maxEvents = o.limits?.maxEvents ?? 1000;
    this.#maxBytes = o.limits?.maxBytes ?? 1024 * 1024;
    this.#ttlMs = o.limits?.ttlMs ?? 300_000;
    this.#totalBytes = o.limits?.totalBytes ?? 64 * 1024 * 1024;
    this.#sweepIntervalMs = o.sweepIntervalMs ?? 10_000;
    this.#now = o.now ?? Date.now;
  }

  /**
   * Checks the options and creates the table if asked.
   * @throws Error on an unknown option or limit, a `db` without `query`, an invalid table name, a limit or interval
   *   that is not a positive integer; whatever the database throws for the `CREATE TABLE`
   */
  static async open(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
    refuseUnknownOptions("PostgresEventStore", options, KNOWN);
    if (typeof options?.db?.query !== "function") throw new Error("PostgresEventStore: 'db' must have query(text, params) (pg.Pool, pg.Client or PGlite)");
    const table = options.table ?? "hmcp_events";
    if (!TABLE_RE.test(table)) throw new Error("PostgresEventStore: 'table' may hold letters, digits and '_' (optionally schema.table)");
    if (options.limits !== undefined) {
      refuseUnknownOptions("PostgresEventStore limits", options.limits, LIMITS);
      for (const name of LIMITS) {
        const v = (options.limits as Record<string, unknown>)[name];
        if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) > 0)) throw new Error(`PostgresEventStore: 'limits.${name}' must be a positive integer`);
      }
    }
    const sweep = options.sweepIntervalMs ?? 10_000;
    if (!(Number.isSafeInteger(sweep) && sweep > 0)) throw new Error("PostgresEventStore: 'sweepIntervalMs' must be a positive integer (ms)");
    if (options.now !== undefined && typeof options.now !== "function") throw new Error("PostgresEventStore: 'now' must be a function returning ms since the epoch");
    if (options.createTable !== false) {
      await options.db.query(
        `CREATE TABLE IF NOT EXISTS ${table} (id bigserial PRIMARY KEY, session_id text NOT NULL, stream_id text NOT NULL, message text NOT NULL, bytes integer NOT NULL, at bigint NOT NULL)`,
      );
      const index = `${table.replace(/.*\./, "")}_session_idx`;
      await options.db.query(`CREATE INDEX IF NOT EXISTS ${index} ON ${table} (session_id, id)`);
    }
    return new PostgresEventStore(options.db, table, options);
  }

  /** Inserts that failed since the store was opened (their messages were sent, not kept). */
  get failures(): number {
    return this.#failures;
  }

  /**
   * The event store of session `sessionId` (the SDK's `EventStore`, plus what the HTTP app needs). `createHttpApp`
   * calls it once per session, with the session id it is about to issue.
   * @throws Error when `sessionId` is empty
   */
  forSession(sessionId: string): SessionEventStore {
    if (typeof sessionId !== "string" || sessionId === "") throw new Error("PostgresEventStore.forSession: a session id is required");
    return new PostgresSessionEvents({
      store: (streamId, message) => this.#store(sessionId, streamId, message),
      unstored: () => this.#unstoredId(),
      streamOf: (eventId) => this.#streamOf(sessionId, eventId),
      replay: (eventId, send) => this.#replay(sessionId, eventId, send),
      drop: () => this.#drop(sessionId),
      dropExpired: () => this.#dropExpired(sessionId),
    });
  }

  /**
   * Deletes expired events (older than `ttlMs`) of every session; then, when the table holds more than `totalBytes`,
   * trims the sessions holding the most: each session keeps its newest events within one common share of bytes, the
   * largest share with which the table fits `totalBytes`. A session under that share loses nothing, so a session that
   * stores much gives up its own oldest events, never those of a session that stores little.
   * @returns how many events were deleted
   * @throws whatever the database throws
   */
  async sweep(): Promise<number> {
    this.#nextSweep = this.#now() + this.#sweepIntervalMs;
    const expired = await this.#db.query(`DELETE FROM ${this.#table} WHERE at < $1 RETURNING id`, [this.#now() - this.#ttlMs]);
    const { rows } = await this.#db.query(`SELECT sum(bytes) AS b FROM ${this.#table} GROUP BY session_id`);
    const share = fairShare((rows as Array<{ b: string | number }>).map((r) => Number(r.b)), this.#totalBytes);
    if (share === undefined) return expired.rows.length;
    const over = await this.#db.query(
      `DELETE FROM ${this.#table} WHERE id IN (SELECT id FROM (SELECT id, sum(bytes) OVER (PARTITION BY session_id ORDER BY id DESC) AS newer FROM ${this.#table}) t WHERE newer > $1) RETURNING id`,
      [share],
    );
    return expired.rows.length + over.rows.length;
  }

  /** Stores one event of `sessionId` and applies the session's bounds; the id, or an unstored one on failure. */
  async #store(sessionId: string, streamId: string, message: JSONRPCMessage): Promise<string> {
    const text = JSON.stringify(message);
    const bytes = Buffer.byteLength(text);
    const now = this.#now();
    try {
      const { rows } = await this.#db.query(`INSERT INTO ${this.#table} (session_id, stream_id, message, bytes, at) VALUES ($1, $2, $3, $4, $5) RETURNING id`, [sessionId, streamId, text, bytes, now]);
      const id = String((rows[0] as { id: string | number }).id);
      await this.#db.query(
        `DELETE FROM ${this.#table} WHERE session_id = $1 AND id IN (SELECT id FROM (SELECT id, at, count(*) OVER w AS n, sum(bytes) OVER w AS b FROM ${this.#table} WHERE session_id = $1 WINDOW w AS (ORDER BY id DESC)) t WHERE n > $2 OR b > $3 OR at < $4)`,
        [sessionId, this.#maxEvents, this.#maxBytes, now - this.#ttlMs],
      );
      if (now >= this.#nextSweep) void this.sweep().catch(() => undefined); // never in the way of the message
      return id;
    } catch {
      this.#failures++;
      return this.#unstoredId();
    }
  }

  /** An id that no row holds: resuming after it fails with `last_event_id_unknown`. */
  #unstoredId(): string {
    return String(++this.#unstored);
  }

  /** The stream of event `eventId` of `sessionId`, when it is stored and not expired. */
  async #streamOf(sessionId: string, eventId: string): Promise<string | undefined> {
    if (!EVENT_ID.test(eventId)) return undefined;
    const { rows } = await this.#db.query(`SELECT stream_id FROM ${this.#table} WHERE id = $1 AND session_id = $2 AND at >= $3`, [eventId, sessionId, this.#now() - this.#ttlMs]);
    return (rows[0] as { stream_id: string } | undefined)?.stream_id;
  }

  /** Sends the events of `sessionId`'s stream after `eventId`, in order. */
  async #replay(sessionId: string, eventId: string, send: (eventId: string, message: JSONRPCMessage) => Promise<void>): Promise<string> {
    const streamId = await this.#streamOf(sessionId, eventId);
    if (streamId === undefined) throw new EventNotFoundError();
    const { rows } = await this.#db.query(`SELECT id, message FROM ${this.#table} WHERE session_id = $1 AND stream_id = $2 AND id > $3 AND at >= $4 ORDER BY id`, [
      sessionId,
      streamId,
      eventId,
      this.#now() - this.#ttlMs,
    ]);
    for (const row of rows as Array<{ id: string | number; message: string }>) await send(String(row.id), JSON.parse(row.message) as JSONRPCMessage);
    return streamId;
  }

  /** Deletes every event of `sessionId`. */
  async #drop(sessionId: string): Promise<void> {
    await this.#db.query(`DELETE FROM ${this.#table} WHERE session_id = $1`, [sessionId]);
  }

  /** Deletes the expired events of `sessionId`. */
  async #dropExpired(sessionId: string): Promise<void> {
    await this.#db.query(`DELETE FROM ${this.#table} WHERE session_id = $1 AND at < $2`, [sessionId, this.#now() - this.#ttlMs]);
  }
}

/**
 * One session's event store, as the HTTP app uses it: the SDK's `EventStore` (ids are decimal strings), whether a
 * `Last-Event-ID` can be served, and the end of the session.
 */
export interface SessionEventStore extends EventStore {
  /** Whether event `eventId` of this session is still stored (a resumption from it can be served). */
  holds(eventId: string): boolean | Promise<boolean>;
  /** The session ended: drops its events; later events are sent but not kept. Never throws. */
  clear(): void;
  /** Drops this session's expired events. Never throws. */
  evictExpired(): void;
}

/** What one session's view may do with the store (bound to its session id). */
interface SessionOps {
  store(streamId: string, message: JSONRPCMessage): Promise<string>;
  unstored(): string;
  streamOf(eventId: string): Promise<string | undefined>;
  replay(eventId: string, send: (eventId: string, message: JSONRPCMessage) => Promise<void>): Promise<string>;
  drop(): Promise<void>;
  dropExpired(): Promise<void>;
}

class PostgresSessionEvents implements SessionEventStore {
  readonly #ops: SessionOps;
  /** The previous insert: each waits for it, so ids grow in the order messages were sent. */
  #last: Promise<unknown> = Promise.resolve();
  #cleared = false;

  constructor(ops: SessionOps) {
    this.#ops = ops;
  }

  storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const stored = this.#last.then(() => (this.#cleared ? this.#ops.unstored() : this.#ops.store(streamId, message)));
    this.#last = stored.catch(() => undefined);
    return stored;
  }

  async holds(eventId: string): Promise<boolean> {
    return (await this.#ops.streamOf(eventId)) !== undefined;
  }

  getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#ops.streamOf(eventId);
  }

  replayEventsAfter(lastEventId: string, { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> }): Promise<string> {
    return this.#ops.replay(lastEventId, send);
  }

  clear(): void {
    this.#cleared = true;
    // after the inserts already queued, so none of them outlives the session
    this.#last = this.#last.then(() => this.#ops.drop()).catch(() => undefined);
  }

  evictExpired(): void {
    this.#last = this.#last.then(() => this.#ops.dropExpired()).catch(() => undefined);
  }
}

/**
 * The largest number of bytes `share` such that the sessions' totals, each capped at `share`, sum to at most `budget`;
 * undefined when the totals already fit. (Max-min fair: sessions under the share keep everything.)
 */
function fairShare(totals: number[], budget: number): number | undefined {
  if (totals.reduce((a, b) => a + b, 0) <= budget) return undefined;
  const sorted = [...totals].sort((a, b) => a - b);
  let room = budget;
  for (let i = 0; i < sorted.length; i++) {
    const share = Math.floor(room / (sorted.length - i));
    if (sorted[i]! > share) return share;
    room -= sorted[i]!;
  }
  return undefined; // not reached: the totals exceed the budget
}
