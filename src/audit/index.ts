/** The audit trail (issue 4): records, sinks, verification, query, FHIR export, operational logger. */
export { AUDIT_RECORD_VERSION, AuditRecordInputSchema, AuditOutcomeSchema, AuditEventTypeSchema } from "./record.js";
export type { AuditRecordInput, AuditSink, AuditOutcome, AuditEventType } from "./record.js";
export { newAuditRecord } from "./new-record.js";
export type { AuditRecordDraft } from "./new-record.js";
export { canonicalJson, contentDigest, sha256Hex } from "./canonical-json.js";
export { FileAuditSink, AuditSinkError } from "./file-sink.js";
export type { FileAuditSinkOptions, AuditDurability } from "./file-sink.js";
export { GENESIS_HASH, generateAuditSigningKey } from "./chain.js";
export type { AuditSigningKey, AuditVerifyKey, CheckpointAlg, CheckpointBody, ChainEntry } from "./chain.js";
export { verifyAuditFiles } from "./verify.js";
export type { VerifyOptions, VerifyResult, VerifyFailure, VerifyFailureReason } from "./verify.js";
export { queryAudit, iterateAudit, expandAuditPaths } from "./query.js";
export type { AuditQuery, ScanStats } from "./query.js";
export { exportFhirAuditEvents, toAuditEvent } from "./fhir.js";
export type { FhirAuditBundle, FhirAuditEvent, FhirExportOptions, FhirCoding, FhirReference } from "./fhir.js";
export { createOperationalLogger, basicRedactPhi } from "./operational-logger.js";
export type { OperationalLoggerOptions, Redactor, LogTransport } from "./operational-logger.js";
