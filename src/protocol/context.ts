/**
 * Who is calling, for which patient: the request context every layer shares.
 * Filled by the bearer check over HTTP (src/auth) or by the configured local principal over stdio.
 */

/** The authenticated principal of a request (SMART App Launch 2.x, RFC 9068 claims). */
export interface Principal {
  /** OAuth client id (`client_id` claim; RFC 9068 §2.2). */
  clientId: string;
  /** Subject (`sub`): the end user, or the client itself for client_credentials. */
  sub?: string;
  /** Granted scopes, as the raw space-separated strings split into a list. */
  scopes: string[];
  /**
   * `patient/` scopes the token carries that grant nothing because it has no `patient` claim (SMART App Launch 2.x:
   * patient-level scopes need the patient launch context). Named in InsufficientScope errors, so the caller sees why.
   */
  ignoredScopes?: string[];
  /** SMART launch context `patient` (a FHIR Patient id), when the token is patient-bound. */
  patient?: string;
  /** SMART `fhirUser` (e.g. "Practitioner/123"). */
  fhirUser?: string;
  /** Tenant (organisation) the token was issued for. */
  tenant?: string;
  /** Token expiry, seconds since the epoch. */
  expiresAt?: number;
  /** Issuer (`iss`) of the token. */
  issuer?: string;
}

/** The transport a request arrived on. */
export type TransportKind = "http" | "stdio" | "memory";
