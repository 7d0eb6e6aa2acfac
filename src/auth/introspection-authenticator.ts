/**
 * Resource-server verification of opaque access tokens by OAuth 2.0 Token Introspection (RFC 7662), built on
 * oauth4webapi. The resource server authenticates to the introspection endpoint as a client (private_key_jwt or
 * client_secret_basic) and accepts a token only when the answer is `active: true`, names this resource in `aud`
 * (RFC 8707; required unless `requireAudience: false`), carries the expected `iss` if any, and has not expired.
 *
 * Positive answers are cached per token for `cacheTtlSec` (never beyond the token's `exp`), so a revoked token stays
 * usable for at most that long. An introspection endpoint that cannot be reached fails closed (401 `invalid_token`).
 */
import * as oauth from "oauth4webapi";
import type { BearerAuthenticator } from "./types.js";
import { buildBearerAuthenticator } from "./authenticator-core.js";
import type { CommonBearerOptions, VerifyOutcome } from "./authenticator-core.js";
import { principalFromClaims } from "./principal.js";
import { TokenCache } from "./token-cache.js";
import { buildClientAuth, discoverAuthorizationServer } from "./token-provider.js";
import type { ClientAuthOptions } from "./token-provider.js";
import { refuseUnknownOptions } from "../protocol/config-error.js";

/** Options of {@link createIntrospectionAuthenticator}. */
export interface IntrospectionOptions extends CommonBearerOptions {
  /** Issuer identifier of the authorization server (discovery, RFC 8414 / OpenID; and the expected `iss`). */
  issuer: string;
  /** Authorization server metadata with `introspection_endpoint`; skips discovery when given. */
  authorizationServer?: oauth.AuthorizationServer;
  /** This resource's identifier (RFC 8707). */
  audience: string;
  /** The resource server's own client id at the authorization server. */
  clientId: string;
  /** How the resource server authenticates to the introspection endpoint. */
  auth: ClientAuthOptions;
  /** Refuse tokens whose introspection answer has no `aud`. Default true. */
  requireAudience?: boolean;
  /** How long a positive answer is reused, seconds. Default 30; 0 disables caching. */
  cacheTtlSec?: number;
  /** Most cached answers. Default 10000. */
  cacheMaxEntries?: number;
  /** Timeout per introspection request, ms. Default 5000. */
  timeoutMs?: number;
  /** Allow http: URLs (loopback tests and the demo only). Default false. */
  allowInsecureRequests?: boolean;
}

const CLOCK_TOLERANCE_SEC = 30;
const KNOWN_OPTIONS = new Set([
  "issuer", "authorizationServer", "audience", "clientId", "auth", "requireAudience", "cacheTtlSec", "cacheMaxEntries",
  "timeoutMs", "allowInsecureRequests", "resourceMetadata", "resourceMetadataUrl", "maxTokenBytes", "requiredScopes",
  "methodScopes", "realm",
]);

/**
 * Creates a {@link BearerAuthenticator} that checks opaque tokens by RFC 7662 introspection.
 * Failure statuses and challenges are those of `createJwtBearerAuthenticator`.
 * @throws TypeError at construction on an unknown option (HMCPConfigError, naming the closest known one) or a missing issuer, audience or client id
 */
export function createIntrospectionAuthenticator(options: IntrospectionOptions): BearerAuthenticator {
  refuseUnknownOptions("createIntrospectionAuthenticator", options, KNOWN_OPTIONS);
  const { issuer, audience, clientId } = options;
  if (!issuer || !audience || !clientId) throw new TypeError("createIntrospectionAuthenticator: issuer, audience and clientId are required");
  const ttl = options.cacheTtlSec ?? 30;
  const cache = ttl > 0 ? new TokenCache(options.cacheMaxEntries ?? 10_000) : undefined;
  const client: oauth.Client = { client_id: clientId };
  const http = () => {
    const o: { signal: () => AbortSignal; [oauth.allowInsecureRequests]?: boolean } = { signal: () => AbortSignal.timeout(options.timeoutMs ?? 5000) };
    if (options.allowInsecureRequests) o[oauth.allowInsecureRequests] = true;
    return o;
  };
  let as: Promise<oauth.AuthorizationServer> | undefined = options.authorizationServer ? Promise.resolve(options.authorizationServer) : undefined;
  let clientAuth: Promise<oauth.ClientAuth> | undefined;

  async function verify(token: string): Promise<VerifyOutcome> {
    const nowSec = Date.now() / 1000;
    const hit = cache?.get(token);
    if (hit && nowSec < hit.exp) return { ok: true, verified: hit.verified };
    if (hit) cache?.delete(token);

    let answer: oauth.IntrospectionResponse;
    try {
      as ??= discoverAuthorizationServer(issuer, "auto", http).catch((e: unknown) => {
        as = undefined;
        throw e;
      });
      const server = await as;
      clientAuth ??= buildClientAuth(options.auth);
      const res = await oauth.introspectionRequest(server, client, await clientAuth, token, http());
      answer = await oauth.processIntrospectionResponse(server, client, res);
    } catch {
      return { ok: false, description: "The access token could not be verified: the introspection endpoint is unavailable", reason: "introspection_unavailable" };
    }
    if (answer.active !== true) return { ok: false, description: "The access token is not active", reason: "inactive" };
    if (typeof answer.exp === "number" && answer.exp <= nowSec - CLOCK_TOLERANCE_SEC) return { ok: false, description: "The access token has expired", reason: "expired" };
    if (typeof answer.nbf === "number" && answer.nbf > nowSec + CLOCK_TOLERANCE_SEC) return { ok: false, description: "The access token is not yet valid", reason: "not_yet_valid" };
    if (answer.iss !== undefined && answer.iss !== issuer) return { ok: false, description: "The access token was issued by an untrusted issuer", reason: "wrong_issuer" };
    const aud = answer.aud === undefined ? [] : Array.isArray(answer.aud) ? answer.aud : [answer.aud];
    if (aud.length === 0 ? options.requireAudience !== false : !aud.includes(audience)) {
      return { ok: false, description: `The access token is not intended for this resource (expected audience ${audience})`, reason: "wrong_audience" };
    }
    if (typeof answer.token_type === "string" && answer.token_type.toLowerCase() !== "bearer") {
      return { ok: false, description: "The access token is not a bearer token", reason: "wrong_token_type" };
    }
    const claims = { ...answer } as Record<string, unknown>;
    const principal = principalFromClaims(claims);
    if (!principal) return { ok: false, description: "The access token names no client", reason: "no_client" };
    Object.freeze(principal.scopes);
    if (principal.ignoredScopes) Object.freeze(principal.ignoredScopes);
    const verified = Object.freeze({ token, principal: Object.freeze(principal), claims: Object.freeze(claims) });
    if (cache) {
      const until = Math.min(nowSec + ttl, typeof answer.exp === "number" ? answer.exp : Infinity);
      cache.set(token, { verified, exp: until, kid: undefined, keyTag: "" });
    }
    return { ok: true, verified };
  }

  return buildBearerAuthenticator({ ...options, issuer, audience, verify });
}
