/**
 * The name and place rules' view of a text: its words (scanWordsFolded, below) as tokens with their lexicon and
 * word-class bits and case shape, and the per-token questions the rules ask (memoised), shared by ./names.ts and
 * ./places.ts.
 *
 * Tokens are indices into typed arrays (start, end, gap start, bits, shape), reused from call to call for texts of up
 * to {@link KEEP_TOKENS} words; a token's strings (its word as written and its lower case) are made only when a rule
 * asks for them ({@link NameContext.w}, {@link NameContext.lower}). A dictionary word's lower case is the dictionary's
 * own string, so most tokens never need a substring at all.
 */

/** Token bit: one of the detector's extra names (above the lexicon and word-class bits). */
export const X_EXTRA = 1 << 28;
import { F_AMBIGUOUS, F_COMMON, F_FIRST, F_INTL, F_LAST, FNV_OFFSET, FNV_PRIME, type Lexicon } from "./lexicon.js";
import { W_EPONYM_HEADS, W_NOT_NAMES } from "./words.js";
import type { DigitShapes } from "./digits.js";
import { grow, type WordStartSink } from "./prefilter.js";
import { astralLowerSame, CASE_LOWER_CHANGES, CASE_NOT_SIMPLE, CASE_UPPER_CHANGES, charClass, isCap, isNameCase, isTitleCase, isUp, isUpper, LOWER_UNIT, unitCase } from "./text.js";

/** Shape bits of a token's word as written (see ./text.ts isTitleCase, isUpper, isNameCase, isCap). */
export const SH_TC = 1;
export const SH_UP = 2;
export const SH_NC = 4;
export const SH_CAP = 8;
/** The word is its own lower case (`w === lower`). */
export const SH_LW = 16;
/** Every character of the word is ASCII (so its lower case is as long as it, and it has no letter outside ASCII). */
export const SH_ASCII = 32;
/** The word has a hyphen. */
export const SH_HY = 64;
/** Not ASCII, and the lower case is one code unit per unit of the word (./text.ts LOWER_UNIT), so as long as it. */
export const SH_SIMPLE = 128;

/** Tokens of a text and the rules' shared per-token state. A token is its index `i` (0 <= i < n). */
export interface NameContext {
  text: string;
  n: number;
  /** Start and end (exclusive) of token i in `text`. */
  S: Int32Array;
  E: Int32Array;
  /** Start of the text between token i - 1 and token i (the previous token's end; `S[0]` for the first): the gap is `[GE[i], S[i])`. */
  GE: Int32Array;
  /** Lexicon and word-class bits (F_*, W_*) of token i's lower case, and {@link X_EXTRA}. */
  F: Int32Array;
  /** Shape bits (SH_*) of token i's word. */
  SH: Uint8Array;
  /** The lexicon slot of token i's lower case, or -1 (equal slots: equal lower case). */
  LID: Int32Array;
  /** Token i's word as written (made on first use). */
  w: (i: number) => string;
  /** Token i's word in lower case (made on first use). */
  lower: (i: number) => string;
  /** The length of token i's lower case (without making it for an ASCII word). */
  lowerLen: (i: number) => number;
  /** Token i's lower case is `word` (a lower-case ASCII word; compared on the text for an ASCII token, without a string). */
  lowerIs: (i: number, word: string) => boolean;
  /** 1 where a token is a name. */
  isName: Uint8Array;
  /** Named only by a weak cue ("her X", "X was"): such a word is not spread to its other mentions. */
  weak: Uint8Array;
  first: Lexicon["first"];
  common: Lexicon["common"];
  ambiguous: Lexicon["ambiguous"];
  cities: Lexicon["cities"];
  /** A dictionary name (or an extra name), not a non-name word. */
  known: (i: number) => boolean;
  /** A name known only from other countries' lists. */
  onlyIntl: (i: number) => boolean;
  /** A common or ambiguous word, or a single letter. */
  isCommon: (i: number) => boolean;
  /** A hyphenated word with a one-letter or common part ("a-fib", "step-down"). */
  commonParts: (w: string) => boolean;
  /** The text between tokens a and b. */
  gap: (a: number, b: number) => string;
  /** Token i starts a sentence. */
  sentenceStart: (i: number) => boolean;
  /** The words around token i are upper case (so case says nothing about names). */
  allCapsText: (i: number) => boolean;
  /** Token i looks like a name. */
  nameLike: (i: number) => boolean;
  /**
   * Share of upper-case letters among the text's first 2,000 ASCII letters (0 without any): what ./addresses.ts
   * upperShare would count, counted by the tokeniser's pass instead of a pass of its own.
   */
  upperShare: number;
  /** The text has no upper-case letter (`\p{Lu}`), so case says nothing about names (tested once per text). */
  lowerText: boolean;
  /**
   * The union of every token's F bits, and of every token's SH bits: a rule that needs a token with some bit skips its
   * pass over the tokens when no token has it (a text without a credential, relation or capitalised word).
   */
  anyF: number;
  anySH: number;
  /** The union of the F bits of the tokens in name shape: SH_NC, or upper case and longer than two letters. */
  anyNameShapeF: number;
}

/** Texts of up to this many words reuse the token arrays of the previous call; longer ones get their own. */
export const KEEP_TOKENS = 1 << 14;

/** The reused arrays (one set per process: detection is synchronous). */
class TokenArrays {
  readonly S: Int32Array;
  readonly E: Int32Array;
  readonly GE: Int32Array;
  readonly F: Int32Array;
  readonly SH: Uint8Array;
  /** The lexicon slot of the token's lower case (./lexicon.ts LexTable.find), or -1. */
  readonly LID: Int32Array;
  /** isName, weak, (unused), and the memos of isCommon / sentenceStart (zeroed per text). */
  readonly flags: Uint8Array;
  readonly upperBefore: Int32Array;
  constructor(readonly size: number) {
    this.S = new Int32Array(size);
    this.E = new Int32Array(size);
    this.GE = new Int32Array(size);
    this.F = new Int32Array(size);
    this.SH = new Uint8Array(size);
    this.LID = new Int32Array(size);
    this.flags = new Uint8Array(size * 5);
    this.upperBefore = new Int32Array(size + 1);
  }
}
let shared: TokenArrays | undefined;

/**
 * Tokenises `text` and builds the rules' context; with `sink` and `digits`, the same pass lists the start-position
 * candidates of ./prefilter.ts in `sink` and gathers the digit runs' shapes in `digits` (see scanWordsFolded).
 */
export function nameContext(text: string, lx: Lexicon, extra: ReadonlySet<string>, sink?: WordStartSink, digits?: DigitShapes): NameContext {
  const { first, common, ambiguous } = lx;
  const table = lx.table;
  // the arrays of the previous call, grown (and then this text's own) when the text has more words
  let arrays = (shared ??= new TokenArrays(KEEP_TOKENS));
  /** Grows the arrays once the text's words outnumber them: to the count the words so far predict for the whole text (at least double). */
  const grow = (at: number): void => {
    const bigger = new TokenArrays(Math.max(arrays.size * 2, Math.ceil(((n + 1) / Math.max(1, at)) * text.length * 1.05) + 64));
    bigger.S.set(arrays.S);
    bigger.E.set(arrays.E);
    bigger.GE.set(arrays.GE);
    bigger.F.set(arrays.F);
    bigger.SH.set(arrays.SH);
    bigger.LID.set(arrays.LID);
    bigger.upperBefore.set(arrays.upperBefore);
    arrays = bigger;
  };
  /** Token strings: as written, and lower case; `undefined` until asked for. */
  /**
   * Lower case of the tokens that are not dictionary words, by token, once made (a dictionary word's is the lexicon's
   * string): made when read for a word with letters outside ASCII (whose lower case is not always that of its range).
   */
  const L: Array<string | undefined> = [];
  let n = 0;
  const hasExtra = extra.size > 0;
  // an upper-case letter is in some word: an ASCII word that is not lower case has one; a word with other letters may
  let upperSeen = false;
  let anyF = 0;
  let anySH = 0;
  let anyNameShapeF = 0;
  let otherLetters = false;
  arrays.upperBefore[0] = 0;
  scanWordsFolded(text, (s, end, asciiLower, ascii, marks) => {
    // trailing hyphens and apostrophes are not part of the word ("Smith-", "Jones'")
    let e = end;
    for (let c = text.charCodeAt(e - 1); e - s > 1 && (c === 45 || c === 39 || c === 0x2019); c = text.charCodeAt(e - 1)) e--;
    let w: string | undefined;
    let lower: string | undefined;
    let f = 0;
    let sh = 0;
    let id: number;
    if (ascii) {
      if (!asciiLower) upperSeen = true;
      // possessive: "Smith's", "SMITH'S"; the lexicon is read by char codes (no substring, no toLowerCase)
      const z = text.charCodeAt(e - 1);
      if (e - s >= 2 && (z === 115 || z === 83) && text.charCodeAt(e - 2) === 39) e -= 2;
      if (e === end) {
        // the whole word: its shape and lexicon entry from what the scanner counted and hashed (no second reading)
        const wd = WORD;
        const upper = wd[W_UP]!;
        const len = e - s;
        sh = SH_ASCII;
        if (asciiLower) sh |= SH_LW;
        else if (upper === 0) sh |= SH_LW;
        else {
          const c0 = text.charCodeAt(s);
          const up = len === upper + wd[W_MARKS]!;
          const c0up = isUp(c0);
          const tc = len >= 2 && c0up && upper === 1;
          if (up) sh |= SH_UP;
          if (tc) sh |= SH_TC | SH_NC;
          else if (c0up && (wd[W_MARKS]! > 0 || c0 === 77) && isNameCase((w = text.slice(s, e)))) sh |= SH_NC;
          if (c0up && (len === 1 || !isUp(text.charCodeAt(s + 1)) || up)) sh |= SH_CAP;
        }
        if (wd[W_HY] !== 0) sh |= SH_HY;
        id = table.findAsciiLowerHashed(text, s, e, wd[W_HASH]!, wd[W_P0]!, wd[W_P1]!, wd[W_P2]!, wd[W_P3]!);
        if (id >= 0) f = table.hitBits;
        if (hasExtra) lower = id >= 0 ? table.wordOf(id) : (w ?? text.slice(s, e)).toLowerCase();
      } else {
      // the shape from the char codes (letters, ' and -): the same answers as the string tests of ./text.ts
      let upper = 0;
      sh = SH_ASCII;
      if (asciiLower) {
        // no capital: no shape but its own lower case; a hyphen only where the scanner saw an apostrophe or hyphen
        sh |= SH_LW;
        if (marks) for (let k = s; k < e; k++) if (text.charCodeAt(k) === 45) sh |= SH_HY;
      } else {
        const c0 = text.charCodeAt(s);
        let lowerCount = 0;
        let punct = false;
        for (let k = s; k < e; k++) {
          const c = text.charCodeAt(k);
          if (c >= 97) lowerCount++;
          else if (c >= 65) upper++;
          else {
            punct = true;
            if (c === 45) sh |= SH_HY;
          }
        }
        if (upper === 0) sh |= SH_LW;
        else {
          const up = lowerCount === 0;
          const c0up = isUp(c0);
          const tc = e - s >= 2 && c0up && upper === 1;
          if (up) sh |= SH_UP;
          if (tc) sh |= SH_TC | SH_NC;
          else if (c0up && (punct || c0 === 77) && isNameCase((w = text.slice(s, e)))) sh |= SH_NC;
          if (c0up && (e - s === 1 || !isUp(text.charCodeAt(s + 1)) || up)) sh |= SH_CAP;
        }
      }
      id = table.findAsciiLower(text, s, e);
      if (id >= 0) f = table.hitBits;
      // a dictionary word's lower case is the dictionary's own string
      if (hasExtra) lower = id >= 0 ? table.wordOf(id) : (w ?? text.slice(s, e)).toLowerCase();
      }
    } else {
      otherLetters = true;
      // the word's lower case is one code unit per unit (LOWER_UNIT) unless a unit's is longer or depends on context
      // (İ, final Σ) or an astral letter has a lower case: then the strings are made and tested as they are
      let simple = true;
      for (let k = s; k < e; k++) {
        const c = text.charCodeAt(k);
        if ((unitCase(c) & CASE_NOT_SIMPLE) !== 0) {
          simple = false;
          break;
        }
        if (c >= 0xd800 && c <= 0xdbff && k + 1 < e) {
          const d = text.charCodeAt(k + 1);
          if (d >= 0xdc00 && d <= 0xdfff && !astralLowerSame(((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000)) {
            simple = false;
            break;
          }
        }
      }
      if (simple) {
        // possessive: "Smith’s", "SMITH’S" (on the lower case, as the word's own case may differ)
        if (e - s >= 2 && LOWER_UNIT[text.charCodeAt(e - 1)] === 115) {
          const q = LOWER_UNIT[text.charCodeAt(e - 2)];
          if (q === 39 || q === 0x2019) e -= 2;
        }
        sh = SH_SIMPLE | shapeOf(text, s, e);
        id = table.findFolded(text, s, e, LOWER_UNIT);
        if (id >= 0) f = table.hitBits;
        if (hasExtra) lower = id >= 0 ? table.wordOf(id) : text.slice(s, e).toLowerCase();
      } else {
        w = text.slice(s, e);
        lower = w.toLowerCase();
        // possessive: "Smith's", "SMITH’S" (the test is on the lower case, as the word's own case may differ)
        const ll = lower.length;
        if (ll >= 2 && lower.charCodeAt(ll - 1) === 115 && (lower.charCodeAt(ll - 2) === 39 || lower.charCodeAt(ll - 2) === 0x2019)) {
          lower = lower.slice(0, -2);
          w = w.slice(0, -2);
          e = s + w.length;
        }
        id = table.find(lower);
        if (id >= 0) f = table.hitBits;
        L[n] = lower;
        const tc = isTitleCase(w);
        sh = (tc ? SH_TC : 0) | (isUpper(w) ? SH_UP : 0) | (tc || isNameCase(w) ? SH_NC : 0) | (isCap(w) ? SH_CAP : 0) | (w === lower ? SH_LW : 0) | (w.includes("-") ? SH_HY : 0);
      }
    }
    if (hasExtra && extra.has(lower!)) f |= X_EXTRA;
    if (n === arrays.size) grow(e);
    const a = arrays;
    a.S[n] = s;
    a.E[n] = e;
    a.GE[n] = n > 0 ? a.E[n - 1]! : s;
    a.F[n] = f;
    a.SH[n] = sh;
    anyF |= f;
    anySH |= sh;
    if ((sh & SH_NC) !== 0 || ((sh & SH_UP) !== 0 && e - s > 2)) anyNameShapeF |= f;
    a.LID[n] = id;
    // upper-case words before each position: the share of upper-case neighbours is a difference of two prefix sums
    a.upperBefore[n + 1] = a.upperBefore[n]! + ((sh & SH_UP) !== 0 ? 1 : 0);
    n++;
  }, sink, digits);
  const { S, E, GE, F, SH, LID } = arrays;
  // a token's range is its word as written (a possessive's "'s" is outside it)
  const wOf = (i: number): string => text.slice(S[i]!, E[i]!);
  const lowerOf = (i: number): string => {
    if (LID[i]! >= 0) return table.wordOf(LID[i]!);
    let v = L[i];
    if (v === undefined) L[i] = v = (SH[i]! & SH_LW) !== 0 ? wOf(i) : wOf(i).toLowerCase();
    return v;
  };
  const lowerLen = (i: number): number => ((SH[i]! & (SH_ASCII | SH_SIMPLE)) !== 0 ? E[i]! - S[i]! : lowerOf(i).length);
  const lowerIs = (i: number, word: string): boolean => {
    if ((SH[i]! & SH_ASCII) === 0) {
      if ((SH[i]! & SH_SIMPLE) === 0) return lowerOf(i) === word;
      // one lower-case unit per unit (LOWER_UNIT): compared in place, without making the lower-case string
      const s = S[i]!;
      if (E[i]! - s !== word.length) return false;
      for (let k = 0; k < word.length; k++) if (LOWER_UNIT[text.charCodeAt(s + k)] !== word.charCodeAt(k)) return false;
      return true;
    }
    const s = S[i]!;
    if (E[i]! - s !== word.length) return false;
    for (let k = 0; k < word.length; k++) {
      const c = text.charCodeAt(s + k);
      if ((c >= 65 && c <= 90 ? c + 32 : c) !== word.charCodeAt(k)) return false;
    }
    return true;
  };
  const flags = arrays.flags;
  flags.fill(0, 0, n * 5);
  const isName = flags.subarray(0, n);
  const weak = flags.subarray(n, 2 * n);
  // per-token answers are memoised (0 unknown, 1 false, 2 true): the passes below ask the same questions many times
  const commonM = flags.subarray(3 * n, 4 * n);
  const startM = flags.subarray(4 * n, 5 * n);
  // a pure function of the token's bits (cheaper to compute than to memoise)
  const known = (i: number) => {
    const f = F[i]!;
    return (f & X_EXTRA) !== 0 || ((f & (F_FIRST | F_LAST | F_INTL)) !== 0 && (f & W_NOT_NAMES) === 0);
  };
  const onlyIntl = (i: number) => {
    const f = F[i]!;
    return ((f & F_INTL) !== 0) && !((f & F_FIRST) !== 0) && !((f & F_LAST) !== 0) && !((f & X_EXTRA) !== 0);
  };
  const isCommon = (i: number) => {
    if ((F[i]! & (F_COMMON | F_AMBIGUOUS)) !== 0) return true;
    // an ASCII or simple word's lower case is as long as the word; any other word's lower case is made once (memoised)
    if ((SH[i]! & (SH_ASCII | SH_SIMPLE)) !== 0) return E[i]! - S[i]! < 2;
    let v = commonM[i]!;
    if (v === 0) commonM[i] = v = lowerLen(i) < 2 ? 2 : 1;
    return v === 2;
  };
  /** A hyphenated word with a one-letter or common part ("a-fib", "step-down"). */
  const commonParts = (w: string) => w.includes("-") && w.split("-").some((p) => p.length < 2 || common.has(p));
  const gap = (a: number, b: number) => text.slice(E[a]!, S[b]!);
  const sentenceStart = (i: number) => {
    if (i === 0) return true;
    let v = startM[i]!;
    if (v === 0) startM[i] = v = /[.!?:;\n]\s*$/.test(text.slice(GE[i]!, S[i]!)) || /^\s*["'(]$/.test(text.slice(GE[i]!, S[i]!)) ? 2 : 1;
    return v === 2;
  };
  const upperBefore = arrays.upperBefore;
  const allCapsText = (i: number) => {
    // True when the surrounding text is upper case (so case says nothing about names).
    const lo = Math.max(0, i - 4);
    const hi = Math.min(n, i + 5);
    const tot = hi - lo - 1;
    const up = upperBefore[hi]! - upperBefore[lo]! - (upperBefore[i + 1]! - upperBefore[i]!);
    return tot > 0 && up / tot > 0.6;
  };
  const nameLike = (i: number) => {
    const f = F[i]!;
    const sh = SH[i]!;
    if (((f & X_EXTRA) !== 0)) return true;
    if (((f & F_COMMON) !== 0) && !known(i)) return false;
    if (((f & W_NOT_NAMES) !== 0)) return false;
    const up = (sh & SH_UP) !== 0;
    if (up && allCapsText(i)) return (known(i) && !isCommon(i)) || (E[i]! - S[i]! > 2 && !((f & F_COMMON) !== 0) && !((f & F_AMBIGUOUS) !== 0));
    if ((sh & SH_NC) !== 0 || (up && E[i]! - S[i]! > 1)) return !((f & F_COMMON) !== 0) || known(i) || ((f & F_AMBIGUOUS) !== 0) ? true : false;
    // lower case: only dictionary names
    return known(i) && !allCapsText(i);
  };
  // every letter is in a word, so only a text with letters outside ASCII (and none upper case in ASCII) needs the pattern
  const lowerText = upperSeen ? false : otherLetters ? !/\p{Lu}/u.test(text) : true;
  const upperShare = CASE_COUNT[0] === 0 ? 0 : CASE_COUNT[1]! / CASE_COUNT[0]!;
  return { text, n, S, E, GE, F, SH, LID, w: wOf, lower: lowerOf, lowerLen, lowerIs, isName, weak, first, common, ambiguous, cities: lx.cities, known, onlyIntl, isCommon, commonParts, gap, sentenceStart, allCapsText, nameLike, lowerText, upperShare, anyF, anySH, anyNameShapeF };
}

/**
 * The shape bits (SH_TC, SH_UP, SH_NC, SH_CAP, SH_LW, SH_HY) of the word `text[s, e)` with letters outside ASCII whose
 * lower case is one unit per unit: what isTitleCase, isUpper, isNameCase, isCap, `w === w.toLowerCase()` and
 * `w.includes("-")` answer on its string, from the case facts of its code units (those functions test `w[i]`, one code
 * unit, against its lower and upper case). The rare cases that need the string (a name-case word with ' ’ - or "Mc",
 * two leading capitals outside ASCII) make it.
 */
function shapeOf(text: string, s: number, e: number): number {
  const len = e - s;
  const c0 = text.charCodeAt(s);
  const u0 = unitCase(c0);
  let lowerAfterFirst = true; // no unit after the first changes when lower-cased
  let upperAny = false; // some unit changes when upper-cased
  let letter = (u0 & CASE_LOWER_CHANGES) !== 0;
  let marks = false;
  let hy = false;
  if ((u0 & CASE_UPPER_CHANGES) !== 0) upperAny = true;
  if (c0 === 39 || c0 === 0x2019) marks = true;
  else if (c0 === 45) marks = hy = true;
  for (let k = s + 1; k < e; k++) {
    const c = text.charCodeAt(k);
    const u = unitCase(c);
    if ((u & CASE_LOWER_CHANGES) !== 0) {
      lowerAfterFirst = false;
      letter = true;
    }
    if ((u & CASE_UPPER_CHANGES) !== 0) upperAny = true;
    if (c === 39 || c === 0x2019) marks = true;
    else if (c === 45) marks = hy = true;
  }
  const c0Lower = (u0 & CASE_LOWER_CHANGES) !== 0; // the first unit is a capital (for ASCII: A-Z)
  const tc = len >= 2 && c0Lower && lowerAfterFirst;
  const up = !upperAny && letter;
  let sh = (tc ? SH_TC | SH_NC : 0) | (up ? SH_UP : 0);
  if (!tc && c0Lower && (marks || c0 === 77) && isNameCase(text.slice(s, e))) sh |= SH_NC;
  // isCap: a capital first, then one letter, or a second unit that is not a capital, or all upper case
  if (c0Lower) {
    if (len === 1) sh |= SH_CAP;
    else {
      const c1 = text.charCodeAt(s + 1);
      if (c0 < 128 ? !isUp(c1) || up : (unitCase(c1) & CASE_LOWER_CHANGES) === 0 || text.slice(s, e) === text.slice(s, e).toUpperCase()) sh |= SH_CAP;
    }
  }
  if (!c0Lower && lowerAfterFirst) sh |= SH_LW;
  if (hy) sh |= SH_HY;
  return sh;
}

/**
 * What the scanner read of the word it reports, for an ASCII word (meaningless for another): the FNV-1a hash of its
 * lower case (./lexicon.ts LexTable), its first 16 lower-case characters packed four to an int (as LexTable's cache
 * holds them), its count of capitals, of apostrophes and hyphens, and whether it has a hyphen.
 */
const WORD = new Int32Array(9);
const W_HASH = 0;
const W_P0 = 1;
const W_P1 = 2;
const W_P2 = 3;
const W_P3 = 4;
const W_UP = 5;
const W_MARKS = 6;
const W_HY = 7;

/**
 * The name rules' words, as a global unicode regex of `[\p{L}][\p{L}\p{M}'’-]*` would find them (a letter, then letters,
 * marks, apostrophes and hyphens; stepping one code point where no word starts), by a scan of char codes: ASCII is
 * decided inline and other code points by ./text.ts charClass. Calls `word(start, end, asciiLower, ascii, marks)` for
 * each, `asciiLower` true when every character is ASCII and none is upper case (the word is its own lower case),
 * `ascii` when every character is ASCII, `marks` when the word has an ASCII apostrophe or hyphen. It also folds each
 * ASCII word into {@link WORD} as it reads it: the lexicon lookup and the shape of a whole word then need no second and
 * third pass over its characters.
 *
 * With `sink` and `digits`, the same pass also lists the start-position candidates of ./prefilter.ts (what
 * StartIndex.scan would list: ASCII letters and digits after no ASCII letter or digit, and "ſ" / Kelvin signs) and
 * gathers the shapes of the digit runs (./digits.ts), so the detector reads the text once for all three.
 */
function scanWordsFolded(text: string, word: (start: number, end: number, asciiLower: boolean, ascii: boolean, marks: boolean) => void, sink?: WordStartSink, digits?: DigitShapes): void {
  const n = text.length;
  const wd = WORD;
  const listing = sink !== undefined && digits !== undefined;
  const foldBits = sink === undefined ? 0 : sink.foldBits;
  // the character before is an ASCII letter or digit (candidates start after none)
  let prevAlnum = false;
  if (listing) digits.reset();
  // ASCII letters and upper-case ones among the first CASE_LETTERS (every ASCII letter is in a word)
  let caseLetters = 0;
  let caseUpper = 0;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    let size = 1;
    let lower = true;
    let fc = c;
    let up = 0;
    if (c < 128) {
      if (c >= 97 && c <= 122) {
        // a-z
      } else if (c >= 65 && c <= 90) {
        lower = false;
        up = 1;
        fc = c + 32;
      } else {
        if (listing) {
          if (c >= 48 && c <= 57) {
            // a run of digits: a candidate at its start after no letter or digit, and its shape
            let e = i + 1;
            while (e < n && isDigitUnit(text.charCodeAt(e))) e++;
            if (!prevAlnum) addCandidate(sink, text, i);
            prevAlnum = true;
            digits.run(text, i, e);
            i = e;
            continue;
          }
          prevAlnum = false;
        }
        i++;
        continue;
      }
      if (listing && !prevAlnum) addCandidate(sink, text, i);
    } else {
      const cp = text.codePointAt(i)!;
      if (cp > 0xffff) size = 2;
      if (listing) {
        prevAlnum = false;
        if ((c === 0x17f || c === 0x212a) && foldBits !== 0) pushCandidate(sink, i, foldBits);
      }
      if (charClass(cp) !== 2) {
        i += size;
        continue;
      }
      lower = false;
    }
    const start = i;
    let ascii = c < 128;
    let marks = false;
    let nMarks = 0;
    // units of the word that are neither ASCII letters nor marks (its letters outside ASCII, ’)
    let other = c < 128 ? 0 : size;
    let hy = 0;
    let x = Math.imul(FNV_OFFSET ^ fc, FNV_PRIME);
    let p0 = fc;
    let p1 = 0;
    let p2 = 0;
    let p3 = 0;
    // the next ASCII letter of the word starts a run of letters (after a mark or a letter outside ASCII): a candidate
    let runStart = listing && c >= 128;
    i += size;
    while (i < n) {
      const d = text.charCodeAt(i);
      if (d < 128) {
        let f = d;
        if (d >= 97 && d <= 122) {
          // a-z
          if (runStart) {
            addCandidate(sink!, text, i);
            runStart = false;
          }
        } else if (d >= 65 && d <= 90) {
          lower = false;
          up++;
          f = d + 32;
          if (runStart) {
            addCandidate(sink!, text, i);
            runStart = false;
          }
        } else if (d === 39 || d === 45) {
          // ' -
          marks = true;
          nMarks++;
          if (d === 45) hy = 1;
          runStart = listing;
        } else break;
        x = Math.imul(x ^ f, FNV_PRIME);
        const k = i - start;
        if (k < 4) p0 |= f << (k << 3);
        else if (k < 8) p1 |= f << ((k - 4) << 3);
        else if (k < 12) p2 |= f << ((k - 8) << 3);
        else if (k < 16) p3 |= f << ((k - 12) << 3);
        i++;
        continue;
      }
      if (d === 0x2019) {
        // ’
        lower = false;
        ascii = false;
        other++;
        runStart = listing;
        i++;
        continue;
      }
      const cp = text.codePointAt(i)!;
      if (charClass(cp) < 2) break;
      lower = false;
      ascii = false;
      other += cp > 0xffff ? 2 : 1;
      if (listing) {
        runStart = true;
        if ((d === 0x17f || d === 0x212a) && foldBits !== 0) pushCandidate(sink, i, foldBits);
      }
      i += cp > 0xffff ? 2 : 1;
    }
    // after the word: its last character was an ASCII letter unless a run of letters was still to start
    if (listing) prevAlnum = !runStart;
    if (caseLetters < CASE_LETTERS) {
      // a word is ASCII letters (`up` of them upper case), apostrophes and hyphens (nMarks) and other units; the word
      // that reaches the limit is counted letter by letter
      const letters = i - start - nMarks - other;
      if (caseLetters + letters <= CASE_LETTERS) {
        caseLetters += letters;
        caseUpper += up;
      } else {
        for (let k = start; k < i && caseLetters < CASE_LETTERS; k++) {
          const d = text.charCodeAt(k);
          if (d >= 97 && d <= 122) caseLetters++;
          else if (d >= 65 && d <= 90) {
            caseLetters++;
            caseUpper++;
          }
        }
      }
    }
    wd[W_HASH] = x;
    wd[W_P0] = p0;
    wd[W_P1] = p1;
    wd[W_P2] = p2;
    wd[W_P3] = p3;
    wd[W_UP] = up;
    wd[W_MARKS] = nMarks;
    wd[W_HY] = hy;
    word(start, i, lower, ascii, marks);
  }
  CASE_COUNT[0] = caseLetters;
  CASE_COUNT[1] = caseUpper;
}

/** How many ASCII letters {@link NameContext.upperShare} counts (./addresses.ts upperShare's limit). */
const CASE_LETTERS = 2000;
/** The last scan's ASCII letters and upper-case ones among its first {@link CASE_LETTERS}. */
const CASE_COUNT = new Int32Array(2);

const isDigitUnit = (c: number): boolean => c >= 48 && c <= 57;

/** Lists position `p` (an ASCII letter or digit after none) for the rules its first two characters allow. */
function addCandidate(sink: WordStartSink, text: string, p: number): void {
  const c = text.charCodeAt(p);
  const c1 = p + 1 < text.length ? text.charCodeAt(p + 1) : 128;
  const m = sink.pair[c * 129 + (c1 < 128 ? c1 : 128)]!;
  if (m !== 0) pushCandidate(sink, p, m);
}

/** Lists position `p` for the rules `m`. */
function pushCandidate(sink: WordStartSink, p: number, m: number): void {
  const k = sink.n;
  if (k === sink.pos.length) {
    sink.pos = grow(sink.pos);
    sink.mask = grow(sink.mask);
  }
  sink.pos[k] = p;
  sink.mask[k] = m;
  sink.n = k + 1;
}

/**
 * Token `i` is followed by a noun of ./words.ts EPONYM_HEADS, after one space or a possessive and a space
 * ("Kussmaul's respirations", "mallory weiss tear", "TED stockings"): an eponym or a device, not a person. Eponyms are
 * surnames: a first name before the noun without a possessive ("Taught Maria catheter care", "Gave Anne test results")
 * is a person, unless it is written as an acronym of at most three capitals or comes before "stockings" (TED, thrombo-
 * embolic deterrent: "Ted stockings").
 */
export function eponymBefore(c: NameContext, i: number): boolean {
  const { text, n, S, E, F } = c;
  if (i + 1 >= n || (F[i + 1]! & W_EPONYM_HEADS) === 0) return false;
  const a = E[i]!;
  const b = S[i + 1]!;
  if (b - a === 1) return text.charCodeAt(a) === 32 && ((F[i]! & F_FIRST) === 0 || ((c.SH[i]! & SH_UP) !== 0 && a - S[i]! <= 3) || c.lowerIs(i + 1, "stockings") || c.lowerIs(i + 1, "stocking"));
  // "'s " or "’s " (the possessive is not part of the token)
  const q = text.charCodeAt(a);
  return b - a === 3 && (q === 39 || q === 0x2019) && (text.charCodeAt(a + 1) | 32) === 115 && text.charCodeAt(a + 2) === 32;
}
