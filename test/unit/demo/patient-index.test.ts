import { describe, expect, it } from "vitest";
import { PatientIndex, parsePatientQuery } from "../../../demo/patient-data/patient-index.js";
import { shippedPatients } from "./fixtures.js";

describe("PatientIndex on the shipped Synthea patients", () => {
  it("finds each patient by display name and birth date, and only by both", async () => {
    const patients = await shippedPatients();
    const index = new PatientIndex(patients.map((p) => p.patient));
    for (const p of patients) {
      expect(index.lookup({ name: p.name, birthDate: p.birthDate })).toEqual({ kind: "found", patientId: p.patient.id });
      expect(index.lookup({ name: p.name.toUpperCase(), birthDate: p.birthDate })).toEqual({ kind: "found", patientId: p.patient.id });
      expect(index.lookup({ name: p.name })).toMatchObject({ kind: "infoNeeded", fields: ["birthDate"] });
    }
    const first = patients[0]!;
    const [given, family] = first.name.split(" ");
    expect(index.lookup({ name: `${family}, ${given}`, birthDate: first.birthDate })).toEqual({ kind: "found", patientId: first.patient.id });
    expect(index.lookup({ name: first.name, birthDate: "1900-01-01" }).kind).toBe("notFound");
    expect(index.lookup({}).kind).toBe("infoNeeded");
    // The same record twice (one patient's bundle given twice) is not an ambiguity.
    const twice = new PatientIndex([first.patient, first.patient]);
    expect(twice.lookup({ name: first.name, birthDate: first.birthDate })).toEqual({ kind: "found", patientId: first.patient.id });
  });

  it("asks for more when two records share name and birth date, and resolves with gender or MRN", async () => {
    const patients = await shippedPatients();
    const original = patients[1]!.patient;
    const twin = { ...structuredClone(original), id: "twin-0001", gender: original["gender"] === "male" ? "female" : "male", identifier: [] };
    const index = new PatientIndex([...patients.map((p) => p.patient), twin]);
    const q = { name: patients[1]!.name, birthDate: patients[1]!.birthDate };
    const r = index.lookup(q);
    expect(r).toMatchObject({ kind: "infoNeeded", fields: ["gender", "mrn"] });
    expect(index.lookup({ ...q, gender: String(original["gender"]) })).toEqual({ kind: "found", patientId: original.id });
    expect(index.lookup({ ...q, gender: String(twin.gender) })).toEqual({ kind: "found", patientId: "twin-0001" });
    const mrn = (original["identifier"] as Array<{ type?: { coding?: Array<{ code?: string }> }; value: string }>).find((i) => i.type?.coding?.[0]?.code === "MR")!.value;
    expect(index.lookup({ ...q, mrn })).toEqual({ kind: "found", patientId: original.id });
  });
});

describe("parsePatientQuery", () => {
  it("reads the reference's text form and JSON", () => {
    expect(parsePatientQuery("patient identifier for Adan Portillo born 1961-04-12")).toEqual({ name: "Adan Portillo", birthDate: "1961-04-12" });
    expect(parsePatientQuery("patient identifier for Adan Portillo")).toEqual({ name: "Adan Portillo" });
    expect(parsePatientQuery('{"given":"Adan","family":"Portillo","dob":"1961-04-12"}')).toEqual({ name: "Adan Portillo", birthDate: "1961-04-12" });
    expect(parsePatientQuery("identifier of Portillo, Adan dob 1961-04-12 male")).toEqual({ name: "Portillo, Adan", birthDate: "1961-04-12", gender: "male" });
  });
});
