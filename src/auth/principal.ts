/**
 * Mapping verified token claims (RFC 9068 §2.2, RFC 7662 §2.2, SMART App Launch 2.x launch context) to a Principal.
 */
import type { Principal } from "../protocol/index.js";
import { parseScope, splitScopes } from "./scopes.js";

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/**
 * The scopes a token's claims grant as written: the space-separated `scope` claim (RFC 9068 §2.2.3), else an `scp`
 * array of strings; `[]` when neither. (No SMART patient-context filtering: {@link principalFromClaims} adds that.)
 */
export function scopesOfClaims(claims: Record<string, unknown>): string[] {
  const scopes = splitScopes(str(claims["scope"]));
  const scp = claims["scp"];
  return scopes.length === 0 && Array.isArray(scp) ? scp.filter((s): s is string => typeof s === "string" && s.length > 0) : scopes;
}

/**
 * Builds the Principal from token claims: `client_id` (else `azp`, else `sub`), `sub`, `scope` (space-separated; a
 * `scp` string array is also read), SMART `patient` and `fhirUser`, `tenant`, `exp`, `iss`.
 *
 * A token without a `patient` claim keeps none of its `patient/` scopes: SMART App Launch 2.x requires the patient
 * launch context with patient-level scopes, so without it they grant nothing (not even at the method level).
 * @returns the principal, or `undefined` when the claims name no client at all
 */
export function principalFromClaims(claims: Record<string, unknown>): Principal | undefined {
  const clientId = str(claims["client_id"]) ?? str(claims["azp"]) ?? str(claims["sub"]);
  if (clientId === undefined) return undefined;
  let scopes = scopesOfClaims(claims);
  const patient = str(claims["patient"]);
  const ignored: string[] = [];
  if (patient === undefined) {
    scopes = scopes.filter((s) => {
      const parsed = parseScope(s);
      const patientLevel = parsed.kind === "resource" && parsed.level === "patient";
      if (patientLevel) ignored.push(s);
      return !patientLevel;
    });
  }
  const p: Principal = { clientId, scopes };
  if (ignored.length > 0) p.ignoredScopes = ignored;
  const sub = str(claims["sub"]);
  if (sub !== undefined) p.sub = sub;
  if (patient !== undefined) p.patient = patient;
  const fhirUser = str(claims["fhirUser"]);
  if (fhirUser !== undefined) p.fhirUser = fhirUser;
  const tenant = str(claims["tenant"]);
  if (tenant !== undefined) p.tenant = tenant;
  if (typeof claims["exp"] === "number") p.expiresAt = claims["exp"];
  const iss = str(claims["iss"]);
  if (iss !== undefined) p.issuer = iss;
  return p;
}

/**
 * A principal's identity as SECURITY.md defines it (issuer, tenant, client, subject), in the encodings its consumers
 * key on. Computed once per frozen principal (the JWT and introspection authenticators' principals are frozen and
 * shared by every request carrying the token), afresh for one that may change in place.
 */
export interface PrincipalIdentity {
  /** `[issuer, tenant, clientId, sub]`, `""` for an absent member: what a sealed `requestState` and a task's owner bind. */
  readonly who: readonly [string, string, string, string];
  /** JSON of `[issuer, tenant, clientId, sub]`, `null` for an absent member: whose session cap a session counts against. */
  readonly key: string;
  /** JSON of `[issuer, tenant, clientId, sub, patient]` (`null` for absent ones): who may use a 2025-era session. */
  readonly owner: string;
}

const identities = new WeakMap<Principal, PrincipalIdentity>();

/** The identity tuple of `p` (see {@link PrincipalIdentity}); memoised for a frozen principal. */
export function principalIdentity(p: Principal): PrincipalIdentity {
  const frozen = Object.isFrozen(p);
  let id = frozen ? identities.get(p) : undefined;
  if (id === undefined) {
    const members = [p.issuer ?? null, p.tenant ?? null, p.clientId, p.sub ?? null] as const;
    id = Object.freeze({
      who: Object.freeze([p.issuer ?? "", p.tenant ?? "", p.clientId, p.sub ?? ""] as const),
      key: JSON.stringify(members),
      owner: JSON.stringify([...members, p.patient ?? null]),
    });
    if (frozen) identities.set(p, id);
  }
  return id;
}

/**
 * The principal's key as SECURITY.md defines it (issuer, tenant, client, subject; JSON, so no value can forge a
 * separator), or `"anonymous"` without one: what the session caps and the `requestState` ledgers' per-principal
 * bound count against.
 */
export function principalKeyOf(p: Principal | undefined): string {
  return p ? principalIdentity(p).key : "anonymous";
}
