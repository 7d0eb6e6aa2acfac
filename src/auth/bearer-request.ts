/**
 * Extracting the bearer token from one HTTP request (RFC 6750 §2), framework-free.
 * Only the `Authorization` header method (§2.1) is accepted: a token in the query string (§2.3) or in a
 * form-encoded body (§2.2) is refused with 400 `invalid_request`, as is more than one `Authorization` header.
 */

import type { BearerFailureReason } from "./types.js";

/** Result of {@link extractBearerToken}. */
export type ExtractedToken =
  | { kind: "token"; token: string }
  /** No credentials at all (RFC 6750 §3.1: answer 401 with no error code). */
  | { kind: "none" }
  | { kind: "error"; status: 400 | 401; error: "invalid_request" | "invalid_token"; description: string; reason: BearerFailureReason };

// RFC 6750 §2.1 b64token.
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

function queryHasAccessToken(url: string): boolean {
  const q = url.indexOf("?");
  if (q === -1) return false;
  const end = url.indexOf("#", q);
  const params = new URLSearchParams(url.slice(q + 1, end === -1 ? undefined : end));
  return params.has("access_token");
}

function formBodyHasAccessToken(contentType: string | undefined, body: unknown): boolean {
  if (!contentType) return false;
  const mediaType = contentType.split(";")[0]?.trim().toLowerCase();
  if (mediaType !== "application/x-www-form-urlencoded") return false;
  if (typeof body === "string") return new URLSearchParams(body).has("access_token");
  return typeof body === "object" && body !== null && Object.prototype.hasOwnProperty.call(body, "access_token");
}

/**
 * Finds the bearer token of a request.
 * @param request.authorization - every `Authorization` header value received (Node: `req.headersDistinct.authorization`;
 *   `req.headers.authorization` silently drops duplicates)
 * @param request.url - path and query of the request
 * @param maxTokenBytes - longer tokens are refused (401 `invalid_token`) without any verification attempt
 */
export function extractBearerToken(
  request: { authorization: readonly string[]; url: string; contentType?: string; body?: unknown },
  maxTokenBytes: number,
): ExtractedToken {
  if (queryHasAccessToken(request.url)) {
    return { kind: "error", status: 400, error: "invalid_request", description: "Access tokens in the URL query are not accepted; send an Authorization: Bearer header", reason: "token_in_query" };
  }
  if (formBodyHasAccessToken(request.contentType, request.body)) {
    return { kind: "error", status: 400, error: "invalid_request", description: "Access tokens in a form body are not accepted; send an Authorization: Bearer header", reason: "token_in_body" };
  }
  const headers = request.authorization;
  if (headers.length === 0) return { kind: "none" };
  if (headers.length > 1) {
    return { kind: "error", status: 400, error: "invalid_request", description: "More than one Authorization header", reason: "multiple_authorization_headers" };
  }
  const value = (headers[0] ?? "").trim();
  const sp = value.indexOf(" ");
  const scheme = sp === -1 ? value : value.slice(0, sp);
  // RFC 9110 §11.1: the auth scheme is case-insensitive, so "bearer" is accepted.
  if (scheme.toLowerCase() !== "bearer") return { kind: "none" };
  const token = sp === -1 ? "" : value.slice(sp + 1).trim();
  if (token.length === 0) {
    return { kind: "error", status: 400, error: "invalid_request", description: "Authorization header has no bearer token", reason: "empty_token" };
  }
  if (Buffer.byteLength(token, "utf8") > maxTokenBytes) {
    return { kind: "error", status: 401, error: "invalid_token", description: "Access token too large", reason: "token_too_large" };
  }
  if (!B64TOKEN.test(token)) {
    return { kind: "error", status: 400, error: "invalid_request", description: "Malformed bearer token", reason: "malformed_authorization" };
  }
  return { kind: "token", token };
}
