/**
 * An optional LLM-judge guardrail: asks a model (any async function, e.g. one that samples back to
 * the client with `sampling/createMessage`) whether a text may pass. Not on the default hot path;
 * deployments that want one register it (`registerGuardrail("my-judge", () => createLlmJudgeGuardrail({ judge }))`)
 * and place it in a policy. Runs under the pipeline's timeout and fails closed unless the policy says `failMode: open`.
 */
import type { Guardrail } from "../guardrail.js";
import type { GuardrailStage } from "../types.js";
import type { TextCheckContext } from "../guardrail.js";

/** The judge's verdict. `reason` must be a short code, never content. */
export interface JudgeVerdict {
  allow: boolean;
  reason?: string;
}

/** Options of {@link createLlmJudgeGuardrail}. */
export interface LlmJudgeOptions {
  /** Asks the model; receives the text and the check context (with an abort `signal` on timeout). */
  judge: (text: string, context: TextCheckContext) => Promise<JudgeVerdict>;
  /** Guardrail name. Default "llm-judge". */
  name?: string;
  /** Stages it may run at. Default both. */
  stages?: GuardrailStage[];
  /** Judge only these text kinds (e.g. ["message"]). Default all. */
  kinds?: TextCheckContext["location"]["kind"][];
}

/** Builds an LLM-judge guardrail. A verdict `{ allow: false }` blocks with `reason` (default `llm_judge_blocked`). */
export function createLlmJudgeGuardrail(options: LlmJudgeOptions): Guardrail {
  if (typeof options.judge !== "function") throw new Error("createLlmJudgeGuardrail: judge must be a function");
  const kinds = options.kinds ? new Set(options.kinds) : undefined;
  return {
    name: options.name ?? "llm-judge",
    ...(options.stages ? { stages: options.stages } : {}),
    async check(text, ctx) {
      if (kinds && !kinds.has(ctx.location.kind)) return { action: "allow" };
      const v = await options.judge(text, ctx);
      if (v.allow) return { action: "allow" };
      const reason = v.reason && /^[a-z0-9_.-]{1,64}$/.test(v.reason) ? v.reason : "llm_judge_blocked";
      return { action: "block", reason };
    },
  };
}
