/**
 * The benchmark server configurations (bench/server.ts runs them; the runner and the profiler name them).
 */

/** One layer of `full` alone on top of `bare` (`--layers`): where the cost of `full` comes from. */
export type LayerConfig = "bare+auth" | "bare+guardrails" | "bare+audit";

export type ServerConfig = "ceiling" | "baseline" | "bare" | "full" | "mem-hmcp" | "mem-sdk" | LayerConfig;

export const LAYER_CONFIGS: readonly LayerConfig[] = ["bare+auth", "bare+guardrails", "bare+audit"];

/** True for the configurations that need the bench's bearer token and declare its patient. */
export function needsToken(config: ServerConfig): boolean {
  return config === "full" || config === "bare+auth";
}
