/**
 * The `data` of a GuardrailBlocked (-32053) error, built in one place for the server and the client. Internal: not
 * exported from the package.
 */
import type { DecisionEvidence, GuardrailStage } from "./types.js";

/**
 * `data` of a -32053 error: `{ reason, guardrail, stage }`, plus `score`, `threshold` (both 0..1) and `reasonClass`
 * when the blocking guardrail gave evidence (prompt-injection does). Codes and numbers only, never the text.
 */
export function guardrailBlockData(
  blocked: { guardrail: string; reason: string; evidence?: DecisionEvidence },
  stage: GuardrailStage,
): { reason: string; guardrail: string; stage: GuardrailStage; score?: number; threshold?: number; reasonClass?: string } {
  const e = blocked.evidence;
  return {
    reason: blocked.reason,
    guardrail: blocked.guardrail,
    stage,
    ...(e !== undefined && { score: e.score, threshold: e.threshold, reasonClass: e.class }),
  };
}
