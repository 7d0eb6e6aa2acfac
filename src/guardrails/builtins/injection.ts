/**
 * `prompt-injection`: blocks inbound text that tries to override the agent's instructions, change
 * its role, extract its prompt or force an output (reason `prompt_injection`). A local logistic
 * regression over hashed n-grams and phrase rules (../injection/), trained offline by
 * scripts/train-injection.ts; no network, no LLM call. Every text item is scored (every message,
 * not only the last); long texts are scored per window and the maximum counts.
 */
import path from "node:path";
import { z } from "zod";
import type { Guardrail, GuardrailFactory, TextLocation } from "../guardrail.js";
import { loadInjectionModel } from "../injection/model.js";
import { guardrailsDir } from "../root.js";

const KINDS = ["message", "systemPrompt", "result", "elicitation", "toolArguments", "resource", "other"] as const;

const ParamsSchema = z.strictObject({
  /** Probability threshold (0..1); default the model's cross-validated threshold. */
  threshold: z.number().gt(0).lt(1).optional(),
  /** Weights file, relative to the policy's directory; default guardrails/data/injection-model.json. */
  model: z.string().min(1).optional(),
  /**
   * Text kinds to score. Default all but `systemPrompt` (the caller's own instructions to the agent), `elicitation`
   * (text shown to the caller's human, not to a model; short approval prompts such as "OK to write?" look like the
   * task-redirect commands the model was trained to flag) and `result` (an agent's answer as a client's input stage
   * sees it: answers such as "approval=accept" or "writing declined" are flagged as often as such prompts; add
   * "result" to scan them).
   */
  kinds: z.array(z.enum(KINDS)).min(1).optional(),
  /** Message roles to score. Default all (an injection may sit in an earlier assistant turn). */
  roles: z.array(z.string().min(1)).optional(),
});

/** Options of {@link createInjectionGuardrail} (same as the policy parameters, plus `baseDir`). */
export type InjectionGuardrailOptions = z.input<typeof ParamsSchema> & { name?: string; baseDir?: string };

/** Builds the prompt-injection guardrail. @throws ZodError on bad options, Error when the weights cannot be loaded */
export function createInjectionGuardrail(options: InjectionGuardrailOptions = {}): Guardrail {
  const { name = "prompt-injection", baseDir, ...params } = options;
  const p = ParamsSchema.parse(params);
  const file = p.model ? path.resolve(baseDir ?? guardrailsDir(), p.model) : path.join(guardrailsDir(), "data", "injection-model.json");
  const model = loadInjectionModel(file);
  const threshold = p.threshold ?? model.threshold;
  const kinds = new Set<TextLocation["kind"]>(p.kinds ?? KINDS.filter((k) => k !== "systemPrompt" && k !== "elicitation" && k !== "result"));
  const roles = p.roles ? new Set(p.roles) : undefined;
  return {
    name,
    // the decision depends only on the text, location.kind and location.role (a fixed model and threshold)
    cacheable: true,
    check(text, ctx) {
      if (!kinds.has(ctx.location.kind)) return { action: "allow" };
      if (roles && ctx.location.role !== undefined && !roles.has(ctx.location.role)) return { action: "allow" };
      return model.score(text) >= threshold ? { action: "block", reason: "prompt_injection" } : { action: "allow" };
    },
  };
}

export const injectionFactory: GuardrailFactory = (params, env) =>
  createInjectionGuardrail({ ...ParamsSchema.parse(params), name: env.name, baseDir: env.baseDir });
