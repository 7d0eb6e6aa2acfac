import { mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadPatientBundles } from "../../../demo/fhir/synthea.js";
import { shippedBundles } from "./fixtures.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const temp = () => {
  const d = mkdtempSync(path.join(tmpdir(), "hmcp-bundles-"));
  dirs.push(d);
  return d;
};

describe("loadPatientBundles (the demo's --data)", () => {
  it("reads a data set's root through its bundles/ folder", async () => {
    const root = temp();
    mkdirSync(path.join(root, "bundles"));
    const first = readdirSync(shippedBundles).filter((f) => f.endsWith(".json")).sort()[0]!;
    writeFileSync(path.join(root, "bundles", first), readFileSync(path.join(shippedBundles, first), "utf8"));
    writeFileSync(path.join(root, "manifest.json"), JSON.stringify({ files: [first] }));
    const patients = await loadPatientBundles(root);
    expect(patients).toHaveLength(1);
    expect(patients[0]!.patient.resourceType).toBe("Patient");
  });

  it("names a bad bundle by its position, never by its file name (Synthea file names are patient names)", async () => {
    const dir = temp();
    writeFileSync(path.join(dir, "Aaron_Zieme_1234.json"), JSON.stringify({ resourceType: "Bundle", entry: [] }));
    writeFileSync(path.join(dir, "Brendon_Rath_c24d.json"), "{ not json");
    const e1 = await loadPatientBundles(dir).then(() => undefined, (e: Error) => e.message);
    expect(e1).toMatch(/^bundle 1 of 2 in .+: expected exactly one Patient entry, found 0$/);
    rmSync(path.join(dir, "Aaron_Zieme_1234.json"));
    const e2 = await loadPatientBundles(dir).then(() => undefined, (e: Error) => e.message);
    expect(e2).toMatch(/^bundle 1 of 1 in .+ is not valid JSON$/);
    for (const m of [e1, e2]) expect(m).not.toMatch(/Aaron|Zieme|Brendon|Rath/);
  });

  it("a missing or empty folder says what --data expects", async () => {
    await expect(loadPatientBundles(path.join(temp(), "nope"))).rejects.toThrow(/cannot read the folder .*--data expects a folder of Synthea FHIR bundles/);
    await expect(loadPatientBundles(temp())).rejects.toThrow(/no FHIR bundles \(\*\.json\) in .*--data expects/);
  });
});

