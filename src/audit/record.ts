/**
 * The audit record: one per outcome of every request (HIPAA 45 CFR 164.312(b) audit controls).
 * Versioned zod schema. Records carry identifiers, codes and SHA-256 digests, never message content.
 */
import { z } from "zod";

export const AUDIT_RECORD_VERSION = 1;

export const AuditOutcomeSchema = z.enum(["allowed", "denied", "blocked", "failed"]);
export type AuditOutcome = z.infer<typeof AuditOutcomeSchema>;

export const AuditEventTypeSchema = z.enum([
  "request", // an MCP request handled (or refused) by the pipeline
  "http", // a request refused at the HTTP layer (bearer check, host check, body limit) before MCP
  "session.start",
  "session.end",
  "token", // client side: a token obtained, refreshed or refused
  "view", // a page of the audit console (`hmcp audit serve`) viewed: who looked at which patients' audit data
]);
// Checkpoint entries (type "checkpoint") are written by the sinks themselves (./chain.ts CheckpointBody), never appended
// as records: a record of that type would read as a malformed checkpoint and fail verification from there on.
export type AuditEventType = z.infer<typeof AuditEventTypeSchema>;

export const AuditRecordInputSchema = z
  .object({
    v: z.literal(AUDIT_RECORD_VERSION),
    /** Record id (UUID). */
    id: z.string().uuid(),
    /**
     * RFC 3339 date-time with milliseconds, UTC (what newAuditRecord writes); an offset is accepted. A calendar-invalid
     * time (e.g. 2026-02-30) is refused: storage (PostgreSQL timestamptz) and FHIR export would not take it.
     */
    time: z.iso.datetime({ offset: true }),
    type: AuditEventTypeSchema,
    actor: z
      .object({
        sub: z.string().optional(),
        clientId: z.string().optional(),
        fhirUser: z.string().optional(),
        tenant: z.string().optional(),
      })
      .strict(),
    source: z.object({ address: z.string().optional() }).strict(),
    transport: z.enum(["http", "stdio", "memory"]).optional(),
    sessionId: z.string().optional(),
    /** Server (agent) name. */
    agent: z.string(),
    /** MCP method, e.g. "sampling/createMessage"; for type "http", the HTTP method and path. */
    method: z.string().optional(),
    requestId: z.union([z.string(), z.number()]).optional(),
    /** FHIR Patient ids touched. */
    patients: z.array(z.string()),
    /** Scopes used (granted scopes of the token). */
    scopes: z.array(z.string()),
    outcome: AuditOutcomeSchema,
    /** Stable reason code, e.g. "insufficient_scope", "guardrail_blocked", "invalid_token". */
    reason: z.string().optional(),
    /** HTTP status for type "http", JSON-RPC error code for refused requests. */
    status: z.number().int().optional(),
    guardrails: z.array(
      z
        .object({
          guardrail: z.string(),
          stage: z.enum(["input", "output"]),
          action: z.enum(["allow", "redact", "block"]),
          entityTypes: z.array(z.string()).optional(),
          reason: z.string().optional(),
          /** A scoring guardrail's reason class for a block (e.g. "instruction_override"); never the text. */
          reasonClass: z.string().optional(),
          /** A scoring guardrail's score (0..1) for a block, and the threshold it was held to. */
          score: z.number().min(0).max(1).optional(),
          threshold: z.number().min(0).max(1).optional(),
        })
        .strict(),
    ),
    /**
     * The questions the handler asked back while serving the request, in order: an elicitation's outcome is the
     * human's decision (`accept`, `decline`, `cancel`), a sampling request's `answered`; `failed` when the question
     * got an error (refused, timed out, not supported); `input_required` when it went back to the client as an MCP
     * 2026-07-28 input request (answered in the next round). Never what was asked or answered. Absent when none was asked.
     */
    interactions: z
      .array(z.object({ kind: z.enum(["elicitation", "sampling"]), outcome: z.enum(["accept", "decline", "cancel", "answered", "failed", "input_required"]) }).strict())
      .optional(),
    /**
     * MCP 2026-07-28 multi round-trip requests: the flow (a random id shared by every round of one logical request) and
     * this request's round (1 = the first request). A round that asked is answered `input_required` (see
     * `interactions`); the next round's record carries the answer's outcome.
     */
    inputRound: z.object({ flow: z.string().uuid(), round: z.number().int().min(1) }).strict().optional(),
    /**
     * The MCP task (extension `io.modelcontextprotocol/tasks` on 2026-07-28, the revision's tasks on 2025-11-25) this
     * record is about: a `tools/call` answered with a task (`status` `working`), a run of the task ending (`completed`,
     * `failed`, `cancelled`, `input_required`), or a `tasks/get` / `tasks/update` / `tasks/result` / `tasks/cancel`
     * naming it (its status when answered). Absent otherwise (`tasks/list` names none).
     */
    task: z.object({ id: z.string().uuid(), status: z.enum(["working", "input_required", "completed", "failed", "cancelled"]).optional() }).strict().optional(),
    /** Wall time from request arrival to reply, ms. */
    latencyMs: z.number().nonnegative(),
    /** Hex SHA-256 digests of the canonical JSON of the request params and the response (result or error). */
    digests: z.object({ request: z.string().optional(), response: z.string().optional() }).strict(),
  })
  .strict();
export type AuditRecordInput = z.infer<typeof AuditRecordInputSchema>;

/**
 * A record as `verify`, `query` and `export` read it from a trail: {@link AuditRecordInputSchema} with `time` any
 * string. The sinks refuse a time that is not an RFC 3339 date-time, but earlier versions took any string, and a trail
 * they wrote must still verify (the entry hash covers the time as written). @internal
 */
export const StoredAuditRecordSchema = AuditRecordInputSchema.extend({ time: z.string() });

/** Records HMCP built itself (server pipeline, HTTP app), which sinks take without the schema check. */
const INTERNAL_RECORDS = new WeakSet<object>();

/** Marks a record HMCP built itself, whose shape is known good. @internal */
export function markInternalRecord<T extends object>(record: T): T {
  INTERNAL_RECORDS.add(record);
  return record;
}

/** Whether `record` was built by HMCP itself ({@link markInternalRecord}). @internal */
export function isInternalRecord(record: object): boolean {
  return INTERNAL_RECORDS.has(record);
}

/**
 * Where audit records go. `append` must not block the request: it validates and enqueues
 * synchronously; durability (fsync policy) is the sink's job and is honoured by `flush`/`close`.
 */
export interface AuditSink {
  append(record: AuditRecordInput): void;
  /**
   * Optional health check, called before a request is served: throws when `append` would refuse the next `reserve`
   * records (default 1): the sink is closed, a write failed, or its queue has no room for them. The server passes the
   * number of requests it has admitted and not yet recorded, plus one, so an admitted request's record is never
   * refused for lack of room; a refused request gets -32055 AuditUnavailable instead of being served unaudited.
   * Must be cheap and synchronous. Throw `AuditSinkError` with code `backpressure` for a transient lack of room
   * (requests are served again once it passes); any other error counts as a lasting failure, as does any error from
   * `append` except `backpressure`: from then on every server sharing the sink refuses requests until restarted.
   */
  assertWritable?(reserve?: number): void;
  /** Resolves when every record appended so far is durable per the sink's policy. */
  flush(): Promise<void>;
  /** Flushes, writes a final checkpoint where the sink signs, and releases resources. */
  close(): Promise<void>;
}
