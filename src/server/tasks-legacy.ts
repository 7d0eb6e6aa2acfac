/**
 * MCP 2025-11-25 tasks ("Tasks", basic/utilities/tasks) for `tools/call`, on the legacy era, over the same
 * {@link TaskRuntime} and task store as the 2026-07-28 extension (tasks.ts): a task made on one era is the same row.
 *
 * What differs from 2026-07-28 is the wire only: the capability `tasks` (`list`, `cancel`, `requests.tools.call`)
 * instead of the extension; a `tools/call` asks for a task with its `task` param (`{ ttl }`) and gets a
 * `CreateTaskResult` `{ task: Task }` (`ttl`, `pollInterval`); `tasks/get` and `tasks/cancel` answer the `Task`;
 * `tasks/result` blocks until the task ends and returns the tool's result or its JSON-RPC error, and while the task
 * waits for input it sends the question to the client on its own stream (`elicitation/create`,
 * `sampling/createMessage`, with `_meta["io.modelcontextprotocol/related-task"]`) and feeds the answer to the runtime
 * as `tasks/update` does on 2026-07-28; `tasks/list` pages the caller's own tasks.
 *
 * @internal
 */
import { z } from "zod";
import { CreateMessageResultSchema, ElicitResultSchema } from "@modelcontextprotocol/core";
import { ProtocolError } from "@modelcontextprotocol/server";
import type { JSONRPCRequest, ServerContext } from "@modelcontextprotocol/server";
import { INTERNAL_ERROR, INVALID_PARAMS, type Principal } from "../protocol/index.js";
import { isTerminal, type StoredTask, type TaskStatus } from "./task-store.js";
import { taskNotFound, taskOwner, type TaskRun, type TaskRuntime } from "./tasks.js";

/** `_meta` key naming the task a message belongs to (2025-11-25 "Related Task Metadata"). */
export const RELATED_TASK_META_KEY = "io.modelcontextprotocol/related-task";

/** JSON-RPC -32601: a `task` param on a tool without task support, or none on a tool that runs only as a task. */
const METHOD_NOT_FOUND = -32601;

/** The `tasks` capability HMCP advertises on the legacy era (2025-11-25 "Server Capabilities"). */
export function legacyTasksCapability(list: boolean): Record<string, unknown> {
  return { ...(list && { list: {} }), cancel: {}, requests: { tools: { call: {} } } };
}

/**
 * How a legacy `tools/call` of a registered tool is served, by its `execution.taskSupport` and the `task` param
 * (2025-11-25 "Tool-Level Negotiation"): `"task"` (create one), `"call"` (run it as a plain call).
 * @throws ProtocolError -32601 (`task_not_supported`) for a `task` param on a tool that is not `"optional"` or
 *   `"required"`; -32601 (`task_required`) for none on a `"required"` one
 */
export function legacyCallMode(taskSupport: string | undefined, params: Record<string, unknown>): "task" | "call" {
  const supports = taskSupport === "optional" || taskSupport === "required";
  const augmented = params["task"] !== undefined;
  if (augmented && !supports) throw new ProtocolError(METHOD_NOT_FOUND, `Tool ${String(params["name"])} does not support task-augmented calls`, { reason: "task_not_supported" });
  if (!augmented && taskSupport === "required") throw new ProtocolError(METHOD_NOT_FOUND, "Task augmentation required for tools/call requests", { reason: "task_required" });
  return augmented ? "task" : "call";
}

/**
 * A task's lifetime from the `task` param (`{ ttl }`, ms): the requested one, capped at the server's (2025-11-25 "TTL
 * and Resource Management": receivers may override it); the server's when none is asked.
 * @throws ProtocolError -32602 (`invalid_task_params`) when `task` is not an object or `ttl` not a number ≥ 0
 */
export function legacyTaskTtl(param: unknown, configured: number | null): number | null {
  if (typeof param !== "object" || param === null || Array.isArray(param)) throw invalidTask();
  const ttl = (param as { ttl?: unknown }).ttl;
  if (ttl === undefined || ttl === null) return configured;
  if (typeof ttl !== "number" || !Number.isFinite(ttl) || ttl < 0) throw invalidTask();
  const ms = Math.floor(ttl);
  return configured === null ? ms : Math.min(ms, configured);
}

function invalidTask(): ProtocolError {
  return new ProtocolError(INVALID_PARAMS, "Invalid params: 'task' must be an object whose 'ttl' (optional) is a number of milliseconds >= 0", { reason: "invalid_task_params" });
}

/**
 * The 2025-11-25 `Task` of a stored task. A tool result with `isError` is `failed` there ("For tool calls
 * specifically, this includes cases where the tool call result has isError set to true"); `tasks/result` still
 * returns that result.
 */
export function legacyTask(t: StoredTask): Record<string, unknown> {
  const toolError = t.status === "completed" && t.result?.["isError"] === true;
  const status: TaskStatus = toolError ? "failed" : t.status;
  const statusMessage = toolError ? "Tool execution failed" : t.statusMessage;
  return {
    taskId: t.taskId,
    status,
    ...(statusMessage !== undefined && { statusMessage }),
    createdAt: new Date(t.createdAt).toISOString(),
    lastUpdatedAt: new Date(t.lastUpdatedAt).toISOString(),
    ttl: t.ttlMs,
    pollInterval: t.pollIntervalMs,
  };
}

/** The `CreateTaskResult` of a new task on 2025-11-25. */
export function legacyCreateTaskResult(t: StoredTask): Record<string, unknown> {
  return { task: legacyTask(t) };
}

/** What the legacy task methods need from the server that serves them. */
export interface LegacyTaskHost {
  agent: string;
  runtime: () => TaskRuntime;
  run: TaskRun;
  /** Whether callers can be told apart (auth on): `tasks/list` is registered only then. */
  listable: boolean;
  /** Runs a question's answer through the input guardrails of the request it came on (as `tasks/update`'s are). */
  guardAnswer: (extra: ServerContext, key: string, answer: unknown) => Promise<unknown>;
}

/** The pipeline's context of a task request (the fields the task methods set for its audit record). */
type TaskCtx = {
  principal: Principal | undefined;
  patientsTouched: Set<string>;
  interactions: Array<{ kind: string; outcome: string }>;
  task?: { id: string; status?: TaskStatus };
  auditAs?: { outcome: "denied"; reason: string };
};

const TASK_ID_PARAMS = z.looseObject({ taskId: z.string().min(1).max(256) });
const LIST_PARAMS = z.looseObject({ cursor: z.string().max(512).optional() });

type SetRequestHandler = (method: string, schemas: { params: z.ZodType }, handler: (params: never, extra: ServerContext) => Promise<unknown>) => void;

/**
 * Registers `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` (2025-11-25) on a legacy-era server; each
 * passes the pipeline (which wraps every registered handler): bearer, scopes, one audit record naming the task.
 * @param ctxOf - the pipeline's context of a request (`hmcpContext`)
 */
export function registerLegacyTaskMethods(setRequestHandler: SetRequestHandler, host: LegacyTaskHost, ctxOf: (extra: object) => unknown): void {
  const lookup = async (taskId: string, extra: ServerContext, rerun: boolean) => {
    const ctx = ctxOf(extra) as TaskCtx;
    const found = await host.runtime().read(taskId, taskOwner(host.agent, ctx.principal), rerun ? host.run : undefined);
    if (found.denied) ctx.auditAs = { outcome: "denied", reason: "task_owner_mismatch" };
    if (found.task === undefined) throw taskNotFound(found.expired);
    noteTask(ctx, found.task);
    return { task: found.task, ctx };
  };

  setRequestHandler("tasks/get", { params: TASK_ID_PARAMS }, async (params: { taskId: string }, extra) => legacyTask((await lookup(params.taskId, extra, true)).task));

  setRequestHandler("tasks/cancel", { params: TASK_ID_PARAMS }, async (params: { taskId: string }, extra) => {
    const { task, ctx } = await lookup(params.taskId, extra, false);
    // 2025-11-25 "Task Cancellation": a task already terminal is refused with -32602
    if (isTerminal(task.status)) throw cannotCancel(task);
    const now = await host.runtime().cancel(task);
    if (now === undefined) throw taskNotFound();
    noteTask(ctx, now);
    // it ended on its own meanwhile
    if (now.status !== "cancelled") throw cannotCancel(now);
    return legacyTask(now);
  });

  if (host.listable) {
    setRequestHandler("tasks/list", { params: LIST_PARAMS }, async (params: { cursor?: string }, extra) => {
      const ctx = ctxOf(extra) as TaskCtx;
      const page = await host.runtime().list(taskOwner(host.agent, ctx.principal), params.cursor);
      return { tasks: page.tasks.map(legacyTask), ...(page.nextCursor !== undefined && { nextCursor: page.nextCursor }) };
    });
  }

  setRequestHandler("tasks/result", { params: TASK_ID_PARAMS }, async (params: { taskId: string }, extra) => {
    const signal = extra.mcpReq.signal;
    for (;;) {
      const { task, ctx } = await lookup(params.taskId, extra, true);
      if (isTerminal(task.status)) return terminalResult(task);
      // the questions a run asked at once are sent one at a time, each on this request's stream; only a question whose
      // input request is stored is asked (a malformed row waits instead of spinning this loop)
      const pending = task.status === "input_required" ? task.questions?.find((q) => q.answer === undefined && (task.inputRequests ?? {})[q.key] !== undefined) : undefined;
      if (pending !== undefined && host.runtime().claimQuestion(task.taskId, pending.key)) {
        try {
          await askClient(task, pending, ctx, extra);
        } finally {
          host.runtime().releaseQuestion(task.taskId, pending.key);
        }
        continue;
      }
      // a run of this process ends it at once; one on another instance is seen at the next read
      await host.runtime().whenChanged(task.taskId, Math.min(task.pollIntervalMs, 1_000), signal);
      if (signal.aborted) throw new ProtocolError(INTERNAL_ERROR, "Request cancelled", { reason: "aborted" });
    }
  });

  /** Sends the task's question to the client on this request's stream, and feeds the answer to the runtime. */
  async function askClient(task: StoredTask, q: NonNullable<StoredTask["questions"]>[number], ctx: TaskCtx, extra: ServerContext): Promise<void> {
    const request = (task.inputRequests ?? {})[q.key] as { method: string; params?: Record<string, unknown> };
    const params = { ...(request.params ?? {}), _meta: { ...((request.params?.["_meta"] as Record<string, unknown> | undefined) ?? {}), [RELATED_TASK_META_KEY]: { taskId: task.taskId } } };
    // the question waits for a human (an approval): as long as the task lives, not the SDK's 60 s default
    const timeout = task.ttlMs === null ? 86_400_000 : Math.max(1_000, task.createdAt + task.ttlMs - Date.now());
    let answer: unknown;
    try {
      answer = await extra.mcpReq.send({ method: request.method, params } as never, (q.kind === "elicitation" ? ElicitResultSchema : CreateMessageResultSchema) as never, { timeout });
    } catch (error) {
      // the task keeps waiting for its answer: a later tasks/result asks again
      ctx.interactions.push({ kind: q.kind, outcome: "failed" });
      throw error;
    }
    const checked = await host.guardAnswer(extra, q.key, answer);
    const took = await host.runtime().answer(task, { [q.key]: checked }, host.run);
    ctx.interactions.push(...took);
  }
}

function cannotCancel(task: StoredTask): ProtocolError {
  return new ProtocolError(INVALID_PARAMS, `Cannot cancel task: already in terminal status '${String(legacyTask(task)["status"])}'`, { reason: "task_terminal" });
}

/** Notes the task on the request's context: its audit record names it, and the patients it is about. */
function noteTask(ctx: TaskCtx, task: StoredTask): void {
  ctx.task = { id: task.taskId, status: task.status };
  // a read of its result is a disclosure about them
  for (const patient of task.patients ?? []) ctx.patientsTouched.add(patient);
}

/**
 * `tasks/result` of a terminal task: exactly what the `tools/call` would have returned (its result, with the related
 * task in `_meta`, or its JSON-RPC error). A cancelled task has no result: -32603 (`task_cancelled`).
 */
function terminalResult(task: StoredTask): Record<string, unknown> {
  if (task.status === "completed") {
    const result = task.result ?? { content: [] };
    return { ...result, _meta: { ...((result["_meta"] as Record<string, unknown> | undefined) ?? {}), [RELATED_TASK_META_KEY]: { taskId: task.taskId } } };
  }
  if (task.status === "cancelled") throw new ProtocolError(INTERNAL_ERROR, "Task cancelled", { reason: "task_cancelled" });
  const e = task.error ?? { code: INTERNAL_ERROR, message: "Internal error" };
  throw new ProtocolError(e.code, e.message, e.data);
}

/** The request `tools/call` a legacy task was created from, without its `task` param (its runs are plain calls). */
export function withoutTaskParam(request: JSONRPCRequest): JSONRPCRequest {
  const { task: _t, ...params } = (request.params ?? {}) as Record<string, unknown>;
  return { ...request, params: params as JSONRPCRequest["params"] };
}
