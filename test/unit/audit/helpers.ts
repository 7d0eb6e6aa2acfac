import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { newAuditRecord, type AuditRecordInput } from "hmcp";

/** A temp dir under HMCP_LOG_DIR (set by vitest.config.ts) so the PHI scan sees what tests write. */
export async function tempLogDir(name: string): Promise<string> {
  const base = process.env["HMCP_LOG_DIR"] ?? os.tmpdir();
  return mkdtemp(path.join(base, `${name}-`));
}

const OUTCOMES = ["allowed", "denied", "blocked", "failed"] as const;

/** A deterministic, realistic record (ids and codes only). */
export function sampleRecord(i: number, over: Partial<AuditRecordInput> = {}): AuditRecordInput {
  return newAuditRecord({
    type: "request",
    agent: "emr-writeback",
    outcome: OUTCOMES[i % 4]!,
    ...(i % 4 === 0 ? {} : { reason: ["insufficient_scope", "guardrail_blocked", "handler_error"][(i % 4) - 1]! }),
    time: new Date(Date.UTC(2026, 10, 22, 6, 0, 0, i)),
    actor: { sub: `client-${i % 3}`, clientId: `client-${i % 3}`, fhirUser: i % 2 ? "Practitioner/pr-1" : undefined },
    source: { address: "127.0.0.1" },
    transport: "http",
    sessionId: "sess-1",
    method: "sampling/createMessage",
    requestId: i,
    patients: [`pat-${i % 5}`],
    scopes: ["system/Patient.rs"],
    guardrails: [{ guardrail: "phi-redactor", stage: "output", action: "redact", entityTypes: ["NAME"] }],
    latencyMs: 1.25 + i,
    digests: { request: "a".repeat(64), response: "b".repeat(64) },
    ...over,
  });
}
