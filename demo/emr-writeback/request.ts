/**
 * Reads what a caller sends the EMR-writeback agent: the last user message's text, holding
 * - JSON: a FHIR Bundle, an array of resources, or `{ "patient_id": "...", "clinical_data": <Bundle | array> }`;
 * - the Python reference's text form: `clinical_data={...} patient_id=...` (either order).
 * Errors are fixed sentences that never echo the content.
 */
import type { FhirResource } from "../fhir/resource.js";

export interface SentEntry {
  fullUrl?: string;
  resource: FhirResource;
}

export interface WritebackRequest {
  patientId?: string;
  entries: SentEntry[];
}

export class WritebackRequestError extends Error {
  override readonly name = "WritebackRequestError";
}

const FORMAT_HELP =
  "send a FHIR Bundle, a JSON array of FHIR resources, {\"patient_id\": \"...\", \"clinical_data\": ...}, or the text form clinical_data={...} patient_id=...";

function entriesOf(data: unknown): SentEntry[] {
  if (Array.isArray(data)) return data.map((r, i) => ({ resource: asResource(r, i) }));
  const o = data as { resourceType?: unknown; entry?: unknown };
  if (o && typeof o === "object" && o.resourceType === "Bundle") {
    if (!Array.isArray(o.entry)) throw new WritebackRequestError("the Bundle has no entry array");
    return (o.entry as Array<{ fullUrl?: unknown; resource?: unknown }>).map((e, i) => ({
      ...(typeof e?.fullUrl === "string" ? { fullUrl: e.fullUrl } : {}),
      resource: asResource(e?.resource, i),
    }));
  }
  if (o && typeof o === "object" && typeof o.resourceType === "string") return [{ resource: o as FhirResource }];
  throw new WritebackRequestError(`clinical data is not FHIR: ${FORMAT_HELP}`);
}

function asResource(r: unknown, i: number): FhirResource {
  if (r && typeof r === "object" && typeof (r as { resourceType?: unknown }).resourceType === "string") return r as FhirResource;
  throw new WritebackRequestError(`entry ${i} is not a FHIR resource (no resourceType)`);
}

/**
 * Reads a request already parsed from JSON (a Bundle, an array of resources, or `{ patient_id, clinical_data }`): the
 * sampling handler's JSON text, or the write tool's arguments.
 * @throws WritebackRequestError with a fixed, content-free message.
 */
export function writebackRequestOf(json: unknown): WritebackRequest {
  const o = json as Record<string, unknown>;
  if (o && !Array.isArray(o) && typeof o === "object" && ("clinical_data" in o || "clinicalData" in o)) {
    const pid = o["patient_id"] ?? o["patientId"];
    return { ...(typeof pid === "string" && pid ? { patientId: pid } : {}), entries: entriesOf(o["clinical_data"] ?? o["clinicalData"]) };
  }
  return { entries: entriesOf(json) };
}

/** Parses the request text. @throws WritebackRequestError with a fixed, content-free message. */
export function parseWritebackRequest(text: string): WritebackRequest {
  const t = text.trim();
  if (t.startsWith("{") || t.startsWith("[")) {
    let json: unknown;
    try {
      json = JSON.parse(t);
    } catch {
      throw new WritebackRequestError(`the request is not valid JSON: ${FORMAT_HELP}`);
    }
    return writebackRequestOf(json);
  }
  const at = t.indexOf("clinical_data=");
  if (at < 0) throw new WritebackRequestError(`no clinical data found: ${FORMAT_HELP}`);
  let rest = t.slice(at + "clinical_data=".length);
  let patientId = /(?:^|\s)patient_id=([A-Za-z0-9\-.]{1,64})\b/.exec(t)?.[1];
  // The JSON value runs to the last closing bracket before a trailing " patient_id=…".
  const pidAfter = /\s+patient_id=\S*\s*$/.exec(rest);
  if (pidAfter) rest = rest.slice(0, pidAfter.index);
  let data: unknown;
  try {
    data = JSON.parse(rest.trim());
  } catch {
    throw new WritebackRequestError(`clinical_data=… is not valid JSON: ${FORMAT_HELP}`);
  }
  if (patientId === "") patientId = undefined;
  return { ...(patientId ? { patientId } : {}), entries: entriesOf(data) };
}
