/** The 2025 era (MCP 2025-11-25 and older): a request in a session, or an initialize request opening one. */
import type { Request, Response } from "express";
import { isInitializeRequest, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/server";
import { HMCPErrorCode } from "../protocol/index.js";
import { SESSION_NOT_FOUND, TRANSPORT_ERROR } from "../protocol/errors.js";
import type { AuditSink } from "../audit/record.js";
import { auditSinkUnavailable } from "../audit/admission.js";
import { principalOf } from "./bearer-check.js";
import type { EraHandler } from "./era-routing.js";
import type { LegacySession, LegacySessions } from "./legacy-sessions.js";
import type { RefusalAudit } from "./refusal-audit.js";

/**
 * Serves the 2025 era through the session registry. A request naming a session its caller may not use gets 404
 * (-32001), as does a GET or DELETE whose token lacks a scope the session was opened with; a request without a session
 * that is not initialize gets 400 (-32000). In a session, an `MCP-Protocol-Version` the transport does not support and
 * a GET's `Last-Event-ID` that is malformed or names no stored event get 400 (-32000). An initialize request opens a
 * session unless the audit sink cannot take records (503, AuditUnavailable) or a cap is reached (503 `maxSessions`,
 * 429 `maxSessionsPerPrincipal`). What the SDK's transport still refuses on its own (an HTTP 4xx or 5xx it answers
 * before any handler runs, e.g. a second initialize in a session or a second GET stream: 409) gets one audit record
 * here, its reason named after the status ({@link transportRefusalReason}).
 */
export function legacyEra(sessions: LegacySessions, audit: RefusalAudit, auditSink: AuditSink | undefined): EraHandler {
  return async (req: Request, res: Response) => {
    const sid = req.headers["mcp-session-id"];
    const principal = principalOf(req);
    if (typeof sid === "string") {
      const s = sessions.find(sid, principal);
      if (!s) {
        audit.refuse(req, res, { status: 404, code: SESSION_NOT_FOUND, message: "Session not found", reason: "session_not_found" });
        return;
      }
      // GET (the session's SSE stream: replayed events carry results of requests the opener's token was allowed)
      // and DELETE need a token with every scope the session was opened with; a POST's methods are checked one by one.
      if (req.method !== "POST" && !coversScopes(principal?.scopes ?? [], s.scopes)) {
        audit.refuse(req, res, { status: 404, code: SESSION_NOT_FOUND, message: "Session not found", reason: "session_scopes_not_covered" });
        return;
      }
      if (!(await sessionRequestAcceptable(req, res, s, audit))) return;
      s.lastSeen = Date.now();
      await s.transport.handleRequest(req, res, req.body);
      auditTransportRefusal(req, res, audit);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(req.body)) {
      audit.refuse(req, res, { status: 400, code: TRANSPORT_ERROR, message: "Bad Request: no valid session id (send initialize first)", reason: "no_session" });
      return;
    }
    // Fail closed: no new session while the audit sink cannot take records (failed before, or its own health check).
    // Its record goes in where the sink still takes one (HMCP's own sinks keep it for their recovery).
    if (auditSink !== undefined && auditSinkUnavailable(auditSink)) {
      audit.refuse(req, res, { status: 503, code: HMCPErrorCode.AuditUnavailable, message: "Audit trail unavailable", reason: "audit_unavailable", outcome: "failed", headers: { "retry-after": "30" } });
      return;
    }
    const cap = sessions.sessionCapFor(principal);
    if (cap === "total") {
      audit.refuse(req, res, { status: 503, code: TRANSPORT_ERROR, message: "Too many sessions", reason: "too_many_sessions", outcome: "failed", headers: { "retry-after": "5" } });
      return;
    }
    if (cap === "principal") {
      audit.refuse(req, res, {
        status: 429,
        code: TRANSPORT_ERROR,
        message: `Too many sessions for this client (${sessions.maxSessionsPerPrincipal}): close one (DELETE) before opening another`,
        reason: "too_many_sessions_for_principal",
        headers: { "retry-after": "30" },
      });
      return;
    }
    await sessions.open(req, res, principal);
    auditTransportRefusal(req, res, audit);
  };
}

/** A stored event's id, as the session's event store issues them (a decimal sequence number). */
const EVENT_ID = /^[1-9][0-9]{0,15}$/;

/**
 * What the SDK's transport would refuse in a session, refused here first with its reason: an `MCP-Protocol-Version` it
 * does not support (400 `unsupported_protocol_version`), and a GET resuming from a `Last-Event-ID` that is not one of
 * the session's event ids (400 `last_event_id_malformed`) or names no event the store still holds (expired, evicted,
 * another session's: 400 `last_event_id_unknown`).
 * @returns false when the request was refused (the response is sent)
 */
async function sessionRequestAcceptable(req: Request, res: Response, s: LegacySession, audit: RefusalAudit): Promise<boolean> {
  const version = req.headers["mcp-protocol-version"];
  if (typeof version === "string" && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    audit.refuse(req, res, { status: 400, code: TRANSPORT_ERROR, message: "Bad Request: unsupported MCP-Protocol-Version", reason: "unsupported_protocol_version" });
    return false;
  }
  const lastEventId = req.headers["last-event-id"];
  if (req.method === "GET" && s.eventStore && typeof lastEventId === "string" && lastEventId !== "") {
    if (!EVENT_ID.test(lastEventId)) {
      audit.refuse(req, res, { status: 400, code: TRANSPORT_ERROR, message: "Bad Request: malformed Last-Event-ID", reason: "last_event_id_malformed" });
      return false;
    }
    if (!(await s.eventStore.holds(lastEventId))) {
      audit.refuse(req, res, { status: 400, code: TRANSPORT_ERROR, message: "Bad Request: unknown Last-Event-ID (the events after it are no longer stored)", reason: "last_event_id_unknown" });
      return false;
    }
  }
  return true;
}

/** The audit reason of a status the SDK's transport answered on its own (before any handler ran). */
export function transportRefusalReason(status: number): string {
  switch (status) {
    case 400:
      return "transport_bad_request";
    case 403:
      return "transport_forbidden";
    case 404:
      return "session_not_found";
    case 405:
      return "method_not_allowed";
    case 406:
      return "not_acceptable";
    case 409:
      return "stream_conflict";
    case 413:
      return "body_too_large";
    case 415:
      return "unsupported_media_type";
    default:
      return status >= 500 ? "transport_error" : `transport_refused_${status}`;
  }
}

/**
 * One audit record for a request the SDK's transport refused itself: an HTTP 4xx or 5xx from the 2025-era transport
 * comes before any handler ran (the pipeline answers in the JSON-RPC body, with HTTP 200), so nothing else records it.
 */
function auditTransportRefusal(req: Request, res: Response, audit: RefusalAudit): void {
  if (res.statusCode < 400) return;
  audit.refused(req, res, res.statusCode, transportRefusalReason(res.statusCode), res.statusCode >= 500 ? "failed" : "denied");
}

/** Whether `granted` holds every scope in `needed`. */
function coversScopes(granted: readonly string[], needed: ReadonlySet<string>): boolean {
  if (needed.size === 0) return true;
  const have = new Set(granted);
  for (const s of needed) if (!have.has(s)) return false;
  return true;
}
