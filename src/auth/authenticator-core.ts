/**
 * The part every HMCP bearer authenticator shares: token extraction, the scope checks after verification, and the
 * RFC 9728 metadata. Verifier-specific code (JWT, introspection) supplies only `verify`.
 */
import type { BearerAuthenticator, BearerCheck, BearerFailureReason, VerifiedToken } from "./types.js";
import { extractBearerToken } from "./bearer-request.js";
import { bearerFailure } from "./www-authenticate.js";
import type { ChallengeContext } from "./www-authenticate.js";
import { DEFAULT_METHOD_SCOPES, requiredScopesForMethod } from "./method-scopes.js";
import { scopeMethodOf } from "../protocol/sampling-tool.js";
import { parseScope, satisfiesAny } from "./scopes.js";
import { resourceMetadataPathFor, resourceMetadataUrlFor } from "./resource-metadata.js";
import type { ProtectedResourceMetadata } from "./resource-metadata.js";

/** Options common to every bearer authenticator. */
export interface CommonBearerOptions {
  /**
   * RFC 9728 metadata served for this resource. `resource` defaults to the authenticator's audience,
   * `authorization_servers` to `[issuer]`, `bearer_methods_supported` to `["header"]`.
   */
  resourceMetadata?: Partial<ProtectedResourceMetadata>;
  /** Absolute URL put in `resource_metadata=` (default: derived from `resource`, RFC 9728 §3.1). Set it behind a proxy. */
  resourceMetadataUrl?: string;
  /** Tokens longer than this are refused (401 `invalid_token`) without a verification attempt. Default 8192 bytes. */
  maxTokenBytes?: number;
  /** Scopes (any of) every request needs, beyond a valid token. Default none. Failing → 403 `insufficient_scope`. */
  requiredScopes?: readonly string[];
  /**
   * Per-method scopes (any of) checked against the JSON-RPC body (each request of a batch) → 403 `insufficient_scope`
   * naming the scopes missing. Entries are merged over `DEFAULT_METHOD_SCOPES` (the default). Inside an HTTP session
   * the session's server states its own requirement per method (see `BearerAuthenticator.check`): a method with an
   * entry here then needs both that entry and the server's requirement, a method without one only the server's (which
   * defaults to `DEFAULT_METHOD_SCOPES` too). `false` leaves method checks to the server pipeline only.
   */
  methodScopes?: Readonly<Record<string, readonly string[]>> | false;
  /** RFC 6750 `realm` for challenges. */
  realm?: string;
}

/** Outcome of verifying a token string. */
export type VerifyOutcome = { ok: true; verified: VerifiedToken } | { ok: false; description: string; reason: BearerFailureReason };

export interface CoreConfig extends CommonBearerOptions {
  issuer: string;
  audience: string;
  verify: (token: string) => Promise<VerifyOutcome>;
}

const DEFAULT_MAX_TOKEN_BYTES = 8192;

function methodsOf(body: unknown): string[] {
  const items = Array.isArray(body) ? body : [body];
  const out: string[] = [];
  for (const m of items) {
    if (typeof m !== "object" || m === null) continue;
    const method = (m as { method?: unknown }).method;
    // the sampling tool is checked with sampling's scopes, not tools/call's (src/protocol/sampling-tool.ts)
    if (typeof method === "string") out.push(scopeMethodOf(method, (m as { params?: unknown }).params));
  }
  return out;
}

/** Builds a {@link BearerAuthenticator} around a token verifier. */
export function buildBearerAuthenticator(cfg: CoreConfig): BearerAuthenticator {
  const maxTokenBytes = cfg.maxTokenBytes ?? DEFAULT_MAX_TOKEN_BYTES;
  if (!Number.isInteger(maxTokenBytes) || maxTokenBytes <= 0) throw new TypeError("maxTokenBytes must be a positive integer");
  const metadata: ProtectedResourceMetadata = {
    resource: cfg.audience,
    authorization_servers: [cfg.issuer],
    bearer_methods_supported: ["header"],
    ...cfg.resourceMetadata,
  } as ProtectedResourceMetadata;
  const path = resourceMetadataPathFor(metadata.resource);
  const ctx: ChallengeContext = { resourceMetadataUrl: cfg.resourceMetadataUrl ?? resourceMetadataUrlFor(metadata.resource) };
  if (cfg.realm !== undefined) ctx.realm = cfg.realm;
  const required = cfg.requiredScopes ?? [];
  // A mistyped required scope would silently refuse every request: name it at construction instead.
  const configured: Array<[string, readonly string[]]> = [["requiredScopes", required]];
  if (cfg.methodScopes) for (const [m, list] of Object.entries(cfg.methodScopes)) configured.push([`methodScopes["${m}"]`, list]);
  for (const [where, list] of configured) {
    for (const scope of list) {
      const p = parseScope(scope);
      if (p.kind === "invalid") throw new TypeError(`${where}: invalid scope ${JSON.stringify(scope)} (${p.reason})`);
    }
  }
  const methodTable = cfg.methodScopes === false ? undefined : cfg.methodScopes;
  const hasEntry = (method: string) => methodTable !== undefined && Object.prototype.hasOwnProperty.call(methodTable, method);
  const checkMethods = cfg.methodScopes !== false;
  // On a 401, advertise what a client should ask for: the configured metadata's scopes_supported, else the baseline.
  const challengeScope = metadata.scopes_supported?.join(" ") ?? (required.length ? required.join(" ") : undefined);
  // RFC 9728 §2 scopes_supported, unless configured: every scope this resource's checks name (the required scopes and
  // the method table in effect), so a client can discover what to request
  if (metadata.scopes_supported === undefined) {
    const all = new Set<string>(required);
    for (const list of Object.values({ ...DEFAULT_METHOD_SCOPES, ...(methodTable ?? {}) })) for (const sc of list) all.add(sc);
    if (all.size > 0) metadata.scopes_supported = [...all].sort();
  }
  const ctx401: ChallengeContext = { ...ctx };
  if (challengeScope) ctx401.defaultScope = challengeScope;

  // Concurrent first uses of one token share a single verification (one signature check or introspection call).
  const inflight = new Map<string, Promise<VerifyOutcome>>();
  const verifyShared = (token: string): Promise<VerifyOutcome> => {
    const pending = inflight.get(token);
    if (pending) return pending;
    const p = cfg.verify(token).finally(() => inflight.delete(token));
    inflight.set(token, p);
    return p;
  };

  return {
    resourceMetadataPath: path,
    resourceMetadata: () => structuredClone(metadata),
    async check(request): Promise<BearerCheck> {
      const extracted = extractBearerToken(request, maxTokenBytes);
      if (extracted.kind === "none") {
        return bearerFailure(ctx401, 401, undefined, "Authorization required: send an Authorization: Bearer access token", undefined, "no_credentials");
      }
      if (extracted.kind === "error") {
        return bearerFailure(extracted.status === 401 ? ctx401 : ctx, extracted.status, extracted.error, extracted.description, undefined, extracted.reason);
      }
      const v = await verifyShared(extracted.token);
      if (!v.ok) return bearerFailure(ctx401, 401, "invalid_token", v.description, undefined, v.reason);
      const principal = v.verified.principal;
      const scopes = principal.scopes;
      if (!satisfiesAny(scopes, required)) {
        return { ...bearerFailure(ctx, 403, "insufficient_scope", "The access token lacks a scope this resource requires", required.join(" "), "insufficient_scope"), principal };
      }
      if (checkMethods) {
        for (const method of methodsOf(request.body)) {
          if (method.startsWith("notifications/")) continue;
          // The server's own requirement does not replace an entry configured here: the token must satisfy each.
          const own = request.methodScopes?.(method);
          const table = own === undefined || hasEntry(method) ? requiredScopesForMethod(method, methodTable) : undefined;
          const tableOk = table === undefined || satisfiesAny(scopes, table);
          const ownOk = own === undefined || satisfiesAny(scopes, own);
          // arrays only for the refusal: a request that passes (nearly all) allocates nothing here
          if (!tableOk || !ownOk) {
            const scope = [...new Set([...(tableOk ? [] : table!), ...(ownOk ? [] : own!)])].join(" ");
            return { ...bearerFailure(ctx, 403, "insufficient_scope", "The access token lacks a scope this method requires", scope, "insufficient_scope"), principal };
          }
        }
      }
      return v;
    },
  };
}
