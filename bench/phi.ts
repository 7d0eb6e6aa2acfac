/**
 * PHI detector speed: µs per KB of new text (p50 / p99 of `detect`, the compiled package), on 1 KB and 4 KB of
 * MTSamples text (benign) and of PhysioNet notes with PHI (test data only, read at run time), plus adversarial inputs
 * (1 MB of one repeated fragment, deep nesting, astral characters): ms per MB, which must stay linear.
 *
 * "New text": every call gets a different slice of a long text, so nothing is answered from a cache.
 *
 * Usage: `npx tsx bench/phi.ts [--quick] [--detector FILE.mjs [--lexicon FILE.json]]` (prints a table and one JSON
 * line). `--detector` measures another build (an esbuild bundle of an older src/guardrails/phi/detector.ts) for an A/B.
 */
import path from "node:path";
import { phiText, PHI_ADVERSARIAL, mtsamplesText } from "./lib/fixtures.js";
import { ensureBuilt, loadHmcp } from "./lib/hmcp.js";

const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
// `--detector FILE.mjs [--lexicon FILE.json]`: another build of the detector (e.g. the previous commit's, bundled) for an A/B
const other = arg("--detector");
type Create = (o?: { lexiconFile?: string }) => { detect(text: string): unknown[] };
let createPhiDetector: Create;
if (other) {
  createPhiDetector = ((await import(path.resolve(other))) as { createPhiDetector: Create }).createPhiDetector;
} else {
  ensureBuilt();
  createPhiDetector = (await loadHmcp()).createPhiDetector;
}
const lexiconFile = arg("--lexicon");
const detector = createPhiDetector(lexiconFile ? { lexiconFile } : {});
const quick = process.argv.includes("--quick");
const N = quick ? 300 : 2000;

function percentile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/** µs per KB of `detect` over `n` windows of `size` chars of `source` (each window starts elsewhere). */
function perKB(source: string, size: number, n: number): { p50: number; p99: number } {
  const slices: string[] = [];
  const span = Math.max(1, source.length - size);
  for (let i = 0; i < n; i++) slices.push(source.slice((i * 7919) % span, ((i * 7919) % span) + size));
  for (let i = 0; i < Math.min(200, n); i++) detector.detect(slices[i]!); // warm-up (JIT)
  const us: number[] = [];
  for (const s of slices) {
    const t = process.hrtime.bigint();
    detector.detect(s);
    us.push(Number(process.hrtime.bigint() - t) / 1000 / (s.length / 1024));
  }
  return { p50: Math.round(percentile(us, 0.5) * 10) / 10, p99: Math.round(percentile(us, 0.99) * 10) / 10 };
}

const BIG = 400_000;
const mtsamples = mtsamplesText;
const sources = { mtsamples: mtsamples(BIG), physionet: phiText(BIG).text };
const results: Array<Record<string, unknown>> = [];
console.log(`PHI detector, µs per KB of new text (n=${N}, node ${process.version})`);
console.log("text        size    p50     p99");
// a first pass over every row, not measured: the optimising compiler's first passes over the detector's many paths
// otherwise land in the first row's calls (a 1 KB p99 of 2-9 ms that `--no-opt` took away, session 22)
for (const src of Object.values(sources)) for (const size of [1024, 4096]) perKB(src, size, N);
for (const [name, src] of Object.entries(sources)) {
  for (const size of [1024, 4096]) {
    const r = perKB(src, size, N);
    results.push({ text: name, chars: size, ...r });
    console.log(`${name.padEnd(12)}${String(size).padEnd(8)}${String(r.p50).padStart(5)}  ${String(r.p99).padStart(6)}`);
  }
}

// Adversarial inputs: ms per MB (median of 3); each case also at 1/4 size, to show the cost is linear.
const MB = 1 << 20;
const adversarial = PHI_ADVERSARIAL;
const worst: Array<Record<string, unknown>> = [];
console.log("\nadversarial, ms per MB (1 MB / 256 KB)");
for (const [name, make] of Object.entries(adversarial)) {
  const msPerMB = (chars: number): number => {
    const text = make(chars);
    const ms: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      detector.detect(text);
      ms.push(performance.now() - t);
    }
    return Math.round((percentile(ms, 0.5) / (text.length / MB)) * 10) / 10;
  };
  const big = msPerMB(MB);
  const small = msPerMB(MB / 4);
  worst.push({ case: name, msPerMB: big, msPerMBQuarter: small });
  console.log(`${name.padEnd(24)}${String(big).padStart(8)}  ${String(small).padStart(8)}`);
}
console.log(JSON.stringify({ perKB: results, adversarial: worst }));
