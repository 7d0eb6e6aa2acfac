/**
 * A {@link RequestStateStore} in PostgreSQL (or PGlite): the single-use ledger of MCP 2026-07-28 `requestState`s shared
 * by every instance of an agent behind one endpoint, so a retry replayed to another instance is refused too.
 */
import { refuseUnknownOptions } from "../protocol/config-error.js";
import { RequestStateStoreFull, type RequestStateStore } from "./request-state.js";

/** What the store needs from a database client: `pg.Pool`, `pg.Client` and PGlite all fit. */
export interface RequestStateQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Options of {@link PostgresRequestStateStore.open}. */
export interface PostgresRequestStateStoreOptions {
  /** The connection (pool). It stays the caller's: the store never closes it. */
  db: RequestStateQueryable;
  /** Table name (letters, digits, `_`; optionally schema-qualified). Default "hmcp_request_state". */
  table?: string;
  /** Create the table if missing. Default true. */
  createTable?: boolean;
  /** Delete expired ids at most this often, ms (on a claim; never in the way of the claim's answer). Default 60,000. */
  sweepIntervalMs?: number;
  /**
   * Most unexpired ids in the table, all instances together, a count. Default 1,000,000. At the bound a claim is refused
   * with {@link RequestStateStoreFull} (the retry gets `-32000` `too_many_input_rounds`, audited, and its state stays
   * usable until it expires). Counted in the claim's own statement, so concurrent claims on several instances can
   * overshoot it by at most their number.
   */
  maxEntries?: number;
  /**
   * Most unexpired ids of one principal (issuer, tenant, client, subject) in the table, all instances together, a count.
   * Default 10,000. At the bound that principal's claim is refused as at `maxEntries` (`-32000` `too_many_input_rounds`,
   * audited); other principals are served. Counted in the claim's statement too (same overshoot). Claims without a
   * principal (an agent without authentication) count against `maxEntries` only.
   */
  maxEntriesPerPrincipal?: number;
}

const TABLE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
const KNOWN = new Set(["db", "table", "createTable", "sweepIntervalMs", "maxEntries", "maxEntriesPerPrincipal"]);

/**
 * The `requestState` single-use ledger in one table (`id text PRIMARY KEY, expires_at timestamptz, principal text`,
 * indexed on `expires_at` and on `(principal, expires_at)`; `open` adds the `principal` column to a table of an earlier
 * version, or do it yourself with `createTable: false`), bounded by `maxEntries` and `maxEntriesPerPrincipal`: a claim is one `INSERT … ON CONFLICT DO NOTHING RETURNING id`, atomic across
 * instances (of two claims of one id, the database lets exactly one insert). Expired ids are deleted now and then (an expired state is refused as expired before its id is
 * looked at, and ids are random, so an id is never claimed again).
 *
 * ```ts
 * const store = await PostgresRequestStateStore.open({ db: new pg.Pool({ connectionString }) });
 * new HMCPServer(info, { requestState: { keys: [process.env.HMCP_REQUEST_STATE_KEY!], store } });
 * ```
 */
export class PostgresRequestStateStore implements RequestStateStore {
  #nextSweep = 0;

  private constructor(
    private readonly db: RequestStateQueryable,
    private readonly table: string,
    private readonly sweepIntervalMs: number,
    private readonly maxEntries: number,
    private readonly maxPerPrincipal: number,
  ) {}

  /**
   * Creates the table if asked.
   * @throws Error on an unknown option, a `db` without `query`, an invalid table name or interval; whatever the
   *   database throws for the `CREATE TABLE`
   */
  static async open(options: PostgresRequestStateStoreOptions): Promise<PostgresRequestStateStore> {
    refuseUnknownOptions("PostgresRequestStateStore", options, KNOWN);
    if (typeof options?.db?.query !== "function") throw new Error("PostgresRequestStateStore: 'db' must have query(text, params) (pg.Pool, pg.Client or PGlite)");
    const table = options.table ?? "hmcp_request_state";
    if (!TABLE_RE.test(table)) throw new Error("PostgresRequestStateStore: 'table' may hold letters, digits and '_' (optionally schema.table)");
    const sweep = options.sweepIntervalMs ?? 60_000;
    if (!(Number.isSafeInteger(sweep) && sweep > 0)) throw new Error("PostgresRequestStateStore: 'sweepIntervalMs' must be a positive integer (ms)");
    const max = options.maxEntries ?? 1_000_000;
    if (!(Number.isSafeInteger(max) && max > 0)) throw new Error("PostgresRequestStateStore: 'maxEntries' must be a positive integer");
    const perPrincipal = options.maxEntriesPerPrincipal ?? 10_000;
    if (!(Number.isSafeInteger(perPrincipal) && perPrincipal > 0)) throw new Error("PostgresRequestStateStore: 'maxEntriesPerPrincipal' must be a positive integer");
    if (options.createTable !== false) {
      await options.db.query(`CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, expires_at timestamptz NOT NULL, principal text)`);
      // a table of an earlier version has no principal column
      await options.db.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS principal text`);
      // the bounds count unexpired ids: indexes keep those counts range scans
      await options.db.query(`CREATE INDEX IF NOT EXISTS ${indexName(table)} ON ${table} (expires_at)`);
      await options.db.query(`CREATE INDEX IF NOT EXISTS ${indexName(table, "principal")} ON ${table} (principal, expires_at)`);
    }
    return new PostgresRequestStateStore(options.db, table, sweep, max, perPrincipal);
  }

  /**
   * @throws {@link RequestStateStoreFull} at `maxEntries` unexpired ids (scope "agent") or `maxEntriesPerPrincipal` of
   *   `principal` (scope "principal"; not counted without `principal`); whatever the database throws (the request is
   *   then refused: the pipeline fails closed)
   */
  async claim(id: string, expiresAt: number, principal?: string): Promise<boolean> {
    const now = Date.now();
    if (now >= this.#nextSweep) {
      this.#nextSweep = now + this.sweepIntervalMs;
      // not awaited by the claim: a slow delete must not hold the request
      // five minutes' grace: an instance whose clock is behind the database's still refuses a replay until it expires
      this.db.query(`DELETE FROM ${this.table} WHERE expires_at < now() - interval '5 minutes'`).catch(() => undefined);
    }
    // inserted only below both bounds; LIMIT stops each count at its bound
    const { rows } = await this.db.query(
      `INSERT INTO ${this.table} (id, expires_at, principal) SELECT $1, to_timestamp($2::double precision / 1000), $4 WHERE (SELECT count(*) FROM (SELECT 1 FROM ${this.table} WHERE expires_at > now() LIMIT $3) held) < $3 AND ($4::text IS NULL OR (SELECT count(*) FROM (SELECT 1 FROM ${this.table} WHERE principal = $4 AND expires_at > now() LIMIT $5) mine) < $5) ON CONFLICT (id) DO NOTHING RETURNING id`,
      [id, expiresAt, this.maxEntries, principal ?? null, this.maxPerPrincipal],
    );
    if (rows.length === 1) return true;
    // not inserted: claimed before (a replay), or a bound
    const held = await this.db.query(`SELECT 1 FROM ${this.table} WHERE id = $1`, [id]);
    if (held.rows.length === 1) return false;
    if (principal === undefined) throw new RequestStateStoreFull(this.maxEntries);
    const mine = await this.db.query(`SELECT count(*) AS n FROM (SELECT 1 FROM ${this.table} WHERE principal = $1 AND expires_at > now() LIMIT $2) mine`, [principal, this.maxPerPrincipal]);
    if (Number((mine.rows[0] as { n: string | number }).n) >= this.maxPerPrincipal) throw new RequestStateStoreFull(this.maxPerPrincipal, "principal");
    throw new RequestStateStoreFull(this.maxEntries);
  }
}

/** `<table>_expires_at_idx` (or `<table>_<column>_idx`), without the table's schema (an index lives in its table's schema). */
function indexName(table: string, column = "expires_at"): string {
  return `${table.split(".").at(-1)}_${column}_idx`;
}
