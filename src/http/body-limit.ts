/** The size limit: the endpoint's body parsers. */
import express, { type RequestHandler } from "express";

/** The default of `HttpAppOptions.bodyLimitBytes`: 1 MiB. */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Parses the JSON body, refusing one over `limitBytes` (the error boundary answers it with HTTP 413, -32600) or not
 * JSON (HTTP 400, -32700). Runs before the bearer check, which reads the JSON-RPC method(s) to name a missing scope.
 * A form-encoded body (`application/x-www-form-urlencoded`, same limit) is parsed too, only so the bearer check can
 * refuse an `access_token` in it (RFC 6750 §2.2, which HMCP does not accept: 400 `invalid_request`, reason
 * `token_in_body`); any other form body is refused next as an unsupported media type (415).
 */
export function bodyLimit(limitBytes: number): RequestHandler[] {
  return [express.json({ limit: limitBytes }), express.urlencoded({ limit: limitBytes, extended: false, parameterLimit: 100 })];
}
