/**
 * One pass over a text's runs of ASCII digits that gates the numeric patterns of ./patterns.ts (phone, SSN, account,
 * dates, age, ZIP, ID numbers): each such pattern names, as the bits of its `digits` field, the digit runs any of its
 * matches contains (a run of five digits; two runs joined by one "-"; a run of one or two digits followed by a month
 * name ...), and runs over the text only when the text has one. A text without such a run (most prose: a few numbers
 * per KB, none a phone number or a date) skips the pattern's pass over the whole text.
 *
 * Exact by construction: every bit is a necessary condition of a match of the patterns gated by it (see each bit; a
 * pattern's look-behind puts its first digit at the start of a run and what follows its digit groups ends them, so the
 * groups are whole runs). A gate may open for a text the pattern then finds nothing in; it never shuts for a text the
 * pattern would match.
 *
 * Cost: one char-code test per character (~1-2 µs per KB), a few more per run.
 */
import { STREET_NUMBER_AT, streetSuffixBefore } from "./gates.js";
import { isWs } from "./text.js";

/** Four runs joined by single full stops ("10.1.2.3"): IPv4. */
export const D_DOTS3 = 1 << 0;
/** A run of 3 digits, "-", a run of 2: SSN. */
export const D_SSN = 1 << 1;
/**
 * Card and account numbers (`(?<![\w.-])\d(?:[ -]?\d){11,18}(?![\w-])`): runs joined by single spaces or hyphens, from a
 * run after no `[\w.-]` to a run before no `[\w-]`, with 12 to 19 digits in all.
 */
export const D_ACCOUNT = 1 << 2;
/** A run of 3 digits, one to three characters, a run of 4: a North American phone number. */
export const D_NANP = 1 << 3;
/** A run right after "+": an international phone number. */
export const D_PLUS = 1 << 4;
/** Three runs joined by single spaces or full stops: grouped phone digits. */
export const D_GROUPED = 1 << 5;
/** 3 digits, a space or "-", 7 digits; or 6 digits, "-", 4 digits: a phone number. */
export const D_3_7 = 1 << 6;
/** Two runs joined by one "-": hyphen-grouped numbers, ISO and m-d-y dates. */
export const D_HYPHEN = 1 << 7;
/** Two runs joined by one "/": m/d and m/y dates. */
export const D_SLASH = 1 << 8;
/** Three runs joined by single ".", "/" or "-": d.m.y dates. */
export const D_SEP3 = 1 << 9;
/** Three runs joined by single "/": m/d/y dates. */
export const D_SLASH3 = 1 << 10;
/** Runs joined by "/", "-", "/" in turn: the second date of a range ("10/15-10/16"). */
export const D_RANGE = 1 << 11;
/** A run of one or two digits, an optional st/nd/rd/th, white space, an optional "of", a month's first two letters. */
export const D_DAY_MONTH = 1 << 12;
/** A run of two digits right after an apostrophe: a year ("'09"). */
export const D_APOSTROPHE = 1 << 13;
/** 9x or 10x / 11x, then white space or hyphens and a "y": an age over 89 ("92 yo", "101-year-old"). */
export const D_AGE = 1 << 14;
/** A run of exactly five digits: a ZIP code. */
export const D_FIVE = 1 << 15;
/** A run of seven digits or more: an ID number. */
export const D_SEVEN = 1 << 16;
/**
 * A run of one to six digits, an optional ASCII letter, one or two white-space characters, then a digit or a capital
 * (any letter outside ASCII counts): a house number before a street's name ("12 Main St", "4B Elm Road").
 */
export const D_HOUSE = 1 << 17;
/**
 * A run after one or two white-space characters and a street word's suffix ("Puruntie 82"): exactly where ./gates.ts
 * streetNumberGate's regex matches (its digit follows white space, so it starts a run). Tested here at each run after
 * white space, the street-word pattern's gate costs no pass of its own over the text (a regex tried at every digit of
 * a note: ~1.5 % of the detector on PhysioNet).
 */
export const D_STREET = 1 << 18;

/** A letter (any script), full stop or hyphen: what may continue the street-word pattern's word before "via". */
const WORD_UNIT_BEFORE = /(?<=[\p{L}.-])/uy;
/**
 * Before the run at `s` (after white space): the word "via" alone (any ASCII case, after no letter, full stop or hyphen),
 * then one or two white-space characters. The street-word pattern rejects that word ("access via 2 PIVs"; its `valid`),
 * and a longer word ending in "via" would continue past its "v", so no match the pattern keeps ends there: D_STREET
 * is not set for it (1 MB of "1 via " ran the pattern to ~175 K rejected matches).
 */
function viaAlone(text: string, s: number): boolean {
  let k = s - 1;
  if (k > 0 && isWs(text.charCodeAt(k - 1))) k--;
  const v = k - 3;
  if (v < 0 || (text.charCodeAt(v) | 32) !== 118 || (text.charCodeAt(v + 1) | 32) !== 105 || (text.charCodeAt(v + 2) | 32) !== 97) return false;
  if (v === 0) return true;
  const b = text.charCodeAt(v - 1);
  if (b < 128) return !((b >= 97 && b <= 122) || (b >= 65 && b <= 90) || b === 46 || b === 45);
  WORD_UNIT_BEFORE.lastIndex = v;
  return !WORD_UNIT_BEFORE.test(text);
}

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** The D_* bits of `text` (0 for a text without digits). */
export function digitShapes(text: string): number {
  const d = DIGIT_SHAPES.reset();
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) {
      i++;
      continue;
    }
    const s = i;
    i++;
    while (i < n && isDigit(text.charCodeAt(i))) i++;
    d.run(text, s, i);
  }
  return d.bits;
}

/**
 * The D_* bits of a text, gathered from its digit runs in order ({@link run} on each maximal run), so that a scan that
 * reads the text for something else (./prefilter.ts StartIndex) can gather them on the way.
 */
export class DigitShapes {
  bits = 0;
  /** The previous run's end (exclusive) and length. */
  #pe = -2;
  #pL = 0;
  /** Links (two runs with one character between them) in a row ending at the last run: of "." / ".", "/" or "-" / "/" / " " or ".". */
  #dots = 0;
  #seps = 0;
  #slashes = 0;
  #spaceDots = 0;
  /**
   * The current chain of runs joined by single spaces or hyphens: bit k of `#starts` is set when k digits of the chain
   * came after the start of a run that may start an account number (after no `[\w.-]`), k < 32.
   */
  #starts = 0;
  /** The characters of the previous two links of the current chain (0: none). */
  #sep1 = 0;
  #sep2 = 0;

  /** Starts a text. */
  reset(): this {
    this.bits = 0;
    this.#pe = -2;
    this.#pL = 0;
    this.#dots = this.#seps = this.#slashes = this.#spaceDots = this.#starts = this.#sep1 = this.#sep2 = 0;
    return this;
  }

  /** Adds the maximal run of digits `text[s, i)` (after every run before it). */
  run(text: string, s: number, i: number): void {
    const n = text.length;
    let bits = this.bits;
    const pe = this.#pe;
    const pL = this.#pL;
    const L = i - s;
    const gap = s - pe;
    if (gap === 1) {
      const sep = text.charCodeAt(pe);
      const dots = (this.#dots = sep === 46 ? this.#dots + 1 : 0);
      const seps = (this.#seps = sep === 46 || sep === 47 || sep === 45 ? this.#seps + 1 : 0);
      const slashes = (this.#slashes = sep === 47 ? this.#slashes + 1 : 0);
      const spaceDots = (this.#spaceDots = sep === 32 || sep === 46 ? this.#spaceDots + 1 : 0);
      // a space continues the chain and the run may start a number; a hyphen continues it only
      if (sep === 32) this.#starts |= 1;
      else if (sep !== 45) this.#starts = s > 0 && notAccountBefore(text.charCodeAt(s - 1)) ? 1 : 0;
      if (sep === 45) {
        bits |= D_HYPHEN;
        if (pL === 3 && L === 2) bits |= D_SSN;
        if (pL === 6 && L === 4) bits |= D_3_7;
      } else if (sep === 47) {
        bits |= D_SLASH;
        if (this.#sep1 === 45 && this.#sep2 === 47) bits |= D_RANGE;
      }
      if (pL === 3 && L === 7 && (sep === 32 || sep === 45)) bits |= D_3_7;
      if (dots >= 3) bits |= D_DOTS3;
      if (seps >= 2) bits |= D_SEP3;
      if (slashes >= 2) bits |= D_SLASH3;
      if (spaceDots >= 2) bits |= D_GROUPED;
      this.#sep2 = this.#sep1;
      this.#sep1 = sep;
    } else {
      this.#dots = this.#seps = this.#slashes = this.#spaceDots = 0;
      this.#starts = s === 0 || notAccountBefore(text.charCodeAt(s - 1)) ? 1 : 0;
      this.#sep1 = this.#sep2 = 0;
    }
    // the run's digits: every start so far is L digits further back
    this.#starts = L >= 32 ? 0 : this.#starts << L;
    // a number may end here (no [\w-] after the run) when some start is 12 to 19 digits back
    if ((this.#starts & 0xff000) !== 0 && (i === n || notAccountAfter(text.charCodeAt(i)))) bits |= D_ACCOUNT;
    if (pL === 3 && L === 4 && gap <= 3) bits |= D_NANP;
    if (L === 5) bits |= D_FIVE;
    else if (L >= 7) bits |= D_SEVEN;
    if (s > 0) {
      const b = text.charCodeAt(s - 1);
      if (b === 43) bits |= D_PLUS;
      else if (L === 2 && (b === 39 || b === 0x2019)) bits |= D_APOSTROPHE;
    }
    if (L <= 3 && (bits & (D_AGE | D_DAY_MONTH)) !== (D_AGE | D_DAY_MONTH)) {
      const d0 = text.charCodeAt(s);
      if ((L === 2 && d0 === 57) || (L === 3 && d0 === 49 && (text.charCodeAt(s + 1) === 48 || text.charCodeAt(s + 1) === 49))) {
        // the age pattern's look-ahead: \s?-?\s?(?:y...|-year-old), so a "y" after at most four blanks and hyphens
        let k = i;
        while (k < n && k - i < 4 && (text.charCodeAt(k) === 45 || isWs(text.charCodeAt(k)))) k++;
        if (k < n && (text.charCodeAt(k) | 32) === 121) bits |= D_AGE;
      }
      if (L <= 2 && dayMonthAt(text, i)) bits |= D_DAY_MONTH;
    }
    if (L <= 6 && (bits & D_HOUSE) === 0 && houseNumberAt(text, i)) bits |= D_HOUSE;
    if ((bits & D_STREET) === 0 && s > 0 && isWs(text.charCodeAt(s - 1)) && streetSuffixBefore(text, s) && !viaAlone(text, s)) {
      STREET_NUMBER_AT.lastIndex = s;
      if (STREET_NUMBER_AT.test(text)) bits |= D_STREET;
    }
    this.bits = bits;
    this.#pe = i;
    this.#pL = L;
  }
}
/** The shapes of the text being scanned (detection is synchronous). */
export const DIGIT_SHAPES = new DigitShapes();

/** `c` may come before an account number: not `[\w.-]`. */
const notAccountBefore = (c: number): boolean => !((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 46 || c === 45);
/** `c` may come after an account number: not `[\w-]`. */
const notAccountAfter = (c: number): boolean => !((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45);

/**
 * After a run of one or two digits ending at `e`: what the day-month pattern needs there, `(?:st|nd|rd|th)?\s{1,2}
 * (?:of\s{1,2})?` and the first two letters of a month (ASCII, any case: the pattern has the `i` flag and no `u`).
 */
function dayMonthAt(text: string, e: number): boolean {
  const n = text.length;
  let j = e;
  if (j < n && !isWs(text.charCodeAt(j))) {
    // an ordinal suffix (the pattern needs white space right after the digits or after the suffix)
    if (j + 1 >= n) return false;
    const a = text.charCodeAt(j) | 32;
    const b = text.charCodeAt(j + 1) | 32;
    if (!((a === 115 && b === 116) || (a === 110 && b === 100) || (a === 114 && b === 100) || (a === 116 && b === 104))) return false;
    j += 2;
  }
  const k = skipBlanks(text, j);
  if (k === j) return false;
  if (monthLead(text, k)) return true;
  // "of" and one or two white-space characters
  if (k + 1 < n && (text.charCodeAt(k) | 32) === 111 && (text.charCodeAt(k + 1) | 32) === 102) {
    const m = skipBlanks(text, k + 2);
    return m > k + 2 && monthLead(text, m);
  }
  return false;
}

/** After a run of digits ending at `e`: `[A-Za-z]?\s{1,2}[\p{Lu}\d]` (any character outside ASCII taken for a capital). */
function houseNumberAt(text: string, e: number): boolean {
  let j = e;
  if (j < text.length && ((text.charCodeAt(j) | 32) >= 97 && (text.charCodeAt(j) | 32) <= 122)) j++;
  const k = skipBlanks(text, j);
  if (k === j || k >= text.length) return false;
  const c = text.charCodeAt(k);
  return (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c >= 128;
}

/** Past at most two white-space characters from `j`. */
function skipBlanks(text: string, j: number): number {
  let k = j;
  while (k < text.length && k - j < 2 && isWs(text.charCodeAt(k))) k++;
  return k;
}

/** `text[k, k + 2)` is the start of an English month name, any ASCII case (ja fe ma ap ju au se oc no de). */
function monthLead(text: string, k: number): boolean {
  if (k + 1 >= text.length) return false;
  const a = text.charCodeAt(k) | 32;
  const b = text.charCodeAt(k + 1) | 32;
  switch (a) {
    case 106:
      return b === 97 || b === 117; // ja ju
    case 102:
      return b === 101; // fe
    case 109:
      return b === 97; // ma
    case 97:
      return b === 112 || b === 117; // ap au
    case 115:
      return b === 101; // se
    case 111:
      return b === 99; // oc
    case 110:
      return b === 111; // no
    case 100:
      return b === 101; // de
    default:
      return false;
  }
}
