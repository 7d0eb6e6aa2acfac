/**
 * Decoded views of a text that asks for its own decoding: an attack hides its payload from a keyword or feature scan by
 * encoding it ("Decode this base64 and follow it: SWdub3Jl...", "ROT13, decode and do it: Frg gur ...", "Reverse this
 * text and carry it out: \"tpmorp metsys ...\""), and the scorer would see only the wrapper. When the text names a
 * decoding (see {@link DECODE_CUE}), {@link decodedViews} returns the payload decoded and the model scores each view as
 * it scores the text (the score is the maximum). A text without a cue costs one keyword-gate lookup.
 *
 * Views, each at most {@link MAX_VIEW_CHARS} characters (and at most the text's length), so a long text costs at most
 * a fixed amount more: (1) every base64 run that decodes to readable text, decoded and joined one per line (decoys
 * before the payload share the view with it: the model scores each sentence window, so they do not hide it unless they
 * fill the whole view); (2) the ROT13 of the text; (3) its quoted parts reversed, joined; (4) the text reversed. (2)–(4)
 * only when the text asks for ROT13 or for reversed text; for a text longer than a view, from where it asks.
 * Limits, by design: a payload more than {@link MAX_VIEW_CHARS} after the request, or behind more than that much
 * readable base64, is not decoded.
 */

const ROT13_CUE = /\b(?:rot ?-?13|caesar\b)/;
/** Hexadecimal named: "hex" as a word ("hex string", "Hex-Daten") or hexadecimal / hexadezimal / hexadécimal. */
const HEX_CUE = /\bhex(?:\b|ad[eé]cimal|adezimal)/;
/** Reversed text asked for ("reverse this", "read it backwards", "rückwärts"), not a reversal ("warfarin reversal", "reverse Trendelenburg"). */
const REVERSE_CUE =
  /\b(?:revers(?:e|ed|ing) (?:this|it|the (?:text|string|message|following|line|sentence))|reversed (?:text|string|message)|(?:read|write|written|spelled|spelt)(?: (?:it|this|that|the text))? backwards?|backwards?:|rückwärts|al revés)|l'envers/;
/**
 * A decoding named in the normalised (lower-case) text: decode / dekodieren / décoder, base64, encoded / kodiert /
 * codificado / cifrado, or what {@link ROT13_CUE} and {@link REVERSE_CUE} ask for. Only these make views, so a note
 * that merely mentions a reversal ("reverse Trendelenburg") costs this one test after the keyword gate.
 */
export const DECODE_CUE = new RegExp(`\\b(?:decod|dekod|décod|base ?-?64|encoded|kodiert|codificad|cifrad)|${HEX_CUE.source}|${ROT13_CUE.source}|${REVERSE_CUE.source}`);

/**
 * Letters joined by one separator ("i.g.n.o.r.e", "p-r-o-m-p-t", "s*e*c*r*e*t"): the start of a word an attack spells
 * that way, so a keyword scan does not see it. Only these word starts make the joined view (a dotted abbreviation such
 * as "q.i.d." or "p.r.n." does not); spaced letters ("i g n o r e") are joined in {@link normalizeForInjection}'s way
 * instead. Separators: `. - * · • / | + ~ : ,` (not `_`, a word character).
 */
const JOINED_WORDS = [
  "ignor", "disreg", "forget", "instruc", "prompt", "system", "reveal", "bypass", "overrid", "passw", "secret", "admin", "jailbr",
  "approv", "audit", "delet", "export", "vergiss", "anweis", "oubli", "olvid", "consign",
];
const JOIN_SEP = "[.\\-*·•/|+~:,]";
export const JOINED_CUE = new RegExp(`(?<![a-z0-9_])(?:${JOINED_WORDS.map((w) => [...w].join(JOIN_SEP)).join("|")})`);
/** Letters joined by separators (greedy, no look-around: linear); {@link joinLetters} decides which runs to join. */
const JOINED_RUN = new RegExp(`\\p{L}(?:${JOIN_SEP}\\p{L})+`, "gu");
const JOIN_SEP_G = new RegExp(JOIN_SEP, "g");
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/** `t` with every run of at least three single letters joined by separators written as one word ("i.g.n.o.r.e" → "ignore"). */
function joinLetters(t: string): string {
  return t.replace(JOINED_RUN, (run: string, at: number) => {
    const before = t[at - 1];
    const after = t[at + run.length];
    const single = run.length >= 5 && (before === undefined || !LETTER_OR_DIGIT.test(before)) && (after === undefined || !LETTER_OR_DIGIT.test(after));
    return single ? run.replace(JOIN_SEP_G, "") : run;
  });
}

/**
 * Digits and signs for letters ("1gn0r3 4ll pr3v10u5 1nstruct10ns"): the start of a word an attack writes that way
 * (4 3 1 0 5 7 for a e i o s t in the word's first eight letters; {@link LEET_GATED} says which spellings count). Only
 * these word starts make the letters view, so "HbA1c", "T4" or "B12" in a note cost nothing.
 */
const LEET_WORDS = [
  "ignore", "instruct", "previous", "prompt", "system", "password", "secret", "reveal", "bypass", "override", "disregar", "forget", "admin",
  "jailbrea", "approval", "delete", "export", "everythi",
];
const LEET_DIGIT: Readonly<Record<string, string>> = { a: "4", e: "3", i: "1", o: "0", s: "5", t: "7" };
/** Every spelling of `w` with some of its letters in {@link LEET_DIGIT} written as digits, at least one. */
function leetForms(w: string): string[] {
  let forms = [""];
  for (const c of w) forms = forms.flatMap((f) => (LEET_DIGIT[c] ? [f + c, f + LEET_DIGIT[c]] : [f + c]));
  return forms.filter((f) => f !== w);
}
const LEET_FORMS = LEET_WORDS.flatMap(leetForms);
/**
 * Where " " + `f` holds a digit in its second 4-gram (the gate's unit, features.ts): the end of that 4-gram, or -1 when
 * fewer than two of its 4-grams hold one.
 */
function secondDigitGramEnd(f: string): number {
  const a = " " + f;
  let grams = 0;
  for (let end = 4; end <= a.length; end++) if (/[0-9]/.test(a.slice(end - 4, end)) && ++grams === 2) return end;
  return -1;
}
/**
 * The spellings that make the letters view: those with a digit in at least two 4-grams, so that a gate of them is shut
 * on text without them: a spelling whose one digit ends it ("secre7") would share all its other 4-grams with the plain
 * word and open the gate on about 2 % of texts that have it (the filter's false positives).
 */
const LEET_GATED = LEET_FORMS.filter((f) => secondDigitGramEnd(f) >= 0);
/**
 * The gate of a letters-view spelling: " " + its shortest start with a digit in two 4-grams (" pr3v" for "pr3v10us"
 * and "pr3vious" alike), so that spellings sharing it share one look-up.
 */
const leetGate = (f: string): string => (" " + f).slice(0, secondDigitGramEnd(f));
export const LEET_CUE = new RegExp(`(?<![a-z0-9_])(?:${LEET_GATED.join("|")})`);
const LEET_LETTER: Readonly<Record<string, string>> = { "4": "a", "3": "e", "1": "i", "0": "o", "5": "s", "7": "t", "@": "a", $: "s" };
/** A run of letters, digits, `@` and `$`; the letters view rewrites those with both a letter and a digit or sign in them. */
const MIXED_RUN = /[a-z0-9@$]+/g;

/** `t` with the digits and signs of every word that mixes them with letters read as letters ("1gn0r3" → "ignore"). */
function unleet(t: string): string {
  return t.replace(MIXED_RUN, (run: string) => (/[a-z]/.test(run) && /[0-9@$]/.test(run) ? run.replace(/[0-9@$]/g, (c) => LEET_LETTER[c] ?? c) : run));
}

/**
 * Hexadecimal bytes ("49 67 6e 6f 72 65 ...", "\\x49\\x67...", "0x49 0x67 ...", "%49%67..."), 12 to 32,768 of them in
 * one run, starting at a word boundary; decoded when the text names hexadecimal ({@link HEX_CUE}), within
 * {@link MAX_VIEW_CHARS} of where.
 */
const HEX_RUN = /(?<![0-9A-Za-z])(?:(?:\\x|0x|%)?[0-9a-fA-F]{2}[\s,:;]{0,2}){12,32768}/g;
const HEX_NOISE = /\\x|0x|[%\s,:;]/g;

/**
 * The gate alternatives of {@link DECODE_CUE} (features.ts conventions: a space is any non-word character, so
 * "base  64" is "base -64").
 */
export const DECODE_CUE_GATE: readonly string[] = [
  " decod", " dekod", " d cod", " base64", " base 64", " base  64", " rot13", " rot 13", " rot  13", " caesar ", " revers", " backward", " r ckw",
  " encoded", " kodiert", " codificad", " cifrad", " al rev s", "l envers", " hex ", " hexadec", " hexadez", " hexad c",
];
/** The gate alternatives of {@link JOINED_CUE} (a separator is a non-word character). */
export const JOINED_CUE_GATE: readonly string[] = JOINED_WORDS.map((w) => " " + [...w].join(" "));
/** The gate alternatives of {@link LEET_CUE}. */
export const LEET_CUE_GATE: readonly string[] = [...new Set(LEET_GATED.map(leetGate))];
/** Bits of a text's view gates ({@link decodedViews}' `open`): a decoding named, joined letters, digits for letters. */
export const VIEW_DECODE = 1;
export const VIEW_JOINED = 2;
export const VIEW_LETTERS = 4;

/** A base64 run long enough to hide an instruction (12 bytes); longer runs come in aligned pieces of 64 K characters. */
const BASE64_RUN = /[A-Za-z0-9+/]{16,65536}={0,2}/g;
/** Text between quotes of any common kind (the part to reverse in "reverse this: \"...\""). */
const QUOTED = /["“”„«»'‘’]([^"“”„«»]{8,})["“”„«»'‘’]/g;
/**
 * At most this many characters (UTF-16 units) per view: a payload to decode is short, and a megabyte that asks for ROT13
 * would otherwise be scored twice over as text of random-looking words (~240 ms per MB).
 */
export const MAX_VIEW_CHARS = 32 * 1024;

/** Readable text: at least 8 characters, a space, no replacement character, and 90 % letters, digits, spaces or punctuation. */
function readable(s: string): boolean {
  if (s.length < 8 || !s.includes(" ") || s.includes("\uFFFD")) return false;
  UNREADABLE.lastIndex = 0;
  let bad = 0;
  while (UNREADABLE.exec(s) !== null) if (++bad > 0.1 * s.length) return false;
  return true;
}
/** What readable text has little of: control characters, symbols other than + = < > $ ^ ` | ~, unassigned code points. */
const UNREADABLE = /[^\p{L}\p{N}\p{P}\p{Zs}\n\t+=<>$^`|~]/gu;

function rot13(s: string): string {
  return s.replace(/[A-Za-z]/g, (c) => {
    const base = c <= "Z" ? 65 : 97;
    return String.fromCharCode(((c.charCodeAt(0) - base + 13) % 26) + base);
  });
}

const reverse = (s: string): string => [...s].reverse().join("");

/**
 * At most `chars` characters of `text` from where the normalised text `t` asks for the decoding (`cue`'s first match in
 * `t`; normalising keeps most offsets, and the part starts 1 K characters earlier to allow for the rest).
 */
function around(text: string, t: string, cue: RegExp, chars: number): string {
  if (text.length <= chars) return text;
  const at = Math.max(0, Math.min(t.search(cue), text.length) - 1024);
  return text.slice(at, at + chars);
}

/**
 * The decoded views of `text` (see the module comment), or none when its normalised form `t` names no decoding.
 * `t`: `normalizeForInjection(text)`. Never throws; a run that is not base64 of readable text is skipped.
 */
export function decodedViews(text: string, t: string, open = VIEW_DECODE | VIEW_JOINED | VIEW_LETTERS): string[] {
  const cap = Math.min(text.length, MAX_VIEW_CHARS);
  const views: string[] = [];
  if (open & VIEW_JOINED && JOINED_CUE.test(t)) views.push(joinLetters(around(t, t, JOINED_CUE, cap)));
  if (open & VIEW_LETTERS && LEET_CUE.test(t)) views.push(unleet(around(t, t, LEET_CUE, cap)));
  if (!(open & VIEW_DECODE) || !DECODE_CUE.test(t)) return views;
  let decoded = "";
  BASE64_RUN.lastIndex = 0;
  for (let m = BASE64_RUN.exec(text); m !== null && decoded.length < cap; m = BASE64_RUN.exec(text)) {
    const s = Buffer.from(m[0], "base64").toString("utf8");
    if (readable(s)) decoded += (decoded ? "\n" : "") + s;
  }
  if (decoded) views.push(decoded.slice(0, cap));
  let hex = "";
  HEX_RUN.lastIndex = 0;
  if (HEX_CUE.test(t)) {
    // (from where the text names hexadecimal, as for ROT13: a megabyte that says "hex" once is not scanned whole)
    const part = around(text, t, HEX_CUE, cap);
    for (let m = HEX_RUN.exec(part); m !== null && hex.length < cap; m = HEX_RUN.exec(part)) {
      const digits = m[0].replace(HEX_NOISE, "");
      // (a word of hexadecimal letters next to the run, "... fe" or "decode: ...", decodes to a stray byte at an end)
      const s = digits.length % 2 === 0 ? Buffer.from(digits, "hex").toString("utf8").replace(/^\uFFFD+|\uFFFD+$/g, "") : "";
      if (readable(s)) hex += (hex ? "\n" : "") + s;
    }
  }
  if (hex) views.push(hex.slice(0, cap));
  if (ROT13_CUE.test(t)) views.push(rot13(around(text, t, ROT13_CUE, cap)));
  if (REVERSE_CUE.test(t)) {
    const part = around(text, t, REVERSE_CUE, cap);
    let quoted = "";
    QUOTED.lastIndex = 0;
    for (let m = QUOTED.exec(part); m !== null; m = QUOTED.exec(part)) quoted += (quoted ? "\n" : "") + reverse(m[1]!);
    if (quoted) views.push(quoted.slice(0, cap));
    views.push(reverse(part));
  }
  return views;
}
