/**
 * What a handler sees: the request context the pipeline builds once per request.
 */
import type { CreateMessageResult, ElicitRequest, ElicitResult } from "@modelcontextprotocol/server";
import type { CreateMessageParams, Principal, TransportKind } from "../protocol/index.js";
import type { ScopeRequest } from "../auth/scopes.js";
import type { GuardrailDecisionSummary, GuardrailStage } from "../guardrails/types.js";

export type { CreateMessageParams };
/** Params of `elicitation/create` (MCP spec 2025-06-18, "Elicitation"). */
export type ElicitParams = ElicitRequest["params"];

/** Options for a request the handler sends back to its caller. */
export interface BackRequestOptions {
  /** Time to wait for the caller's answer, ms. Default: the SDK's 60,000 ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * The per-request context. One is built for every request that reaches the pipeline; handlers get it as
 * their second argument (sampling) or through {@link hmcpContext} (tools, resources, prompts).
 */
export interface RequestContext {
  /** MCP method, e.g. "sampling/createMessage". */
  readonly method: string;
  /** JSON-RPC request id. */
  readonly requestId: string | number;
  /** Streamable HTTP session id (`mcp-session-id`), if any. */
  readonly sessionId: string | undefined;
  readonly transport: TransportKind;
  /** The authenticated caller; `undefined` only when the server runs with `auth: false`. */
  readonly principal: Principal | undefined;
  /** SMART launch context: the only patient a patient-bound token may touch. */
  readonly patient: string | undefined;
  /** Remote address of the HTTP peer, if known. */
  readonly sourceAddress: string | undefined;
  /** Aborted when the caller cancels or the connection closes. */
  readonly signal: AbortSignal;
  /** Patient ids this request touched so far (recorded in the audit record). */
  readonly patientsTouched: ReadonlySet<string>;
  /** Guardrail decisions so far (recorded in the audit record; never content). */
  readonly guardrailDecisions: ReadonlyArray<GuardrailDecisionSummary & { stage: GuardrailStage }>;

  /**
   * Records that this request touches `patientId` (a FHIR Patient id) and checks it against the patient launch context.
   * @throws ProtocolError -32602 (`data.reason` "invalid_patient_id") when `patientId` is not a FHIR id
   *   (`[A-Za-z0-9-.]{1,64}`, FHIR R4 §2.24.0.1; nothing is recorded then);
   *   HMCPError `PatientContextViolation` when the caller's token is bound to another patient.
   */
  assertPatient(patientId: string): void;
  /**
   * True when the caller's scopes allow `request` (SMART App Launch 2.x scope semantics, patient context honoured).
   * Always true when the server runs with `auth: false`.
   */
  can(request: ScopeRequest): boolean;
  /**
   * Like {@link can}, but throws.
   * @throws HMCPError `InsufficientScope` (`data.required` names the scope that would allow it), or
   *   `PatientContextViolation` when the act names another patient than the launch context; ProtocolError -32602
   *   (`invalid_patient_id`) when `request.patient` is not a FHIR Patient id.
   */
  require(request: ScopeRequest): void;
  /**
   * Sends `notifications/progress` for this request (MCP spec, "Progress"), if the caller asked for progress
   * (sent a `progressToken`); otherwise does nothing.
   * @param done - work done so far (must increase)
   * @param total - total work, if known
   */
  progress(done: number, total?: number, message?: string): Promise<void>;
  /**
   * Asks the caller's model (`sampling/createMessage`). On the legacy era (2025-11-25 and older) it is sent back to the
   * client on the same connection (on HTTP, on this request's SSE stream). On MCP 2026-07-28, during `tools/call`,
   * `prompts/get` or `resources/read`, it is an input-required round (specification 2026-07-28, "Multi Round-Trip
   * Requests"): this run of the handler ends, the client answers, and the handler runs again from the start, where this
   * call then returns the answer. So on that era a handler must ask the same questions in the same order on every run,
   * and put any work that must not repeat (an EMR write) in {@link step}. `options` apply to the legacy era only.
   * @throws HMCPError `SamplingNotSupported` when the client did not advertise `sampling` (legacy era), or (`data.reason`
   *   `not_supported_on_2026_07_28`) on a 2026-07-28 request of another method; on 2026-07-28, ProtocolError -32021
   *   (MissingRequiredClientCapability, `data.requiredCapabilities`, HTTP 400) when the request's `_meta` envelope does
   *   not declare `sampling`, and -32603 (`input_round_diverged`) when a retry's run asked differently than before.
   */
  sample(params: CreateMessageParams, options?: BackRequestOptions): Promise<CreateMessageResult>;
  /**
   * Asks the caller's human (`elicitation/create`, form mode), as {@link sample} asks the model: a request sent back on
   * the legacy era, an input-required round on MCP 2026-07-28.
   * @returns the client's `ElicitResult` (`action` accept / decline / cancel).
   * @throws HMCPError `SamplingNotSupported` with reason "elicitation_not_supported" when the client did not advertise it
   *   (legacy era), `not_supported_on_2026_07_28` on a 2026-07-28 request of a method without input rounds;
   *   ProtocolError -32021 and -32603 (`input_round_diverged`) as for {@link sample}.
   */
  elicit(params: ElicitParams, options?: BackRequestOptions): Promise<ElicitResult>;
  /**
   * Runs `run` once per request flow. On MCP 2026-07-28, where a handler that asks the caller runs again on every
   * retry, the first run's result (which must be JSON) is kept in the sealed `requestState` and returned on the later
   * runs without calling `run` again: put work that must not repeat (a write, a charge, a message sent) here, before
   * the next question. Elsewhere (the legacy era, a request that asks nothing) it just calls `run`.
   * @param name - names the step; a retry's run must reach the same steps in the same order
   * @throws ProtocolError -32603 (`step_not_json`) when the result is not JSON, (`input_round_diverged`) as for
   *   {@link sample}; TypeError for an empty name; whatever `run` throws.
   */
  step<T>(name: string, run: () => T | Promise<T>): Promise<T>;
}

/** Context of a sampling handler: the request context. */
export type SamplingContext = RequestContext;

/**
 * A client → server sampling handler. Receives the validated `sampling/createMessage` params (after the input
 * guardrail stage) and returns a `CreateMessageResult`; `role` defaults to "assistant" and `model` to the server's
 * name. End the turn with `stopReason: "infoNeeded"` to ask for more data.
 */
export type SamplingHandler = (
  params: CreateMessageParams,
  context: SamplingContext,
) => Promise<SamplingHandlerResult> | SamplingHandlerResult;

/** What a sampling handler returns: a `CreateMessageResult` whose `role` and `model` may be omitted. */
export type SamplingHandlerResult = Omit<CreateMessageResult, "role" | "model"> & {
  role?: CreateMessageResult["role"];
  model?: string;
};

const CONTEXTS = new WeakMap<object, RequestContext>();

/** @internal Attaches a context to the SDK's handler `extra` object. */
export function attachContext(extra: object, context: RequestContext): void {
  CONTEXTS.set(extra, context);
}

/** @internal */
export function hmcpContextOrUndefined(extra: object): RequestContext | undefined {
  return CONTEXTS.get(extra);
}

/**
 * The HMCP request context of a tool, resource or prompt callback, from the SDK's `extra` argument.
 * @throws Error when `extra` did not come through an HMCPServer pipeline.
 */
export function hmcpContext(extra: object): RequestContext {
  const ctx = CONTEXTS.get(extra);
  if (!ctx) throw new Error("hmcpContext: this handler was not called through an HMCPServer");
  return ctx;
}
