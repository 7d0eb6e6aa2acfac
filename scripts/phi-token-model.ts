/**
 * Experimental learned token re-scorer over the PHI rule detector's output (issue #19 part 3). Not part of the detector:
 * scripts/train-phi-model.ts cross-validates it on the tuning split (the CV gain stayed below the bar for shipping it, see
 * docs/guardrails-quality.md).
 *
 * Tokens are runs of letters / digits (the scoring tokens of scripts/eval-phi.ts). Each token gets hashed features
 * (the rules' decision for it and its neighbours, word shape, note case, lexicon classes, punctuation around, and,
 * depending on the model's feature set, the lower-cased word and its neighbours) and a small softmax over
 * {none, NAME, LOCATION, DATE, ID}; p(PHI) = 1 - p(none). A rule entity is dropped when no token of it reaches
 * `tDrop`; a token outside every rule entity is added (type: the most likely PHI class) when p(PHI) > `tAdd`.
 * Trained by scripts/train-phi-model.ts (`--write FILE` writes the weights as JSON, {@link PhiTokenModel}).
 */
import { readFileSync } from "node:fs";
import type { PhiEntity, PhiEntityType } from "../src/guardrails/phi/entities.js";
import type { Lexicon } from "../src/guardrails/phi/lexicon.js";

/** The classes of the softmax (0 = not PHI); an added token's type is that of its most likely PHI class. */
export const TOKEN_CLASSES = ["none", "NAME", "LOCATION", "DATE", "ID"] as const;
export const K = TOKEN_CLASSES.length;

/** Which feature groups the model uses. */
export interface TokenFeatureSet {
  /** The token's own lower-cased word, prefix and suffix. */
  ownWord: boolean;
  /** The lower-cased words around the token. */
  contextWords: boolean;
}

/** A trained re-scorer (the JSON file's content). */
export interface PhiTokenModel {
  version: 1;
  /** log2 of the hash table size. */
  bits: number;
  features: TokenFeatureSet;
  tDrop: number;
  tAdd: number;
  /** Sparse weights: [bucket, w_0 .. w_{K-1}] rows (bucket-major, K weights per bucket). */
  weights: number[][];
}

/** The tokens of a text: `[s[i], e[i])` for i < n. */
export interface Tokens {
  n: number;
  s: Int32Array;
  e: Int32Array;
}

const isAlnum = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const TOKEN_RE = /[\p{L}\p{N}]+/gu;

/** The scoring tokens of `text` (letters / digits runs; an ASCII fast path, the regex for other text). */
export function tokenize(text: string): Tokens {
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) >= 128) {
      ascii = false;
      break;
    }
  }
  const cap = (text.length >> 1) + 1;
  const s = new Int32Array(cap);
  const e = new Int32Array(cap);
  let n = 0;
  if (ascii) {
    let i = 0;
    const len = text.length;
    while (i < len) {
      if (!isAlnum(text.charCodeAt(i))) {
        i++;
        continue;
      }
      const st = i;
      while (i < len && isAlnum(text.charCodeAt(i))) i++;
      s[n] = st;
      e[n++] = i;
    }
  } else {
    for (const m of text.matchAll(TOKEN_RE)) {
      s[n] = m.index;
      e[n++] = m.index + m[0].length;
    }
  }
  return { n, s, e };
}

// feature templates (ids mixed into the hash)
const T_BIAS = 1, T_RULE = 2, T_RULE_SHAPE = 3, T_RULE_PREV = 4, T_RULE_NEXT = 5, T_SHAPE = 6, T_LEN = 7, T_LEX = 8, T_LEX_SHAPE = 9;
const T_LEX_PREV = 10, T_LEX_NEXT = 11, T_PUNCT_B = 12, T_PUNCT_A = 13, T_WORD = 14, T_PRE = 15, T_SUF = 16, T_PREV1 = 17, T_PREV2 = 18;
const T_NEXT1 = 19, T_NEXT2 = 20, T_PREV12 = 21, T_RULE_WORD = 22, T_NUM = 23, T_LEX_PREV2 = 24, T_RULE_POS = 25, T_SHAPE_PREV = 26, T_SHAPE_NEXT = 27;
const T_PREV1_SHAPE = 28, T_LINE = 29;

const mix = (a: number, b: number): number => {
  let h = Math.imul(a ^ Math.imul(b, 0x9e3779b1), 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
};
const feat = (t: number, v: number): number => mix(t * 0x01000193, v);

/** FNV-1a of the lower case of `text[s, e)`. */
function lowerHash(text: string, s: number, e: number): number {
  let x = 0x811c9dc5;
  for (let i = s; i < e; i++) {
    let c = text.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    x = Math.imul(x ^ c, 0x01000193);
  }
  return x >>> 0;
}

/** Shape class: 0 lower, 1 Title, 2 UPPER (2+ letters), 3 single upper letter, 4 digits, 5 mixed letters+digits, 6 other mixed case. */
function shapeOf(text: string, s: number, e: number): number {
  let up = 0, low = 0, dig = 0;
  for (let i = s; i < e; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) dig++;
    else if (c >= 65 && c <= 90) up++;
    else low++;
  }
  if (dig && (up || low)) return 5;
  if (dig) return 4;
  if (up === 0) return 0;
  if (low === 0) return up === 1 ? 3 : 2;
  const c0 = text.charCodeAt(s);
  if (c0 >= 65 && c0 <= 90 && up === 1) return 1;
  return 6;
}

/** The non-space character class next to a token: 0 none/space, 1 newline, else the char code + 2. */
function around(text: string, i: number): number {
  if (i < 0 || i >= text.length) return 1;
  const c = text.charCodeAt(i);
  if (c === 10 || c === 13) return 1;
  if (c === 32 || c === 9) return 0;
  return c + 2;
}

/** Type index of each token under the rule entities (0 none, 1 + PHI_ENTITY_TYPES index order given by `typeIndex`), and its position (0 none, 1 first, 2 inside). */
export function ruleTokenTypes(tok: Tokens, entities: readonly PhiEntity[], typeIndex: (t: PhiEntityType) => number): { type: Uint8Array; pos: Uint8Array; ent: Int32Array } {
  const type = new Uint8Array(tok.n);
  const pos = new Uint8Array(tok.n);
  const ent = new Int32Array(tok.n).fill(-1);
  let j = 0;
  for (let i = 0; i < tok.n; i++) {
    const s = tok.s[i]!, e = tok.e[i]!;
    while (j < entities.length && entities[j]!.end <= s) j++;
    // first overlapping entity (entities are sorted, non-overlapping)
    for (let k = j; k < entities.length && entities[k]!.start < e; k++) {
      if (entities[k]!.end > s) {
        type[i] = 1 + typeIndex(entities[k]!.type);
        pos[i] = i > 0 && ent[i - 1] === k ? 2 : 1;
        ent[i] = k;
        break;
      }
    }
  }
  return { type, pos, ent };
}

/**
 * Calls `sink(i, h)` with the 32-bit hash `h` of every feature of every token i (in token order). `lexBits` gives the
 * lexicon bits of a lower-case word (0 when unknown).
 */
export function forEachTokenFeature(text: string, tok: Tokens, ruleType: Uint8Array, rulePos: Uint8Array, lx: Lexicon, fs: TokenFeatureSet, sink: (i: number, h: number, rule?: boolean) => void): void {
  const n = tok.n;
  const wh = new Uint32Array(n);
  const sh = new Uint8Array(n);
  const lex = new Int32Array(n);
  let letters = 0, upper = 0;
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) >= 128) {
      ascii = false;
      break;
    }
  }
  const table = lx.table;
  for (let i = 0; i < n; i++) {
    const s = tok.s[i]!, e = tok.e[i]!;
    wh[i] = lowerHash(text, s, e);
    sh[i] = shapeOf(text, s, e);
    for (let k = s; k < e; k++) {
      const c = text.charCodeAt(k);
      if (c >= 65 && c <= 90) {
        upper++;
        letters++;
      } else if (c >= 97 && c <= 122) letters++;
    }
    const id = ascii ? table.findAsciiLower(text, s, e) : table.find(text.slice(s, e).toLowerCase());
    lex[i] = id < 0 ? 0 : table.bitsOf(id);
  }
  const noteUpper = letters > 0 && upper / letters > 0.6 ? 1 : 0;
  const NONE = 0x7fffffff;
  for (let i = 0; i < n; i++) {
    const s = tok.s[i]!, e = tok.e[i]!;
    const shape = sh[i]! * 2 + noteUpper;
    const rt = ruleType[i]!;
    const len = e - s;
    const lenB = len > 12 ? 12 : len;
    sink(i, feat(T_BIAS, 0));
    sink(i, feat(T_RULE, rt), true);
    sink(i, feat(T_RULE_POS, rt * 4 + rulePos[i]!), true);
    sink(i, feat(T_RULE_SHAPE, rt * 16 + shape), true);
    sink(i, feat(T_RULE_PREV, i > 0 ? ruleType[i - 1]! : NONE), true);
    sink(i, feat(T_RULE_NEXT, i + 1 < n ? ruleType[i + 1]! : NONE), true);
    sink(i, feat(T_SHAPE, shape * 16 + lenB));
    sink(i, feat(T_LEN, lenB));
    sink(i, feat(T_SHAPE_PREV, i > 0 ? sh[i - 1]! * 2 + noteUpper : NONE));
    sink(i, feat(T_SHAPE_NEXT, i + 1 < n ? sh[i + 1]! * 2 + noteUpper : NONE));
    const bits = lex[i]!;
    if (bits === 0) sink(i, feat(T_LEX, 999));
    for (let b = 0; b < 28; b++) {
      if ((bits >>> b) & 1) {
        sink(i, feat(T_LEX, b));
        sink(i, feat(T_LEX_SHAPE, b * 16 + shape));
      }
    }
    const pb = i > 0 ? lex[i - 1]! : 0;
    const nb = i + 1 < n ? lex[i + 1]! : 0;
    const pb2 = i > 1 ? lex[i - 2]! : 0;
    for (let b = 8; b < 28; b++) {
      if ((pb >>> b) & 1) sink(i, feat(T_LEX_PREV, b));
      if ((nb >>> b) & 1) sink(i, feat(T_LEX_NEXT, b));
      if ((pb2 >>> b) & 1) sink(i, feat(T_LEX_PREV2, b));
    }
    for (let b = 0; b < 8; b++) {
      if ((pb >>> b) & 1) sink(i, feat(T_LEX_PREV, b));
      if ((nb >>> b) & 1) sink(i, feat(T_LEX_NEXT, b));
    }
    sink(i, feat(T_PUNCT_B, around(text, s - 1) * 8 + (i > 0 && tok.e[i - 1]! === s - 1 ? 1 : 0)));
    sink(i, feat(T_PUNCT_A, around(text, e)));
    let line = i === 0 ? 1 : 0;
    for (let k = i === 0 ? s : tok.e[i - 1]!; k < s && !line; k++) if (text.charCodeAt(k) === 10) line = 1;
    sink(i, feat(T_LINE, line));
    if (sh[i] === 4) {
      let v = 0;
      for (let k = s; k < e && k < s + 6; k++) v = v * 10 + text.charCodeAt(k) - 48;
      sink(i, feat(T_NUM, len > 4 ? 100000 + len : v <= 31 ? v : v <= 99 ? 1000 + ((v / 10) | 0) : 2000 + len));
    }
    if (fs.ownWord) {
      sink(i, feat(T_WORD, wh[i]!));
      sink(i, feat(T_RULE_WORD, mix(rt, wh[i]!)), true);
      if (len > 3) {
        sink(i, feat(T_PRE, lowerHash(text, s, s + 3)));
        sink(i, feat(T_SUF, lowerHash(text, e - 3, e)));
      }
    }
    if (fs.contextWords) {
      const p1 = i > 0 ? wh[i - 1]! : NONE;
      const p2 = i > 1 ? wh[i - 2]! : NONE;
      sink(i, feat(T_PREV1, p1));
      sink(i, feat(T_PREV2, p2));
      sink(i, feat(T_PREV12, mix(p1, p2)));
      sink(i, feat(T_NEXT1, i + 1 < n ? wh[i + 1]! : NONE));
      sink(i, feat(T_NEXT2, i + 2 < n ? wh[i + 2]! : NONE));
      sink(i, feat(T_PREV1_SHAPE, mix(p1, shape)));
    }
  }
}

/** Class probabilities of each token (row-major n x K), from a dense weight table of `1 << bits` buckets x K. */
export function tokenProbabilities(text: string, tok: Tokens, ruleType: Uint8Array, rulePos: Uint8Array, lx: Lexicon, fs: TokenFeatureSet, w: Float32Array, bits: number): Float32Array {
  const mask = (1 << bits) - 1;
  const z = new Float64Array(tok.n * K);
  forEachTokenFeature(text, tok, ruleType, rulePos, lx, fs, (i, h) => {
    const b = (h & mask) * K;
    const o = i * K;
    for (let k = 0; k < K; k++) z[o + k]! += w[b + k]!;
  });
  const p = new Float32Array(tok.n * K);
  for (let i = 0; i < tok.n; i++) {
    const o = i * K;
    let m = -Infinity;
    for (let k = 0; k < K; k++) if (z[o + k]! > m) m = z[o + k]!;
    let sum = 0;
    for (let k = 0; k < K; k++) sum += Math.exp(z[o + k]! - m);
    for (let k = 0; k < K; k++) p[o + k] = Math.exp(z[o + k]! - m) / sum;
  }
  return p;
}

const ADD_TYPE: PhiEntityType[] = ["NAME", "NAME", "LOCATION", "DATE", "ID"];

/**
 * The rule entities re-scored: an entity none of whose tokens reaches p(PHI) >= tDrop is dropped, a token outside
 * every rule entity with p(PHI) > tAdd becomes an entity of its most likely PHI class (neighbouring added tokens of one
 * type separated by one space or ". " / ", " are joined). Sorted, non-overlapping.
 */
export function rescoreEntities(text: string, tok: Tokens, entities: readonly PhiEntity[], ent: Int32Array, p: Float32Array, pAdd: Float32Array, tDrop: number, tAdd: number): PhiEntity[] {
  const pmax = new Float32Array(entities.length);
  for (let i = 0; i < tok.n; i++) {
    const k = ent[i]!;
    if (k >= 0) {
      const q = 1 - p[i * K]!;
      if (q > pmax[k]!) pmax[k] = q;
    }
  }
  const hasTok = new Uint8Array(entities.length);
  for (let i = 0; i < tok.n; i++) if (ent[i]! >= 0) hasTok[ent[i]!] = 1;
  const out: PhiEntity[] = [];
  let j = 0;
  let lastAdded: PhiEntity | undefined;
  const pushAdded = (s: number, e: number, type: PhiEntityType): void => {
    const last = out[out.length - 1];
    if (last !== undefined && last === lastAdded && last.type === type && /^[.,]?\s{1,2}$/.test(text.slice(last.end, s))) {
      last.end = e;
      return;
    }
    out.push((lastAdded = { type, start: s, end: e, replacement: `[${type}]` }));
  };
  for (let i = 0; i <= tok.n; i++) {
    // rule entities that start before this token
    const at = i < tok.n ? tok.s[i]! : Infinity;
    while (j < entities.length && entities[j]!.start < at) {
      if (!hasTok[j] || pmax[j]! >= tDrop) out.push({ ...entities[j]! });
      j++;
    }
    if (i === tok.n) break;
    if (ent[i]! >= 0) {
      // a token of a rule entity that starts inside the token: emit it first
      continue;
    }
    const o = i * K;
    const q = 1 - pAdd[o]!;
    if (q > tAdd) {
      let best = 1;
      for (let k = 2; k < K; k++) if (pAdd[o + k]! > pAdd[o + best]!) best = k;
      pushAdded(tok.s[i]!, tok.e[i]!, ADD_TYPE[best]!);
    }
  }
  while (j < entities.length) {
    if (!hasTok[j] || pmax[j]! >= tDrop) out.push({ ...entities[j]! });
    j++;
  }
  out.sort((a, b) => a.start - b.start);
  return out;
}

/** A loaded model: dense weights plus its settings. */
export interface LoadedTokenModel {
  bits: number;
  features: TokenFeatureSet;
  tDrop: number;
  tAdd: number;
  w: Float32Array;
}

/** Expands a {@link PhiTokenModel} into dense weights. */
export function expandTokenModel(m: PhiTokenModel): LoadedTokenModel {
  if (m.version !== 1 || !(m.bits > 0 && m.bits <= 24)) throw new Error("phi token model: unsupported version or size");
  const w = new Float32Array((1 << m.bits) * K);
  for (const row of m.weights) {
    const b = row[0]!;
    for (let k = 0; k < K; k++) w[b * K + k] = row[1 + k]!;
  }
  return { bits: m.bits, features: m.features, tDrop: m.tDrop, tAdd: m.tAdd, w };
}

const loaded = new Map<string, LoadedTokenModel>();

/** Reads a model file once per process. */
export function loadTokenModel(file: string): LoadedTokenModel {
  let m = loaded.get(file);
  if (!m) {
    m = expandTokenModel(JSON.parse(readFileSync(file, "utf8")) as PhiTokenModel);
    loaded.set(file, m);
  }
  return m;
}
