/**
 * Audit records as FHIR R4 AuditEvent resources (https://hl7.org/fhir/R4/auditevent.html), in a
 * Bundle of type "collection" (issue 4 "hmcp audit export --format fhir").
 *
 * Mapping:
 * - `type` (1..1): DICOM audit vocabulary (system http://dicom.nema.org/resources/ontology/DCM):
 *   110110 "Patient Record" for requests that touched a patient, 110112 "Query" for list/search
 *   methods, 110100 "Application Activity" for other requests, 110114 "User Authentication" for
 *   HTTP-layer refusals, session and token events.
 * - `subtype`: FHIR restful-interaction (http://hl7.org/fhir/restful-interaction: read, search-type,
 *   operation) for MCP requests, DCM 110122 "Login" / 110123 "Logout" for sessions and authentication;
 *   plus the MCP method itself under the system `urn:hmcp:mcp-method`.
 * - `action`: R for reads, E for searches and operations.
 * - `outcome`: 0 success (allowed), 4 minor failure (denied, blocked), 8 serious failure (failed),
 *   12 major failure (failed with an internal error); `outcomeDesc` is the reason code.
 * - `agent` (1..*): the requestor (OAuth client id as identifier, `fhirUser` as reference, `sub` as
 *   altId, source address as network address) and the agent (server) that handled the request.
 * - `source` (1..1): `observer` = the agent (server) name; type 4 "Application Server".
 * - `entity`: one per patient (`Patient/<id>`, type 1 Person, role 1 Patient), and one for the MCP
 *   request (type 2 System Object) whose details carry the content digests, scopes and guardrail
 *   decisions (never content).
 * Checkpoint entries are not exported.
 */
import type { AuditRecordInput } from "./record.js";

const DCM = "http://dicom.nema.org/resources/ontology/DCM";
const REST = "http://hl7.org/fhir/restful-interaction";
const MCP_METHOD = "urn:hmcp:mcp-method";

/** A FHIR Coding. */
export interface FhirCoding {
  system?: string;
  code?: string;
  display?: string;
}
/** A FHIR Reference (subset). */
export interface FhirReference {
  reference?: string;
  identifier?: { system?: string; value?: string };
  display?: string;
}
/** The FHIR R4 AuditEvent elements this export fills. */
export interface FhirAuditEvent {
  resourceType: "AuditEvent";
  id: string;
  type: FhirCoding;
  subtype?: FhirCoding[];
  action?: "C" | "R" | "U" | "D" | "E";
  period?: { start?: string; end?: string };
  recorded: string;
  outcome?: "0" | "4" | "8" | "12";
  outcomeDesc?: string;
  agent: Array<{
    type?: { coding: FhirCoding[] };
    who?: FhirReference;
    altId?: string;
    name?: string;
    requestor: boolean;
    network?: { address?: string; type?: "1" | "2" | "3" | "4" | "5" };
  }>;
  source: { site?: string; observer: FhirReference; type?: FhirCoding[] };
  entity?: Array<{
    what?: FhirReference;
    type?: FhirCoding;
    role?: FhirCoding;
    detail?: Array<{ type: string; valueString: string }>;
  }>;
}
/** A FHIR R4 Bundle of AuditEvents. */
export interface FhirAuditBundle {
  resourceType: "Bundle";
  type: "collection";
  timestamp: string;
  entry: Array<{ fullUrl: string; resource: FhirAuditEvent }>;
}

/** Options of {@link exportFhirAuditEvents}. */
export interface FhirExportOptions {
  /** Bundle timestamp; default now. */
  timestamp?: Date;
  /** `source.site` (e.g. the deployment or hospital site name). Default: none. */
  site?: string;
}

const READ_METHODS = new Set(["resources/read", "prompts/get"]);
const SEARCH_METHODS = new Set(["tools/list", "resources/list", "resources/templates/list", "prompts/list", "completion/complete"]);

/**
 * Converts audit records to a FHIR R4 Bundle (type "collection") of AuditEvent resources.
 * Records of type "checkpoint" (if any are passed) are left out.
 */
export function exportFhirAuditEvents(records: Iterable<AuditRecordInput>, opts: FhirExportOptions = {}): FhirAuditBundle {
  const entry: FhirAuditBundle["entry"] = [];
  for (const r of records) {
    if ((r.type as string) === "checkpoint") continue;
    const resource = toAuditEvent(r, opts);
    entry.push({ fullUrl: `urn:uuid:${r.id}`, resource });
  }
  // No `total`: R4 invariant bdl-1 allows it only on searchset and history bundles.
  return { resourceType: "Bundle", type: "collection", timestamp: (opts.timestamp ?? new Date()).toISOString(), entry };
}

/** Converts one audit record to a FHIR R4 AuditEvent. */
export function toAuditEvent(r: AuditRecordInput, opts: FhirExportOptions = {}): FhirAuditEvent {
  const method = r.method;
  const { type, subtype, action } = classify(r);
  const end = Date.parse(r.time);
  const who: FhirReference = {};
  if (r.actor.fhirUser) who.reference = r.actor.fhirUser;
  if (r.actor.clientId) who.identifier = { system: "urn:hmcp:oauth-client-id", value: r.actor.clientId };
  if (!who.reference && !who.identifier) who.display = r.type === "http" ? "unauthenticated caller" : "unknown caller";
  const requestor: FhirAuditEvent["agent"][number] = {
    type: { coding: [{ system: DCM, code: "110153", display: "Source Role ID" }] },
    who,
    requestor: true,
    ...(r.actor.sub && { altId: r.actor.sub }),
    ...(r.source.address !== undefined && { network: { address: r.source.address, type: "2" as const } }),
  };
  const server: FhirAuditEvent["agent"][number] = {
    type: { coding: [{ system: DCM, code: "110152", display: "Destination Role ID" }] },
    who: { identifier: { system: "urn:hmcp:agent", value: r.agent }, display: r.agent },
    requestor: false,
  };
  const entity: NonNullable<FhirAuditEvent["entity"]> = r.patients.map((p) => ({
    what: { reference: `Patient/${p}` },
    type: { system: "http://terminology.hl7.org/CodeSystem/audit-entity-type", code: "1", display: "Person" },
    role: { system: "http://terminology.hl7.org/CodeSystem/object-role", code: "1", display: "Patient" },
  }));
  const detail: Array<{ type: string; valueString: string }> = [];
  if (r.transport) detail.push({ type: "transport", valueString: r.transport });
  if (r.sessionId) detail.push({ type: "session-id", valueString: r.sessionId });
  // FHIR strings are never empty (R4 §2.1.28.0.1 "string"): an empty value is left out
  if (r.requestId !== undefined && r.requestId !== "") detail.push({ type: "request-id", valueString: String(r.requestId) });
  if (r.status !== undefined) detail.push({ type: "status", valueString: String(r.status) });
  if (r.scopes.length > 0) detail.push({ type: "scopes", valueString: r.scopes.join(" ") });
  if (r.actor.tenant) detail.push({ type: "tenant", valueString: r.actor.tenant });
  if (r.digests.request) detail.push({ type: "request-sha256", valueString: r.digests.request });
  if (r.digests.response) detail.push({ type: "response-sha256", valueString: r.digests.response });
  detail.push({ type: "latency-ms", valueString: String(r.latencyMs) });
  // each question the handler asked back, in order: "elicitation;accept", "sampling;answered" ...
  for (const i of r.interactions ?? []) detail.push({ type: "interaction", valueString: `${i.kind};${i.outcome}` });
  // the MCP 2026-07-28 multi round-trip flow this request is a round of: "<flow uuid>;<round>"
  if (r.inputRound) detail.push({ type: "input-round", valueString: `${r.inputRound.flow};${r.inputRound.round}` });
  // the MCP task (tasks extension) the record is about: "<task uuid>" or "<task uuid>;<status>"
  if (r.task) detail.push({ type: "task", valueString: r.task.status === undefined ? r.task.id : `${r.task.id};${r.task.status}` });
  for (const g of r.guardrails) {
    // guardrail;stage;action;entity types;reason, then reason class;score;threshold when a scoring guardrail blocked
    const fields = [g.guardrail, g.stage, g.action, (g.entityTypes ?? []).join(","), g.reason ?? ""];
    if (g.reasonClass !== undefined || g.score !== undefined) fields.push(g.reasonClass ?? "", String(g.score ?? ""), String(g.threshold ?? ""));
    detail.push({ type: "guardrail", valueString: fields.join(";") });
  }
  entity.push({
    what: { identifier: { system: "urn:ietf:rfc:3986", value: `urn:uuid:${r.id}` }, ...(method !== undefined && { display: method }) },
    type: { system: "http://terminology.hl7.org/CodeSystem/audit-entity-type", code: "2", display: "System Object" },
    detail,
  });
  return {
    resourceType: "AuditEvent",
    id: r.id,
    type,
    subtype,
    action,
    // a time that is no date (only in trails written before the schema checked it) gives no period rather than a throw
    ...(Number.isFinite(end) && Number.isFinite(r.latencyMs) && { period: { start: new Date(end - Math.round(r.latencyMs)).toISOString(), end: r.time } }),
    recorded: r.time,
    outcome: outcomeCode(r),
    ...(r.reason && { outcomeDesc: r.reason }),
    agent: [requestor, server],
    source: {
      ...(opts.site !== undefined && { site: opts.site }),
      observer: { identifier: { system: "urn:hmcp:agent", value: r.agent }, display: r.agent },
      type: [{ system: "http://terminology.hl7.org/CodeSystem/security-source-type", code: "4", display: "Application Server" }],
    },
    entity,
  };
}

function classify(r: AuditRecordInput): { type: FhirCoding; subtype: FhirCoding[]; action: FhirAuditEvent["action"] } {
  const auth: FhirCoding = { system: DCM, code: "110114", display: "User Authentication" };
  const login: FhirCoding = { system: DCM, code: "110122", display: "Login" };
  const logout: FhirCoding = { system: DCM, code: "110123", display: "Logout" };
  const methodCoding: FhirCoding[] = r.method !== undefined ? [{ system: MCP_METHOD, code: r.method }] : [];
  switch (r.type) {
    case "http":
    case "token":
    case "session.start":
      return { type: auth, subtype: [login, ...methodCoding], action: "E" };
    case "session.end":
      return { type: auth, subtype: [logout, ...methodCoding], action: "E" };
    case "view":
      // DICOM DCID 400 "Audit Log Used": someone read the audit trail (the compliance console)
      return { type: { system: DCM, code: "110101", display: "Audit Log Used" }, subtype: methodCoding, action: "R" };
    default: {
      const m = r.method ?? "";
      const rest: FhirCoding = READ_METHODS.has(m)
        ? { system: REST, code: "read", display: "read" }
        : SEARCH_METHODS.has(m)
          ? { system: REST, code: "search-type", display: "search-type" }
          : { system: REST, code: "operation", display: "operation" };
      const type: FhirCoding =
        r.patients.length > 0
          ? { system: DCM, code: "110110", display: "Patient Record" }
          : SEARCH_METHODS.has(m)
            ? { system: DCM, code: "110112", display: "Query" }
            : { system: DCM, code: "110100", display: "Application Activity" };
      return { type, subtype: [rest, ...methodCoding], action: READ_METHODS.has(m) ? "R" : "E" };
    }
  }
}

function outcomeCode(r: AuditRecordInput): FhirAuditEvent["outcome"] {
  switch (r.outcome) {
    case "allowed":
      return "0";
    case "denied":
    case "blocked":
      return "4";
    case "failed":
      return r.status === -32603 || r.status === 500 ? "12" : "8";
  }
}
