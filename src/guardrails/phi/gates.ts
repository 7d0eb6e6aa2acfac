/**
 * Gates of the pattern recognizers (./patterns.ts): does a text contain what a costly pattern needs at all? Each gate
 * answers exactly as its reference regex (`GATE_REFERENCE`) tested on the whole text would, but is cheaper: V8 tries a
 * regex that starts with a class (`[OoPp]`, a suffix alternation) at every position of the text (~1.5-5 µs per KB),
 * and one that starts with a digit or white space only where one is, checking the rest behind it with a lookbehind
 * (~0.8 µs per KB); two gates look only after a literal character found with `indexOf` (~0.15 µs per KB).
 *
 * A gate only decides whether its pattern runs, and the pattern finds the same matches either way when it has any;
 * still, these say exactly what the references say (test/unit/guardrails/phi-gates.test.ts compares them on the shared
 * data sets and on built cases).
 */

import { isWs } from "./text.js";

const SUFFIXES =
  "tie|katu|kuja|polku|vej|gade|straße|strasse|str\\.|weg|gasse|laan|straat|plein|vägen|gatan|veien|gata|utca|ulica|ul\\.|rue|calle|avenida|rua|via|viale|piazza|street|road|avenue|tee|maantee|puiestee";

/** The regexes the gates answer for (a match anywhere in the text). */
export const GATE_REFERENCE = {
  ipv6: /:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:/,
  military: /[OoPp]\s{1,2}[Aa][AaEePp]\s{1,2}\d{5}/,
  uuid: /-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-/,
  /** A street word's suffix right before a space and a digit (the street-word pattern needs one). */
  streetNumber: new RegExp(`(?:${SUFFIXES})\\s{1,2}\\d`, "i"),
  domain: /\.(?:com|org|net|edu|gov|mil|info|biz|io)\b/,
} as const;

const IPV6_AT = new RegExp(GATE_REFERENCE.ipv6.source, "y");
const UUID_AT = new RegExp(GATE_REFERENCE.uuid.source, "y");
/** {@link GATE_REFERENCE}.streetNumber found at its digit: the suffix and the white space are checked behind it. */
const STREET_NUMBER_AT_DIGIT = new RegExp(`\\d(?<=(?:${SUFFIXES})\\s{1,2}\\d)`, "i");
/** {@link STREET_NUMBER_AT_DIGIT} at one digit (sticky): ./digits.ts tests it at each run of digits after white space. */
export const STREET_NUMBER_AT = new RegExp(STREET_NUMBER_AT_DIGIT.source, "iy");

/** `x` with an ASCII capital as its small letter (how the `i` flag without `u` compares ASCII letters). */
const fold = (x: number): number => (x >= 65 && x <= 90 ? x + 32 : x);
/** A key of three UTF-16 units below 256 (the suffixes' last three are: ASCII and "ß"), ASCII capitals folded. */
const key3 = (a: number, b: number, c: number): number => (fold(a) << 16) | (fold(b) << 8) | fold(c);
/** The last three characters of every street suffix of {@link STREET_NUMBER_AT} (each has at least three). */
const SUFFIX_ENDS = new Set(SUFFIXES.replace(/\\/g, "").split("|").map((w) => key3(w.charCodeAt(w.length - 3), w.charCodeAt(w.length - 2), w.charCodeAt(w.length - 1))));
/**
 * May {@link STREET_NUMBER_AT} match at the digit `s` (after white space)? The three characters before its one or two
 * white-space characters must end a suffix (ASCII letters in either case; the `i` flag without `u` matches no other
 * character to an ASCII one, and "ß" only itself). Most runs after white space ("at 10", "12 Main") are answered
 * without the regex.
 */
export function streetSuffixBefore(text: string, s: number): boolean {
  let k = s - 1;
  if (k > 0 && isWs(text.charCodeAt(k - 1))) k--;
  if (k < 3) return false;
  const a = text.charCodeAt(k - 3);
  const b = text.charCodeAt(k - 2);
  const c = text.charCodeAt(k - 1);
  return (a | b | c) < 256 && SUFFIX_ENDS.has(key3(a, b, c));
}
/**
 * {@link GATE_REFERENCE}.military found at its five digits, the rest checked behind them (started at the white space
 * before them, the regex was tried at every white-space character of a note: 2.9 µs per KB of PhysioNet, now 0.7).
 */
const MILITARY_AT_DIGITS = /\d{5}(?<=[OoPp]\s{1,2}[Aa][AaEePp]\s{1,2}\d{5})/;

const isHex = (c: number): boolean => (c >= 48 && c <= 57) || ((c | 32) >= 97 && (c | 32) <= 102);

/** {@link GATE_REFERENCE}.ipv6: a colon, 1-4 hex digits, a colon, 1-4 hex digits, a colon. */
export function ipv6Gate(text: string): boolean {
  for (let i = text.indexOf(":"); i >= 0; i = text.indexOf(":", i + 1)) {
    if (!isHex(text.charCodeAt(i + 1))) continue;
    IPV6_AT.lastIndex = i;
    if (IPV6_AT.test(text)) return true;
  }
  return false;
}

/** {@link GATE_REFERENCE}.uuid: `-xxxx-xxxx-` in hex digits. */
export function uuidGate(text: string): boolean {
  for (let i = text.indexOf("-"); i >= 0; i = text.indexOf("-", i + 1)) {
    if (text.charCodeAt(i + 5) !== 45) continue;
    UUID_AT.lastIndex = i;
    if (UUID_AT.test(text)) return true;
  }
  return false;
}

/** The top-level domains of {@link GATE_REFERENCE}.domain (lower case; none is a prefix of another). */
const DOMAINS = ["com", "org", "net", "edu", "gov", "mil", "info", "biz", "io"];
/** An ASCII word character (`\w` without the u and i flags): a letter, digit or underscore. */
const isWordUnit = (c: number): boolean => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;

/**
 * {@link GATE_REFERENCE}.domain: `.com`, `.org` ... ending a word. Each full stop (found with `indexOf`) is followed by
 * the domain's letters and then no word character, or the text's end (the `\b` after a letter); a regex tried at every
 * full stop of a note cost 1.2-1.7 µs per KB of 4 KB notes, this 0.6-0.9.
 */
export function domainGate(text: string): boolean {
  for (let i = text.indexOf("."); i >= 0; i = text.indexOf(".", i + 1)) {
    const c = text.charCodeAt(i + 1);
    if (c < 98 || c > 111) continue; // b ... o: the first letters of the domains
    for (const d of DOMAINS) {
      if (!text.startsWith(d, i + 1)) continue;
      const after = i + 1 + d.length;
      if (after >= text.length || !isWordUnit(text.charCodeAt(after))) return true;
    }
  }
  return false;
}

/** {@link GATE_REFERENCE}.streetNumber: a street suffix, one or two white-space characters and a digit. */
export const streetNumberGate = (text: string): boolean => STREET_NUMBER_AT_DIGIT.test(text);

let militaryText: string | undefined;
let militaryResult = false;
/**
 * {@link GATE_REFERENCE}.military: `[OoPp]`, white space, `[Aa][AaEePp]`, white space, five digits (APO/FPO/DPO mail).
 * Two patterns share it: the answer for the last text is kept.
 */
export function militaryGate(text: string): boolean {
  if (text !== militaryText) {
    militaryResult = MILITARY_AT_DIGITS.test(text);
    militaryText = text;
  }
  return militaryResult;
}
