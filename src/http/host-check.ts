/** The Host check (DNS rebinding protection): the SDK's Host header validation, its refusals audited. */
import type { RequestHandler } from "express";
import { hostHeaderValidation } from "@modelcontextprotocol/express";
import type { RefusalAudit } from "./refusal-audit.js";

/** The default of `HttpAppOptions.allowedHosts`. */
export const DEFAULT_ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"];

/** Refuses a request whose Host header names none of `allowedHosts` (the SDK's answer), with one audit record. */
export function hostCheck(allowedHosts: string[], audit: RefusalAudit): RequestHandler {
  const check = hostHeaderValidation(allowedHosts);
  return (req, res, next) => {
    let passed = false;
    check(req, res, () => {
      passed = true;
      next();
    });
    if (!passed && res.headersSent) audit.refused(req, res, res.statusCode, "host_not_allowed");
  };
}
