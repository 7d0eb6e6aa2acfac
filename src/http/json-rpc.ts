/**
 * The JSON-RPC error body the HTTP layer answers a request it refuses itself with (`id: null`: JSON-RPC 2.0 §5), with
 * `data.reason` (the audit record's reason) when given.
 */
export function jsonRpcError(code: number, message: string, reason?: string): { jsonrpc: "2.0"; error: { code: number; message: string; data?: Record<string, unknown> }; id: null } {
  return { jsonrpc: "2.0", error: { code, message, ...(reason !== undefined && { data: { reason } }) }, id: null };
}

/** The id of a message a JSON-RPC error answer may echo (a string or an integer), else null. */
export function echoableId(body: unknown): string | number | null {
  const id = typeof body === "object" && body !== null ? (body as { id?: unknown }).id : undefined;
  return typeof id === "string" || (typeof id === "number" && Number.isInteger(id)) ? id : null;
}
