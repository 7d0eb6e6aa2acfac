/** Pins the auth module's public runtime surface (STYLE.md habit 2) and checks the package entry re-exports it. */
import { describe, expect, it } from "vitest";
import * as auth from "../../../src/auth/index.js";
import * as hmcp from "hmcp";

const AUTH_RUNTIME_EXPORTS = [
  "DEFAULT_JWT_ALGORITHMS",
  "DEFAULT_METHOD_SCOPES",
  "HMCP_ACCESS_SCOPE",
  "HMCP_RESOURCE_TYPE",
  "HMCP_SAMPLE_SCOPE",
  "TokenRequestError",
  "UNLISTED_METHOD_SCOPES",
  "allows",
  "assertAccess",
  "assertScopes",
  "checkAccess",
  "createClientCredentialsTokenProvider",
  "createIntrospectionAuthenticator",
  "createJwtBearerAuthenticator",
  "extractBearerToken",
  "formatBearerChallenge",
  "parseScope",
  "principalFromClaims",
  "requiredScopesFor",
  "requiredScopesForMethod",
  "resourceMetadataPathFor",
  "resourceMetadataUrlFor",
  "satisfiesAny",
  "scopeImplies",
  "splitScopes",
];

describe("auth public surface", () => {
  it("src/auth exports exactly the pinned runtime names", () => {
    expect(Object.keys(auth).sort()).toEqual(AUTH_RUNTIME_EXPORTS);
  });
  it("the package entry re-exports every one of them (same objects)", () => {
    for (const name of AUTH_RUNTIME_EXPORTS) {
      expect((hmcp as Record<string, unknown>)[name], name).toBe((auth as Record<string, unknown>)[name]);
    }
  });
});
