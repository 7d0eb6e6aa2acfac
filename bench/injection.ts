/**
 * Prompt-injection scorer timing (not a test), on benign clinical text (MTSamples, CC0) cut to each size:
 * - `score`: CPU µs per call of the whole `InjectionModel.score` (user + system CPU time over a batch, steadier than
 *   wall-clock on a shared machine; the median of `--repeats` batches);
 * - `both`: CPU µs per call of `InjectionModel.assessWith` with the shipped data model, as `guardrails/default.yaml`
 *   scores every message, result and resource (both models in one pass; session 24);
 * - the stages of `score` (normalise, keyword gates, hard rules, windows, feature rules per window, feature sums) run one
 *   after another as `score` runs them, wall-clock µs per call (mean over the batches): a stage measured alone in a
 *   loop keeps its code and data in cache and looks cheaper than it is inside `score`.
 *
 * Usage: `npx tsx bench/injection.ts [--chars 1024,4096] [--n 2000] [--repeats 7]`
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { hardRuleHit, normalizeForInjection, ruleGates, sentenceWindows, sumFeatures, windowRules, windows } from "../src/guardrails/injection/features.js";
import { loadInjectionModel, type InjectionModelFile } from "../src/guardrails/injection/model.js";
import { clinicalText, REPO_ROOT } from "./lib/fixtures.js";

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

const rows: Array<Record<string, unknown>> = [];
console.log(`prompt-injection scorer, µs per call (node ${process.version}; score: CPU, median of ${REPEATS} batches of ${N}; stages: wall-clock mean, in sequence)`);
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
console.log(JSON.stringify({ injection: rows }));
