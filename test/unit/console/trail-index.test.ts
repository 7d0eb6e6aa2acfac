import { describe, expect, it } from "vitest";
import { TrailIndex } from "../../../src/console/trail-index.js";

const BASE = Date.UTC(2026, 10, 22);

/** The fields the index reads, for record `k`. */
function rec(k: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: `id-${k}`,
    time: new Date(BASE + k * 1000).toISOString(),
    type: "request",
    agent: "a",
    outcome: "allowed",
    actor: { sub: `u-${k % 3}` },
    patients: [],
    guardrails: [],
    ...over,
  };
}

describe("TrailIndex", () => {
  it("widens an id column past 65,535 distinct values and still matches both sides of the change", () => {
    const ix = new TrailIndex();
    const n = 70_000;
    for (let k = 0; k < n; k++) expect(ix.add(rec(k, { method: `m-${k}` }), 0, k * 100, 100)).toBe(true);
    ix.finish();
    expect(ix.method).toBeInstanceOf(Uint32Array);
    expect(ix.agent).toBeInstanceOf(Uint16Array);
    for (const k of [0, 5, 65_534, 65_535, 69_999]) {
      const m = ix.match({ method: `m-${k}` });
      expect(m).not.toBe(false);
      const hits = Array.from(ix.order).filter((i) => (m as (i: number) => boolean)(i));
      expect(hits).toEqual([k]);
    }
    expect(ix.match({ method: "m-70000" })).toBe(false);
    expect(ix.match({})).toBeUndefined();
  });

  it("finds every record by its id through the hash table, and no other", () => {
    const ix = new TrailIndex();
    const n = 50_000;
    for (let k = 0; k < n; k++) ix.add(rec(k), 0, k, 1);
    ix.finish();
    let extra = 0;
    for (let k = 0; k < n; k++) {
      const c = ix.candidates(`id-${k}`);
      expect(c).toContain(k);
      extra += c.length - 1;
    }
    // a 32-bit hash: candidates that are not the record are rare (read back and compared by the caller)
    expect(extra).toBeLessThan(5);
    expect(ix.candidates("id-absent")).toEqual([]);
  });

  it("orders by time, ties in trail order, and bounds time ranges", () => {
    const ix = new TrailIndex();
    // three chains of interleaved times, some written late, some equal
    const times: number[] = [];
    for (let c = 0; c < 3; c++) {
      for (let k = 0; k < 400; k++) {
        const t = BASE + k * 1000 + c * 10 - (k % 17 === 5 ? 30_000 : 0) - (k % 5 === 0 ? c * 10 : 0);
        times.push(t);
        ix.add(rec(k, { time: new Date(t).toISOString() }), c, k, 1);
      }
    }
    ix.finish();
    const want = times.map((t, i) => [t, i] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, i]) => i);
    expect(Array.from(ix.order)).toEqual(want);
    const [lo, hi] = ix.timeRange(BASE + 100_000, BASE + 200_000);
    expect(hi - lo).toBe(times.filter((t) => t >= BASE + 100_000 && t < BASE + 200_000).length);
    expect(ix.timeRange(BASE + 10_000_000, undefined)).toEqual([times.length, times.length]);
  });

  it("refuses objects that are not audit records, and counts a patient named twice in a record once", () => {
    const ix = new TrailIndex();
    expect(ix.add(rec(1, { outcome: "maybe" }), 0, 0, 1)).toBe(false);
    expect(ix.add(rec(2, { type: "checkpoint" }), 0, 0, 1)).toBe(false);
    expect(ix.add(rec(3, { time: "yesterday" }), 0, 0, 1)).toBe(false);
    expect(ix.add(rec(4, { patients: "p-1" }), 0, 0, 1)).toBe(false);
    expect(ix.add(rec(5, { actor: null }), 0, 0, 1)).toBe(false);
    expect(ix.add(rec(6, { patients: ["p-1", "p-1", "p-2"] }), 0, 0, 1)).toBe(true);
    ix.finish();
    expect(ix.size).toBe(1);
    expect(Array.from(ix.posting("p-1"))).toEqual([0]);
    expect(Array.from(ix.posting("p-2"))).toEqual([0]);
  });
});
