/** Registers the built-in guardrails under their policy names. */
import type { GuardrailRegistry } from "../registry.js";
import { injectionFactory } from "./injection.js";
import { limitsFactory } from "./limits.js";
import { patientContextFactory } from "./patient-context.js";
import { phiFactory } from "./phi.js";

/** Names of the built-in guardrails. */
export const BUILTIN_GUARDRAILS = ["limits", "prompt-injection", "phi-redaction", "patient-context"] as const;

/** Adds the built-ins to `registry` (idempotent). */
export function registerBuiltins(registry: GuardrailRegistry): void {
  if (registry.get("limits")) return;
  registry.register("limits", limitsFactory);
  registry.register("prompt-injection", injectionFactory);
  registry.register("phi-redaction", phiFactory);
  registry.register("patient-context", patientContextFactory);
}
