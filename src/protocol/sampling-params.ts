/**
 * The `sampling/createMessage` params type, one for both sides: the server's handlers (`SamplingHandler`) and the
 * client's sampling handler and `createMessage` take the same type, exported once from the public entry.
 */
import type { CreateMessageRequest } from "@modelcontextprotocol/server";

/** Params of `sampling/createMessage` (MCP spec 2025-06-18, "Sampling"). */
export type CreateMessageParams = CreateMessageRequest["params"];
