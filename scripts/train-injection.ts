/**
 * Trains the prompt-injection classifier shipped as guardrails/data/injection-model.json, on the DEV split of the
 * agent-traffic corpus (scripts/build-injection-corpus.ts: hand-written agent instructions, role prompts, questions,
 * approvals, answers and tool results, the earlier clinical agent messages and injections of scripts/data, the
 * deepset/prompt-injections development rows, MTSamples notes, MedQuAD questions, Synthea FHIR resources, and
 * indirect injections planted in notes, FHIR fields, tool results and previous agents' answers). The HOLDOUT split
 * is never read here except by `--holdout`, which only evaluates shipped weights.
 *
 * Model: L2-regularised logistic regression (AdaGrad) over hashed features (src/guardrails/injection/features.ts),
 * scored per sentence window (max). A planted attack trains on the windows that hold its payload (its other windows are
 * the carrier's ordinary text); any other positive document with several windows trains on its highest-scoring window
 * (multiple-instance learning); a negative document trains on all its windows. Documents are weighted so that every
 * kind counts about as much as 150 rows (HMCP_KIND_ROWS), whatever its size.
 *
 * Thresholds per location kind: grouped 5-fold cross-validation on dev (folds by phrasing family and carrier; a
 * training fold never holds a row that shares either with the scored fold), repeated with 6 fold assignments, scores
 * every dev row held out 6 times; on the pooled scores, for the
 * texts that arrive as messages and for those that arrive as results / resources, the threshold is the grid value
 * with the smallest total shortfall against the issue's targets (benign FPR <= 1 %, deepset English benign <= 10 %,
 * a point over costing FP_COST = 4 points of recall; recall >= 0.90 direct, >= 0.80 indirect), and the L2 strength is
 * the one with the smaller shortfall. Attacks composed from components (compose.txt) train the model but are left
 * out of the choice and of the reported figures (their components repeat across folds).
 *
 * Run: npx tsx scripts/train-injection.ts [dataDir]            (train, cross-validate, write the weights)
 *      npx tsx scripts/train-injection.ts --holdout            (held-out figures of the shipped weights)
 * Env (defaults are what the shipped weights used): HMCP_L2 (comma list; 1e-5,3e-6), HMCP_CHARGRAMS (1 = with character
 * 4-grams; 0), HMCP_DATA_TERMS (0 = without data-location terms; 1), HMCP_DOC_TERMS (0 = without document terms; 1),
 * HMCP_SENTENCES (0 = fixed windows of HMCP_WINDOW every HMCP_STEP characters; 1, sentences merged to
 * HMCP_SENT_MIN..HMCP_SENT_MAX = 70..400), HMCP_EPOCHS (20),
 * HMCP_NEGATION (1 = negation scopes in the word features, the model file's `negation`; 0), HMCP_RULE_NEGATION (1 = a
 * feature rule whose matches all follow a negator has its own weight, the model file's `ruleNegation`; 1; 0 with
 * HMCP_DOC_MAX_ADDRESSED=none reproduces round 5), HMCP_DOC_MAX_ADDRESSED (the largest share of a message's windows
 * that address the reader for it to get the document terms, the model file's `docMaxAddressed`; 0.5; none = any text of
 * more than one window), HMCP_ROUND10 (1 = with the read blind sets r5-r12, round 8's role prompts and their hostile
 * mirrors and round 9's peer answers, dev families only; 1; 0 = round 8 H's data, where HMCP_ROUND8=1 and HMCP_ROUND9=1
 * add the two files alone; docs/guardrails-quality.md, "Session 22"), HMCP_EXTRA_GROUP (1 = the rows of those later
 * files weighed as a group of their own per kind; 0), HMCP_MUTE (words left out of the word features: the names of
 * encodings and of decoding; "none"), HMCP_READ_BLIND (the read blind sets round 10 adds: r5,r6,r7,r9,r10,r11,r12; there is no r8 set; r5-r24 for the data model),
 * HMCP_DATA_MODEL (with --holdout: a data model beside HMCP_MODEL_OUT's, as the guardrail's `dataModel`: a result or resource
 * is flagged when either model reaches its threshold; none), HMCP_THRESHOLDS (message,result: fixed thresholds; none), HMCP_DATA_WORDS (1 = the data model: a data-location copy of each
 * word's unigram for results and resources, the model file's `dataWords`, trained with every read blind set r5-r24 unless
 * HMCP_READ_BLIND says otherwise, written to guardrails/data/injection-data-model.json; 0), HMCP_MIN_FEATURES (30), HMCP_POS_WEIGHT (1.3), HMCP_KIND_ROWS (150), HMCP_AVERAGE (1: runs averaged into one model),
 * HMCP_FP_COST (4), HMCP_CV_REPEATS (6), HMCP_FOLD_SALT (none), HMCP_DROP_RULES (none: feature rules left out, for
 * ablations), HMCP_TRAIN_DEBUG (dist | curve | fp | 1: diagnostics on the dev folds), HMCP_MODEL_OUT (where the weights
 * are written; guardrails/data/injection-model.json).
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_BUCKETS, RULES, dataBiasBucket, dataRuleBucket, docBiasBucket, docRuleBucket, forEachFeature, hardRuleHit, wordHash, isDocument, negRuleBucket, negatedRules, normalizeForInjection, ruleBucket, sentenceWindows, windowRules, windows } from "../src/guardrails/injection/features.js";
import { loadInjectionModel } from "../src/guardrails/injection/model.js";
import { ATTACK_KINDS, BENIGN_KINDS, buildInjectionCorpus, type CorpusRow } from "./build-injection-corpus.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const holdoutMode = args[0] === "--holdout";
const dataDir = path.resolve(holdoutMode ? path.join(repo, "../shared/data") : (args[0] ?? path.join(repo, "../shared/data")));
const B = DEFAULT_BUCKETS;
const MIN_FEATURES = Number(process.env["HMCP_MIN_FEATURES"] ?? 30);
const CHAR_GRAMS = (process.env["HMCP_CHARGRAMS"] ?? "0") === "1";
/** Negation scopes in the word features (the model file's `negation`). */
const NEGATION = (process.env["HMCP_NEGATION"] ?? "0") === "1";
/** Negated feature rules weigh on their own (the model file's `ruleNegation`). */
const RULE_NEGATION = (process.env["HMCP_RULE_NEGATION"] ?? "1") === "1";
const DATA_WORDS = (process.env["HMCP_DATA_WORDS"] ?? "0") === "1";
const WINDOW = Number(process.env["HMCP_WINDOW"] ?? 600);
const STEP = Number(process.env["HMCP_STEP"] ?? WINDOW);
const SENTENCES = (process.env["HMCP_SENTENCES"] ?? "1") === "1";
const SENT_MIN = Number(process.env["HMCP_SENT_MIN"] ?? 70);
const SENT_MAX = Number(process.env["HMCP_SENT_MAX"] ?? 400);
const POS_WEIGHT = Number(process.env["HMCP_POS_WEIGHT"] ?? 1.3);
/** Every kind weighs about as much as this many rows (no more than 1 per row). */
const KIND_ROWS = Number(process.env["HMCP_KIND_ROWS"] ?? 150);
const EXTRA_GROUP = (process.env["HMCP_EXTRA_GROUP"] ?? "0") === "1";
/**
 * Thresholds for messages and for results / resources fixed instead of chosen by the shortfall rule:
 * HMCP_THRESHOLDS=message,result (e.g. 0.55,0.5); "none" to choose them. The rule's choice moved between 0.45 and 0.55
 * for messages with each blind set added (docs/guardrails-quality.md, "Session 22").
 */
const FIXED_THRESHOLDS = ((v) => {
  if (v === "none") return undefined;
  const [message, result] = v.split(",").map(Number);
  if (!(message! > 0 && message! < 1 && result! > 0 && result! < 1)) throw new Error(`HMCP_THRESHOLDS: two numbers in (0, 1), "message,result", or none; got ${v}`);
  return { message: message!, result: result! };
})(process.env["HMCP_THRESHOLDS"] ?? "none");
/**
 * Words whose word features are left out of training (their weights stay zero): the names of encodings and of
 * decoding. The decoded views (decode.ts) score what an encoded payload says; that a text names base64 or asks to
 * decode something is not evidence by itself, and attacks that hide a payload taught the model otherwise ("Decode
 * this base64 attachment and summarise it" blocked). HMCP_MUTE: comma list, "none" for no word.
 */
const MUTE_WORDS = (process.env["HMCP_MUTE"] ?? "base64,b64,hex,hexadecimal,rot13,decode,decoded,decodes,decoding,encode,encoded,encodes,encoding").split(",").filter((w) => w && w !== "none");
const MUTE = new Set(MUTE_WORDS.map(wordHash));
const DATA_TERMS = (process.env["HMCP_DATA_TERMS"] ?? "1") === "1";
const EPOCHS = Number(process.env["HMCP_EPOCHS"] ?? 20);
/** Runs averaged into one model (different shuffles). */
const AVERAGE = Number(process.env["HMCP_AVERAGE"] ?? 1);
const DOC_TERMS = (process.env["HMCP_DOC_TERMS"] ?? "1") === "1";
/** The largest share of windows addressing the reader for a text to be a document (the model's `docMaxAddressed`; none). */
const DOC_MAX_ADDRESSED = (process.env["HMCP_DOC_MAX_ADDRESSED"] ?? "0.5") === "none" ? undefined : Number(process.env["HMCP_DOC_MAX_ADDRESSED"] ?? 0.5);
const MODEL_OUT = process.env["HMCP_MODEL_OUT"] ?? path.join(repo, DATA_WORDS ? "guardrails/data/injection-data-model.json" : "guardrails/data/injection-model.json");
/** Feature rules left out of training (comma list of RULES names; their weights stay 0): ablations by CV. */
const DROP_RULES = new Set((process.env["HMCP_DROP_RULES"] ?? "").split(",").filter(Boolean));
// (a misspelt name would silently drop nothing and the ablation would measure the full model)
for (const name of DROP_RULES) if (!RULES.some(([n]) => n === name)) throw new Error(`HMCP_DROP_RULES: no feature rule named "${name}" (rules: ${RULES.map(([n]) => n).join(", ")})`);
const KEEP_MASK = RULES.reduce((m, [name], r) => (DROP_RULES.has(name) ? m : m | (1 << r)), 0);

/** Which arrival group a row's threshold comes from. */
const group = (r: CorpusRow): "message" | "result" => (r.arrival === "result" || r.arrival === "resource" ? "result" : "message");

interface Doc {
  row: CorpusRow;
  hard: boolean;
  /** Per CV repeat: the fold of the row's family; `folds`: of every group key it has (family, carrier). */
  fold: number[];
  folds: number[][];
  wt: number;
  wins: Array<{ idx: Int32Array; val: Float32Array; n: number }>;
}

/** Windows of `text`; with `payload`, only the windows that hold part of it (a planted attack's other windows are its carrier's text). */
function vectorize(text: string, payload: string | undefined, data: boolean): Doc["wins"] {
  const t = normalizeForInjection(text);
  const out: Doc["wins"] = [];
  let span: [number, number] | undefined;
  if (payload !== undefined) {
    const p = normalizeForInjection(payload);
    let at = t.indexOf(p);
    let len = p.length;
    if (at < 0) {
      const escaped = JSON.stringify(p).slice(1, -1);
      at = t.indexOf(escaped);
      len = escaped.length;
    }
    if (at >= 0) span = [at, at + len];
  }
  const wins = SENTENCES ? sentenceWindows(t, SENT_MIN, SENT_MAX) : windows(t, WINDOW, STEP);
  const masks = windowRules(t, wins);
  // (data the agent reads is a document whatever it says: the reader check is for messages)
  const doc = isDocument(masks, data ? undefined : DOC_MAX_ADDRESSED);
  for (let w = 0; w < wins.length; w++) {
    const [a, b] = wins[w]!;
    if (span && (b <= span[0] || a >= span[1])) continue;
    const counts = new Map<number, number>();
    const n = forEachFeature(t, a, b, 0, B, (k) => counts.set(k, (counts.get(k) ?? 0) + 1), CHAR_GRAMS, NEGATION, MUTE.size ? MUTE : undefined, DATA_WORDS && data);
    if (n === 0) continue;
    const norm = 1 / Math.sqrt(Math.max(n, MIN_FEATURES));
    for (const [k, c] of counts) counts.set(k, c * norm);
    // feature rules: weight 1 each, outside the length normalisation (the model's `rulesRaw`)
    const rules = masks[w]! & KEEP_MASK;
    // (a rule whose every match in the window follows a negator: its own weight instead, the model's `ruleNegation`)
    const neg = RULE_NEGATION && rules !== 0 ? negatedRules(t, a, b, rules) : 0;
    for (let r = 0; r < RULES.length; r++) {
      if ((rules & (1 << r)) === 0) continue;
      const k = neg & (1 << r) ? negRuleBucket(r, B) : ruleBucket(r, B);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    // document terms (the model's `docTerms`): a bias and each rule again, for texts of more than one window
    if (DOC_TERMS && doc) {
      counts.set(docBiasBucket(B), (counts.get(docBiasBucket(B)) ?? 0) + 1);
      for (let r = 0; r < RULES.length; r++) if (rules & (1 << r)) counts.set(docRuleBucket(r, B), (counts.get(docRuleBucket(r, B)) ?? 0) + 1);
    }
    // data-location terms (the model's `dataTerms`): a bias and each rule again, for results and resources
    if (data) {
      counts.set(dataBiasBucket(B), (counts.get(dataBiasBucket(B)) ?? 0) + 1);
      for (let r = 0; r < RULES.length; r++) if (rules & (1 << r)) counts.set(dataRuleBucket(r, B), (counts.get(dataRuleBucket(r, B)) ?? 0) + 1);
    }
    const idx = new Int32Array(counts.size);
    const val = new Float32Array(counts.size);
    let i = 0;
    for (const [k, v] of counts) {
      idx[i] = k;
      val[i] = v;
      i++;
    }
    out.push({ idx, val, n });
  }
  return out;
}

/** Salt of the fold assignment (HMCP_FOLD_SALT; default none, the folds the shipped weights were chosen with): repeated CV. */
const FOLD_SALT = process.env["HMCP_FOLD_SALT"] ?? "";
/**
 * Repeats of the grouped 5-fold CV, each with its own fold assignment (repeat 0: salt FOLD_SALT, repeat k: FOLD_SALT + k):
 * every dev row is scored once per repeat and thresholds are chosen on the pooled scores (one fold assignment moves
 * the chosen thresholds by 0.1-0.15 and the shortfall by ~0.05; HMCP_CV_REPEATS, default 6 since round 4: with 3, a
 * different salt moved the round-4 shortfall by up to 0.05 and the results' threshold by 0.05).
 */
const CV_REPEATS = Number(process.env["HMCP_CV_REPEATS"] ?? 6);
const foldSalt = (k: number): string => (k === 0 ? FOLD_SALT : `${FOLD_SALT}${k}`);
const fold = (key: string, k = 0): number => createHash("sha256").update("fold:" + foldSalt(k) + key).digest().readUInt32BE(0) % 5;

function dot(w: Float32Array, v: Doc["wins"][number]): number {
  let z = 0;
  for (let k = 0; k < v.idx.length; k++) z += w[v.idx[k]!]! * v.val[k]!;
  return z;
}

/**
 * The model: the average of AVERAGE runs of {@link trainOnce} with different shuffles (one linear model, so the
 * run-time cost is unchanged; averaging lowers the variance of the weights, which depend on the order of the rows).
 */
function train(set: Doc[], l2: number): { w: Float32Array; bias: number } {
  const w = new Float32Array(B);
  let bias = 0;
  for (let k = 0; k < AVERAGE; k++) {
    const m = trainOnce(set, l2, 12345 + 7919 * k);
    for (let b = 0; b < B; b++) w[b]! += m.w[b]! / AVERAGE;
    bias += m.bias / AVERAGE;
  }
  return { w, bias };
}

function trainOnce(set: Doc[], l2: number, seed0: number): { w: Float32Array; bias: number } {
  const w = new Float32Array(B);
  const g2 = new Float32Array(B).fill(1e-8);
  let bias = 0;
  let gb2 = 1e-8;
  const lr = 0.5;
  let seed = seed0;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const order = set.map((_, i) => i);
  for (let ep = 0; ep < EPOCHS; ep++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (const di of order) {
      const d = set[di]!;
      const y = d.row.label;
      let wins = d.wins;
      if (y === 1 && wins.length > 1) {
        // multiple-instance: the window that looks most like an injection carries the label
        let best = wins[0]!;
        let bz = -Infinity;
        for (const v of wins) {
          const z = dot(w, v);
          if (z > bz) {
            bz = z;
            best = v;
          }
        }
        wins = [best];
      }
      for (const v of wins) {
        const p = 1 / (1 + Math.exp(-(bias + dot(w, v))));
        const g = (p - y) * d.wt;
        for (let k = 0; k < v.idx.length; k++) {
          const b = v.idx[k]!;
          const gk = g * v.val[k]! + l2 * w[b]!;
          g2[b]! += gk * gk;
          w[b]! -= (lr * gk) / Math.sqrt(g2[b]!);
        }
        gb2 += g * g;
        bias -= (lr * g) / Math.sqrt(gb2);
      }
    }
  }
  return { w, bias };
}

function score(m: { w: Float32Array; bias: number }, d: Doc): number {
  if (d.hard) return 1;
  let best = 0;
  for (const v of d.wins) best = Math.max(best, 1 / (1 + Math.exp(-(m.bias + dot(m.w, v)))));
  return best;
}

const h0 = (k: string): string => k.split("-").map((x) => x.slice(0, 3)).join("");
const GRID = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9];

interface KindFigure {
  n: number;
  rate: number;
}

/** Per kind: held-out FPR (benign) or recall (attacks) at the group's threshold. */
function figures(held: Array<{ d: Doc; s: number }>, th: { message: number; result: number }): Record<string, KindFigure> {
  const out: Record<string, KindFigure> = {};
  for (const kind of [...BENIGN_KINDS, ...ATTACK_KINDS]) {
    // composed attacks share components across folds: reported figures use the written templates only; a later round's
    // rows (`source`) are reported apart, so that a kind's figure compares with the round before on the same rows
    const hs = held.filter((h) => h.d.row.kind === kind && !h.d.row.composed && !h.d.row.source);
    if (hs.length === 0) continue;
    const flagged = hs.filter((h) => h.s >= th[group(h.d.row)]).length;
    out[kind] = { n: hs.length / CV_REPEATS, rate: Math.round((flagged / hs.length) * 1000) / 1000 };
  }
  // the direct attacks by source: deepset/prompt-injections (the target) and this project's agent injections
  for (const [name, prefix] of [["direct (deepset)", "deepset:"], ["direct (agent)", "agent-injection:"]] as const) {
    const hs = held.filter((h) => h.d.row.kind === "direct" && h.d.row.family.startsWith(prefix) && !h.d.row.source);
    const flagged = hs.filter((h) => h.s >= th.message).length;
    if (hs.length) out[name] = { n: hs.length / CV_REPEATS, rate: Math.round((flagged / hs.length) * 1000) / 1000 };
  }
  for (const source of new Set(held.map((h) => h.d.row.source).filter((x) => x !== undefined))) {
    for (const kind of [...BENIGN_KINDS, ...ATTACK_KINDS]) {
      const hs = held.filter((h) => h.d.row.kind === kind && h.d.row.source === source);
      const flagged = hs.filter((h) => h.s >= th[group(h.d.row)]).length;
      if (hs.length) out[`${kind} (${source})`] = { n: hs.length / CV_REPEATS, rate: Math.round((flagged / hs.length) * 1000) / 1000 };
    }
  }
  return out;
}

/** How much a point of false-positive rate over its bound costs against a point of recall under its target. */
const FP_COST = Number(process.env["HMCP_FP_COST"] ?? 4);

/** The targets: recall per attack kind (direct: deepset; indirect: planted in data). */
const recallTarget = (kind: string): number => (kind === "direct" ? 0.9 : 0.8);

/**
 * The grid threshold for an arrival group with the smallest total shortfall against the targets on the held-out
 * (cross-validated) scores: the sum over the group's benign kinds of FP_COST × max(0, FPR - bound) (bound 1 %, deepset
 * English benign 10 %; FP_COST 4: blocking ordinary traffic is what the guardrail must not do) plus the sum over its attack kinds of max(0, target - recall) (composed attacks left out: they share
 * components across folds). Ties go to the higher threshold. Returns it with the mean recall over the group's attack kinds.
 */
function chooseThreshold(held: Array<{ d: Doc; s: number }>, g: "message" | "result", fixed?: number): { threshold: number; recall: number; shortfall: number } {
  const hs = held.filter((h) => group(h.d.row) === g && !h.d.row.composed);
  // (a fixed threshold, HMCP_THRESHOLDS: its own shortfall and recall, so that the log line describes it)
  if (fixed !== undefined) return { threshold: fixed, ...shortfallAt(hs, fixed) };
  let best: { threshold: number; recall: number; shortfall: number } | undefined;
  for (const th of GRID) {
    const at = shortfallAt(hs, th);
    if (!best || at.shortfall <= best.shortfall + 1e-9) best = { threshold: th, ...at };
  }
  return best!;
}

/** {@link chooseThreshold}'s shortfall and mean recall over the attack kinds of `hs` at threshold `th`. */
function shortfallAt(hs: Array<{ d: Doc; s: number }>, th: number): { recall: number; shortfall: number } {
  let shortfall = 0;
  for (const kind of BENIGN_KINDS) {
    const b = hs.filter((h) => h.d.row.kind === kind);
    if (b.length) shortfall += FP_COST * Math.max(0, b.filter((h) => h.s >= th).length / b.length - (kind === "deepset-benign-en" ? 0.1 : 0.01));
  }
  const recalls: number[] = [];
  for (const kind of ATTACK_KINDS) {
    const a = hs.filter((h) => h.d.row.kind === kind);
    if (!a.length) continue;
    const recall = a.filter((h) => h.s >= th).length / a.length;
    recalls.push(recall);
    shortfall += Math.max(0, recallTarget(kind) - recall);
  }
  return { recall: recalls.reduce((x, y) => x + y, 0) / Math.max(1, recalls.length), shortfall };
}

/**
 * The group a row's weight is shared in: its kind, or with HMCP_EXTRA_GROUP=1 its kind apart for the rows of later
 * rounds' files (`source`), so that they add to a kind's weight instead of diluting its original rows'.
 */
function weightGroup(row: CorpusRow): string {
  return EXTRA_GROUP && row.source ? `${row.kind}|extra` : row.kind;
}

function trainAndWrite(): void {
  const t0 = Date.now();
  const rows = buildInjectionCorpus(dataDir).filter((r) => r.split === "dev");
  const perKind = new Map<string, number>();
  for (const r of rows) perKind.set(weightGroup(r), (perKind.get(weightGroup(r)) ?? 0) + 1);
  const docs: Doc[] = rows.map((row) => ({
    row,
    hard: hardRuleHit(normalizeForInjection(row.text)),
    fold: Array.from({ length: CV_REPEATS }, (_, k) => fold(row.family, k)),
    folds: Array.from({ length: CV_REPEATS }, (_, k) => [row.family, ...(row.carrier ? [row.carrier] : [])].map((key) => fold(key, k))),
    // every kind weighs about as much as 150 rows (no more than 1 per row); attacks a little more
    wt: Math.min(1, KIND_ROWS / perKind.get(weightGroup(row))!) * (row.label ? POS_WEIGHT : 1),
    wins: vectorize(row.text, row.payload, DATA_TERMS && group(row) === "result"),
  }));
  console.log(`dev docs: ${docs.length} (vectorised in ${Date.now() - t0} ms; char 4-grams ${CHAR_GRAMS ? "on" : "off"})`);

  const l2s = (process.env["HMCP_L2"] ?? "1e-5,3e-6").split(",").map(Number);
  let best: { l2: number; message: number; result: number; recall: number; shortfall: number; figures: Record<string, KindFigure> } | undefined;
  for (const l2 of l2s) {
    const held: Array<{ d: Doc; s: number }> = [];
    for (let k = 0; k < CV_REPEATS; k++) {
      for (let f = 0; f < 5; f++) {
        // train on rows that share no family and no carrier with fold f (of repeat k)
        const m = train(
          docs.filter((d) => !d.folds[k]!.includes(f)),
          l2,
        );
        for (const d of docs.filter((d) => d.fold[k] === f)) held.push({ d, s: score(m, d) });
      }
    }
    // (fixed thresholds: the figures, the weights file and the L2 choice use them and their shortfall)
    const msg = chooseThreshold(held, "message", FIXED_THRESHOLDS?.message);
    const res = chooseThreshold(held, "result", FIXED_THRESHOLDS?.result);
    const fig = figures(held, { message: msg.threshold, result: res.threshold });
    const recall = (msg.recall + res.recall) / 2;
    console.log(
      `l2=${l2} thresholds message=${msg.threshold} result=${res.threshold} mean recall=${recall.toFixed(3)} shortfall=${(msg.shortfall + res.shortfall).toFixed(3)} (message ${msg.shortfall.toFixed(3)}, result ${res.shortfall.toFixed(3)}; ${Date.now() - t0} ms)`,
    );
    console.table(fig);
    if (process.env["HMCP_TRAIN_DEBUG"] === "dist") {
      for (const kind of [...BENIGN_KINDS, ...ATTACK_KINDS]) {
        const ss = held.filter((h) => h.d.row.kind === kind).map((h) => h.s).sort((a, b) => a - b);
        const q = (p: number) => ss[Math.min(ss.length - 1, Math.floor(p * ss.length))]!.toFixed(3);
        console.log(kind.padEnd(24), "q10", q(0.1), "q25", q(0.25), "q50", q(0.5), "q75", q(0.75), "q90", q(0.9), "q99", q(0.99), "max", q(1));
      }
    }
    if (process.env["HMCP_TRAIN_DEBUG"] === "curve") {
      for (const th of GRID) {
        const cells = [...BENIGN_KINDS, ...ATTACK_KINDS].map((k) => {
          const hs = held.filter((h) => h.d.row.kind === k);
          const f = hs.filter((h) => h.s >= th).length;
          return h0(k) + "=" + (ATTACK_KINDS.includes(k as never) ? (f / hs.length).toFixed(2) : String(f));
        });
        const ds = held.filter((h) => h.d.row.kind === "direct" && h.d.row.family.startsWith("deepset:"));
        console.log(th, "deepset=" + (ds.filter((h) => h.s >= th).length / ds.length).toFixed(3), cells.join(" "));
      }
    }
    if (process.env["HMCP_TRAIN_DEBUG"] === "fp") {
      for (const h of held.filter((x) => x.d.row.label === 0 && x.s >= 0.3).sort((a, b) => b.s - a.s)) console.log("FP", h.d.row.kind, h.s.toFixed(2), h.d.hard ? "hard" : "", JSON.stringify(h.d.row.text.slice(0, 200)));
    } else if (process.env["HMCP_TRAIN_DEBUG"]) {
      for (const h of held) {
        const th = group(h.d.row) === "message" ? msg.threshold : res.threshold;
        if ((h.s >= th) !== (h.d.row.label === 1)) console.log(h.d.row.label ? "FN" : "FP", h.d.row.kind, h.s.toFixed(2), JSON.stringify((h.d.row.payload ?? h.d.row.text).slice(0, 200)));
      }
    }
    const shortfall = msg.shortfall + res.shortfall;
    if (!best || shortfall < best.shortfall - 1e-9) best = { l2, message: msg.threshold, result: res.threshold, recall, shortfall, figures: fig };
  }
  if (!best) throw new Error("no L2 strength given");
  console.log("chosen", { l2: best.l2, message: best.message, result: best.result });

  const final = train(docs, best.l2);
  const index: number[] = [];
  const weight: number[] = [];
  for (let b = 0; b < B; b++) {
    const v = final.w[b]!;
    if (Math.abs(v) >= 5e-3) {
      index.push(b);
      weight.push(Math.round(v * 1e4) / 1e4);
    }
  }
  const out = {
    version: 1,
    buckets: B,
    bias: Math.round(final.bias * 1e4) / 1e4,
    threshold: best.message,
    thresholds: { message: best.message, systemPrompt: best.message, elicitation: best.message, toolArguments: best.message, other: best.message, result: best.result, resource: best.result },
    minFeatures: MIN_FEATURES,
    charGrams: CHAR_GRAMS,
    negation: NEGATION,
    ruleNegation: RULE_NEGATION,
    rulesRaw: true,
    dataTerms: DATA_TERMS,
    ...(DATA_WORDS ? { dataWords: true } : {}),
    docTerms: DOC_TERMS,
    ...(DOC_MAX_ADDRESSED !== undefined ? { docMaxAddressed: DOC_MAX_ADDRESSED } : {}),
    windows: SENTENCES ? { kind: "sentences", min: SENT_MIN, max: SENT_MAX } : { kind: "fixed", size: WINDOW, step: STEP },
    index,
    weight,
    meta: {
      trainedBy: "scripts/train-injection.ts",
      data: [
        "dev split of the corpus of scripts/build-injection-corpus.ts: scripts/data (this project), prompt-injections/dev.jsonl (Apache-2.0), mtsamples/dev.jsonl (CC0), medquad/dev.jsonl (CC BY 4.0), synthea/bundles (Apache-2.0)",
      ],
      l2: best.l2,
      rules: RULES.map(([n]) => n),
      groupedCrossValidated: best.figures,
    },
  };
  writeFileSync(MODEL_OUT, JSON.stringify(out) + "\n");
  console.log(`wrote ${index.length} weights in ${Date.now() - t0} ms`);
}

/**
 * Held-out figures per kind of the shipped weights, each text scored with the threshold of where it arrives (the
 * split's rows only; nothing is trained or chosen here). HMCP_TRAIN_DEBUG=1 lists the misses.
 */
function evaluateHoldout(): void {
  const rows = buildInjectionCorpus(dataDir).filter((r) => r.split === "holdout");
  const model = loadInjectionModel(MODEL_OUT);
  // (HMCP_DATA_MODEL: a data model, as the guardrail's `dataModel`: a result or resource is flagged when either model
  // reaches its own threshold)
  const dataModel = process.env["HMCP_DATA_MODEL"] ? loadInjectionModel(path.resolve(process.env["HMCP_DATA_MODEL"])) : undefined;
  const table: Record<string, { n: number; flagged: number; rate: number }> = {};
  const misses: string[] = [];
  for (const r of rows) {
    const key = r.kind === "direct" ? (r.family.startsWith("deepset:") ? "direct (deepset)" : "direct (agent)") : r.composed ? `${r.kind} (composed)` : r.kind;
    const both = dataModel !== undefined && (r.arrival === "result" || r.arrival === "resource");
    const [m, d] = both ? model.assessWith(dataModel, r.text, r.arrival) : [model.assess(r.text, r.arrival)];
    // (the model's assessment, or the data model's when only it flags the row)
    const a = d !== undefined && m.score < m.threshold && d.score >= d.threshold ? d : m;
    const hit = a.score >= a.threshold;
    const e = (table[key] ??= { n: 0, flagged: 0, rate: 0 });
    e.n++;
    if (hit) e.flagged++;
    e.rate = Math.round((e.flagged / e.n) * 1000) / 1000;
    if (hit !== (r.label === 1)) misses.push(`${r.label ? "FN" : "FP"} ${key} ${a.score.toFixed(2)}/${a.threshold} ${a.class} ${JSON.stringify((r.payload ?? r.text).slice(0, 160))}`);
  }
  console.log("held-out split: share flagged per kind (benign kinds: false-positive rate; attack kinds: recall)");
  console.table(table);
  if (process.env["HMCP_TRAIN_DEBUG"]) for (const m of misses) console.log(m);
}

if (holdoutMode) {
  evaluateHoldout();
} else {
  trainAndWrite();
}
