export { HMCPErrorCode, HMCPError, INTERNAL_ERROR, INVALID_PARAMS, isWireError, toWireError } from "./errors.js";
export type { HMCPErrorData, HMCPReason } from "./errors.js";
export { HMCP_VERSION, HMCPCapabilitySchema, readHMCPCapability } from "./capability.js";
export type { HMCPCapability } from "./capability.js";
export { INFO_NEEDED, INFO_NEEDED_META_KEY, isInfoNeeded } from "./stop-reason.js";
export type { InfoNeeded } from "./stop-reason.js";
export type { Principal, TransportKind } from "./context.js";
export { HMCPConfigError, closestKey, refuseUnknownOptions, unknownOptionMessage } from "./config-error.js";
export { REDACTIONS_META_KEY, withRedactionsMeta } from "./redactions.js";
