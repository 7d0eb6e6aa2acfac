/**
 * The prompt-injection scorer as it was before the hot path was optimised (commit bcc6fb8 of
 * src/guardrails/injection/features.ts and model.ts), kept verbatim as the reference the optimised
 * scorer must equal: every hard rule and feature rule run over the whole text, the features hashed in
 * separate passes. Only the rule regexes are shared (they are the model's definition and must not change).
 */
import { readFileSync } from "node:fs";
import { CONFUSABLE, HARD_RULES, NEGATION_SCOPE, NEGATORS, RULES } from "../../../src/guardrails/injection/features.js";
import { decodedViews } from "../../../src/guardrails/injection/decode.js";
import type { InjectionModelFile } from "../../../src/guardrails/injection/model.js";

/** The negators as a set of words (the list is data shared with the scorer; the scope logic below is the reference's). */
const NEGATOR_SET = new Set(NEGATORS);

export function refHardRuleHit(t: string): boolean {
  for (const re of HARD_RULES) if (re.test(t)) return true;
  return false;
}

function fnv(h: number, s: string, from = 0, to = s.length): number {
  for (let i = from; i < to; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

const SEED_WORD = 2166136261;
const SEED_BIGRAM = 0x811c9dc5 ^ 0x5bd1e995;
const SEED_CHAR = 0x811c9dc5 ^ 0x27d4eb2d;
const SEED_RULE = 0x811c9dc5 ^ 0x165667b1;

export function refNormalize(text: string): string {
  let t = text.normalize("NFKC").toLowerCase();
  // words that mix Latin letters with Cyrillic or Greek ones: the look-alikes read as Latin, one word at a time
  t = t
    .split(/(\P{L}+)/u)
    .map((w) => (/[a-z]/.test(w) && /[\u0370-\u03ff\u0400-\u052f]/.test(w) && /[a-z][\u0370-\u03ff\u0400-\u052f]|[\u0370-\u03ff\u0400-\u052f][a-z]/.test(w) ? [...w].map((c) => CONFUSABLE[c] ?? c).join("") : w))
    .join("");
  if (t.includes("\\n")) t = t.replaceAll("\\n", " ");
  if (/(?:^|\s)\p{L} \p{L} \p{L} \p{L} /u.test(t)) t = t.replace(/(?<=(?:^|\s)\p{L}) (?=\p{L}(?:\s|$))/gu, "") + " zzspacedzz";
  return t;
}

function isWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 39 || (c > 127 && c !== 8211 && c !== 8212 && c !== 8220 && c !== 8221 && c !== 8222);
}

const RULES_G = RULES.map(([, re]) => new RegExp(re.source, re.flags.includes("g") ? re.flags : re.flags + "g"));

export function refRuleHits(t: string): Array<[number, number]> {
  const hits: Array<[number, number]> = [];
  for (let r = 0; r < RULES_G.length; r++) {
    const re = RULES_G[r]!;
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(t)) !== null) {
      hits.push([r, m.index]);
      if (m[0].length === 0) re.lastIndex++;
    }
  }
  return hits;
}

/** The reference of features.ts `sentenceWindows` (its first, character-by-character version). */
export function refSentenceWindows(t: string, min = 120, max = 400): Array<[number, number]> {
  const n = t.length;
  if (n <= min) return [[0, n]];
  const out: Array<[number, number]> = [];
  let a = 0;
  let i = 0;
  while (i < n) {
    const c = t.charCodeAt(i);
    i++;
    const end = c === 10 || ((c === 46 || c === 33 || c === 63 || c === 59) && (i >= n || t.charCodeAt(i) === 32 || t.charCodeAt(i) === 10));
    if (end && i - a >= min) {
      out.push([a, i]);
      a = i;
    } else if (i - a >= max) {
      // cut at the last space after a + min (searched backwards from i, never further: linear time)
      let sp = i - 1;
      while (sp > a + min && t.charCodeAt(sp) !== 32) sp--;
      const b = sp > a + min ? sp : i;
      out.push([a, b]);
      a = b;
      i = b;
    }
  }
  if (a < n) {
    // a short tail joins the window before it
    if (n - a < min && out.length > 0) out[out.length - 1]![1] = n;
    else out.push([a, n]);
  }
  return out;
}

/**
 * The reference of features.ts `windowRules`: for each window, the rules with a match STARTING inside it, found by
 * trying each rule (sticky) at every position of the text (quadratic-free but slow: one attempt per position and rule).
 */
export function refWindowRules(t: string, wins: ReadonlyArray<readonly [number, number]>): number[] {
  const masks = wins.map(() => 0);
  for (let r = 0; r < RULES.length; r++) {
    const y = new RegExp(RULES[r]![1].source, RULES[r]![1].flags.replace("g", "") + "y");
    // starts[i]: number of match starts before position i
    const starts = new Int32Array(t.length + 1);
    for (let i = 0; i < t.length; i++) {
      y.lastIndex = i;
      starts[i + 1] = starts[i]! + (y.test(t) ? 1 : 0);
    }
    wins.forEach(([a, b], k) => {
      if (starts[b]! - starts[a]! > 0) masks[k] = (masks[k]! | (1 << r)) >>> 0; // unsigned, as the scorer's Uint32Array
    });
  }
  return masks;
}

export function refRulesIn(hits: Array<[number, number]>, from: number, to: number): number {
  let mask = 0;
  for (const [r, at] of hits) if (at >= from && at < to) mask |= 1 << r;
  return mask;
}

export function refWindows(t: string, size = 600, step = 600): Array<[number, number]> {
  if (t.length <= size) return [[0, t.length]];
  const out: Array<[number, number]> = [];
  for (let s = 0; s < t.length; s += step) {
    let a = s;
    if (a > 0) {
      const sp = t.indexOf(" ", a);
      a = sp < 0 || sp - a > 40 ? a : sp + 1;
    }
    let b = Math.min(t.length, a + size);
    if (b < t.length) {
      const sp = t.lastIndexOf(" ", b);
      if (sp > a + size / 2) b = sp;
    }
    out.push([a, b]);
    if (b >= t.length) break;
  }
  return out;
}

export function refSumFeatures(t: string, from: number, to: number, rules: number, weights: Float32Array, out: Float64Array, charGrams = true, negation = false, dataWords = false): number {
  const mask = weights.length - 1;
  let sum = 0;
  let n = 0;
  let prevStart = -1;
  let prevEnd = -1;
  // negation: words left in the scope a negator opened (closed by a clause end)
  let scope = 0;
  let i = from;
  while (i < to) {
    while (i < to && !isWordChar(t.charCodeAt(i))) {
      if (".,;:!?\n".includes(t[i]!)) scope = 0;
      i++;
    }
    if (i >= to) break;
    const s = i;
    let hw = SEED_WORD;
    while (i < to) {
      const c = t.charCodeAt(i);
      if (!isWordChar(c)) break;
      hw ^= c;
      hw = Math.imul(hw, 16777619);
      i++;
    }
    const e = i;
    sum += weights[(hw >>> 0) & mask]!;
    // dataWords: the word's data-location copy (the salted unigram hash), not counted in n
    if (dataWords) sum += weights[(Math.imul((hw >>> 0) ^ 0x2545f491, 16777619) >>> 0) & mask]!;
    n++;
    if (negation) {
      const word = t.slice(s, e);
      if (scope > 0) {
        // the word followed by U+0001, which no word contains
        sum += weights[fnv(SEED_WORD, word + "\u0001") & mask]!;
        n++;
        scope--;
      }
      if (NEGATOR_SET.has(word)) scope = NEGATION_SCOPE;
    }
    if (prevStart >= 0) {
      let h = fnv(SEED_BIGRAM, t, prevStart, prevEnd);
      h ^= 32;
      h = Math.imul(h, 16777619);
      sum += weights[fnv(h, t, s, e) & mask]!;
      n++;
    }
    if (charGrams && e - s >= 2) {
      const w0 = s - 1;
      const w1 = e + 1;
      for (let k = w0; k + 4 <= w1; k++) {
        let h = SEED_CHAR;
        for (let q = k; q < k + 4; q++) {
          h ^= q < s || q >= e ? 32 : t.charCodeAt(q);
          h = Math.imul(h, 16777619);
        }
        sum += weights[(h >>> 0) & mask]!;
        n++;
      }
    }
    prevStart = s;
    prevEnd = e;
  }
  for (let r = 0; r < RULES.length; r++) {
    if (rules & (1 << r)) {
      sum += 4 * weights[fnv(SEED_RULE, RULES[r]![0]) & mask]!;
      n += 4;
    }
  }
  out[0] = n;
  return sum;
}

/**
 * Whether every match of rule `r` that a global search from `a` finds starting before `b` has a negator among the (at
 * most NEGATION_SCOPE) words before it in its clause, the window's text before it only.
 */
function refNegated(t: string, a: number, b: number, r: number): boolean {
  const re = new RegExp(RULES[r]![1].source, RULES[r]![1].flags + "g");
  re.lastIndex = a;
  let any = false;
  for (let m = re.exec(t); m !== null && m.index < b; m = re.exec(t)) {
    const before = t.slice(a, m.index);
    const clause = before.slice(Math.max(...[..."\n.,;:!?"].map((c) => before.lastIndexOf(c))) + 1);
    const words = clause.match(/[a-z0-9'\u0080-\u2012\u2015-\u201b\u201f-\uffff]+/g) ?? [];
    if (!words.slice(-NEGATION_SCOPE).some((w) => NEGATOR_SET.has(w))) return false;
    any = true;
    if (m[0].length === 0) re.lastIndex++;
  }
  return any;
}

/**
 * The reference `InjectionModel.score`, with the model options added after the optimisation done the plain way:
 * `charGrams`, `rulesRaw` (each rule's weight added once, outside the length normalisation), `dataTerms` (a bias
 * and per-rule weights for data text), `dataWords` (a copy of each word for data text), `docTerms` (the same for texts of more than one window) and `windows` (fixed or
 * sentence windows).
 */
export class RefModel {
  readonly bias: number;
  readonly minFeatures: number;
  readonly weights: Float32Array;
  readonly #file: InjectionModelFile;
  readonly #n = new Float64Array(1);

  constructor(file: string) {
    const m = JSON.parse(readFileSync(file, "utf8")) as InjectionModelFile;
    this.#file = m;
    this.bias = m.bias;
    // the model's floor on a window's feature count (a model parameter added after the optimisation)
    this.minFeatures = m.minFeatures ?? 0;
    this.weights = new Float32Array(m.buckets);
    for (let i = 0; i < m.index.length; i++) this.weights[m.index[i]!] = m.weight[i]!;
  }

  /** `data`: the text is a result or a resource (adds the data-location terms when the model has them). */
  score(text: string, data = false): number {
    // (decoded views: src/guardrails/injection/decode.ts, shared; the scan below is what the reference checks)
    let best = this.#score(refNormalize(text), data);
    for (const view of decodedViews(text, refNormalize(text))) best = Math.max(best, this.#score(refNormalize(view), data));
    return best;
  }

  #score(t: string, data: boolean): number {
    const f = this.#file;
    const charGrams = f.charGrams ?? true;
    const negation = f.negation ?? false;
    const rulesRaw = f.rulesRaw ?? false;
    const dataTerms = (f.dataTerms ?? false) && rulesRaw && data;
    const mask = this.weights.length - 1;
    if (refHardRuleHit(t)) return 1;
    const win = f.windows ?? { kind: "fixed", size: 600, step: 600 };
    const wins = win.kind === "sentences" ? refSentenceWindows(t, win.min, win.max) : refWindows(t, win.size, win.step);
    const masks = refWindowRules(t, wins);
    let best = 0;
    for (const [k, [a, b]] of wins.entries()) {
      const rules = masks[k]!;
      const sum = refSumFeatures(t, a, b, rulesRaw ? 0 : rules, this.weights, this.#n, charGrams, negation, (f.dataWords ?? false) && data);
      const n = this.#n[0]!;
      if (n === 0) continue;
      // (sums in the model's order, so that the floating-point result is the same)
      const base = dataTerms ? this.bias + this.weights[fnv(SEED_RULE, "data:bias") & mask]! : this.bias;
      // document terms: a bias and per-rule weights when the text has more than one window (and, with docMaxAddressed,
      // a message whose windows mostly address the reader is no document)
      const addressed = masks.filter((m) => ["second_person", "you_must", "inner_imperative"].some((name) => m & (1 << RULES.findIndex(([n]) => n === name)))).length;
      const doc = (f.docTerms ?? false) && rulesRaw && wins.length > 1 && (data || f.docMaxAddressed === undefined || addressed <= f.docMaxAddressed * wins.length);
      const bias = doc ? base + this.weights[fnv(SEED_RULE, "doc:bias") & mask]! : base;
      let z = bias + sum / Math.sqrt(Math.max(n, this.minFeatures));
      if (rulesRaw) {
        for (let r = 0; r < RULES.length; r++) {
          if (!(rules & (1 << r))) continue;
          // a rule whose every match in the window follows a negator (ruleNegation) has its own weight
          const negated = (f.ruleNegation ?? false) && refNegated(t, a, b, r);
          const w = this.weights[fnv(SEED_RULE, (negated ? "neg:" : "") + RULES[r]![0]) & mask]!;
          const wd = dataTerms ? w + this.weights[fnv(SEED_RULE, "data:" + RULES[r]![0]) & mask]! : w;
          z += doc ? wd + this.weights[fnv(SEED_RULE, "doc:" + RULES[r]![0]) & mask]! : wd;
        }
      }
      const p = 1 / (1 + Math.exp(-z));
      if (p > best) best = p;
    }
    return best;
  }
}
