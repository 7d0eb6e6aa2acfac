/**
 * Builds audit records: fills the version, id and time, and the empty defaults of the
 * {@link AuditRecordInput} schema, so the server writes only what it knows.
 */
import { randomUUID } from "node:crypto";
import { AUDIT_RECORD_VERSION, type AuditRecordInput } from "./record.js";

/** What {@link newAuditRecord} needs: `type`, `agent` and `outcome`; everything else has a default. */
export type AuditRecordDraft = Partial<Omit<AuditRecordInput, "v">> & Pick<AuditRecordInput, "type" | "agent" | "outcome">;

/**
 * Completes a draft into an {@link AuditRecordInput}.
 *
 * Defaults: `v` = {@link AUDIT_RECORD_VERSION}; `id` = a random UUID; `time` = now as RFC 3339 UTC
 * with milliseconds (`Date.prototype.toISOString`); `actor` = `{}`; `source` = `{}`; `patients`,
 * `scopes`, `guardrails` = `[]`; `latencyMs` = 0; `digests` = `{}`. Given values win.
 * Does not validate: sinks check the shape (see `AuditRecordInputSchema`).
 *
 * @param draft - the known fields; `time` may be a `Date`
 * @param now - clock, for tests (default `Date.now`), ms since the epoch
 */
export function newAuditRecord(
  draft: Omit<AuditRecordDraft, "time"> & { time?: string | Date },
  now: () => number = Date.now,
): AuditRecordInput {
  const time = draft.time instanceof Date ? draft.time.toISOString() : (draft.time ?? new Date(now()).toISOString());
  // (the empty spread first: on Node 20 a literal that starts with a spread and adds members takes V8's slow path)
  return {
    ...{},
    ...draft,
    v: AUDIT_RECORD_VERSION,
    id: draft.id ?? randomUUID(),
    time,
    actor: draft.actor ?? {},
    source: draft.source ?? {},
    patients: draft.patients ?? [],
    scopes: draft.scopes ?? [],
    guardrails: draft.guardrails ?? [],
    latencyMs: draft.latencyMs ?? 0,
    digests: draft.digests ?? {},
  };
}
