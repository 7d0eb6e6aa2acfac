/**
 * The request checks at the edge, after the bearer check and before either era's transport: the HTTP method, `Accept`,
 * `Content-Type` and the JSON-RPC shape of the body. What they refuse would otherwise be refused by the SDK's
 * transports, unaudited on the 2025 era and with other codes on each era; here it is refused the same way on both eras
 * (MCP 2025-11-25 and 2026-07-28, "Transports: Streamable HTTP"), with one audit record (refusal-audit.ts).
 */
import type { Request, RequestHandler } from "express";
import { isJsonContentType, isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResponse } from "@modelcontextprotocol/server";
import { INVALID_REQUEST, TRANSPORT_ERROR } from "../protocol/errors.js";
import type { RefusalAudit } from "./refusal-audit.js";
import { echoableId } from "./json-rpc.js";

/** The HTTP methods the endpoint serves: POST (messages), GET (a 2025-era session's SSE stream) and DELETE (ending it). */
const ALLOWED_METHODS = new Set(["GET", "POST", "DELETE"]);

/**
 * Refuses, in order: another HTTP method (405, `Allow: GET, POST, DELETE`); a POST whose `Accept` does not list both
 * `application/json` and `text/event-stream`, or a GET whose `Accept` does not list `text/event-stream` (406); a POST
 * whose `Content-Type` is not `application/json` (415); a JSON-RPC batch (400, -32600 `batch_not_supported`: MCP removed
 * batching in 2025-06-18, 2026-07-28 has none); a body that is JSON but not one JSON-RPC 2.0 message as MCP defines it
 * (`jsonrpc` other than "2.0", no `method` and no `result`/`error`, an `id` that is not a string or an integer, `params`
 * that is not an object, unknown members: 400, -32600 `invalid_request`).
 */
export function requestChecks(audit: RefusalAudit): RequestHandler {
  return (req, res, next) => {
    if (!ALLOWED_METHODS.has(req.method)) {
      audit.refuse(req, res, { status: 405, code: TRANSPORT_ERROR, message: "Method not allowed", reason: "method_not_allowed", headers: { allow: "GET, POST, DELETE" } });
      return;
    }
    if (req.method === "DELETE") return next();
    const accepted = acceptedTypes(req);
    if (req.method === "GET") {
      if (!accepted.has("text/event-stream")) {
        audit.refuse(req, res, { status: 406, code: TRANSPORT_ERROR, message: "Not Acceptable: the client must accept text/event-stream", reason: "not_acceptable" });
        return;
      }
      return next();
    }
    if (!accepted.has("application/json") || !accepted.has("text/event-stream")) {
      audit.refuse(req, res, { status: 406, code: TRANSPORT_ERROR, message: "Not Acceptable: the client must accept both application/json and text/event-stream", reason: "not_acceptable" });
      return;
    }
    if (!isJsonContentType(req.headers["content-type"])) {
      audit.refuse(req, res, { status: 415, code: TRANSPORT_ERROR, message: "Unsupported Media Type: Content-Type must be application/json", reason: "unsupported_media_type" });
      return;
    }
    const body: unknown = req.body;
    if (Array.isArray(body)) {
      audit.refuse(req, res, { status: 400, code: INVALID_REQUEST, message: "Invalid Request: JSON-RPC batches are not supported", reason: "batch_not_supported" });
      return;
    }
    if (!isJSONRPCRequest(body) && !isJSONRPCNotification(body) && !isJSONRPCResponse(body)) {
      audit.refuse(req, res, { status: 400, code: INVALID_REQUEST, message: "Invalid Request: the body is not a JSON-RPC 2.0 message", reason: "invalid_request", id: echoableId(body) });
      return;
    }
    next();
  };
}

/** The media types an `Accept` header lists (their essence, lower case; parameters and weights set aside). */
function acceptedTypes(req: Request): Set<string> {
  const header = req.headers.accept;
  const out = new Set<string>();
  if (header === undefined) return out;
  for (const range of header.split(",")) {
    const essence = range.split(";", 1)[0]!.trim().toLowerCase();
    if (essence !== "") out.add(essence);
  }
  return out;
}
