/**
 * The HMCP request pipeline (DESIGN.md §2): the one place every request passes.
 *
 *   authorize (scopes, patient context) → guardrails input → handler → guardrails output → result
 *   └── every outcome (allowed, denied, blocked, failed) → exactly one audit record
 *
 * Everything here is framework-free: the pipeline sees JSON-RPC requests and the SDK's handler `extra`.
 */
import { createHash, randomUUID } from "node:crypto";
import { contentDigest } from "../audit/canonical-json.js";
import { defaultOperationalLogger, type OperationalLogger } from "./logger.js";
import { CreateMessageResultSchema } from "@modelcontextprotocol/core";
import { CLIENT_CAPABILITIES_META_KEY, fromJsonSchema, ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode } from "@modelcontextprotocol/server";
import type { JSONRPCRequest, ServerContext } from "@modelcontextprotocol/server";
import { HMCPError, HMCPErrorCode, INTERNAL_ERROR, INVALID_PARAMS, scopeMethodOf, toWireError, withRedactionsMeta, type Principal, type TransportKind } from "../protocol/index.js";
import { FHIR_ID } from "../protocol/fhir-id.js";
import { checkAccess, satisfiesAny, type ScopeRequest } from "../auth/scopes.js";
import { requiredScopesForMethod } from "../auth/method-scopes.js";
import { principalKeyOf } from "../auth/principal.js";
import type { GuardrailDecisionSummary, GuardrailRunner, GuardrailStage } from "../guardrails/types.js";
import { defaultGuardrails } from "../guardrails/policy.js";
import { guardrailBlockData } from "../guardrails/block-data.js";
import { AUDIT_RECORD_VERSION, markInternalRecord, type AuditOutcome, type AuditRecordInput, type AuditSink } from "../audit/record.js";
import { AuditSinkError } from "../audit/chain-sink.js";
import { admit, appendAdmitted, appendUnreserved, markSinkFailed } from "../audit/admission.js";
import type { HMCPServerOptions, PipelineHooks } from "./options.js";
import { attachContext, hmcpContextOrUndefined, type BackRequestOptions, type RequestContext } from "./context.js";
import { INPUT_ROUND_METHODS, InputRounds, isInputRoundError, roundBinding } from "./input-rounds.js";
import { claimsHmcpState, RequestStateSealer } from "./request-state.js";
import { createTaskResult, declaresTasks, tasksRequired, type TaskRun, type TaskRuntime } from "./tasks.js";
import { legacyCallMode, legacyCreateTaskResult, legacyTaskTtl, withoutTaskParam } from "./tasks-legacy.js";
import type { StoredTask, TaskStatus } from "./task-store.js";
/** The SDK's handler `extra`. */
export type HandlerExtra = ServerContext;
/** A registered SDK request handler. */
export type InnerHandler = (request: JSONRPCRequest, extra: HandlerExtra) => Promise<unknown>;

/** `_meta` key by which a client declares the patient a request is about (checked against the launch context). */
export const PATIENT_META_KEY = "hmcp/patient";

/** Methods whose params carry content checked by the input stage. */
const INPUT_CONTENT_METHODS = new Set(["sampling/createMessage", "tools/call"]);
/** Methods whose results carry content checked by the output stage. */
const OUTPUT_CONTENT_METHODS = new Set(["sampling/createMessage", "tools/call", "resources/read", "prompts/get", "resources/list", "resources/templates/list", "completion/complete"]);
/** Methods that run outside the pipeline: connection lifecycle only, no data. */
const LIFECYCLE_METHODS = new Set(["initialize", "ping", "server/discover"]);
/** The most request ids {@link RequestPipeline.watchRequestIds} keeps (requests in progress on one stdio connection). */
const MAX_WATCHED_IDS = 10_000;

/** A caller-chosen identifier (JSON-RPC id, method name) kept as sent in the audit trail; anything else is digested. */
const AUDIT_IDENTIFIER = /^[\w.:/-]{1,128}$/;

/**
 * A caller-chosen string as the audit trail keeps it: as sent when it looks like an identifier (letters, digits and
 * `_.:/-`, at most 128), otherwise `sha256:` and the hex SHA-256 of its UTF-16 code units. Records carry identifiers,
 * never content: a request id, method name or reason (a handler's or a custom guardrail's) holding free text, a
 * megabyte or a lone surrogate stays out.
 */
function auditIdentifier(value: string): string {
  return AUDIT_IDENTIFIER.test(value) ? value : `sha256:${createHash("sha256").update(value, "utf16le").digest("hex")}`;
}

/** A JSON-RPC id as the audit trail and the operational log keep it: numbers as sent, strings by {@link auditIdentifier}. */
function auditRequestId(id: string | number): string | number {
  return typeof id === "string" ? auditIdentifier(id) : id;
}

/** The content digest of `value`, or a refusal when it cannot be canonicalised (lone surrogates, extreme nesting). */
function digestOrRefuse(value: unknown, what: "params" | "result"): string | undefined {
  try {
    return contentDigest(value);
  } catch {
    throw what === "params"
      ? new ProtocolError(INVALID_PARAMS, "Invalid params: not representable as canonical JSON (lone surrogate or nesting too deep)", { reason: "unserialisable_params" })
      : new ProtocolError(INTERNAL_ERROR, "Result withheld: not representable as canonical JSON", { reason: "unserialisable_result" });
  }
}

/** The InsufficientScope message's note when the token's patient/ scopes were set aside for want of a patient claim. */
function ignoredNote(p: Principal): string {
  return p.ignoredScopes ? " (the token's patient/ scopes grant nothing without a patient claim: SMART patient launch context)" : "";
}

/** Refuses a patient id that is not a FHIR id (it would be neither checkable nor recordable). */
function checkPatientId(id: unknown): string {
  if (typeof id !== "string" || !FHIR_ID.test(id)) {
    throw new ProtocolError(INVALID_PARAMS, "Invalid params: a patient must be a FHIR Patient id ([A-Za-z0-9-.]{1,64})", { reason: "invalid_patient_id" });
  }
  return id;
}

/** What the pipeline needs from the server it serves. */
export interface PipelineHost {
  readonly agentName: string;
  readonly transport: () => TransportKind;
  /** Whether the transport carries no remote caller (stdio, the SDK's in-memory pair): only then `auth.localPrincipal` is the caller. */
  readonly localCaller: () => boolean;
  readonly clientCapabilities: () => { sampling?: object; elicitation?: object } | undefined;
  /** Extra scope requirement for a method (e.g. the sampling handler's own), replacing the default. */
  readonly methodScopes: (method: string) => readonly string[] | undefined;
  /** True when the server exposes its sampling handler as the sampling tool (SAMPLING_TOOL_NAME). */
  readonly samplingTool: () => boolean;
  /**
   * MCP tasks on this server: the era that serves them (`modern`: the extension on 2026-07-28; `legacy`: 2025-11-25
   * tasks, where the server advertised them), and a tool's declared task support (`execution.taskSupport`) and
   * idempotence (`annotations.idempotentHint`): undefined when tasks are off.
   */
  readonly tasks?: () => { era: "modern" | "legacy"; runtime: TaskRuntime; support: (tool: string) => { taskSupport?: string; idempotent: boolean; validate?: (args: unknown) => Promise<unknown> } | undefined } | undefined;
  /** Runs a stored task once on this server (its tool through this pipeline). */
  readonly runTask?: TaskRun;
}

/** A run of a stored task through the pipeline (see tasks.ts). */
export interface TaskRunOptions {
  task: StoredTask;
  runtime: TaskRuntime;
}

/** The record digests of a request that got no reply: the request's only. */
function requestDigestOnly(digests: Record<string, string>): Record<string, string> {
  return digests["request"] === undefined ? {} : { request: digests["request"] };
}

/** @internal */
export class RequestPipeline {
  readonly #auth: false | { localPrincipal?: Principal; requiredScopes: Readonly<Record<string, readonly string[]>> | undefined };
  readonly #guardrails: GuardrailRunner | undefined;
  readonly #audit: AuditSink | undefined;
  readonly #hooks: PipelineHooks;
  readonly #host: PipelineHost;
  readonly #logger: OperationalLogger;
  /** Seals the `requestState` of MCP 2026-07-28 input rounds (created on the first modern request that needs it). */
  #sealer: RequestStateSealer | undefined;
  readonly #requestStateOptions: HMCPServerOptions["requestState"];
  readonly #replyAfterDurable: boolean;
  /** The contexts of the requests inside {@link handle} (lifecycle methods excepted), and who waits for none to be. */
  readonly #running = new Set<Ctx>();
  #handled = 0;
  /**
   * The ids of requests that entered the pipeline and are not answered yet, kept only on a connection whose transport
   * records what the SDK refuses before any handler (stdio: {@link watchRequestIds}); undefined elsewhere.
   */
  #entered: Set<string | number> | undefined;
  #idleWaiters: Array<() => void> = [];

  constructor(options: HMCPServerOptions, host: PipelineHost) {
    this.#auth =
      options.auth === false
        ? false
        : {
            localPrincipal: options.auth?.localPrincipal,
            requiredScopes: options.auth?.requiredScopes,
          };
    // Secure by default: no `guardrails` option means the shipped guardrails/default.yaml policy.
    this.#guardrails = options.guardrails === false ? undefined : (options.guardrails ?? defaultGuardrails());
    this.#audit = options.audit || undefined;
    this.#hooks = options.hooks ?? {};
    this.#host = host;
    this.#logger = options.logger ?? defaultOperationalLogger();
    this.#requestStateOptions = options.requestState;
    this.#replyAfterDurable = options.replyAfterAuditDurable === true;
    // refuse bad keys at construction, not on the first question asked
    if (options.requestState !== undefined) this.#sealer = sealerFor(options.requestState);
  }

  get authEnabled(): boolean {
    return this.#auth !== false;
  }
  get guardrails(): GuardrailRunner | undefined {
    return this.#guardrails;
  }
  get auditing(): boolean {
    return this.#audit !== undefined || this.#hooks.audit !== undefined;
  }
  /** Scopes required for `method` (any-of). */
  requiredScopes(method: string): readonly string[] {
    if (this.#auth === false) return [];
    return this.#host.methodScopes(method) ?? requiredScopesForMethod(method, this.#auth.requiredScopes);
  }

  /**
   * Runs an answer a client gave to a task's question (MCP 2025-11-25 `tasks/result`, which asks it on its own stream)
   * through the input stage, within the request's context (its decisions go in that request's audit record), as
   * 2026-07-28 `inputResponses` are checked: wrapped as the arguments of a tool call named `inputResponses`.
   * @returns the answer as the stage passed it (redacted, maybe)
   * @throws HMCPError GuardrailBlocked when the stage blocks it
   */
  async guardAnswer(extra: HandlerExtra, key: string, answer: unknown): Promise<unknown> {
    const ctx = hmcpContextOrUndefined(extra);
    if (!this.#guardrails || !(ctx instanceof Ctx)) return answer;
    const wrapped = { name: "inputResponses", arguments: { [key]: answer } };
    const checked = (await this.#guard(ctx, "input", wrapped, "tools/call")) as typeof wrapped;
    return checked.arguments[key];
  }

  /**
   * Records a session start or end (stdio; the HTTP app records its own). `transport`: what the record names, when the
   * server is not connected yet (stdio connects on the client's first message); default the connected transport's kind.
   */
  recordSession(type: "session.start" | "session.end", reason?: string, transport?: TransportKind): void {
    if (!this.#audit && !this.#hooks.audit) return;
    const p = this.#auth === false ? undefined : this.#auth.localPrincipal;
    const record: AuditRecordInput = {
      v: AUDIT_RECORD_VERSION,
      id: randomUUID(),
      time: new Date().toISOString(),
      type,
      actor: compact({ sub: p?.sub, clientId: p?.clientId, fhirUser: p?.fhirUser, tenant: p?.tenant }),
      source: {},
      transport: transport ?? this.#host.transport(),
      agent: this.#host.agentName,
      patients: [],
      scopes: p?.scopes ?? [],
      outcome: "allowed",
      ...(reason !== undefined && { reason }),
      guardrails: [],
      latencyMs: 0,
      digests: {},
    };
    this.#emit(record);
  }

  /** Requests that entered the pipeline so far (initialize and ping excepted): each has, or will have, its audit record. */
  get handled(): number {
    return this.#handled;
  }

  /**
   * Starts keeping the id of every request that enters the pipeline (lifecycle methods and task runs excepted: the
   * pipeline writes no record for those), for a transport that answers requests of its own (stdio, see
   * stdio-refusals.ts): it deletes an id when the answer is sent, and records an error answer whose id is not here,
   * which the SDK sent before any handler ran. At most {@link MAX_WATCHED_IDS} ids are kept (a request cancelled
   * by the client is never answered): the oldest go first. @internal
   */
  watchRequestIds(): Set<string | number> {
    return (this.#entered ??= new Set());
  }

  /**
   * Records a request the SDK refused before any handler ran (so before the pipeline saw it): `outcome: "failed"`, the
   * JSON-RPC error `code` as `status`, `reason` a stable code; the method and id as the pipeline's records keep them,
   * never the request's content. Unreserved (src/audit/admission.ts), like the HTTP layer's refusals. @internal
   */
  recordRefused(r: { method: string | undefined; requestId: string | number | null; code: number; reason: string; transport: TransportKind }): void {
    if (!this.auditing) return;
    const p = this.#auth === false ? undefined : this.#auth.localPrincipal;
    const record: AuditRecordInput = {
      v: AUDIT_RECORD_VERSION,
      id: randomUUID(),
      time: new Date().toISOString(),
      type: "request",
      actor: actorOf(p),
      source: {},
      // the connection's, given: a refusal of the opening message comes before the server is connected
      transport: r.transport,
      agent: this.#host.agentName,
      ...(r.method !== undefined && { method: auditIdentifier(r.method) }),
      ...(r.requestId !== null && { requestId: auditRequestId(r.requestId) }),
      patients: [],
      scopes: p?.scopes ? [...p.scopes] : [],
      outcome: "failed",
      reason: auditIdentifier(r.reason),
      status: r.code,
      guardrails: [],
      latencyMs: 0,
      digests: {},
    };
    this.#emit(record);
  }

  /** Requests being handled now (their audit records not yet written). */
  get inFlight(): number {
    return this.#running.size;
  }

  /** Resolves when no request is being handled (at once if none is): every record of a finished request is appended. */
  whenIdle(): Promise<void> {
    if (this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Writes the audit record of every request still being handled, as `outcome: "failed"` with `reason`, now; when such
   * a request returns later, its record is not written again (nor is it answered: this is for shutdown, after its
   * session is closed). So a request whose handler ignores its aborted signal past the shutdown drain still leaves
   * its record in the trail before the audit sink is closed.
   * @param reason - the record's reason code, e.g. `"abandoned_at_shutdown"`
   * @returns how many records were written (0 without an audit sink or hook)
   */
  recordAbandoned(reason: string): number {
    if (!this.auditing) return 0;
    let n = 0;
    for (const ctx of this.#running) {
      if (ctx.recorded) continue;
      // a copy: the request, still running, may yet add its response digest to its own
      this.#record(ctx, "failed", undefined, reason, requestDigestOnly(ctx.digests));
      n++;
    }
    return n;
  }

  /** Runs one request through the pipeline around `inner`. */
  async handle(request: JSONRPCRequest, extra: HandlerExtra, inner: InnerHandler, options: { unknownMethod?: boolean; taskRun?: TaskRunOptions } = {}): Promise<unknown> {
    if (LIFECYCLE_METHODS.has(request.method)) return inner(request, extra);
    this.#handled++;
    const entered = this.#entered;
    if (entered !== undefined && options.taskRun === undefined) {
      entered.delete(request.id);
      entered.add(request.id);
      if (entered.size > MAX_WATCHED_IDS) entered.delete(entered.values().next().value as string | number);
    }
    const ctx = this.#context(request, extra);
    this.#running.add(ctx);
    try {
      return await this.#handle(ctx, request, extra, inner, options);
    } finally {
      // after the request's record is written (whenIdle promises that)
      this.#running.delete(ctx);
      if (this.#running.size === 0) for (const w of this.#idleWaiters.splice(0)) w();
    }
  }
  async #handle(ctx: Ctx, request: JSONRPCRequest, extra: HandlerExtra, inner: InnerHandler, options: { unknownMethod?: boolean; taskRun?: TaskRunOptions }): Promise<unknown> {
    const taskRun = options.taskRun;
    if (taskRun) ctx.task = { id: taskRun.task.taskId, status: "working" };
    const auditing = this.auditing;
    // the record's content digests, computed where the content is final: a request or result that cannot be digested
    // is refused or withheld, so nothing is served that the audit trail cannot describe
    const digests = ctx.digests;
    let req = request;
    let result: unknown;
    try {
      // Fail closed: no request is served while the audit sink cannot take its record (checked before the handler
      // runs), nor after the sink has refused one, by any server sharing the sink (over HTTP, one per session).
      if (!this.#admit()) {
        throw new HMCPError(HMCPErrorCode.AuditUnavailable, "Audit trail unavailable", { reason: "audit_unavailable" });
      }
      ctx.admitted = true;
      // MCP 2026-07-28: a retried request's answers to the server's input requests (`inputResponses`, a task's answers on
      // tasks/update too), which the SDK lifts out of params before any handler: the request digest covers them as
      // sent, and they pass the input stage
      const answers = extra.mcpReq.inputResponses;
      const answered = answers !== undefined && Object.keys(answers).length > 0;
      if (auditing) {
        const d = digestOrRefuse(answered ? { ...(request.params ?? {}), inputResponses: answers } : request.params, "params");
        if (d !== undefined) digests["request"] = d;
      }
      // the method whose scopes apply: sampling/createMessage for the sampling tool (when this server exposes it)
      const scopeMethod = this.#host.samplingTool() ? scopeMethodOf(request.method, request.params) : request.method;
      this.#authorize(ctx, request, scopeMethod, options.unknownMethod === true);
      if (this.#hooks.authorize) await this.#hooks.authorize(ctx);
      // a task's run takes the arguments the input stage passed when the task was created
      if (this.#guardrails && INPUT_CONTENT_METHODS.has(request.method) && request.params && !taskRun) {
        const args = (request.params as { arguments?: unknown }).arguments;
        if (scopeMethod !== request.method && typeof args === "object" && args !== null) {
          // the sampling tool's arguments are sampling params: checked as a sampling request (messages, maxTokens,
          // model hints, content types), not as free JSON, so the limits and per-kind settings hold as for the method
          const checked = await this.#guard(ctx, "input", args, "sampling/createMessage");
          if (checked !== args) req = { ...request, params: { ...request.params, arguments: checked } as JSONRPCRequest["params"] };
        } else {
          const params = await this.#guard(ctx, "input", request.params);
          if (params !== request.params) req = { ...request, params: params as JSONRPCRequest["params"] };
        }
      }
      // MCP 2026-07-28 multi round-trip: the handler's questions become input-required rounds (input-rounds.ts); a
      // retry's sealed requestState is opened (bound to this caller and request, unexpired, unused) before anything runs
      if (taskRun) {
        // a task's questions are answered through tasks/update and kept, with its steps' results, in the task store
        const { task, runtime } = taskRun;
        ctx.rounds = InputRounds.forTask(task.journal, task.capabilities, (entries) => runtime.saveJournal(task.taskId, entries));
      } else if (extra.mcpReq.envelope !== undefined && INPUT_ROUND_METHODS.has(request.method)) {
        this.#sealer ??= sealerFor(this.#requestStateOptions);
        ctx.rounds = new InputRounds(
          this.#sealer,
          () => roundBinding(this.#host.agentName, request, ctx.principal, PATIENT_META_KEY),
          extra.mcpReq.envelope as Record<string, unknown>,
          () => (ctx.principal === undefined ? undefined : principalKeyOf(ctx.principal)),
        );
        // a state the handler minted itself (the SDK's inputRequired({ requestState })) is the handler's to check
        const state = extra.mcpReq.requestState();
        if (typeof state === "string" && claimsHmcpState(state)) await ctx.rounds.open(state);
        else if (state !== undefined && typeof state !== "string") throw new ProtocolError(INVALID_PARAMS, "Invalid, expired or already used requestState", { reason: "request_state_invalid" });
      }
      let responses = answers;
      if (this.#guardrails && answered) {
        // checked as a tool call's arguments: text the caller sends the agent (the stage's locations for tools/call)
        const wrapped = { name: "inputResponses", arguments: answers };
        const checked = (await this.#guard(ctx, "input", wrapped, "tools/call")) as typeof wrapped;
        if (checked !== wrapped) (extra.mcpReq as { inputResponses?: unknown }).inputResponses = responses = checked.arguments;
      }
      const took = ctx.rounds?.takeAnswer(responses);
      // single use: claimed only now, so a retry refused above (a guardrail block, a malformed answer) can be corrected
      await ctx.rounds?.claim();
      if (took) ctx.interactions.push(took);
      attachContext(extra, ctx);
      // MCP tasks: a tool declaring task support runs as a task when the request asks for one: on 2026-07-28 by
      // declaring the extension io.modelcontextprotocol/tasks (a tool that runs only as a task is refused to a client that
      // did not, -32021); on 2025-11-25 by the `task` param, where tasks are advertised (tasks-legacy.ts)
      const tasks = !taskRun && request.method === "tools/call" ? this.#host.tasks?.() : undefined;
      const support = tasks?.support(String((request.params as { name?: unknown } | undefined)?.name));
      let create: { capabilities: unknown; ttlMs?: number | null; result: (t: StoredTask) => Record<string, unknown> } | undefined;
      if (tasks?.era === "modern" && extra.mcpReq.envelope !== undefined && support && (support.taskSupport === "optional" || support.taskSupport === "required")) {
        if (declaresTasks(extra.mcpReq.envelope as Record<string, unknown>)) create = { capabilities: (extra.mcpReq.envelope as Record<string, unknown>)[CLIENT_CAPABILITIES_META_KEY], result: createTaskResult };
        else if (support.taskSupport === "required") throw tasksRequired();
      } else if (tasks?.era === "legacy" && extra.mcpReq.envelope === undefined && support) {
        const params = (req.params ?? {}) as Record<string, unknown>;
        if (legacyCallMode(support.taskSupport, params) === "task") {
          create = { capabilities: this.#host.clientCapabilities() ?? {}, ttlMs: legacyTaskTtl(params["task"], tasks.runtime.ttlMs), result: legacyCreateTaskResult };
          req = withoutTaskParam(req);
        }
      }
      if (tasks && support && create) {
        // the arguments are checked before the task exists: a call that cannot run is refused, not made a failed task
        await support.validate?.((req.params as { arguments?: unknown }).arguments);
        const task = await tasks.runtime.create({ agent: this.#host.agentName, principal: ctx.principal, request: req, capabilities: create.capabilities, idempotent: support.idempotent, patients: [...ctx.patientsTouched], ...(create.ttlMs !== undefined && { ttlMs: create.ttlMs }) });
        ctx.task = { id: task.taskId, status: "working" };
        result = create.result(task);
        if (auditing) {
          const d = digestOrRefuse(result, "result");
          if (d !== undefined) digests["response"] = d;
        }
        this.#record(ctx, "allowed", undefined, "task_created");
        await this.#durable();
        // the run is the task's from now on: its own pipeline pass, its own audit record
        tasks.runtime.start(task, this.#host.runTask!);
        return result;
      }
      try {
        result = await inner(req, extra);
      } catch (error) {
        // a question pending ends the run with its input request, whatever the handler did with the signal; an error
        // of the rounds themselves (a diverged replay) still wins
        if (!ctx.rounds?.pending || isInputRoundError(error)) throw error;
      }
      if (ctx.toolError !== undefined && isInputRoundError(ctx.toolError)) throw ctx.toolError;
      ctx.rounds?.refuseMixedRounds(result);
      if (ctx.rounds?.pending) {
        result = await ctx.rounds.inputRequiredResult();
        if (ctx.task) ctx.task.status = "input_required";
        const asked = (result as { inputRequests: Record<string, { method: string }> }).inputRequests;
        for (const q of Object.values(asked)) ctx.interactions.push({ kind: q.method === "elicitation/create" ? "elicitation" : "sampling", outcome: "input_required" });
      }
      // The SDK turns a tool callback's exception into an `isError` result; an HMCP refusal raised inside a tool
      // (scope, patient context) must still leave as its JSON-RPC error (an input round's own error left above).
      if (ctx.toolError instanceof HMCPError) throw ctx.toolError;
      // the sampling tool answers as sampling/createMessage does on the legacy era: the handler's exception leaves as a
      // JSON-RPC error (internal error -32603, its message kept off the wire; a protocol error as itself), not as an
      // `isError` result, which a caller cannot tell from a server without HMCP sampling
      if (scopeMethod !== request.method && ctx.toolError !== undefined) throw ctx.toolError;
      // an input request (the handler's question) goes out as the legacy era sends it, unguarded like ctx.elicit's params
      if (this.#guardrails && OUTPUT_CONTENT_METHODS.has(request.method) && result && typeof result === "object" && !ctx.rounds?.pending) {
        result = await this.#guard(ctx, "output", result);
      }
      if (taskRun && ctx.task?.status === "working") ctx.task.status = "completed";
      if (auditing) {
        const d = digestOrRefuse(result, "result");
        if (d !== undefined) digests["response"] = d;
      }
    } catch (error) {
      const wire = mapError(error);
      if (wire.code === INTERNAL_ERROR && error !== wire) {
        // Unexpected: the operator needs to know; the entry is redacted and carries no request content.
        this.#logger.error("request failed", {
          agent: this.#host.agentName,
          method: auditIdentifier(request.method),
          requestId: auditRequestId(request.id),
          sessionId: ctx.sessionId,
          error,
        });
      }
      if (ctx.task && taskRun) ctx.task.status = ctx.signal.aborted ? "cancelled" : "failed";
      if (ctx.signal.aborted) {
        this.#record(ctx, "failed", undefined, "aborted", requestDigestOnly(digests));
        throw wire;
      }
      if (auditing) {
        // an error reply is digested as sent; one that cannot be (a handler's own error data) is recorded without it
        try {
          const d = contentDigest({ code: wire.code, message: wire.message, data: wire.data });
          if (d !== undefined) digests["response"] = d;
        } catch {
          delete digests["response"];
        }
      }
      this.#record(ctx, ctx.auditAs?.outcome ?? outcomeOf(wire), wire.code, ctx.auditAs?.reason ?? reasonOf(wire));
      await this.#durable();
      throw wire;
    }
    // The SDK sends no reply, result or error, to a request whose signal was aborted (cancelled by the client, its
    // session closed): its record says so, with no response digest. A task's run aborted: the task was cancelled.
    if (taskRun && ctx.signal.aborted && ctx.task) ctx.task.status = "cancelled";
    if (ctx.signal.aborted) this.#record(ctx, "failed", undefined, "aborted", requestDigestOnly(digests));
    else if (ctx.toolError !== undefined) this.#record(ctx, "failed", undefined, "tool_error");
    else this.#record(ctx, "allowed", undefined, undefined);
    await this.#durable();
    return result;
  }

  #context(request: JSONRPCRequest, extra: HandlerExtra): Ctx {
    const fromHttp = principalFromAuthInfo(extra.http?.authInfo);
    // localPrincipal is the caller only on stdio and the in-memory pair: over HTTP (or any other transport) the caller is
    // whom the bearer check verified, or no one (an app with `bearer: false`), never the server's local principal.
    const local = this.#auth === false || !this.#host.localCaller() ? undefined : this.#auth.localPrincipal;
    const principal = fromHttp ?? local;
    const sourceAddress = typeof extra.http?.authInfo?.extra?.["sourceAddress"] === "string" ? (extra.http?.authInfo.extra["sourceAddress"] as string) : undefined;
    return new Ctx(request, extra, principal, sourceAddress, this, this.#host);
  }

  #authorize(ctx: Ctx, request: JSONRPCRequest, scopeMethod: string, unknownMethod: boolean): void {
    if (this.#auth === false) return;
    const principal = ctx.principal;
    if (!principal) {
      throw new HMCPError(HMCPErrorCode.Unauthenticated, "Authentication required", { reason: "unauthenticated" });
    }
    // An unknown method needs only an authenticated caller: it is refused as "Method not found" next.
    // the sampling tool is checked with sampling's scopes, as its HTTP check was
    const required = unknownMethod ? [] : this.requiredScopes(scopeMethod);
    if (!satisfiesAny(principal.scopes, required)) {
      throw new HMCPError(HMCPErrorCode.InsufficientScope, `Insufficient scope for ${scopeMethod}${ignoredNote(principal)}`, {
        reason: "insufficient_scope",
        required: [...required],
        ...(principal.ignoredScopes && { ignoredScopes: [...principal.ignoredScopes] }),
      });
    }
    const meta = request.params?._meta as Record<string, unknown> | undefined;
    if (meta !== undefined && meta !== null && typeof meta === "object" && PATIENT_META_KEY in meta) ctx.assertPatient(checkPatientId(meta[PATIENT_META_KEY]));
  }

  async #guard(ctx: Ctx, stage: GuardrailStage, payload: unknown, method = ctx.method): Promise<unknown> {
    const runner = this.#guardrails!;
    let outcome;
    try {
      outcome = await runner.evaluate(stage, payload, {
        stage,
        side: "server",
        method,
        patient: ctx.patient,
        principal: ctx.principal,
        ...(ctx.sessionId !== undefined && { sessionId: ctx.sessionId }),
        signal: ctx.signal,
      });
    } catch (cause) {
      // The runner itself failed: fail closed.
      ctx.decisions.push({ guardrail: "pipeline", action: "block", reason: "guardrail_error", stage });
      throw new HMCPError(HMCPErrorCode.GuardrailBlocked, "Blocked by guardrail", { reason: "guardrail_error", guardrail: "pipeline" }, { cause });
    }
    // (`{ ...{}, ...d, stage }`, not `{ ...d, stage }`: on Node 20 an object literal that starts with a spread and adds
    // members takes V8's slow path, ~1 µs per object measured, five per request; the empty spread first avoids it)
    for (const d of outcome.decisions) ctx.decisions.push({ ...{}, ...d, stage });
    if (outcome.action === "block") {
      const b = outcome.blocked ?? { guardrail: "unknown", reason: "guardrail_blocked" };
      // the patients the blocked content named (a refused request about another patient): in the audit record, so that
      // the patient's accounting of disclosures shows the attempt; never in the error
      if (b.patients) for (const id of b.patients) if (FHIR_ID.test(id)) ctx.patientsTouched.add(id);
      throw new HMCPError(HMCPErrorCode.GuardrailBlocked, `Blocked by guardrail '${b.guardrail}'`, guardrailBlockData(b, stage));
    }
    return stage === "output" ? withRedactionsMeta(outcome.payload, outcome.redactions) : outcome.payload;
  }

  /** Writes the request's audit record, once (a request recorded as abandoned is not recorded again when it returns). */
  #record(ctx: Ctx, outcome: AuditOutcome, status: number | undefined, reason: string | undefined, digests = ctx.digests): void {
    if (!this.#audit && !this.#hooks.audit) return;
    if (ctx.recorded) return;
    ctx.recorded = true;
    const p = ctx.principal;
    // Members in RFC 8785 order, undefined ones left out rather than deleted: the sink's canonical JSON then
    // serialises the record as it is, without a reordered copy (and `delete` would put the objects in V8's slow mode).
    const guardrails: AuditRecordInput["guardrails"] = [];
    for (const d of ctx.decisions) {
      const g: Record<string, unknown> = { action: d.action };
      if (d.entityTypes !== undefined) g["entityTypes"] = d.entityTypes;
      g["guardrail"] = d.guardrail;
      // a custom guardrail's reason may be free text: kept only when it looks like a code (auditIdentifier)
      if (d.reason !== undefined) g["reason"] = auditIdentifier(d.reason);
      if (d.evidence !== undefined) {
        g["reasonClass"] = d.evidence.class;
        g["score"] = d.evidence.score;
        g["stage"] = d.stage;
        g["threshold"] = d.evidence.threshold;
      } else g["stage"] = d.stage;
      guardrails.push(g as AuditRecordInput["guardrails"][number]);
    }
    const latencyMs = Math.round((performance.now() - ctx.started) * 1000) / 1000;
    const record: Record<string, unknown> = {
      actor: actorOf(p),
      agent: this.#host.agentName,
      digests,
      guardrails,
      id: randomUUID(),
      // the flow of MCP 2026-07-28 input rounds this request belongs to, and which round it is
      ...(ctx.rounds?.round !== undefined && { inputRound: ctx.rounds.round }),
      // a copy: a question asked after the record is written (an abandoned request) must not change it
      ...(ctx.interactions.length > 0 && { interactions: [...ctx.interactions] }),
      latencyMs,
      method: auditIdentifier(ctx.method),
      outcome,
      patients: [...ctx.patientsTouched],
    };
    // reason codes are kept; free text (a handler's ProtocolError data.reason, say) is digested: records carry no content
    if (reason !== undefined) record["reason"] = auditIdentifier(reason);
    record["requestId"] = auditRequestId(ctx.requestId);
    record["scopes"] = p?.scopes ?? [];
    if (ctx.sessionId !== undefined) record["sessionId"] = ctx.sessionId;
    record["source"] = ctx.sourceAddress !== undefined ? { address: ctx.sourceAddress } : {};
    if (status !== undefined) record["status"] = status;
    if (ctx.task !== undefined) record["task"] = ctx.task.status === undefined ? { id: ctx.task.id } : { id: ctx.task.id, status: ctx.task.status };
    record["time"] = new Date().toISOString();
    record["transport"] = ctx.transport;
    record["type"] = "request";
    record["v"] = AUDIT_RECORD_VERSION;
    this.#emit(record as unknown as AuditRecordInput, ctx.admitted);
  }

  /**
   * With `replyAfterAuditDurable`, waits until the audit sink has persisted every record appended so far (its `flush`:
   * one group commit, shared by the requests waiting on it), so that no reply leaves before its record is durable. A
   * sink that cannot persist (its disk full, its database away) holds the reply until it recovers: no acknowledgement
   * without a record. A flush that fails is left to the sink's fault handling (the next request is refused).
   */
  async #durable(): Promise<void> {
    if (!this.#replyAfterDurable || this.#audit === undefined) return;
    await this.#audit.flush().catch(() => undefined);
  }

  /** Admits a request when the audit sink can take its record, reserving room for it (src/audit/admission.ts). */
  #admit(): boolean {
    return this.#audit === undefined || admit(this.#audit);
  }

  #emit(record: AuditRecordInput, admitted = false): void {
    const sink = this.#audit;
    markInternalRecord(record);
    try {
      if (sink !== undefined) {
        if (admitted) appendAdmitted(sink, record);
        else appendUnreserved(sink, record);
      }
    } catch (error) {
      if (error instanceof AuditSinkError && error.code === "backpressure") {
        // Transient (the queue drains): later requests are refused by #admit while it is full. The record of an
        // admitted request had room reserved, so losing one means a writer outside the pipeline filled the queue
        // (e.g. the HTTP app's session records): the operator must know. Refusals' records are not reserved.
        if (admitted) this.#logger.error("audit record of an answered request refused: the sink's queue is full", { agent: this.#host.agentName, recordType: record.type, outcome: record.outcome });
      } else if (sink !== undefined && markSinkFailed(sink, error)) {
        // From now on every pipeline writing to this sink refuses every request (AuditUnavailable) rather than serve
        // without an audit trail: until restarted, or, for HMCP's own sinks, while they cannot take records.
        this.#logger.error("audit sink refused a record; refusing requests while it cannot take records (a sink of your own: until restarted)", { agent: this.#host.agentName, error });
      }
    }
    try {
      this.#hooks.audit?.(record);
    } catch {
      // Hooks must not break the request.
    }
  }
}

class Ctx implements RequestContext {
  readonly method: string;
  readonly requestId: string | number;
  readonly sessionId: string | undefined;
  readonly transport: TransportKind;
  readonly patient: string | undefined;
  readonly signal: AbortSignal;
  readonly patientsTouched = new Set<string>();
  readonly decisions: Array<GuardrailDecisionSummary & { stage: GuardrailStage }> = [];
  /** The questions this request asked back (elicitation, sampling), in order, with their outcomes (never content). */
  readonly interactions: Array<{ kind: "elicitation" | "sampling"; outcome: string }> = [];
  /** MCP 2026-07-28 input rounds of this request (modern era, tools/call, prompts/get, resources/read). */
  rounds: InputRounds | undefined = undefined;
  /** The exception a tool callback threw (the SDK reports it to the client as an `isError` result). */
  toolError: unknown = undefined;
  /** Room for this request's record was reserved in the audit sink (released when the record is appended). */
  admitted = false;
  /** When the pipeline took the request (`performance.now()`, ms). */
  readonly started = performance.now();
  /** The record's content digests (`request`, `response`: hex SHA-256 of RFC 8785 JSON), filled as the request goes. */
  readonly digests: Record<string, string> = {};
  /** Its audit record has been written (once only). */
  recorded = false;
  /** The MCP task this request is about (created, run, read, answered or cancelled), for its audit record. */
  task: { id: string; status?: TaskStatus } | undefined = undefined;
  /** The record's outcome and reason when they differ from what the wire error tells the caller (a task not theirs). */
  auditAs: { outcome: AuditOutcome; reason: string } | undefined = undefined;
  /** A task run's hook for `progress` (the task's statusMessage). */
  onProgress: ((message: string) => void) | undefined = undefined;
  readonly #extra: HandlerExtra;
  readonly #pipeline: RequestPipeline;
  readonly #host: PipelineHost;

  constructor(
    request: JSONRPCRequest,
    extra: HandlerExtra,
    readonly principal: Principal | undefined,
    readonly sourceAddress: string | undefined,
    pipeline: RequestPipeline,
    host: PipelineHost,
  ) {
    this.method = request.method;
    this.requestId = request.id;
    this.sessionId = extra.sessionId;
    this.transport = host.transport();
    this.patient = principal?.patient;
    this.signal = extra.mcpReq.signal;
    this.#extra = extra;
    this.#pipeline = pipeline;
    this.#host = host;
  }

  get guardrailDecisions() {
    return this.decisions;
  }

  assertPatient(patientId: string): void {
    this.patientsTouched.add(checkPatientId(patientId));
    if (!this.#pipeline.authEnabled) return;
    if (this.patient !== undefined && this.patient !== patientId) {
      throw new HMCPError(HMCPErrorCode.PatientContextViolation, "Request is outside the token's patient context", {
        reason: "patient_context_mismatch",
      });
    }
  }

  can(request: ScopeRequest): boolean {
    if (!this.#pipeline.authEnabled) return true;
    if (!this.principal) return false;
    return checkAccess(this.principal.scopes, request, this.patient).allowed;
  }

  require(request: ScopeRequest): void {
    if (request.patient !== undefined) this.patientsTouched.add(checkPatientId(request.patient));
    if (!this.#pipeline.authEnabled) return;
    if (!this.principal) {
      throw new HMCPError(HMCPErrorCode.Unauthenticated, "Authentication required", { reason: "unauthenticated" });
    }
    const decision = checkAccess(this.principal.scopes, request, this.patient);
    if (decision.allowed) return;
    if (decision.reason === "insufficient_scope") {
      throw new HMCPError(HMCPErrorCode.InsufficientScope, `Insufficient scope for ${request.resourceType}.${request.action}${ignoredNote(this.principal)}`, {
        reason: "insufficient_scope",
        required: decision.required,
        ...(this.principal.ignoredScopes && { ignoredScopes: [...this.principal.ignoredScopes] }),
      });
    }
    // (no `required`: the token's scopes are not what is missing, and the data names no patient)
    throw new HMCPError(HMCPErrorCode.PatientContextViolation, "Request is outside the token's patient context", { reason: decision.reason });
  }

  async progress(done: number, total?: number, message?: string): Promise<void> {
    // a task's progress is its statusMessage (the tasks extension sends no progress notifications)
    if (this.onProgress) return this.onProgress(message ?? (total !== undefined ? `${done}/${total}` : String(done)));
    const token = this.#extra.mcpReq._meta?.progressToken;
    if (token === undefined) return;
    await this.#extra.mcpReq.notify({
      method: "notifications/progress",
      params: { progressToken: token, progress: done, ...(total !== undefined && { total }), ...(message !== undefined && { message }) },
    });
  }

  /**
   * MCP 2026-07-28 requests carry the per-request `_meta` envelope; servers send no requests of their own there: a
   * question is an input-required round on the methods that have them, and refused on any other.
   */
  #refuseOnModernEra(kind: "sampling" | "elicitation"): void {
    if (this.#extra.mcpReq.envelope === undefined) return;
    throw new HMCPError(HMCPErrorCode.SamplingNotSupported, `Asking the caller (${kind}) is possible during tools/call, prompts/get and resources/read only on MCP 2026-07-28`, {
      reason: "not_supported_on_2026_07_28",
    });
  }

  async step<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    if (typeof name !== "string" || name === "") throw new TypeError("ctx.step: a step needs a name");
    return this.rounds ? this.rounds.step(name, run) : run();
  }

  async sample(params: Parameters<RequestContext["sample"]>[0], options?: BackRequestOptions) {
    if (this.rounds) return this.rounds.ask("sampling", params);
    this.#refuseOnModernEra("sampling");
    if (!this.#host.clientCapabilities()?.sampling) {
      throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "The client does not support sampling", { reason: "sampling_not_supported" });
    }
    return this.#recorded("sampling", this.#extra.mcpReq.send({ method: "sampling/createMessage", params }, CreateMessageResultSchema, requestOptions(options)), () => "answered");
  }

  /** Awaits a question asked back and records its outcome (`outcomeOf` the answer, or `failed`), never its content. */
  async #recorded<T>(kind: "elicitation" | "sampling", asked: Promise<T>, outcomeOf: (answer: T) => string): Promise<T> {
    try {
      const answer = await asked;
      this.interactions.push({ kind, outcome: outcomeOf(answer) });
      return answer;
    } catch (e) {
      this.interactions.push({ kind, outcome: "failed" });
      throw e;
    }
  }

  async elicit(params: Parameters<RequestContext["elicit"]>[0], options?: BackRequestOptions) {
    const formParams = "mode" in params && params.mode ? params : { ...params, mode: "form" as const };
    if (this.rounds) return checkedElicitAnswer(formParams, this.rounds.ask("elicitation", formParams));
    this.#refuseOnModernEra("elicitation");
    if (!this.#host.clientCapabilities()?.elicitation) {
      throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "The client does not support elicitation", { reason: "elicitation_not_supported" });
    }
    // the human's decision (accept, decline, cancel), never what they entered
    return checkedElicitAnswer(formParams, await this.#recorded("elicitation", this.#extra.mcpReq.send({ method: "elicitation/create", params: formParams }, requestOptions(options)), (r) => r.action));
  }
}

/**
 * An accepted form answer whose content does not fit the form's `requestedSchema` (a required field missing, a value of
 * another type) is refused, on either era, before the handler sees it: a handler reading `approve === false` as the
 * only decline would otherwise take `{}` for an approval. The client's mistake: -32602 `invalid_elicitation_content`
 * (the message names the schema's complaint, never a value). Declines, cancels and URL-mode answers pass as they are.
 */
function checkedElicitAnswer<T extends { action: string; content?: unknown }>(params: { mode?: string; requestedSchema?: unknown }, answer: T): T {
  if (answer.action !== "accept" || params.mode !== "form" || params.requestedSchema === undefined) return answer;
  let issues: ReadonlyArray<{ message: string }> | undefined;
  try {
    const outcome = formValidator(params.requestedSchema)["~standard"].validate(answer.content ?? {});
    issues = outcome instanceof Promise ? [{ message: "content could not be checked (asynchronous schema)" }] : outcome.issues;
  } catch {
    // the handler's own schema does not compile (an unknown dialect, an unresolvable $ref): fail closed, the server's fault
    throw new ProtocolError(INTERNAL_ERROR, "Internal error", { reason: "invalid_elicitation_schema" });
  }
  if (issues === undefined || issues.length === 0) return answer;
  throw new ProtocolError(INVALID_PARAMS, `The elicitation answer does not match the requested schema: ${issues[0]!.message.replace(/^data/, "content")}`, { reason: "invalid_elicitation_content" });
}

/**
 * Compiled form validators by schema text, at most {@link FORM_VALIDATORS_MAX} (the oldest dropped first): a handler
 * writes its `requestedSchema` inline, a new object per question, and the SDK's validator keeps every schema object it
 * compiles; one compilation per distinct schema keeps that to the schemas a server asks with (a server that builds
 * a new schema text per question, e.g. an enum of the patient's own values, still grows it by one entry each).
 */
const formValidators = new Map<string, ReturnType<typeof fromJsonSchema>>();
const FORM_VALIDATORS_MAX = 256;
function formValidator(schema: unknown): ReturnType<typeof fromJsonSchema> {
  const key = JSON.stringify(schema);
  let v = formValidators.get(key);
  if (v === undefined) {
    v = fromJsonSchema(JSON.parse(key) as Parameters<typeof fromJsonSchema>[0]);
    if (formValidators.size >= FORM_VALIDATORS_MAX) formValidators.delete(formValidators.keys().next().value!);
    formValidators.set(key, v);
  }
  return v;
}

function requestOptions(options: BackRequestOptions | undefined) {
  return { ...(options?.timeoutMs !== undefined && { timeout: options.timeoutMs }), ...(options?.signal && { signal: options.signal }) };
}

/** One sealer per `requestState` options object (createHttpApp builds a server per modern request: they share it). */
const SEALERS = new WeakMap<object, RequestStateSealer>();
let defaultSealer: RequestStateSealer | undefined;
function sealerFor(options: HMCPServerOptions["requestState"]): RequestStateSealer {
  if (options === undefined) return (defaultSealer ??= new RequestStateSealer());
  let s = SEALERS.get(options);
  if (s === undefined) SEALERS.set(options, (s = new RequestStateSealer(options)));
  return s;
}

/** Maps the SDK's AuthInfo (set by the HTTP layer) to a Principal. */
function principalFromAuthInfo(info: NonNullable<HandlerExtra["http"]>["authInfo"]): Principal | undefined {
  if (!info) return undefined;
  const p = info.extra?.["principal"] as Principal | undefined;
  if (p) return p;
  if (!info.clientId) return undefined;
  return { clientId: info.clientId, scopes: info.scopes, ...(info.expiresAt !== undefined && { expiresAt: info.expiresAt }) };
}

/** Local → wire error mapping, in one place (STYLE.md habit 4). Never echoes an unknown error's message. */
function mapError(error: unknown): ProtocolError {
  return withCleanMessage(toWire(error));
}

/**
 * SDK 1.x's McpError prefixed "MCP error <code>: " to its message (a peer on 1.x still does), and an error that crossed agents (e.g. a client's
 * refusal of a request this agent sent back) carries one prefix per hop. The wire message is the sentence alone.
 */
function withCleanMessage(e: ProtocolError): ProtocolError {
  const clean = e.message.replace(/^(MCP error -?\d+: )+/, "");
  if (clean === e.message) return e;
  return Object.assign(Object.create(Object.getPrototypeOf(e) as object), e, { message: clean }) as ProtocolError;
}

function toWire(error: unknown): ProtocolError {
  if (isZodError(error)) {
    const paths = error.issues.slice(0, 5).map((i) => (i.path.length ? i.path.join(".") : "(root)"));
    return new ProtocolError(INVALID_PARAMS, `Invalid params at ${paths.join(", ")}`, { reason: "invalid_params", paths });
  }
  // SDK v2 raises local failures of a request sent back to the caller (timeout, connection closed) as SdkError with a
  // string code; on the wire they keep the JSON-RPC codes SDK 1.x gave them
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return new ProtocolError(REQUEST_TIMEOUT, "Request timed out", { reason: "timeout" });
  if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) return new ProtocolError(CONNECTION_CLOSED, "Connection closed", { reason: "connection_closed" });
  return toWireError(error);
}

/** JSON-RPC code of a request that timed out (SDK 1.x `ErrorCode.RequestTimeout`). */
const REQUEST_TIMEOUT = -32001;
/** JSON-RPC code of a connection closed under a pending request (SDK 1.x `ErrorCode.ConnectionClosed`). */
const CONNECTION_CLOSED = -32000;

function isZodError(e: unknown): e is { issues: Array<{ path: PropertyKey[] }> } {
  return typeof e === "object" && e !== null && Array.isArray((e as { issues?: unknown }).issues) && (e as Error).name?.includes("ZodError");
}

function outcomeOf(e: ProtocolError): AuditOutcome {
  // a requestState this agent cannot open (forged, edited, or sealed with a key since removed), sealed for someone or
  // something else, or used before: refused access, not a failure (an expired one is a limit: failed)
  const reason = (e.data as { reason?: unknown } | undefined)?.reason;
  if (reason === "request_state_invalid" || reason === "request_state_mismatch" || reason === "request_state_replayed") return "denied";
  switch (e.code) {
    case HMCPErrorCode.InsufficientScope:
    case HMCPErrorCode.PatientContextViolation:
    case HMCPErrorCode.Unauthenticated:
      return "denied";
    case HMCPErrorCode.GuardrailBlocked:
      return "blocked";
    case HMCPErrorCode.AuditUnavailable:
      return "failed";
    default:
      return "failed";
  }
}

function reasonOf(e: ProtocolError): string {
  const data = e.data as { reason?: unknown; uri?: unknown } | undefined;
  if (typeof data?.reason === "string") return data.reason;
  // the SDK's ResourceNotFoundError (-32602 with the uri alone in data, MCP 2026-07-28)
  if (e.code === ProtocolErrorCode.InvalidParams && typeof data?.uri === "string" && Object.keys(data).length === 1) return "resource_not_found";
  switch (e.code) {
    case ProtocolErrorCode.MethodNotFound:
      return "method_not_found";
    case ProtocolErrorCode.InvalidParams:
      return "invalid_params";
    case ProtocolErrorCode.InvalidRequest:
      return "invalid_request";
    case ProtocolErrorCode.MissingRequiredClientCapability:
      return "missing_client_capability";
    case REQUEST_TIMEOUT:
      return "timeout";
    case CONNECTION_CLOSED:
      return "connection_closed";
    case ProtocolErrorCode.InternalError:
      return "internal_error";
    default:
      return `error_${e.code}`;
  }
}

/**
 * The audit record's `actor` of a principal (members in RFC 8785 order); built once per frozen principal object (the
 * JWT and introspection authenticators' principals are frozen), afresh for a principal that may change in place.
 */
const actors = new WeakMap<Principal, AuditRecordInput["actor"]>();
function actorOf(p: Principal | undefined): AuditRecordInput["actor"] {
  if (p === undefined) return {};
  const frozen = Object.isFrozen(p);
  let a = frozen ? actors.get(p) : undefined;
  if (a === undefined) {
    const o: Record<string, string> = {};
    if (p.clientId !== undefined) o["clientId"] = p.clientId;
    if (p.fhirUser !== undefined) o["fhirUser"] = p.fhirUser;
    if (p.sub !== undefined) o["sub"] = p.sub;
    if (p.tenant !== undefined) o["tenant"] = p.tenant;
    a = Object.freeze(o) as AuditRecordInput["actor"];
    if (frozen) actors.set(p, a);
  }
  return a;
}

function compact<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}
