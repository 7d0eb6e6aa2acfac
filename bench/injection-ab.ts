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
import path from "node:path";
import { mtsamplesText, phiText, REPO_ROOT } from "./lib/fixtures.js";
import { middle, runPaired, type PairedRow } from "./lib/paired.js";

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
  return middle(us);
}

const rows: PairedRow<Build>[] = [];
for (const [name, src] of Object.entries(sources)) {
  for (const size of sizes) {
    const slices = slicesOf(src, size);
    if (want(`${name} ${size} both`)) rows.push({ name: `${name} ${size} both`, run: (b) => perKB((t) => b.model.assessWith(b.data, t, "message"), slices) });
    if (want(`${name} ${size} score`)) rows.push({ name: `${name} ${size} score`, run: (b) => perKB((t) => b.model.score(t), slices) });
  }
}
runPaired(rows, A, B, rounds, `${cpu ? "CPU µs per KB (mean)" : "wall µs per KB (p50)"}${evict.length > 0 ? `, ${evict.length / 128} KB read before each call` : ""}, rounds ${rounds}, n ${N}`, 24);
