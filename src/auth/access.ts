/**
 * Scope and patient-context assertions that raise HMCP's stable JSON-RPC errors. The server pipeline calls them for
 * method-level checks; agent code calls them mid-request ("may this caller write an Observation for this patient?").
 */
import { HMCPError, HMCPErrorCode } from "../protocol/index.js";
import type { Principal } from "../protocol/index.js";
import { checkAccess, satisfiesAny } from "./scopes.js";
import type { AccessDecision, ScopeRequest } from "./scopes.js";

/**
 * Throws unless `principal` holds at least one scope of `required` (any-of; see `satisfiesAny`).
 * @throws HMCPError `InsufficientScope` (-32051) with `data: { reason: "insufficient_scope", required }`
 */
export function assertScopes(principal: Pick<Principal, "scopes">, required: readonly string[]): void {
  if (satisfiesAny(principal.scopes, required)) return;
  throw new HMCPError(HMCPErrorCode.InsufficientScope, "The access token lacks a scope this request requires", {
    reason: "insufficient_scope",
    required: [...required],
  });
}

/**
 * Throws unless `principal`'s scopes and patient launch context allow `request` (see `checkAccess`).
 * @returns the decision (with the scope that allowed the act, for the audit record)
 * @throws HMCPError `InsufficientScope` (-32051) when no scope covers the act, with `data.required` (scopes, any one of
 *   which would allow it); `PatientContextViolation` (-32052) when only `patient/` scopes cover it and the act's patient
 *   is not the token's (`data.reason` `patient_context_mismatch`) or either is absent (`patient_context_missing`).
 *   Neither error names a patient id.
 */
export function assertAccess(principal: Pick<Principal, "scopes" | "patient">, request: ScopeRequest): Extract<AccessDecision, { allowed: true }> {
  const d = checkAccess(principal.scopes, request, principal.patient);
  if (d.allowed) return d;
  if (d.reason === "insufficient_scope") {
    throw new HMCPError(
      HMCPErrorCode.InsufficientScope,
      `The access token does not allow this ${request.resourceType} interaction`,
      { reason: "insufficient_scope", required: d.required, resourceType: request.resourceType, action: request.action },
    );
  }
  throw new HMCPError(
    HMCPErrorCode.PatientContextViolation,
    d.reason === "patient_context_missing"
      ? "The access token is bound to patient scopes but the request and token do not share a patient context"
      : "The request touches a patient outside the access token's patient context",
    { reason: d.reason, resourceType: request.resourceType, action: request.action },
  );
}
