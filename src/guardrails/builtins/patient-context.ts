/**
 * `patient-context`: blocks content that refers to a patient other than the request's patient
 * context (SMART App Launch 2.x launch context `patient`). Looks for FHIR references
 * (`Patient/<id>`, JSON `"subject"`/`"patient"` references and `"patient": "<id>"`) and for labelled
 * patient ids in text (`patient id: <id>`). Block reasons: `patient_context_mismatch`, and
 * `patient_context_missing` when `requireContext` is set and the request has no patient context.
 */
import { z } from "zod";
import type { Guardrail, GuardrailFactory } from "../guardrail.js";

const ParamsSchema = z.strictObject({
  /** Block patient references when the request has no patient context. Default false (nothing to compare). */
  requireContext: z.boolean().optional(),
});

/** Options of {@link createPatientContextGuardrail}. */
export type PatientContextOptions = z.input<typeof ParamsSchema> & { name?: string };

// FHIR id: [A-Za-z0-9\-\.]{1,64} (FHIR R4 §2.24.0.1 "id").
const REFS = [
  /(?<![\w/-])Patient\/([A-Za-z0-9.-]{1,64})(?![A-Za-z0-9.-]|\/_history)/g,
  /"(?:patient|patientId|patient_id|subject)"\s{0,4}:\s{0,4}"(?:Patient\/)?([A-Za-z0-9.-]{1,64})"/g,
  /\bpatient[ _-]?id\s{0,3}[:=#]?\s{0,3}["']?((?=[A-Za-z0-9.-]{0,63}\d)[A-Za-z0-9][A-Za-z0-9.-]{0,63})/gi,
];

/** The patient ids referenced in `text` (FHIR references and labelled ids), in order, deduplicated. */
export function findPatientReferences(text: string): string[] {
  const ids: string[] = [];
  for (const re of REFS) {
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text)) !== null) {
      let id = m[1]!;
      while (id.endsWith(".")) id = id.slice(0, -1);
      if (id && !ids.includes(id)) ids.push(id);
    }
  }
  return ids;
}

/** Builds the patient-context guardrail. @throws ZodError on bad options */
export function createPatientContextGuardrail(options: PatientContextOptions = {}): Guardrail {
  const { name = "patient-context", ...params } = options;
  const p = ParamsSchema.parse(params);
  return {
    name,
    check(text, ctx) {
      if (!text.includes("atient") && !text.includes("subject") && !text.includes("ATIENT")) return { action: "allow" };
      const refs = findPatientReferences(text);
      if (refs.length === 0) return { action: "allow" };
      const patient = ctx.patient ?? ctx.principal?.patient;
      if (patient === undefined) return p.requireContext ? { action: "block", reason: "patient_context_missing" } : { action: "allow" };
      for (const id of refs) if (id !== patient) return { action: "block", reason: "patient_context_mismatch" };
      return { action: "allow" };
    },
  };
}

export const patientContextFactory: GuardrailFactory = (params, env) => createPatientContextGuardrail({ ...ParamsSchema.parse(params), name: env.name });
