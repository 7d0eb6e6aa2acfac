/**
 * Client side: OAuth 2.0 `client_credentials` access tokens for HMCPClient, built on oauth4webapi.
 *
 * - Without an `issuer`, the authorization server is found from the resource's RFC 9728 metadata first (only one of
 *   `trustedIssuers`, or any with `private_key_jwt`; a client secret is never sent to an untrusted discovered server).
 * - Authorization server discovery: RFC 8414 (`/.well-known/oauth-authorization-server`), then OpenID Connect
 *   Discovery 1.0 (`/.well-known/openid-configuration`), unless `discovery` pins one; or pass `authorizationServer`.
 * - Client authentication: `private_key_jwt` (RFC 7523 §2.2) as profiled by SMART Backend Services
 *   (SMART App Launch 2.x "Backend Services": RS384 or ES384, `kid` header, `iss` = `sub` = client id,
 *   `aud` = token endpoint, unique `jti`, `exp` at most 5 minutes ahead), or `client_secret_basic` (RFC 6749 §2.3.1).
 * - Requests `scope` and the RFC 8707 `resource` indicator; caches the token and refreshes it `refreshSkewSec` before
 *   `expires_in` runs out; concurrent callers share one token request.
 */
import * as oauth from "oauth4webapi";
import { types as utilTypes } from "node:util";
import { importJWK } from "jose";
import type { JWK } from "jose";
import { unknownOptionMessage } from "../protocol/config-error.js";

/** What HMCPClient needs to authorise its HTTP requests. */
export interface TokenProvider {
  /** A current access token (cached; fetched or refreshed when needed). @throws TokenRequestError */
  getToken(): Promise<string>;
  /** Drops the cached token, so the next `getToken()` fetches a new one (call after a 401 before the single retry). */
  invalidate(): void;
}

/** Client authentication at the token endpoint. */
export type ClientAuthOptions =
  | {
      type: "private_key_jwt";
      /** The client's private key: a private JWK, or a CryptoKey with usage "sign". */
      privateKey: JWK | oauth.CryptoKey;
      /** Assertion algorithm. Default from the key: ES384 for P-384, RS384 for RSA (the SMART Backend Services algorithms). */
      alg?: "ES384" | "RS384" | "ES256" | "RS256" | "PS256" | "EdDSA";
      /** `kid` header; default the JWK's `kid`. Required by SMART Backend Services. */
      kid?: string;
      /** Assertion `aud`: the token endpoint (SMART Backend Services, default) or the issuer (MCP SEP-1046). */
      audience?: "token_endpoint" | "issuer";
      /** Assertion lifetime, seconds. Default 60, at most 300. */
      assertionLifetimeSec?: number;
    }
  | { type: "client_secret_basic"; clientSecret: string };

/** Options of {@link createClientCredentialsTokenProvider}. */
export interface ClientCredentialsOptions {
  /**
   * Issuer identifier of the authorization server (used for discovery and checked against the metadata). When
   * omitted, it is discovered from the resource's RFC 9728 protected resource metadata (`authorization_servers[0]`),
   * as MCP clients do; `resource` is then required.
   */
  issuer?: string;
  /**
   * Issuers a discovered authorization server (no `issuer` given) may be. The resource names its authorization server,
   * so without this list a hostile or compromised resource could name its own and receive the client's credentials.
   * Default: none, which allows discovery only with `private_key_jwt` (its assertion names the server it was sent
   * to as `aud`, expires within 5 minutes and cannot be replayed elsewhere); a client secret is then never sent to a
   * discovered server.
   */
  trustedIssuers?: readonly string[];
  /** Authorization server metadata; skips discovery when given. */
  authorizationServer?: oauth.AuthorizationServer;
  /** Discovery document to use. Default "auto": RFC 8414 first, then OpenID Connect Discovery. */
  discovery?: "auto" | "oauth2" | "oidc";
  clientId: string;
  auth: ClientAuthOptions;
  /** Scopes to request (space-separated string or list). */
  scope?: string | readonly string[];
  /** RFC 8707 resource indicator: the HMCP server's resource identifier. */
  resource?: string;
  /** Refresh this long before the token expires, seconds (at most half the token's lifetime). Default 60. */
  refreshSkewSec?: number;
  /** Allow http: URLs (loopback tests and the demo only). Default false. */
  allowInsecureRequests?: boolean;
  /** Timeout per HTTP request, ms. Default 10000. */
  timeoutMs?: number;
}

const PROVIDER_OPTIONS = new Set([
  "issuer", "trustedIssuers", "authorizationServer", "discovery", "clientId", "auth", "scope", "resource", "refreshSkewSec",
  "allowInsecureRequests", "timeoutMs",
]);

/** Why a token could not be obtained. `oauthError` is the authorization server's RFC 6749 §5.2 code, if any. */
export class TokenRequestError extends Error {
  readonly code: "discovery_failed" | "token_request_failed" | "invalid_configuration";
  readonly oauthError: string | undefined;
  readonly status: number | undefined;
  constructor(code: TokenRequestError["code"], message: string, extra?: { oauthError?: string; status?: number; cause?: unknown }) {
    super(message, extra?.cause !== undefined ? { cause: extra.cause } : undefined);
    this.name = "TokenRequestError";
    this.code = code;
    this.oauthError = extra?.oauthError;
    this.status = extra?.status;
  }
}

function defaultAlg(jwk: JWK): string {
  if (jwk.alg) return jwk.alg;
  if (jwk.kty === "EC") return jwk.crv === "P-256" ? "ES256" : "ES384";
  if (jwk.kty === "RSA") return "RS384";
  if (jwk.kty === "OKP") return "EdDSA";
  throw new TokenRequestError("invalid_configuration", "private_key_jwt: unsupported private key type");
}

/**
 * Builds oauth4webapi client authentication from {@link ClientAuthOptions} (also used by the introspection verifier).
 * @throws TokenRequestError `invalid_configuration` for a bad key, missing kid or lifetime over 300 s
 */
export async function buildClientAuth(auth: ClientAuthOptions): Promise<oauth.ClientAuth> {
  if (auth.type === "client_secret_basic") {
    if (!auth.clientSecret) throw new TokenRequestError("invalid_configuration", "client_secret_basic: clientSecret is required");
    return oauth.ClientSecretBasic(auth.clientSecret);
  }
  if (auth.type !== "private_key_jwt") throw new TokenRequestError("invalid_configuration", `unknown client auth type`);
  const lifetime = auth.assertionLifetimeSec ?? 60;
  if (!(lifetime > 0 && lifetime <= 300)) {
    throw new TokenRequestError("invalid_configuration", "private_key_jwt: assertionLifetimeSec must be in (0, 300] (SMART Backend Services)");
  }
  let key: oauth.CryptoKey;
  let kid = auth.kid;
  if (utilTypes.isCryptoKey(auth.privateKey)) {
    key = auth.privateKey as oauth.CryptoKey;
  } else {
    const jwk = auth.privateKey;
    if (!("d" in jwk)) throw new TokenRequestError("invalid_configuration", "private_key_jwt: privateKey must be a private JWK");
    kid ??= jwk.kid;
    const imported = await importJWK(jwk as JWK, auth.alg ?? defaultAlg(jwk as JWK));
    if (!utilTypes.isCryptoKey(imported)) throw new TokenRequestError("invalid_configuration", "private_key_jwt: unsupported key");
    key = imported as oauth.CryptoKey;
  }
  if (!kid) throw new TokenRequestError("invalid_configuration", "private_key_jwt: a kid is required (SMART Backend Services)");
  const audience = auth.audience ?? "token_endpoint";
  const privateKey = { key, kid };
  // One PrivateKeyJwt per request, so the assertion can name this server's token endpoint as its audience.
  return (as, client, body, headers) =>
    oauth.PrivateKeyJwt(privateKey, {
      [oauth.modifyAssertion]: (_header, payload) => {
        const now = Math.floor(Date.now() / 1000);
        payload.iat = now;
        payload.nbf = now;
        payload.exp = now + lifetime;
        payload.aud = audience === "token_endpoint" && as.token_endpoint ? as.token_endpoint : as.issuer;
      },
    })(as, client, body, headers);
}

/**
 * Fetches authorization server metadata: RFC 8414 then OpenID Connect Discovery 1.0 ("auto"), or one of them.
 * The metadata's `issuer` must equal `issuer` exactly (RFC 8414 §3.3).
 * @throws TokenRequestError `discovery_failed`
 */
export async function discoverAuthorizationServer(
  issuer: string,
  discovery: "auto" | "oauth2" | "oidc",
  http: () => { signal: () => AbortSignal; [oauth.allowInsecureRequests]?: boolean },
): Promise<oauth.AuthorizationServer> {
  const issuerUrl = new URL(issuer);
  const algs: Array<"oauth2" | "oidc"> = discovery === "oidc" ? ["oidc"] : discovery === "oauth2" ? ["oauth2"] : ["oauth2", "oidc"];
  let last: unknown;
  for (const algorithm of algs) {
    try {
      const res = await oauth.discoveryRequest(issuerUrl, { ...http(), algorithm });
      return await oauth.processDiscoveryResponse(issuerUrl, res);
    } catch (e) {
      last = e;
    }
  }
  // oauth4webapi refuses http: before sending anything; say how to allow it (loopback tests and the demo only)
  const insecure = issuerUrl.protocol === "http:" && !http()[oauth.allowInsecureRequests];
  throw new TokenRequestError(
    "discovery_failed",
    insecure
      ? "Authorization server metadata discovery failed: the issuer is an http: URL (set allowInsecureRequests for loopback tests only)"
      : "Authorization server metadata discovery failed",
    { cause: last },
  );
}

/**
 * Reads a resource's RFC 9728 protected resource metadata (`/.well-known/oauth-protected-resource{path}`) and returns
 * the first of its authorization servers that `accept` allows (default: the first listed). The document's `resource`
 * must equal the identifier (RFC 9728 §3.3).
 * @throws TokenRequestError `discovery_failed`, also when no listed server is accepted
 */
export async function discoverIssuerFromResource(
  resource: string,
  http: () => { signal: () => AbortSignal; [oauth.allowInsecureRequests]?: boolean },
  accept: (issuer: string) => boolean = () => true,
): Promise<string> {
  let listed: unknown[];
  try {
    const url = new URL(resource);
    const rs = await oauth.processResourceDiscoveryResponse(url, await oauth.resourceDiscoveryRequest(url, http()));
    listed = rs.authorization_servers ?? [];
    if (!listed.some((s) => typeof s === "string")) throw new Error("no authorization_servers");
  } catch (e) {
    throw new TokenRequestError("discovery_failed", "Protected resource metadata discovery (RFC 9728) failed", { cause: e });
  }
  const chosen = listed.find((s): s is string => typeof s === "string" && accept(s));
  if (chosen === undefined) throw new TokenRequestError("discovery_failed", "The resource names no authorization server that is in trustedIssuers");
  return chosen;
}

/**
 * Creates a {@link TokenProvider} for the OAuth 2.0 client credentials grant (RFC 6749 §4.4).
 * @throws TokenRequestError from `getToken()`: `discovery_failed` (metadata unreachable or issuer mismatch),
 *   `token_request_failed` (with `oauthError`, e.g. `invalid_client`, `invalid_scope`, `invalid_target`),
 *   `invalid_configuration` (bad key or options). Messages never contain secrets or tokens.
 * @throws TokenRequestError `invalid_configuration` at construction on an unknown option, no issuer/resource, or
 *   `client_secret_basic` with a discovered authorization server and no `trustedIssuers`; `discovery_failed` from
 *   `getToken()` when the discovered server is not in `trustedIssuers`
 */
export function createClientCredentialsTokenProvider(options: ClientCredentialsOptions): TokenProvider {
  for (const k of Object.keys(options)) {
    if (!PROVIDER_OPTIONS.has(k)) throw new TokenRequestError("invalid_configuration", unknownOptionMessage("createClientCredentialsTokenProvider", k, PROVIDER_OPTIONS));
  }
  if (!options.issuer && !options.resource && !options.authorizationServer) {
    throw new TokenRequestError("invalid_configuration", "issuer (or resource, for RFC 9728 discovery) is required");
  }
  if (!options.clientId) throw new TokenRequestError("invalid_configuration", "clientId is required");
  const discovered = !options.issuer && !options.authorizationServer;
  if (discovered && options.auth?.type === "client_secret_basic" && !options.trustedIssuers?.length) {
    throw new TokenRequestError(
      "invalid_configuration",
      "client_secret_basic with an authorization server discovered from the resource: set issuer or trustedIssuers, or the secret goes to whichever server the resource names",
    );
  }
  const skew = options.refreshSkewSec ?? 60;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const client: oauth.Client = { client_id: options.clientId };
  const scope = typeof options.scope === "string" ? options.scope : options.scope?.join(" ");
  const http = (): { signal: () => AbortSignal; [oauth.allowInsecureRequests]?: boolean } => {
    const o: { signal: () => AbortSignal; [oauth.allowInsecureRequests]?: boolean } = { signal: () => AbortSignal.timeout(timeoutMs) };
    if (options.allowInsecureRequests) o[oauth.allowInsecureRequests] = true;
    return o;
  };

  let as: oauth.AuthorizationServer | undefined = options.authorizationServer;
  let clientAuth: Promise<oauth.ClientAuth> | undefined;
  let cached: { token: string; refreshAt: number } | undefined;
  let inflight: Promise<string> | undefined;

  async function discover(): Promise<oauth.AuthorizationServer> {
    if (as) return as;
    const trusted = options.trustedIssuers;
    const issuer = options.issuer ?? (await discoverIssuerFromResource(options.resource!, http, trusted ? (i) => trusted.includes(i) : undefined));
    as = await discoverAuthorizationServer(issuer, options.discovery ?? "auto", http);
    return as;
  }

  async function fetchToken(): Promise<string> {
    const server = await discover();
    if (!server.token_endpoint) throw new TokenRequestError("discovery_failed", "Authorization server metadata has no token_endpoint");
    clientAuth ??= buildClientAuth(options.auth);
    const authFn = await clientAuth;
    const params = new URLSearchParams();
    if (scope) params.set("scope", scope);
    if (options.resource) params.set("resource", options.resource);
    let result: oauth.TokenEndpointResponse;
    try {
      const res = await oauth.clientCredentialsGrantRequest(server, client, authFn, params, http());
      result = await oauth.processClientCredentialsResponse(server, client, res);
    } catch (e) {
      if (e instanceof oauth.ResponseBodyError) {
        throw new TokenRequestError("token_request_failed", `Token request refused: ${e.error}`, { oauthError: e.error, status: e.status, cause: e });
      }
      // a 401 whose answer is a WWW-Authenticate challenge (client_secret_basic refused): its error code
      if (e instanceof oauth.WWWAuthenticateChallengeError) {
        const code = e.cause.map((c) => c.parameters.error).find((x): x is string => typeof x === "string" && /^[\x20-\x7e]{1,64}$/.test(x));
        if (code !== undefined) throw new TokenRequestError("token_request_failed", `Token request refused: ${code}`, { oauthError: code, status: e.status, cause: e });
      }
      throw new TokenRequestError("token_request_failed", `Token request failed (${failureKind(e)})`, { cause: e });
    }
    if (result.token_type !== "bearer") {
      throw new TokenRequestError("token_request_failed", `Unsupported token_type "${result.token_type}" (only Bearer)`);
    }
    const lifetime = typeof result.expires_in === "number" ? result.expires_in : 300;
    // Refresh `skew` seconds early, but never later than half-way for short-lived tokens.
    const early = Math.min(skew, lifetime / 2);
    cached = { token: result.access_token, refreshAt: Date.now() + Math.max(0, lifetime - early) * 1000 };
    return result.access_token;
  }

  return {
    async getToken() {
      if (cached && Date.now() < cached.refreshAt) return cached.token;
      inflight ??= fetchToken().finally(() => {
        inflight = undefined;
      });
      return inflight;
    },
    invalidate() {
      cached = undefined;
    },
  };
}

/**
 * What kind of failure `e` is, for a message an operator can act on: the error's name and, for the token client's own
 * errors, its code (e.g. `TimeoutError`, `TypeError: fetch failed`, `OperationProcessingError
 * OAUTH_RESPONSE_IS_NOT_CONFORM`). Never the response body nor the request: they may carry credentials.
 */
function failureKind(e: unknown): string {
  if (!(e instanceof Error)) return "unknown error";
  const code = (e as { code?: unknown }).code;
  const why = e.name === "TypeError" && e.message === "fetch failed" ? "TypeError: fetch failed (the authorization server did not answer)" : e.name;
  return typeof code === "string" && /^[A-Z0-9_]{2,64}$/.test(code) ? `${why} ${code}` : why;
}
