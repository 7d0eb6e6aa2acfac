/**
 * Audit admission: whether an audit sink can take the records of what is about to be served, shared by every writer
 * of the sink (the request pipelines of all sessions and modern-era requests, and the HTTP layer's own records).
 *
 * - A request is served only once room for its record is reserved in the sink's queue ({@link admit}); its record is
 *   then appended on that reservation ({@link appendAdmitted}), so it is never refused for backpressure.
 * - Records nobody reserved room for (refusals, session start/end) go in only beside the reserved ones
 *   ({@link appendUnreserved}): they never crowd out the record of a request already admitted.
 * - A sink that refused a record for good ({@link markSinkFailed}) admits nothing more: every writer then fails closed.
 *   HMCP's own sinks (file, PostgreSQL) are the exception: their write faults are theirs to track and recover from
 *   (`assertWritable` refuses while one lasts, `recover`), and records appended meanwhile wait in their queue.
 * - {@link auditSinkStatus} says what is wrong, for readiness.
 *
 * All of it is @internal: the public contract is {@link AuditSink} and its optional `assertWritable` health check.
 */
import { AuditSinkError, ChainSinkBase } from "./chain-sink.js";
import type { AuditRecordInput, AuditSink } from "./record.js";

/** Sinks that have refused a record for good (not for backpressure): shared by every pipeline (session) writing to them. */
const FAILED_SINKS = new WeakMap<AuditSink, { since: string; code: string | undefined }>();
/** HMCP's own sinks whose refusal was logged once already (they are not marked failed: they recover). */
const REPORTED = new WeakSet<AuditSink>();
/** Per sink, requests admitted (room checked) whose record is not appended yet: room reserved in the sink's queue. */
const ADMITTED = new WeakMap<AuditSink, number>();

/**
 * True when `sink` cannot take records now: it refused one for good before, or its own health check
 * ({@link AuditSink.assertWritable}) says no to `reserve` more records (default 1). Used by the HTTP app before it
 * opens a session. @internal
 */
export function auditSinkUnavailable(sink: AuditSink, reserve = 1): boolean {
  if (FAILED_SINKS.has(sink)) return true;
  try {
    sink.assertWritable?.(reserve);
    return false;
  } catch {
    return true;
  }
}

/**
 * Admits a request when `sink` can take its record: not failed for good, and room in its queue for this record on top
 * of those of every request already admitted and not yet recorded (over all writers sharing the sink), so an admitted
 * request's record is not refused for backpressure. Reserves that room (released by {@link appendAdmitted}).
 * @returns false (nothing reserved) when the request must be refused. @internal
 */
export function admit(sink: AuditSink): boolean {
  const pending = ADMITTED.get(sink) ?? 0;
  if (auditSinkUnavailable(sink, pending + 1)) return false;
  ADMITTED.set(sink, pending + 1);
  return true;
}

/**
 * Appends the record of a request {@link admit} admitted, releasing the room reserved for it. @internal
 * @throws what `sink.append` throws (the reservation is released all the same)
 */
export function appendAdmitted(sink: AuditSink, record: AuditRecordInput): void {
  ADMITTED.set(sink, Math.max(0, (ADMITTED.get(sink) ?? 1) - 1));
  sink.append(record);
}

/**
 * Appends a record that had no room reserved (a refusal, a session event): only if it fits beside the records of
 * requests already admitted, which it must not crowd out; otherwise it is dropped (returns false). @internal
 * @throws what `sink.append` throws
 */
export function appendUnreserved(sink: AuditSink, record: AuditRecordInput): boolean {
  if (sink.assertWritable !== undefined) {
    try {
      sink.assertWritable((ADMITTED.get(sink) ?? 0) + 1);
    } catch (error) {
      if (error instanceof AuditSinkError && error.code === "backpressure") return false;
      // one of HMCP's sinks in a write fault still takes records: they wait for its recovery
      if (!(error instanceof AuditSinkError && error.code === "write_failed" && sink instanceof ChainSinkBase)) throw error;
      try {
        sink.append(record);
      } catch (e) {
        if (e instanceof AuditSinkError && e.code === "backpressure") return false;
        throw e;
      }
      return true;
    }
  }
  sink.append(record);
  return true;
}

/**
 * Records that `sink` refused a record for good: from now on it admits nothing ({@link admit},
 * {@link auditSinkUnavailable}), for every writer sharing it, until the process restarts. Not for HMCP's own sinks
 * (file, PostgreSQL), whose `assertWritable` tracks their faults and their recovery.
 * @returns true the first time only (so the refusal is logged once). @internal
 */
export function markSinkFailed(sink: AuditSink, error?: unknown): boolean {
  if (sink instanceof ChainSinkBase) {
    if (REPORTED.has(sink)) return false;
    REPORTED.add(sink);
    return true;
  }
  if (FAILED_SINKS.has(sink)) return false;
  FAILED_SINKS.set(sink, { since: new Date().toISOString(), code: codeOf(error) });
  return true;
}

/** What keeps a sink from taking records, for readiness (no PHI, no path). @internal */
export interface AuditSinkStatus {
  /** `audit_sink_failed` (a write fault, or a refusal of a sink that does not recover), `audit_sink_closed`, `audit_backpressure`. */
  reason: "audit_sink_failed" | "audit_sink_closed" | "audit_backpressure";
  /** The failed write's error code (`ENOSPC`, `EROFS`, a SQLSTATE ...), when known. */
  code?: string;
  /** Since when, RFC 3339, when known. */
  since?: string;
  /** Records waiting for the sink's recovery (HMCP's own sinks). */
  waiting?: number;
  /** Whether the sink recovers by itself once the fault clears (HMCP's own sinks) or needs a restart. */
  recovers: boolean;
}

/** What keeps `sink` from taking a record now, or undefined (see {@link AuditSinkStatus}). @internal */
export function auditSinkStatus(sink: AuditSink): AuditSinkStatus | undefined {
  const marked = FAILED_SINKS.get(sink);
  if (marked !== undefined) return { reason: "audit_sink_failed", ...(marked.code && { code: marked.code }), since: marked.since, recovers: false };
  const fault = sink instanceof ChainSinkBase ? sink.fault : undefined;
  if (fault !== undefined) return { reason: "audit_sink_failed", code: fault.code, since: fault.since, waiting: fault.waiting, recovers: fault.recovers };
  try {
    sink.assertWritable?.((ADMITTED.get(sink) ?? 0) + 1);
    return undefined;
  } catch (error) {
    if (error instanceof AuditSinkError && error.code === "closed") return { reason: "audit_sink_closed", recovers: false };
    if (error instanceof AuditSinkError && error.code === "backpressure") return { reason: "audit_backpressure", recovers: true };
    const code = codeOf(error);
    return { reason: "audit_sink_failed", ...(code && { code }), recovers: true };
  }
}

/** An error's code (errno, SQLSTATE), or its cause's when it has one. */
function codeOf(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  const code = typeof cause === "string" ? cause : (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[A-Za-z0-9_]{1,32}$/.test(code) ? code : undefined;
}
