/**
 * `phi-redaction`: replaces PHI in every text item with `[TYPE]` (HIPAA Safe Harbor identifiers;
 * see ../phi/detector.ts). Use on the output stage (minimum necessary) and on everything a client
 * sends to an external model. With `action: block`, content with PHI is refused instead (reason `phi_detected`).
 */
import { z } from "zod";
import type { Guardrail, GuardrailFactory } from "../guardrail.js";
import { createPhiDetector, PHI_ENTITY_TYPES } from "../phi/detector.js";

const ParamsSchema = z.strictObject({
  /** Entity types to redact; default all. */
  entities: z.array(z.enum(PHI_ENTITY_TYPES)).min(1).optional(),
  /** "redact" (default) or "block". */
  action: z.enum(["redact", "block"]).optional(),
  /** Skip the system prompt (it is the agent's own text). Default false. */
  skipSystemPrompt: z.boolean().optional(),
});

/** Options of {@link createPhiGuardrail} (same as the policy parameters). */
export type PhiGuardrailOptions = z.input<typeof ParamsSchema> & { name?: string };

/** Builds the PHI guardrail. @throws ZodError on bad options */
export function createPhiGuardrail(options: PhiGuardrailOptions = {}): Guardrail {
  const { name = "phi-redaction", ...params } = options;
  const p = ParamsSchema.parse(params);
  const detector = createPhiDetector(p.entities ? { entities: p.entities } : {});
  const block = p.action === "block";
  return {
    name,
    // the decision depends only on the text and location.kind (a fixed detector: entities, action, skipSystemPrompt)
    cacheable: true,
    check(text, ctx) {
      if (p.skipSystemPrompt && ctx.location.kind === "systemPrompt") return { action: "allow" };
      const r = detector.redact(text);
      if (r.entities.length === 0) return { action: "allow" };
      if (block) return { action: "block", reason: "phi_detected" };
      return { action: "redact", content: r.text, entities: r.entities };
    },
  };
}

export const phiFactory: GuardrailFactory = (params, env) => createPhiGuardrail({ ...ParamsSchema.parse(params), name: env.name });
