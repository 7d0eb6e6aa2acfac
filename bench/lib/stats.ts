/**
 * Small statistics helpers for the benchmarks: medians, percentiles and spread. Units are whatever the caller uses.
 */

/** The q-quantile (0..1) of `values` by linear interpolation; NaN for an empty list. Does not mutate `values`. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

/** Summary of repeated runs: median, min, max and the relative spread ((max - min) / median). */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** (max - min) / median, e.g. 0.08 = the runs span 8 % of the median. */
  relSpread: number;
  n: number;
}

export function spread(values: readonly number[]): Spread {
  const m = median(values);
  const min = values.reduce((a, b) => Math.min(a, b), Infinity);
  const max = values.reduce((a, b) => Math.max(a, b), -Infinity);
  return { median: m, min, max, relSpread: m === 0 ? 0 : (max - min) / m, n: values.length };
}

/** Latency summary of individual samples, ms. */
export interface LatencySummary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function latencySummary(samplesMs: readonly number[]): LatencySummary {
  const n = samplesMs.length;
  if (n === 0) return { n, p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN };
  const s = Float64Array.from(samplesMs).sort();
  let sum = 0;
  for (const v of s) sum += v;
  const at = (q: number) => {
    const pos = (n - 1) * q;
    const lo = Math.floor(pos);
    const hi = Math.ceil(pos);
    return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
  };
  return { n, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: s[n - 1]!, mean: sum / n };
}

/** Rounds to `digits` decimals (for JSON output). */
export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
