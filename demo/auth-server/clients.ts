/**
 * The demo authorization server's client registry: who may obtain which scopes (SMART App Launch 2.x scope syntax).
 */
import type { DevClientConfig as DemoClientConfig } from "hmcp/dev-auth";
import { CLINICAL_TYPES } from "../fhir/resource.js";

export type { DemoClientConfig };

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
