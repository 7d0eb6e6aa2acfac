/**
 * The benchmark server configurations (bench/server.ts runs them; the runner and the profiler name them).
 */

/** One layer of `full` alone on top of `bare` (`--layers`): where the cost of `full` comes from. */
export type LayerConfig = "bare+auth" | "bare+guardrails" | "bare+audit";

/**
 * `full-distinct` is the `full` server driven with a different request text every request (the load generator splices
 * the request counter into the text), so the guardrails' per-session decision cache never answers; `full` resends one
 * text, so after the first request its cacheable guardrail decisions come from the cache. `full-distinct-workers`
 * (the runner's `--phi-workers`) is `full-distinct` with the output stage's `phi-redaction` given `workers: 1`: PHI
 * scans of long text items on a worker thread (docs/guardrails.md), the opt-in the default policy leaves off.
 */
export type ServerConfig =
  | "ceiling"
  | "baseline"
  | "baseline-v1"
  | "baseline-modern"
  | "bare"
  | "full"
  | "full-distinct"
  | "full-distinct-workers"
  | "full-modern"
  | "mem-hmcp"
  | "mem-sdk"
  | LayerConfig;

export const LAYER_CONFIGS: readonly LayerConfig[] = ["bare+auth", "bare+guardrails", "bare+audit"];

/**
 * `baseline` is the plain MCP SDK v2 (`@modelcontextprotocol/server` + `/node` + `/express`), the SDK HMCP runs on,
 * serving the same protocol era as HMCP (2025-11-25, one stateful legacy session); `baseline-v1` is the plain SDK 1.x
 * (`@modelcontextprotocol/sdk`, installed as the devDependency alias `mcp-sdk-v1`), kept for history: the ratios of
 * record are against `baseline`.
 */
export function isSdkBaseline(config: ServerConfig): boolean {
  return config === "baseline" || config === "baseline-v1";
}

/** True for the configurations that need the bench's bearer token and declare its patient. */
export function needsToken(config: ServerConfig): boolean {
  return config === "full" || config === "full-modern" || isDistinct(config) || config === "bare+auth";
}

/**
 * True for the configurations driven with MCP 2026-07-28 requests (no session; the `_meta` envelope and the
 * `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers on every request): `baseline-modern`, the plain SDK v2's
 * `createMcpHandler` (a fresh `McpServer` per request, JSON responses) answering `tools/call` with its echo tool, and
 * `full-modern`, the `full` server reached the way a modern client reaches HMCP sampling, its tool `sampling_createMessage`.
 */
export function isModern(config: ServerConfig): boolean {
  return config === "baseline-modern" || config === "full-modern";
}

/** True for the configurations whose every request carries a new text (no decision-cache hits). */
export function isDistinct(config: ServerConfig): boolean {
  return config === "full-distinct" || config === "full-distinct-workers";
}

/** Placeholder in a load body's text that the load generator replaces with the request counter (bench/load.ts). */
export const COUNTER_PLACEHOLDER = "[<n>]";

/**
 * The request text a configuration sends: for the distinct configurations, `Request <counter>. ` before the text, so every
 * request's text is new (the prefix was chosen so that the default guardrails find nothing more in it).
 */
export function requestText(config: ServerConfig, text: string): string {
  return isDistinct(config) ? `Request ${COUNTER_PLACEHOLDER}. ${text}` : text;
}
