/**
 * Prompt-injection scorer timing (not a test).
 *
 * New text (the figure issue #19's target reads, "per 1 KB of new text"): `score` and `assessWith` (both shipped
 * models, as `guardrails/default.yaml` runs them) on N different slices of MTSamples (CC0) and of PhysioNet notes (test
 * data, read at run time), each call a different slice as in bench/phi.ts: wall-clock µs per KB per call, p50 and p99.
 * The scorer's cost depends on the text: ordinary clinical words open keyword gates ("the answer", "no ... review",
 * "change ... dose"), and their rules' regexes then run.
 *
 * One text, called again and again (the first MTSamples transcription of each size; its gates, code and weights stay
 * in cache, so it reads lower than new text):
 * - `score`: CPU µs per call of the whole `InjectionModel.score` (user + system CPU time over a batch, steadier than
 *   wall-clock on a shared machine; the median of `--repeats` batches);
 * - `both`: CPU µs per call of `InjectionModel.assessWith` with the shipped data model, as `guardrails/default.yaml`
 *   scores every message, result and resource (both models in one pass; session 24);
 * - the stages of `score` (normalise, keyword gates, hard rules, windows, feature rules per window, feature sums) run one
 *   after another as `score` runs them, wall-clock µs per call (mean over the batches): a stage measured alone in a
 *   loop keeps its code and data in cache and looks cheaper than it is inside `score`.
 *
 * Usage: `npx tsx bench/injection.ts [--chars 1024,4096] [--n 2000] [--repeats 7]` (`--n`: calls per batch, and slices per
 * size and source of the new-text table)
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { hardRuleHit, normalizeForInjection, ruleGates, sentenceWindows, sumFeatures, windowRules, windows } from "../src/guardrails/injection/features.js";
import { loadInjectionModel, type InjectionModelFile } from "../src/guardrails/injection/model.js";
import { clinicalText, mtsamplesText, phiText, REPO_ROOT } from "./lib/fixtures.js";

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : dflt;
};
const SIZES = arg("chars", "1024,4096").split(",").map(Number);
const N = Number(arg("n", "2000"));
const REPEATS = Number(arg("repeats", "7"));

const MODEL_FILE = path.join(REPO_ROOT, "guardrails", "data", "injection-model.json");
const model = loadInjectionModel(MODEL_FILE);
const dataModel = loadInjectionModel(path.join(REPO_ROOT, "guardrails", "data", "injection-data-model.json"));
// the shipped weights (1 MB), so that the sums pay the same cache misses as `score` does
const file = JSON.parse(readFileSync(MODEL_FILE, "utf8")) as InjectionModelFile;
const weights = new Float32Array(file.buckets);
for (let i = 0; i < file.index.length; i++) weights[file.index[i]!] = file.weight[i]!;
const out = new Float64Array(1);
// the shipped model's windows and features (the stages below run what `score` runs)
const win = file.windows ?? { kind: "fixed", size: 600, step: 600 };
const cut = (t: string) => (win.kind === "sentences" ? sentenceWindows(t, win.min, win.max) : windows(t, win.size, win.step));
const charGrams = file.charGrams ?? true;
const rulesRaw = file.rulesRaw ?? false;

/** Median over batches of CPU µs per call. */
function cpuPerCall(fn: () => unknown): number {
  for (let i = 0; i < Math.min(N, 500); i++) fn();
  const per: number[] = [];
  for (let r = 0; r < REPEATS; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < N; i++) fn();
    const c = process.cpuUsage(c0);
    per.push((c.user + c.system) / N);
  }
  per.sort((a, b) => a - b);
  return Math.round(per[Math.floor(per.length / 2)]! * 10) / 10;
}

/** Mean wall-clock µs per call of each stage, run in sequence as `score` runs them. */
function stagesInContext(text: string): Record<string, number> {
  const names = ["normalize", "gates", "hardRuleHit", "windows", "windowRules", "sumFeatures"] as const;
  const acc = new Float64Array(names.length);
  const calls = N * REPEATS;
  for (let i = 0; i < calls + 500; i++) {
    if (i === 500) acc.fill(0);
    let a = performance.now();
    const t = normalizeForInjection(text);
    let b = performance.now();
    acc[0]! += b - a;
    a = b;
    const gates = ruleGates(t);
    b = performance.now();
    acc[1]! += b - a;
    a = b;
    hardRuleHit(t, gates);
    b = performance.now();
    acc[2]! += b - a;
    a = b;
    const wins = cut(t);
    b = performance.now();
    acc[3]! += b - a;
    a = b;
    const masks = windowRules(t, wins, gates);
    b = performance.now();
    acc[4]! += b - a;
    a = b;
    let s = 0;
    for (let k = 0; k < wins.length; k++) s += sumFeatures(t, wins[k]![0], wins[k]![1], rulesRaw ? 0 : masks[k]!, weights, out, charGrams);
    b = performance.now();
    acc[5]! += b - a + s * 0;
  }
  return Object.fromEntries(names.map((n, i) => [n, Math.round((acc[i]! / calls) * 1000 * 10) / 10]));
}

function percentile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/** µs per KB of `fn` over `n` slices of `size` chars of `source` (each a different one), p50 and p99. */
function newText(source: string, size: number, fn: (t: string) => unknown): { p50: number; p99: number } {
  const span = Math.max(1, source.length - size);
  const slices = Array.from({ length: N }, (_, i) => source.slice((i * 7919) % span, ((i * 7919) % span) + size));
  const us: number[] = [];
  for (const s of slices) {
    const t = process.hrtime.bigint();
    fn(s);
    us.push(Number(process.hrtime.bigint() - t) / 1000 / (s.length / 1024));
  }
  return { p50: Math.round(percentile(us, 0.5) * 10) / 10, p99: Math.round(percentile(us, 0.99) * 10) / 10 };
}

const sources = { mtsamples: mtsamplesText(400_000), physionet: phiText(400_000).text };
const fresh: Array<Record<string, unknown>> = [];
const score = (t: string) => model.score(t);
const both = (t: string) => model.assessWith(dataModel, t, "message");
// a first pass over every source and size, not measured (the optimising compiler's first passes)
for (const src of Object.values(sources)) for (const chars of SIZES) newText(src, chars, both);
console.log(`prompt-injection scorer on new text, wall-clock µs per KB per call (node ${process.version}; n=${N} slices per row)`);
console.log("text        chars   score p50    p99   both p50    p99");
for (const [name, src] of Object.entries(sources)) {
  for (const chars of SIZES) {
    const a = newText(src, chars, score);
    const b = newText(src, chars, both);
    fresh.push({ text: name, chars, scoreP50: a.p50, scoreP99: a.p99, bothP50: b.p50, bothP99: b.p99 });
    console.log(`${name.padEnd(12)}${String(chars).padEnd(8)}${String(a.p50).padStart(9)}  ${String(a.p99).padStart(5)}  ${String(b.p50).padStart(9)}  ${String(b.p99).padStart(5)}`);
  }
}
console.log("");

const rows: Array<Record<string, unknown>> = [];
console.log(`prompt-injection scorer on one text (the same text every call), µs per call (node ${process.version}; score: CPU, median of ${REPEATS} batches of ${N}; stages: wall-clock mean, in sequence)`);
console.log("chars   score(cpu)  both(cpu)  normalize  gates  hardRuleHit  windows  windowRules  sumFeatures");
for (const chars of SIZES) {
  const text = clinicalText(chars).text;
  const r: Record<string, number> = {
    chars,
    score: cpuPerCall(() => model.score(text)),
    both: cpuPerCall(() => model.assessWith(dataModel, text, "message")),
    ...stagesInContext(text),
  };
  rows.push(r);
  const col = (v: unknown, w: number) => String(v).padStart(w);
  console.log(
    `${String(chars).padEnd(8)}${col(r["score"], 10)}  ${col(r["both"], 9)}  ${col(r["normalize"], 9)}  ${col(r["gates"], 5)}  ${col(r["hardRuleHit"], 11)}  ${col(r["windows"], 7)}  ${col(r["windowRules"], 11)}  ${col(r["sumFeatures"], 11)}`,
  );
}
console.log(JSON.stringify({ injection: rows, newText: fresh }));
