/**
 * Where MCP tasks (extension `io.modelcontextprotocol/tasks`, SEP-2663) are kept: one row per task in PostgreSQL, or in
 * PGlite (PostgreSQL compiled to WebAssembly, embedded) when no database is configured. Every instance of an agent
 * that shares the table serves every task: a task created through one instance is read, answered and cancelled through
 * another, and outlives the process that created it.
 */
import { refuseUnknownOptions } from "../protocol/config-error.js";
import type { Principal } from "../protocol/index.js";

/** A task's status (SEP-2663 "Task Status"): `completed`, `failed` and `cancelled` are terminal. */
export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/** Whether `status` is terminal (the task's state no longer changes). */
export function isTerminal(status: TaskStatus): boolean {
  return status === "completed" || status === "failed" || status === "cancelled";
}

/**
 * One task as the store keeps it. Holds what the task's request carried and what it returned (the tool's arguments
 * after the input guardrails, its result after the output guardrails): the table is as sensitive as the EMR it reads
 * from, and is protected like it (see SECURITY.md, "Tasks").
 */
export interface StoredTask {
  /** Random UUID (122 bits): unguessable, the handle the client polls with. */
  taskId: string;
  /** The agent (server name) that created it: a table may be shared by several agents. */
  agent: string;
  /** Digest of who may see it: the creating principal (issuer, tenant, client, subject) and its patient context. */
  owner: string;
  status: TaskStatus;
  statusMessage?: string;
  /** ms since the epoch. */
  createdAt: number;
  lastUpdatedAt: number;
  /** Lifetime from `createdAt`, ms; null for unlimited. After it the task is refused as expired and deleted. */
  ttlMs: number | null;
  /** Suggested polling interval, ms. */
  pollIntervalMs: number;
  /** The JSON-RPC id of the `tools/call` that created it (for the audit records of its runs). */
  requestId: string | number;
  /** The `tools/call` params the task runs (after the input guardrails), `_meta` kept but the protocol envelope dropped. */
  params: Record<string, unknown>;
  /** The client capabilities declared on the creating request (what its questions may use). */
  capabilities: unknown;
  /** The patients the task is about (declared, or checked by its runs): FHIR Patient ids, for the audit trail. */
  patients?: string[];
  /** Who created it (no token): its runs act as this principal. */
  principal: Principal | null;
  /** Answers given through `tasks/update` and `ctx.step` results, in the order the handler asked and ran them. */
  journal: unknown[];
  /**
   * The questions of the run that stopped for input (status `input_required`), in journal order: one, or several the
   * handler asked at once. `answer` is an answer taken already (the journal entry), kept until all are answered.
   */
  questions?: Array<{ kind: "elicitation" | "sampling"; ask: string; key: string; answer?: unknown }>;
  /** The input requests `tasks/get` surfaces (status `input_required`): the questions not answered yet. */
  inputRequests?: Record<string, unknown>;
  /** The tool's result (status `completed`). */
  result?: Record<string, unknown>;
  /** The JSON-RPC error of the run (status `failed`). */
  error?: { code: number; message: string; data?: unknown };
  /** The instance running it now (status `working`), and until when its lease holds (ms since the epoch). */
  runner?: string;
  leaseUntil?: number;
  /** The tool declared itself idempotent (`annotations.idempotentHint`): a run lost with its instance is run again. */
  idempotent: boolean;
  /** Compare-and-set counter: each write names the version it read. */
  version: number;
}

/**
 * A task store. Writes are compare-and-set on {@link StoredTask.version}, so two instances never both move one task.
 * Implementations must be durable before they resolve: `create` resolving means a `get` anywhere finds the task (SEP-2663
 * "Task Creation": a CreateTaskResult is sent only once the task is durably created).
 */
export interface TaskStore {
  /**
   * Stores a new task (version 0), unless its owner already has `maxActive` tasks not yet terminal (`working` or
   * `input_required`; under concurrent creation the bound may be passed by the number of creations in flight).
   * @returns false when refused for that bound
   */
  create(task: StoredTask, maxActive?: number): Promise<boolean>;
  /** The task, or undefined when unknown (or deleted after expiry). */
  get(taskId: string): Promise<StoredTask | undefined>;
  /**
   * Replaces the task if its stored version is still `task.version`; stores it as version + 1.
   * @returns the stored task, or undefined when someone else wrote it first (re-read and decide again)
   */
  put(task: StoredTask): Promise<StoredTask | undefined>;
  /**
   * Extends the leases of tasks `runner` is running to `leaseUntil` (ms since the epoch).
   * @returns the ids among `taskIds` that are no longer `working` under `runner` (cancelled, taken over): stop them
   */
  renew(runner: string, taskIds: readonly string[], leaseUntil: number): Promise<string[]>;
  /** Deletes tasks whose TTL elapsed before `now` (ms since the epoch). @returns how many */
  sweep(now: number): Promise<number>;
  /**
   * The tasks of `owner` (MCP 2025-11-25 `tasks/list`), oldest first (by `createdAt`, then `taskId`), at most `limit`,
   * starting after `after` when given; tasks whose TTL elapsed before `now` are left out.
   */
  list(owner: string, options: { after?: { createdAt: number; taskId: string }; limit: number; now: number }): Promise<StoredTask[]>;
}

/** What the store needs from a database client: `pg.Pool`, `pg.Client` and PGlite all fit. */
export interface TaskQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Options of {@link PostgresTaskStore.open}. */
export interface PostgresTaskStoreOptions {
  /** The connection (pool): `pg.Pool` for a server (`DATABASE_URL`), or a PGlite instance. It stays the caller's. */
  db: TaskQueryable;
  /** Table name (letters, digits, `_`; optionally schema-qualified). Default "hmcp_tasks". */
  table?: string;
  /** Create the table if missing. Default true. */
  createTable?: boolean;
}

const TABLE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
const KNOWN = new Set(["db", "table", "createTable"]);

type Row = { body: StoredTask | string; version: number | string; lease_until: Date | string | null };

function fromRow(row: Row): StoredTask {
  const body = typeof row.body === "string" ? (JSON.parse(row.body) as StoredTask) : row.body;
  const task: StoredTask = { ...body, version: Number(row.version) };
  // the lease column is renewed on its own (renew); it is the one that counts
  if (row.lease_until === null) delete task.leaseUntil;
  else task.leaseUntil = new Date(row.lease_until).getTime();
  return task;
}

function ms(t: number | undefined | null): string | null {
  return t === undefined || t === null ? null : new Date(t).toISOString();
}

/**
 * Tasks in one PostgreSQL (or PGlite) table: `task_id` (primary key), `status`, `version`, `runner`, `lease_until`,
 * `expires_at` as columns (what is matched on), the rest of the task as `jsonb`. A write is one `UPDATE … WHERE
 * version = $n`, atomic across instances.
 *
 * ```ts
 * const tasks = await PostgresTaskStore.open({ db: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 * new HMCPServer(info, { tasks: { store: tasks } });
 * ```
 */
export class PostgresTaskStore implements TaskStore {
  private constructor(
    private readonly db: TaskQueryable,
    private readonly table: string,
  ) {}

  /**
   * Creates the table if asked.
   * @throws Error on an unknown option, a `db` without `query`, an invalid table name; whatever the database throws
   */
  static async open(options: PostgresTaskStoreOptions): Promise<PostgresTaskStore> {
    refuseUnknownOptions("PostgresTaskStore", options, KNOWN);
    if (typeof options?.db?.query !== "function") throw new Error("PostgresTaskStore: 'db' must have query(text, params) (pg.Pool, pg.Client or PGlite)");
    const table = options.table ?? "hmcp_tasks";
    if (!TABLE_RE.test(table)) throw new Error("PostgresTaskStore: 'table' may hold letters, digits and '_' (optionally schema.table)");
    if (options.createTable !== false) {
      await options.db.query(
        `CREATE TABLE IF NOT EXISTS ${table} (task_id text PRIMARY KEY, owner text NOT NULL, status text NOT NULL, version integer NOT NULL, runner text, lease_until timestamptz, expires_at timestamptz, body jsonb NOT NULL)`,
      );
      await options.db.query(`CREATE INDEX IF NOT EXISTS ${table.replace(".", "_")}_owner_status ON ${table} (owner, status)`);
    }
    return new PostgresTaskStore(options.db, table);
  }

  async create(task: StoredTask, maxActive?: number): Promise<boolean> {
    const values = [task.taskId, task.owner, task.status, task.runner ?? null, ms(task.leaseUntil), task.ttlMs === null ? null : ms(task.createdAt + task.ttlMs), JSON.stringify({ ...task, version: 0 })];
    if (maxActive === undefined) {
      await this.db.query(`INSERT INTO ${this.table} (task_id, owner, status, version, runner, lease_until, expires_at, body) VALUES ($1, $2, $3, 0, $4, $5, $6, $7)`, values);
      return true;
    }
    // one statement: the count and the insert see the same snapshot (expired tasks do not count)
    const { rows } = await this.db.query(
      `INSERT INTO ${this.table} (task_id, owner, status, version, runner, lease_until, expires_at, body) SELECT $1, $2, $3, 0, $4, $5, $6, $7 WHERE (SELECT count(*) FROM ${this.table} WHERE owner = $2 AND status IN ('working', 'input_required') AND (expires_at IS NULL OR expires_at > now())) < $8 RETURNING task_id`,
      [...values, maxActive],
    );
    return rows.length === 1;
  }

  async get(taskId: string): Promise<StoredTask | undefined> {
    const { rows } = await this.db.query(`SELECT body, version, lease_until FROM ${this.table} WHERE task_id = $1`, [taskId]);
    return rows.length === 0 ? undefined : fromRow(rows[0] as Row);
  }

  async put(task: StoredTask): Promise<StoredTask | undefined> {
    const next = { ...task, version: task.version + 1 };
    const { rows } = await this.db.query(
      `UPDATE ${this.table} SET status = $3, version = $4, runner = $5, lease_until = $6, expires_at = $7, body = $8 WHERE task_id = $1 AND version = $2 RETURNING version`,
      [task.taskId, task.version, next.status, next.version, next.runner ?? null, ms(next.leaseUntil), next.ttlMs === null ? null : ms(next.createdAt + next.ttlMs), JSON.stringify(next)],
    );
    return rows.length === 1 ? next : undefined;
  }

  async renew(runner: string, taskIds: readonly string[], leaseUntil: number): Promise<string[]> {
    if (taskIds.length === 0) return [];
    // the lease is a column only: the body's copy is what a reader decides on after the lease column says "expired"
    const { rows } = await this.db.query(
      `UPDATE ${this.table} SET lease_until = $3 WHERE task_id = ANY($1::text[]) AND runner = $2 AND status = 'working' RETURNING task_id`,
      [taskIds, runner, ms(leaseUntil)],
    );
    const live = new Set((rows as Array<{ task_id: string }>).map((r) => r.task_id));
    return taskIds.filter((id) => !live.has(id));
  }

  async sweep(now: number): Promise<number> {
    const { rows } = await this.db.query(`DELETE FROM ${this.table} WHERE expires_at < $1 RETURNING task_id`, [ms(now)]);
    return rows.length;
  }

  async list(owner: string, options: { after?: { createdAt: number; taskId: string }; limit: number; now: number }): Promise<StoredTask[]> {
    // the owner and the creation time are in the body (no column: tables made before tasks/list keep working)
    const after = options.after;
    const { rows } = await this.db.query(
      `SELECT body, version, lease_until FROM ${this.table} WHERE body->>'owner' = $1 AND (expires_at IS NULL OR expires_at > $2)` +
        (after === undefined ? "" : ` AND ((body->>'createdAt')::bigint, task_id) > ($4::bigint, $5)`) +
        ` ORDER BY (body->>'createdAt')::bigint, task_id LIMIT $3`,
      after === undefined ? [owner, ms(options.now), options.limit] : [owner, ms(options.now), options.limit, after.createdAt, after.taskId],
    );
    return (rows as Row[]).map(fromRow);
  }
}
