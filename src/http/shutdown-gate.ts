/** The shutdown gate: once `HttpApp.close` is called, nothing new enters. */
import type { RequestHandler } from "express";
import { TRANSPORT_ERROR } from "../protocol/errors.js";
import type { RefusalAudit } from "./refusal-audit.js";

/**
 * While `closing()`: no new session and no new JSON-RPC request (HTTP 503, `Retry-After: 5`, audited); what open
 * sessions send for requests already running (responses to the server's own requests, notifications, their SSE
 * streams) still passes.
 */
export function shutdownGate(closing: () => boolean, audit: RefusalAudit): RequestHandler {
  return (req, res, next) => {
    const sid = req.headers["mcp-session-id"];
    if (closing() && (typeof sid !== "string" || (req.method === "POST" && carriesRequest(req.body)))) {
      audit.refuse(req, res, { status: 503, code: TRANSPORT_ERROR, message: "Server shutting down", reason: "shutting_down", outcome: "failed", headers: { "retry-after": "5" } });
      return;
    }
    next();
  };
}

/** Whether a JSON-RPC body is a request (a message with a method and an id; batches are refused before this gate). */
function carriesRequest(body: unknown): boolean {
  return typeof body === "object" && body !== null && typeof (body as { method?: unknown }).method === "string" && "id" in body;
}
