/** The error boundary: last in the app. */
import type { ErrorRequestHandler } from "express";
import { INTERNAL_ERROR } from "../protocol/index.js";
import { INVALID_REQUEST, PARSE_ERROR, TRANSPORT_ERROR } from "../protocol/errors.js";
import type { OperationalLogger } from "../server/index.js";
import type { Refusal, RefusalAudit } from "./refusal-audit.js";

/** The body parser's errors (body-parser's `type`) and how each is refused. */
const BODY_ERRORS: Record<string, Omit<Refusal, "status">> = {
  "entity.too.large": { code: INVALID_REQUEST, message: "Request body too large", reason: "body_too_large" },
  "parameters.too.many": { code: INVALID_REQUEST, message: "Request body too large", reason: "body_too_large" },
  "entity.parse.failed": { code: PARSE_ERROR, message: "Parse error", reason: "parse_error" },
  "charset.unsupported": { code: TRANSPORT_ERROR, message: "Unsupported Media Type: unsupported charset", reason: "unsupported_charset" },
  "encoding.unsupported": { code: TRANSPORT_ERROR, message: "Unsupported Media Type: unsupported Content-Encoding", reason: "unsupported_content_encoding" },
  "request.aborted": { code: INVALID_REQUEST, message: "Request aborted", reason: "request_aborted" },
  "request.size.invalid": { code: INVALID_REQUEST, message: "Invalid request: the body's length does not match Content-Length", reason: "invalid_content_length" },
};

/**
 * Body-parser errors become 4xx JSON-RPC errors (413 -32600 too large, 400 -32700 parse error, 415 -32000 an
 * unsupported charset or Content-Encoding, other 4xx -32600); anything else a fixed 500 -32603 "Internal error" (no
 * message echoed), logged. Each is refused through {@link RefusalAudit.refuse}: one audit record.
 */
export function errorBoundary(audit: RefusalAudit, logger: OperationalLogger, agent: string): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const e = error as { type?: string; status?: number };
    if (res.headersSent) {
      logger.error("request failed after the response started", { agent, error });
      res.end();
      return;
    }
    const status = typeof e?.status === "number" && e.status >= 400 && e.status < 500 ? e.status : undefined;
    const known = typeof e?.type === "string" && Object.hasOwn(BODY_ERRORS, e.type) ? BODY_ERRORS[e.type] : undefined;
    if (status !== undefined) {
      audit.refuse(req, res, { status, ...(known ?? { code: INVALID_REQUEST, message: "Invalid request", reason: "invalid_request" }) });
      return;
    }
    logger.error("request failed", { agent, error });
    audit.refuse(req, res, { status: 500, code: INTERNAL_ERROR, message: "Internal error", reason: "internal_error", outcome: "failed" });
  };
}
