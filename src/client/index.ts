export { HMCPClient } from "./hmcp-client.js";
export type {
  HMCPClientOptions,
  TokenProvider,
  ConnectTarget,
  CreateMessageOptions,
  BackRequestContext,
  ClientSamplingHandler,
  ClientElicitationHandler,
} from "./hmcp-client.js";
