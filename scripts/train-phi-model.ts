/**
 * Trains and cross-validates the experimental PHI token re-scorer (scripts/phi-token-model.ts) on the TUNING split of
 * the PHI development sets (scripts/eval-phi.ts: `isHoldout` / `foldOf`; held-out rows are filtered out on load and
 * never scored, printed or trained on).
 *
 * Model: softmax {none, NAME, LOCATION, DATE, ID} over hashed token features, AdaGrad with L2, a fixed seed
 * (deterministic). Both sets train one model.
 * Protocol: 5-fold CV grouped by patient (PhysioNet) / template (Presidio): each outer fold is scored by a model trained on
 * the other four, with thresholds (tDrop, tAdd) chosen on out-of-fold probabilities of an inner 4-fold CV of those four
 * folds only (HMCP_PHI_OBJECTIVE: by default the pair with the largest sum of recall gains over the rules on both sets
 * whose precision on each set is not below the rules', else the rules alone). Scored fold figures use eval-phi's
 * `scoreRows`.
 *
 * Run: npx tsx scripts/train-phi-model.ts [--variant all|ctx|none] [--cv] [--write FILE] [--time]
 *   --variant: feature set (all = own word + context words; ctx = context words only; none = no word identities)
 *   --cv: the grouped CV report (rules alone vs rules + model, per fold and pooled, per type)
 *   --write: trains on the whole tuning split (thresholds from a 5-fold CV of it) and writes the model JSON
 *   --time: feature extraction + scoring time per KB over the tuning notes
 *   --curve [--show]: out-of-fold trade-off (tokens added / entities dropped per threshold), [the tokens]; --probe WORD
 * Env: HMCP_PHI_L2 (1e-6), HMCP_PHI_EPOCHS (6), HMCP_PHI_BITS (18), HMCP_PHI_LR (0.1), HMCP_PHI_OBJECTIVE (sum |
 * physionet | drop: the threshold choice, see chooseThresholds), HMCP_PHI_RULE_DROPOUT (0), HMCP_PHI_ADD_NORULE (0),
 * HMCP_PHI_GAZ (0), HMCP_PHI_GAZ_BY_RULE (1), HMCP_PHI_GAZ_ADD (0).
 * Figures and verdict: docs/guardrails-quality.md ("Learned token re-scorer").
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { guardrailsDir } from "../src/guardrails/root.js";
import { createPhiDetector, PHI_ENTITY_TYPES, type PhiEntity, type PhiEntityType } from "../src/guardrails/phi/detector.js";
import { loadLexicon } from "../src/guardrails/phi/lexicon.js";
import { forEachTokenFeature, K, rescoreEntities, ruleTokenTypes, tokenize, tokenProbabilities, type PhiTokenModel, type TokenFeatureSet, type Tokens } from "./phi-token-model.js";
import { foldOf, IGNORED, isHoldout, loadPhiSet, scoreRows, type PhiRow, type PhiSet, type Score } from "./eval-phi.js";

const args = process.argv.slice(2);
const opt = (name: string): string | undefined => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const VARIANT = opt("--variant") ?? "all";
const FS: TokenFeatureSet = { ownWord: VARIANT === "all", contextWords: VARIANT !== "none" };
const L2 = Number(process.env["HMCP_PHI_L2"] ?? 1e-6);
const EPOCHS = Number(process.env["HMCP_PHI_EPOCHS"] ?? 6);
const BITS = Number(process.env["HMCP_PHI_BITS"] ?? 18);
const LR = Number(process.env["HMCP_PHI_LR"] ?? 0.1);
const MASK = (1 << BITS) - 1;
/** Share of training examples seen without the rule features (so the add score learns PHI from the other features). */
const RULE_DROPOUT = Number(process.env["HMCP_PHI_RULE_DROPOUT"] ?? 0);
/** The add decision scores a token without its rule features (1) or with them (0). */
/** Threshold choice: "sum" (recall gains of both sets, neither set's precision lower) or "physionet" (PhysioNet's gain, its precision not lower; Presidio precision -0.01 / recall -0.002 at most). */
const OBJECTIVE = process.env["HMCP_PHI_OBJECTIVE"] ?? "sum";
const ADD_NORULE = (process.env["HMCP_PHI_ADD_NORULE"] ?? "0") === "1";

const lx = loadLexicon(path.join(guardrailsDir(), "data", "phi-lexicon.json"));
const detector = createPhiDetector();
const typeIndex = (t: PhiEntityType): number => PHI_ENTITY_TYPES.indexOf(t);

/** Gold class of a gold span type (0 none). */
function classOf(type: string): number {
  if (/Name|PERSON/.test(type)) return 1;
  if (/Location|STREET_ADDRESS|ZIP_CODE/.test(type)) return 2;
  if (/Date|DATE_TIME/.test(type)) return 3;
  return 4;
}

interface Prepared {
  row: PhiRow;
  set: PhiSet;
  fold: number;
  tok: Tokens;
  ents: PhiEntity[];
  ruleType: Uint8Array;
  rulePos: Uint8Array;
  ent: Int32Array;
  /** gold class per token, -1 = ignored type */
  gold: Int8Array;
  /** CSR features */
  fo: Int32Array;
  fv: Int32Array;
  /** 1 for a rule feature */
  fr: Uint8Array;
  /** lower-cased token words */
  words: string[];
}

/** HMCP_PHI_GAZ=1: a gazetteer learned inside the training folds (words gold PHI in >= 2 patients, rarely anything else) as a feature. */
const GAZ = (process.env["HMCP_PHI_GAZ"] ?? "0") === "1";
/** HMCP_PHI_GAZ_ADD=1: a token the rules missed whose word is in the learned gazetteer is added (needs HMCP_PHI_GAZ=1). */
const GAZ_ADD = (process.env["HMCP_PHI_GAZ_ADD"] ?? "0") === "1";
/** The gazetteer feature apart for tokens the rules missed (1) or one for all (0). */
const GAZ_BY_RULE = (process.env["HMCP_PHI_GAZ_BY_RULE"] ?? "1") === "1";
interface Gaz {
  /** word -> patients where it was gold PHI, its PHI and non-PHI counts, majority class */
  m: Map<string, { pats: Set<string>; phi: number; non: number; cls: number[] }>;
}
function buildGaz(docs: Prepared[]): Gaz {
  const m: Gaz["m"] = new Map();
  for (const d of docs) {
    for (let i = 0; i < d.tok.n; i++) {
      const g = d.gold[i]!;
      if (g < 0) continue;
      const w = d.words[i]!;
      let x = m.get(w);
      if (!x) m.set(w, (x = { pats: new Set(), phi: 0, non: 0, cls: [0, 0, 0, 0, 0] }));
      if (g > 0) {
        x.pats.add(d.set + ":" + d.row.group);
        x.phi++;
        x.cls[g]!++;
      } else x.non++;
    }
  }
  for (const [w, x] of m) if (x.phi === 0) m.delete(w);
  return { m };
}
/** Gazetteer bucket of token i of d (the token's own patient left out), or -1. */
function gazBucket(gaz: Gaz | undefined, d: Prepared, i: number): number {
  if (!gaz) return -1;
  const x = gaz.m.get(d.words[i]!);
  if (!x) return -1;
  const own = x.pats.has(d.set + ":" + d.row.group) ? 1 : 0;
  if (x.pats.size - own < 2 || x.non > 0.1 * x.phi) return -1;
  let best = 1;
  for (let k = 2; k < K; k++) if (x.cls[k]! > x.cls[best]!) best = k;
  return (0x5bd1e995 + best * 2 + (GAZ_BY_RULE && d.ruleType[i]! === 0 ? 1 : 0)) & MASK;
}

function prepare(set: PhiSet): Prepared[] {
  // tuning split only: held-out rows are dropped before anything else looks at them
  const rows = loadPhiSet(set).filter((r) => !isHoldout(r.group));
  return rows.map((row) => {
    const text = row.text;
    const ents = detector.detect(text);
    const tok = tokenize(text);
    const { type, pos, ent } = ruleTokenTypes(tok, ents, typeIndex);
    const gold = new Int8Array(tok.n);
    const gs = row.spans.filter((s) => !IGNORED.has(s.type));
    const ign = row.spans.filter((s) => IGNORED.has(s.type));
    for (let i = 0; i < tok.n; i++) {
      const s = tok.s[i]!, e = tok.e[i]!;
      const over = (x: { start: number; end: number }) => x.start < e && x.end > s;
      const g = gs.find(over);
      gold[i] = g ? classOf(g.type) : ign.some(over) ? -1 : 0;
    }
    const lists: number[][] = Array.from({ length: tok.n }, () => []);
    const rl: number[][] = Array.from({ length: tok.n }, () => []);
    forEachTokenFeature(text, tok, type, pos, lx, FS, (i, h, r) => {
      lists[i]!.push(h & MASK);
      rl[i]!.push(r ? 1 : 0);
    });
    const fo = new Int32Array(tok.n + 1);
    for (let i = 0; i < tok.n; i++) fo[i + 1] = fo[i]! + lists[i]!.length;
    const fv = new Int32Array(fo[tok.n]!);
    const fr = new Uint8Array(fo[tok.n]!);
    for (let i = 0; i < tok.n; i++) {
      fv.set(lists[i]!, fo[i]!);
      fr.set(rl[i]!, fo[i]!);
    }
    const words = Array.from({ length: tok.n }, (_, i) => text.slice(tok.s[i]!, tok.e[i]!).toLowerCase());
    return { row, set, fold: foldOf(row.group), tok, ents, ruleType: type, rulePos: pos, ent, gold, fo, fv, fr, words };
  });
}

/** Deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Trains softmax weights on the tokens of `docs` (AdaGrad, L2 on the touched weights, fixed shuffles). */
interface Trained {
  w: Float32Array;
  gaz: Gaz | undefined;
}
function train(docs: Prepared[], seed = 1): Trained {
  const gaz = GAZ ? buildGaz(docs) : undefined;
  const w = new Float32Array((MASK + 1) * K);
  const g2 = new Float32Array((MASK + 1) * K).fill(1e-8);
  const ex: Array<[number, number]> = [];
  docs.forEach((d, di) => {
    for (let i = 0; i < d.tok.n; i++) if (d.gold[i]! >= 0) ex.push([di, i]);
  });
  const rand = rng(seed);
  const z = new Float64Array(K);
  for (let ep = 0; ep < EPOCHS; ep++) {
    for (let i = ex.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      const t = ex[i]!;
      ex[i] = ex[j]!;
      ex[j] = t;
    }
    for (const [di, ti] of ex) {
      const d = docs[di]!;
      const a = d.fo[ti]!, b = d.fo[ti + 1]!;
      const noRule = RULE_DROPOUT > 0 && rand() < RULE_DROPOUT;
      const gb = gazBucket(gaz, d, ti);
      softmax(d, ti, w, gb, noRule, z);
      const y = d.gold[ti]!;
      for (let k = 0; k < K; k++) z[k] = z[k]! - (k === y ? 1 : 0);
      for (let f = a; f < b; f++) {
        if (noRule && d.fr[f]) continue;
        const o = d.fv[f]! * K;
        for (let k = 0; k < K; k++) {
          const g = z[k]! + L2 * w[o + k]!;
          g2[o + k]! += g * g;
          w[o + k]! -= (LR * g) / Math.sqrt(g2[o + k]!);
        }
      }
      if (gb >= 0) {
        const o = gb * K;
        for (let k = 0; k < K; k++) {
          const g = z[k]! + L2 * w[o + k]!;
          g2[o + k]! += g * g;
          w[o + k]! -= (LR * g) / Math.sqrt(g2[o + k]!);
        }
      }
    }
  }
  return { w, gaz };
}

/**
 * Writes into `z` the class probabilities of token `i` of `d` under weights `w` (softmax of the summed weights of its
 * features and of its gazetteer bucket `gb`, -1: none; `noRule`: without the rule features).
 */
function softmax(d: Prepared, i: number, w: Float32Array, gb: number, noRule: boolean, z: Float64Array): void {
  z.fill(0);
  if (gb >= 0) for (let k = 0; k < K; k++) z[k]! += w[gb * K + k]!;
  for (let f = d.fo[i]!; f < d.fo[i + 1]!; f++) {
    if (noRule && d.fr[f]) continue;
    const o = d.fv[f]! * K;
    for (let k = 0; k < K; k++) z[k]! += w[o + k]!;
  }
  let m = -Infinity;
  for (let k = 0; k < K; k++) if (z[k]! > m) m = z[k]!;
  let sum = 0;
  for (let k = 0; k < K; k++) sum += z[k] = Math.exp(z[k]! - m);
  for (let k = 0; k < K; k++) z[k] = z[k]! / sum;
}

/** Class probabilities per token from stored features (`noRule`: without the rule features). */
function predict1(d: Prepared, t: Trained, noRule: boolean): Float32Array {
  const w = t.w;
  const p = new Float32Array(d.tok.n * K);
  const z = new Float64Array(K);
  for (let i = 0; i < d.tok.n; i++) {
    softmax(d, i, w, gazBucket(t.gaz, d, i), noRule, z);
    for (let k = 0; k < K; k++) p[i * K + k] = z[k]!;
  }
  return p;
}

interface Probs {
  /** for the drop decision */
  p: Float32Array;
  /** for the add decision */
  pa: Float32Array;
}
function predict(d: Prepared, w: Trained): Probs {
  const p = predict1(d, w, false);
  const pa = ADD_NORULE ? predict1(d, w, true) : GAZ_ADD ? p.slice() : p;
  if (GAZ_ADD && w.gaz) {
    // a word of the learned gazetteer is added whatever the model says
    for (let i = 0; i < d.tok.n; i++) {
      const b = gazBucket(w.gaz, d, i);
      if (b < 0 || d.ruleType[i]! !== 0) continue;
      const x = w.gaz.m.get(d.words[i]!)!;
      let best = 1;
      for (let k = 2; k < K; k++) if (x.cls[k]! > x.cls[best]!) best = k;
      for (let k = 0; k < K; k++) pa[i * K + k] = k === best ? 1 : 0;
    }
  }
  return { p, pa };
}

const T_DROP = [0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3];
const T_ADD = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.01];

/** Token counts per set for a threshold pair (the token rule of scoreRows, from the stored outcomes). */
function fastCounts(docs: Prepared[], probs: Probs[], tDrop: number, tAdd: number): Record<PhiSet, { tp: number; fp: number; fn: number }> {
  const c = { physionet: { tp: 0, fp: 0, fn: 0 }, presidio: { tp: 0, fp: 0, fn: 0 } };
  docs.forEach((d, di) => {
    const { p, pa } = probs[di]!;
    const pmax = new Float32Array(d.ents.length);
    for (let i = 0; i < d.tok.n; i++) if (d.ent[i]! >= 0) pmax[d.ent[i]!] = Math.max(pmax[d.ent[i]!]!, 1 - p[i * K]!);
    const x = c[d.set];
    for (let i = 0; i < d.tok.n; i++) {
      const g = d.gold[i]!;
      if (g < 0) continue;
      const k = d.ent[i]!;
      const pred = k >= 0 ? pmax[k]! >= tDrop : 1 - pa[i * K]! > tAdd;
      if (g > 0 && pred) x.tp++;
      else if (g > 0) x.fn++;
      else if (pred) x.fp++;
    }
  });
  return c;
}

const rp = (x: { tp: number; fp: number; fn: number }) => ({ r: x.tp / Math.max(1, x.tp + x.fn), p: x.tp / Math.max(1, x.tp + x.fp) });

/**
 * Thresholds from out-of-fold probabilities. "sum": the largest summed recall gain with each set's precision >= the
 * rules'; "physionet": PhysioNet's recall gain (plus a tenth of Presidio's) with PhysioNet's precision >= the rules' and
 * Presidio within -0.01 precision / -0.002 recall; "drop": no additions, the tDrop with the best PhysioNet precision
 * at a recall loss of at most 0.001 (Presidio: 0.002, precision not lower).
 */
function chooseThresholds(docs: Prepared[], probs: Probs[]): { tDrop: number; tAdd: number } {
  const base = fastCounts(docs, probs, 0, 2);
  let best = { tDrop: 0, tAdd: 2, gain: 0, pg: 0 };
  if (OBJECTIVE === "drop") {
    // precision filter only: the largest PhysioNet precision whose recall loss is at most 0.001 (Presidio: recall
    // loss at most 0.002, precision not lower)
    let bestDrop = { tDrop: 0, p: rp(base.physionet).p };
    for (const tDrop of T_DROP) {
      const c = fastCounts(docs, probs, tDrop, 2);
      const a = rp(base.physionet), b = rp(c.physionet), a2 = rp(base.presidio), b2 = rp(c.presidio);
      if (b.r >= a.r - 0.001 && b2.r >= a2.r - 0.002 && b2.p >= a2.p && b.p > bestDrop.p) bestDrop = { tDrop, p: b.p };
    }
    return { tDrop: bestDrop.tDrop, tAdd: 2 };
  }
  for (const tDrop of T_DROP) {
    for (const tAdd of T_ADD) {
      const c = fastCounts(docs, probs, tDrop, tAdd);
      let ok = true;
      let gain = 0;
      let pg = 0;
      for (const s of ["physionet", "presidio"] as const) {
        if (base[s].tp + base[s].fn === 0) continue;
        const a = rp(base[s]);
        const b = rp(c[s]);
        if (OBJECTIVE === "sum" || s === "physionet") {
          if (b.p < a.p) ok = false;
          gain += b.r - a.r;
        } else {
          // the clinical set leads; the general-PII set may give up a little precision, no recall
          if (b.p < a.p - 0.01 || b.r < a.r - 0.002) ok = false;
          gain += 0.1 * (b.r - a.r);
        }
        pg += b.p - a.p;
      }
      if (ok && (gain > best.gain + 1e-9 || (Math.abs(gain - best.gain) <= 1e-9 && pg > best.pg))) best = { tDrop, tAdd, gain, pg };
    }
  }
  return { tDrop: best.tDrop, tAdd: best.tAdd };
}

/** Out-of-fold probabilities of `docs` by a grouped CV over the folds they hold. */
function oof(docs: Prepared[], folds: number[]): Probs[] {
  const probs: Probs[] = new Array(docs.length);
  for (const f of folds) {
    const w = train(docs.filter((d) => d.fold !== f));
    docs.forEach((d, i) => {
      if (d.fold === f) probs[i] = predict(d, w);
    });
  }
  return probs;
}

function rescored(d: Prepared, q: Probs, tDrop: number, tAdd: number): PhiEntity[] {
  return rescoreEntities(d.row.text, d.tok, d.ents, d.ent, q.p, q.pa, tDrop, tAdd);
}

function scoreDocs(docs: Prepared[], ents: PhiEntity[][]): Score {
  let k = 0;
  return scoreRows(
    docs.map((d) => d.row),
    () => ents[k++]!,
  );
}

const r4 = (x: number) => x.toFixed(4);

function cv(all: Prepared[]): void {
  const t0 = performance.now();
  const perSet: Record<PhiSet, { base: Score[]; model: Score[]; baseEnts: PhiEntity[][]; modelEnts: PhiEntity[][]; docs: Prepared[] }> = {
    physionet: { base: [], model: [], baseEnts: [], modelEnts: [], docs: [] },
    presidio: { base: [], model: [], baseEnts: [], modelEnts: [], docs: [] },
  };
  for (let f = 0; f < 5; f++) {
    const trainDocs = all.filter((d) => d.fold !== f);
    const inner = [0, 1, 2, 3, 4].filter((x) => x !== f);
    const th = chooseThresholds(trainDocs, oof(trainDocs, inner));
    const w = train(trainDocs);
    const test = all.filter((d) => d.fold === f);
    for (const set of ["physionet", "presidio"] as const) {
      const docs = test.filter((d) => d.set === set);
      const be = docs.map((d) => d.ents);
      const me = docs.map((d) => rescored(d, predict(d, w), th.tDrop, th.tAdd));
      const b = scoreDocs(docs, be);
      const m = scoreDocs(docs, me);
      const x = perSet[set];
      x.base.push(b);
      x.model.push(m);
      x.baseEnts.push(...be);
      x.modelEnts.push(...me);
      x.docs.push(...docs);
      console.log(`fold ${f} ${set.padEnd(9)} tDrop ${th.tDrop} tAdd ${th.tAdd}  rules R ${r4(b.recall)} P ${r4(b.precision)}  +model R ${r4(m.recall)} P ${r4(m.precision)}  (tp ${b.tp}->${m.tp} fp ${b.fp}->${m.fp})`);
    }
  }
  console.log(`variant ${VARIANT} objective ${OBJECTIVE} gaz ${GAZ ? (GAZ_ADD ? "add" : "feature") : "no"} rule-dropout ${RULE_DROPOUT} add-norule ${ADD_NORULE} L2 ${L2} epochs ${EPOCHS} bits ${BITS}: CV done in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  for (const set of ["physionet", "presidio"] as const) {
    const x = perSet[set];
    const mean = (a: Score[], k: "recall" | "precision") => r4(a.reduce((s, v) => s + v[k], 0) / a.length);
    const pb = scoreDocs(x.docs, x.baseEnts);
    const pm = scoreDocs(x.docs, x.modelEnts);
    console.log(`${set}: rules   mean R ${mean(x.base, "recall")} P ${mean(x.base, "precision")} | pooled R ${r4(pb.recall)} P ${r4(pb.precision)} (tp ${pb.tp} fp ${pb.fp} fn ${pb.fn})`);
    console.log(`${set}: +model  mean R ${mean(x.model, "recall")} P ${mean(x.model, "precision")} | pooled R ${r4(pm.recall)} P ${r4(pm.precision)} (tp ${pm.tp} fp ${pm.fp} fn ${pm.fn})`);
    const types = Object.keys(pb.recallByType).sort((a, b) => pb.recallByType[b]!.gold - pb.recallByType[a]!.gold);
    for (const t of types) console.log(`  recall    ${t.padEnd(18)} ${pb.recallByType[t]!.found}/${pb.recallByType[t]!.gold} -> ${pm.recallByType[t]?.found ?? 0}`);
    const ptypes = new Set([...Object.keys(pb.precisionByType), ...Object.keys(pm.precisionByType)]);
    for (const t of ptypes) {
      const a = pb.precisionByType[t] ?? { correct: 0, predicted: 0 };
      const b = pm.precisionByType[t] ?? { correct: 0, predicted: 0 };
      console.log(`  precision ${t.padEnd(18)} ${a.correct}/${a.predicted} -> ${b.correct}/${b.predicted}`);
    }
  }
}

/** Out-of-fold (outer 5-fold) trade-off: tokens added / entities dropped per threshold, per set. */
function curve(all: Prepared[]): void {
  const probs = oof(all, [0, 1, 2, 3, 4]);
  for (const set of ["physionet", "presidio"] as const) {
    const idx = all.flatMap((d, i) => (d.set === set ? [i] : []));
    const docs = idx.map((i) => all[i]!);
    const pr = idx.map((i) => probs[i]!);
    const base = fastCounts(docs, pr, 0, 2)[set];
    console.log(`${set} rules: tp ${base.tp} fp ${base.fp} fn ${base.fn}`);
    for (const tAdd of [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) {
      const c = fastCounts(docs, pr, 0, tAdd)[set];
      console.log(`  add > ${tAdd}: +tp ${c.tp - base.tp} +fp ${c.fp - base.fp}`);
    }
    for (const tDrop of [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5]) {
      const c = fastCounts(docs, pr, tDrop, 2)[set];
      console.log(`  drop < ${tDrop}: -tp ${base.tp - c.tp} -fp ${base.fp - c.fp}`);
    }
    if (args.includes("--show")) {
      docs.forEach((d, j) => {
        const { p, pa } = pr[j]!;
        for (let i = 0; i < d.tok.n; i++) {
          const g = d.gold[i]!;
          const pred = d.ent[i]! >= 0;
          const q = 1 - (pred ? p : pa)[i * K]!;
          if ((g > 0 && !pred) || (g === 0 && !pred && q > 0.3) || (g === 0 && pred && q < 0.2) || (g > 0 && pred && q < 0.2)) {
            const t = d.row.text;
            const s = d.tok.s[i]!, e = d.tok.e[i]!;
            console.log(`    ${g > 0 ? (pred ? "TP " : "FN ") : pred ? "FP " : "TN "} p=${q.toFixed(3)}  ${(t.slice(Math.max(0, s - 35), s) + "[[" + t.slice(s, e) + "]]" + t.slice(e, e + 35)).replace(/\s+/g, " ")}`);
          }
        }
      });
    }
  }
}

function main(): void {
  const t0 = performance.now();
  const all = [...prepare("physionet"), ...prepare("presidio")];
  const nf = new Set<number>();
  for (const d of all) for (const v of d.fv) nf.add(v);
  console.log(`${all.length} tuning rows, ${all.reduce((s, d) => s + d.tok.n, 0)} tokens, ${nf.size} distinct feature buckets (of ${MASK + 1}); prepared in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (args.includes("--cv")) cv(all);
  if (args.includes("--curve")) curve(all);
  const probe = opt("--probe");
  if (probe) {
    // out-of-fold add / drop scores of every occurrence of one word (diagnostics)
    const probs = oof(all, [0, 1, 2, 3, 4]);
    all.forEach((d, j) => {
      for (let i = 0; i < d.tok.n; i++) {
        if (d.row.text.slice(d.tok.s[i]!, d.tok.e[i]!).toLowerCase() !== probe) continue;
        const { p, pa } = probs[j]!;
        console.log(`${d.set} fold ${d.fold} gold ${d.gold[i]} rule ${d.ruleType[i]} p ${(1 - p[i * K]!).toFixed(3)} pa ${(1 - pa[i * K]!).toFixed(3)}  ${d.row.text.slice(Math.max(0, d.tok.s[i]! - 30), d.tok.e[i]! + 20).replace(/\s+/g, " ")}`);
      }
    });
  }
  const out = opt("--write");
  if (out && GAZ) throw new Error("--write stores the weights only: not with HMCP_PHI_GAZ");
  if (out) {
    const th = chooseThresholds(all, oof(all, [0, 1, 2, 3, 4]));
    const { w } = train(all);
    const weights: number[][] = [];
    for (let b = 0; b <= MASK; b++) {
      const row = Array.from(w.subarray(b * K, b * K + K), (x) => Math.round(x * 1e4) / 1e4);
      if (row.some((x) => x !== 0)) weights.push([b, ...row]);
    }
    const model: PhiTokenModel = { version: 1, bits: BITS, features: FS, tDrop: th.tDrop, tAdd: th.tAdd, weights };
    writeFileSync(path.resolve(out), JSON.stringify(model) + "\n");
    console.log(`wrote ${out}: ${weights.length} buckets, tDrop ${th.tDrop} tAdd ${th.tAdd}`);
  }
  if (args.includes("--time")) {
    // feature extraction + scoring + rescoring over the tuning notes (the detector's own time excluded)
    const w = new Float32Array((MASK + 1) * K);
    const docs = all.filter((d) => d.set === "physionet");
    const bytes = docs.reduce((s, d) => s + d.row.text.length, 0);
    for (let rep = 0; rep < 5; rep++) {
      const a = performance.now();
      for (const d of docs) {
        const tok = tokenize(d.row.text);
        const rt = ruleTokenTypes(tok, d.ents, typeIndex);
        const p = tokenProbabilities(d.row.text, tok, rt.type, rt.pos, lx, FS, w, BITS);
        rescoreEntities(d.row.text, tok, d.ents, rt.ent, p, p, 0.1, 0.5);
      }
      const b = performance.now();
      for (const d of docs) detector.detect(d.row.text);
      const c = performance.now();
      // parts: tokens and rule types alone; features hashed without the weight lookups
      let sink = 0;
      for (const d of docs) {
        const tok = tokenize(d.row.text);
        ruleTokenTypes(tok, d.ents, typeIndex);
      }
      const c2 = performance.now();
      for (const d of docs) {
        const tok = tokenize(d.row.text);
        const rt = ruleTokenTypes(tok, d.ents, typeIndex);
        forEachTokenFeature(d.row.text, tok, rt.type, rt.pos, lx, FS, (_i, h) => (sink ^= h));
      }
      const c3 = performance.now();
      const us = (t: number) => ((t * 1000) / (bytes / 1024)).toFixed(1);
      console.log(`rescorer ${us(b - a)} µs/KB (tokens + rule types ${us(c2 - c)}, + features ${us(c3 - c2)}), detector ${us(c - b)} µs/KB (${docs.length} PhysioNet tuning notes, ${(bytes / 1024).toFixed(0)} KB)${sink === 0.5 ? "" : ""}`);
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
