/**
 * One measured load run against one benchmark server: the load generator's figures plus the server's own counters
 * over the run (bench/run.ts and bench/ab.ts), with the checks that make a run count: the handler answered every 2xx,
 * no non-2xx or errors, and no decision-cache hits where every text is new.
 */
import type { LoadResult } from "../load.js";
import type { ServerStats } from "../server.js";
import { isDistinct, type ServerConfig } from "./configs.js";
import { runLoadProcess, type ServerProc } from "./procs.js";

export interface Measured {
  result: LoadResult;
  /** Requests the server's handler answered during the run. */
  served: number;
  /** Server process CPU (all threads) per answered request, µs; NaN when none was answered. */
  cpuUsPerReq: number;
  /** The server's event loop (main thread) CPU per answered request, µs (Linux only). */
  eventLoopUsPerReq?: number;
  /** Text items the server's guardrails answered from their decision cache / checked afresh. */
  cacheHits?: number;
  cacheMisses?: number;
}

/** What to send: the server's URL, session headers and the request body (with the load generator's placeholders). */
export interface LoadTarget {
  config: ServerConfig;
  server: ServerProc;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Runs `seconds` of load at `connections`; reports through `warn` (without PHI) when the run does not count. */
export async function measure(t: LoadTarget, connections: number, seconds: number, warn: (message: string) => void): Promise<Measured> {
  const before: ServerStats = await t.server.stats();
  const result = await runLoadProcess({ url: t.url, headers: t.headers, body: t.body, connections, durationSec: seconds });
  const after: ServerStats = await t.server.stats();
  const served = after.served - before.served;
  const cache =
    before.guardrailCache && after.guardrailCache
      ? { cacheHits: after.guardrailCache.hits - before.guardrailCache.hits, cacheMisses: after.guardrailCache.misses - before.guardrailCache.misses }
      : {};
  if (isDistinct(t.config) && (cache.cacheHits ?? 0) > 0) warn(`WARNING ${t.config}@${connections}: ${cache.cacheHits} decision-cache hits (the texts must all differ)`);
  const ok = Math.round(result.rps * result.durationSec);
  // Every 2xx must be a real answer: the handler ran once per response (in-flight requests at the end may add a few).
  if (served < ok || served > ok + connections * 2 || result.non2xx > 0 || result.errors > 0) {
    warn(`WARNING ${t.config}@${connections}: ${ok} 2xx, handler served ${served}, non2xx ${result.non2xx}, errors ${result.errors}`);
  }
  const eventLoop = after.mainCpuUs !== undefined && before.mainCpuUs !== undefined && served > 0 ? { eventLoopUsPerReq: (after.mainCpuUs - before.mainCpuUs) / served } : {};
  return { result, served, cpuUsPerReq: served > 0 ? (after.cpuUs - before.cpuUs) / served : Number.NaN, ...eventLoop, ...cache };
}
