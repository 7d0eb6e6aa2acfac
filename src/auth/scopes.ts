/**
 * Scope checks used by the request pipeline.
 * INTERIM: exact-match implementation so the foundation compiles; the auth work (issue 3) replaces the bodies with the
 * SMART App Launch 2.x parser and matcher, keeping these signatures.
 */

/** An act on FHIR data: SMART v2 interaction letters (c create, r read, u update, d delete, s search). */
export interface ScopeRequest {
  action: "c" | "r" | "u" | "d" | "s";
  /** FHIR resource type, e.g. "Observation", or "hmcp" for HMCP's own scopes. */
  resourceType: string;
  /** The FHIR Patient id the act touches, if any. */
  patient?: string;
}

/** True when `granted` contains at least one of `required` (each an HMCP or SMART scope string). */
export function satisfiesAny(granted: readonly string[], required: readonly string[]): boolean {
  return required.length === 0 || required.some((r) => granted.includes(r));
}

/** True when `granted` (with the token's patient context `contextPatient`) allows `request`. */
export function allows(granted: readonly string[], request: ScopeRequest, _contextPatient?: string): boolean {
  const v1 = request.action === "r" || request.action === "s" ? "read" : "write";
  return granted.some((g) => g === `system/${request.resourceType}.${v1}` || g === `system/*.${v1}`);
}
