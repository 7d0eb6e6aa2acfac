/**
 * Free-form street addresses: international house-number runs, runs after an address phrase, and the short lines
 * (city, region, postcode) that follow a street line.
 */
import type { Found } from "./entities.js";
import { NOT_ADDR_AFTER_NUM } from "./patterns.js";
import type { WordSet } from "./lexicon.js";
import { isUpper } from "./text.js";

// ---------------------------------------------------------------------------------------------
// Free-form street addresses (international): a house number followed by street words and another
// number, a street suffix or a unit ("28245 Puruntie 82 Apt. 595"), or any address-like run after an
// address phrase ("lives at", "address is", "corner of"). Runs are consumed with a sticky token regex.

const ADDR_TRIGGER =
  /\b(?:address(?:es)?(?: is)?(?: here they are)?|lives (?:at|on)|live (?:at|on)|living at|located at|office is at|offices are located at|is at|is on|(?:sent|send(?: it| a new one)?|deliver(?:ed)?|mail(?:ed)?|return|moved|move) to|corner of|meet (?:me|you) at|stop at|drops? you off at|arrived at|enter on|north side of|south side of|address to|address with|it is|in)\s?:?\s{1,6}/giu;
const ADDR_NUM_START = /(?<![\w.,/:+-])\d{1,6}(?:\s\d{1,6})?\s(?=[\p{Lu}]|(?:ul|rue|rua|rúa|avenida|avda|calle|via|viale|str|út|utca|ulica|strada|aleja|trg)\b)/gu;
const ADDR_TOKEN =
  /(?:[ \t]{0,4}|,[ \t]{0,4}|\n[ \t>?]{0,6}|\n,[ \t]{0,4})(?:[\p{Lu}][\p{L}\p{M}'’.-]*|\d{1,6}[A-Za-z]?(?:-\d{1,4})?|(?:apt|apartment|suite|ste|unit|box|postbox|p\.o\.|po)\b\.?|(?:and|de|du|del|dei|der|van|von|u|ul|str|st|la|le|do|da|di|dos|das|y|of|the|corner|street|road|avenue|lane|drive|place|square|terrace|way|court)\b\.?|\((?:[\p{Lu}][\p{L}]*)\)|[\p{Ll}][\p{L}\p{M}'’-]{0,30}\.?)/uy;
const ADDR_SUFFIX = /^(?:út|ul|avda|aleja|põik|iela|gatve|street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|way|place|pl|terrace|sq|square|squares|loop|pass|club|union|strasse|straße|str|vej|katu|kuja|tie|rua|rue|via|vicolo|calle|gate|gata|gatan|vegen|veien|terrasse|trg|kapu|útja|utca|ulica|avenida|rúa|praia|plaza|piazza|allee|gasse|weg|laan|straat)\.?$/i;
const UNIT_WORD = /^(?:apt|apartment|suite|ste|unit|box|postbox|p\.o\.|po)\.?$/i;

/** Share of upper-case letters among the first 2,000 letters (clinical notes are often all caps). */
function upperShare(text: string): number {
  let up = 0;
  let letters = 0;
  for (let i = 0; i < text.length && letters < 2000; i++) {
    const c = text.charCodeAt(i);
    if (c >= 65 && c <= 90) {
      up++;
      letters++;
    } else if (c >= 97 && c <= 122) letters++;
  }
  return letters === 0 ? 0 : up / letters;
}

/** What {@link scanAddresses} needs to know of one address token; depends only on the text and the position. */
interface AddrToken {
  /** Index just past the token (the sticky regex's lastIndex). */
  next: number;
  /** Begins with a separator (space, comma or line break). */
  sep: boolean;
  /** Contains a line break. */
  nl: boolean;
  /** A number ... */
  num: boolean;
  /** ... followed by a unit or dose word ("5 mg", "3 days"): not an address. */
  numStop: boolean;
  /** A capitalised common word in all-capital text: ends the run. */
  upperCommonStop: boolean;
  /** Counts as a street word. */
  cap: boolean;
  suffix: boolean;
  unit: boolean;
  /** A lower-case word that is not a connector, unit or suffix. */
  lowerWord: boolean;
  /** ... and a common word. */
  lowerCommon: boolean;
  /** Ends a sentence (a word with a full stop, not an abbreviation of the address, before white space). */
  sentenceEnd: boolean;
  /** Starts with a capital, digit or parenthesis. */
  strong: boolean;
  /** A lower-case word a run may end on once it has lower-case words. */
  lowerEndable: boolean;
}

export function scanAddresses(text: string, found: Found[], common: WordSet): void {
  const upperText = upperShare(text) > 0.5;
  // Estonian "tee" (road) only in lower case: upper-case "TEE" is a transesophageal echo
  const isSuffix = (tok: string) => ADDR_SUFFIX.test(tok) || tok === "tee";
  // Candidate runs overlap (every house number starts one and each reads up to 24 tokens), so each position's token is
  // read and classified once per text: text made of candidates ("1 via 1 via ...") costs no more than 24 map lookups each.
  // at[pos]: 0 not read yet, -1 no token there, k the token tokens[k - 1]; allocated on the first read
  let at: Int32Array | undefined;
  const tokens: AddrToken[] = [];
  const tokenAt = (pos: number): AddrToken | null => {
    at ??= new Int32Array(text.length + 1);
    const k = at[pos]!;
    if (k !== 0) return k < 0 ? null : tokens[k - 1]!;
    ADDR_TOKEN.lastIndex = pos;
    const m = ADDR_TOKEN.exec(text);
    if (m === null || m[0].length === 0) {
      at[pos] = -1;
      return null;
    }
    const raw = m[0];
    const next = ADDR_TOKEN.lastIndex;
    const tok = raw.replace(/^[\s,>?]+/, "");
    const suffix = isSuffix(tok);
    const unit = UNIT_WORD.test(tok);
    const num = /^\d/.test(tok);
    const upper = !num && /^[\p{Lu}]/u.test(tok);
    const lowerStart = /^[\p{Ll}]/u.test(tok);
    const core = tok.replace(/[.'’-]+$/, "");
    const lowerWord = lowerStart && !unit && !suffix && !/^(?:and|de|du|del|dei|der|van|von|u|ul|str|st|la|le|do|da|di|dos|das|y|of|the|corner|na)\.?$/.test(tok);
    const t: AddrToken = {
      next,
      sep: /^[\s,]/.test(raw),
      nl: raw.includes("\n"),
      num,
      numStop: num && NOT_ADDR_AFTER_NUM.test(text.slice(next).trimStart()),
      upperCommonStop: upper && upperText && !suffix && !unit && common.has(tok.toLowerCase().replace(/[.'’]+$/, "")),
      // street words are capitalised words; an all-capital acronym (PEEP, PSV) counts only in all-capital text
      cap: upper && ((core.length >= 3 && !common.has(core.toLowerCase()) && (upperText || !isUpper(core))) || suffix),
      suffix,
      unit,
      lowerWord,
      lowerCommon: lowerWord && common.has(tok.toLowerCase().replace(/[.'’]+$/, "")),
      sentenceEnd: tok.endsWith(".") && tok.length > 3 && !unit && !suffix && /^\s/.test(text.slice(next, next + 1)),
      strong: /^[\p{Lu}\d(]/u.test(tok),
      lowerEndable: lowerStart && !/^(?:and|de|of|the|na|y)$/.test(tok),
    };
    at[pos] = tokens.push(t);
    return t;
  };
  const tryRun = (start: number, triggered: boolean): number => {
    let pos = start;
    let end = start;
    let caps = 0;
    let nums = 0;
    let suffix = false;
    let unit = false;
    let count = 0;
    let lines = 0;
    let lower = 0;
    let endBeforeLower = -1;
    let statsBeforeLower = { caps: 0, nums: 0, suffix: false, unit: false };
    let t: AddrToken | null;
    while (count < 24 && (t = tokenAt(pos)) !== null) {
      if (pos !== start && !t.sep) break; // tokens are separated
      pos = t.next;
      if (t.nl && ++lines > 4) break;
      if (t.num) {
        nums++;
        if (t.numStop) break;
      } else if (t.upperCommonStop) break;
      if (t.cap) caps++;
      if (t.unit) unit = true;
      if (t.suffix) suffix = true;
      if (t.lowerWord) {
        // a lower-case word: part of an address only in lower-case addresses ("3911 fourth avenue suite 112 calgary")
        if (lower === 0) {
          endBeforeLower = end;
          statsBeforeLower = { caps, nums, suffix, unit };
        }
        if (t.lowerCommon && (lower > 0 || !suffix)) break;
        lower++;
        if (lower > 6) break;
      }
      count++;
      // a sentence ends at a word with a full stop that is not an abbreviation of the address
      if (t.sentenceEnd) {
        if (t.strong) end = pos - 1;
        break;
      }
      // do not end on a connector word
      if (t.strong || t.unit || t.suffix || (lower > 0 && t.lowerEndable)) end = pos;
    }
    if (end <= start) return start;
    if (lower > 0 && !(suffix && nums >= 1 && (nums >= 2 || unit || triggered))) {
      // not a lower-case address: keep the run up to its first lower-case word
      if (endBeforeLower <= start) return start;
      end = endBeforeLower;
      ({ caps, nums, suffix, unit } = statsBeforeLower);
      lower = 0;
    }
    const first = text.slice(start, end);
    if (triggered) {
      if ((caps >= 1 || suffix) && (nums >= 1 || caps >= 2 || suffix)) return end;
      return start;
    }
    const afterNum = text.slice(start).replace(/^\d{1,6}(?:\s\d{1,6})?\s/, "");
    if (NOT_ADDR_AFTER_NUM.test(afterNum)) return start;
    if (upperText ? caps >= 1 && (suffix || unit) : (caps >= 1 || (suffix && lower > 0)) && (suffix || unit || (nums >= 2 && caps >= 2)) && first.length > 6) return end;
    return start;
  };
  ADDR_NUM_START.lastIndex = 0;
  let m: RegExpExecArray | null;
  let covered = 0;
  while ((m = ADDR_NUM_START.exec(text)) !== null) {
    if (m.index < covered) continue;
    const e = tryRun(m.index, false);
    if (e > m.index) {
      found.push({ s: m.index, e, type: "ADDRESS" });
      covered = e;
      ADDR_NUM_START.lastIndex = e;
    }
  }
  ADDR_TRIGGER.lastIndex = 0;
  while ((m = ADDR_TRIGGER.exec(text)) !== null) {
    const s = m.index + m[0].length;
    const trig = m[0].toLowerCase().replace(/[\s:]+$/, "");
    const weak = trig === "in" || trig === "it is" || trig === "is at" || trig === "is on";
    if (upperText && weak) continue;
    const e = tryRun(s, !weak);
    if (e > s) {
      const corner = /corner of\s{1,6}$/i.exec(m[0]);
      // "the corner of X and Y" is the address, article included
      const the = corner && /(?:^|[^\p{L}\d])the\s$/iu.test(text.slice(Math.max(0, m.index - 5), m.index)) ? 4 : 0;
      found.push({ s: corner ? m.index - the : s, e, type: "ADDRESS" });
    }
  }
}

/** A street line followed by short lines (city, region, country + postcode) is one address. */
export function addressLines(text: string, found: Found[]): void {
  const streets = found.filter((f) => f.type === "ADDRESS");
  for (const a of streets) {
    let end = a.e;
    for (let k = 0; k < 4; k++) {
      const nl = text.indexOf("\n", end);
      if (nl < 0 || nl - end > 30) break;
      if (/\S/.test(text.slice(end, nl)) && !/^[\s,]*(?:[\p{L}\d.'-]+\s?){0,4}$/u.test(text.slice(end, nl))) break;
      let lineEnd = text.indexOf("\n", nl + 1);
      if (lineEnd < 0) lineEnd = text.length;
      const line = text.slice(nl + 1, lineEnd);
      if (line.trim().length === 0 || line.length > 40 || /[:?!]|\.\s|@|https?:/.test(line)) break;
      end = lineEnd;
    }
    if (end > a.e) found.push({ s: a.s, e: end, type: "ADDRESS" });
  }
}
