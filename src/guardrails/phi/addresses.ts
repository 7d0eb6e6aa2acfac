/**
 * Free-form street addresses: international house-number runs, runs after an address phrase, and the short lines
 * (city, region, postcode) that follow a street line.
 */
import type { FoundList } from "./entities.js";
import { notAddrAfterNumAt, skipWs } from "./patterns.js";
import type { WordSet } from "./lexicon.js";
import { prefixRule, type RuleLists, type StartRule } from "./prefilter.js";
import { isLow, isUpper, isWs } from "./text.js";

// ---------------------------------------------------------------------------------------------
// Free-form street addresses (international): a house number followed by street words and another
// number, a street suffix or a unit ("28245 Puruntie 82 Apt. 595"), or any address-like run after an
// address phrase ("lives at", "address is", "corner of"). Runs are consumed with a sticky token regex.

export const ADDR_TRIGGER =
  /\b(?:address(?:es)?(?: is)?(?: here they are)?|lives (?:at|on)|live (?:at|on)|living at|located at|office is at|offices are located at|is at|is on|(?:sent|send(?: it| a new one)?|deliver(?:ed)?|mail(?:ed)?|return|moved|move) to|corner of|meet (?:me|you) at|stop at|drops? you off at|arrived at|enter on|north side of|south side of|address to|address with|it is|in)\s?:?\s{1,6}/giu;
const ADDR_NUM_START = /(?<![\w.,/:+-])\d{1,6}(?:\s\d{1,6})?\s(?=[\p{Lu}]|(?:ul|rue|rua|rúa|avenida|avda|calle|via|viale|str|út|utca|ulica|strada|aleja|trg)\b)/gu;
export const ADDR_TOKEN =
  /(?:[ \t]{0,4}|,[ \t]{0,4}|\n[ \t>?]{0,6}|\n,[ \t]{0,4})(?:[\p{Lu}][\p{L}\p{M}'’.-]*|\d{1,6}[A-Za-z]?(?:-\d{1,4})?|(?:apt|apartment|suite|ste|unit|box|postbox|p\.o\.|po)\b\.?|(?:and|de|du|del|dei|der|van|von|u|ul|str|st|la|le|do|da|di|dos|das|y|of|the|corner|street|road|avenue|lane|drive|place|square|terrace|way|court)\b\.?|\((?:[\p{Lu}][\p{L}]*)\)|[\p{Ll}][\p{L}\p{M}'’-]{0,30}\.?)/uy;
/** `text` has two capitals A-Z at `at` and no letter or digit after them. */
function twoCapitals(text: string, at: number): boolean {
  const a = text.charCodeAt(at);
  const b = text.charCodeAt(at + 1);
  const c = text.charCodeAt(at + 2);
  return a >= 65 && a <= 90 && b >= 65 && b <= 90 && !((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57));
}

const ADDR_SUFFIX = /^(?:út|ul|avda|aleja|põik|iela|gatve|street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|way|place|pl|terrace|sq|square|squares|loop|pass|club|union|strasse|straße|str|vej|katu|kuja|tie|rua|rue|via|vicolo|calle|gate|gata|gatan|vegen|veien|terrasse|trg|kapu|útja|utca|ulica|avenida|rúa|praia|plaza|piazza|allee|gasse|weg|laan|straat)\.?$/i;
/**
 * Start rules (./prefilter.ts) of {@link ADDR_TRIGGER} and {@link ADDR_NUM_START}: they run at these positions only. The
 * detector scans for them together with the patterns' rules (one pass) and passes the candidates to {@link scanAddresses}.
 */
export const ADDR_TRIGGER_START: StartRule = prefixRule(["add", "liv", "loc", "off", "is ", "sen", "del", "mai", "ret", "mov", "cor", "mee", "sto", "dro", "arr", "ent", "nor", "sou", "it ", "in"], true);
export const ADDR_NUM_START_RULE: StartRule = { lead: /^\d/, prev: "alnum" };
const ADDR_TRIGGER_AT = new RegExp(ADDR_TRIGGER.source, "iuy");
const ADDR_NUM_START_AT = new RegExp(ADDR_NUM_START.source, "uy");
const UNIT_WORD = /^(?:apt|apartment|suite|ste|unit|box|postbox|p\.o\.|po)\.?$/i;

const UPPER_START = /^[\p{Lu}]/u;
const LOWER_START = /^[\p{Ll}]/u;
/** `w` without trailing full stops and apostrophes (and hyphens when `hyphens`): `/[.'’-]+$/` or `/[.'’]+$/` removed. */
function trimEnd(w: string, hyphens: boolean): string {
  let e = w.length;
  for (let c = w.charCodeAt(e - 1); e > 0 && (c === 46 || c === 39 || c === 0x2019 || (hyphens && c === 45)); c = w.charCodeAt(e - 1)) e--;
  return e === w.length ? w : w.slice(0, e);
}
/** A house number and its separator at the start of a run. */
const NUM_PREFIX = /\d{1,6}(?:\s\d{1,6})?\s/y;
/**
 * NOT_ADDR_AFTER_NUM of ./patterns.ts at `at` (a dose, unit or time word follows: not an address). Its longest word
 * ("overnight") and the character after it are within 16 characters, so this answers as the test on
 * `text.slice(at, at + 16)` did.
 */
const unitAfter = (text: string, at: number): boolean => notAddrAfterNumAt(text, at);

/** ASCII letter classes for {@link upperShare}: bit 1 a letter, bit 2 an upper-case one (by char code below 128). */
const ASCII_LETTER = Uint8Array.from({ length: 128 }, (_, c) => (c >= 65 && c <= 90 ? 3 : c >= 97 && c <= 122 ? 1 : 0));

/**
 * Share of upper-case letters among the first 2,000 (ASCII) letters (clinical notes are often all caps). Counted by
 * table, without a branch on the letter's case: mixed-case text mispredicted one per word (~2x the time).
 */
function upperShare(text: string): number {
  let up = 0;
  let letters = 0;
  const n = text.length;
  for (let i = 0; i < n && letters < 2000; i++) {
    const c = text.charCodeAt(i);
    const k = c < 128 ? ASCII_LETTER[c]! : 0;
    letters += k & 1;
    up += k >> 1;
  }
  return letters === 0 ? 0 : up / letters;
}

// What scanAddresses needs to know of one address token (it depends only on the text and the position), as bits:
/** Begins with a separator (space, comma or line break). */
const T_SEP = 1;
/** Contains a line break. */
const T_NL = 2;
/** A number ... */
const T_NUM = 4;
/** ... followed by a unit or dose word ("5 mg", "3 days"): not an address. */
const T_NUM_STOP = 8;
/** A capitalised common word in all-capital text: ends the run. */
const T_UPPER_COMMON_STOP = 16;
/** Counts as a street word. */
const T_CAP = 32;
const T_SUFFIX = 64;
const T_UNIT = 128;
/** A lower-case word that is not a connector, unit or suffix. */
const T_LOWER_WORD = 256;
/** ... and a common word. */
const T_LOWER_COMMON = 512;
/** Ends a sentence (a word with a full stop, not an abbreviation of the address, before white space). */
const T_SENTENCE_END = 1024;
/** Starts with a capital, digit or parenthesis. */
const T_STRONG = 2048;
/** A lower-case word a run may end on once it has lower-case words. */
const T_LOWER_ENDABLE = 4096;
/** A number whose T_NUM_STOP is known (asked by a run: see numStop in scanAddresses). */
const T_NUM_STOP_READ = 1 << 13;
/** Read, and there is a token at this position (0: not read yet). */
const T_READ = 1 << 14;
/** Read, and no token starts at this position. */
const T_NONE = 1 << 15;

/**
 * A number token's flags but its separator and unit bits: what tokenKind gives a token whose first character after
 * the separator is a digit (a number, strong; no word, suffix, unit or full stop), as tokenAt keeps them.
 */
const NUM_TOKEN = T_READ | T_NUM | T_STRONG;
/**
 * The end of the {@link ADDR_TOKEN} match at `pos` when it is a number after at most four blanks (the first
 * separator; with fewer blanks a blank is left where no token body can start, so the regex matches this or nothing):
 * `\d{1,6}[A-Za-z]?(?:-\d{1,4})?`, the first body that can start with a digit. -1 for any other token (read by the
 * regex).
 */
export function numberTokenEnd(text: string, pos: number): number {
  const n = text.length;
  let q = pos;
  for (let c = text.charCodeAt(q); q - pos < 4 && (c === 32 || c === 9); c = text.charCodeAt(++q));
  if (q >= n || !isDigitUnit(text.charCodeAt(q))) return -1;
  let k = q + 1;
  while (k < n && k - q < 6 && isDigitUnit(text.charCodeAt(k))) k++;
  const l = text.charCodeAt(k);
  if ((l >= 97 && l <= 122) || (l >= 65 && l <= 90)) k++;
  if (text.charCodeAt(k) === 45 && isDigitUnit(text.charCodeAt(k + 1))) {
    k += 2;
    for (let m = 1; m < 4 && isDigitUnit(text.charCodeAt(k)); m++) k++;
  }
  return k;
}

/** At most this many distinct tokens of a text keep their tokenKind (a text of only distinct tokens gains nothing from more). */
const KINDS_KEPT = 1 << 14;
// tokenKind's bits: the T_* bits that depend on the token alone, and what the context-dependent ones need of it
const K_T_BITS = T_SEP | T_NL | T_NUM | T_SUFFIX | T_UNIT | T_LOWER_WORD | T_LOWER_COMMON | T_STRONG | T_LOWER_ENDABLE;
/** A capitalised common word that is not a suffix or unit: ends the run in all-capital text (T_UPPER_COMMON_STOP). */
const K_UPPER_COMMON = 1 << 16;
/** A capitalised street suffix: a street word (T_CAP). */
const K_CAP_SUFFIX = 1 << 17;
/** A capitalised word of 3+ letters that is not a common word: a street word in all-capital text, or ... */
const K_CAP_WORD = 1 << 18;
/** ... when it is not all upper case. */
const K_NOT_UPPER_CORE = 1 << 19;
/** Ends with a full stop, longer than 3, not a unit or suffix: ends a sentence before white space (T_SENTENCE_END). */
const K_SENTENCE = 1 << 20;

/** What an address token `raw` (as ADDR_TOKEN matched it, separator included) is, by its characters alone (K_* and T_* bits). */
function tokenKind(raw: string, common: WordSet): number {
  // the token without its separator; first-character classes by char code (ASCII), by regex only outside ASCII
  let i0 = 0;
  for (let c = raw.charCodeAt(0); i0 < raw.length && (isWs(c) || c === 44 || c === 62 || c === 63); c = raw.charCodeAt(++i0));
  const tok = i0 > 0 ? raw.slice(i0) : raw;
  const c0 = tok.charCodeAt(0);
  // Estonian "tee" (road) only in lower case: upper-case "TEE" is a transesophageal echo
  const suffix = ADDR_SUFFIX.test(tok) || tok === "tee";
  const unit = UNIT_WORD.test(tok);
  const num = c0 >= 48 && c0 <= 57;
  const lu = c0 < 128 ? c0 >= 65 && c0 <= 90 : UPPER_START.test(tok);
  const upper = !num && lu;
  const lowerStart = c0 < 128 ? c0 >= 97 && c0 <= 122 : LOWER_START.test(tok);
  const core = trimEnd(tok, true);
  const lowerWord = lowerStart && !unit && !suffix && !/^(?:and|de|du|del|dei|der|van|von|u|ul|str|st|la|le|do|da|di|dos|das|y|of|the|corner|na)\.?$/.test(tok);
  const rc0 = raw.charCodeAt(0);
  let k = 0;
  if (isWs(rc0) || rc0 === 44) k |= T_SEP;
  if (raw.includes("\n")) k |= T_NL;
  if (num) k |= T_NUM;
  if (upper && !suffix && !unit && common.has(trimEnd(tok.toLowerCase(), false))) k |= K_UPPER_COMMON;
  // street words are capitalised words; an all-capital acronym (PEEP, PSV) counts only in all-capital text
  if (upper && suffix) k |= K_CAP_SUFFIX;
  if (upper && core.length >= 3 && !common.has(core.toLowerCase())) k |= K_CAP_WORD;
  if (!isUpper(core)) k |= K_NOT_UPPER_CORE;
  if (suffix) k |= T_SUFFIX;
  if (unit) k |= T_UNIT;
  if (lowerWord) k |= T_LOWER_WORD;
  if (lowerWord && common.has(trimEnd(tok.toLowerCase(), false))) k |= T_LOWER_COMMON;
  if (tok.endsWith(".") && tok.length > 3 && !unit && !suffix) k |= K_SENTENCE;
  if (num || lu || c0 === 40) k |= T_STRONG;
  if (lowerStart && !/^(?:and|de|of|the|na|y)$/.test(tok)) k |= T_LOWER_ENDABLE;
  return k;
}

// The kind table: tokenKind answers of the current scanAddresses call, by the token's characters (open addressing, a
// few probes). An entry is the text's range [kindPos, kindPos + kindLen) and its kind, valid only when its kindGen is
// the call's generation, so that a call starts with an empty table without clearing it, and a table entry points
// into its own call's text only. (A Map by the token's substring cost a substring and its hash per token read:
// ~40 % of the token reads on 1 MB of "12 Main ".)
const KIND_SLOTS = KINDS_KEPT * 2;
const KIND_PROBES = 8;
const kindGen = new Int32Array(KIND_SLOTS);
const kindPos = new Int32Array(KIND_SLOTS);
const kindLen = new Int32Array(KIND_SLOTS);
const kindVal = new Int32Array(KIND_SLOTS);
let kindGeneration = 0;
let kindsKept = 0;
/** A new generation of the kind table (an empty table for one scanAddresses call). */
function nextKindGeneration(): number {
  if (kindGeneration === 0x7fffffff) {
    kindGen.fill(0);
    kindGeneration = 0;
  }
  kindsKept = 0;
  return ++kindGeneration;
}
/** Hash of `text[s, e)` (FNV-1a over UTF-16 units). */
function rangeHash(text: string, s: number, e: number): number {
  let h = 0x811c9dc5;
  for (let i = s; i < e; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}
/** `text[a, a + len)` and `text[b, b + len)` are equal. */
function sameRange(text: string, a: number, b: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (text.charCodeAt(a + i) !== text.charCodeAt(b + i)) return false;
  return true;
}
/** The kind kept for the token `text[s, e)` in generation `gen`, or -1. */
function kindOf(text: string, s: number, e: number, gen: number): number {
  const len = e - s;
  let slot = rangeHash(text, s, e) & (KIND_SLOTS - 1);
  for (let probe = 0; probe < KIND_PROBES; probe++, slot = (slot + 1) & (KIND_SLOTS - 1)) {
    if (kindGen[slot] !== gen) return -1;
    if (kindLen[slot] === len && sameRange(text, kindPos[slot]!, s, len)) return kindVal[slot]!;
  }
  return -1;
}
/** Keeps `k` as the kind of the token `text[s, e)` in generation `gen` (at most KINDS_KEPT per call; none when the probes are full). */
function keepKind(text: string, s: number, e: number, gen: number, k: number): void {
  if (kindsKept >= KINDS_KEPT) return;
  let slot = rangeHash(text, s, e) & (KIND_SLOTS - 1);
  for (let probe = 0; probe < KIND_PROBES; probe++, slot = (slot + 1) & (KIND_SLOTS - 1)) {
    if (kindGen[slot] !== gen) {
      kindGen[slot] = gen;
      kindPos[slot] = s;
      kindLen[slot] = e - s;
      kindVal[slot] = k;
      kindsKept++;
      return;
    }
  }
}

/** stepsToWord's answer when the chain of tokens ends before a street word or lower-case word. */
const FAR = 1 << 29;
let path: Int32Array = new Int32Array(1024);
const growPath = (a: Int32Array): Int32Array => {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
};
/**
 * Stores stepsToWord's answers: `d` at `p`, where the walk stopped, and one more step for each position of `path[0, k)`
 * walked before it (in reverse); returns the answer of `path[0]` (of `p` when k = 0).
 */
function writeSteps(steps: Int32Array, p: number, k: number, d: number): number {
  steps[p] = d + 1;
  while (k > 0) {
    d = Math.min(FAR, d + 1);
    steps[path[--k]!] = d + 1;
  }
  return d;
}
const isDigitUnit = (c: number): boolean => c >= 48 && c <= 57;
/** The candidates scanAddresses has put off (see there). */
let waiting: Int32Array = new Int32Array(1024);
let keptSteps = new Int32Array(0);
/** Zeroed step memo of `n` cells (kept for texts that fit {@link KEEP_ARRAYS}, like the token arrays). */
function stepArray(n: number): Int32Array {
  if (n > KEEP_ARRAYS) return new Int32Array(n);
  if (keptSteps.length < n) keptSteps = new Int32Array(Math.min(KEEP_ARRAYS, Math.max(n, keptSteps.length * 2, 4096)));
  else keptSteps.fill(0, 0, n);
  return keptSteps;
}

/** Texts up to this many characters reuse one pair of token arrays (~6 MB at most, kept for the process). */
const KEEP_ARRAYS = (1 << 20) + 1;
let keptFlags = new Uint16Array(0);
let keptNext = new Int32Array(0);
/**
 * Zeroed token arrays of `n` cells: the kept pair (cleared) when `n` fits {@link KEEP_ARRAYS}, so that a text does not
 * pay for fresh pages; a new pair for longer texts. scanAddresses does not reenter, so one kept pair is enough.
 */
function tokenArrays(n: number): [Uint16Array, Int32Array] {
  if (n > KEEP_ARRAYS) return [new Uint16Array(n), new Int32Array(n)];
  if (keptFlags.length < n) {
    const size = Math.min(KEEP_ARRAYS, Math.max(n, keptFlags.length * 2, 4096));
    keptFlags = new Uint16Array(size);
    keptNext = new Int32Array(size);
  } else keptFlags.fill(0, 0, n);
  return [keptFlags, keptNext];
}

/**
 * Finds free-form street addresses. `cand` holds the candidate positions of {@link ADDR_TRIGGER_START} (rule
 * `triggerRule`) and {@link ADDR_NUM_START_RULE} (rule `numRule`) in `text`; `knownUpperShare`, when the tokeniser has
 * counted it (./tokens.ts NameContext.upperShare), is {@link upperShare} of the text.
 */
export function scanAddresses(text: string, found: FoundList, common: WordSet, cand: RuleLists, triggerRule: number, numRule: number, knownUpperShare?: number): void {
  // the text is mostly upper case: counted when first asked (most texts read no upper-case token and no weak trigger),
  // unless the tokeniser has counted it already
  let upperTextV = knownUpperShare === undefined ? -1 : knownUpperShare > 0.5 ? 1 : 0;
  const upperText = (): boolean => (upperTextV < 0 ? (upperTextV = upperShare(text) > 0.5 ? 1 : 0) : upperTextV) === 1;
  // Candidate runs overlap (every house number starts one and each reads up to 24 tokens), so each position's token is
  // read and classified once per text: text made of candidates ("1 via 1 via ...") costs no more than 24 reads of two
  // typed-array cells each. Per position: flags[pos] (T_* bits; 0 not read yet) and next[pos] (the index just past the
  // token, the sticky regex's lastIndex); allocated on the first read. Arrays rather than one object per token: the
  // runs re-read them in text order, which the memory prefetcher follows, and a megabyte of tokens makes no garbage.
  let flags: Uint16Array | undefined;
  let nextAt: Int32Array | undefined;
  // tokenKind by token (with its separator), for this text: the kind table's entries of this call
  const gen = nextKindGeneration();
  /** Reads the token at `pos` into flags/nextAt (once) and returns its flags. */
  const tokenAt = (pos: number): number => {
    if (flags === undefined) [flags, nextAt] = tokenArrays(text.length + 1);
    const f0 = flags[pos]!;
    if (f0 !== 0) return f0;
    // a number after at most four blanks: its end and bits by char codes (half the tokens of "1 via " or "12 Main ")
    const num = numberTokenEnd(text, pos);
    if (num > 0) {
      nextAt![pos] = num;
      const b = text.charCodeAt(pos);
      return (flags[pos] = NUM_TOKEN | (b === 32 || b === 9 ? T_SEP : 0));
    }
    // test (no match array): a sticky match starts at pos and ends at lastIndex
    ADDR_TOKEN.lastIndex = pos;
    if (!ADDR_TOKEN.test(text) || ADDR_TOKEN.lastIndex === pos) return (flags[pos] = T_NONE);
    const next = ADDR_TOKEN.lastIndex;
    // what depends on the token's characters only is classified once per distinct token of the text (a text repeats
    // its tokens), found again by its characters in the text (no substring, no string hash)
    let k = kindOf(text, pos, next, gen);
    if (k < 0) {
      k = tokenKind(text.slice(pos, next), common);
      keepKind(text, pos, next, gen, k);
    }
    let f = T_READ | (k & K_T_BITS);
    if ((k & K_UPPER_COMMON) !== 0 && upperText()) f |= T_UPPER_COMMON_STOP;
    if ((k & K_CAP_SUFFIX) !== 0 || ((k & K_CAP_WORD) !== 0 && ((k & K_NOT_UPPER_CORE) !== 0 || upperText()))) f |= T_CAP;
    if ((k & K_SENTENCE) !== 0 && next < text.length && isWs(text.charCodeAt(next))) f |= T_SENTENCE_END;
    nextAt![pos] = next;
    return (flags[pos] = f);
  };
  /**
   * The number token at `pos` (flags `t`) is followed by a unit or dose word ("5 mg", "3 days": T_NUM_STOP), asked
   * only by a run, once per position (T_NUM_STOP_READ): a chain walk needs no such answer, and asking it of every
   * number read ran the unit regex once per number of "1 via 1 via ...".
   */
  const numStop = (pos: number, t: number): boolean => {
    if ((t & T_NUM_STOP_READ) === 0) {
      t |= T_NUM_STOP_READ | (unitAfter(text, skipWs(text, nextAt![pos]!)) ? T_NUM_STOP : 0);
      flags![pos] = t;
    }
    return (t & T_NUM_STOP) !== 0;
  };
  /** stepsToWord's answers by position (steps + 1; 0 not known yet); allocated on first use. */
  let steps: Int32Array | undefined;
  /**
   * stepsToWord's answer at `pos` (steps + 1) when known, else 0. A number after a blank has the answer of the blank:
   * the token there is the blank and the same number (same end; a number is neither a street word nor a lower-case
   * word), and a chain walks through the blank, not the number ("1 via 1 via ...": the first number's walk answers
   * for every later one, which otherwise read its number once more).
   */
  const knownSteps = (pos: number): number => {
    if (steps === undefined) return 0;
    const k = steps[pos]!;
    if (k !== 0 || pos === 0) return k;
    const b = text.charCodeAt(pos - 1);
    return (b === 32 || b === 9) && isDigitUnit(text.charCodeAt(pos)) ? steps[pos - 1]! : 0;
  };
  /**
   * Steps along the chain of tokens from `pos` (each token starts where the previous ended, as a run reads them) to the
   * first street word or lower-case word (T_CAP or T_LOWER_WORD), FAR when the chain ends first. A run without
   * such a word finds no address, so a number whose next 24 tokens have none needs no run: "1 via 1 via ..." reads its
   * chain once instead of 24 tokens per number. Each position is walked once per text (the answers are kept).
   */
  const stepsToWord = (pos: number): number => {
    if (steps === undefined) steps = stepArray(text.length + 1);
    const answered = knownSteps(pos);
    if (answered !== 0) return answered - 1;
    let p = pos;
    let k = 0;
    let d: number;
    for (;;) {
      const known = steps[p]!;
      if (known !== 0) {
        d = known - 1;
        break;
      }
      const t = tokenAt(p);
      if ((t & T_NONE) !== 0) {
        d = FAR;
        break;
      }
      if ((t & (T_CAP | T_LOWER_WORD)) !== 0) {
        d = 0;
        break;
      }
      if (k === path.length) path = growPath(path);
      path[k++] = p;
      p = nextAt![p]!;
    }
    // the write-back is a function of its own: in one function with the walk, V8 compiled the long walk on stack
    // replacement before the code after it had ever run, and then left that code ("insufficient type feedback") on
    // every long walk: ~60 deoptimisations per megabyte of "1 via " or "12 Main ", ~40 % of the time there
    return writeSteps(steps, p, k, d);
  };
  const tryRun = (start: number, triggered: boolean): number => {
    let pos = start;
    let end = start;
    let caps = 0;
    // words starting with a capital that are neither street suffixes nor units (a street's name: "Main" of "12 Main
    // St"; "100 ST" has none)
    let names = 0;
    let nums = 0;
    let suffix = false;
    // a street suffix after the run's first word ("ST CLAIR AVE": ST may be Saint, AVE is the suffix)
    let laterSuffix = false;
    let unit = false;
    let count = 0;
    let lines = 0;
    let lower = 0;
    let endBeforeLower = -1;
    // the counts when the first lower-case word was met
    let capsBL = 0;
    let namesBL = 0;
    let numsBL = 0;
    let suffixBL = false;
    let unitBL = false;
    let t: number;
    while (count < 24 && ((t = tokenAt(pos)) & T_NONE) === 0) {
      if (pos !== start && (t & T_SEP) === 0) break; // tokens are separated
      const at = pos;
      pos = nextAt![pos]!;
      if ((t & T_NL) !== 0 && ++lines > 4) break;
      if ((t & T_NUM) !== 0) {
        nums++;
        if (numStop(at, t)) break;
      } else if ((t & T_UPPER_COMMON_STOP) !== 0) break;
      if ((t & T_CAP) !== 0) caps++;
      if ((t & (T_STRONG | T_NUM | T_SUFFIX | T_UNIT)) === T_STRONG) names++;
      if ((t & T_UNIT) !== 0) unit = true;
      if ((t & T_SUFFIX) !== 0) {
        if (suffix || at !== start) laterSuffix = true;
        suffix = true;
      }
      if ((t & T_LOWER_WORD) !== 0) {
        // a lower-case word: part of an address only in lower-case addresses ("3911 fourth avenue suite 112 calgary")
        if (lower === 0) {
          endBeforeLower = end;
          capsBL = caps;
          namesBL = names;
          numsBL = nums;
          suffixBL = suffix;
          unitBL = unit;
        }
        if ((t & T_LOWER_COMMON) !== 0 && (lower > 0 || !suffix)) break;
        lower++;
        if (lower > 6) break;
      }
      count++;
      // a sentence ends at a word with a full stop that is not an abbreviation of the address
      if ((t & T_SENTENCE_END) !== 0) {
        if ((t & T_STRONG) !== 0) end = pos - 1;
        break;
      }
      // do not end on a connector word
      if ((t & (T_STRONG | T_UNIT | T_SUFFIX)) !== 0 || (lower > 0 && (t & T_LOWER_ENDABLE) !== 0)) end = pos;
    }
    if (end <= start) return start;
    if (lower > 0 && !(suffix && nums >= 1 && (nums >= 2 || unit || triggered))) {
      // not a lower-case address: keep the run up to its first lower-case word
      if (endBeforeLower <= start) return start;
      end = endBeforeLower;
      caps = capsBL;
      names = namesBL;
      nums = numsBL;
      suffix = suffixBL;
      unit = unitBL;
      lower = 0;
    }
    // a street suffix alone is a word of the sentence ("sent to CT scan", "sent to GH via ambulance", "HR 100 ST."):
    // an address has a number or a street name besides it
    if (triggered) {
      // a street suffix of two capitals opening a run with no number and no other suffix is a word of the sentence,
      // not the end of a street's name, which comes before it ("sent to CT RN accompanied", "to ST ELEV", "to DR
      // AWARE"; but "on ST CLAIR AVE", "DR MARTIN LUTHER KING BLVD" are streets)
      if (nums === 0 && !laterSuffix && (tokenAt(start) & T_SUFFIX) !== 0 && twoCapitals(text, start)) return start;
      if ((caps >= 1 || suffix) && (nums >= 1 || caps >= 2 || suffix) && (nums >= 1 || names >= 1 || lower > 0)) return end;
      return start;
    }
    if (names === 0 && lower === 0 && nums < 2 && (tokenAt(start) & T_NUM) !== 0) return start;
    // the words after the house number (a bounded look: the whole rest of the text per candidate was quadratic)
    NUM_PREFIX.lastIndex = start;
    const num = NUM_PREFIX.exec(text);
    if (unitAfter(text, num ? start + num[0].length : start)) return start;
    if (upperText() ? caps >= 1 && (suffix || unit) : (caps >= 1 || (suffix && lower > 0)) && (suffix || unit || (nums >= 2 && caps >= 2)) && end - start > 6) return end;
    return start;
  };
  // both regexes run as sticky twins at their candidate positions only (./prefilter.ts), in the order and with the
  // resumption of the global scans they replace
  let m: RegExpExecArray | null;
  let covered = 0;
  let from = 0;
  // Candidates whose run is known to find nothing (a chain walked from an earlier number went through them and met no
  // street or lower-case word within 24 tokens) are not tested when reached: only their match's end (`from`, which
  // may skip the next candidate) could matter, so they wait, in order, and are tested only when a later candidate
  // would do more ("1 via 1 via ...": the first number's walk answers for all the others; elsewhere none waits).
  let pending = 0;
  for (let i = cand.from[numRule]!, end = cand.from[numRule + 1]!; i < end; i++) {
    const at = cand.pos[i]!;
    if (at < from) continue;
    if (knownSteps(at) > 24) {
      if (pending === waiting.length) waiting = growPath(waiting);
      waiting[pending++] = at;
      continue;
    }
    if (pending > 0) {
      // as the loop would have tested them (each found nothing: only `from` moves)
      for (let k = 0; k < pending; k++) {
        const w = waiting[k]!;
        if (w < from) continue;
        ADDR_NUM_START_AT.lastIndex = w;
        if (ADDR_NUM_START_AT.test(text)) from = ADDR_NUM_START_AT.lastIndex;
      }
      pending = 0;
      if (at < from) continue;
    }
    // test (no match array): a sticky match starts at `at` and ends at lastIndex (it has a digit: never empty)
    ADDR_NUM_START_AT.lastIndex = at;
    if (!ADDR_NUM_START_AT.test(text)) continue;
    from = ADDR_NUM_START_AT.lastIndex;
    if (at < covered) continue;
    // a run reads at most 24 tokens and finds an address only with a street word or a lower-case word among them
    const e = stepsToWord(at) >= 24 ? at : tryRun(at, false);
    if (e > at) {
      found.add(at, e, "ADDRESS");
      covered = e;
      from = e;
    }
  }
  from = 0;
  const narrow = ADDR_TRIGGER_START.narrow!;
  for (let i = cand.from[triggerRule]!, end = cand.from[triggerRule + 1]!; i < end; i++) {
    if (cand.pos[i]! < from || !narrow(text, cand.pos[i]!)) continue;
    ADDR_TRIGGER_AT.lastIndex = cand.pos[i]!;
    if ((m = ADDR_TRIGGER_AT.exec(text)) === null) continue;
    from = m.index + m[0].length;
    const s = m.index + m[0].length;
    const trig = m[0].toLowerCase().replace(/[\s:]+$/, "");
    const weak = trig === "in" || trig === "it is" || trig === "is at" || trig === "is on";
    // a weak trigger does not count in upper-case text; the run is read first (reads are remembered per position, and
    // most runs after "in" end at once), so that the text's case share is counted only for a run that found something
    // after a weak "in", a run that starts with a lower-case word or suffix is a phrase ("remain in place. Inconsistently")
    const e = weak && (tokenAt(s) & (T_LOWER_WORD | T_SUFFIX)) !== 0 && isLow(text.charCodeAt(skipWs(text, s))) ? s : tryRun(s, !weak);
    if (e > s && !(weak && upperText())) {
      const corner = /corner of\s{1,6}$/i.exec(m[0]);
      // "the corner of X and Y" is the address, article included
      const the = corner && /(?:^|[^\p{L}\d])the\s$/iu.test(text.slice(Math.max(0, m.index - 5), m.index)) ? 4 : 0;
      found.add(corner ? m.index - the : s, e, "ADDRESS");
    }
  }
}

/** A street line followed by short lines (city, region, country + postcode) is one address. */
export function addressLines(text: string, found: FoundList): void {
  // the addresses found before this pass (the lines it adds are not streets of their own)
  const count = found.n;
  const newlineWithin = newlines(text);
  for (let k0 = 0; k0 < count; k0++) {
    if (found.type(k0) !== "ADDRESS") continue;
    const as = found.s[k0]!;
    const ae = found.e[k0]!;
    let end = ae;
    for (let k = 0; k < 4; k++) {
      // the line break must come within 30 characters, and the next line be at most 40 long: search only that far
      // (an unbounded indexOf per street made text without line breaks quadratic)
      const nl = newlineWithin(end, 31);
      if (nl < 0) break;
      if (/\S/.test(text.slice(end, nl)) && !/^[\s,]*(?:[\p{L}\d.'-]+\s?){0,4}$/u.test(text.slice(end, nl))) break;
      let lineEnd = newlineWithin(nl + 1, 41);
      if (lineEnd < 0) {
        if (text.length - (nl + 1) > 40) break;
        lineEnd = text.length;
      }
      const line = text.slice(nl + 1, lineEnd);
      if (line.trim().length === 0 || line.length > 40 || /[:?!]|\.\s|@|https?:/.test(line)) break;
      end = lineEnd;
    }
    if (end > ae) found.add(as, end, "ADDRESS");
  }
}

/**
 * `newlineWithin(from, span)`: the index of the first line break in `text[from, from + span)`, or -1 (a bounded
 * `indexOf("\n", from)`). The last line break found is remembered with the range it answers for (every position from
 * the last search up to it has it as its first line break), so that streets in increasing order, and the lines after
 * them, read each character about once: a text of streets without line breaks read 31 characters per street.
 */
export function newlines(text: string): (from: number, span: number) => number {
  // what the last searches learnt: with nl >= 0, the first line break at or after every position of [lo, nl] is nl;
  // with nl = -1, [lo, hi) has no line break
  let lo = 0;
  let nl = -1;
  let hi = 0;
  return (from: number, span: number): number => {
    const limit = Math.min(text.length, from + span);
    if (nl >= 0 && from >= lo && from <= nl) return nl < limit ? nl : -1;
    let i = from;
    if (nl === -1 && from >= lo && from <= hi) i = hi;
    else {
      lo = from;
      hi = from;
      nl = -1;
    }
    // search only up to the limit (an unbounded search per street made text without line breaks quadratic)
    for (; i < limit; i++) {
      if (text.charCodeAt(i) === 10) {
        nl = i;
        return i;
      }
    }
    if (limit > hi) hi = limit;
    return -1;
  };
}
