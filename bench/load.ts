/**
 * The load generator: autocannon in its own process (bench/run.ts forks it once), so that load and server never share
 * an event loop. It answers each IPC message `{ type: "run", spec: LoadSpec }` with `{ type: "result", result }`.
 *
 * Each request carries a fresh JSON-RPC id (a counter, set in autocannon's `setupRequest`): one stateful MCP session maps
 * responses by request id, so concurrent requests must not reuse one. (autocannon's own `[<id>]` replacement is not
 * used: it assumes 33-character ids when it computes Content-Length, and sends a wrong length with its shorter ids.)
 * A body may also carry `[<n>]` placeholders (inside a string, e.g. the request text): each is replaced with the same
 * counter, so that every request's text differs (the `full-distinct` configuration). The counter runs on across all the
 * runs of this process (the runner forks one load process for the whole benchmark), warm-up runs included, so no id
 * and no text is ever sent twice: a server's decision cache keeps texts across runs on the same session.
 */
import { createRequire } from "node:module";
import { latencySummary } from "./lib/stats.js";

/** One load run. */
export interface LoadSpec {
  url: string;
  headers: Record<string, string>;
  /**
   * Request body; its one `"[<id>]"` (with the quotes) is replaced with a unique number per request, and so is every
   * `[<n>]` (without quotes, e.g. inside the request text).
   */
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

/**
 * The body of request number `n` (1, 2, ...): {@link LoadSpec.body} with its `"[<id>]"` and every `[<n>]` replaced by `n`.
 * @throws Error when the body has no `"[<id>]"` or more than one
 */
export function requestBodies(body: string): (n: number) => string {
  if (body.split('"[<id>]"').length !== 2) throw new Error('load: body needs exactly one "[<id>]" placeholder');
  // the body between placeholders, joined with the counter: every placeholder gets the same number
  const parts = body.split(/"\[<id>\]"|\[<n>\]/);
  return (n) => parts.join(String(n));
}

/** The last request number sent by this process (see the module comment). */
let requestCounter = 0;

/** Runs autocannon once. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const samples: number[] = [];
  const bodyOf = requestBodies(spec.body);
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
              req["body"] = bodyOf(++requestCounter);
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
