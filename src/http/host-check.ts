/** The Host check (DNS rebinding protection): the SDK's Host header validation, its refusals explained and audited. */
import type { RequestHandler } from "express";
import { validateHostHeader } from "@modelcontextprotocol/server";
import { TRANSPORT_ERROR } from "../protocol/errors.js";
import { jsonRpcError } from "./json-rpc.js";
import type { RefusalAudit } from "./refusal-audit.js";

/** The default of `HttpAppOptions.allowedHosts`. */
export const DEFAULT_ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"];

/**
 * Refuses a request whose Host header names none of `allowedHosts` (the SDK's `validateHostHeader` decides): 403, the
 * JSON-RPC error -32000 with the SDK's message, what to change (the allowed host names are not listed to the caller),
 * and `data.reason: "host_not_allowed"`; one audit record.
 */
export function hostCheck(allowedHosts: string[], audit: RefusalAudit): RequestHandler {
  return (req, res, next) => {
    const result = validateHostHeader(req.headers.host, allowedHosts);
    if (result.ok) return next();
    const hint = "this server answers only the host names of its allowedHosts setting (createHttpApp's allowedHosts, a DNS rebinding protection)";
    res.status(403).json(jsonRpcError(TRANSPORT_ERROR, `${result.message}: ${hint}`, "host_not_allowed"));
    audit.refused(req, res, 403, "host_not_allowed");
  };
}
