/**
 * The paired A/B loop of bench/phi-ab.ts and bench/injection-ab.ts: every row is run once per build unmeasured
 * (warm-up), then `rounds` times per build, alternating which build goes first; the per-round B/A ratio is what a noisy
 * machine leaves comparable. Prints one table: per row the median (min-max) of A and of B over the rounds, and of B/A.
 */
import os from "node:os";

/** A measured row: runs its work on one build and returns one figure (any unit, the same for both builds). */
export interface PairedRow<T> {
  name: string;
  run: (build: T) => number;
}

/** The middle element (the upper one of an even count), as both A/B benches have always reported it. */
export const middle = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r1 = (x: number) => Math.round(x * 10) / 10;

/**
 * Runs `rows` on builds `a` and `b` for `rounds` rounds and prints the table under `title` (to which the load average
 * before and after is added), the row names padded to `nameWidth` characters.
 */
export function runPaired<T>(rows: readonly PairedRow<T>[], a: T, b: T, rounds: number, title: string, nameWidth: number): void {
  for (const row of rows) {
    row.run(a);
    row.run(b);
  }
  const res = new Map<string, { a: number[]; b: number[]; ratio: number[] }>(rows.map((r) => [r.name, { a: [], b: [], ratio: [] }]));
  const load0 = os.loadavg()[0]!;
  for (let k = 0; k < rounds; k++) {
    for (const row of rows) {
      const x = res.get(row.name)!;
      let fa: number, fb: number;
      if (k % 2 === 0) {
        fa = row.run(a);
        fb = row.run(b);
      } else {
        fb = row.run(b);
        fa = row.run(a);
      }
      x.a.push(fa);
      x.b.push(fb);
      x.ratio.push(fb / fa);
    }
  }
  const rng = (xs: number[]) => `${r1(middle(xs))} (${r1(Math.min(...xs))}-${r1(Math.max(...xs))})`;
  const rr = (xs: number[]) => `${middle(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)})`;
  console.log(`${title}, load ${load0.toFixed(2)} -> ${os.loadavg()[0]!.toFixed(2)}`);
  console.log("row".padEnd(nameWidth) + "A".padEnd(22) + "B".padEnd(22) + "B/A");
  for (const [name, x] of res) console.log(name.padEnd(nameWidth) + rng(x.a).padEnd(22) + rng(x.b).padEnd(22) + rr(x.ratio));
}
