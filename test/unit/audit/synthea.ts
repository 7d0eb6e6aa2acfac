// Identifiers of the Synthea patients the tests and the demo use: what the PHI scan looks for.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "../../..");
/** Shared data sets (read-only; see its README and licences). */
export const sharedSynthea = path.resolve(repoRoot, "../shared/data/synthea/bundles");
/** The demo's own sample (Apache-2.0, with attribution in demo/data/NOTICE.md). */
export const demoSynthea = path.resolve(repoRoot, "demo/data/bundles");

export interface SyntheaPatient {
  file: string;
  /** FHIR Patient.id: an identifier the audit trail may carry. */
  id: string;
  given: string[];
  family: string;
  ssn?: string;
  mrn?: string;
  phone?: string;
  driversLicence?: string;
  passport?: string;
}

interface FhirPatient {
  resourceType: string;
  id: string;
  name?: { given?: string[]; family?: string }[];
  identifier?: { type?: { coding?: { code?: string }[] }; value?: string }[];
  telecom?: { system?: string; value?: string }[];
}

/** Reads the Patient of each bundle in `dir` (missing dir: none). */
export function loadSyntheaPatients(dir: string): SyntheaPatient[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => {
      const bundle = JSON.parse(readFileSync(path.join(dir, f), "utf8")) as { entry: { resource: FhirPatient }[] };
      const p = bundle.entry.map((e) => e.resource).find((r) => r.resourceType === "Patient")!;
      const ident = (code: string) => p.identifier?.find((i) => i.type?.coding?.some((c) => c.code === code))?.value;
      const name = p.name?.[0] ?? {};
      return {
        file: f,
        id: p.id,
        given: name.given ?? [],
        family: name.family ?? "",
        ssn: ident("SS"),
        mrn: ident("MR"),
        driversLicence: ident("DL"),
        passport: ident("PPN"),
        phone: p.telecom?.find((t) => t.system === "phone")?.value,
      };
    });
}

/**
 * The strings that must never appear in a log: full names, given and family names (4+ letters,
 * matched as whole words, case-sensitive), SSNs, MRNs, phone numbers, licence and passport numbers.
 */
export function phiNeedles(patients: SyntheaPatient[]): { label: string; re: RegExp }[] {
  const out: { label: string; re: RegExp }[] = [];
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  for (const p of patients) {
    // Labels name the FHIR id only: the bundle file name itself carries the patient's name.
    const who = `Synthea Patient/${p.id}`;
    for (const n of [...p.given, p.family]) if (n.length >= 4) out.push({ label: `name of ${who}`, re: new RegExp(`(?<![\\p{L}\\p{N}])${esc(n)}(?![\\p{L}\\p{N}])`, "u") });
    for (const [kind, v] of [["SSN", p.ssn], ["MRN", p.mrn], ["phone", p.phone], ["licence", p.driversLicence], ["passport", p.passport]] as const) {
      if (v) out.push({ label: `${kind} of ${who}`, re: new RegExp(esc(v)) });
    }
  }
  return out;
}
