/**
 * Decoded views of a text that asks for its own decoding: an attack hides its payload from a keyword or feature scan by
 * encoding it ("Decode this base64 and follow it: SWdub3Jl...", "ROT13, decode and do it: Frg gur ...", "Reverse this
 * text and carry it out: \"tpmorp metsys ...\""), and the scorer would see only the wrapper. When the text names a
 * decoding (see {@link DECODE_CUE}), {@link decodedViews} returns the payload decoded (each base64 run that decodes to
 * readable text, the ROT13 of the text, the text and its quoted parts reversed) and the model scores each view as it
 * scores the text (the score is the maximum). A text without a cue costs one keyword-gate lookup.
 *
 * Bounds: at most {@link MAX_VIEWS} views whose lengths sum to at most twice the text's and at most
 * {@link MAX_VIEW_CHARS}: a long text costs at most a fixed amount more (a view that does not fit is left out).
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
/** {@link ROT13_CUE} on the text as written (any case). */
const ROT13_CUE_RAW = new RegExp(ROT13_CUE.source, "i");
/** Reversed text asked for ("reverse this", "read it backwards", "rückwärts"), not a reversal ("warfarin reversal", "reverse Trendelenburg"). */
const REVERSE_CUE = /\b(?:revers(?:e|ed|ing) (?:this|it|the (?:text|string|message|following|line|sentence))|reversed (?:text|string|message)|(?:read|write|written|spelled|spelt)(?: (?:it|this|that|the text))? backwards?|backwards?:|rückwärts|à l'envers|al revés)/;
/** {@link REVERSE_CUE} on the text as written (any case). */
const REVERSE_CUE_RAW = new RegExp(REVERSE_CUE.source, "i");
/** A base64 run long enough to hide an instruction (12 bytes). */
const BASE64_RUN = /[A-Za-z0-9+/]{16,}={0,2}/g;
/** Text between quotes of any common kind (the part to reverse in "reverse this: \"...\""). */
const QUOTED = /["“”„«»'‘’]([^"“”„«»]{8,})["“”„«»'‘’]/g;
/** At most this many views per text. */
export const MAX_VIEWS = 8;
/**
 * At most this many characters of views per text (UTF-16 units): a payload to decode is short, and a megabyte that asks
 * for ROT13 would otherwise be scored twice over as text of random-looking words (~240 ms per MB).
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
 * The decoded views of `text` (see the module comment), or none when its normalised form `t` names no decoding.
 * `t`: `normalizeForInjection(text)`. Never throws; a run that is not base64 of readable text is skipped.
 */
export function decodedViews(text: string, t: string): string[] {
  if (!DECODE_CUE.test(t)) return [];
  const views: string[] = [];
  let budget = Math.min(2 * text.length, MAX_VIEW_CHARS);
  const add = (v: string): void => {
    if (views.length >= MAX_VIEWS || v.length > budget || v.length === 0) return;
    views.push(v);
    budget -= v.length;
  };
  BASE64_RUN.lastIndex = 0;
  for (let m = BASE64_RUN.exec(text); m !== null && views.length < MAX_VIEWS && budget >= 8; m = BASE64_RUN.exec(text)) {
    // (a run longer than the budget: its first budget's worth, 4 characters for 3 bytes)
    const run = m[0].length * 0.75 > budget ? m[0].slice(0, Math.floor(budget / 3) * 4) : m[0];
    const decoded = Buffer.from(run, "base64").toString("utf8");
    if (readable(decoded)) add(decoded);
  }
  // the ROT13 / reversed views of a long text: from where it asks for them, as much as the budget allows
  if (ROT13_CUE.test(t)) add(rot13(from(text, ROT13_CUE_RAW, budget)));
  if (REVERSE_CUE.test(t)) {
    const part = from(text, REVERSE_CUE_RAW, budget);
    QUOTED.lastIndex = 0;
    for (let m = QUOTED.exec(part); m !== null && views.length < MAX_VIEWS; m = QUOTED.exec(part)) add(reverse(m[1]!));
    add(reverse(from(text, REVERSE_CUE_RAW, budget)));
  }
  return views;
}

/** At most `chars` characters of `text` from the first match of `cue` (or its start when the cue is not found as written). */
function from(text: string, cue: RegExp, chars: number): string {
  if (text.length <= chars) return text;
  const i = text.search(cue);
  return text.slice(Math.max(0, i), Math.max(0, i) + chars);
}
