/**
 * The patient-data agent: an HMCPServer that answers "which patient is this?" from its master patient index.
 * Input: a sampling request whose last user message is JSON (`{"name", "birthDate", "gender"?, "mrn"?}`) or text
 * such as "patient identifier for Adan Portillo born 1961-04-12". Output: `{"patient_id": "..."}` and nothing more
 * (minimum necessary); `stopReason: "infoNeeded"` when details are missing or several patients match; a clear
 * not-found sentence otherwise.
 */
import { HMCPError, HMCPErrorCode, HMCPServer, INFO_NEEDED, INFO_NEEDED_META_KEY, type CreateMessageParams, type HMCPServerOptions, type SamplingContext, type SamplingHandlerResult } from "hmcp";
import { parsePatientQuery, type LookupResult, type PatientIndex, type PatientQuery } from "./patient-index.js";

/** `_meta` key of the machine-readable lookup answer. */
export const LOOKUP_META_KEY = "hmcp-demo/patientLookup";

export type LookupAnswer = { status: "found"; patientId: string } | { status: "infoNeeded"; fields: string[] } | { status: "notFound" };

export interface PatientDataAgentOptions {
  index: PatientIndex;
  server?: HMCPServerOptions;
}

function lastUserText(params: CreateMessageParams): string {
  for (let i = params.messages.length - 1; i >= 0; i--) {
    const m = params.messages[i]!;
    if (m.role !== "user") continue;
    const blocks = (Array.isArray(m.content) ? m.content : [m.content]) as Array<{ type: string; text?: string }>;
    const t = blocks.filter((b) => b.type === "text").map((b) => b.text ?? "").join("\n");
    if (t.trim()) return t;
  }
  return "";
}

/**
 * A lookup by a caller whose token is bound to one patient (SMART patient launch context), answered only about that
 * patient. Whether the details name another patient, several or no one, the caller gets the same error, so it cannot
 * learn whether someone with a given name and birth date is a patient here (being a patient of a hospital is itself
 * PHI). Missing details (`infoNeeded` for the name or birth date) say nothing about the index and are answered as to
 * any caller. Every other patient whose name and birth date the details match is recorded in the audit record's
 * `patients` (by `assertPatient`), so their accounting of disclosures shows the attempt.
 * @throws HMCPError `PatientContextViolation` (-32052, `data.reason` `patient_context_mismatch`), the error
 *   `ctx.assertPatient` throws for another patient
 */
function lookupForBoundCaller(index: PatientIndex, query: PatientQuery, own: string, ctx: Pick<SamplingContext, "assertPatient">): LookupResult {
  const anyone = index.lookup(query);
  // one patient found, by every detail given (a twin's MRN or gender included): the caller's own, or refused
  if (anyone.kind === "found") return anyone;
  if (anyone.kind === "infoNeeded" && anyone.fields.some((f) => f === "name" || f === "birthDate")) return anyone;
  // several or none: the caller's own patient among them is answered; anything else refused alike
  const r = index.lookup(query, own);
  if (r.kind === "found") return r;
  // (assertPatient records each other patient, then throws: the record keeps them all)
  for (const id of index.matches(query)) {
    try {
      ctx.assertPatient(id);
    } catch {
      // recorded; the refusal below is the same whoever matched
    }
  }
  throw new HMCPError(HMCPErrorCode.PatientContextViolation, "Request is outside the token's patient context", { reason: "patient_context_mismatch" });
}

export function createPatientDataServer(options: PatientDataAgentOptions): HMCPServer {
  const server = new HMCPServer(
    { name: "patient-data", version: "0.1.0" },
    {
      instructions: "Finds a patient's FHIR id from name and birth date. Answers with the id only.",
      ...options.server,
    },
  );
  server.sampling((params, ctx): SamplingHandlerResult => {
    const query = parsePatientQuery(lastUserText(params));
    const r = ctx.patient === undefined ? options.index.lookup(query) : lookupForBoundCaller(options.index, query, ctx.patient, ctx);
    if (r.kind === "found") {
      // the disclosure of a patient's id is about that patient: recorded in the audit record's `patients`, and refused
      // to a caller whose token is bound to another patient
      ctx.assertPatient(r.patientId);
      const answer: LookupAnswer = { status: "found", patientId: r.patientId };
      return { content: { type: "text", text: JSON.stringify({ patient_id: r.patientId }) }, stopReason: "endTurn", _meta: { [LOOKUP_META_KEY]: answer } };
    }
    if (r.kind === "infoNeeded") {
      const answer: LookupAnswer = { status: "infoNeeded", fields: r.fields };
      return { content: { type: "text", text: r.message }, stopReason: INFO_NEEDED, _meta: { [INFO_NEEDED_META_KEY]: { fields: r.fields }, [LOOKUP_META_KEY]: answer } };
    }
    const answer: LookupAnswer = { status: "notFound" };
    return { content: { type: "text", text: r.message }, stopReason: "endTurn", _meta: { [LOOKUP_META_KEY]: answer } };
  }, { tool: { title: "Find a patient's FHIR id by name and birth date" } });
  return server;
}
