/**
 * The demo authorization server's client registry: who may obtain which scopes (SMART App Launch 2.x scope syntax).
 */
import { CLINICAL_TYPES } from "../fhir/resource.js";

/** A client the demo authorization server registers. */
export interface DemoClientConfig {
  /** OAuth client id. */
  clientId: string;
  /** Scopes this client may be granted (requests for others are silently narrowed, RFC 6749 §3.3). */
  scopes: string[];
  /** SMART launch context: tokens carry this `patient` claim (a FHIR Patient id). */
  patient?: string;
  /** SMART `fhirUser` claim. */
  fhirUser?: string;
  /** `tenant` claim. */
  tenant?: string;
  /** Client assertion algorithm for private_key_jwt. Default ES384 (SMART Backend Services). */
  alg?: "ES384" | "RS384";
  /** When set, the client authenticates with client_secret_basic instead of private_key_jwt. */
  clientSecret?: string;
  /** A resource server allowed to call the introspection endpoint (RFC 7662 §2.1). Default false. */
  introspect?: boolean;
}

/** FHIR resource types the orchestrator may write (create and update): the EMR agent's clinical types. */
export const ORCHESTRATOR_WRITE_TYPES = CLINICAL_TYPES;

/**
 * The three demo clients: `orchestrator` (system-level read of all FHIR data, create/update of the clinical
 * write-back types, HMCP access and sampling), `reader` (read-only) and `patient-app` (patient-level scopes, tokens
 * bound to `patient`).
 * @param patient - the FHIR Patient id the patient-bound client is bound to
 */
export function defaultDemoClients(patient = "demo-patient-1"): DemoClientConfig[] {
  return [
    {
      clientId: "orchestrator",
      scopes: [
        "hmcp:access",
        "hmcp:sample",
        "hmcp:read",
        "hmcp:write",
        "system/*.rs",
        ...ORCHESTRATOR_WRITE_TYPES.map((t) => `system/${t}.cu`),
      ],
      tenant: "demo-hospital",
    },
    {
      clientId: "reader",
      scopes: ["hmcp:read", "system/*.rs"],
      tenant: "demo-hospital",
    },
    {
      clientId: "patient-app",
      scopes: ["hmcp:sample", "patient/hmcp:read", "patient/hmcp:write", "patient/*.rs", "patient/Observation.c"],
      patient,
      fhirUser: `Patient/${patient}`,
      tenant: "demo-hospital",
    },
  ];
}
