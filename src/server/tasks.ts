/**
 * MCP tasks: the extension `io.modelcontextprotocol/tasks` (SEP-2663, "Tasks Extension"), on MCP 2026-07-28.
 *
 * A `tools/call` of a tool that declares `execution.taskSupport` (`"optional"` or `"required"`), from a client whose
 * request declares the extension, is answered with a `CreateTaskResult` (`resultType: "task"`) once the task is stored;
 * the tool then runs in the background, through the same pipeline (scopes, patient context, output guardrails, one audit
 * record per run carrying the task id). The client polls `tasks/get`; a question the tool asks (`ctx.elicit`,
 * `ctx.sample`) parks the task in `input_required` with the question in `inputRequests`, and `tasks/update` answers it;
 * `tasks/cancel` cancels it.
 *
 * How a run survives its process: like an MCP 2026-07-28 input round (input-rounds.ts), a run replays the handler from
 * the start against the task's journal (the answers given so far and every `ctx.step` result, stored as each step
 * ends), so any instance sharing the store resumes a task, and a step (an EMR write) is not repeated. A running task
 * holds a lease its instance renews; a task whose instance died (lease expired) is marked failed when next read, or run
 * again when its tool declares itself idempotent (`annotations.idempotentHint`).
 *
 * @internal
 */
import { createHash, randomUUID } from "node:crypto";
import type { JSONRPCRequest } from "@modelcontextprotocol/server";
import { CLIENT_CAPABILITIES_META_KEY, MissingRequiredClientCapabilityError, ProtocolError } from "@modelcontextprotocol/server";
import { PGlite } from "@electric-sql/pglite";
import { INVALID_PARAMS, type Principal } from "../protocol/index.js";
import { LIMIT_REACHED } from "../protocol/errors.js";
import { isTerminal, PostgresTaskStore, type StoredTask, type TaskStatus, type TaskStore } from "./task-store.js";
import { journalAnswer } from "./input-rounds.js";
import { principalIdentity } from "../auth/principal.js";
import { settleWithin } from "../util/settle.js";

/** The extension's identifier (SEP-2663 "Extension Identifier"). */
export const TASKS_EXTENSION_ID = "io.modelcontextprotocol/tasks";

/** Options of the tasks extension (`HMCPServerOptions.tasks`). */
export interface TaskOptions {
  /**
   * Where tasks are kept. Default: a PGlite database in this process's memory, shared by every server of the process
   * (tasks then survive neither a restart nor reach another instance: give a {@link PostgresTaskStore} over `pg` with
   * `DATABASE_URL`, or over PGlite with a data directory, for that).
   */
  store?: TaskStore;
  /** A task's lifetime from creation, ms (`ttlMs`); null for unlimited. Default 3,600,000 (one hour). */
  ttlMs?: number | null;
  /** The polling interval suggested to clients, ms (`pollIntervalMs`). Default 1,000. */
  pollIntervalMs?: number;
  /**
   * How long a running task's lease lasts without renewal, ms (renewed every third of it while the run goes on). A
   * task whose lease ran out lost its instance. Default 30,000.
   */
  leaseMs?: number;
  /**
   * Most tasks one owner (principal and patient context) may have not yet ended (`working`, `input_required`); a
   * further task-creating call is refused (`-32000`, `data.reason` `too_many_tasks`) until one ends or expires.
   * Default 100.
   */
  maxActivePerOwner?: number;
}

/** The error a task records when the instance running it stopped (its lease expired). */
export const TASK_RUNNER_LOST = "task_runner_lost";

/** Whether a 2026-07-28 request's envelope declares the tasks extension. */
export function declaresTasks(envelope: Record<string, unknown> | undefined): boolean {
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  const ext = caps?.extensions;
  return typeof ext === "object" && ext !== null && ext[TASKS_EXTENSION_ID] !== undefined && ext[TASKS_EXTENSION_ID] !== null;
}

/** -32021 for a tool that runs only as a task, called by a client that did not declare the extension. */
export function tasksRequired(): ProtocolError {
  return new MissingRequiredClientCapabilityError({ requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } } as never, "This tool runs only as a task: declare the io.modelcontextprotocol/tasks extension");
}

/** Who may see a task: the principal (issuer, tenant, client, subject) and its patient context, digested. */
export function taskOwner(agent: string, principal: Principal | undefined): string {
  const who = principal === undefined ? null : [...principalIdentity(principal).who, principal.patient ?? null];
  return createHash("sha256").update(JSON.stringify([agent, who])).digest("hex");
}

/** -32602 for a task that is unknown, expired, or not the caller's (one answer for all three: existence is not told). */
export function taskNotFound(expired = false): ProtocolError {
  return new ProtocolError(INVALID_PARAMS, expired ? "Failed to retrieve task: Task has expired" : "Failed to retrieve task: Task not found", { reason: expired ? "task_expired" : "task_not_found" });
}

/** The `Task` members of a stored task (SEP-2663 "Tasks"), without the status payload. */
function taskFields(t: StoredTask): Record<string, unknown> {
  return {
    taskId: t.taskId,
    status: t.status,
    ...(t.statusMessage !== undefined && { statusMessage: t.statusMessage }),
    createdAt: new Date(t.createdAt).toISOString(),
    lastUpdatedAt: new Date(t.lastUpdatedAt).toISOString(),
    ttlMs: t.ttlMs,
    pollIntervalMs: t.pollIntervalMs,
  };
}

/** The `CreateTaskResult` of a new task (`resultType: "task"`, the Task's members at the top level). */
export function createTaskResult(t: StoredTask): Record<string, unknown> {
  return { resultType: "task", ...taskFields(t) };
}

/** The `tasks/get` result (`DetailedTask`): the Task and, by status, `inputRequests`, `result` or `error`. */
export function detailedTask(t: StoredTask): Record<string, unknown> {
  return {
    ...taskFields(t),
    ...(t.status === "input_required" && { inputRequests: t.inputRequests ?? {} }),
    ...(t.status === "completed" && { result: t.result ?? {} }),
    ...(t.status === "failed" && { error: t.error ?? { code: -32603, message: "Internal error" } }),
  };
}

/** Tasks per `tasks/list` page (MCP 2025-11-25). */
export const LIST_PAGE_SIZE = 50;

/** A `tasks/list` cursor: where the previous page ended (creation time and id), base64url JSON; opaque to clients. */
function encodeCursor(t: StoredTask): string {
  return Buffer.from(JSON.stringify([t.createdAt, t.taskId])).toString("base64url");
}

function decodeCursor(cursor: string): { createdAt: number; taskId: string } {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    v = undefined;
  }
  if (!Array.isArray(v) || v.length !== 2 || !Number.isSafeInteger(v[0]) || typeof v[1] !== "string" || v[1].length > 256) {
    throw new ProtocolError(INVALID_PARAMS, "Invalid params: unknown cursor", { reason: "invalid_cursor" });
  }
  return { createdAt: v[0] as number, taskId: v[1] };
}

/** How a run of a task ended. */
export type RunOutcome = (
  | { kind: "completed"; result: Record<string, unknown>; journal: readonly unknown[] }
  | { kind: "input_required"; inputRequests: Record<string, unknown>; questions: NonNullable<StoredTask["questions"]>; journal: readonly unknown[] }
  | { kind: "failed"; error: { code: number; message: string; data?: unknown }; journal: readonly unknown[] }
) & { patients?: readonly string[] } | { kind: "cancelled" };

/** Runs a task once (the server's tool through its pipeline), given the task and the run's abort signal. */
export type TaskRun = ((task: StoredTask, signal: AbortSignal) => Promise<RunOutcome>) & {
  /** Who started the run (the HTTP app whose server made this function; see HttpApp.close), read when runs are stopped. */
  readonly [RUN_ORIGIN]?: () => object | undefined;
};
/** Internal: the property of a {@link TaskRun} that names who started it. */
export const RUN_ORIGIN: unique symbol = Symbol("hmcp.taskRunOrigin");
/** Origins whose runs were stopped (TaskRuntime.stopRuns): no run of theirs starts any more, in any runtime. */
const STOPPED_ORIGINS = new WeakSet<object>();

let defaultStore: Promise<TaskStore> | undefined;
/** The process's embedded store: an in-memory PGlite, opened on first use. */
function embeddedStore(): Promise<TaskStore> {
  return (defaultStore ??= (async () => PostgresTaskStore.open({ db: await PGlite.create() }))());
}

/** The tasks of one task store in this process: creates tasks, runs them, answers their reads and writes. */
export class TaskRuntime {
  /** This instance's id as a task runner (the lease holder). */
  readonly runner = randomUUID();
  readonly ttlMs: number | null;
  readonly pollIntervalMs: number;
  readonly leaseMs: number;
  readonly maxActivePerOwner: number;
  readonly #store: TaskStore | undefined;
  /** Runs in this process: their abort controllers (for tasks/cancel) and where they end. */
  readonly #running = new Map<string, { abort: AbortController; done: Promise<void>; run: TaskRun }>();
  /** Who waits here for a task to change (MCP 2025-11-25 `tasks/result`). */
  readonly #waiters = new Map<string, Set<() => void>>();
  /** Questions being asked now by a `tasks/result` of this process (`taskId\0key`). */
  readonly #asking = new Set<string>();
  #heartbeat: NodeJS.Timeout | undefined;
  #nextSweep = 0;

  constructor(options: TaskOptions = {}) {
    this.#store = options.store;
    this.ttlMs = options.ttlMs === undefined ? 3_600_000 : options.ttlMs;
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.maxActivePerOwner = options.maxActivePerOwner ?? 100;
  }

  store(): Promise<TaskStore> {
    return this.#store !== undefined ? Promise.resolve(this.#store) : embeddedStore();
  }

  /** Runs of this process not yet ended. */
  get running(): number {
    return this.#running.size;
  }

  /**
   * Stores a new task for `request` (status `working`, leased to this instance) and starts `run` in the background.
   * Resolves once the task is durable (SEP-2663: a CreateTaskResult only for a task `tasks/get` finds).
   */
  async create(input: { agent: string; principal: Principal | undefined; request: JSONRPCRequest; capabilities: unknown; idempotent: boolean; patients: readonly string[]; ttlMs?: number | null }): Promise<StoredTask> {
    const store = await this.store();
    const now = Date.now();
    const params = { ...((input.request.params ?? {}) as Record<string, unknown>) };
    // the protocol envelope (version, capabilities) belongs to the request, not to the task's later runs
    const meta = params["_meta"] as Record<string, unknown> | undefined;
    if (meta !== undefined) {
      const kept = Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith("io.modelcontextprotocol/")));
      if (Object.keys(kept).length > 0) params["_meta"] = kept;
      else delete params["_meta"];
    }
    const task: StoredTask = {
      taskId: randomUUID(),
      agent: input.agent,
      owner: taskOwner(input.agent, input.principal),
      status: "working",
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs: input.ttlMs === undefined ? this.ttlMs : input.ttlMs,
      pollIntervalMs: this.pollIntervalMs,
      requestId: input.request.id,
      params,
      capabilities: input.capabilities ?? {},
      principal: input.principal ?? null,
      ...(input.patients.length > 0 && { patients: [...input.patients] }),
      journal: [],
      runner: this.runner,
      leaseUntil: now + this.leaseMs,
      idempotent: input.idempotent,
      version: 0,
    };
    if (!(await store.create(task, this.maxActivePerOwner))) {
      throw new ProtocolError(LIMIT_REACHED, `Too many tasks in progress for this caller (${this.maxActivePerOwner}): wait for one to end, or cancel one`, { reason: "too_many_tasks" });
    }
    return task;
  }

  /**
   * The task `taskId` as `owner` may see it: undefined when unknown, not `owner`'s, or expired (then deleted, and
   * `expired` set). A `working` task whose runner's lease expired is settled first: failed (`task_runner_lost`), or
   * taken over and run again here by `rerun` when its tool is idempotent.
   */
  async read(taskId: string, owner: string, rerun?: TaskRun): Promise<{ task?: StoredTask; expired?: boolean; denied?: boolean }> {
    const store = await this.store();
    this.#sweep(store);
    let task = await store.get(taskId);
    if (task === undefined) return {};
    if (task.owner !== owner) return { denied: true };
    if (task.ttlMs !== null && Date.now() >= task.createdAt + task.ttlMs) return { expired: true };
    for (let tries = 0; task.status === "working" && !this.#running.has(task.taskId) && (task.leaseUntil ?? 0) < Date.now() && tries < 3; tries++) {
      // its instance stopped mid-run: nothing renews the lease
      const takeOver = task.idempotent && rerun !== undefined;
      const next: StoredTask = takeOver
        ? { ...task, runner: this.runner, leaseUntil: Date.now() + this.leaseMs, lastUpdatedAt: Date.now(), statusMessage: "Run again: the instance running it stopped" }
        : {
            ...task,
            status: "failed",
            statusMessage: "The agent instance running this task stopped",
            error: { code: -32603, message: "The agent instance running this task stopped", data: { reason: TASK_RUNNER_LOST } },
            lastUpdatedAt: Date.now(),
          };
      if (!takeOver) delete next.runner;
      const stored = await store.put(next);
      if (stored !== undefined) {
        if (takeOver) this.start(stored, rerun!);
        return { task: stored };
      }
      task = await store.get(taskId);
      if (task === undefined) return {};
    }
    return { task };
  }

  /**
   * Answers questions a task waits on (`tasks/update`): each entry for an outstanding key, checked as the asked kind's
   * result, is kept; once every question of the run is answered, the answers join the journal in the questions' order,
   * the task goes back to `working` under this instance and `rerun` resumes it. Until then the task stays
   * `input_required`, `inputRequests` holding the questions still open. Keys not outstanding are ignored (SEP-2663).
   * @returns the interactions to record (none when nothing was taken)
   * @throws ProtocolError -32602 `invalid_input_response` when an answer is malformed (then none is taken)
   */
  async answer(task: StoredTask, responses: Record<string, unknown>, rerun: TaskRun): Promise<Array<{ kind: "elicitation" | "sampling"; outcome: string }>> {
    const store = await this.store();
    let current: StoredTask | undefined = task;
    for (let tries = 0; current !== undefined && tries < 3; tries++) {
      if (current.status !== "input_required" || current.questions === undefined) return [];
      const took: Array<{ kind: "elicitation" | "sampling"; outcome: string }> = [];
      const questions = current.questions.map((q) => {
        if (q.answer !== undefined || !(q.key in responses)) return q;
        const taken = journalAnswer(q, responses[q.key]);
        if (taken === undefined) throw new ProtocolError(INVALID_PARAMS, `Invalid inputResponses entry '${q.key}': expected ${q.kind === "elicitation" ? "an ElicitResult" : "a CreateMessageResult"}`, { reason: "invalid_input_response" });
        took.push({ kind: q.kind, outcome: taken.outcome });
        return { ...q, answer: taken.entry };
      });
      if (took.length === 0) return [];
      const open = questions.filter((q) => q.answer === undefined);
      let next: StoredTask;
      if (open.length > 0) {
        // a partial answer: the task waits for the rest
        const inputRequests = Object.fromEntries(Object.entries(current.inputRequests ?? {}).filter(([key]) => open.some((q) => q.key === key)));
        next = { ...current, questions, inputRequests, lastUpdatedAt: Date.now() };
      } else {
        next = { ...current, status: "working", journal: [...current.journal, ...questions.map((q) => q.answer)], runner: this.runner, leaseUntil: Date.now() + this.leaseMs, lastUpdatedAt: Date.now() };
        delete next.questions;
        delete next.inputRequests;
        delete next.statusMessage;
      }
      const stored = await store.put(next);
      if (stored !== undefined) {
        if (open.length === 0) this.start(stored, rerun);
        this.#changed(task.taskId);
        return took;
      }
      current = await store.get(task.taskId);
    }
    return [];
  }

  /**
   * Cancels a task not yet terminal (`tasks/cancel`): stored as `cancelled` and its run here, if any, aborted.
   * @returns the task as it now is (`cancelled`, or the terminal state it reached first), undefined when it is gone
   */
  async cancel(task: StoredTask): Promise<StoredTask | undefined> {
    const store = await this.store();
    let current: StoredTask | undefined = task;
    for (let tries = 0; current !== undefined && !isTerminal(current.status) && tries < 3; tries++) {
      const next: StoredTask = { ...current, status: "cancelled", statusMessage: "Cancelled by the client", lastUpdatedAt: Date.now() };
      delete next.runner;
      delete next.questions;
      delete next.inputRequests;
      const stored = await store.put(next);
      if (stored !== undefined) {
        current = stored;
        break;
      }
      current = await store.get(task.taskId);
    }
    this.#running.get(task.taskId)?.abort.abort(new Error("task cancelled"));
    this.#changed(task.taskId);
    return current;
  }

  /**
   * Resolves when a task of this process's runs or answers changes here, or after `ms` (a change made by another
   * instance is seen only by reading again), or when `signal` aborts.
   */
  whenChanged(taskId: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      let waiters = this.#waiters.get(taskId);
      if (waiters === undefined) this.#waiters.set(taskId, (waiters = new Set()));
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        const w = this.#waiters.get(taskId);
        w?.delete(done);
        if (w?.size === 0) this.#waiters.delete(taskId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      waiters.add(done);
      if (signal.aborted) done();
    });
  }

  #changed(taskId: string): void {
    for (const w of [...(this.#waiters.get(taskId) ?? [])]) w();
  }

  /**
   * Claims the asking of a task's question in this process (MCP 2025-11-25 `tasks/result` sends it to the client):
   * false when another request here is asking it already. Release with {@link releaseQuestion}.
   */
  claimQuestion(taskId: string, key: string): boolean {
    const k = `${taskId}\0${key}`;
    if (this.#asking.has(k)) return false;
    this.#asking.add(k);
    return true;
  }

  releaseQuestion(taskId: string, key: string): void {
    this.#asking.delete(`${taskId}\0${key}`);
    this.#changed(taskId);
  }

  /**
   * A page of `owner`'s tasks (MCP 2025-11-25 `tasks/list`), oldest first, at most {@link LIST_PAGE_SIZE}.
   * @param cursor - a `nextCursor` of a previous page (opaque to clients)
   * @throws ProtocolError -32602 (`invalid_cursor`) for a cursor this runtime did not make
   */
  async list(owner: string, cursor: string | undefined): Promise<{ tasks: StoredTask[]; nextCursor?: string }> {
    const store = await this.store();
    this.#sweep(store);
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const rows = await store.list(owner, { ...(after !== undefined && { after }), limit: LIST_PAGE_SIZE + 1, now: Date.now() });
    const tasks = rows.slice(0, LIST_PAGE_SIZE);
    const last = tasks[tasks.length - 1];
    return { tasks, ...(rows.length > LIST_PAGE_SIZE && last !== undefined && { nextCursor: encodeCursor(last) }) };
  }

  /**
   * Sets a running task's `statusMessage` (a handler's `ctx.progress`); best effort, never in the run's way. Coalesced
   * per task: one write (a read and a compare-and-set) at a time, and a message given while one is going on replaces
   * any waiting before it, so a burst of progress costs a few writes and the last message is the one stored.
   */
  progress(taskId: string, message: string): void {
    const waiting = this.#progressing.get(taskId);
    if (waiting !== undefined) {
      waiting.message = message;
      return;
    }
    const p = { message };
    this.#progressing.set(taskId, p);
    void (async () => {
      try {
        for (let written: string | undefined; written !== p.message; ) {
          written = p.message;
          const store = await this.store();
          // a compare-and-set: when another write (a step's journal, an answer) came first, read again and retry
          for (let tries = 0; tries < 5; tries++) {
            const t = await store.get(taskId);
            if (t === undefined || t.status !== "working" || t.runner !== this.runner) return;
            if ((await store.put({ ...t, statusMessage: written.slice(0, 1024), lastUpdatedAt: Date.now() })) !== undefined) break;
          }
        }
      } finally {
        this.#progressing.delete(taskId);
      }
    })().catch(() => undefined);
  }
  /** Per task, the progress message to write next while a write is going on ({@link progress}). */
  readonly #progressing = new Map<string, { message: string }>();

  /** Stores a run's journal as a step ends (so the step's result is durable before the handler goes on). */
  async saveJournal(taskId: string, journal: readonly unknown[]): Promise<void> {
    const store = await this.store();
    for (let tries = 0; tries < 5; tries++) {
      const t = await store.get(taskId);
      if (t === undefined || t.status !== "working" || t.runner !== this.runner) return;
      if ((await store.put({ ...t, journal: [...journal], lastUpdatedAt: Date.now() })) !== undefined) return;
    }
  }

  /**
   * Starts `run` for a task this instance holds, in the background; its outcome is stored when it ends. Not when its
   * origin was stopped ({@link stopRuns}): the task then stays `working` until its lease runs out, as an aborted run's.
   */
  start(task: StoredTask, run: TaskRun): void {
    if (this.#running.has(task.taskId)) return;
    const origin = run[RUN_ORIGIN]?.();
    if (origin !== undefined && STOPPED_ORIGINS.has(origin)) return;
    const abort = new AbortController();
    const done = (async () => {
      let outcome: RunOutcome;
      try {
        outcome = await run(task, abort.signal);
      } catch (error) {
        outcome = { kind: "failed", error: { code: -32603, message: "Internal error" }, journal: task.journal };
        void error;
      }
      await this.#settle(task.taskId, outcome);
    })()
      .catch(() => undefined)
      .finally(() => {
        this.#running.delete(task.taskId);
        if (this.#running.size === 0 && this.#heartbeat) {
          clearInterval(this.#heartbeat);
          this.#heartbeat = undefined;
        }
      });
    this.#running.set(task.taskId, { abort, done, run });
    this.#heartbeat ??= setInterval(() => void this.#renew(), Math.max(10, Math.floor(this.leaseMs / 3)));
    this.#heartbeat.unref?.();
  }

  /** Resolves when no run of this process is going on. */
  async whenIdle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all([...this.#running.values()].map((r) => r.done));
  }

  /**
   * Shutdown of what `origin` started (an HTTP app, see HttpApp.close; the origin its servers' {@link TaskRun}s name) in
   * this process: waits up to `drainMs` (ms) for those runs to end, then aborts the rest (their signal is aborted; a run
   * that returns is not stored, so its task stays `working` until its lease expires, then is failed `task_runner_lost`
   * or re-run by an instance still serving, see {@link read}) and waits up to 1,000 ms more for them to return (and
   * write their audit records). Runs that another app started go on. Resolves with how many runs were aborted; never
   * rejects.
   */
  async stopRuns(origin: object, drainMs: number): Promise<number> {
    const mine = () => [...this.#running.values()].filter((r) => r.run[RUN_ORIGIN]?.() === origin);
    await settleWithin(Promise.all(mine().map((r) => r.done)), drainMs);
    // from now on no run of `origin` starts (a request still in flight may be about to start one)
    STOPPED_ORIGINS.add(origin);
    const left = mine();
    for (const r of left) r.abort.abort(new Error("agent shutting down"));
    await settleWithin(Promise.all(left.map((r) => r.done)), 1000);
    return left.length;
  }

  async #renew(): Promise<void> {
    const ids = [...this.#running.keys()];
    if (ids.length === 0) return;
    try {
      const store = await this.store();
      const gone = await store.renew(this.runner, ids, Date.now() + this.leaseMs);
      // cancelled (or taken over) elsewhere: stop the run here
      for (const id of gone) this.#running.get(id)?.abort.abort(new Error("task no longer running here"));
    } catch {
      // the database is away: the leases may lapse, and the tasks then be settled as lost; nothing else to do here
    }
  }

  async #settle(taskId: string, outcome: RunOutcome): Promise<void> {
    const store = await this.store();
    for (let tries = 0; tries < 5; tries++) {
      const t = await store.get(taskId);
      // cancelled meanwhile, or taken over by another instance: the outcome is not this run's to store
      if (t === undefined || t.status !== "working" || t.runner !== this.runner) return;
      if (outcome.kind === "cancelled") return;
      const next: StoredTask = { ...t, journal: [...outcome.journal], lastUpdatedAt: Date.now() };
      const patients = new Set([...(t.patients ?? []), ...(outcome.patients ?? [])]);
      if (patients.size > 0) next.patients = [...patients];
      delete next.runner;
      delete next.leaseUntil;
      delete next.statusMessage;
      if (outcome.kind === "completed") Object.assign(next, { status: "completed" satisfies TaskStatus, result: outcome.result });
      else if (outcome.kind === "failed") Object.assign(next, { status: "failed" satisfies TaskStatus, error: outcome.error, statusMessage: outcome.error.message });
      else Object.assign(next, { status: "input_required" satisfies TaskStatus, inputRequests: outcome.inputRequests, questions: outcome.questions, statusMessage: "Waiting for the client's answer" });
      if ((await store.put(next)) !== undefined) {
        this.#changed(taskId);
        return;
      }
    }
  }

  #sweep(store: TaskStore): void {
    const now = Date.now();
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + 60_000;
    store.sweep(now).catch(() => undefined);
  }
}

const RUNTIMES = new WeakMap<object, TaskRuntime>();
let defaultRuntime: TaskRuntime | undefined;
/**
 * The runtime of a task store in this process: one per store (per-request servers built from one configuration share
 * it, whether or not they share the options object); the embedded store's is the process's. `ttlMs`, `pollIntervalMs`
 * and `leaseMs` are those of the first options seen for the store.
 */
export function taskRuntimeFor(options: TaskOptions | undefined): TaskRuntime {
  const store = options?.store;
  if (store === undefined) return (defaultRuntime ??= new TaskRuntime(options));
  let r = RUNTIMES.get(store);
  if (r === undefined) RUNTIMES.set(store, (r = new TaskRuntime(options)));
  return r;
}
