/**
 * Default scopes required per MCP method: each entry is an any-of list (holding any one scope, or a scope that
 * implies it, allows the call; see `satisfiesAny`). An empty list means "any authenticated principal".
 * HMCPServer uses this table as its default; the HTTP bearer check applies it to the JSON-RPC body too, so a missing
 * scope is refused there with 403 `insufficient_scope` and the `scope` the client should request (RFC 6750 §3.1,
 * MCP authorization spec "Scope challenge handling").
 */

const ANY_HMCP = ["hmcp:access", "hmcp:read", "hmcp:write", "patient/hmcp:read", "patient/hmcp:write", "hmcp:sample"] as const;
const READ = ["hmcp:access", "hmcp:read", "patient/hmcp:read"] as const;
const WRITE = ["hmcp:access", "hmcp:write", "patient/hmcp:write"] as const;

/** Required scopes (any of) per MCP method. Methods not listed fall back to {@link UNLISTED_METHOD_SCOPES}. */
export const DEFAULT_METHOD_SCOPES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  // Lifecycle and utilities: any valid token (the bearer check itself already ran).
  initialize: [],
  "server/discover": [],
  ping: [],
  "notifications/initialized": [],
  "notifications/cancelled": [],
  "notifications/progress": [],
  "notifications/roots/list_changed": [],
  // HMCP client → server sampling.
  "sampling/createMessage": ["hmcp:sample", "hmcp:access"],
  // Discovery: any HMCP scope.
  "tools/list": ANY_HMCP,
  "resources/list": ANY_HMCP,
  "resources/templates/list": ANY_HMCP,
  "prompts/list": ANY_HMCP,
  // Reads.
  "resources/read": READ,
  "resources/subscribe": READ,
  "resources/unsubscribe": READ,
  "prompts/get": READ,
  "completion/complete": READ,
  // Acts (a tool may write).
  "tools/call": WRITE,
  // MCP tasks (extension io.modelcontextprotocol/tasks on 2026-07-28; the revision's own on 2025-11-25): any HMCP
  // scope; a task is further seen only by the principal and patient context that created it.
  "tasks/get": ANY_HMCP,
  "tasks/update": ANY_HMCP,
  "tasks/cancel": ANY_HMCP,
  "tasks/result": ANY_HMCP,
  "tasks/list": ANY_HMCP,
  "logging/setLevel": ["hmcp:access"],
});

/** Scopes required for a method absent from the table: fail closed to the broad access scope. */
export const UNLISTED_METHOD_SCOPES: readonly string[] = Object.freeze(["hmcp:access"]);

/**
 * The any-of scope list required for `method`.
 * @param table - overrides merged over {@link DEFAULT_METHOD_SCOPES} (an entry replaces the default for its method)
 */
export function requiredScopesForMethod(method: string, table?: Readonly<Record<string, readonly string[]>>): readonly string[] {
  if (table && Object.prototype.hasOwnProperty.call(table, method)) return table[method] ?? UNLISTED_METHOD_SCOPES;
  if (Object.prototype.hasOwnProperty.call(DEFAULT_METHOD_SCOPES, method)) return DEFAULT_METHOD_SCOPES[method] ?? UNLISTED_METHOD_SCOPES;
  return UNLISTED_METHOD_SCOPES;
}
