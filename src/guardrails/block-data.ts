/**
 * The `data` of a GuardrailBlocked (-32053) error, built in one place for the server and the client. Internal: not
 * exported from the package.
 */
import type { DecisionEvidence, GuardrailStage } from "./types.js";

/** What a reason code looks like: what the built-in guardrails use (`prompt_injection`, `too_many_characters`). */
const REASON_CODE = /^[a-z0-9_.:-]{1,64}$/;

/**
 * `data` of a -32053 error: `{ reason, guardrail, stage }`, plus `score`, `threshold` (both 0..1) and `reasonClass`
 * when the blocking guardrail gave evidence (prompt-injection does). Codes and numbers only, never the text: a reason
 * that does not look like a code (`[a-z0-9_.:-]`, at most 64) is sent as `guardrail_blocked`.
 */
export function guardrailBlockData(
  blocked: { guardrail: string; reason: string; evidence?: DecisionEvidence },
  stage: GuardrailStage,
): { reason: string; guardrail: string; stage: GuardrailStage; score?: number; threshold?: number; reasonClass?: string } {
  const e = blocked.evidence;
  return {
    // a reason that is not a code (a custom guardrail's free text may name a patient) is not sent
    reason: REASON_CODE.test(blocked.reason) ? blocked.reason : "guardrail_blocked",
    guardrail: blocked.guardrail,
    stage,
    ...(e !== undefined && { score: e.score, threshold: e.threshold, reasonClass: e.class }),
  };
}
