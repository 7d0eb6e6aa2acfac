/**
 * HMCP sampling as an MCP tool (opt-in, `HMCPServer.sampling(handler, { tool: true })`): hosts that cannot send
 * `sampling/createMessage` (the MCP Inspector, most MCP hosts) call the tool instead. Its input is the
 * `CreateMessageRequest` params and its `structuredContent` a `CreateMessageResult`; it runs the same handler under
 * the same scopes (those of `sampling/createMessage`, not `tools/call`'s), guardrails and audit record.
 */

/** The name of the sampling tool (fixed, so that the HTTP layer can check its scopes before any server sees it). */
export const SAMPLING_TOOL_NAME = "sampling_createMessage";

/**
 * The method whose scopes a request is checked against: `sampling/createMessage` for a `tools/call` of
 * {@link SAMPLING_TOOL_NAME}, else the request's own method.
 */
export function scopeMethodOf(method: string, params: unknown): string {
  if (method !== "tools/call" || typeof params !== "object" || params === null) return method;
  return (params as { name?: unknown }).name === SAMPLING_TOOL_NAME ? "sampling/createMessage" : method;
}
