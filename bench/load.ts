/**
 * The load generator: autocannon in its own process (bench/run.ts forks it once), so that load and server never share
 * an event loop. It answers each IPC message `{ type: "run", spec: LoadSpec }` with `{ type: "result", result }`.
 *
 * Each request carries a fresh JSON-RPC id (a counter, set in autocannon's `setupRequest`): one stateful MCP session maps
 * responses by request id, so concurrent requests must not reuse one. (autocannon's own `[<id>]` replacement is not
 * used: it assumes 33-character ids when it computes Content-Length, and sends a wrong length with its shorter ids.)
 */
import { createRequire } from "node:module";
import { latencySummary } from "./lib/stats.js";

/** One load run. */
export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  /** Request body; its one `"[<id>]"` (with the quotes) is replaced with a unique number per request. */
  body: string;
  connections: number;
  /** Measured seconds. */
  durationSec: number;
}

/**
 * What one run measured. Latency percentiles come from every 2xx response's own duration (autocannon's `response`
 * event, hrtime, sub-millisecond), not from autocannon's summary histogram, which rounds to whole milliseconds.
 */
export interface LoadResult {
  connections: number;
  durationSec: number;
  /** 2xx responses per second over the run. */
  rps: number;
  requests: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  "2xx": number;
  requests: { total: number };
}
interface Instance {
  on(event: "response", listener: (client: unknown, statusCode: number, bytes: number, responseTimeMs: number) => void): void;
}
type Autocannon = (opts: Record<string, unknown>, done: (err: unknown, result: AutocannonResult) => void) => Instance;

const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

/** Runs autocannon once. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const samples: number[] = [];
  const [head, tail] = spec.body.split('"[<id>]"');
  if (tail === undefined) throw new Error('load: body has no "[<id>]" placeholder');
  let id = 0;
  const r = await new Promise<AutocannonResult>((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        method: "POST",
        headers: spec.headers,
        requests: [
          {
            method: "POST",
            setupRequest: (req: Record<string, unknown>) => {
              req["body"] = `${head}${++id}${tail}`;
              return req;
            },
          },
        ],
        connections: spec.connections,
        pipelining: 1,
        duration: spec.durationSec,
        timeout: 10,
      },
      (err, result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(result)),
    );
    instance.on("response", (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) samples.push(ms);
    });
  });
  const ok = r["2xx"];
  const lat = latencySummary(samples);
  return {
    connections: spec.connections,
    durationSec: r.duration,
    rps: ok / r.duration,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    p50Ms: lat.p50,
    p90Ms: lat.p90,
    p99Ms: lat.p99,
    maxMs: lat.max,
    meanMs: lat.mean,
  };
}

if (process.send && process.env["BENCH_LOAD_WORKER"] === "1") {
  process.on("message", (msg: { type: string; spec?: LoadSpec }) => {
    if (msg.type !== "run" || !msg.spec) return;
    runLoad(msg.spec).then(
      (result) => process.send!({ type: "result", result }),
      (error: unknown) => process.send!({ type: "result", error: String(error) }),
    );
  });
  process.on("disconnect", () => process.exit(0));
  process.send({ type: "ready" });
}
