/**
 * Start-position prefilter of the pattern recognizers (./patterns.ts): most keyword patterns (`\b(?:jan|feb|...)`,
 * `\b(?:mrn|acct|...)`) can only start at a few positions of a text. One char-code pass finds, for every pattern with a
 * {@link StartRule}, the positions where a match may start (its first two characters and the character before), and
 * the pattern then runs as a sticky regex at those positions only, instead of a global regex over the whole text.
 *
 * Equivalence: a rule is a necessary condition on a match's start, so the candidates include every position where the
 * global regex could match; trying them in increasing order from the global regex's `lastIndex` finds the same
 * leftmost match each time (the sticky regex at a position matches exactly what the global one matches there).
 *
 * Cost: one pass of about one table lookup per UTF-16 unit (~1-2 µs per KB), then one sticky `exec` (~0.1 µs) per
 * candidate.
 */
import { digitShapes, type DigitShapes } from "./digits.js";

const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** Where a pattern's match may start. */
export interface StartRule {
  /**
   * Tested on the first two characters of a possible match (`text[p] + text[p + 1]`): must be true for every match.
   * A second character outside ASCII (or the end of the text) always passes.
   */
  lead: RegExp;
  /** Required of the character before: "alnum" not [A-Za-z0-9] (a `\b` or a `(?<![\w...])`), "digit" not [0-9], "any". */
  prev: "alnum" | "digit" | "any";
  /**
   * The regex has the `iu` flags, under which "ſ" (U+017F) matches "s" and the Kelvin sign (U+212A) "k": every such
   * character is a candidate too.
   */
  fold?: boolean;
  /**
   * A further necessary condition on a match's start (built by {@link threeLead}), tested by char codes at each
   * candidate before the sticky regex runs there. It does not narrow the candidate lists (patterns with the same rule
   * share one list), and a pattern's own `narrow` is its own: the rule's key leaves it out.
   */
  narrow?: (text: string, at: number) => boolean;
}

const lowerAscii = (c: number): number => (c >= 65 && c <= 90 ? c + 32 : c);
/**
 * A {@link StartRule.narrow} from the first three characters of every match, in any ASCII case: `prefixes` of three
 * characters (a letter stands for both cases, any other character for itself), or of two where the third is free. It
 * passes a position whose first three characters are not all ASCII (an `iu` regex matches "s" at "ſ" and "k" at the
 * Kelvin sign), one less than three characters before the end, and one whose first two no prefix starts. A regex
 * that fails at once still costs its call: 1 MB of "Dr. " was a candidate of the address cues ("drops you off at") and
 * of the record-number cues ("driver's licence") at every "Dr".
 */
export function threeLead(prefixes: readonly string[]): (text: string, at: number) => boolean {
  // pair (lower case) -> its slot, -1 none; per slot four words: the 128 allowed third characters (lower case)
  const slot = new Int16Array(128 * 128).fill(-1);
  const words: number[] = [];
  for (const p of prefixes) {
    if (p.length < 2 || p.length > 3 || [...p].some((ch) => ch.charCodeAt(0) >= 128)) throw new Error(`threeLead: two or three ASCII characters: ${p}`);
    const key = lowerAscii(p.charCodeAt(0)) * 128 + lowerAscii(p.charCodeAt(1));
    let k = slot[key]!;
    if (k < 0) {
      k = slot[key] = words.length / 4;
      words.push(0, 0, 0, 0);
    }
    if (p.length === 2) words.fill(-1, k * 4, k * 4 + 4);
    else {
      const c = lowerAscii(p.charCodeAt(2));
      words[k * 4 + (c >> 5)]! |= 1 << (c & 31);
    }
  }
  const allowed = Int32Array.from(words);
  return (text: string, at: number): boolean => {
    if (at + 2 >= text.length) return true;
    const a = text.charCodeAt(at);
    const b = text.charCodeAt(at + 1);
    const c = text.charCodeAt(at + 2);
    if ((a | b | c) >= 128) return true;
    const k = slot[lowerAscii(a) * 128 + lowerAscii(b)]!;
    if (k < 0) return true;
    const l = lowerAscii(c);
    return ((allowed[k * 4 + (l >> 5)]! >>> (l & 31)) & 1) === 1;
  };
}

/**
 * The start rule of a pattern whose every match begins with one of `prefixes` (as for {@link threeLead}) after a
 * non-alphanumeric character: its `lead` (the prefixes' first two characters, in the order given, any ASCII case) and
 * its `narrow` ({@link threeLead}) from the one list. `fold`: see {@link StartRule.fold}.
 */
export function prefixRule(prefixes: readonly string[], fold?: true): StartRule {
  const pairs = [...new Set(prefixes.map((p) => p.slice(0, 2)))];
  const escaped = pairs.map((p) => p.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&"));
  return { lead: new RegExp(`^(?:${escaped.join("|")})`, "i"), prev: "alnum", ...(fold && { fold }), narrow: threeLead(prefixes) };
}

/** Rules with the same key are the same condition: the patterns with them share one bit of a {@link StartIndex}. */
export const ruleKey = (r: StartRule): string => `${r.lead.source}/${r.lead.flags}/${r.prev}/${r.fold === true}`;

/** The candidate start positions of up to 31 rules, found in one pass. */
export class StartIndex {
  readonly #rules: readonly StartRule[];
  /** (c0 * 129 + c1) -> bits of the rules whose lead allows c0 c1 (c1 = 128: outside ASCII or end of text). */
  #pair: Uint32Array | undefined;
  #alnumBits = 0;
  #digitBits = 0;
  #foldBits = 0;

  constructor(rules: readonly StartRule[]) {
    if (rules.length > 31) throw new Error("StartIndex: at most 31 rules");
    this.#rules = rules;
    rules.forEach((r, b) => {
      if (r.prev === "alnum") this.#alnumBits |= 1 << b;
      else if (r.prev === "digit") this.#digitBits |= 1 << b;
      if (r.fold) this.#foldBits |= 1 << b;
    });
  }

  /**
   * The pair table, built on first use: each rule's lead runs as one global regex per first character over the 128
   * two-character strings that start with it (joined with a separator), ~3,000 short scans, a few ms once per process.
   */
  #table(): Uint32Array {
    if (this.#pair) return this.#pair;
    const pair = new Uint32Array(128 * 129);
    const leads = this.#rules.map((r) => {
      if (!r.lead.source.startsWith("^")) throw new Error(`StartIndex: a lead must start with ^: ${r.lead.source}`);
      const flags = r.lead.flags.replace(/[gy]/g, "");
      return { all: new RegExp(r.lead.source.slice(1), flags + "g"), alone: new RegExp(r.lead.source, flags) };
    });
    const probes = ["\u00a0", "\u00fa", "\u2028", "\u3000", "\ufeff"];
    for (let c0 = 0; c0 < 128; c0++) {
      const first = String.fromCharCode(c0);
      // c0 c1 SEP for every ASCII c1: a match at index 3k is a match of the lead at the pair (c0, k)
      const parts: string[] = [];
      for (let c1 = 0; c1 < 128; c1++) parts.push(first, String.fromCharCode(c1), "\uffff");
      const all = parts.join("");
      leads.forEach(({ all: re, alone }, b) => {
        let any = false;
        re.lastIndex = 0;
        for (let m = re.exec(all); m !== null; m = re.exec(all)) {
          if (m[0].length === 0) re.lastIndex++;
          if (m.index % 3 !== 0) continue;
          pair[c0 * 129 + m.index / 3]! |= 1 << b;
          any = true;
        }
        // a non-ASCII second character or the end of the text: allowed whenever the first character can start a match
        if (any || alone.test(first) || probes.some((x) => alone.test(first + x))) pair[c0 * 129 + 128]! |= 1 << b;
      });
    }
    // candidates are word starts only when every rule wants no letter or digit before it and starts with one
    let others = 0;
    for (let c0 = 0; c0 < 128; c0++) {
      const alnum = (c0 >= 48 && c0 <= 57) || (c0 >= 65 && c0 <= 90) || (c0 >= 97 && c0 <= 122);
      if (!alnum) for (let c1 = 0; c1 <= 128; c1++) others |= pair[c0 * 129 + c1]!;
    }
    this.#wordStartsOnly = others === 0 && this.#rules.every((r) => r.prev === "alnum");
    this.#pair = pair;
    return pair;
  }

  /**
   * The candidate start positions of all rules, ascending: `pos[i]` and the bits of the rules that may start there,
   * `mask[i]`, for `i < n`. The arrays are reused by the next call (a detector's `detect` does not reenter).
   */
  scan(text: string, digits?: DigitShapes): Candidates {
    const pair = this.#table();
    if (this.#wordStartsOnly) return this.#scanWordStarts(text, pair, digits);
    if (digits) digits.reset().bits = digitShapes(text);
    const alnumBits = this.#alnumBits;
    const digitBits = this.#digitBits;
    const foldBits = this.#foldBits;
    const n = text.length;
    let pos = this.#out.pos;
    let mask = this.#out.mask;
    let k = 0;
    let prevAlnum = false;
    let prevDigit = false;
    let c = n > 0 ? text.charCodeAt(0) : 0;
    for (let p = 0; p < n; p++) {
      const c1raw = p + 1 < n ? text.charCodeAt(p + 1) : 128;
      if (c < 128) {
        let m = pair[c * 129 + (c1raw < 128 ? c1raw : 128)]!;
        if (m !== 0) {
          if (prevAlnum) m &= ~alnumBits;
          if (prevDigit) m &= ~digitBits;
          if (m !== 0) {
            if (k === pos.length) [pos, mask] = [grow(pos), grow(mask)];
            pos[k] = p;
            mask[k++] = m;
          }
        }
        prevDigit = c >= 48 && c <= 57;
        prevAlnum = prevDigit || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
      } else {
        if ((c === 0x17f || c === 0x212a) && foldBits !== 0) {
          if (k === pos.length) [pos, mask] = [grow(pos), grow(mask)];
          pos[k] = p;
          mask[k++] = foldBits;
        }
        prevAlnum = false;
        prevDigit = false;
      }
      c = c1raw;
    }
    this.#out = { n: k, pos, mask };
    return this.#out;
  }

  /**
   * {@link scan} when every rule needs a non-alphanumeric character before it and starts with a letter or digit (the
   * detector's rules): only word starts can be candidates, so a character inside a word costs one char-code test.
   * With `digits`, also gathers the shapes of the text's digit runs (./digits.ts), each run read once.
   */
  #scanWordStarts(text: string, pair: Uint32Array, digits: DigitShapes | undefined): Candidates {
    const foldBits = this.#foldBits;
    const n = text.length;
    let pos = this.#out.pos;
    let mask = this.#out.mask;
    let k = 0;
    let prevAlnum = false;
    digits?.reset();
    for (let p = 0; p < n; p++) {
      const c = text.charCodeAt(p);
      if (c >= 48 && c <= 57 && digits !== undefined) {
        // a run of digits: a candidate at its start after no letter or digit, and its shape
        let e = p + 1;
        while (e < n && isDigit(text.charCodeAt(e))) e++;
        if (!prevAlnum) {
          const c1 = p + 1 < n ? text.charCodeAt(p + 1) : 128;
          const m = pair[c * 129 + (c1 < 128 ? c1 : 128)]!;
          if (m !== 0) {
            if (k === pos.length) [pos, mask] = [grow(pos), grow(mask)];
            pos[k] = p;
            mask[k++] = m;
          }
        }
        prevAlnum = true;
        digits.run(text, p, e);
        p = e - 1;
        continue;
      }
      if ((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57)) {
        if (prevAlnum) continue;
        prevAlnum = true;
        const c1 = p + 1 < n ? text.charCodeAt(p + 1) : 128;
        const m = pair[c * 129 + (c1 < 128 ? c1 : 128)]!;
        if (m !== 0) {
          if (k === pos.length) [pos, mask] = [grow(pos), grow(mask)];
          pos[k] = p;
          mask[k++] = m;
        }
        continue;
      }
      prevAlnum = false;
      if ((c === 0x17f || c === 0x212a) && foldBits !== 0) {
        if (k === pos.length) [pos, mask] = [grow(pos), grow(mask)];
        pos[k] = p;
        mask[k++] = foldBits;
      }
    }
    this.#out = { n: k, pos, mask };
    return this.#out;
  }

  /**
   * For a scan of the text's words that lists the candidates itself (./tokens.ts nameContext): the pair table and the
   * reused output arrays, emptied; undefined unless candidates are word starts only (then the scan must find what
   * {@link scan} finds). Hand the filled sink back with {@link takeSink}.
   */
  wordStartSink(): WordStartSink | undefined {
    const pair = this.#table();
    if (!this.#wordStartsOnly) return undefined;
    return { pair, foldBits: this.#foldBits, n: 0, pos: this.#out.pos, mask: this.#out.mask };
  }

  /** The candidates a scan put in `sink` (from {@link wordStartSink}), as {@link scan} gives them. */
  takeSink(sink: WordStartSink): Candidates {
    this.#out = { n: sink.n, pos: sink.pos, mask: sink.mask };
    return this.#out;
  }

  /** Every rule is "alnum" and no lead starts with a character other than an ASCII letter or digit (set by #table). */
  #wordStartsOnly = false;

  #out: Candidates = { n: 0, pos: new Int32Array(1024), mask: new Int32Array(1024) };
}

/**
 * Where another scan lists word-start candidates (see {@link StartIndex.wordStartSink}): position p with first characters
 * c0 c1 (c1 = 128 past the end or outside ASCII) is a candidate of the rules `pair[c0 * 129 + c1]` when it is an ASCII
 * letter or digit after no ASCII letter or digit; a "ſ" or Kelvin sign is one of the rules `foldBits` (when not 0).
 * `pos` and `mask` may be replaced by longer arrays; `n` is the count.
 */
export interface WordStartSink {
  pair: Uint32Array;
  foldBits: number;
  n: number;
  pos: Int32Array;
  mask: Int32Array;
}

/** Candidate start positions (see {@link StartIndex.scan}). */
export interface Candidates {
  n: number;
  pos: Int32Array;
  mask: Int32Array;
}

/**
 * Candidate positions grouped by rule ({@link byRule}): rule `b`'s positions, ascending, are `pos[from[b]]` up to
 * `pos[from[b + 1] - 1]`. A pattern then visits its own candidates only, instead of every candidate of every rule.
 */
export interface RuleLists {
  from: Int32Array;
  pos: Int32Array;
}

let listsOut: RuleLists = { from: new Int32Array(33), pos: new Int32Array(1024) };

/**
 * `c` grouped by rule (a counting sort over the set bits of each mask; positions keep their order). The arrays are
 * reused by the next call, like those of {@link StartIndex.scan}.
 */
export function byRule(c: Candidates): RuleLists {
  const { n, pos, mask } = c;
  const from = listsOut.from;
  from.fill(0);
  // the two long loops are functions of their own: in one function, V8 compiled the first on stack replacement
  // (a megabyte of candidates) before the code after it had run, and deoptimised it there on every such text
  // ("insufficient type feedback"; ~150 times per megabyte-sized call of the bench's adversarial inputs)
  const total = countByRule(n, mask, from);
  for (let b = 0; b < 32; b++) from[b + 1]! += from[b]!;
  let out = listsOut.pos;
  if (out.length < total) out = new Int32Array(Math.max(total, out.length * 2));
  // fill with a moving cursor per rule (cursor[b] starts at from[b])
  const cursor = CURSOR;
  cursor.set(from.subarray(0, 32));
  fillByRule(n, pos, mask, out, cursor);
  listsOut = { from, pos: out };
  return listsOut;
}
const CURSOR = new Int32Array(32);

/** Counts the candidates of each rule (rule b's in `from[b + 1]`); returns their sum. */
function countByRule(n: number, mask: Int32Array, from: Int32Array): number {
  let total = 0;
  for (let i = 0; i < n; i++) {
    for (let m = mask[i]!; m !== 0; m &= m - 1) {
      from[31 - Math.clz32(m & -m) + 1]!++;
      total++;
    }
  }
  return total;
}

/** Writes each candidate's position at the cursor of each of its rules. */
function fillByRule(n: number, pos: Int32Array, mask: Int32Array, out: Int32Array, cursor: Int32Array): void {
  for (let i = 0; i < n; i++) {
    const p = pos[i]!;
    for (let m = mask[i]!; m !== 0; m &= m - 1) out[cursor[31 - Math.clz32(m & -m)]!++] = p;
  }
}

/** A copy of `a` twice as long. */
export function grow(a: Int32Array): Int32Array {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
