/**
 * Resource-server verification of JWT access tokens (RFC 9068) against a JWKS, with jose.
 *
 * Checks, in order: the request shape (RFC 6750 §2: header only, one header, size limit), the JWS algorithm against
 * an allow-list (never `none`, never HMAC), the signature with a key from the issuer's JWKS (a remote `jwks_uri` is
 * cached and re-fetched on an unknown `kid`; a JWKS that cannot be fetched fails closed), `typ` (`at+jwt` per
 * RFC 9068 §2.1, or `JWT`/absent; any other type is refused), `iss`, `aud` (this resource, RFC 8707), `exp` (required),
 * `nbf` and `iat` with a clock tolerance, and a client identifier. Then the scope checks of the shared core.
 *
 * Does NOT check token revocation (use introspection for that), DPoP or mTLS sender constraints, or `jti` replay.
 */
import { createLocalJWKSet, createRemoteJWKSet, jwksCache, jwtVerify } from "jose";
import type { JSONWebKeySet, JWTVerifyGetKey, JWTVerifyResult, JWK } from "jose";
import type { BearerAuthenticator, BearerFailureReason } from "./types.js";
import { buildBearerAuthenticator } from "./authenticator-core.js";
import type { CommonBearerOptions, VerifyOutcome } from "./authenticator-core.js";
import { principalFromClaims } from "./principal.js";
import { TokenCache } from "./token-cache.js";
import { refuseUnknownOptions } from "../protocol/config-error.js";
import { isLoopbackHost } from "../util/loopback.js";

/** Default JWS algorithm allow-list: asymmetric only. */
export const DEFAULT_JWT_ALGORITHMS: readonly string[] = Object.freeze(["ES256", "ES384", "RS256", "RS384", "PS256", "EdDSA"]);

/** Where the verification keys come from. */
export type JwksSource =
  | {
      /** The authorization server's `jwks_uri`: https, or http on a loopback host (127.0.0.0/8, [::1], localhost). */
      uri: string | URL;
      /**
       * HTTP timeout per fetch, ms. Default 5000. A request waiting for the key set waits at most this long, then is
       * refused (401 `invalid_token`, audit reason `key_set_timeout`); concurrent requests share one fetch.
       * jose `createRemoteJWKSet` option `timeoutDuration`.
       */
      timeoutMs?: number;
      /**
       * Minimum time between re-fetches triggered by an unknown `kid`, ms. Default 30000. A token signed with a key
       * published since the last fetch is accepted once the cooldown has passed (refused `unknown_key` until then); a
       * stream of tokens with made-up `kid`s costs the authorization server one fetch per cooldown. jose option
       * `cooldownDuration`.
       */
      cooldownMs?: number;
      /**
       * Maximum age of the fetched key set before it is re-fetched, ms. Default 600000 (10 min). Until then, tokens
       * signed with a key in the set verify while the authorization server is down; a key removed from the set is
       * refused once the set is re-fetched (this age, or an unknown `kid` after the cooldown). jose option `cacheMaxAge`.
       */
      cacheMaxAgeMs?: number;
    }
  | {
      /** A local key set (public keys only). */
      keys: JSONWebKeySet;
    };

/** Options of {@link createJwtBearerAuthenticator}. */
export interface JwtBearerOptions extends CommonBearerOptions {
  /** Expected `iss` (exact string match, RFC 9068 §4). */
  issuer: string;
  /** This resource's identifier (RFC 8707); the token's `aud` must contain it. */
  audience: string;
  /** Verification keys. */
  jwks: JwksSource;
  /** JWS algorithm allow-list. Default {@link DEFAULT_JWT_ALGORITHMS}. `none` and `HS*` are refused at construction. */
  algorithms?: readonly string[];
  /** Tolerated clock skew for `exp`/`nbf`/`iat`, seconds. Default 30. */
  clockToleranceSec?: number;
  /**
   * Accept only `typ: at+jwt` / `application/at+jwt`, as RFC 9068 §4 requires. Default false: `JWT` and an absent
   * `typ` are accepted too, because widely deployed authorization servers issue those; any other `typ` is refused
   * either way.
   */
  requireAtJwtTyp?: boolean;
  /** Maximum token age from `iat`, seconds. Default: not checked (RFC 9068 leaves lifetime to `exp`). */
  maxTokenAgeSec?: number;
  /**
   * Verified-token cache, keyed by the token string: LRU with at most `maxEntries` entries (default 10000); an entry
   * lives until the token's `exp` plus the clock tolerance and is dropped when the key that verified it leaves the
   * key set. `false` disables caching.
   */
  cache?: { maxEntries?: number } | false;
}

/** The authenticator returned by {@link createJwtBearerAuthenticator}: a BearerAuthenticator plus cache statistics. */
export interface JwtBearerAuthenticator extends BearerAuthenticator {
  /** Verified-token cache counters since creation. */
  cacheStats(): { hits: number; misses: number; size: number };
}

const KNOWN_OPTIONS = new Set([
  "issuer", "audience", "jwks", "algorithms", "clockToleranceSec", "maxTokenAgeSec", "requireAtJwtTyp", "cache", "resourceMetadata",
  "resourceMetadataUrl", "maxTokenBytes", "requiredScopes", "methodScopes", "realm",
]);
const ACCEPTED_TYP = new Set(["at+jwt", "application/at+jwt", "jwt"]);

function keyFingerprint(jwk: JWK): string {
  return [jwk.kty, jwk.crv, jwk.x, jwk.y, jwk.n, jwk.e, jwk.alg].map((v) => v ?? "").join("|");
}

/** Tracks the key set in force, so cached tokens can be tied to the key that verified them. */
class KeySetView {
  private byKid = new Map<string, string>();
  private version = 0;
  private seenUat: number | undefined;
  constructor(private readonly read: () => { jwks?: JSONWebKeySet; uat?: number }) {}
  private sync(): void {
    const { jwks, uat } = this.read();
    if (uat === this.seenUat) return;
    this.seenUat = uat;
    this.version++;
    this.byKid = new Map();
    for (const k of jwks?.keys ?? []) if (typeof k.kid === "string") this.byKid.set(k.kid, keyFingerprint(k));
  }
  /** A tag identifying the key (by kid) or, without a kid, the whole key set version. */
  tag(kid: string | undefined): string {
    this.sync();
    return kid !== undefined ? `kid:${kid}:${this.byKid.get(kid) ?? "?"}` : `set:${this.version}`;
  }
}

function fail(description: string, reason: BearerFailureReason): { ok: false; description: string; reason: BearerFailureReason } {
  return { ok: false, description, reason };
}

function classify(e: unknown, audience: string): VerifyOutcome {
  const code = (e as { code?: unknown })?.code;
  switch (code) {
    case "ERR_JWT_EXPIRED":
      return fail("The access token has expired", "expired");
    case "ERR_JWT_CLAIM_VALIDATION_FAILED": {
      const claim = (e as { claim?: unknown }).claim;
      switch (claim) {
        case "iss":
          return fail("The access token was issued by an untrusted issuer", "wrong_issuer");
        case "aud":
          // the audience is this resource's public identifier (RFC 8707, in its protected resource metadata)
          return fail(`The access token is not intended for this resource (expected audience ${audience})`, "wrong_audience");
        case "nbf":
          return fail("The access token is not yet valid", "not_yet_valid");
        case "iat":
          return fail("The access token has an invalid issued-at time", "invalid_claims");
        case "exp":
          return fail("The access token has no valid expiry", "invalid_claims");
        default:
          return fail("The access token failed claim validation", "invalid_claims");
      }
    }
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return fail("The access token signature is invalid", "bad_signature");
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return fail("The access token uses a signing algorithm that is not allowed", "alg_not_allowed");
    case "ERR_JWKS_NO_MATCHING_KEY":
    case "ERR_JWKS_MULTIPLE_MATCHING_KEYS":
      return fail("No trusted key matches the access token", "unknown_key");
    case "ERR_JWKS_TIMEOUT":
      // the key set did not answer within jwks.timeoutMs: the wait is bounded, the request refused
      return fail("The access token could not be verified: the authorization server's key set did not answer in time", "key_set_timeout");
    case "ERR_JWS_INVALID":
    case "ERR_JWT_INVALID":
    case "ERR_JOSE_NOT_SUPPORTED":
      return fail("The access token is malformed", "malformed_token");
    default:
      // JWKS fetch failures (network, non-200, bad JSON): fail closed.
      return fail("The access token could not be verified: the authorization server's key set is unavailable", "key_set_unavailable");
  }
}

/**
 * Creates a {@link BearerAuthenticator} that verifies RFC 9068 JWT access tokens with jose.
 *
 * Failures map to RFC 6750 §3.1: no credentials → 401 without error code; query-string or form-body token, two
 * `Authorization` headers, malformed header → 400 `invalid_request`; oversized, invalid, expired, wrong issuer or
 * audience, unknown key, JWKS unavailable → 401 `invalid_token`; missing scope → 403 `insufficient_scope` with
 * `scope`. Every challenge carries `resource_metadata` (RFC 9728 §5.1).
 *
 * @throws TypeError at construction on an unknown option (HMCPConfigError, naming the closest known one), an empty issuer/audience, a non-URL resource, an
 *   algorithm allow-list containing `none` or an HMAC algorithm, or a `jwks.uri` that is not https (loopback excepted)
 */
export function createJwtBearerAuthenticator(options: JwtBearerOptions): JwtBearerAuthenticator {
  refuseUnknownOptions("createJwtBearerAuthenticator", options, KNOWN_OPTIONS);
  const { issuer, audience } = options;
  if (typeof issuer !== "string" || issuer.length === 0) throw new TypeError("createJwtBearerAuthenticator: issuer is required");
  if (typeof audience !== "string" || audience.length === 0) throw new TypeError("createJwtBearerAuthenticator: audience is required");
  const algorithms = [...(options.algorithms ?? DEFAULT_JWT_ALGORITHMS)];
  if (algorithms.length === 0) throw new TypeError("createJwtBearerAuthenticator: algorithms must not be empty");
  for (const a of algorithms) {
    if (a.toLowerCase() === "none" || /^HS/i.test(a)) {
      throw new TypeError(`createJwtBearerAuthenticator: algorithm "${a}" is not allowed (asymmetric algorithms only)`);
    }
  }
  const clockTolerance = options.clockToleranceSec ?? 30;
  if (!Number.isFinite(clockTolerance) || clockTolerance < 0) throw new TypeError("clockToleranceSec must be a non-negative number");

  let getKey: JWTVerifyGetKey;
  let view: KeySetView;
  let isFresh: () => boolean = () => true;
  if ("uri" in options.jwks) {
    const src = options.jwks;
    const url = new URL(String(src.uri));
    if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
      throw new TypeError("createJwtBearerAuthenticator: jwks.uri must be an https: URL (http: is allowed for loopback hosts only)");
    }
    const store: { jwks?: JSONWebKeySet; uat?: number } = {};
    const remote = createRemoteJWKSet(url, {
      timeoutDuration: src.timeoutMs ?? 5000,
      cooldownDuration: src.cooldownMs ?? 30_000,
      cacheMaxAge: src.cacheMaxAgeMs ?? 600_000,
      [jwksCache]: store as Record<string, never>,
    });
    getKey = remote;
    view = new KeySetView(() => store);
    isFresh = () => remote.fresh;
  } else if ("keys" in options.jwks) {
    const set = options.jwks.keys;
    for (const k of set.keys ?? []) {
      if (k.kty === "oct") throw new TypeError("createJwtBearerAuthenticator: symmetric (oct) keys are not allowed in jwks");
      if ("d" in k) throw new TypeError("createJwtBearerAuthenticator: jwks must hold public keys only");
    }
    getKey = createLocalJWKSet(set);
    const fixed = { jwks: set, uat: 0 };
    view = new KeySetView(() => fixed);
  } else {
    throw new TypeError("createJwtBearerAuthenticator: jwks must be { uri } or { keys }");
  }

  const cache = options.cache === false ? undefined : new TokenCache(options.cache?.maxEntries ?? 10_000);
  let hits = 0;
  let misses = 0;

  async function verify(token: string): Promise<VerifyOutcome> {
    const nowSec = Date.now() / 1000;
    if (cache) {
      const hit = cache.get(token);
      if (hit) {
        if (nowSec - clockTolerance < hit.exp && isFresh() && view.tag(hit.kid) === hit.keyTag) {
          hits++;
          return { ok: true, verified: hit.verified };
        }
        cache.delete(token);
      }
    }
    misses++;
    let result: JWTVerifyResult;
    try {
      const verifyOptions: Parameters<typeof jwtVerify>[2] = {
        issuer,
        audience,
        algorithms,
        clockTolerance,
        requiredClaims: ["exp"],
      };
      if (options.maxTokenAgeSec !== undefined) verifyOptions.maxTokenAge = options.maxTokenAgeSec;
      result = await jwtVerify(token, getKey, verifyOptions);
    } catch (e) {
      return classify(e, audience);
    }
    const typ = result.protectedHeader.typ?.toLowerCase();
    const typOk = options.requireAtJwtTyp ? typ === "at+jwt" || typ === "application/at+jwt" : typ === undefined || ACCEPTED_TYP.has(typ);
    if (!typOk) {
      return fail("The token is not an access token (typ)", "wrong_token_type");
    }
    const claims = result.payload as Record<string, unknown>;
    // jose checks `iat` only against maxTokenAge; a token issued in the future (beyond the tolerance) is refused always,
    // as `nbf` would be (RFC 7519 §4.1.6: the time at which the token was issued)
    if (typeof claims["iat"] === "number" && claims["iat"] > nowSec + clockTolerance) {
      return fail("The access token has an invalid issued-at time", "not_yet_valid");
    }
    const principal = principalFromClaims(claims);
    if (!principal) return fail("The access token names no client", "no_client");
    // Cached results are shared by every request carrying the token: freeze them so no consumer can alter another's.
    Object.freeze(principal.scopes);
    if (principal.ignoredScopes) Object.freeze(principal.ignoredScopes);
    const verified = Object.freeze({ token, principal: Object.freeze(principal), claims: Object.freeze(claims) });
    // the cached verification holds while the token would still verify: until `exp`, or until it is maxTokenAgeSec old
    // (jose required `iat` then) when that comes first
    let exp = claims["exp"] as number;
    if (options.maxTokenAgeSec !== undefined) exp = Math.min(exp, (claims["iat"] as number) + options.maxTokenAgeSec);
    if (cache) {
      const kid = result.protectedHeader.kid;
      cache.set(token, { verified, exp, kid, keyTag: view.tag(kid) });
    }
    return { ok: true, verified };
  }

  const core = buildBearerAuthenticator({ ...options, issuer, audience, verify });
  return Object.assign(core, {
    cacheStats: () => ({ hits, misses, size: cache?.size ?? 0 }),
  });
}
