/**
 * Reads Synthea FHIR R4 patient bundles (one `transaction` Bundle per patient) into what the orchestrator
 * holds: the patient's demographics (for the patient-data agent's index) and, per encounter, the clinical
 * and financial resources with every reference to the patient removed (the orchestrator knows the patient
 * only by name and birth date, as an outside system would).
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { type FhirResource, isClinicalType, isFinancialType, resourceDate } from "./resource.js";

/** One bundle entry as the orchestrator sends it: the source `fullUrl` is the resource's source identity. */
export interface SourceEntry {
  fullUrl: string;
  resource: FhirResource;
}

/** The resources of one encounter (or of none: `key` "unlinked"), in bundle order. */
export interface EncounterBatch {
  /** The Encounter's `fullUrl` (e.g. "urn:uuid:…"), or "unlinked:<date>" for resources tied to no encounter. */
  key: string;
  /** Encounter start (FHIR dateTime), used for chronological order. */
  start: string;
  /** Encounter type text, e.g. "Encounter for problem". */
  type: string;
  entries: SourceEntry[];
}

/** One patient's input, as read from one bundle. */
export interface PatientInput {
  /** Bundle file name (no directory). */
  file: string;
  /** The bundle's Patient resource (PHI: stays with the patient-data agent and the operator's terminal). */
  patient: FhirResource;
  /** Display name "Given Family" with Synthea's numeric suffixes removed. */
  name: string;
  birthDate: string;
  gender?: string;
  /** Encounters in chronological order (oldest first). */
  encounters: EncounterBatch[];
}

/** Display name of a FHIR HumanName list: the official (else first) name, "Given Family". */
export function displayName(names: unknown): string {
  const list = Array.isArray(names) ? (names as Array<Record<string, unknown>>) : [];
  const n = list.find((x) => x["use"] === "official") ?? list[0];
  if (!n) return "";
  const given = Array.isArray(n["given"]) ? (n["given"] as unknown[]).filter((g): g is string => typeof g === "string") : [];
  const family = typeof n["family"] === "string" ? n["family"] : "";
  return [given[0] ?? "", family].filter(Boolean).join(" ").replace(/\d+/g, "").replace(/\s+/g, " ").trim();
}

/** Removes every Reference to `patientRef` (as a property value or array element), recursively. */
export function stripPatientReferences<T>(value: T, patientRefs: ReadonlySet<string>): T {
  const isPatientRef = (v: unknown): boolean =>
    v !== null && typeof v === "object" && !Array.isArray(v) && patientRefs.has((v as { reference?: unknown }).reference as string);
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.filter((x) => !isPatientRef(x)).map(visit);
    if (v !== null && typeof v === "object") {
      const out: Record<string, unknown> = {};
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
        if (isPatientRef(child)) continue;
        out[k] = visit(child);
      }
      return out;
    }
    return v;
  };
  return visit(value) as T;
}

function encounterOf(r: FhirResource): string | undefined {
  const direct = (r["encounter"] as { reference?: unknown } | undefined)?.reference;
  if (typeof direct === "string") return direct;
  // Claim / ExplanationOfBenefit: item[].encounter[]
  const items = Array.isArray(r["item"]) ? (r["item"] as Array<Record<string, unknown>>) : [];
  for (const it of items) {
    const encs = Array.isArray(it["encounter"]) ? (it["encounter"] as Array<{ reference?: unknown }>) : [];
    const ref = encs[0]?.reference;
    if (typeof ref === "string") return ref;
  }
  return undefined;
}

/**
 * Parses one Synthea bundle.
 * @param label - how errors name the bundle: never the file name, which in Synthea output is the patient's name
 * @throws Error naming `label` when it is not a Bundle with exactly one Patient.
 */
export function parsePatientBundle(file: string, bundle: unknown, label = "the bundle"): PatientInput {
  const b = bundle as { resourceType?: unknown; entry?: unknown };
  if (b?.resourceType !== "Bundle" || !Array.isArray(b.entry)) throw new Error(`${label} is not a FHIR Bundle with entries`);
  const entries = (b.entry as Array<{ fullUrl?: unknown; resource?: FhirResource }>).filter(
    (e): e is { fullUrl: string; resource: FhirResource } => typeof e.fullUrl === "string" && typeof e.resource?.resourceType === "string",
  );
  const patients = entries.filter((e) => e.resource.resourceType === "Patient");
  if (patients.length !== 1) throw new Error(`${label}: expected exactly one Patient entry, found ${patients.length}`);
  const pe = patients[0]!;
  const patientRefs = new Set([pe.fullUrl, `Patient/${pe.resource.id ?? ""}`]);

  const batches = new Map<string, EncounterBatch>();
  const encounterStart = new Map<string, string>();
  for (const e of entries) {
    if (e.resource.resourceType !== "Encounter") continue;
    const period = e.resource["period"] as { start?: string } | undefined;
    const typeText = ((e.resource["type"] as Array<{ text?: string }> | undefined)?.[0]?.text ?? "Encounter").toString();
    const start = period?.start ?? "";
    encounterStart.set(start, e.fullUrl);
    batches.set(e.fullUrl, { key: e.fullUrl, start, type: typeText, entries: [] });
  }
  for (const e of entries) {
    const t = e.resource.resourceType;
    if (!isClinicalType(t) && !isFinancialType(t)) continue;
    let key = encounterOf(e.resource);
    if (!key || !batches.has(key)) {
      // AllergyIntolerance carries no encounter in Synthea: attach it to the encounter that starts at its date.
      const date = resourceDate(e.resource) ?? "";
      key = encounterStart.get(date) ?? `unlinked:${date}`;
      if (!batches.has(key)) batches.set(key, { key, start: date, type: "No encounter", entries: [] });
    }
    batches.get(key)!.entries.push({ fullUrl: e.fullUrl, resource: stripPatientReferences(e.resource, patientRefs) });
  }
  const encounters = [...batches.values()].filter((x) => x.entries.length > 0).sort((a, c) => (a.start < c.start ? -1 : a.start > c.start ? 1 : 0));
  const p = pe.resource;
  return {
    file,
    patient: p,
    name: displayName(p["name"]),
    birthDate: typeof p["birthDate"] === "string" ? p["birthDate"] : "",
    ...(typeof p["gender"] === "string" ? { gender: p["gender"] } : {}),
    encounters,
  };
}

/**
 * Reads every `*.json` bundle in `dir` (sorted by file name, so runs are deterministic). Given a data set's root that
 * keeps its bundles in a `bundles/` folder (as `../shared/data/synthea` does), reads that folder.
 * @throws Error when the folder is missing or holds no bundles (naming the folder), or when a bundle is not valid
 *   JSON or not a patient Bundle (naming its position, not its file name: Synthea file names are patient names).
 */
export async function loadPatientBundles(dir: string): Promise<PatientInput[]> {
  const help = "--data expects a folder of Synthea FHIR bundles (*.json), e.g. ../shared/data/synthea/bundles";
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    throw new Error(`cannot read the folder ${dir} (${help})`);
  }
  if (names.includes("bundles") && !names.some((f) => f.endsWith(".json") && f !== "manifest.json")) return loadPatientBundles(path.join(dir, "bundles"));
  const files = names.filter((f) => f.endsWith(".json")).sort();
  if (files.length === 0) throw new Error(`no FHIR bundles (*.json) in ${dir} (${help})`);
  const out: PatientInput[] = [];
  for (let i = 0; i < files.length; i++) {
    const f = files[i]!;
    const label = `bundle ${i + 1} of ${files.length} in ${dir} (sorted by file name)`;
    const text = await readFile(path.join(dir, f), "utf8");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`${label} is not valid JSON`);
    }
    out.push(parsePatientBundle(f, json, label));
  }
  return out;
}
