/** The shutdown gate: once `HttpApp.close` is called, nothing new enters. */
import type { RequestHandler } from "express";
import { TRANSPORT_ERROR } from "../protocol/errors.js";
import { jsonRpcError } from "./json-rpc.js";
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
      audit.refused(req, res, 503, "shutting_down", "failed");
      res.status(503).set("retry-after", "5").json(jsonRpcError(TRANSPORT_ERROR, "Server shutting down"));
      return;
    }
    next();
  };
}

/** Whether a JSON-RPC body holds a request (a message with a method and an id), alone or in a batch. */
function carriesRequest(body: unknown): boolean {
  const isRequest = (m: unknown) => typeof m === "object" && m !== null && typeof (m as { method?: unknown }).method === "string" && "id" in m;
  return Array.isArray(body) ? body.some(isRequest) : isRequest(body);
}
