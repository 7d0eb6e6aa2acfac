/**
 * The demo's three callers and what each may do (SMART App Launch 2.x scopes). Registered at the demo
 * authorization server over HTTP; used as the agents' local principal over stdio, where there is no HTTP auth.
 */
import type { Principal } from "hmcp";
import type { DemoClientConfig } from "../auth-server/index.js";
import { CLINICAL_TYPES } from "../fhir/resource.js";

/** The orchestrator: reads everything, creates the clinical types, samples. */
export const ORCHESTRATOR = "orchestrator";
/** A read-only client: may ask the agents (sampling) and read, never write. */
export const READER = "reader";
/** A patient app bound to one patient: may write Observations for that patient only. */
export const PATIENT_APP = "patient-app";

export function demoClients(boundPatient: string): DemoClientConfig[] {
  return [
    { clientId: ORCHESTRATOR, scopes: ["hmcp:access", "hmcp:sample", "hmcp:read", "hmcp:write", "system/*.rs", ...CLINICAL_TYPES.map((t) => `system/${t}.c`)], tenant: "demo-hospital" },
    { clientId: READER, scopes: ["hmcp:sample", "hmcp:read", "system/*.rs"], tenant: "demo-hospital" },
    {
      clientId: PATIENT_APP,
      scopes: ["hmcp:sample", "patient/hmcp:read", "patient/hmcp:write", "patient/*.rs", "patient/Observation.c"],
      patient: boundPatient,
      fhirUser: `Patient/${boundPatient}`,
      tenant: "demo-hospital",
    },
  ];
}

/** The local principal of a client (stdio transport). */
export function localPrincipal(clientId: string, boundPatient: string): Principal {
  const c = demoClients(boundPatient).find((x) => x.clientId === clientId);
  if (!c) throw new Error(`unknown demo client ${clientId}`);
  return {
    clientId: c.clientId,
    sub: c.clientId,
    scopes: c.scopes,
    ...(c.patient !== undefined && { patient: c.patient }),
    ...(c.fhirUser !== undefined && { fhirUser: c.fhirUser }),
    ...(c.tenant !== undefined && { tenant: c.tenant }),
  };
}
