/**
 * The name and place rules' view of a text: its words (./text.ts scanWords) as tokens with their lexicon and
 * word-class bits and case shape, and the per-token questions the rules ask (memoised), shared by ./names.ts and
 * ./places.ts.
 */

/** Token bit: one of the detector's extra names (above the lexicon and word-class bits). */
export const X_EXTRA = 1 << 28;
import { F_AMBIGUOUS, F_COMMON, F_FIRST, F_INTL, F_LAST, type Lexicon } from "./lexicon.js";
import { W_NOT_NAMES } from "./words.js";
import { isCap, isNameCase, isTitleCase, isUpper, scanWords, type Tok } from "./text.js";

/** Tokens of a text and the rules' shared per-token state. */
export interface NameContext {
  text: string;
  toks: Tok[];
  n: number;
  /** 1 where a token is a name. */
  isName: Uint8Array;
  /** Named only by a weak cue ("her X", "X was"): such a word is not spread to its other mentions. */
  weak: Uint8Array;
  first: Lexicon["first"];
  common: Lexicon["common"];
  ambiguous: Lexicon["ambiguous"];
  cities: Lexicon["cities"];
  /** A dictionary name (or an extra name), not a non-name word. */
  known: (t: Tok) => boolean;
  /** A name known only from other countries' lists. */
  onlyIntl: (t: Tok) => boolean;
  /** A common or ambiguous word, or a single letter. */
  isCommon: (t: Tok) => boolean;
  /** A hyphenated word with a one-letter or common part ("a-fib", "step-down"). */
  commonParts: (w: string) => boolean;
  /** The text between two tokens. */
  gap: (a: Tok, b: Tok) => string;
  /** Token i starts a sentence. */
  sentenceStart: (i: number) => boolean;
  /** The words around token i are upper case (so case says nothing about names). */
  allCapsText: (i: number) => boolean;
  /** Token t (at i) looks like a name. */
  nameLike: (t: Tok, i: number) => boolean;
  /** The text has no upper-case letter (`\p{Lu}`), so case says nothing about names (tested once per text). */
  lowerText: boolean;
}

/** Tokenises `text` and builds the rules' context. */
export function nameContext(text: string, lx: Lexicon, extra: ReadonlySet<string>): NameContext {
  const { first, common, ambiguous } = lx;
  const toks: Tok[] = [];
  const table = lx.table;
  scanWords(text, (s, end, asciiLower, ascii) => {
    // trailing hyphens and apostrophes are not part of the word ("Smith-", "Jones'")
    let e = end;
    for (let c = text.charCodeAt(e - 1); e - s > 1 && (c === 45 || c === 39 || c === 0x2019); c = text.charCodeAt(e - 1)) e--;
    let w: string;
    let lower: string;
    let id: number;
    if (ascii) {
      // possessive: "Smith's", "SMITH'S"; the lexicon is read by char codes (no substring, no toLowerCase)
      const z = text.charCodeAt(e - 1);
      if (e - s >= 2 && (z === 115 || z === 83) && text.charCodeAt(e - 2) === 39) e -= 2;
      id = table.findAsciiLower(text, s, e);
      if (asciiLower && id >= 0) {
        // a lower-case dictionary word is the dictionary's own string: no substring at all
        w = lower = table.wordOf(id);
      } else {
        w = text.slice(s, e);
        lower = id >= 0 ? table.wordOf(id) : asciiLower ? w : w.toLowerCase();
      }
    } else {
      w = text.slice(s, e);
      lower = w.toLowerCase();
      // possessive: "Smith's", "SMITH’S" (the test is on the lower case, as the word's own case may differ)
      const ll = lower.length;
      if (ll >= 2 && lower.charCodeAt(ll - 1) === 115 && (lower.charCodeAt(ll - 2) === 39 || lower.charCodeAt(ll - 2) === 0x2019)) {
        lower = lower.slice(0, -2);
        w = w.slice(0, -2);
      }
      id = table.find(lower);
    }
    const prev = toks.length > 0 ? toks[toks.length - 1] : undefined;
    let f = table.bitsOf(id);
    if (extra.size > 0 && extra.has(lower)) f |= X_EXTRA;
    // an ASCII lower-case word has no capital shape: skip the four case tests (most words of running text)
    const plain = asciiLower && w === lower;
    const tc = !plain && isTitleCase(w);
    toks.push({ s, e: s + w.length, w, lower, i: toks.length, ge: prev ? prev.e : s, f, tc, up: !plain && isUpper(w), nc: tc || (!plain && isNameCase(w)), cap: !plain && isCap(w) });
  });
  const n = toks.length;
  const isName = new Uint8Array(n);
  /** Named only by a weak cue ("her X", "X was"): such a word is not spread to its other mentions. */
  const weak = new Uint8Array(n);
  // per-token answers are memoised (0 unknown, 1 false, 2 true): the passes below ask the same questions many times
  const knownM = new Uint8Array(n);
  const commonM = new Uint8Array(n);
  const startM = new Uint8Array(n);
  const known = (t: Tok) => {
    let v = knownM[t.i]!;
    if (v === 0) knownM[t.i] = v = ((t.f & X_EXTRA) !== 0) || ((((t.f & F_FIRST) !== 0) || ((t.f & F_LAST) !== 0) || ((t.f & F_INTL) !== 0)) && !((t.f & W_NOT_NAMES) !== 0)) ? 2 : 1;
    return v === 2;
  };
  const onlyIntl = (t: Tok) => ((t.f & F_INTL) !== 0) && !((t.f & F_FIRST) !== 0) && !((t.f & F_LAST) !== 0) && !((t.f & X_EXTRA) !== 0);
  const isCommon = (t: Tok) => {
    let v = commonM[t.i]!;
    if (v === 0) commonM[t.i] = v = ((t.f & F_COMMON) !== 0) || ((t.f & F_AMBIGUOUS) !== 0) || t.lower.length < 2 ? 2 : 1;
    return v === 2;
  };
  /** A hyphenated word with a one-letter or common part ("a-fib", "step-down"). */
  const commonParts = (w: string) => w.includes("-") && w.split("-").some((p) => p.length < 2 || common.has(p));
  const gap = (a: Tok, b: Tok) => text.slice(a.e, b.s);
  const sentenceStart = (i: number) => {
    if (i === 0) return true;
    let v = startM[i]!;
    if (v === 0) startM[i] = v = /[.!?:;\n]\s*$/.test(text.slice(toks[i]!.ge, toks[i]!.s)) || /^\s*["'(]$/.test(text.slice(toks[i]!.ge, toks[i]!.s)) ? 2 : 1;
    return v === 2;
  };
  // upper-case words before each position: the share of upper-case neighbours is a difference of two prefix sums
  const upperBefore = new Int32Array(n + 1);
  for (let j = 0; j < n; j++) upperBefore[j + 1] = upperBefore[j]! + (toks[j]!.up ? 1 : 0);
  const allCapsText = (i: number) => {
    // True when the surrounding text is upper case (so case says nothing about names).
    const lo = Math.max(0, i - 4);
    const hi = Math.min(n, i + 5);
    const tot = hi - lo - 1;
    const up = upperBefore[hi]! - upperBefore[lo]! - (upperBefore[i + 1]! - upperBefore[i]!);
    return tot > 0 && up / tot > 0.6;
  };
  const nameLike = (t: Tok, i: number) => {
    if (((t.f & X_EXTRA) !== 0)) return true;
    if (((t.f & F_COMMON) !== 0) && !known(t)) return false;
    if (((t.f & W_NOT_NAMES) !== 0)) return false;
    if (t.up && allCapsText(i)) return (known(t) && !isCommon(t)) || (t.w.length > 2 && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0));
    if (t.nc || (t.up && t.w.length > 1)) return !((t.f & F_COMMON) !== 0) || known(t) || ((t.f & F_AMBIGUOUS) !== 0) ? true : false;
    // lower case: only dictionary names
    return known(t) && !allCapsText(i);
  };
  const lowerText = !/\p{Lu}/u.test(text);
  return { text, toks, n, isName, weak, first, common, ambiguous, cities: lx.cities, known, onlyIntl, isCommon, commonParts, gap, sentenceStart, allCapsText, nameLike, lowerText };
}
