/**
 * The guardrails the demo agents run. Placeholder until the library exports its guardrail pipeline
 * (issue 7): returns undefined, so the agents run without guardrails and the injection defence reports false.
 */
import type { GuardrailRunner } from "hmcp";

export function demoGuardrails(): GuardrailRunner | undefined {
  return undefined;
}
