/**
 * The audit chain in PostgreSQL, for deployments with several instances (DESIGN.md §4): the same
 * entries as the file sink, one chain per instance id, one row per entry.
 *
 * Table (created when missing, name configurable):
 *   (instance_id text, seq bigint, prev text, hash text, time timestamptz, type text, line text,
 *    PRIMARY KEY (instance_id, seq))
 * `line` is the exact JSON Lines text the verifier checks; `time`/`type` are for indexing only.
 * A group-commit batch is one multi-row INSERT (atomic; durable when the server commits, per its
 * `synchronous_commit`). Two writers with the same instance id collide on the primary key: the
 * second fails closed (`write_failed`) rather than forking the chain.
 */
import { GENESIS_HASH, createCheckpointSigner, type AuditSigningKey, type CheckpointSigner } from "./chain.js";
import { ChainSinkBase, COMMON_OPTION_KEYS, validateCommon, type ChainSinkCommon, type SealedEntry } from "./chain-sink.js";
import { ChainVerifier, type VerifyOptions, type VerifyResult } from "./verify.js";
import { refuseUnknownOptions } from "../protocol/config-error.js";

/** What the sink needs from a database client: `pg.Pool`, `pg.Client` and PGlite all fit. */
export interface AuditQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Options of {@link PostgresAuditSink.open}. */
export interface PostgresAuditSinkOptions extends ChainSinkCommon {
  db: AuditQueryable;
  /** This instance's chain id (e.g. host name or pod name); one writer per id. */
  instanceId: string;
  /** Checkpoint key, as for the file sink; `false` to opt out knowingly. */
  signing: AuditSigningKey | false;
  /** Table name (letters, digits, `_`; optionally schema-qualified). Default "hmcp_audit". */
  table?: string;
  /** Create the table if missing. Default true. */
  createTable?: boolean;
}

/**
 * The fault code (`AuditSinkFault.code`, readiness) when the database handle the sink writes through is closed (PGlite
 * closed, `pg.Pool` ended): it cannot write again, so the fault lasts until the process restarts with a live handle.
 */
export const HANDLE_CLOSED = "HANDLE_CLOSED";

const TABLE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/**
 * Hash-chained audit sink over PostgreSQL (or PGlite). Same durability policies, checkpoints and
 * `append`/`flush`/`close` contract as {@link FileAuditSink}; no rotation (rows are the unit).
 */
export class PostgresAuditSink extends ChainSinkBase {
  private constructor(
    private readonly db: AuditQueryable,
    private readonly table: string,
    opts: PostgresAuditSinkOptions,
    signer: CheckpointSigner | undefined,
    seq: number,
    head: string,
  ) {
    super(opts, opts.instanceId, signer, seq, head);
  }

  /**
   * Creates the table if asked, and continues this instance's chain from its highest seq.
   * @throws Error on invalid options or when the database refuses the statements.
   */
  static async open(opts: PostgresAuditSinkOptions): Promise<PostgresAuditSink> {
    const known = new Set(["db", "instanceId", "signing", "table", "createTable", ...COMMON_OPTION_KEYS]);
    refuseUnknownOptions("PostgresAuditSink", opts, known);
    if (typeof opts?.db?.query !== "function") throw new Error("PostgresAuditSink: 'db' must have query(text, params) (pg.Pool, pg.Client or PGlite)");
    if (typeof opts.instanceId !== "string" || opts.instanceId === "") throw new Error("PostgresAuditSink: 'instanceId' is required");
    if (opts.signing === undefined) throw new Error("PostgresAuditSink: 'signing' is required (a checkpoint key, or false to opt out knowingly)");
    const table = opts.table ?? "hmcp_audit";
    if (!TABLE_RE.test(table)) throw new Error("PostgresAuditSink: 'table' may hold letters, digits and '_' (optionally schema.table)");
    validateCommon("PostgresAuditSink", opts);
    const signer = opts.signing === false ? undefined : await createCheckpointSigner(opts.signing);
    if (opts.createTable ?? true) await ensureTable(opts.db, table);
    const { rows } = await opts.db.query(`SELECT seq, hash, line FROM ${table} WHERE instance_id = $1 ORDER BY seq DESC LIMIT 1`, [opts.instanceId]);
    const last = rows[0] as { seq: string | number; hash: string; line: string } | undefined;
    const sink = new PostgresAuditSink(opts.db, table, opts, signer, last ? Number(last.seq) : 0, last?.hash ?? GENESIS_HASH);
    sink.detach = sink.listenForConnectionErrors();
    if (last !== undefined) await sink.continueAfter(recordOf(last.line));
    return sink;
  }

  /**
   * A `pg.Pool` emits `error` when an idle connection breaks (the server restarted or killed), and a `pg.Client` when
   * its connection does: without a listener, Node would end the process. The sink listens (a notice with the code, no
   * message), so a database outage is a write fault it recovers from, not a crash. Other listeners are left alone.
   */
  private listenForConnectionErrors(): (() => void) | undefined {
    const emitter = this.db as { on?: unknown; off?: unknown };
    if (typeof emitter.on !== "function" || typeof emitter.off !== "function") return undefined;
    const onError = (e: unknown) => this.notice("audit database connection lost", { where: this.where(), code: errorCode(e) ?? "unknown" });
    (emitter.on as (ev: string, fn: (e: unknown) => void) => void).call(this.db, "error", onError);
    return () => (emitter.off as (ev: string, fn: (e: unknown) => void) => void).call(this.db, "error", onError);
  }

  protected override async persist(entries: SealedEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const params: unknown[] = [];
    const values: string[] = [];
    for (const e of entries) {
      const b = params.length;
      values.push(`($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7})`);
      params.push(this.chainId, e.seq, e.prev, e.hash, e.time, e.type, e.line);
    }
    try {
      await this.db.query(`INSERT INTO ${this.table} (instance_id, seq, prev, hash, time, type, line) VALUES ${values.join(", ")}`, params);
    } catch (e) {
      if (errorCode(e) !== "23505") throw e;
      // A batch whose commit was not answered (the server killed, the connection lost after COMMIT) may be in the table:
      // rows that are these very entries (same seq and hash) were ours, and only the rest is written; any other row at
      // one of these seqs is another writer's, and the fault stays (retrying would fork the chain).
      const rest = await this.notYetStored(entries);
      if (rest === undefined) throw e;
      this.notice("audit batch found committed after a lost answer", { where: this.where(), from: entries[0]!.seq, stored: entries.length - rest.length });
      await this.persist(rest);
    }
  }

  /**
   * The entries not in the table yet, when every row at one of their seqs is the entry itself (same hash); undefined
   * when a row at one of them is another writer's.
   */
  private async notYetStored(entries: SealedEntry[]): Promise<SealedEntry[] | undefined> {
    const { rows } = await this.db.query(`SELECT seq, hash FROM ${this.table} WHERE instance_id = $1 AND seq >= $2 AND seq <= $3`, [this.chainId, entries[0]!.seq, entries.at(-1)!.seq]);
    const stored = new Map((rows as Array<{ seq: string | number; hash: string }>).map((r) => [Number(r.seq), r.hash]));
    for (const e of entries) if (stored.has(e.seq) && stored.get(e.seq) !== e.hash) return undefined;
    return entries.filter((e) => !stored.has(e.seq));
  }

  /**
   * Faults retrying cannot clear: a unique violation (SQLSTATE 23505) that is not a batch of ours found committed after
   * a lost answer (another writer took the chain's next seq: retrying would fork it), and a database handle that is
   * closed (`HANDLE_CLOSED`).
   */
  protected override isPermanent(error: unknown): boolean {
    const code = errorCode(error);
    return code === "23505" || code === HANDLE_CLOSED;
  }

  /** An error when the database handle is closed (PGlite `closed`, a `pg.Pool` ended), so it can never write again. */
  protected override handleLost(): Error | undefined {
    const h = this.db as { closed?: unknown; ended?: unknown; ending?: unknown };
    if (h.closed !== true && h.ended !== true && h.ending !== true) return undefined;
    return Object.assign(new Error("the audit database handle is closed"), { code: HANDLE_CLOSED });
  }

  protected override async release(): Promise<void> {
    // The connection is the caller's; only the listener added by open() goes.
    this.detach?.();
  }

  /** Removes the `error` listener {@link open} added to a `pg.Pool` or `pg.Client`. */
  private detach: (() => void) | undefined;

  protected override where(): string {
    return `${this.table}:${this.chainId}`;
  }
}

async function ensureTable(db: AuditQueryable, table: string): Promise<void> {
  await db.query(
    `CREATE TABLE IF NOT EXISTS ${table} (
       instance_id text NOT NULL,
       seq bigint NOT NULL,
       prev text NOT NULL,
       hash text NOT NULL,
       time timestamptz NOT NULL,
       type text NOT NULL,
       line text NOT NULL,
       PRIMARY KEY (instance_id, seq)
     )`,
  );
}

/**
 * Verifies one instance's chain stored by {@link PostgresAuditSink}, reading rows in seq order in
 * pages of 5,000. Failures name `file` as `<table>:<instanceId>` and `line` as the row's seq.
 * @throws Error when the query fails or `publicKey` is unusable.
 */
export async function verifyAuditTable(db: AuditQueryable, opts: VerifyOptions & { instanceId: string; table?: string }): Promise<VerifyResult> {
  const table = opts.table ?? "hmcp_audit";
  if (!TABLE_RE.test(table)) throw new Error("verifyAuditTable: invalid table name");
  // the checkpoints must name this instance: rows of another chain copied under its id are refused
  const v = await ChainVerifier.create({ ...opts, chain: opts.instanceId });
  const where = `${table}:${opts.instanceId}`;
  let after = -1;
  outer: for (;;) {
    const { rows } = await db.query(`SELECT seq, line FROM ${table} WHERE instance_id = $1 AND seq > $2 ORDER BY seq LIMIT 5000`, [opts.instanceId, after]);
    if (rows.length === 0) break;
    for (const r of rows as { seq: string | number; line: string }[]) {
      after = Number(r.seq);
      if (!(await v.line(where, after, r.line, true))) break outer;
    }
  }
  v.finish();
  return v.result();
}

/** Lists the chains (instance ids) in the table. */
export async function listAuditChains(db: AuditQueryable, table = "hmcp_audit"): Promise<string[]> {
  if (!TABLE_RE.test(table)) throw new Error("listAuditChains: invalid table name");
  const { rows } = await db.query(`SELECT DISTINCT instance_id FROM ${table} ORDER BY instance_id`);
  return (rows as { instance_id: string }[]).map((r) => r.instance_id);
}

/** A driver error's code (SQLSTATE, errno code) or undefined. */
function errorCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

/** The record of a stored chain line, or `undefined` when the line does not parse. */
function recordOf(line: string): unknown {
  try {
    return (JSON.parse(line) as { record?: unknown }).record;
  } catch {
    return undefined;
  }
}
