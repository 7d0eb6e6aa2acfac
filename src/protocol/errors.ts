/**
 * HMCP's stable JSON-RPC error codes and the error class that carries them.
 *
 * Codes live in the JSON-RPC 2.0 "implementation-defined server error" range (-32000 to -32099,
 * JSON-RPC 2.0 §5.1), clear of the codes the MCP SDK already uses (-32000 connection closed,
 * -32001 request timeout, -32002 resource not found, -32042 URL elicitation required).
 *
 * Every HMCP error carries a machine-readable `data` object (`{ reason, ... }`) and never PHI:
 * messages and data name guardrails, scopes and reason codes, never message content.
 */
import { ProtocolError } from "@modelcontextprotocol/server";

/** The closed set of HMCP error codes (wire values). */
export const HMCPErrorCode = {
  /** The server has no sampling handler, or the peer did not advertise `experimental.hmcp.sampling`. */
  SamplingNotSupported: -32050,
  /** The caller's token lacks a scope the method or handler requires (`data.required`). */
  InsufficientScope: -32051,
  /** The request touches a patient outside the token's patient launch context (`data.reason`). */
  PatientContextViolation: -32052,
  /** A guardrail blocked the request or its result (`data.guardrail`, `data.reason`). */
  GuardrailBlocked: -32053,
  /** No authenticated principal for a method that needs one (`data.reason`). */
  Unauthenticated: -32054,
  /** The audit trail cannot record: requests are refused until it is repaired (fail closed, `data.reason`). */
  AuditUnavailable: -32055,
} as const;
export type HMCPErrorCode = (typeof HMCPErrorCode)[keyof typeof HMCPErrorCode];

/** Standard JSON-RPC 2.0 internal error (§5.1). Unexpected failures become this, with a fixed message. */
export const INTERNAL_ERROR = -32603;
/** Standard JSON-RPC 2.0 invalid params (§5.1). */
export const INVALID_PARAMS = -32602;
/**
 * Standard JSON-RPC 2.0 invalid request (§5.1): the body is not a valid request. The HTTP layer answers it for a body
 * over the size limit (HTTP 413) and any other 4xx the body parser raises.
 */
export const INVALID_REQUEST = -32600;
/** Standard JSON-RPC 2.0 parse error (§5.1): the body is not JSON. The HTTP layer answers it with HTTP 400. */
export const PARSE_ERROR = -32700;
/**
 * Implementation-defined server error (JSON-RPC 2.0 §5.1) that the MCP SDK's Streamable HTTP transport answers for a
 * request refused at the transport (no session, too many sessions, shutting down, not ready); the HTTP status says
 * which. The SDK uses the same value for "connection closed" on its client side.
 * @internal
 */
export const TRANSPORT_ERROR = -32000;
/**
 * Implementation-defined server error (JSON-RPC 2.0 §5.1) for a request the server pipeline refuses because a bounded
 * pool of the agent is full, not because of anything wrong with the request (`data.reason`: `too_many_tasks`,
 * `too_many_input_rounds`): retry later. The same value as {@link TRANSPORT_ERROR}, which the HTTP layer answers for
 * its own limits.
 * @internal
 */
export const LIMIT_REACHED = -32000;
/**
 * The MCP SDK's Streamable HTTP code for an unknown or ended `Mcp-Session-Id` (HTTP 404; MCP 2025-11-25 transports,
 * "Session Management": the client then starts a new session with initialize).
 * @internal
 */
export const SESSION_NOT_FOUND = -32001;

/** Reason codes used in `data.reason` (stable, machine-readable, never PHI). */
export type HMCPReason =
  | "sampling_not_supported"
  | "insufficient_scope"
  | "patient_context_mismatch"
  | "patient_context_missing"
  | "guardrail_blocked"
  | "guardrail_error"
  | "guardrail_timeout"
  | "unauthenticated"
  | "audit_unavailable"
  | (string & {});

/** The `data` object of every HMCP error. */
export interface HMCPErrorData {
  /** Stable reason code, e.g. `"insufficient_scope"`. */
  reason: HMCPReason;
  /** For scope errors: the scopes, any one of which would have allowed the act. */
  required?: string[];
  /** For guardrail errors: the guardrail's name. */
  guardrail?: string;
  [key: string]: unknown;
}

/**
 * An error that leaves the HMCP pipeline as a JSON-RPC error with a stable code.
 * Extends the SDK's `ProtocolError`, so the SDK serialises `code`, `message` and `data` unchanged.
 *
 * @param code - one of {@link HMCPErrorCode}
 * @param message - a fixed, PHI-free sentence a caller can show
 * @param data - machine-readable details; `reason` is required
 */
export class HMCPError extends ProtocolError {
  override readonly data: HMCPErrorData;
  constructor(code: HMCPErrorCode, message: string, data: HMCPErrorData, options?: { cause?: unknown }) {
    super(code, message, data);
    this.name = "HMCPError";
    this.data = data;
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

/** True when `e` is an error that the pipeline may send to the wire as-is (HMCP or SDK protocol error). */
export function isWireError(e: unknown): e is ProtocolError {
  return e instanceof ProtocolError;
}

/** The resource-not-found code of MCP before 2026-07-28, which the SDK never sends (below). */
const LEGACY_RESOURCE_NOT_FOUND = -32002;

/**
 * Maps any thrown value to a wire-safe error (STYLE.md habit 4). HMCP and MCP protocol errors pass
 * through; anything else becomes JSON-RPC internal error `-32603` with the fixed message
 * "Internal error" and no `data`, so the original message (which may contain PHI) never leaves.
 * A handler's `-32002` (resource not found before MCP 2026-07-28) becomes `-32602` with the same message and data,
 * as the SDK encodes it on every revision (2026-07-28, resources/read): the audit record then names the code sent.
 */
export function toWireError(e: unknown): ProtocolError {
  if (isWireError(e)) return e.code === LEGACY_RESOURCE_NOT_FOUND ? new ProtocolError(INVALID_PARAMS, e.message, e.data) : e;
  return new ProtocolError(INTERNAL_ERROR, "Internal error");
}
