/**
 * HMCP public entry. Explicit named exports only (STYLE.md habit 2); test/unit/exports.test.ts pins this list.
 */

// --- protocol ---
export {
  HMCPErrorCode,
  HMCPError,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  toWireError,
  HMCP_VERSION,
  HMCPCapabilitySchema,
  readHMCPCapability,
  INFO_NEEDED,
  INFO_NEEDED_META_KEY,
  isInfoNeeded,
} from "./protocol/index.js";
export type { HMCPErrorData, HMCPReason, HMCPCapability, InfoNeeded, Principal, TransportKind } from "./protocol/index.js";

// --- guardrails ---
export type {
  GuardrailStage,
  Decision,
  RedactedEntity,
  GuardrailContext,
  GuardrailDecisionSummary,
  GuardrailOutcome,
  GuardrailRunner,
} from "./guardrails/types.js";
export {
  GuardrailPipeline,
  DEFAULT_GUARDRAIL_TIMEOUT_MS,
  GuardrailRegistry,
  registerGuardrail,
  loadGuardrailPolicy,
  defaultGuardrails,
  policyPath,
  GuardrailPolicyError,
  createPhiDetector,
  redactPhi,
  redactPhiText,
  PHI_ENTITY_TYPES,
  createPhiGuardrail,
  createInjectionGuardrail,
  createLimitsGuardrail,
  createPatientContextGuardrail,
  findPatientReferences,
  createLlmJudgeGuardrail,
  BUILTIN_GUARDRAILS,
} from "./guardrails/index.js";
export type {
  Guardrail,
  GuardrailFactory,
  GuardrailFactoryEnv,
  TextCheckContext,
  TextLocation,
  ExchangeView,
  ExchangeDecision,
  PipelineConfig,
  PipelineEntry,
  FailMode,
  TextInspection,
  GuardrailPolicy,
  LoadPolicyOptions,
  PhiDetector,
  PhiDetectorOptions,
  PhiEntity,
  PhiEntityType,
  PhiRedaction,
  PhiGuardrailOptions,
  InjectionGuardrailOptions,
  LimitsOptions,
  PatientContextOptions,
  LlmJudgeOptions,
  JudgeVerdict,
} from "./guardrails/index.js";

// --- audit ---
export {
  AUDIT_RECORD_VERSION,
  AuditRecordInputSchema,
  AuditOutcomeSchema,
  AuditEventTypeSchema,
  newAuditRecord,
  canonicalJson,
  contentDigest,
  sha256Hex,
  FileAuditSink,
  AuditSinkError,
  GENESIS_HASH,
  generateAuditSigningKey,
  verifyAuditFiles,
  queryAudit,
  iterateAudit,
  expandAuditPaths,
  exportFhirAuditEvents,
  toAuditEvent,
  createOperationalLogger,
  basicRedactPhi,
} from "./audit/index.js";
export type {
  AuditRecordInput,
  AuditSink,
  AuditOutcome,
  AuditEventType,
  AuditRecordDraft,
  FileAuditSinkOptions,
  AuditDurability,
  AuditSigningKey,
  AuditVerifyKey,
  CheckpointAlg,
  CheckpointBody,
  ChainEntry,
  VerifyOptions,
  VerifyResult,
  VerifyFailure,
  VerifyFailureReason,
  AuditQuery,
  ScanStats,
  FhirAuditBundle,
  FhirAuditEvent,
  FhirExportOptions,
  FhirCoding,
  FhirReference,
  OperationalLoggerOptions,
  Redactor,
  LogTransport,
} from "./audit/index.js";

// --- auth ---
export {
  parseScope,
  splitScopes,
  scopeImplies,
  satisfiesAny,
  allows,
  checkAccess,
  requiredScopesFor,
  HMCP_RESOURCE_TYPE,
  HMCP_SAMPLE_SCOPE,
  HMCP_ACCESS_SCOPE,
  DEFAULT_METHOD_SCOPES,
  UNLISTED_METHOD_SCOPES,
  requiredScopesForMethod,
  assertScopes,
  assertAccess,
  principalFromClaims,
  formatBearerChallenge,
  extractBearerToken,
  resourceMetadataPathFor,
  resourceMetadataUrlFor,
  createJwtBearerAuthenticator,
  DEFAULT_JWT_ALGORITHMS,
  createIntrospectionAuthenticator,
  createClientCredentialsTokenProvider,
  TokenRequestError,
} from "./auth/index.js";
export type {
  BearerAuthenticator,
  BearerCheck,
  VerifiedToken,
  ScopeRequest,
  ScopeAction,
  ScopeLevel,
  ParsedScope,
  AccessDecision,
  AccessDenial,
  BearerChallenge,
  ExtractedToken,
  ProtectedResourceMetadata,
  CommonBearerOptions,
  JwtBearerOptions,
  JwtBearerAuthenticator,
  JwksSource,
  IntrospectionOptions,
  ClientCredentialsOptions,
  ClientAuthOptions,
} from "./auth/index.js";

// --- server ---
export { HMCPServer, hmcpContext, HMCPConfigError, PATIENT_META_KEY, serveStdio } from "./server/index.js";
export type {
  SamplingHandlerOptions,
  RequestContext,
  SamplingContext,
  SamplingHandler,
  SamplingHandlerResult,
  CreateMessageParams,
  ElicitParams,
  BackRequestOptions,
  HMCPServerOptions,
  PipelineHooks,
} from "./server/index.js";

// --- client ---
export { HMCPClient } from "./client/index.js";
export type {
  HMCPClientOptions,
  TokenProvider,
  ConnectTarget,
  CreateMessageOptions,
  BackRequestContext,
  ClientSamplingHandler,
  ClientElicitationHandler,
} from "./client/index.js";

// --- http ---
export { createHttpApp, listen, BoundedEventStore, EventNotFoundError } from "./http/index.js";
export type { HttpAppOptions, HttpApp, Listening, EventStoreLimits } from "./http/index.js";
