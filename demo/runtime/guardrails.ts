/**
 * The guardrails the demo runs on both sides of every exchange: demo/guardrails/demo-agents.yaml (see its header
 * for how and why it differs from the library's default policy).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadGuardrailPolicy, type GuardrailRunner } from "hmcp";

export const DEMO_POLICY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../guardrails/demo-agents.yaml");

let cached: GuardrailRunner | undefined;
/** The demo policy's pipeline (loaded once per process). */
export function demoGuardrails(): GuardrailRunner {
  cached ??= loadGuardrailPolicy(DEMO_POLICY);
  return cached;
}
