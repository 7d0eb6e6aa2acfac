/**
 * FHIR R4 resource helpers the demo agents share: the clinical / financial type sets and a reference walker.
 * Spec: https://hl7.org/fhir/R4/references.html
 */

/** A FHIR resource as JSON. Only `resourceType` is known; everything else is checked per type (validate.ts). */
export interface FhirResource {
  resourceType: string;
  id?: string;
  [key: string]: unknown;
}

/** The clinical resource types the EMR-writeback agent accepts (issue 5). */
export const CLINICAL_TYPES = [
  "Observation",
  "Condition",
  "MedicationRequest",
  "Procedure",
  "Immunization",
  "AllergyIntolerance",
  "DiagnosticReport",
  "CarePlan",
] as const;
export type ClinicalType = (typeof CLINICAL_TYPES)[number];

/** Financial resource types: not clinical data; the EMR agent refuses them with {@link FINANCIAL_REASON}. */
export const FINANCIAL_TYPES = ["Claim", "ExplanationOfBenefit", "Coverage", "Invoice", "PaymentNotice", "PaymentReconciliation"] as const;

export function isClinicalType(t: string): t is ClinicalType {
  return (CLINICAL_TYPES as readonly string[]).includes(t);
}
export function isFinancialType(t: string): boolean {
  return (FINANCIAL_TYPES as readonly string[]).includes(t);
}

/**
 * The element that points at the patient, per clinical type: `patient` for Immunization and
 * AllergyIntolerance, `subject` for the others (FHIR R4 resource definitions).
 */
export function patientElement(t: ClinicalType): "subject" | "patient" {
  return t === "Immunization" || t === "AllergyIntolerance" ? "patient" : "subject";
}

/**
 * Calls `fn` on every FHIR Reference (an object with a string `reference`) inside `value`, depth first.
 * `fn` returns the new reference string, or `undefined` to keep it. Returns a new value; the input is not mutated.
 */
export function mapReferences<T>(value: T, fn: (reference: string) => string | undefined): T {
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(visit);
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) out[k] = visit(child);
      if (typeof out["reference"] === "string") {
        const next = fn(out["reference"]);
        if (next !== undefined) out["reference"] = next;
      }
      return out;
    }
    return v;
  };
  return visit(value) as T;
}

/** Every reference string inside `value`. */
export function collectReferences(value: unknown): string[] {
  const found: string[] = [];
  mapReferences(value, (r) => {
    found.push(r);
    return undefined;
  });
  return found;
}

/** The clinically meaningful date of a resource (for ordering and summaries), or undefined. */
export function resourceDate(r: FhirResource): string | undefined {
  for (const k of ["effectiveDateTime", "occurrenceDateTime", "authoredOn", "recordedDate", "onsetDateTime", "issued"]) {
    const v = r[k];
    if (typeof v === "string") return v;
  }
  for (const k of ["performedPeriod", "period", "effectivePeriod"]) {
    const v = r[k] as { start?: unknown } | undefined;
    if (v && typeof v.start === "string") return v.start;
  }
  return undefined;
}
