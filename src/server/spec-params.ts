/**
 * Which part of a spec request's params is malformed, for the JSON-RPC `-32602` the pipeline sends.
 *
 * SDK 1.x raised a malformed spec request as a ZodError (which the pipeline maps to `-32602` naming the paths);
 * SDK 2.x raises a plain `Error` carrying the formatted issues. When a handler fails with such an error, the request
 * is checked again here, against the spec schema of its method (MCP 2025-11-25 schema), to tell the caller's
 * mistake (`-32602`) from a server fault (`-32603`). Nothing runs on the success path.
 */
import { ClientRequestSchema, CreateMessageRequestSchema } from "@modelcontextprotocol/core";
import type { JSONRPCRequest } from "@modelcontextprotocol/server";

interface SafeParser {
  safeParse(value: unknown): { success: true } | { success: false; error: unknown };
}

const BY_METHOD: ReadonlyMap<string, SafeParser> = (() => {
  const map = new Map<string, SafeParser>();
  const options = (ClientRequestSchema as unknown as { options: ReadonlyArray<SafeParser & { shape: { method: { value: string } } }> }).options;
  for (const o of options) map.set(o.shape.method.value, o);
  // HMCP's client → server sampling (DESIGN.md §1): a server-to-client request in the spec
  map.set("sampling/createMessage", CreateMessageRequestSchema as unknown as SafeParser);
  return map;
})();

/**
 * The ZodError of `request` against its method's spec schema, or `undefined` when the method is not a spec client
 * request or its params are well-formed.
 */
export function specParamsError(request: JSONRPCRequest): unknown {
  const schema = BY_METHOD.get(request.method);
  if (schema === undefined) return undefined;
  const parsed = schema.safeParse({ method: request.method, ...(request.params !== undefined && { params: request.params }) });
  return parsed.success ? undefined : parsed.error;
}
