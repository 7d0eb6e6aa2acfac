import { describe, expect, it } from "vitest";
import { isClinicalType } from "../../../demo/fhir/resource.js";
import { validateClinicalResource } from "../../../demo/fhir/validate.js";
import { shippedPatients } from "./fixtures.js";

describe("validateClinicalResource", () => {
  it("accepts every clinical resource of the shipped bundles", async () => {
    let n = 0;
    for (const p of await shippedPatients())
      for (const e of p.encounters)
        for (const { resource } of e.entries)
          if (isClinicalType(resource.resourceType)) {
            expect(validateClinicalResource(resource.resourceType, resource)).toEqual({ ok: true });
            n++;
          }
    expect(n).toBeGreaterThan(500);
  });

  it("names the element and the problem for broken resources", async () => {
    const obs = (await shippedPatients())[0]!.encounters.flatMap((e) => e.entries).find((e) => e.resource.resourceType === "Observation")!.resource;
    const noStatus = { ...obs, status: "done" };
    const r1 = validateClinicalResource("Observation", noStatus);
    expect(r1.ok).toBe(false);
    expect(!r1.ok && r1.errors.join("\n")).toMatch(/^status: /m);
    const badDate = { ...obs, effectiveDateTime: "yesterday" };
    const r2 = validateClinicalResource("Observation", badDate);
    expect(!r2.ok && r2.errors).toEqual(["effectiveDateTime: must be a FHIR dateTime (YYYY[-MM[-DD[Thh:mm[:ss[.sss]]±zz:zz]]])"]);
    const r3 = validateClinicalResource("MedicationRequest", { resourceType: "MedicationRequest", status: "active", intent: "order" });
    expect(!r3.ok && r3.errors).toEqual(["medication[x]: medication[x] is required (medicationCodeableConcept or medicationReference)"]);
  });
});
