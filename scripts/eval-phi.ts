/**
 * Evaluation protocol of the PHI detector (issue #19 part 3): fixed before any tuning, so that figures on rows nobody
 * tuned on can be told apart from figures on the rows the rules were written against.
 *
 * Splits of each PHI development set in ../shared/data (test data only; nothing of it is copied into the repository):
 * - phi-deid-physionet: BY PATIENT. A note is in the held-out split iff
 *   `parseInt(sha256("holdout:" + patient_id).hex.slice(0, 8), 16) % 100 < 30`; the other patients are the tuning split.
 * - pii-presidio-synth: BY TEMPLATE (rows of one template share wording): the same rule on `template_id`.
 * - Cross-validation folds of the tuning split (for any learned or data-derived component), by the same groups:
 *   fold = `parseInt(sha256("fold:" + group).hex.slice(0, 8), 16) % 5`.
 *
 * Scoring is that of `hmcp guardrails eval` (src/cli/guardrails-command.ts): tokens are runs of letters/digits; a
 * token is gold when it overlaps a span of a type that is not ignored, predicted when it overlaps a detected entity;
 * tokens of ignored types (PhysioNet DateYear; Presidio GPE, ORGANIZATION, TITLE, AGE, NRP) count neither way.
 * Per type: recall per gold span type, precision per detected entity type.
 *
 * Usage:
 *   npx tsx scripts/eval-phi.ts [--split tune|holdout|all] [--set physionet|presidio] [--errors N] [--json]
 * `--split holdout` is the final measurement: run it a few times at most (the report says how many).
 * `--cv` adds per-fold figures of the tuning split (5 folds by patient / template).
 * `--lexicon FILE` evaluates another lexicon (scripts/build-phi-lexicon.ts variants).
 * `--errors N` prints up to N missed / false tokens with context (tuning split only: it refuses on holdout).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createPhiDetector, type PhiEntity } from "../src/guardrails/phi/detector.js";

export const DATA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../shared/data");
export const IGNORED = new Set(["DateYear", "GPE", "ORGANIZATION", "TITLE", "AGE", "NRP"]);

export interface PhiRow {
  id: string;
  /** Split group: patient (PhysioNet) or template (Presidio). */
  group: string;
  text: string;
  spans: Array<{ start: number; end: number; type: string }>;
}

export type PhiSet = "physionet" | "presidio";

const bucket = (key: string, mod: number): number => parseInt(createHash("sha256").update(key).digest("hex").slice(0, 8), 16) % mod;

/** True when the row's group is in the held-out split. */
export const isHoldout = (group: string): boolean => bucket("holdout:" + group, 100) < 30;
/** Cross-validation fold (0-4) of a tuning-split group. */
export const foldOf = (group: string): number => bucket("fold:" + group, 5);

/** Reads a PHI development set. */
export function loadPhiSet(set: PhiSet, dataDir = DATA_DIR): PhiRow[] {
  const file = path.join(dataDir, set === "physionet" ? "phi-deid-physionet" : "pii-presidio-synth", "dev.jsonl");
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => {
      const o = JSON.parse(l) as Record<string, unknown>;
      const spans = (o["phi"] ?? o["spans"]) as PhiRow["spans"];
      const group = set === "physionet" ? String(o["patient_id"]) : String(o["template_id"]);
      return { id: String(o["id"]), group, text: String(o["text"]), spans };
    });
}

export interface Counts {
  tp: number;
  fp: number;
  fn: number;
}

export interface Score {
  rows: number;
  tp: number;
  fp: number;
  fn: number;
  recall: number;
  precision: number;
  /** Recall per gold span type: [gold tokens, found]. */
  recallByType: Record<string, { gold: number; found: number; recall: number }>;
  /** Precision per detected type: [predicted tokens, correct]. */
  precisionByType: Record<string, { predicted: number; correct: number; precision: number }>;
}

export interface TokenOutcome {
  row: PhiRow;
  start: number;
  end: number;
  gold: string | undefined;
  pred: string | undefined;
}

const r4 = (x: number) => Math.round(x * 10000) / 10000;

/** Token scoring of `hmcp guardrails eval`, with per-type counts; `each` sees every non-ignored token. */
export function scoreRows(rows: PhiRow[], detect: (text: string) => PhiEntity[], each?: (o: TokenOutcome) => void): Score {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  const rec: Record<string, { gold: number; found: number; recall: number }> = {};
  const prec: Record<string, { predicted: number; correct: number; precision: number }> = {};
  for (const row of rows) {
    const ents = detect(row.text);
    const gold = row.spans.filter((s) => !IGNORED.has(s.type));
    const ign = row.spans.filter((s) => IGNORED.has(s.type));
    for (const m of row.text.matchAll(/[\p{L}\p{N}]+/gu)) {
      const s = m.index;
      const e = s + m[0].length;
      const over = (x: { start: number; end: number }) => x.start < e && x.end > s;
      const g = gold.find(over);
      if (!g && ign.some(over)) continue;
      const p = ents.find(over);
      if (g) {
        const r = (rec[g.type] ??= { gold: 0, found: 0, recall: 0 });
        r.gold++;
        if (p) r.found++;
      }
      if (p) {
        const q = (prec[p.type] ??= { predicted: 0, correct: 0, precision: 0 });
        q.predicted++;
        if (g) q.correct++;
      }
      if (g && p) tp++;
      else if (g) fn++;
      else if (p) fp++;
      if (each && (g || p)) each({ row, start: s, end: e, gold: g?.type, pred: p?.type });
    }
  }
  for (const r of Object.values(rec)) r.recall = r4(r.gold ? r.found / r.gold : 0);
  for (const q of Object.values(prec)) q.precision = r4(q.predicted ? q.correct / q.predicted : 0);
  return { rows: rows.length, tp, fp, fn, recall: r4(tp / Math.max(1, tp + fn)), precision: r4(tp / Math.max(1, tp + fp)), recallByType: rec, precisionByType: prec };
}

function main(): void {
  const args = process.argv.slice(2);
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const split = opt("--split") ?? "tune";
  const sets = (opt("--set") ? [opt("--set")] : ["physionet", "presidio"]) as PhiSet[];
  const errors = Number(opt("--errors") ?? 0);
  if (errors > 0 && split !== "tune") throw new Error("--errors is for the tuning split only");
  const lexiconFile = opt("--lexicon");
  const detector = createPhiDetector(lexiconFile ? { lexiconFile } : {});
  const out: Record<string, Score> = {};
  for (const set of sets) {
    const all = loadPhiSet(set);
    const rows = split === "all" ? all : all.filter((r) => isHoldout(r.group) === (split === "holdout"));
    const shown: string[] = [];
    const score = scoreRows(rows, (t) => detector.detect(t), (o) => {
      if (shown.length >= errors || (o.gold && o.pred)) return;
      const t = o.row.text;
      const ctx = `${t.slice(Math.max(0, o.start - 40), o.start)}[[${t.slice(o.start, o.end)}]]${t.slice(o.end, o.end + 40)}`.replace(/\s+/g, " ");
      shown.push(`${o.gold ? "MISS " + o.gold : "FP   " + o.pred}\t${o.row.id}\t${ctx}`);
    });
    out[set] = score;
    if (!args.includes("--json")) {
      console.log(`${set} (${split}): ${score.rows} rows  recall ${score.recall}  precision ${score.precision}  (tp ${score.tp} fp ${score.fp} fn ${score.fn})`);
      for (const [k, v] of Object.entries(score.recallByType).sort((a, b) => b[1].gold - a[1].gold)) console.log(`  recall    ${k.padEnd(18)} ${v.found}/${v.gold}  ${v.recall}`);
      for (const [k, v] of Object.entries(score.precisionByType).sort((a, b) => b[1].predicted - a[1].predicted)) console.log(`  precision ${k.padEnd(18)} ${v.correct}/${v.predicted}  ${v.precision}`);
      for (const s of shown) console.log(s);
    }
  }
  if (args.includes("--cv")) {
    // per fold of the tuning split (the figures a data-derived component trained on the other four folds would be
    // scored on); the detector ships no component learned from these rows, so this shows the spread between groups
    for (const set of sets) {
      const rows = loadPhiSet(set).filter((r) => !isHoldout(r.group));
      const folds = [0, 1, 2, 3, 4].map((f) => scoreRows(rows.filter((r) => foldOf(r.group) === f), (t) => detector.detect(t)));
      const mean = (k: "recall" | "precision") => r4(folds.reduce((a, f) => a + f[k], 0) / folds.length);
      const sd = (k: "recall" | "precision") => r4(Math.sqrt(folds.reduce((a, f) => a + (f[k] - mean(k)) ** 2, 0) / (folds.length - 1)));
      console.log(`${set} 5 folds of the tuning split: recall ${folds.map((f) => f.recall).join(" ")} (mean ${mean("recall")}, sd ${sd("recall")}); precision ${folds.map((f) => f.precision).join(" ")} (mean ${mean("precision")}, sd ${sd("precision")})`);
    }
  }
  if (args.includes("--json")) console.log(JSON.stringify(out, null, 2));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
