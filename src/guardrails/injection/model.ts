/**
 * The prompt-injection classifier at run time: a logistic regression over hashed features
 * (./features.ts), weights trained offline by scripts/train-injection.ts and shipped as data
 * (guardrails/data/injection-model.json). Deterministic, local, no network.
 */
import { readFileSync } from "node:fs";
import type { TextLocation } from "../guardrail.js";
import { decodedViews } from "./decode.js";
import {
  HARD_RULE_CLASSES,
  RULE_CLASSES,
  RULES,
  firstHardRule,
  normalizeForInjection,
  ruleGates,
  type RuleGates,
  dataBiasBucket,
  dataRuleBucket,
  docBiasBucket,
  docRuleBucket,
  isDocument,
  negRuleBucket,
  negatedRules,
  ruleBucket,
  sentenceWindows,
  sumFeatures,
  sumWordFeaturesPair,
  windowRules,
  windows,
  type InjectionClass,
} from "./features.js";

export type { InjectionClass } from "./features.js";

/** Every {@link InjectionClass}, in a fixed order. */
export const INJECTION_CLASSES: readonly InjectionClass[] = [
  "instruction_override",
  "role_change",
  "prompt_leak",
  "data_exfiltration",
  "dose_change",
  "privilege_claim",
  "forced_output",
  "jailbreak",
  "other",
];

/** Feature rules that are cues (the text addresses a model) rather than goals, by index in RULES. */
const CUE_RULES = new Set(["ai_address", "meta_response", "covert", "bulk", "override", "new_task", "stop_marker", "agent_rules", "instead"].map((n) => RULES.findIndex(([name]) => name === n)));

/** Shape of the weights file. */
export interface InjectionModelFile {
  version: 1;
  buckets: number;
  bias: number;
  /** Default decision threshold on the probability (chosen by cross-validation at training time). */
  threshold: number;
  /**
   * Thresholds per location kind (probability 0..1), overriding `threshold` for text of that kind: text inside a
   * record or a tool result has a different base rate and different benign look-alikes than a caller's message.
   * Chosen by grouped cross-validation at training time. Default: none (every kind uses `threshold`).
   */
  thresholds?: Partial<Record<TextLocation["kind"], number>>;
  /**
   * A window with fewer features than this is scored as if it had this many (its evidence is not amplified): a one- or
   * two-word text ("yes", "stop", "write it") otherwise reaches the threshold on a single weight. Default 0 (off).
   */
  minFeatures?: number;
  /** Whether the features include character 4-grams of each word (default true: files written before the option). */
  charGrams?: boolean;
  /**
   * Whether a word in a negation scope (up to 8 words after "not", "never", "don't", "nicht", "nunca", "jamais" ...,
   * within its clause: features.ts `NEGATORS`) has its own unigram weight, so that "never reveal the key" and "reveal
   * the key" differ beyond the bigram "never reveal". Default false (files written before the option).
   */
  negation?: boolean;
  /**
   * Whether a feature rule all of whose matches in a window follow a negator (features.ts `negatedRules`: "never reveal
   * your system prompt", "do not write without approval") adds its own weight instead of the rule's: a prohibition is
   * not a request. Requires `rulesRaw`. Default false.
   */
  ruleNegation?: boolean;
  /**
   * Whether each feature rule adds its weight once, outside the 1/sqrt(n) length normalisation of the n-grams, so
   * that a rule's evidence does not fade in a long window (true), or counts as 4 normalised occurrences (false, the
   * default: files written before the option).
   */
  rulesRaw?: boolean;
  /**
   * Whether the weights include data-location terms (a bias and a weight per feature rule, added when the text is a
   * `result` or a `resource`: data the agent reads rather than a message). Requires `rulesRaw`. Default false.
   */
  dataTerms?: boolean;
  /**
   * Whether each word's unigram has a data-location copy (features.ts `dataWord`), added when the text is a `result` or
   * a `resource`: a word may weigh differently in data the agent reads than in a caller's message. Default false.
   */
  dataWords?: boolean;
  /**
   * Whether the weights include document terms (a bias and a weight per feature rule, added to every window of a text
   * cut into more than one window: a pasted note, a bundle). Requires `rulesRaw`. Default false.
   */
  docTerms?: boolean;
  /**
   * The largest share (0..1) of a message's windows that may address the reader (features.ts `isDocument`) for the
   * document terms to apply: a role prompt whose sentences all tell the agent what to do is not a pasted note. Results
   * and resources (data the agent reads) are documents whatever they say. Default: none (any text of more than one
   * window is a document).
   */
  docMaxAddressed?: number;
  /**
   * How a text is cut into scored windows (the score is the max over them): `fixed` windows of `size` characters every
   * `step` (at word boundaries), or `sentences` merged up to at least `min` characters and cut at `max`
   * (see features.ts `sentenceWindows`). Default `{ kind: "fixed", size: 600, step: 600 }`.
   */
  windows?: { kind: "fixed"; size: number; step: number } | { kind: "sentences"; min: number; max: number };
  /** Parallel arrays: bucket index and weight, for non-zero weights only. */
  index: number[];
  weight: number[];
  /** Training facts (data, regularisation, cross-validated figures). */
  meta?: Record<string, unknown>;
}

/** The outcome of {@link InjectionModel.assess}: never contains any of the text. */
export interface InjectionAssessment {
  /** Probability (0..1) that the text contains an injection (1 when an unambiguous phrase rule fires). */
  score: number;
  /** The threshold that applies to the text's kind (the score blocks when `score >= threshold`). */
  threshold: number;
  /** What dominated the score: the phrase rule that fired, else the feature rule with the largest positive weight. */
  class: InjectionClass;
}

/** A loaded model. `score` is the max over windows of P(injection). */
export class InjectionModel {
  readonly buckets: number;
  readonly bias: number;
  readonly threshold: number;
  readonly thresholds: Readonly<Partial<Record<TextLocation["kind"], number>>>;
  readonly minFeatures: number;
  readonly charGrams: boolean;
  readonly negation: boolean;
  readonly ruleNegation: boolean;
  readonly rulesRaw: boolean;
  readonly dataTerms: boolean;
  readonly dataWords: boolean;
  readonly docTerms: boolean;
  readonly #windows: (t: string) => Array<[number, number]>;
  /** The window settings as a string: two models cut a text alike when theirs are equal. */
  readonly #windowsKey: string;
  readonly #w: Float32Array;
  /** [feature count, the second model's sum] of the last window summed ({@link sumWordFeaturesPair} fills both). */
  readonly #n = new Float64Array(2);
  /** Weight of each feature rule as it enters the score (one weight with `rulesRaw`, else 4 normalised occurrences). */
  readonly #ruleWeight: Float64Array;
  /** The same plus its data-location weight, and the data-location bias. */
  readonly #dataRuleWeight: Float64Array;
  readonly #dataBias: number;
  /** The share of a message's windows that may address the reader for it to be a document (`docMaxAddressed`). */
  readonly #docMaxAddressed: number | undefined;
  /** Weight of each feature rule when negated, as a message and as data (zero without `ruleNegation`). */
  readonly #negRuleWeight: Float64Array;
  readonly #dataNegRuleWeight: Float64Array;
  /** Document weight of each feature rule, and the document bias (zero without `docTerms`). */
  readonly #docRuleWeight: Float64Array;
  readonly #docBias: number;

  constructor(file: InjectionModelFile) {
    if (file.version !== 1 || !Number.isInteger(Math.log2(file.buckets)) || file.index.length !== file.weight.length) {
      throw new Error("injection model: unsupported or malformed weights file");
    }
    this.buckets = file.buckets;
    this.bias = file.bias;
    this.threshold = file.threshold;
    this.thresholds = { ...(file.thresholds ?? {}) };
    this.minFeatures = file.minFeatures ?? 0;
    this.charGrams = file.charGrams ?? true;
    this.negation = file.negation ?? false;
    this.ruleNegation = (file.ruleNegation ?? false) && (file.rulesRaw ?? false);
    this.rulesRaw = file.rulesRaw ?? false;
    this.dataTerms = (file.dataTerms ?? false) && this.rulesRaw;
    this.dataWords = file.dataWords ?? false;
    const win = file.windows ?? { kind: "fixed", size: 600, step: 600 };
    this.#windows = win.kind === "sentences" ? (t) => sentenceWindows(t, win.min, win.max) : (t) => windows(t, win.size, win.step);
    this.#windowsKey = JSON.stringify(win);
    this.#w = new Float32Array(file.buckets);
    for (let i = 0; i < file.index.length; i++) this.#w[file.index[i]!] = file.weight[i]!;
    this.#ruleWeight = new Float64Array(RULES.length);
    const out = new Float64Array(1);
    for (let r = 0; r < RULES.length; r++) this.#ruleWeight[r] = this.rulesRaw ? this.#w[ruleBucket(r, this.buckets)]! : sumFeatures("", 0, 0, 1 << r, this.#w, out, this.charGrams);
    this.#dataRuleWeight = new Float64Array(RULES.length);
    for (let r = 0; r < RULES.length; r++) this.#dataRuleWeight[r] = this.#ruleWeight[r]! + (this.dataTerms ? this.#w[dataRuleBucket(r, this.buckets)]! : 0);
    this.#dataBias = this.dataTerms ? this.#w[dataBiasBucket(this.buckets)]! : 0;
    this.docTerms = (file.docTerms ?? false) && this.rulesRaw;
    this.#docMaxAddressed = file.docMaxAddressed;
    this.#docRuleWeight = new Float64Array(RULES.length);
    if (this.docTerms) for (let r = 0; r < RULES.length; r++) this.#docRuleWeight[r] = this.#w[docRuleBucket(r, this.buckets)]!;
    this.#docBias = this.docTerms ? this.#w[docBiasBucket(this.buckets)]! : 0;
    // a negated rule's weight replaces the rule's own; the data-location term stays
    this.#negRuleWeight = new Float64Array(RULES.length);
    this.#dataNegRuleWeight = new Float64Array(RULES.length);
    if (this.ruleNegation) {
      for (let r = 0; r < RULES.length; r++) {
        this.#negRuleWeight[r] = this.#w[negRuleBucket(r, this.buckets)]!;
        this.#dataNegRuleWeight[r] = this.#negRuleWeight[r]! + (this.dataTerms ? this.#w[dataRuleBucket(r, this.buckets)]! : 0);
      }
    }
  }

  /** The threshold for text of `kind` (the model's per-kind threshold, else its default). */
  thresholdFor(kind?: TextLocation["kind"]): number {
    return (kind !== undefined ? this.thresholds[kind] : undefined) ?? this.threshold;
  }

  /** Probability (0..1) that `text` contains an injection: max over its windows. */
  score(text: string): number {
    return this.#run(text).score;
  }

  /**
   * Score, the threshold for `kind` and the class of `text` (see {@link InjectionAssessment}). `kind`: where the text
   * sits (default: the model's default threshold).
   */
  assess(text: string, kind?: TextLocation["kind"]): InjectionAssessment {
    const data = kind === "result" || kind === "resource";
    return this.#assessment(this.#run(text, data), data, kind);
  }

  /**
   * {@link assess} by this model and by `other` at once: `[this.assess(text, kind), other.assess(text, kind)]`, equal
   * to the last bit. When the two cut texts alike and read the same word features (same windows, buckets, negation, no
   * character 4-grams, raw rules), the text is normalised, gated, cut and matched against the rules once and each word
   * hashed once for both sums; otherwise the two are scored one after the other.
   */
  assessWith(other: InjectionModel, text: string, kind?: TextLocation["kind"]): [InjectionAssessment, InjectionAssessment] {
    const data = kind === "result" || kind === "resource";
    if (!this.#pairs(other)) return [this.assess(text, kind), other.assess(text, kind)];
    const [a, b] = bestOverViews(text, (t, gates) => this.#scorePair(other, t, gates, data));
    return [this.#assessment(a!, data, kind), other.#assessment(b!, data, kind)];
  }

  /** Whether {@link assessWith} can share the work with `other`. */
  #pairs(other: InjectionModel): boolean {
    return (
      this.#windowsKey === other.#windowsKey &&
      this.buckets === other.buckets &&
      this.negation === other.negation &&
      !this.charGrams &&
      !other.charGrams &&
      this.rulesRaw &&
      other.rulesRaw
    );
  }

  /** The assessment of a {@link #run} result: the class from the hard rule or the best window's feature rules. */
  #assessment(run: Run, data: boolean, kind?: TextLocation["kind"]): InjectionAssessment {
    const { score, hard, rules } = run;
    let cls: InjectionClass = "other";
    if (hard >= 0) cls = HARD_RULE_CLASSES[hard] ?? "other";
    else {
      // a goal (exfiltration, a dose, privileges ...) names the class before a cue (addressing an AI, talking about
      // its answer), which only says that the text is aimed at a model
      let best = 0;
      let bestCue = 0;
      let cue: InjectionClass = "other";
      for (let r = 0; r < RULES.length; r++) {
        const w = data ? this.#dataRuleWeight[r]! : this.#ruleWeight[r]!;
        if (!(rules & (1 << r)) || RULE_CLASSES[r] === "other") continue;
        if (CUE_RULES.has(r)) {
          if (w > bestCue) {
            bestCue = w;
            cue = RULE_CLASSES[r]!;
          }
        } else if (w > best) {
          best = w;
          cls = RULE_CLASSES[r]!;
        }
      }
      if (best === 0) cls = cue;
    }
    return { score, threshold: this.thresholdFor(kind), class: cls };
  }

  /**
   * The score, the first hard rule that fired (-1: none) and the feature rules of the best window. `data`: the text is
   * data the agent reads (a result or a resource), which adds the data-location terms when the model has them.
   */
  #run(text: string, data = false): Run {
    return bestOverViews(text, (t, gates) => [this.#scoreNormalized(t, gates, data)])[0]!;
  }

  /** {@link #run} of one normalised text `t` with its gates, without decoded views. */
  #scoreNormalized(t: string, gates: RuleGates, data: boolean): Run {
    const hard = firstHardRule(t, gates);
    if (hard >= 0) return { score: 1, hard, rules: 0 };
    const wins = this.#windows(t);
    const masks = windowRules(t, wins, gates);
    const doc = this.#isDocument(masks, data);
    let best = 0;
    let bestRules = 0;
    for (let k = 0; k < wins.length; k++) {
      const [a, b] = wins[k]!;
      const rules = masks[k]!;
      const sum = sumFeatures(t, a, b, this.rulesRaw ? 0 : rules, this.#w, this.#n, this.charGrams, this.negation, data && this.dataWords);
      const n = this.#n[0]!;
      if (n === 0) continue;
      // (ruleNegation implies rulesRaw)
      const neg = this.ruleNegation && rules !== 0 ? negatedRules(t, a, b, rules) : 0;
      const p = this.#windowProbability(sum, n, rules, neg, data, doc);
      if (p > best) {
        best = p;
        bestRules = rules;
      }
    }
    return { score: best, hard: -1, rules: bestRules };
  }

  /** {@link #scoreNormalized} by this model and `other` ({@link #pairs}): one pass over the windows' words for both. */
  #scorePair(other: InjectionModel, t: string, gates: RuleGates, data: boolean): [Run, Run] {
    const hard = firstHardRule(t, gates);
    if (hard >= 0) return [{ score: 1, hard, rules: 0 }, { score: 1, hard, rules: 0 }];
    const wins = this.#windows(t);
    const masks = windowRules(t, wins, gates);
    const docA = this.#isDocument(masks, data);
    const docB = other.#isDocument(masks, data);
    const a = { score: 0, hard: -1, rules: 0 };
    const b = { score: 0, hard: -1, rules: 0 };
    for (let k = 0; k < wins.length; k++) {
      const [from, to] = wins[k]!;
      const rules = masks[k]!;
      const sumA = sumWordFeaturesPair(t, from, to, this.#w, other.#w, this.#n, this.negation, data && this.dataWords, data && other.dataWords);
      const n = this.#n[0]!;
      if (n === 0) continue;
      const sumB = this.#n[1]!;
      const neg = (this.ruleNegation || other.ruleNegation) && rules !== 0 ? negatedRules(t, from, to, rules) : 0;
      const pA = this.#windowProbability(sumA, n, rules, this.ruleNegation ? neg : 0, data, docA);
      if (pA > a.score) {
        a.score = pA;
        a.rules = rules;
      }
      const pB = other.#windowProbability(sumB, n, rules, other.ruleNegation ? neg : 0, data, docB);
      if (pB > b.score) {
        b.score = pB;
        b.rules = rules;
      }
    }
    return [a, b];
  }

  /** Whether a text with these window rules gets the document terms. */
  #isDocument(masks: Uint32Array, data: boolean): boolean {
    // (data the agent reads is a document whatever it says: the reader check is for messages)
    return this.docTerms && isDocument(masks, data ? undefined : this.#docMaxAddressed);
  }

  /**
   * P(injection) of one window: its word features' `sum` over `n` of them, its feature rules (`neg`: those whose every
   * match is negated, from negatedRules) and the location (`data`) and document (`doc`) terms.
   */
  #windowProbability(sum: number, n: number, rules: number, neg: number, data: boolean, doc: boolean): number {
    const bias = data ? this.bias + this.#dataBias : this.bias;
    const winBias = doc ? bias + this.#docBias : bias;
    // features are weighted 1/sqrt(n) in training; a short window keeps that weighting but no more than 1/sqrt(minFeatures)
    let z = winBias + sum / Math.sqrt(n < this.minFeatures ? this.minFeatures : n);
    // (`>>>=`: with 32 rules the mask's top bit is set, and `rules >>> 32` is `rules`, so the loop shifts the mask itself)
    if (this.rulesRaw) {
      const ruleWeight = data ? this.#dataRuleWeight : this.#ruleWeight;
      const negRuleWeight = data ? this.#dataNegRuleWeight : this.#negRuleWeight;
      for (let m = rules >>> 0, r = 0; m !== 0; m >>>= 1, r++) {
        if ((m & 1) === 0) continue;
        const w = neg & (1 << r) ? negRuleWeight[r]! : ruleWeight[r]!;
        // (one addition per rule, as before the option: the same rounding)
        z += doc ? w + this.#docRuleWeight[r]! : w;
      }
    }
    return 1 / (1 + Math.exp(-z));
  }
}

/** What a model's scoring of one text gives: its score, the first hard rule that fired (-1: none), the best window's feature rules. */
type Run = { score: number; hard: number; rules: number };

/**
 * `score` (one Run per model) of `text` normalised and of each decoded view of it (a text that names a decoding: its
 * payload decoded, decode.ts), the highest score per model winning; a model at 1 cannot be beaten, and once every
 * model is there the remaining views are not scored.
 */
function bestOverViews(text: string, score: (t: string, gates: RuleGates) => Run[]): Run[] {
  const t = normalizeForInjection(text);
  const gates = ruleGates(t);
  const views = gates.decode !== 0 ? decodedViews(text, t, gates.decode) : [];
  const best = score(t, gates);
  for (const view of views) {
    if (best.every((r) => r.score === 1)) break;
    const v = normalizeForInjection(view);
    const runs = score(v, ruleGates(v));
    for (let i = 0; i < best.length; i++) if (runs[i]!.score > best[i]!.score) best[i] = runs[i]!;
  }
  return best;
}

const cache = new Map<string, InjectionModel>();

/** Loads (once per path) a weights file. @throws Error when unreadable or malformed */
export function loadInjectionModel(file: string): InjectionModel {
  let m = cache.get(file);
  if (!m) {
    m = new InjectionModel(JSON.parse(readFileSync(file, "utf8")) as InjectionModelFile);
    cache.set(file, m);
  }
  return m;
}
