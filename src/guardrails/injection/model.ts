/**
 * The prompt-injection classifier at run time: a logistic regression over hashed features
 * (./features.ts), weights trained offline by scripts/train-injection.ts and shipped as data
 * (guardrails/data/injection-model.json). Deterministic, local, no network.
 */
import { readFileSync } from "node:fs";
import { hardRuleHit, sumFeatures, normalizeForInjection, ruleGates, ruleHits, rulesIn, windows } from "./features.js";

/** Shape of the weights file. */
export interface InjectionModelFile {
  version: 1;
  buckets: number;
  bias: number;
  /** Default decision threshold on the probability (chosen by cross-validation at training time). */
  threshold: number;
  /**
   * A window with fewer features than this is scored as if it had this many (its evidence is not amplified): a one- or
   * two-word text ("yes", "stop", "write it") otherwise reaches the threshold on a single weight. Default 0 (off).
   */
  minFeatures?: number;
  /** Parallel arrays: bucket index and weight, for non-zero weights only. */
  index: number[];
  weight: number[];
  /** Training facts (data, regularisation, cross-validated figures). */
  meta?: Record<string, unknown>;
}

/** A loaded model. `score` is the max over windows of P(injection). */
export class InjectionModel {
  readonly buckets: number;
  readonly bias: number;
  readonly threshold: number;
  readonly minFeatures: number;
  readonly #w: Float32Array;
  readonly #n = new Float64Array(1);

  constructor(file: InjectionModelFile) {
    if (file.version !== 1 || !Number.isInteger(Math.log2(file.buckets)) || file.index.length !== file.weight.length) {
      throw new Error("injection model: unsupported or malformed weights file");
    }
    this.buckets = file.buckets;
    this.bias = file.bias;
    this.threshold = file.threshold;
    this.minFeatures = file.minFeatures ?? 0;
    this.#w = new Float32Array(file.buckets);
    for (let i = 0; i < file.index.length; i++) this.#w[file.index[i]!] = file.weight[i]!;
  }

  /** Probability (0..1) that `text` contains an injection: max over its windows. */
  score(text: string): number {
    const t = normalizeForInjection(text);
    const gates = ruleGates(t);
    if (hardRuleHit(t, gates)) return 1;
    const hits = ruleHits(t, gates);
    let best = 0;
    for (const [a, b] of windows(t)) {
      const sum = sumFeatures(t, a, b, rulesIn(hits, a, b), this.#w, this.#n);
      const n = this.#n[0]!;
      if (n === 0) continue;
      // features are weighted 1/sqrt(n) in training; a short window keeps that weighting but no more than 1/sqrt(minFeatures)
      const z = this.bias + sum / Math.sqrt(n < this.minFeatures ? this.minFeatures : n);
      const p = 1 / (1 + Math.exp(-z));
      if (p > best) best = p;
    }
    return best;
  }
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
