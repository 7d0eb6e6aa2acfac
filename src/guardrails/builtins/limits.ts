/**
 * `limits`: structural limits on an exchange — number of messages, total characters, `maxTokens`
 * clamp, allowed content block types and allowed model hints (MCP 2025-06-18 "Sampling":
 * CreateMessageRequest `messages`, `maxTokens`, `modelPreferences.hints`).
 * Block reasons: `too_many_messages`, `too_many_characters`, `content_type_not_allowed`,
 * `model_hint_not_allowed`.
 */
import { z } from "zod";
import type { ExchangeDecision, Guardrail, GuardrailFactory } from "../guardrail.js";

const ParamsSchema = z.strictObject({
  /** Max `messages.length`. Default 100. */
  maxMessages: z.number().int().positive().optional(),
  /** Max characters over all text items. Default 200000. */
  maxChars: z.number().int().positive().optional(),
  /** `maxTokens` above this is lowered to it (the change is reported as `maxTokens`). No default. */
  maxTokens: z.number().int().positive().optional(),
  /** Content block types allowed. Default text, image, audio, resource, resource_link. */
  allowedContentTypes: z.array(z.string().min(1)).optional(),
  /** Model hint names allowed; other hints are removed ("strip", default) or refused ("block"). No default (all allowed). */
  allowedModelHints: z.array(z.string().min(1)).optional(),
  modelHintAction: z.enum(["strip", "block"]).optional(),
});

/** Options of {@link createLimitsGuardrail} (same as the policy parameters). */
export type LimitsOptions = z.input<typeof ParamsSchema> & { name?: string };

const DEFAULT_TYPES = ["text", "image", "audio", "resource", "resource_link"];

/** Builds the limits guardrail. @throws ZodError on bad options */
export function createLimitsGuardrail(options: LimitsOptions = {}): Guardrail {
  const { name = "limits", ...params } = options;
  const p = ParamsSchema.parse(params);
  const maxMessages = p.maxMessages ?? 100;
  const maxChars = p.maxChars ?? 200_000;
  const types = new Set(p.allowedContentTypes ?? DEFAULT_TYPES);
  const hints = p.allowedModelHints ? new Set(p.allowedModelHints) : undefined;
  return {
    name,
    checkExchange(view): ExchangeDecision {
      if (view.messageCount > maxMessages) return { action: "block", reason: "too_many_messages" };
      if (view.totalChars > maxChars) return { action: "block", reason: "too_many_characters" };
      for (const t of view.contentTypes) if (!types.has(t)) return { action: "block", reason: "content_type_not_allowed" };
      const changes: string[] = [];
      let payload = view.payload as Record<string, unknown>;
      if (p.maxTokens !== undefined && view.maxTokens !== undefined && view.maxTokens > p.maxTokens) {
        payload = { ...payload, maxTokens: p.maxTokens };
        changes.push("maxTokens");
      }
      if (hints && view.modelHints.some((h) => !hints.has(h))) {
        if (p.modelHintAction === "block") return { action: "block", reason: "model_hint_not_allowed" };
        const prefs = payload["modelPreferences"] as { hints: Array<{ name?: string }> };
        payload = { ...payload, modelPreferences: { ...prefs, hints: prefs.hints.filter((h) => h.name === undefined || hints.has(h.name)) } };
        changes.push("modelPreferences.hints");
      }
      return changes.length > 0 ? { action: "modify", payload, changes } : { action: "allow" };
    },
  };
}

export const limitsFactory: GuardrailFactory = (params, env) => createLimitsGuardrail({ ...ParamsSchema.parse(params), name: env.name });
