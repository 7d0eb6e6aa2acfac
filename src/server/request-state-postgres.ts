/**
 * A {@link RequestStateStore} in PostgreSQL (or PGlite): the single-use ledger of MCP 2026-07-28 `requestState`s shared
 * by every instance of an agent behind one endpoint, so a retry replayed to another instance is refused too.
 */
import { HMCPConfigError, refuseUnknownOptions } from "../protocol/config-error.js";
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
  /**
   * Create the table and its indexes if missing (and add the `principal` column to a table of an earlier version).
   * Default true. Several instances may open at the same moment: a statement that loses PostgreSQL's `IF NOT EXISTS`
   * race is run again (it then does nothing), so none of them fails its startup. With `false` the operator creates them
   * beforehand; the claims need both indexes (without them every claim's per-principal count, and each count of the
   * table, is a sequential scan):
   * ```sql
   * CREATE TABLE IF NOT EXISTS hmcp_request_state (id text PRIMARY KEY, expires_at timestamptz NOT NULL, principal text);
   * ALTER TABLE hmcp_request_state ADD COLUMN IF NOT EXISTS principal text; -- a table of HMCP before maxEntriesPerPrincipal
   * CREATE INDEX IF NOT EXISTS hmcp_request_state_expires_at_idx ON hmcp_request_state (expires_at);
   * CREATE INDEX IF NOT EXISTS hmcp_request_state_principal_idx ON hmcp_request_state (principal, expires_at);
   * ```
   * (for another `table`, its name in place of `hmcp_request_state`; index names are free).
   */
  createTable?: boolean;
  /** Delete expired ids at most this often, ms (on a claim; never in the way of the claim's answer). Default 60,000. */
  sweepIntervalMs?: number;
  /**
   * Most unexpired ids in the table, all instances together, a count. Default 1,000,000. At the bound a claim is refused
   * with {@link RequestStateStoreFull} (the retry gets `-32000` `too_many_input_rounds`, audited, and its state stays
   * usable until it expires). A claim does not count the table (that would be a scan of up to `maxEntries` index
   * entries per claim, which a caller filling the ledger would make every claim pay): each instance counts it at most
   * once a second (and, at the bound, again once an id it counted has expired, at most every 100 ms) and adds its own
   * claims since. So the bound is approximate: the table may overshoot it by the claims the other instances made since
   * this instance last counted (within the last second), and a claim may be refused for up to 100 ms after room came
   * back (1 s if the room was made by an id another instance claimed). One instance alone never overshoots it.
   */
  maxEntries?: number;
  /**
   * Most unexpired ids of one principal (issuer, tenant, client, subject) in the table, all instances together, a count.
   * Default 10,000. At the bound that principal's claim is refused as at `maxEntries` (`-32000` `too_many_input_rounds`,
   * audited); other principals are served. Counted exactly in the claim's own statement (a range of the
   * `(principal, expires_at)` index, at most this many entries), so concurrent claims on several instances can
   * overshoot it by at most their number. Claims without a principal (an agent without authentication) count against
   * `maxEntries` only.
   */
  maxEntriesPerPrincipal?: number;
}

const TABLE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
const KNOWN = new Set(["db", "table", "createTable", "sweepIntervalMs", "maxEntries", "maxEntriesPerPrincipal"]);

/**
 * The `requestState` single-use ledger in one table (`id text PRIMARY KEY, expires_at timestamptz, principal text`,
 * indexed on `expires_at` and on `(principal, expires_at)`; `open` adds the `principal` column to a table of an earlier
 * version, or do it yourself with `createTable: false`: see {@link PostgresRequestStateStoreOptions.createTable} for the
 * SQL), bounded by `maxEntries` (approximately: see there) and `maxEntriesPerPrincipal`: a claim is one `INSERT … ON CONFLICT DO NOTHING RETURNING id`, atomic across
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
  /**
   * This instance's estimate of the table: `n` unexpired ids when counted at `at` (ms; 0: never), `since` claimed here
   * since, `first` the earliest expiry among them (ms; Infinity: none).
   */
  #count = { n: 0, since: 0, at: 0, first: Infinity };
  #counting: Promise<void> | undefined;

  private constructor(
    private readonly db: RequestStateQueryable,
    private readonly table: string,
    private readonly sweepIntervalMs: number,
    private readonly maxEntries: number,
    private readonly maxPerPrincipal: number,
  ) {}

  /**
   * Creates the table if asked.
   * @throws HMCPConfigError on an unknown option (with a "did you mean" hint), a `db` without `query`, an invalid
   *   table name, interval or bound (not a positive integer); whatever the
   *   database throws for the `CREATE TABLE` (other than losing the `IF NOT EXISTS` race to another instance)
   */
  static async open(options: PostgresRequestStateStoreOptions): Promise<PostgresRequestStateStore> {
    refuseUnknownOptions("PostgresRequestStateStore", options, KNOWN);
    if (typeof options?.db?.query !== "function") throw new HMCPConfigError("PostgresRequestStateStore: 'db' must have query(text, params) (pg.Pool, pg.Client or PGlite)", "db");
    const table = options.table ?? "hmcp_request_state";
    if (!TABLE_RE.test(table)) throw new HMCPConfigError("PostgresRequestStateStore: 'table' may hold letters, digits and '_' (optionally schema.table)", "table");
    const sweep = options.sweepIntervalMs ?? 60_000;
    if (!(Number.isSafeInteger(sweep) && sweep > 0)) throw new HMCPConfigError("PostgresRequestStateStore: 'sweepIntervalMs' must be a positive integer (ms)", "sweepIntervalMs");
    const max = options.maxEntries ?? 1_000_000;
    if (!(Number.isSafeInteger(max) && max > 0)) throw new HMCPConfigError("PostgresRequestStateStore: 'maxEntries' must be a positive integer", "maxEntries");
    const perPrincipal = options.maxEntriesPerPrincipal ?? 10_000;
    if (!(Number.isSafeInteger(perPrincipal) && perPrincipal > 0)) throw new HMCPConfigError("PostgresRequestStateStore: 'maxEntriesPerPrincipal' must be a positive integer", "maxEntriesPerPrincipal");
    if (options.createTable !== false) {
      for (const statement of schemaStatements(table)) await ddl(options.db, statement);
    }
    return new PostgresRequestStateStore(options.db, table, sweep, max, perPrincipal);
  }

  /**
   * @throws {@link RequestStateStoreFull} at `maxEntries` unexpired ids by this instance's count (scope "agent"; see
   *   {@link PostgresRequestStateStoreOptions.maxEntries}) or `maxEntriesPerPrincipal` of `principal` (scope
   *   "principal"; not counted without `principal`); whatever the database throws (the request is then refused: the
   *   pipeline fails closed)
   */
  async claim(id: string, expiresAt: number, principal?: string): Promise<boolean> {
    const now = Date.now();
    if (now >= this.#nextSweep) {
      this.#nextSweep = now + this.sweepIntervalMs;
      // not awaited by the claim: a slow delete must not hold the request
      // five minutes' grace: an instance whose clock is behind the database's still refuses a replay until it expires
      this.db.query(`DELETE FROM ${this.table} WHERE expires_at < now() - interval '5 minutes'`).catch(() => undefined);
    }
    if (await this.#full(now)) {
      // a replay is still told apart at the bound (a primary-key lookup)
      const held = await this.db.query(`SELECT 1 FROM ${this.table} WHERE id = $1`, [id]);
      if (held.rows.length === 1) return false;
      throw new RequestStateStoreFull(this.maxEntries);
    }
    // inserted only below the principal's bound; LIMIT stops its count there (a range of the (principal, expires_at) index)
    const { rows } = await this.db.query(
      `INSERT INTO ${this.table} (id, expires_at, principal) SELECT $1, to_timestamp($2::double precision / 1000), $3 WHERE $3::text IS NULL OR (SELECT count(*) FROM (SELECT 1 FROM ${this.table} WHERE principal = $3 AND expires_at > now() LIMIT $4) mine) < $4 ON CONFLICT (id) DO NOTHING RETURNING id`,
      [id, expiresAt, principal ?? null, this.maxPerPrincipal],
    );
    if (rows.length === 1) {
      this.#count.since++;
      if (expiresAt < this.#count.first) this.#count.first = expiresAt;
      return true;
    }
    // not inserted: claimed before (a replay), or the principal's bound
    const held = await this.db.query(`SELECT 1 FROM ${this.table} WHERE id = $1`, [id]);
    if (held.rows.length === 1) return false;
    throw new RequestStateStoreFull(this.maxPerPrincipal, "principal");
  }

  /**
   * Whether the table holds `maxEntries` unexpired ids by this instance's estimate: its last count (at most
   * {@link RECOUNT_MS} old) plus its own claims since. Counts again when the count is older than that, or at the bound
   * once an id counted (or claimed since) has expired, at most every {@link RECOUNT_AT_BOUND_MS}: the one count of
   * the whole table, never one per claim.
   */
  async #full(now: number): Promise<boolean> {
    const c = this.#count;
    const stale = now - c.at >= RECOUNT_MS;
    const atBound = c.n + c.since >= this.maxEntries;
    if (stale || (atBound && now >= c.first && now - c.at >= RECOUNT_AT_BOUND_MS)) await this.#recount(now);
    return this.#count.n + this.#count.since >= this.maxEntries;
  }

  /** Counts the unexpired ids (LIMIT stops at the bound) and the earliest expiry among them; one count at a time. */
  #recount(now: number): Promise<void> {
    this.#counting ??= (async () => {
      try {
        const { rows } = await this.db.query(
          `SELECT (SELECT count(*) FROM (SELECT 1 FROM ${this.table} WHERE expires_at > now() LIMIT $1) held) AS n, (SELECT extract(epoch FROM min(expires_at)) * 1000 FROM ${this.table} WHERE expires_at > now()) AS first`,
          [this.maxEntries],
        );
        const row = rows[0] as { n: string | number; first: string | number | null };
        this.#count = { n: Number(row.n), since: 0, at: now, first: row.first === null ? Infinity : Number(row.first) };
      } finally {
        this.#counting = undefined;
      }
    })();
    return this.#counting;
  }
}

/** How long an instance trusts its count of the table's unexpired ids, ms. */
const RECOUNT_MS = 1_000;
/** At the bound, once a counted id has expired, the table is counted again at most this often, ms. */
const RECOUNT_AT_BOUND_MS = 100;

/** The table and its indexes, each statement idempotent (`IF NOT EXISTS`); the SQL the docs give for `createTable: false`. */
function schemaStatements(table: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, expires_at timestamptz NOT NULL, principal text)`,
    // a table of an earlier version has no principal column
    `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS principal text`,
    // the counts of unexpired ids (the table's, now and then; a principal's, per claim) are index range scans
    `CREATE INDEX IF NOT EXISTS ${indexName(table)} ON ${table} (expires_at)`,
    `CREATE INDEX IF NOT EXISTS ${indexName(table, "principal")} ON ${table} (principal, expires_at)`,
  ];
}

/**
 * Runs one `IF NOT EXISTS` statement. Two instances opening at the same moment race in PostgreSQL's catalog: the
 * loser's `IF NOT EXISTS` saw nothing yet, and its insert into pg_class / pg_type / pg_attribute fails with
 * unique_violation (23505), duplicate_table (42P07), duplicate_object (42710) or duplicate_column (42701). The object
 * then exists: the statement is run again, and now does nothing.
 */
async function ddl(db: RequestStateQueryable, statement: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await db.query(statement);
      return;
    } catch (e) {
      const code = (e as { code?: unknown } | null)?.code;
      if (attempt >= 2 || !(code === "23505" || code === "42P07" || code === "42710" || code === "42701")) throw e;
    }
  }
}

/** `<table>_expires_at_idx` (or `<table>_<column>_idx`), without the table's schema (an index lives in its table's schema). */
function indexName(table: string, column = "expires_at"): string {
  return `${table.split(".").at(-1)}_${column}_idx`;
}
