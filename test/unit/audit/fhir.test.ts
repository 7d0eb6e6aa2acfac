import { describe, expect, it } from "vitest";
import { exportFhirAuditEvents, newAuditRecord, type AuditRecordInput, type FhirAuditEvent } from "hmcp";
import { sampleRecord } from "./helpers.js";

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const CODE = /^[^\s]+( [^\s]+)*$/;

/** The FHIR R4 AuditEvent cardinalities and value sets this export must satisfy (hl7.org/fhir/R4/auditevent.html). */
function assertR4AuditEvent(e: FhirAuditEvent): void {
  expect(e.resourceType).toBe("AuditEvent");
  expect(e.id).toMatch(/^[A-Za-z0-9\-.]{1,64}$/);
  // type 1..1 Coding
  expect(e.type.system).toMatch(/^http/);
  expect(e.type.code).toMatch(CODE);
  // recorded 1..1 instant
  expect(e.recorded).toMatch(INSTANT);
  // action 0..1 from C|R|U|D|E, outcome 0..1 from 0|4|8|12
  if (e.action !== undefined) expect(["C", "R", "U", "D", "E"]).toContain(e.action);
  if (e.outcome !== undefined) expect(["0", "4", "8", "12"]).toContain(e.outcome);
  // agent 1..*, each with requestor 1..1; at least one requestor
  expect(e.agent.length).toBeGreaterThan(0);
  for (const a of e.agent) expect(typeof a.requestor).toBe("boolean");
  expect(e.agent.filter((a) => a.requestor)).toHaveLength(1);
  for (const a of e.agent) if (a.network) expect(["1", "2", "3", "4", "5"]).toContain(a.network.type);
  // source 1..1 with observer 1..1 (a Reference with at least one of reference/identifier/display)
  expect(e.source.observer.reference ?? e.source.observer.identifier?.value ?? e.source.observer.display).toBeTruthy();
  // entity: sev-1 (name and query not both) holds trivially; each entity's what is a Reference
  for (const ent of e.entity ?? []) {
    expect(ent.what?.reference ?? ent.what?.identifier?.value).toBeTruthy();
    for (const d of ent.detail ?? []) {
      expect(typeof d.type).toBe("string");
      expect(typeof d.valueString).toBe("string");
    }
  }
  if (e.period?.start && e.period.end) expect(Date.parse(e.period.start)).toBeLessThanOrEqual(Date.parse(e.period.end));
}

describe("exportFhirAuditEvents", () => {
  const records: AuditRecordInput[] = [
    sampleRecord(0),
    sampleRecord(1),
    sampleRecord(2),
    sampleRecord(3, { status: -32603, reason: "internal_error" }),
    sampleRecord(4, { method: "resources/read" }),
    sampleRecord(5, { method: "tools/list", patients: [] }),
    newAuditRecord({ type: "http", agent: "emr", outcome: "denied", reason: "invalid_token", status: 401, method: "POST /mcp", source: { address: "::1" } }),
    newAuditRecord({ type: "session.start", agent: "emr", outcome: "allowed", actor: { clientId: "orchestrator" }, sessionId: "s1" }),
    newAuditRecord({ type: "session.end", agent: "emr", outcome: "allowed", actor: { clientId: "orchestrator" }, sessionId: "s1", reason: "closed" }),
  ];
  const bundle = exportFhirAuditEvents(records, { timestamp: new Date(0), site: "ward-7" });

  it("is a Bundle whose every AuditEvent has the R4 required elements", () => {
    expect(bundle).toMatchObject({ resourceType: "Bundle", type: "collection", timestamp: "1970-01-01T00:00:00.000Z" });
    // bdl-1: total only on searchset/history bundles
    expect("total" in bundle).toBe(false);
    // round-trips through JSON (what the CLI prints)
    const parsed = JSON.parse(JSON.stringify(bundle)) as typeof bundle;
    expect(parsed.entry).toHaveLength(records.length);
    for (const { fullUrl, resource } of parsed.entry) {
      expect(fullUrl).toBe(`urn:uuid:${resource.id}`);
      assertR4AuditEvent(resource);
      expect(resource.source.site).toBe("ward-7");
    }
  });

  it("maps outcomes, DICOM types and restful-interaction subtypes", () => {
    const ev = bundle.entry.map((e) => e.resource);
    expect(ev.map((e) => e.outcome)).toEqual(["0", "4", "4", "12", "0", "4", "4", "0", "0"]);
    expect(ev[0]!.type).toMatchObject({ system: "http://dicom.nema.org/resources/ontology/DCM", code: "110110" });
    expect(ev[0]!.subtype).toEqual(expect.arrayContaining([expect.objectContaining({ system: "http://hl7.org/fhir/restful-interaction", code: "operation" }), { system: "urn:hmcp:mcp-method", code: "sampling/createMessage" }]));
    expect(ev[4]!.action).toBe("R");
    expect(ev[4]!.subtype?.[0]?.code).toBe("read");
    expect(ev[5]!.type.code).toBe("110112");
    expect(ev[6]!.type.code).toBe("110114");
    expect(ev[6]!.subtype?.[0]?.code).toBe("110122");
    expect(ev[6]!.outcomeDesc).toBe("invalid_token");
    expect(ev[8]!.subtype?.[0]?.code).toBe("110123");
  });

  it("puts the patient in entity and the requestor in agent, digests in details, never content", () => {
    const e = bundle.entry[1]!.resource;
    expect(e.entity?.[0]).toMatchObject({ what: { reference: "Patient/pat-1" }, role: { code: "1" }, type: { code: "1" } });
    const req = e.agent.find((a) => a.requestor)!;
    expect(req).toMatchObject({ who: { reference: "Practitioner/pr-1", identifier: { value: "client-1" } }, altId: "client-1", network: { address: "127.0.0.1", type: "2" } });
    const details = Object.fromEntries(e.entity!.at(-1)!.detail!.map((d) => [d.type, d.valueString]));
    expect(details["request-sha256"]).toBe("a".repeat(64));
    expect(details["guardrail"]).toBe("phi-redactor;output;redact;NAME;");
  });

  it("leaves out what FHIR cannot carry instead of throwing or writing empty strings: a time that is no date, an empty request id or reason", () => {
    // such records are refused by the sinks now; trails written before may still hold them
    const old = { ...sampleRecord(0), time: "yesterday", requestId: "", reason: "", actor: { sub: "", clientId: "client-1" } } as AuditRecordInput;
    const [entry] = exportFhirAuditEvents([old], { timestamp: new Date(0) }).entry;
    const e = entry!.resource;
    expect(e.period).toBeUndefined();
    expect(e.outcomeDesc).toBeUndefined();
    expect(e.agent.find((a) => a.requestor)!.altId).toBeUndefined();
    const details = e.entity!.at(-1)!.detail!;
    expect(details.map((d) => d.type)).not.toContain("request-id");
    expect(details.every((d) => d.valueString !== "")).toBe(true);
  });
});

