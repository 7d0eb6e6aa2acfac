/**
 * HMCP authorization: resource-server token checks, SMART scopes and patient context, RFC 9728 metadata, and
 * client-side token providers.
 *
 * Resource server (an HMCP agent):
 * ```ts
 * const bearer = createJwtBearerAuthenticator({
 *   issuer: "https://auth.hospital.example",          // exact `iss`
 *   audience: "https://agents.hospital.example/emr/mcp", // this agent's RFC 8707 resource identifier
 *   jwks: { uri: "https://auth.hospital.example/jwks" },
 *   resourceMetadata: { scopes_supported: ["hmcp:sample", "system/Observation.c"] },
 * });
 * const app = createHttpApp({ bearer, createServer: () => makeAgent() });
 * // inside a handler: ctx.require({ action: "c", resourceType: "Observation", patient })
 * ```
 * Client (an orchestrator, SMART Backend Services):
 * ```ts
 * const tokenProvider = createClientCredentialsTokenProvider({
 *   issuer: "https://auth.hospital.example", clientId: "orchestrator",
 *   auth: { type: "private_key_jwt", privateKey: privateJwk },        // ES384 / RS384 JWK with kid
 *   scope: "hmcp:sample system/Observation.c", resource: "https://agents.hospital.example/emr/mcp",
 * });
 * const client = new HMCPClient({ name: "orchestrator", version: "1" }, { tokenProvider });
 * ```
 */
export type { BearerAuthenticator, BearerCheck, BearerFailureReason, VerifiedToken } from "./types.js";
export {
  parseScope,
  splitScopes,
  scopeImplies,
  satisfiesAny,
  allows,
  checkAccess,
  requiredScopesFor,
  HMCP_RESOURCE_TYPE,
  HMCP_SAMPLE_SCOPE,
  HMCP_ACCESS_SCOPE,
} from "./scopes.js";
export type { ScopeRequest, ScopeAction, ScopeLevel, ParsedScope, AccessDecision, AccessDenial } from "./scopes.js";
export { DEFAULT_METHOD_SCOPES, UNLISTED_METHOD_SCOPES, requiredScopesForMethod } from "./method-scopes.js";
export { assertScopes, assertAccess } from "./access.js";
export { principalFromClaims } from "./principal.js";
export { formatBearerChallenge } from "./www-authenticate.js";
export type { BearerChallenge } from "./www-authenticate.js";
export { extractBearerToken } from "./bearer-request.js";
export type { ExtractedToken } from "./bearer-request.js";
export { resourceMetadataPathFor, resourceMetadataUrlFor } from "./resource-metadata.js";
export type { ProtectedResourceMetadata } from "./resource-metadata.js";
export type { CommonBearerOptions } from "./authenticator-core.js";
export { createJwtBearerAuthenticator, DEFAULT_JWT_ALGORITHMS } from "./jwt-authenticator.js";
export type { JwtBearerOptions, JwtBearerAuthenticator, JwksSource } from "./jwt-authenticator.js";
export { createIntrospectionAuthenticator } from "./introspection-authenticator.js";
export type { IntrospectionOptions } from "./introspection-authenticator.js";
export { createClientCredentialsTokenProvider, TokenRequestError } from "./token-provider.js";
export type { TokenProvider, ClientCredentialsOptions, ClientAuthOptions } from "./token-provider.js";
