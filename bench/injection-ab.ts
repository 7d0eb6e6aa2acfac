/**
 * Paired A/B of two builds of the prompt-injection scorer in one process, on new text: each round measures every row
 * with A then B (B then A on odd rounds), on the same slices (N different slices per row: by the time a build meets a
 * slice again, the other N - 1 have pushed its cache lines out). Rows: `assessWith` of both shipped models as a
 * message (as guardrails/default.yaml scores text) and `score`, on MTSamples and PhysioNet slices of 1 and 4 KB.
 *
 * Usage: `npx tsx bench/injection-ab.ts --a OLD.mjs --b NEW.mjs [--rounds 7] [--n 1000] [--only mtsamples,both] [--sizes 1024,4096] [--cpu] [--evict KB]`
 * where each FILE.mjs is an esbuild bundle of src/guardrails/injection/model.ts
 * (`npx esbuild src/guardrails/injection/model.ts --bundle --platform=node --format=esm --outfile=FILE.mjs`; for an
 * older commit, bundle its src/guardrails/injection/ written out with `git show`).
 * Prints per row: µs per KB p50 of A and B (`--cpu`: mean CPU µs per KB over the slices), medians (min-max) over the
 * rounds, and the median (min-max) of the per-round B/A ratios. `--evict KB`: before each call (untimed), read KB of
 * other memory, as other work between two calls of a server would (the scorer then meets colder caches; wall time only).
 */
import os from "node:os";
import path from "node:path";
import { mtsamplesText, phiText, REPO_ROOT } from "./lib/fixtures.js";

const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
type Assessment = { score: number };
type Model = { score(t: string): number; assessWith(o: Model, t: string, kind?: string): [Assessment, Assessment] };
type Build = { model: Model; data: Model };
const weights = (name: string) => path.join(REPO_ROOT, "guardrails", "data", name);
const load = async (file: string): Promise<Build> => {
  const m = (await import(path.resolve(file))) as { loadInjectionModel(f: string): Model };
  return { model: m.loadInjectionModel(weights("injection-model.json")), data: m.loadInjectionModel(weights("injection-data-model.json")) };
};
const A = await load(arg("--a") ?? "");
const B = await load(arg("--b") ?? "");
const rounds = Number(arg("--rounds") ?? 7);
const N = Number(arg("--n") ?? 1000);
const only = arg("--only")?.split(",");
const sizes = (arg("--sizes") ?? "1024,4096").split(",").map(Number);
const want = (name: string) => !only || only.every((o) => name.includes(o));
const cpu = process.argv.includes("--cpu");
const evict = new Float64Array((Number(arg("--evict") ?? 0) * 1024) / 8);
// (a module-level sum, so that the reads are not optimised away)
let _evicted = 0;
/** Reads `evict` through (one load per 64-byte line). */
function evictCaches(): void {
  for (let i = 0; i < evict.length; i += 8) _evicted += evict[i]!;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r1 = (x: number) => Math.round(x * 10) / 10;
const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const sources = { mtsamples: mtsamplesText(400_000), physionet: phiText(400_000).text };
const slicesOf = (source: string, size: number): string[] => {
  const span = Math.max(1, source.length - size);
  return Array.from({ length: N }, (_, i) => source.slice((i * 7919) % span, ((i * 7919) % span) + size));
};

/** p50 wall-clock µs per KB of `fn` over the slices (`--cpu`: mean CPU µs per KB, one measurement around the batch). */
function perKB(fn: (t: string) => unknown, slices: string[]): number {
  if (cpu) {
    let kb = 0;
    const t = cpuUs();
    for (const s of slices) {
      fn(s);
      kb += s.length / 1024;
    }
    return (cpuUs() - t) / kb;
  }
  const us: number[] = [];
  for (const s of slices) {
    if (evict.length > 0) evictCaches();
    const t = process.hrtime.bigint();
    fn(s);
    us.push(Number(process.hrtime.bigint() - t) / 1000 / (s.length / 1024));
  }
  return median(us);
}

type Row = { name: string; run: (b: Build) => number };
const rows: Row[] = [];
for (const [name, src] of Object.entries(sources)) {
  for (const size of sizes) {
    const slices = slicesOf(src, size);
    if (want(`${name} ${size} both`)) rows.push({ name: `${name} ${size} both`, run: (b) => perKB((t) => b.model.assessWith(b.data, t, "message"), slices) });
    if (want(`${name} ${size} score`)) rows.push({ name: `${name} ${size} score`, run: (b) => perKB((t) => b.model.score(t), slices) });
  }
}
// warm-up: one unmeasured pass of every row with each build
for (const row of rows) {
  row.run(A);
  row.run(B);
}
const res = new Map<string, { a: number[]; b: number[]; ratio: number[] }>(rows.map((r) => [r.name, { a: [], b: [], ratio: [] }]));
const load0 = os.loadavg()[0]!;
for (let k = 0; k < rounds; k++) {
  for (const row of rows) {
    const x = res.get(row.name)!;
    let a: number, b: number;
    if (k % 2 === 0) {
      a = row.run(A);
      b = row.run(B);
    } else {
      b = row.run(B);
      a = row.run(A);
    }
    x.a.push(a);
    x.b.push(b);
    x.ratio.push(b / a);
  }
}
const rng = (xs: number[]) => `${r1(median(xs))} (${r1(Math.min(...xs))}-${r1(Math.max(...xs))})`;
const rr = (xs: number[]) => `${median(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}-${Math.max(...xs).toFixed(3)})`;
console.log(`${cpu ? "CPU µs per KB (mean)" : "wall µs per KB (p50)"}${evict.length > 0 ? `, ${evict.length / 128} KB read before each call` : ""}, rounds ${rounds}, n ${N}, load ${load0.toFixed(2)} -> ${os.loadavg()[0]!.toFixed(2)}`);
console.log("row".padEnd(24) + "A".padEnd(22) + "B".padEnd(22) + "B/A");
for (const [name, x] of res) console.log(name.padEnd(24) + rng(x.a).padEnd(22) + rng(x.b).padEnd(22) + rr(x.ratio));
