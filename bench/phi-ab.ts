/**
 * Paired A/B of two builds of the PHI detector in one process: each round measures every row with A then B (B then A
 * on odd rounds: the build run second in a pair reads differently on this machine), on the same slices. Rows are the
 * `bench/phi.ts` rows (µs per KB p50 of new text) and its adversarial cases (ms per MB of 1 MB, best of 5).
 *
 * Usage: `npx tsx bench/phi-ab.ts --a OLD.mjs --b NEW.mjs [--rounds 5] [--n 1000] [--only physionet,emails@] [--cpu]`
 * where each FILE.mjs is an esbuild bundle of src/guardrails/phi/detector.ts
 * (`npx esbuild src/guardrails/phi/detector.ts --bundle --platform=node --format=esm --outfile=FILE.mjs`).
 * Prints per row: A and B medians (min-max) and the median (min-max) of the per-round B/A ratios.
 */
import path from "node:path";
import { phiText, REPO_ROOT, PHI_ADVERSARIAL, mtsamplesText } from "./lib/fixtures.js";
import { middle, runPaired, type PairedRow } from "./lib/paired.js";

const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
type Detector = { detect(text: string): unknown[] };
type Create = (o?: { lexiconFile?: string }) => Detector;
const lexiconFile = path.join(REPO_ROOT, "guardrails", "data", "phi-lexicon.json");
const load = async (file: string): Promise<Detector> =>
  ((await import(path.resolve(file))) as { createPhiDetector: Create }).createPhiDetector({ lexiconFile });
const A = await load(arg("--a") ?? "");
const B = await load(arg("--b") ?? "");
const rounds = Number(arg("--rounds") ?? 5);
const N = Number(arg("--n") ?? 1000);
const only = arg("--only")?.split(",");
const want = (name: string) => !only || only.some((o) => name.includes(o));


const mtsamples = mtsamplesText;
const sources = { mtsamples: mtsamples(400_000), physionet: phiText(400_000).text };
const slicesOf = (source: string, size: number): string[] => {
  const out: string[] = [];
  const span = Math.max(1, source.length - size);
  for (let i = 0; i < N; i++) out.push(source.slice((i * 7919) % span, ((i * 7919) % span) + size));
  return out;
};
// `--cpu`: CPU time of the process (all threads) instead of wall time, less moved by other processes on a loaded
// machine: per-KB rows give the mean over all slices (one measurement around the batch) instead of the p50
const cpu = process.argv.includes("--cpu");
const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
/** p50 µs per KB of `d.detect` over the slices (`--cpu`: mean CPU µs per KB). */
function perKB(d: Detector, slices: string[]): number {
  if (cpu) {
    let kb = 0;
    const t = cpuUs();
    for (const s of slices) {
      d.detect(s);
      kb += s.length / 1024;
    }
    return (cpuUs() - t) / kb;
  }
  const us: number[] = [];
  for (const s of slices) {
    const t = process.hrtime.bigint();
    d.detect(s);
    us.push(Number(process.hrtime.bigint() - t) / 1000 / (s.length / 1024));
  }
  return middle(us);
}
const MB = 1 << 20;
const adversarial = PHI_ADVERSARIAL;
function msPerMB(d: Detector, text: string): number {
  const ms: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = cpu ? cpuUs() / 1000 : performance.now();
    d.detect(text);
    ms.push((cpu ? cpuUs() / 1000 : performance.now()) - t);
  }
  return Math.min(...ms) / (text.length / MB); // the least disturbed of 5 (a collection or a neighbour's burst adds up to 2x)
}

const rows: PairedRow<Detector>[] = [];
for (const [name, src] of Object.entries(sources))
  for (const size of [1024, 4096]) {
    const slices = slicesOf(src, size);
    if (want(`${name} ${size}`)) rows.push({ name: `${name} ${size} µs/KB`, run: (d) => perKB(d, slices) });
  }
for (const [name, make] of Object.entries(adversarial)) {
  const text = make(MB);
  if (want(name)) rows.push({ name: `${name} ms/MB`, run: (d) => msPerMB(d, text) });
}
runPaired(rows, A, B, rounds, `${cpu ? "CPU time" : "wall time"}, rounds ${rounds}, n ${N}`, 32);
