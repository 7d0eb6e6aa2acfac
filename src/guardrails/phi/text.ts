/** Word scanning and letter-case tests of the name rules (char-code scans; no regular expression per word). */

/** Code points below this (planes 0-2) have their class and case facts kept in fixed tables (below). */
const CACHED_PLANES_END = 0x30000;

/**
 * Letter/mark class of a code point of planes 0-2 (the BMP, the supplementary multilingual plane with its mathematical
 * letters and emoji, and the CJK extensions), filled on first use: 0 not yet known, 1 neither, 2 a letter (\p{L}), 3 a
 * mark (\p{M}). 192 KB for the life of the process, so its size does not depend on the input; code points of the other
 * planes are classified each time (rare in any text).
 */
export const CODE_POINT_CLASS = new Uint8Array(CACHED_PLANES_END);
export const LETTER = /^\p{L}$/u;
export const MARK = /^\p{M}$/u;
export const classify = (ch: string): number => (LETTER.test(ch) ? 2 : MARK.test(ch) ? 3 : 1);
export function charClass(cp: number): number {
  if (cp >= CACHED_PLANES_END) return classify(String.fromCodePoint(cp));
  let v = CODE_POINT_CLASS[cp]!;
  if (v === 0) CODE_POINT_CLASS[cp] = v = classify(String.fromCodePoint(cp));
  return v;
}

/**
 * Case facts of one UTF-16 code unit as a one-character string, filled on first use: bit 1 known, 2 `ch !== ch.toLowerCase()`,
 * 4 `ch !== ch.toUpperCase()`, 8 its lower case is not exactly one code unit or depends on context (İ, final Σ): see
 * {@link LOWER_UNIT}. A lone surrogate is its own lower and upper case (what `w[i]` gives for half of an astral letter).
 */
const UNIT_CASE = new Uint8Array(0x10000);
/** The lower case of a code unit whose UNIT_CASE has no bit 8. */
export const LOWER_UNIT = new Uint16Array(0x10000);
export const CASE_LOWER_CHANGES = 2;
export const CASE_UPPER_CHANGES = 4;
export const CASE_NOT_SIMPLE = 8;
/** UNIT_CASE of code unit `c` (see there). */
export function unitCase(c: number): number {
  let v = UNIT_CASE[c]!;
  if (v === 0) {
    const ch = String.fromCharCode(c);
    const lo = ch.toLowerCase();
    v = 1 | (lo !== ch ? CASE_LOWER_CHANGES : 0) | (ch.toUpperCase() !== ch ? CASE_UPPER_CHANGES : 0);
    // Σ lower-cases to σ or ς by its place in the word
    if (lo.length !== 1 || c === 0x3a3) v |= CASE_NOT_SIMPLE;
    else LOWER_UNIT[c] = lo.charCodeAt(0);
    UNIT_CASE[c] = v;
  }
  return v;
}
/**
 * Astral code points of planes 1-2 whose lower case is another string (Deseret, Osage, Adlam ...): 0 not yet known, 1
 * yes, 2 no; filled on first use (a fixed 128 KB, so an input of many distinct code points grows nothing). Code points
 * of the other planes are tested each time.
 */
const ASTRAL_LOWER = new Uint8Array(CACHED_PLANES_END - 0x10000);
/** The astral code point `cp` lower-cases to itself. */
export function astralLowerSame(cp: number): boolean {
  if (cp >= CACHED_PLANES_END) {
    const ch = String.fromCodePoint(cp);
    return ch.toLowerCase() === ch;
  }
  let v = ASTRAL_LOWER[cp - 0x10000]!;
  if (v === 0) {
    const ch = String.fromCodePoint(cp);
    ASTRAL_LOWER[cp - 0x10000] = v = ch.toLowerCase() === ch ? 2 : 1;
  }
  return v === 2;
}

export const isUp = (c: number) => c >= 65 && c <= 90;
export const isLow = (c: number) => c >= 97 && c <= 122;

/** Capitalised: "Smith", "SMITH", "J" (ASCII fast path; other scripts by case mapping). */
export function isCap(w: string): boolean {
  const c0 = w.charCodeAt(0);
  if (c0 < 128) {
    if (!isUp(c0)) return false;
    if (w.length === 1) return true;
    const c1 = w.charCodeAt(1);
    return !isUp(c1) || isUpper(w);
  }
  return w[0] !== w[0]!.toLowerCase() && (w.length === 1 || w[1] === w[1]!.toLowerCase() || w === w.toUpperCase());
}
/** Title case: "Smith" (first letter upper, the rest not upper). */
export function isTitleCase(w: string): boolean {
  if (w.length < 2) return false;
  const c0 = w.charCodeAt(0);
  if (c0 < 128 && !isUp(c0)) return false;
  if (c0 >= 128 && w[0] === w[0]!.toLowerCase()) return false;
  for (let i = 1; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (isUp(c)) return false;
    if (c >= 128 && w[i] !== w[i]!.toLowerCase()) return false;
  }
  return true;
}
/** Name case: title case, or title-case parts joined by ' or - ("O'Driscoll", "Stord-Painter", "McDonald"). */
export function isNameCase(w: string): boolean {
  if (isTitleCase(w)) return true;
  const c0 = w.charCodeAt(0);
  if (c0 < 128 && !isUp(c0)) return false;
  if (w.includes("'") || w.includes("’") || w.includes("-")) {
    const parts = w.split(/['’-]/);
    return parts.every((p) => p.length > 0 && (isTitleCase(p) || (p.length === 1 && isUp(p.charCodeAt(0)))));
  }
  return c0 === 77 && /^(?:Mc|Mac)[A-Z][a-z]+$/.test(w);
}

/** All upper case, with at least one letter. */
export function isUpper(w: string): boolean {
  let letter = false;
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (isLow(c)) return false;
    if (isUp(c)) letter = true;
    else if (c >= 128) {
      const ch = w[i]!;
      if (ch !== ch.toUpperCase()) return false;
      if (ch !== ch.toLowerCase()) letter = true;
    }
  }
  return letter;
}

/** What `/(?:^|\n)[ \t>?]*$/` finds in the 6 characters before `s`: a line start, then only blanks, ">" or "?". */
export function lineStartBefore(text: string, s: number): boolean {
  const lo = Math.max(0, s - 6);
  let k = s;
  for (let c = text.charCodeAt(k - 1); k > lo && (c === 32 || c === 9 || c === 62 || c === 63); c = text.charCodeAt(k - 1)) k--;
  return k === lo || text.charCodeAt(k - 1) === 10;
}
/** JavaScript's `\s` for one UTF-16 code unit. */
export function isWs(c: number): boolean {
  if (c === 32 || (c >= 9 && c <= 13)) return true;
  if (c < 160) return false;
  return c === 160 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}
/** `g` is `lo`..`hi` white-space characters, after an optional (or required) leading character `lead` (char code). */
export function wsGap(g: string, lo: number, hi: number, lead = -1, leadRequired = false): boolean {
  let i = 0;
  if (lead >= 0 && g.length > 0 && g.charCodeAt(0) === lead) i = 1;
  else if (leadRequired) return false;
  const k = g.length - i;
  if (k < lo || k > hi) return false;
  for (; i < g.length; i++) if (!isWs(g.charCodeAt(i))) return false;
  return true;
}
/** {@link wsGap} on `text[from, to)`, without building the substring. */
export function wsGapAt(text: string, from: number, to: number, lo: number, hi: number, lead = -1, leadRequired = false): boolean {
  let i = from;
  if (lead >= 0 && to > from && text.charCodeAt(from) === lead) i = from + 1;
  else if (leadRequired) return false;
  const k = to - i;
  if (k < lo || k > hi) return false;
  for (; i < to; i++) if (!isWs(text.charCodeAt(i))) return false;
  return true;
}
