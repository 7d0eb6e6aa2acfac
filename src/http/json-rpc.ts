/** The JSON-RPC error body the HTTP layer answers a request it refuses itself with (`id: null`: JSON-RPC 2.0 §5). */
export function jsonRpcError(code: number, message: string) {
  return { jsonrpc: "2.0", error: { code, message }, id: null };
}
