/**
 * The patient-data agent's master patient index (MPI), built from FHIR Patient resources.
 * A lookup needs a name AND a birth date; it answers with the patient id only (minimum necessary:
 * never SSN, address, phone). Name matching ignores case, accents, punctuation and Synthea's numeric
 * suffixes, and accepts "Given Family" or "Family, Given".
 */
import type { FhirResource } from "../fhir/resource.js";

export interface PatientQuery {
  /** Full name, "Given Family" or "Family, Given". */
  name?: string;
  /** FHIR date, YYYY-MM-DD. */
  birthDate?: string;
  /** FHIR administrative gender, used only to tell apart patients with the same name and birth date. */
  gender?: string;
  /** Medical record number, used only to tell apart patients with the same name and birth date. */
  mrn?: string;
}

export type LookupResult =
  | { kind: "found"; patientId: string }
  | { kind: "infoNeeded"; fields: string[]; message: string }
  | { kind: "notFound"; message: string };

interface Entry {
  id: string;
  names: string[];
  birthDate: string;
  gender?: string;
  mrns: string[];
}

/** Normalised name key: lower case, no accents, digits or punctuation, single spaces. */
export function normalizeName(s: string): string {
  return s
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/['’]/g, "")
    .replace(/[^A-Za-z\s,-]/g, " ")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .trim();
}

/** "Family, Given" → "given family"; otherwise the normalised name. */
function queryNameKey(name: string): string {
  const n = normalizeName(name);
  const comma = n.indexOf(",");
  if (comma >= 0) return normalizeName(`${n.slice(comma + 1)} ${n.slice(0, comma)}`);
  return n.replace(/,/g, "");
}

export class PatientIndex {
  private readonly entries: Entry[];

  constructor(patients: readonly FhirResource[]) {
    this.entries = patients.map((p) => {
      const names = (Array.isArray(p["name"]) ? (p["name"] as Array<Record<string, unknown>>) : []).flatMap((n) => {
        const given = Array.isArray(n["given"]) ? (n["given"] as string[]) : [];
        const family = typeof n["family"] === "string" ? n["family"] : "";
        return given.length ? given.map((g) => normalizeName(`${g} ${family}`)) : [normalizeName(family)];
      });
      const mrns = (Array.isArray(p["identifier"]) ? (p["identifier"] as Array<Record<string, unknown>>) : [])
        .filter((i) => ((i["type"] as { coding?: Array<{ code?: string }> } | undefined)?.coding ?? []).some((c) => c.code === "MR"))
        .map((i) => String(i["value"]));
      return {
        id: String(p.id),
        names,
        birthDate: typeof p["birthDate"] === "string" ? p["birthDate"] : "",
        ...(typeof p["gender"] === "string" ? { gender: p["gender"] } : {}),
        mrns,
      };
    });
  }

  get size(): number {
    return this.entries.length;
  }

  /** True when `id` is a patient of this index. */
  has(id: string): boolean {
    return this.entries.some((e) => e.id === id);
  }

  /** The ids of every patient whose name and birth date match `q` (none when either is missing). */
  matches(q: PatientQuery): string[] {
    if (!q.name?.trim() || !q.birthDate?.trim()) return [];
    const key = queryNameKey(q.name);
    return [...new Set(this.entries.filter((e) => e.birthDate === q.birthDate && e.names.includes(key)).map((e) => e.id))];
  }

  /**
   * Finds one patient. Missing name or birth date → `infoNeeded` naming the missing fields; several matches
   * → `infoNeeded` asking for gender / MRN (whichever is not yet given); none → `notFound`.
   * @param within - look only at this Patient id's records (a caller bound to one patient: the index then answers
   *   nothing about anyone else, not even whether they exist)
   */
  lookup(q: PatientQuery, within?: string): LookupResult {
    const missing = [...(q.name?.trim() ? [] : ["name"]), ...(q.birthDate?.trim() ? [] : ["birthDate"])];
    if (missing.length) return { kind: "infoNeeded", fields: missing, message: `To identify the patient I need: ${missing.join(", ")}.` };
    const key = queryNameKey(q.name!);
    const match = (e: Entry) => (within === undefined || e.id === within) && e.birthDate === q.birthDate && e.names.includes(key);
    // The same Patient (same id) read from two bundles is one patient, not an ambiguity.
    let hits = [...new Map(this.entries.filter(match).map((e) => [e.id, e])).values()];
    if (hits.length === 0) return { kind: "notFound", message: "No patient with this name and birth date is known to the patient index." };
    if (hits.length > 1 && q.gender) hits = hits.filter((e) => e.gender === q.gender!.toLowerCase());
    if (hits.length > 1 && q.mrn) hits = hits.filter((e) => e.mrns.includes(q.mrn!));
    if (hits.length === 1) return { kind: "found", patientId: hits[0]!.id };
    if (hits.length === 0) return { kind: "notFound", message: "No patient with these details is known to the patient index." };
    const fields = [...(q.gender ? [] : ["gender"]), ...(q.mrn ? [] : ["mrn"])];
    if (fields.length === 0)
      return { kind: "notFound", message: "Several patient records match every detail given; they need manual reconciliation before any write." };
    return { kind: "infoNeeded", fields, message: `More than one patient matches this name and birth date; to tell them apart I need: ${fields.join(", ")}.` };
  }
}

/**
 * Reads a lookup request: a JSON object (`name` or `given`+`family`, `birthDate` / `birth_date` / `dob`,
 * optional `gender`, `mrn`) or plain text such as "patient identifier for Adan Portillo born 1961-04-12".
 */
export function parsePatientQuery(text: string): PatientQuery {
  const trimmed = text.trim();
  if (trimmed.startsWith("{")) {
    try {
      const o = JSON.parse(trimmed) as Record<string, unknown>;
      const str = (k: string): string | undefined => (typeof o[k] === "string" ? (o[k] as string) : undefined);
      const name = str("name") ?? ([str("given"), str("family")].filter(Boolean).join(" ") || undefined);
      const birthDate = str("birthDate") ?? str("birth_date") ?? str("dob");
      return { ...(name ? { name } : {}), ...(birthDate ? { birthDate } : {}), ...(str("gender") ? { gender: str("gender")! } : {}), ...(str("mrn") ? { mrn: str("mrn")! } : {}) };
    } catch {
      // not JSON after all: fall through to the text form
    }
  }
  const date = /\b(\d{4}-\d{2}-\d{2})\b/.exec(trimmed)?.[1];
  const nameMatch =
    /\b(?:for|of|patient)\s+(?:named\s+)?(.+?)\s*(?:,?\s*(?:born|dob|birth\s*date|date of birth)\b|\d{4}-\d{2}-\d{2}|[.?!]?$)/i.exec(trimmed);
  let name = nameMatch?.[1]?.replace(/^(?:identifier|id)\s+(?:for|of)\s+/i, "").trim();
  if (name && /^(identifier|id)$/i.test(name)) name = undefined;
  const gender = /\b(male|female|other|unknown)\b/i.exec(trimmed)?.[1]?.toLowerCase();
  const mrn = /\bmrn[:=\s]+([A-Za-z0-9-]+)/i.exec(trimmed)?.[1];
  return { ...(name ? { name } : {}), ...(date ? { birthDate: date } : {}), ...(gender ? { gender } : {}), ...(mrn ? { mrn } : {}) };
}
