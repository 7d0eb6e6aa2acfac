/** The error boundary: last in the app. */
import type { ErrorRequestHandler } from "express";
import { INTERNAL_ERROR } from "../protocol/index.js";
import { INVALID_REQUEST, PARSE_ERROR } from "../protocol/errors.js";
import type { OperationalLogger } from "../server/index.js";
import { jsonRpcError } from "./json-rpc.js";
import type { RefusalAudit } from "./refusal-audit.js";

/**
 * Body-parser errors become 4xx JSON-RPC errors (413 -32600 too large, 400 -32700 parse error, other 4xx -32600);
 * anything else a fixed 500 -32603 "Internal error" (no message echoed), logged. Each is audited as a refusal.
 */
export function errorBoundary(audit: RefusalAudit, logger: OperationalLogger, agent: string): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const e = error as { type?: string; status?: number };
    if (res.headersSent) {
      logger.error("request failed after the response started", { agent, error });
      res.end();
      return;
    }
    if (e?.type === "entity.too.large") {
      audit.refused(req, res, 413, "body_too_large");
      res.status(413).json(jsonRpcError(INVALID_REQUEST, "Request body too large"));
    } else if (e?.type === "entity.parse.failed") {
      audit.refused(req, res, 400, "parse_error");
      res.status(400).json(jsonRpcError(PARSE_ERROR, "Parse error"));
    } else if (typeof e?.status === "number" && e.status >= 400 && e.status < 500) {
      audit.refused(req, res, e.status, "invalid_request");
      res.status(e.status).json(jsonRpcError(INVALID_REQUEST, "Invalid request"));
    } else {
      logger.error("request failed", { agent, error });
      audit.refused(req, res, 500, "internal_error", "failed");
      res.status(500).json(jsonRpcError(INTERNAL_ERROR, "Internal error"));
    }
  };
}
