/**
 * The JSON-RPC error body the HTTP layer answers a request it refuses itself with (`id: null`: JSON-RPC 2.0 §5), with
 * `data.reason` (the audit record's reason) when given.
 */
export function jsonRpcError(code: number, message: string, reason?: string): { jsonrpc: "2.0"; error: { code: number; message: string; data?: Record<string, unknown> }; id: null } {
  return { jsonrpc: "2.0", error: { code, message, ...(reason !== undefined && { data: { reason } }) }, id: null };
}
