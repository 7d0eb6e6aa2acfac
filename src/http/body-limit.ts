/** The size limit: the endpoint's JSON body parser. */
import express, { type RequestHandler } from "express";

/** The default of `HttpAppOptions.bodyLimitBytes`: 1 MiB. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Parses the JSON body, refusing one over `limitBytes` (the error boundary answers it with HTTP 413, -32600) or not
 * JSON (HTTP 400, -32700). Runs before the bearer check, which reads the JSON-RPC method(s) to name a missing scope.
 */
export function bodyLimit(limitBytes: number): RequestHandler {
  return express.json({ limit: limitBytes });
}
