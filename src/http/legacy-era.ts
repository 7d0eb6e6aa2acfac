/** The 2025 era (MCP 2025-11-25 and older): a request in a session, or an initialize request opening one. */
import type { Request, Response } from "express";
import { isInitializeRequest } from "@modelcontextprotocol/server";
import { HMCPErrorCode } from "../protocol/index.js";
import { SESSION_NOT_FOUND, TRANSPORT_ERROR } from "../protocol/errors.js";
import type { AuditSink } from "../audit/record.js";
import { auditSinkUnavailable } from "../audit/admission.js";
import { principalOf } from "./bearer-check.js";
import type { EraHandler } from "./era-routing.js";
import { jsonRpcError } from "./json-rpc.js";
import type { LegacySessions } from "./legacy-sessions.js";
import type { RefusalAudit } from "./refusal-audit.js";

/**
 * Serves the 2025 era through the session registry. A request naming a session its caller may not use gets 404
 * (-32001), as does a GET or DELETE whose token lacks a scope the session was opened with; a request without a session
 * that is not initialize gets 400 (-32000). An initialize request opens a session unless the audit sink cannot take
 * records (503, AuditUnavailable) or a cap is reached (503 `maxSessions`, 429 `maxSessionsPerPrincipal`).
 */
export function legacyEra(sessions: LegacySessions, audit: RefusalAudit, auditSink: AuditSink | undefined): EraHandler {
  return async (req: Request, res: Response) => {
    const sid = req.headers["mcp-session-id"];
    const principal = principalOf(req);
    if (typeof sid === "string") {
      const s = sessions.find(sid, principal);
      if (!s) {
        audit.refused(req, res, 404, "session_not_found");
        res.status(404).json(jsonRpcError(SESSION_NOT_FOUND, "Session not found"));
        return;
      }
      // GET (the session's SSE stream: replayed events carry results of requests the opener's token was allowed)
      // and DELETE need a token with every scope the session was opened with; a POST's methods are checked one by one.
      if (req.method !== "POST" && !coversScopes(principal?.scopes ?? [], s.scopes)) {
        audit.refused(req, res, 404, "session_scopes_not_covered");
        res.status(404).json(jsonRpcError(SESSION_NOT_FOUND, "Session not found"));
        return;
      }
      s.lastSeen = Date.now();
      await s.transport.handleRequest(req, res, req.body);
      return;
    }
    if (req.method !== "POST" || !isInitializeRequest(req.body)) {
      audit.refused(req, res, 400, "no_session");
      res.status(400).json(jsonRpcError(TRANSPORT_ERROR, "Bad Request: no valid session id (send initialize first)"));
      return;
    }
    // Fail closed: no new session while the audit sink cannot take records (failed before, or its own health check).
    if (auditSink !== undefined && auditSinkUnavailable(auditSink)) {
      res.status(503).set("retry-after", "30").json(jsonRpcError(HMCPErrorCode.AuditUnavailable, "Audit trail unavailable"));
      return;
    }
    const cap = sessions.sessionCapFor(principal);
    if (cap === "total") {
      audit.refused(req, res, 503, "too_many_sessions", "failed");
      res.status(503).set("retry-after", "5").json(jsonRpcError(TRANSPORT_ERROR, "Too many sessions"));
      return;
    }
    if (cap === "principal") {
      audit.refused(req, res, 429, "too_many_sessions_for_principal");
      res
        .status(429)
        .set("retry-after", "30")
        .json(jsonRpcError(TRANSPORT_ERROR, `Too many sessions for this client (${sessions.maxSessionsPerPrincipal}): close one (DELETE) before opening another`));
      return;
    }
    await sessions.open(req, res, principal);
  };
}

/** Whether `granted` holds every scope in `needed`. */
function coversScopes(granted: readonly string[], needed: ReadonlySet<string>): boolean {
  if (needed.size === 0) return true;
  const have = new Set(granted);
  for (const s of needed) if (!have.has(s)) return false;
  return true;
}
