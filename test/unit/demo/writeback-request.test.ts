import { describe, expect, it } from "vitest";
import { parseWritebackRequest, WritebackRequestError } from "../../../demo/emr-writeback/request.js";
import { shippedPatients } from "./fixtures.js";

describe("parseWritebackRequest", () => {
  it("reads the reference's text form in either order, JSON objects, arrays and Bundles", async () => {
    const entry = (await shippedPatients())[0]!.encounters[0]!.entries[0]!;
    const bundle = { resourceType: "Bundle", type: "collection", entry: [entry] };
    expect(parseWritebackRequest(`clinical_data=${JSON.stringify([entry.resource])} patient_id=p-1`)).toEqual({ patientId: "p-1", entries: [{ resource: entry.resource }] });
    expect(parseWritebackRequest(`patient_id=p-2 clinical_data=${JSON.stringify(bundle)}`)).toEqual({ patientId: "p-2", entries: [entry] });
    expect(parseWritebackRequest(JSON.stringify({ patient_id: "p-3", clinical_data: bundle }))).toEqual({ patientId: "p-3", entries: [entry] });
    expect(parseWritebackRequest(JSON.stringify(bundle))).toEqual({ entries: [entry] });
    expect(parseWritebackRequest(`clinical_data=${JSON.stringify(entry.resource)}`)).toEqual({ entries: [{ resource: entry.resource }] });
  });

  it("refuses what is not FHIR with a fixed message that does not echo the content", () => {
    const secret = "Jane Roe 999-12-3456";
    for (const text of [secret, `clinical_data={${secret}`, JSON.stringify({ clinical_data: [{ note: secret }] }), JSON.stringify({ resourceType: "Bundle" })]) {
      let err: unknown;
      try {
        parseWritebackRequest(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(WritebackRequestError);
      expect((err as Error).message).not.toContain("Jane");
      expect((err as Error).message).not.toContain("999-12");
    }
  });
});
