/** Guardrails: the pipeline, policy loading, the registry and the built-in guardrails. */
export type {
  GuardrailStage,
  Decision,
  DecisionEvidence,
  RedactedEntity,
  GuardrailContext,
  GuardrailDecisionSummary,
  GuardrailOutcome,
  GuardrailRunner,
} from "./types.js";
export type { Guardrail, GuardrailFactory, GuardrailFactoryEnv, TextCheckContext, TextLocation, ExchangeView, ExchangeDecision } from "./guardrail.js";
export { GuardrailPipeline, DEFAULT_GUARDRAIL_TIMEOUT_MS, DEFAULT_DECISION_CACHE } from "./pipeline.js";
export type { PipelineConfig, PipelineEntry, FailMode, TextInspection, DecisionCacheOptions, DecisionCacheStats } from "./pipeline.js";
export { GuardrailRegistry, registerGuardrail, defaultRegistry } from "./registry.js";
export { loadGuardrailPolicy, defaultGuardrails, policyPath, GuardrailPolicyError, GuardrailPolicySchema } from "./policy.js";
export type { GuardrailPolicy, LoadPolicyOptions } from "./policy.js";
export { createPhiDetector, redactPhi, redactPhiText, PHI_ENTITY_TYPES } from "./phi/detector.js";
export type { PhiDetector, PhiDetectorOptions, PhiEntity, PhiEntityType, PhiRedaction } from "./phi/detector.js";
export { createPhiDetectorPool, PhiPoolError } from "./phi/pool.js";
export type { PhiDetectorPool, PhiDetectorPoolOptions, PhiDetectorPoolStats } from "./phi/pool.js";
export { createPhiGuardrail } from "./builtins/phi.js";
export type { PhiGuardrailOptions } from "./builtins/phi.js";
export { createInjectionGuardrail } from "./builtins/injection.js";
export type { InjectionGuardrailOptions } from "./builtins/injection.js";
export { createLimitsGuardrail } from "./builtins/limits.js";
export type { LimitsOptions } from "./builtins/limits.js";
export { createPatientContextGuardrail, findPatientReferences } from "./builtins/patient-context.js";
export type { PatientContextOptions } from "./builtins/patient-context.js";
export { createLlmJudgeGuardrail, createSamplingJudge } from "./builtins/llm-judge.js";
export type { LlmJudgeOptions, JudgeVerdict, SampleFn, SamplingJudgeOptions } from "./builtins/llm-judge.js";
export { BUILTIN_GUARDRAILS } from "./builtins/index.js";
