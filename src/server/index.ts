export { HMCPServer } from "./hmcp-server.js";
export type { SamplingHandlerOptions, HMCPToolConfig } from "./hmcp-server.js";
export { hmcpContext } from "./context.js";
export type {
  RequestContext,
  SamplingContext,
  SamplingHandler,
  SamplingHandlerResult,
  CreateMessageParams,
  ElicitParams,
  BackRequestOptions,
} from "./context.js";
export { HMCPConfigError } from "./options.js";
export type { HMCPServerOptions, PipelineHooks } from "./options.js";
export { PATIENT_META_KEY } from "./pipeline.js";
export type { RequestPipeline } from "./pipeline.js";
export { serveStdio } from "./stdio.js";
export { MemoryRequestStateStore, RequestStateStoreFull } from "./request-state.js";
export { PostgresRequestStateStore } from "./request-state-postgres.js";
export type { PostgresRequestStateStoreOptions, RequestStateQueryable } from "./request-state-postgres.js";
export type { RequestStateOptions, RequestStateStore, RequestStateRefusal, MemoryRequestStateStoreOptions } from "./request-state.js";
export { defaultOperationalLogger } from "./logger.js";
export type { OperationalLogger } from "./logger.js";
export { PostgresTaskStore } from "./task-store.js";
export type { PostgresTaskStoreOptions, StoredTask, TaskQueryable, TaskStatus, TaskStore } from "./task-store.js";
export { TASKS_EXTENSION_ID } from "./tasks.js";
export type { TaskOptions } from "./tasks.js";
