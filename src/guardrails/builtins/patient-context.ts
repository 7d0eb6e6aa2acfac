/**
 * `patient-context`: blocks content that refers to a patient other than the request's patient
 * context (SMART App Launch 2.x launch context `patient`). Looks for FHIR references
 * (`Patient/<id>`, JSON `"subject"`/`"patient"` references and `"patient": "<id>"`) and for labelled
 * patient ids in text (`patient id: <id>`), and in structured JSON (tool arguments, structured content) for
 * `patient`/`patientId`/`patient_id` members and `subject` references ({@link findStructuredPatientReferences}). Block reasons: `patient_context_mismatch`, and
 * `patient_context_missing` when `requireContext` is set and the request has no patient context. A block names the
 * patients the content refers to outside the context (`patients`; all of them when there is no context): the server
 * pipeline adds them to the audit record's `patients`, so the patient an attempt was about finds it in their
 * accounting of disclosures; the caller's error names no patient.
 */
import { z } from "zod";
import type { Guardrail, GuardrailFactory } from "../guardrail.js";
import type { GuardrailContext } from "../types.js";
import { FHIR_ID } from "../../protocol/fhir-id.js";

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
  return referencesIn(text, REFS);
}

/**
 * The ids of `text`'s FHIR references alone (`Patient/<id>`, JSON reference members): what a block may record in the
 * audit trail's `patients`. A labelled id in prose ("patient id: 078-05-1120") may be an MRN or an SSN, not a FHIR id:
 * it blocks, and is never written to the trail.
 */
function fhirReferencesIn(text: string): string[] {
  return referencesIn(text, REFS.slice(0, 2));
}

function referencesIn(text: string, patterns: readonly RegExp[]): string[] {
  const ids: string[] = [];
  for (const re of patterns) {
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

/** Keys whose string value names a patient in structured JSON (tool arguments, structured content, form values). */
const PATIENT_KEYS = new Set(["patient", "patientId", "patient_id"]);

/** The FHIR id in a bare id or a `Patient/<id>` reference; undefined for anything else. */
function patientIdOf(value: string, bareAllowed: boolean): string | undefined {
  const id = value.startsWith("Patient/") ? value.slice(8) : bareAllowed ? value : undefined;
  return id !== undefined && FHIR_ID.test(id) ? id : undefined;
}

/** Deepest nesting the structural check reads (from the payload root); a deeper payload is blocked, not skipped. */
const MAX_STRUCTURE_DEPTH = 64;

/**
 * Patient ids named by key in structured JSON, in order, deduplicated: a `"patient"`, `"patientId"` or `"patient_id"`
 * member holding an id or `Patient/<id>`, and a `"subject"` or patient member holding `Patient/<id>` or a FHIR
 * Reference (`{ "reference": "Patient/<id>" }`), anywhere in the payload (`_meta` included).
 * @returns the ids, or `undefined` when the payload nests deeper than 64 levels (not fully read: the caller blocks)
 */
export function findStructuredPatientReferences(value: unknown): string[] | undefined {
  const ids: string[] = [];
  return scanStructure(value, ids, 0) ? ids : undefined;
}

function scanStructure(value: unknown, ids: string[], depth: number): boolean {
  if (typeof value !== "object" || value === null) return true;
  if (depth > MAX_STRUCTURE_DEPTH) return false;
  if (Array.isArray(value)) {
    for (const v of value) if (!scanStructure(v, ids, depth + 1)) return false;
    return true;
  }
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const named = PATIENT_KEYS.has(k);
    if (named || k === "subject") {
      let id: string | undefined;
      if (typeof v === "string") id = patientIdOf(v, named);
      else if (typeof v === "object" && v !== null && typeof (v as { reference?: unknown }).reference === "string") {
        id = patientIdOf((v as { reference: string }).reference, false);
      }
      if (id !== undefined && !ids.includes(id)) ids.push(id);
    }
    if (!scanStructure(v, ids, depth + 1)) return false;
  }
  return true;
}

/** Builds the patient-context guardrail. @throws ZodError on bad options */
export function createPatientContextGuardrail(options: PatientContextOptions = {}): Guardrail {
  const { name = "patient-context", ...params } = options;
  const p = ParamsSchema.parse(params);
  // a block names the patients the content refers to outside the context by FHIR reference or structured key (for
  // the audit record; never the caller): `recordable` filters out what may be another identifier (a labelled id)
  const decide = (refs: string[], ctx: GuardrailContext, recordable: (id: string) => boolean = () => true): { action: "allow" } | { action: "block"; reason: string; patients: string[] } => {
    if (refs.length === 0) return { action: "allow" };
    const patient = ctx.patient ?? ctx.principal?.patient;
    if (patient === undefined) return p.requireContext ? { action: "block", reason: "patient_context_missing", patients: refs.filter(recordable) } : { action: "allow" };
    const others = refs.filter((id) => id !== patient);
    return others.length > 0 ? { action: "block", reason: "patient_context_mismatch", patients: others.filter(recordable) } : { action: "allow" };
  };
  return {
    name,
    check(text, ctx) {
      if (!text.includes("atient") && !text.includes("subject") && !text.includes("ATIENT")) return { action: "allow" };
      const refs = findPatientReferences(text);
      if (refs.length === 0) return { action: "allow" };
      const references = fhirReferencesIn(text);
      return decide(refs, ctx, (id) => references.includes(id));
    },
    // Structured JSON names patients by key ({ "patientId": "pat-B" }), which no single text item shows.
    checkExchange(view, ctx) {
      const refs = findStructuredPatientReferences(view.payload);
      return refs === undefined ? { action: "block", reason: "payload_too_deep" } : decide(refs, ctx);
    },
  };
}

export const patientContextFactory: GuardrailFactory = (params, env) => createPatientContextGuardrail({ ...ParamsSchema.parse(params), name: env.name });
