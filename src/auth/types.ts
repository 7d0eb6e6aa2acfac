/**
 * The authorization seams the server and the HTTP layer call; src/auth implements them.
 */
import type { Principal } from "../protocol/index.js";

/** A verified access token (RFC 9068 JWT, or an RFC 7662 introspection answer). */
export interface VerifiedToken {
  token: string;
  principal: Principal;
  /** The token's claims (JWT payload or introspection response). Never logged. */
  claims: Record<string, unknown>;
}

/** Outcome of the HTTP bearer check (RFC 6750 §3, RFC 9728 §5.1). */
export type BearerCheck =
  | { ok: true; verified: VerifiedToken }
  | {
      ok: false;
      /** 400 invalid_request, 401 invalid_token / no token, 403 insufficient_scope. */
      status: 400 | 401 | 403;
      /** RFC 6750 error code; absent when the request carried no credentials at all (RFC 6750 §3.1). */
      error?: "invalid_request" | "invalid_token" | "insufficient_scope";
      /** Fixed, PHI-free description. */
      description: string;
      /** Space-separated scopes that would have allowed the request. */
      scope?: string;
      /** The RFC 9728 protected resource metadata URL the challenge names, if any (also sent in the JSON body). */
      resourceMetadata?: string;
      /** Complete `WWW-Authenticate` header value to send. */
      wwwAuthenticate: string;
      /** Machine-readable cause for the audit record (never sent to the client, never PHI). */
      reason?: BearerFailureReason;
      /** The token's principal when the token verified but lacks a scope (403): who was refused, for the audit record. */
      principal?: Principal;
    };

/** Why a bearer check failed: a stable code for audit records and metrics. */
export type BearerFailureReason =
  | "no_credentials"
  | "token_in_query"
  | "token_in_body"
  | "multiple_authorization_headers"
  | "empty_token"
  | "malformed_authorization"
  | "token_too_large"
  | "expired"
  | "not_yet_valid"
  | "wrong_issuer"
  | "wrong_audience"
  | "invalid_claims"
  | "bad_signature"
  | "alg_not_allowed"
  | "unknown_key"
  | "malformed_token"
  | "wrong_token_type"
  | "no_client"
  | "key_set_unavailable"
  | "key_set_timeout"
  | "inactive"
  | "introspection_unavailable"
  | "insufficient_scope";

/** What the HTTP layer needs from the resource-server side of auth. Framework-free (no express types). */
export interface BearerAuthenticator {
  /**
   * Checks the credentials of one HTTP request.
   * @param request.authorization - every `Authorization` header value received (more than one is an error)
   * @param request.url - the request URL path and query (a token in the query string is refused)
   */
  check(request: {
    authorization: string[];
    url: string;
    contentType?: string;
    body?: unknown;
    /**
     * The server's own scope requirement per method (any-of), e.g. a sampling handler registered with its own
     * `requiredScopes` (the HTTP app passes the session's server). It holds in addition to an entry the
     * authenticator's `methodScopes` has for the method (a token must satisfy both; a 403 names the scopes of each
     * list it fails), and instead of the `DEFAULT_METHOD_SCOPES` default. Returning `undefined`: the authenticator's
     * table (with its defaults) alone.
     */
    methodScopes?: (method: string) => readonly string[] | undefined;
  }): Promise<BearerCheck>;
  /** RFC 9728 protected resource metadata document. */
  resourceMetadata(): Record<string, unknown>;
  /** Path at which the metadata is served, e.g. "/.well-known/oauth-protected-resource/mcp". */
  resourceMetadataPath: string;
}
