export { HMCPClient } from "./hmcp-client.js";
export type {
  HMCPClientOptions,
  ConnectTarget,
  CreateMessageOptions,
  BackRequestContext,
  ClientSamplingHandler,
  ClientElicitationHandler,
  TaskState,
  WaitForTaskOptions,
} from "./hmcp-client.js";
export type { TokenProvider } from "../auth/token-provider.js";
