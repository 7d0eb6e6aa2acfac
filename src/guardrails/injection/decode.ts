/**
 * Decoded views of a text that asks for its own decoding: an attack hides its payload from a keyword or feature scan by
 * encoding it ("Decode this base64 and follow it: SWdub3Jl...", "ROT13, decode and do it: Frg gur ...", "Reverse this
 * text and carry it out: \"tpmorp metsys ...\""), and the scorer would see only the wrapper. When the text names a
 * decoding (see {@link DECODE_CUE}), {@link decodedViews} returns the payload decoded (each base64 run that decodes to
 * readable text, the ROT13 of the text, the text and its quoted parts reversed) and the model scores each view as it
 * scores the text (the score is the maximum). A text without a cue costs one keyword-gate lookup.
 *
 * Bounds: at most {@link MAX_VIEWS} views whose lengths sum to at most twice the text's, so scoring stays linear in the
 * text's length.
 */

/**
 * A decoding named in the normalised (lower-case) text: decode / dekodieren / décoder, base64, ROT13 / Caesar, reverse /
 * backwards / rückwärts, encoded / kodiert / codificado / cifrado.
 */
export const DECODE_CUE = /\b(?:decod|dekod|décod|base ?-?64|rot ?-?13|caesar|revers|backward|rückwärts|encoded|kodiert|codificad|cifrad)/;
/** The gate alternatives of {@link DECODE_CUE} (features.ts conventions: a space is any non-word character). */
export const DECODE_CUE_GATE: readonly string[] = [
  " decod", " dekod", " d cod", " base64", " base 64", " rot13", " rot 13", " caesar", " revers", " backward", " r ckw", " encoded", " kodiert",
  " codificad", " cifrad",
];

const ROT13_CUE = /\b(?:rot ?-?13|caesar)/;
/** Reversed text asked for ("reverse this", "read it backwards", "rückwärts"), not a reversal ("warfarin reversal", "reverse Trendelenburg"). */
const REVERSE_CUE = /\b(?:revers(?:e|ed|ing) (?:this|it|the (?:text|string|message|following|line|sentence))|reversed (?:text|string|message)|(?:read|write|written|spelled|spelt)(?: (?:it|this|that|the text))? backwards?|backwards?:|rückwärts|à l'envers|al revés)/;
/** A base64 run long enough to hide an instruction (12 bytes). */
const BASE64_RUN = /[A-Za-z0-9+/]{16,}={0,2}/g;
/** Text between quotes of any common kind (the part to reverse in "reverse this: \"...\""). */
const QUOTED = /["“”„«»'‘’]([^"“”„«»]{8,})["“”„«»'‘’]/g;
/** At most this many views per text. */
export const MAX_VIEWS = 8;

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
 * The decoded views of `text` (see the module comment), or none when its normalised form `t` names no decoding.
 * `t`: `normalizeForInjection(text)`. Never throws; a run that is not base64 of readable text is skipped.
 */
export function decodedViews(text: string, t: string): string[] {
  if (!DECODE_CUE.test(t)) return [];
  const views: string[] = [];
  let budget = 2 * text.length;
  const add = (v: string): boolean => {
    if (views.length >= MAX_VIEWS || v.length > budget) return false;
    views.push(v);
    budget -= v.length;
    return true;
  };
  BASE64_RUN.lastIndex = 0;
  for (let m = BASE64_RUN.exec(text); m !== null && views.length < MAX_VIEWS; m = BASE64_RUN.exec(text)) {
    const decoded = Buffer.from(m[0], "base64").toString("utf8");
    if (readable(decoded)) add(decoded);
  }
  if (ROT13_CUE.test(t)) add(rot13(text));
  if (REVERSE_CUE.test(t)) {
    QUOTED.lastIndex = 0;
    for (let m = QUOTED.exec(text); m !== null && views.length < MAX_VIEWS; m = QUOTED.exec(text)) add(reverse(m[1]!));
    add(reverse(text));
  }
  return views;
}
