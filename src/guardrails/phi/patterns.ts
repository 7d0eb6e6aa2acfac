/**
 * Pattern recognizers: precompiled regular expressions for the structured identifiers (e-mail, URL, IP, SSN, card and
 * account numbers, phone and fax, dates, ages over 89, street addresses, ZIP codes, record numbers, FHIR address
 * fields), each with an optional cheap gate and a validity check on the match.
 */
import type { PhiEntityType } from "./entities.js";
import { domainGate, ipv6Gate, militaryGate, uuidGate } from "./gates.js";
import { prefixRule, type StartRule } from "./prefilter.js";
import { D_3_7, D_ACCOUNT, D_AGE, D_APOSTROPHE, D_DAY_MONTH, D_DOTS3, D_FIVE, D_GROUPED, D_HOUSE, D_HYPHEN, D_NANP, D_PLUS, D_RANGE, D_SEP3, D_SEVEN, D_SLASH, D_SLASH3, D_SSN, D_STREET } from "./digits.js";
import { isWs } from "./text.js";

// ---------------------------------------------------------------------------------------------
// Pattern recognizers. Every pattern starts at a boundary (lookbehind) so that a failed attempt is
// not retried from every inner position, and uses bounded quantifiers: linear in the input length.

const MONTH =
  "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";

export interface Pattern {
  type: PhiEntityType;
  re: RegExp;
  /** Optional check on the match; return false to drop it. */
  valid?: (m: RegExpExecArray) => boolean;
  /** Report only this capture group (offset found inside the match). */
  group?: number;
  /** Cheap pre-check on the whole text; the pattern runs only when it returns true. */
  gate?: (text: string) => boolean;
  /** Where a match may start (./prefilter.ts): the pattern then runs only at those positions. */
  start?: StartRule;
  /**
   * An e-mail pattern (`local@domain`, the local part a run of `[A-Za-z0-9._%+-]` of at most 64 characters starting
   * with a letter or digit, after no `[\w.%+-]`): it runs only at the start of the run before each `@` (./detector.ts
   * runAtSign), the only place its look-behind lets a match start.
   */
  atSign?: true;
  /**
   * Digit-run gate (./digits.ts D_* bits): the pattern runs only when the text has a run of digits of one of these
   * shapes (every match contains one).
   */
  digits?: number;
}

const MONTH_LEAD: StartRule = prefixRule(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]);

function luhn(digits: string): boolean {
  let sum = 0;
  let dbl = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (dbl) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    dbl = !dbl;
  }
  return sum % 10 === 0;
}

const VENT_BEFORE = /\b(?:peep|ps|psv|ips|cpap|bi-?pap|flowby|flow-by|settings?|vent|ventilation|wean(?:ed|ing)?(?: down)? to|simv|ac|imv|pressure support|tc|trach collar)\b[^.\n]{0,14}$/i;
const VENT_AFTER = /^\s?(?:bi-?pap|cpap|peep|ps\b|psv|ips\b|fio2|\/\d|\d{0,3}%)/i;
/**
 * A ventilator mode, then only other settings up to the fraction ("CPAP .5% 5/8", "SIMV/PS, 500X10, 40%, & 5/8",
 * "SETTINGS-40%, TV 400'S, RR 14-19, & 5/10"): numbers and their plurals ("400's", "500s"), percentages, rates, "x",
 * "&" and the words TV, RR, FiO2.
 */
const VENT_SETTINGS_BEFORE = /\b(?:peep|ps|psv|ips|cpap|bi-?pap|settings?|simv|imv|ac)\b(?:[\d\s%,&xX.'’/:=-]|\b(?:tv|vt|rr|fio2)\b|(?<=\d['’]?)s\b){0,36}$/i;
/** After a/b/c: a percentage or a rate ("12/5/40%", "10/5/12BPM") is a ventilator setting, not a date. */
const NOT_DATE_AFTER = /^\s?(?:%|bpm|x\b)/i;
/** Words right before a date ("s/p 8/15", "extubate 3/11", "since 9/14"). */
const DATE_CUE_BEFORE = /\b(?:s\/p|since|until|post|extubat(?:e|ed|ion)|dated?|admitted|admission|dialysis|stroke|mi|surgery)\s{1,2}$/i;
/** Scores and grades written as fractions: pain "#4/10", "(7/10)", murmur "+3/6", strength "4/4 strength", pupils "3/3 brisk". */
const SCALE_BEFORE = /(?:[#(+]|\b(?:pain|cp|discomfort|scale|rated|grade|perrla?|strength|sem|murmur))\s{0,2}$/i;
const SCALE_AFTER = /^\s{0,2}(?:strength|brisk|sem|murmur|sluggish|pain|scale)\b/i;
export const US_STATES =
  "alabama|alaska|arizona|arkansas|california|colorado|connecticut|delaware|florida|georgia|hawaii|idaho|illinois|indiana|iowa|kansas|kentucky|louisiana|maine|maryland|massachusetts|michigan|minnesota|mississippi|missouri|montana|nebraska|nevada|new hampshire|new jersey|new mexico|new york|north carolina|north dakota|ohio|oklahoma|oregon|pennsylvania|rhode island|south carolina|south dakota|tennessee|texas|utah|vermont|virginia|washington|west virginia|wisconsin|wyoming";
const STREET_WORD_SUFFIX =
  /(?:tie|katu|kuja|polku|vej|gade|straße|strasse|str\.|weg|gasse|laan|straat|plein|vägen|gatan|veien|gata|utca|ulica|ul\.|rue|calle|avenida|rua|via|viale|piazza|street|road|avenue|maantee|puiestee)$/i;
// Gates (./gates.ts): cheap scans, so the costlier pattern runs only when it can match.

/** The number written by the ASCII digits `w[from, to)`. */
function digitsValue(w: string, from: number, to: number): number {
  let v = 0;
  for (let i = from; i < to; i++) v = v * 10 + (w.charCodeAt(i) - 48);
  return v;
}

/** The end of the run of ASCII digits of `w` from `from` (`from` when none). */
function digitsEnd(w: string, from: number): number {
  let i = from;
  while (i < w.length && w.charCodeAt(i) >= 48 && w.charCodeAt(i) <= 57) i++;
  return i;
}

const isWordUnit = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
/** NOT_DATE_AFTER at `j` of `text` within the window ending at `end`: "%", "bpm" or "x" at a word end (the window's end counts as one). */
function notDateAt(text: string, j: number, end: number): boolean {
  if (j >= end) return false;
  const c = text.charCodeAt(j);
  if (c === 37) return true;
  if ((c | 32) === 98) return j + 3 <= end && (text.charCodeAt(j + 1) | 32) === 112 && (text.charCodeAt(j + 2) | 32) === 109;
  if ((c | 32) === 120) return j + 1 === end || !isWordUnit(text.charCodeAt(j + 1));
  return false;
}
/**
 * What `NOT_DATE_AFTER.test(text.slice(at, at + 3))` answers, without the slice: `/^\s?(?:%|bpm|x\b)/i` on the three
 * characters from `at` (the slice's end is a word boundary for "x").
 */
export function notDateAfter3(text: string, at: number): boolean {
  const end = Math.min(text.length, at + 3);
  if (at >= end) return false;
  return (isWs(text.charCodeAt(at)) && notDateAt(text, at + 1, end)) || notDateAt(text, at, end);
}

/** A month/day (or month/2-digit year) match `a/b` that is a fraction, a ventilator setting or a score, not a date. */
function fractionNotDate(m: RegExpExecArray, a: number, b: number): boolean {
  const before = m.input.slice(Math.max(0, m.index - 28), m.index);
  const after = m.input.slice(m.index + m[0].length, m.index + m[0].length + 12);
  if (a < b && (b === 2 || b === 3 || b === 4)) return true; // a fraction: 1/2, 3/4, 2/3
  if (DATE_CUE_BEFORE.test(before) && !NOT_DATE_AFTER.test(after)) return false;
  if (b <= 5 && /(?:psv|ps|peep|cpap|bipap|ac|simv|vent|d5|str|strength|x)\s{0,2}$/i.test(before)) return true;
  // ventilator settings ("PEEP/PS 5/10", "flowby 6/3", "wean to 10/5", "10/5 BIPAP", "5/40%")
  if (b <= 15 && VENT_BEFORE.test(before)) return true;
  if (a <= 30 && b <= 25 && VENT_SETTINGS_BEFORE.test(m.input.slice(Math.max(0, m.index - 48), m.index))) return true;
  if (VENT_AFTER.test(after) || NOT_DATE_AFTER.test(after)) return true;
  if ((b === 10 || b === 6 || a === b) && (SCALE_BEFORE.test(before.slice(-16)) || SCALE_AFTER.test(after))) return true;
  // a/a without a year (2/2, 5/5): pupils, strength and ventilator settings far more often than a date
  return a === b && a <= 5;
}

export const PATTERNS: Pattern[] = [
  { type: "EMAIL", atSign: true, re: /(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9-]{1,63}){0,4}\.[A-Za-z]{2,24}\b/g },
  { type: "URL", start: { lead: /^(?:ht|ww)/i, prev: "alnum" }, re: /(?<![\w/])(?:https?:\/\/|www\.)[^\s<>"'|]{1,2000}/gi },
  { type: "URL", gate: domainGate, re: /(?<![\w@.-])(?:[a-z0-9-]{1,63}\.){1,4}(?:com|org|net|edu|gov|mil|info|biz|io)(?![\w-])\/?/g },
  { type: "IP", digits: D_DOTS3, re: /(?<![\w.])(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?![\w.]\w)/g },
  { type: "IP", gate: ipv6Gate, re: /(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?![\w:])/g },
  { type: "IP", gate: (t) => t.includes("::"), re: /(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){1,6}:(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,5})?(?![\w:])/g },
  { type: "SSN", digits: D_SSN, re: /(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])/g },
  { type: "SSN", start: { lead: /^(?:ss|so)/i, prev: "alnum" }, re: /\b(?:ssn|social security(?: number)?)\W{0,4}(?:is\W{1,2})?(\d{9}|\d{3} \d{2} \d{4})\b/gi, group: 1 },
  {
    type: "ACCOUNT",
    digits: D_ACCOUNT,
    re: /(?<![\w.-])\d(?:[ -]?\d){11,18}(?![\w-])/g,
    valid: (m) => luhn(m[0].replace(/\D/g, "")),
  },
  { type: "ACCOUNT", start: { lead: /^[A-Z]{2}/, prev: "alnum" }, re: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g },
  // Phone and fax: North American forms, international +CC forms, and grouped digits.
  {
    type: "PHONE",
    digits: D_NANP,
    re: /(?<![\w+/])(?:\+?1[ .-]?)?(?:\(\d{3}\)\s?|\d{3}\s?[ ./-]\s?)\d{3}\s?[ ./-]\s?\d{4}(?:\s?(?:x|ext\.?|extension)\s?\d{1,5})?(?![\w/])/gi,
  },
  { type: "PHONE", digits: D_PLUS, re: /(?<![\w+])\+\d{1,3}[ .-]?(?:\(0\)\s?)?(?:\(\d{1,4}\)\s?)?\d{1,5}(?:[ .-]?\d{2,5}){1,5}(?!\w)/g, valid: (m) => m[0].replace(/\D/g, "").length >= 8 },
  { type: "PHONE", digits: D_GROUPED, re: /(?<![\w./-])\d{2,5}(?:[ .]\d{2,4}){2,5}(?![\w/]|\.\d)/g, valid: (m) => m[0].replace(/\D/g, "").length >= 8 },
  {
    type: "PHONE",
    start: prefixRule(["pag", "bee", "pgr", "cel", "pho", "tel", "fax", "mob", "des", "hom", "wor", "off", "cal"]),
    re: /\b(?:pager|beeper|pgr|cell(?:ular)?|phone|tel|telephone|fax|mobile|desk|home|work|office|call(?: me)?(?: at| on)?)\s?(?:#|no\.?|number)?\s?[:#-]?\s?(\(?\d[\d() .-]{3,16}\d)(?!\w)/gi,
    group: 1,
    valid: (m) => m[1]!.replace(/\D/g, "").length >= 4,
  },
  // a local number (7 digits) after "number" or after "reached / paged / call <someone> at" ("wife's number 555-1234",
  // "CALL SON AT 555 1234", "can be reached at 555-1234"), where the rule above wants a phone word right before it
  {
    type: "PHONE",
    // (the digit gate first: a text without a 3-digit run, up to three characters and a 4-digit run never runs it)
    digits: D_NANP,
    start: prefixRule(["num", "rea", "pag", "cal", "con"]),
    // (an exchange starts with 2-9, NANP: "number 100 1000", "reached at 120 1500" are counts and ranges)
    re: /\b(?:number\s?[:#]?|(?:reached|reach|paged?|call(?:ed)?|contact(?:ed)?)(?:\s(?:him|her|them|me|us|son|daughter|wife|husband|family|mother|father|sister|brother|mom|dad|niece|nephew))?\s(?:at|on))\s?([2-9]\d{2}[ -]\d{4})(?![\w/]|[.-]\d)/gi,
    group: 1,
  },
  // an extension alone after "ext" / "ext." ("ext. 5-6789", "ext 4417"): one digit, "-", four; or four or five digits,
  // not a quantity ("Ext 1200 ml", "ext 10-20 degrees"; "extension" is mostly the movement: "knee extension 0-120")
  {
    type: "PHONE",
    start: prefixRule(["ext"]),
    re: /\bext\.?\s?#?\s?(\d-\d{4}|\d{4,5})(?![\w/%°]|[.,-]\d|\s?(?:°|deg|degrees?|mg|mcg|ml|cc|units?|g|kg|l|%)(?![a-z]))/gi,
    group: 1,
  },
  { type: "PHONE", digits: D_3_7, re: /(?<![\w/.-])(?:\d{3}[ -]\d{7}|\d{6}-\d{4})(?![\w/]|[.-]\d)/g },
  // hyphen-grouped digits with 8 or more digits that are not a date ("71-33-52-22", "0961-7596216"). The match at a
  // position is the whole hyphen-joined chain of digit runs or nothing (the look-ahead refuses an end before a digit or
  // "-digit"), so the look-behind at its end can refuse the chains whose groups all have 3 or 4 digits, which `valid`
  // refuses: the same matches (a refused match resumes one character later, as a failed regex attempt does), without a
  // match array and a call of `valid` for each "617-555-0123" of a text made of them. (A look-ahead at the start cost
  // every position of the text; this look-behind runs on whole chains only.)
  {
    type: "PHONE",
    digits: D_HYPHEN,
    re: /(?<![\w/.-])\d{2,5}(?:-\d{2,7}){1,4}(?![\w/]|[.-]\d)(?<!(?<![\d-])(?:\d{3,4}-)*\d{3,4})/g,
    valid: (m) => {
      // the match is 2-5 groups of digits joined by hyphens: their lengths by one pass over the characters
      const w = m[0];
      let groups = 0;
      let digits = 0;
      let all34 = true; // every group has 3 or 4 digits
      let long = false; // some group has 6 or more
      const g = [0, 0, 0];
      for (let i = 0, run = 0; i <= w.length; i++) {
        if (i < w.length && w.charCodeAt(i) !== 45) {
          run++;
          continue;
        }
        if (groups < 3) g[groups] = run;
        groups++;
        digits += run;
        if (run < 3 || run > 4) all34 = false;
        if (run >= 6) long = true;
        run = 0;
      }
      // not 8 digits, or a date (yyyy-m-d, m-d-yy)
      if (digits < 8 || (groups === 3 && ((g[0] === 4 && g[1]! <= 2 && g[2]! <= 2) || (g[0]! <= 2 && g[1]! <= 2 && g[2]! >= 2 && g[2]! <= 4)))) return false;
      // groups of 3-4 digits are ranges and series ("1900-0700", "0700-1500-2300", "100-110-120", DRG 291-292-293)
      if (all34) return false;
      // two groups: only a long subscriber number ("0961-7596216")
      if (groups === 2 && !long) return false;
      // product, lot and code numbers ("NDC 0093-7180-56", "Lot 12-3456-78", FHIR "code": "...")
      return !/(?:ndc|lot|batch|serial|drg|cpt|icd|code|sku|model|part)\W{0,4}$|"code"\s{0,4}:\s{0,4}"$/i.test(m.input.slice(Math.max(0, m.index - 16), m.index));
    },
  },
  // Dates more specific than the year.
  { type: "DATE", digits: D_HYPHEN, re: /(?<![\w-])(?:19|20)\d{2}-(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w-])/g },
  {
    type: "DATE",
    digits: D_SLASH | D_HYPHEN,
    re: /(?<![\w/.]|\d-)(?:0?[1-9]|1[0-2])(?:\/(?:0?[1-9]|[12]\d|3[01])(?:\/(?:19|20)?\d{2})?|-(?:0?[1-9]|[12]\d|3[01])-(?:19|20)?\d{2})(?![\w/]|-\d|\.\d)/g,
    valid: (m) => {
      // the match is digits and one or two separators ("/" or "-"): both numbers read from the char codes (a split
      // made an array and three strings per match: ~10 % of a megabyte of "5/10/40% ")
      const w = m[0];
      const k = digitsEnd(w, 0);
      const j = digitsEnd(w, k + 1);
      if (j < w.length) return !notDateAfter3(m.input, m.index + w.length);
      return !fractionNotDate(m, digitsValue(w, 0, k), digitsValue(w, k + 1, j));
    },
  },
  { type: "DATE", digits: D_SEP3, re: /(?<![\w/.-])(?:0?[1-9]|[12]\d|3[01])[./-](?:0?[1-9]|1[0-2])[./-](?:19|20)\d{2}(?![\w/])/g },
  // full month/day/year even when glued to a word ("on10/14/82"), and the second date of a range ("10/15-10/16")
  {
    type: "DATE",
    digits: D_SLASH3,
    re: /(?<![\d/.])(?:0?[1-9]|1[0-2])\/(?:0?[1-9]|[12]\d|3[01])\/(?:19|20)?\d{2}(?![\d/])/g,
    valid: (m) => !notDateAfter3(m.input, m.index + m[0].length),
  },
  { type: "DATE", digits: D_RANGE, re: /\d\/\d{1,2}-((?:0?[1-9]|1[0-2])\/(?:0?[1-9]|[12]\d|3[01]))(?![\d/])/g, group: 1 },
  {
    type: "DATE",
    digits: D_SLASH,
    re: /(?<![\w/.-])(?:0?[1-9]|1[0-2])\/(?:19|20)?\d{2}(?![\w/]|\.\d)/g,
    // month/year with a 2-digit year reads like the settings and scores above ("5/40%", "#9/10")
    valid: (m) => {
      // the match is digits, "/", digits: both numbers read from the char codes
      const w = m[0];
      const slash = w.indexOf("/");
      const a = digitsValue(w, 0, slash);
      const b = digitsValue(w, slash + 1, w.length);
      if (b > 31 && !notDateAfter3(m.input, m.index + w.length)) return true;
      return !fractionNotDate(m, a, b);
    },
  },
  {
    type: "DATE",
    start: MONTH_LEAD,
    re: new RegExp(`\\b${MONTH}\\.?\\s{1,2}(?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\b(?:,?\\s{1,2}(?:19|20)\\d{2}\\b)?`, "gi"),
    valid: (m) => !/^may\s/i.test(m[0]) || /\d{4}|[a-z]{2}$/i.test(m[0]) || /^May/.test(m[0]),
  },
  { type: "DATE", digits: D_DAY_MONTH, re: new RegExp(`\\b(?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\s{1,2}(?:of\\s{1,2})?${MONTH}\\b\\.?(?:,?\\s{1,2}(?:19|20)\\d{2}\\b)?`, "gi") },
  { type: "DATE", start: MONTH_LEAD, re: new RegExp(`\\b${MONTH}\\.?,?\\s{1,2}(?:of\\s)?(?:19|20)\\d{2}\\b`, "gi"), valid: (m) => !/^may\s/i.test(m[0]) || /^May/.test(m[0]) },
  // A year after an article or "in"/"of" ("in 1975", "a 2017 film", "born 1948"). Safe Harbor would allow keeping a
  // year; in running text it narrows down who is meant, and data sets of PII (Presidio) label it. Not a clock time
  // (nursing notes write "at 1900", "from 2000 to 0700"), a quantity ("2000 mg") or a range ("1990-1995" is two years).
  {
    type: "DATE",
    start: { lead: /^(?:in|of|a\s|an|th|ye|bo|ci|ar|du)/i, prev: "alnum" },
    re: /\b(?:in|of|a|an|the|year|born|circa|around|during)\s{1,2}((?:19\d\d|20[0-3]\d))(?![\w/%]|[.,:-]\d|\s?(?:mg|mcg|ml|cc|kg|g|units?|hrs?|hours?|cal|kcal|meq|u)\b)/gi,
    group: 1,
  },
  // a year written with an apostrophe in a history ("'09 PTCA", "CVA 74'", "may 15'"); not feet and inches (5'7")
  { type: "DATE", digits: D_APOSTROPHE, re: /(?<![\w'’])['’]\d{2}(?![\w'’"]|[.,]\d)/g },
  // (every run of two or more digits is a candidate of its start rule: the apostrophe after two digits is checked first)
  {
    type: "DATE",
    start: { lead: /^\d\d/, prev: "alnum", narrow: (text, at) => text.charCodeAt(at + 2) === 39 || text.charCodeAt(at + 2) === 0x2019 },
    re: /(?<=[A-Za-z]{2}\s{1,2})\d{2}['’](?![\w'’"]|\s?\d)/g,
  },
  // Ages over 89.
  { type: "AGE", digits: D_AGE, re: /\b(?:9\d|1[01]\d)(?=\s?-?\s?(?:yo|y\/o|y\.o\.?|yrs?|years?|year-old|yr-old|-year-old)\b)/gi },
  { type: "AGE", start: { lead: /^ag/i, prev: "alnum" }, re: /\b(?:age[d:]?|aged)\s{1,2}(9\d|1[01]\d)\b/gi, group: 1 },
  // Addresses.
  {
    type: "ADDRESS",
    digits: D_HOUSE,
    re: /(?<![\w-])\d{1,6}[A-Za-z]?(?:\s{1,2}[\p{Lu}\d][\p{L}'.-]{0,30}){1,4}\s{1,2}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Ter|Circle|Cir|Highway|Hwy|Parkway|Pkwy|Square|Squares|Sq|Trail|Trl|Crossing|Loop|Alley|Row|Walk|Path|Pike|Plaza|Heights|Hills|Park|Gardens|Mews|Close|Crescent|Grove)\b\.?/gu,
  },
  {
    // a street word ending in a street suffix of many languages, then a house number ("Puruntie 82", "Mellemvej 32")
    type: "ADDRESS",
    re: /(?<![\p{L}\d-])(?:\d{1,6}\s{1,2})?([\p{L}][\p{L}.-]{1,30})\s{1,2}\d{1,5}[A-Za-z]?\b/gu,
    // ./gates.ts streetNumberGate, answered by the digit-run pass (D_STREET)
    digits: D_STREET,
    // English "via" ("access via 2 PIVs") is not a street; "Via Roma 12" is caught by the street-type-first pattern
    valid: (m) => STREET_WORD_SUFFIX.test(m[1]!) && m[1]!.toLowerCase() !== "via",
  },
  { type: "ADDRESS", start: { lead: /^(?:ap|su|st|un|ro|rm|bo|ps|p\.|p\s|po)/i, prev: "alnum" }, re: /\b(?:apt\.?|apartment|suite|ste\.?|unit|room|rm\.?|box|psc|p\.?\s?o\.?\s?box)\s{0,2}#?\s?\d{1,6}[A-Z]?\b/gi },
  { type: "ADDRESS", start: { lead: /^(?:AP|FP|DP)/, prev: "alnum" }, re: /\b(?:APO|FPO|DPO)\s{1,2}(?:AA|AE|AP)\s{1,2}\d{5}\b/g },
  // US military mail: ship name or unit before the APO/FPO/DPO line ("USNS Mercy FPO AP 96677", "PSC 5420, Box 2708 APO AA 33879")
  { type: "ADDRESS", digits: D_FIVE, gate: militaryGate, re: /\b(?:usns|usnv|uss|uscgc)\s{1,2}[\p{L}][\p{L}'’-]{1,30}(?:\s{1,2}[\p{L}][\p{L}'’-]{1,30})?\s{1,3}(?:apo|fpo|dpo)\s{1,2}(?:aa|ae|ap)\s{1,2}\d{5}\b/giu },
  { type: "ADDRESS", digits: D_FIVE, gate: militaryGate, re: /\b(?:psc|unit)\s{1,2}\d{3,5},?\s{1,2}box\s{1,2}\d{3,5}\s{1,3}(?:apo|fpo|dpo)\s{1,2}(?:aa|ae|ap)\s{1,2}\d{5}\b/gi },
  {
    // street type first, then the street's name and the house number ("Rua João Pessoa 1636", "C/ Señores Curas 88", "ul. Północna 73")
    type: "ADDRESS",
    start: { lead: /^(?:[Rr]u|[Vv]i|[Cc]a|[Aa]v|[Uu]l|[Ss]t|[Pp]i|[Pp]r|[Ll]a|[Tt]r|[Ee]s|[Pp]a|[Pp]l|[Aa]l)/, prev: "alnum" },
    re: /(?<![\p{L}\d])(?:[Rr]ua|[Rr]úa|[Rr]ue|[Vv]iale|[Cc]alle|[Aa]venida|[Aa]vda\.|[Uu]l\.|[Uu]lica|[Ss]trada|[Pp]iazza|[Pp]raça|[Ll]argo|[Tt]ravessa|[Ee]strada|[Cc]arrer|[Pp]aseo|[Pp]laza|[Cc]amino|[Aa]leja|[Tt]rg)\s{1,2}(?:(?:[\p{Lu}][\p{Ll}][\p{L}'’.-]*|de|do|da|dos|das|del|di|la|le|des|du)\s{1,2}){1,4}\d{1,5}[A-Za-z]?\b(?![.,]\d)(?:\.(?!\d))?/gu,
    valid: (m) => !notAddrAfterNumAt(m.input, skipWs(m.input, m.index + m[0].length)),
  },
  // ZIP codes: after a state code or a ZIP label, or a standalone 5-digit number.
  { type: "ZIP", start: { lead: /^(?:zi|po)/i, prev: "alnum" }, re: /\b(?:zip(?:\s?code)?|postal\s?code|postcode)\s?(?:is\s)?:?\s{0,2}([A-Z0-9]{2,5}(?:[ -][A-Z0-9]{2,4})?)\b/gi, group: 1 },
  { type: "ZIP", start: { lead: /^[A-Z]{2}/, prev: "alnum" }, re: /\b[A-Z]{2}\s{1,2}(\d{5}(?:-\d{4})?)\b/g, group: 1 },
  { type: "ZIP", digits: D_FIVE, re: /(?<![\w.,/:-])\d{5}(?:-\d{4})?(?![\w./:%]|,\d|-\d)/g },
  { type: "LOCATION", start: { lead: /^U[nN ]/, prev: "alnum" }, re: /\b(?:University|UNIVERSITY|Univ\.?|U) (?:of|OF) [A-Z][A-Za-z]{1,20}(?: [A-Z][A-Za-z]{2,20})?\b/g },
  { type: "LOCATION", start: { lead: /^u[n ]/i, prev: "alnum" }, re: new RegExp(`\\b(?:U|Univ\\.?|University) (?:of )?(?:${US_STATES})\\b`, "gi") },
  { type: "LOCATION", start: { lead: /^(?:St|ST|Sa|SA)/, prev: "alnum" }, re: /(?<!\d\s{1,2})\b(?:(?:St|ST)\.\s?|(?:Saint|SAINT)\s)[A-Z][A-Za-z]{2,20}(?:'s)?\b/g },
  // Record, account, licence and other identifying numbers in context, and long digit runs.
  {
    type: "ID",
    start: prefixRule(["mrn", "mr#", "med", "mem", "acc", "ref", "rec", "lic", "dl", "dri", "pat", "pas", "pol", "id", "npi", "dea"]),
    re: /\b(?:mrn|mr#|medical record(?:\s(?:no\.?|number|#))?|acct|account(?:\s(?:no\.?|number|#))?|ref(?:erence)?(?:\s?#|\sno\.?|\snumber)?|record\s?#|licen[cs]e(?:\snumber)?(?:\sis)?|dl|driver'?s licen[cs]e(?:\snumber)?(?:\sis)?|patient\sid|member\sid|policy\s(?:no\.?|number|#)|id\s?#|id:|npi|dea|passport(?:\snumber)?(?:\sis)?)\s?[:#]?\s?((?=[A-Z0-9-]{0,20}\d)[A-Z0-9][A-Z0-9-]{3,20})\b/gi,
    group: 1,
  },
  { type: "ID", digits: D_SEVEN, re: /(?<![\w.,-])\d{7,}(?![\w.,]|-\d)/g },
  // UUIDs (FHIR resource and record ids) and letter-framed licence / passport numbers ("S99991568", "X43747560X")
  { type: "ID", gate: uuidGate, re: /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g },
  { type: "ID", start: { lead: /^[A-Z][A-Z\d]/, prev: "alnum" }, re: /\b[A-Z]{1,2}\d{7,9}[A-Z]?\b/g },
  // FHIR JSON address fields (the state is not a Safe Harbor identifier and is kept)
  { type: "LOCATION", gate: (t) => t.includes('"city"') || t.includes('"district"'), re: /"(?:city|district)"\s{0,4}:\s{0,4}"([^"\n]{1,80})"/g, group: 1 },
  { type: "ZIP", gate: (t) => t.includes('"postalCode"'), re: /"postalCode"\s{0,4}:\s{0,4}"([^"\n]{1,20})"/g, group: 1 },
  { type: "ADDRESS", gate: (t) => t.includes('"line"'), re: /"line"\s{0,4}:\s{0,4}\[\s{0,8}"([^"\n]{1,120})"/g, group: 1 },
];

export const NOT_ADDR_AFTER_NUM = /^(?:%|(?:mg|ml|mcg|cc|kg|g|gm|meq|mmol|iu|units?|hours?|hrs?|days?|weeks?|months?|years?|times|x|min|mins|minutes|am|pm|percent|liters?|l|views?|ago|overnight|doses?|tabs?|tablets?|puffs?|drops?|beats?|bpm|breaths?|mmhg)\b)/i;
const NOT_ADDR_AFTER_NUM_AT = new RegExp(NOT_ADDR_AFTER_NUM.source.slice(1), "iy");
/** {@link NOT_ADDR_AFTER_NUM} on `text` from `at` (as on `text.slice(at)`, without the slice). */
export function notAddrAfterNumAt(text: string, at: number): boolean {
  NOT_ADDR_AFTER_NUM_AT.lastIndex = at;
  return NOT_ADDR_AFTER_NUM_AT.test(text);
}
/** The first position at or after `at` that is not white space (as `trimStart` skips). */
export function skipWs(text: string, at: number): number {
  while (at < text.length && isWs(text.charCodeAt(at))) at++;
  return at;
}
