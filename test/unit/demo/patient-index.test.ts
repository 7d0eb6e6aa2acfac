import { describe, expect, it } from "vitest";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { HMCPClient, HMCPErrorCode, type AuditRecordInput, type Principal } from "hmcp";
import { PatientIndex, parsePatientQuery } from "../../../demo/patient-data/patient-index.js";
import { createPatientDataServer } from "../../../demo/patient-data/agent.js";
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
    // looking only at one patient's records: the twin's details find the twin alone, no ambiguity and nobody else
    expect(index.lookup(q, "twin-0001")).toEqual({ kind: "found", patientId: "twin-0001" });
    expect(index.lookup({ name: patients[0]!.name, birthDate: patients[0]!.birthDate }, "twin-0001").kind).toBe("notFound");
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

describe("the patient-data agent", () => {
  async function ask(principal: Principal, text: string) {
    const patients = await shippedPatients();
    const records: AuditRecordInput[] = [];
    const server = createPatientDataServer({
      index: new PatientIndex(patients.map((p) => p.patient)),
      server: { auth: { localPrincipal: principal }, guardrails: false, hooks: { audit: (r) => records.push(r) } },
    });
    const client = new HMCPClient({ name: "orchestrator", version: "1" }, { guardrails: false });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    await client.connect({ type: "transport", transport: a });
    try {
      const outcome = await client.ask(text).then(
        (r) => ({ ok: true as const, r }),
        (e: { code?: number }) => ({ ok: false as const, code: e.code }),
      );
      return { outcome, records: records.filter((r) => r.type === "request") };
    } finally {
      await client.close();
      await server.close();
    }
  }

  it("records the patient whose id it disclosed, and refuses a caller bound to another patient", async () => {
    const [p, other] = await shippedPatients();
    const query = JSON.stringify({ name: p!.name, birthDate: p!.birthDate });
    const system = await ask({ clientId: "orchestrator", scopes: ["hmcp:sample"] }, query);
    expect(system.outcome.ok).toBe(true);
    expect(system.records.map((r) => r.patients)).toEqual([[p!.patient.id]]);
    const bound = await ask({ clientId: "patient-app", scopes: ["hmcp:sample"], patient: other!.patient.id! }, query);
    expect(bound.outcome).toEqual({ ok: false, code: HMCPErrorCode.PatientContextViolation });
    expect(bound.records.map((r) => [r.outcome, r.patients])).toEqual([["denied", [p!.patient.id]]]);
  });
});
