/**
 * Building the `WWW-Authenticate: Bearer ...` challenge (RFC 6750 §3, RFC 9728 §5.1) and the failed `BearerCheck`
 * values that carry it. Parameter values are emitted as quoted-strings with `\` and `"` escaped; `error_description`
 * and `scope` are first reduced to the characters RFC 6750 §3 allows (%x20-21 / %x23-5B / %x5D-7E), so no value can
 * break out of the header or inject a parameter.
 */
import type { BearerCheck, BearerFailureReason } from "./types.js";

/** Parameters of a Bearer challenge. */
export interface BearerChallenge {
  /** RFC 9728 §5.1: absolute URL of the protected resource metadata document. */
  resourceMetadata?: string;
  /** RFC 6750 §3 `realm`. */
  realm?: string;
  /** RFC 6750 §3.1 error code. */
  error?: "invalid_request" | "invalid_token" | "insufficient_scope";
  /** RFC 6750 §3 human-readable description (fixed text, never PHI). */
  errorDescription?: string;
  /** RFC 6750 §3 space-separated scopes needed. */
  scope?: string;
}

const ALLOWED = /[^\x20\x21\x23-\x5B\x5D-\x7E]/g;

function quote(value: string): string {
  // Strip controls (CR/LF can never appear in a header), then escape per RFC 9110 §5.6.4 quoted-string.
  let clean = "";
  for (const ch of value) {
    const c = ch.codePointAt(0) ?? 0;
    if (c >= 0x20 && c !== 0x7f) clean += ch;
  }
  return `"${clean.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** Formats a Bearer challenge, e.g. `Bearer resource_metadata="https://x/.well-known/...", error="invalid_token"`. */
export function formatBearerChallenge(c: BearerChallenge): string {
  const parts: string[] = [];
  if (c.realm !== undefined) parts.push(`realm=${quote(c.realm)}`);
  if (c.resourceMetadata !== undefined) parts.push(`resource_metadata=${quote(c.resourceMetadata)}`);
  if (c.error !== undefined) parts.push(`error=${quote(c.error)}`);
  if (c.errorDescription !== undefined) parts.push(`error_description=${quote(c.errorDescription.replace(ALLOWED, ""))}`);
  if (c.scope !== undefined && c.scope.length > 0) parts.push(`scope=${quote(c.scope.replace(ALLOWED, ""))}`);
  return parts.length ? `Bearer ${parts.join(", ")}` : "Bearer";
}

/** Context shared by every failure of one authenticator. */
export interface ChallengeContext {
  resourceMetadataUrl?: string;
  realm?: string;
  /** Scopes to advertise on a 401 (what a client should request), space-separated. */
  defaultScope?: string;
}

/** Builds a failed {@link BearerCheck} with its `WWW-Authenticate` header value. */
export function bearerFailure(
  ctx: ChallengeContext,
  status: 400 | 401 | 403,
  error: "invalid_request" | "invalid_token" | "insufficient_scope" | undefined,
  description: string,
  scope?: string,
  reason?: BearerFailureReason,
): Extract<BearerCheck, { ok: false }> {
  const s = scope ?? ctx.defaultScope;
  const challenge: BearerChallenge = { errorDescription: description };
  if (ctx.realm !== undefined) challenge.realm = ctx.realm;
  if (ctx.resourceMetadataUrl !== undefined) challenge.resourceMetadata = ctx.resourceMetadataUrl;
  if (error !== undefined) challenge.error = error;
  else delete challenge.errorDescription; // RFC 6750 §3.1: no error information when no credentials were sent.
  if (s !== undefined && s.length > 0) challenge.scope = s;
  const out: Extract<BearerCheck, { ok: false }> = { ok: false, status, description, wwwAuthenticate: formatBearerChallenge(challenge) };
  if (error !== undefined) out.error = error;
  if (s !== undefined && s.length > 0) out.scope = s;
  if (ctx.resourceMetadataUrl !== undefined) out.resourceMetadata = ctx.resourceMetadataUrl;
  if (reason !== undefined) out.reason = reason;
  return out;
}
