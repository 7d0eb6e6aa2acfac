/** Shared helpers for the demo unit tests: the demo's shipped bundles, read through the demo's own reader. */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadPatientBundles, type PatientInput } from "../../../demo/fhir/synthea.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const shippedBundles = path.join(repoRoot, "demo/data/bundles");

let cached: Promise<PatientInput[]> | undefined;
export function shippedPatients(): Promise<PatientInput[]> {
  cached ??= loadPatientBundles(shippedBundles);
  return cached;
}
