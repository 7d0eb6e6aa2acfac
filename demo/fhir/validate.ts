/**
 * Per-resource shape validation for the clinical types the EMR accepts (FHIR R4 required elements, plus
 * `code` where an EMR entry without it would be meaningless). Loose: unknown elements pass through untouched.
 * This is a shape check, NOT full FHIR validation (no terminology binding, no invariants, no profiles).
 * Spec: https://hl7.org/fhir/R4/resourcelist.html
 */
import { z } from "zod";
import type { ClinicalType, FhirResource } from "./resource.js";

/** FHIR `dateTime` / `date` (R4 §2.24.0.1): year, optionally month, day, time with zone. */
const dateTime = z
  .string()
  .regex(/^\d{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01])(T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?$/, "must be a FHIR dateTime (YYYY[-MM[-DD[Thh:mm[:ss[.sss]]±zz:zz]]])");
const id = z.string().regex(/^[A-Za-z0-9\-.]{1,64}$/, "must be a FHIR id (1-64 of A-Z a-z 0-9 - .)");
const coding = z.looseObject({ system: z.string().optional(), code: z.string().optional(), display: z.string().optional() });
const codeableConcept = z
  .looseObject({ coding: z.array(coding).optional(), text: z.string().optional() })
  .refine((c) => (c.coding?.length ?? 0) > 0 || (c.text?.length ?? 0) > 0, "must have a coding or a text");
const reference = z.looseObject({ reference: z.string().min(1).optional(), display: z.string().optional() });
const period = z.looseObject({ start: dateTime.optional(), end: dateTime.optional() });
const base = { id: id.optional(), meta: z.looseObject({}).optional(), encounter: reference.optional() };

const schemas: Record<ClinicalType, z.ZodType> = {
  Observation: z.looseObject({
    ...base,
    resourceType: z.literal("Observation"),
    status: z.enum(["registered", "preliminary", "final", "amended", "corrected", "cancelled", "entered-in-error", "unknown"]),
    code: codeableConcept,
    effectiveDateTime: dateTime.optional(),
    valueQuantity: z.looseObject({ value: z.number(), unit: z.string().optional() }).optional(),
    valueCodeableConcept: codeableConcept.optional(),
    component: z.array(z.looseObject({ code: codeableConcept })).optional(),
  }),
  Condition: z.looseObject({
    ...base,
    resourceType: z.literal("Condition"),
    code: codeableConcept,
    clinicalStatus: codeableConcept.optional(),
    onsetDateTime: dateTime.optional(),
    abatementDateTime: dateTime.optional(),
    recordedDate: dateTime.optional(),
  }),
  MedicationRequest: z
    .looseObject({
      ...base,
      resourceType: z.literal("MedicationRequest"),
      status: z.enum(["active", "on-hold", "cancelled", "completed", "entered-in-error", "stopped", "draft", "unknown"]),
      intent: z.enum(["proposal", "plan", "order", "original-order", "reflex-order", "filler-order", "instance-order", "option"]),
      medicationCodeableConcept: codeableConcept.optional(),
      medicationReference: reference.optional(),
      authoredOn: dateTime.optional(),
      requester: reference.optional(),
      reasonReference: z.array(reference).optional(),
    })
    .refine((m) => m.medicationCodeableConcept !== undefined || m.medicationReference !== undefined, {
      message: "medication[x] is required (medicationCodeableConcept or medicationReference)",
      path: ["medication[x]"],
    }),
  Procedure: z.looseObject({
    ...base,
    resourceType: z.literal("Procedure"),
    status: z.enum(["preparation", "in-progress", "not-done", "on-hold", "stopped", "completed", "entered-in-error", "unknown"]),
    code: codeableConcept,
    performedDateTime: dateTime.optional(),
    performedPeriod: period.optional(),
    reasonReference: z.array(reference).optional(),
  }),
  Immunization: z
    .looseObject({
      ...base,
      resourceType: z.literal("Immunization"),
      status: z.enum(["completed", "entered-in-error", "not-done"]),
      vaccineCode: codeableConcept,
      occurrenceDateTime: dateTime.optional(),
      occurrenceString: z.string().optional(),
    })
    .refine((i) => i.occurrenceDateTime !== undefined || i.occurrenceString !== undefined, {
      message: "occurrence[x] is required (occurrenceDateTime or occurrenceString)",
      path: ["occurrence[x]"],
    }),
  AllergyIntolerance: z.looseObject({
    ...base,
    resourceType: z.literal("AllergyIntolerance"),
    code: codeableConcept,
    type: z.enum(["allergy", "intolerance"]).optional(),
    category: z.array(z.enum(["food", "medication", "environment", "biologic"])).optional(),
    criticality: z.enum(["low", "high", "unable-to-assess"]).optional(),
    recordedDate: dateTime.optional(),
  }),
  DiagnosticReport: z.looseObject({
    ...base,
    resourceType: z.literal("DiagnosticReport"),
    status: z.enum(["registered", "partial", "preliminary", "final", "amended", "corrected", "appended", "cancelled", "entered-in-error", "unknown"]),
    code: codeableConcept,
    effectiveDateTime: dateTime.optional(),
    issued: z.string().optional(),
    result: z.array(reference).optional(),
  }),
  CarePlan: z.looseObject({
    ...base,
    resourceType: z.literal("CarePlan"),
    status: z.enum(["draft", "active", "on-hold", "revoked", "completed", "entered-in-error", "unknown"]),
    intent: z.enum(["proposal", "plan", "order", "option"]),
    period: period.optional(),
    addresses: z.array(reference).optional(),
  }),
};

/** Outcome of validating one resource: the errors name the element path and what is wrong, never its value. */
export type ShapeCheck = { ok: true } | { ok: false; errors: string[] };

/**
 * Checks one resource of a clinical type.
 * @returns `{ ok: false, errors }` with one "path: problem" line per issue, e.g. "status: Invalid option: expected one of …".
 */
export function validateClinicalResource(type: ClinicalType, resource: FhirResource): ShapeCheck {
  const r = schemas[type].safeParse(resource);
  if (r.success) return { ok: true };
  return {
    ok: false,
    errors: r.error.issues.map((i) => `${i.path.length ? i.path.map(String).join(".") : "(resource)"}: ${i.message}`),
  };
}
