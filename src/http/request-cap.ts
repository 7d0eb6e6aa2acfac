/** The cap on JSON-RPC requests in progress at once (one app, both eras). */
import type { RequestHandler } from "express";
import { TRANSPORT_ERROR } from "../protocol/errors.js";
import type { RefusalAudit } from "./refusal-audit.js";

/**
 * Counts the JSON-RPC requests (POST bodies with a method and an id) being served, from the gate until their response
 * ends (answered, or the client gone). Over `max`, a request is refused with HTTP 503, `Retry-After: 1`, JSON-RPC
 * `-32000` and one audit record (`reason: "too_many_requests"`, outcome `failed`): the agent is full, not the caller at
 * fault. Responses, notifications and the SSE streams a session holds open are not counted (sessions and
 * `subscriptions/listen` streams have their own caps: `maxSessions`, `maxSessionsPerPrincipal`).
 */
export function requestCap(max: number, audit: RefusalAudit): RequestHandler {
  let running = 0;
  return (req, res, next) => {
    const body = req.body as { method?: unknown; id?: unknown } | undefined;
    if (req.method !== "POST" || typeof body?.method !== "string" || !("id" in (body as object))) {
      next();
      return;
    }
    if (running >= max) {
      audit.refuse(req, res, { status: 503, code: TRANSPORT_ERROR, message: `Too many requests in progress (${max})`, reason: "too_many_requests", outcome: "failed", headers: { "retry-after": "1" } });
      return;
    }
    running++;
    res.once("close", () => running--);
    next();
  };
}
