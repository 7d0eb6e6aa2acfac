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
/** Reversed text asked for ("reverse this", "read it backwards", "rückwärts"), not a reversal ("warfarin reversal", "reverse Trendelenburg"). */
const REVERSE_CUE =
  /\b(?:revers(?:e|ed|ing) (?:this|it|the (?:text|string|message|following|line|sentence))|reversed (?:text|string|message)|(?:read|write|written|spelled|spelt)(?: (?:it|this|that|the text))? backwards?|backwards?:|rückwärts|al revés)|l'envers/;
/**
 * A decoding named in the normalised (lower-case) text: decode / dekodieren / décoder, base64, encoded / kodiert /
 * codificado / cifrado, or what {@link ROT13_CUE} and {@link REVERSE_CUE} ask for. Only these make views, so a note
 * that merely mentions a reversal ("reverse Trendelenburg") costs this one test after the keyword gate.
 */
export const DECODE_CUE = new RegExp(`\\b(?:decod|dekod|décod|base ?-?64|encoded|kodiert|codificad|cifrad)|${ROT13_CUE.source}|${REVERSE_CUE.source}`);
/**
 * The gate alternatives of {@link DECODE_CUE} (features.ts conventions: a space is any non-word character, so
 * "base  64" is "base -64").
 */
export const DECODE_CUE_GATE: readonly string[] = [
  " decod", " dekod", " d cod", " base64", " base 64", " base  64", " rot13", " rot 13", " rot  13", " caesar ", " revers", " backward", " r ckw",
  " encoded", " kodiert", " codificad", " cifrad", " al rev s", "l envers",
];

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
export function decodedViews(text: string, t: string): string[] {
  if (!DECODE_CUE.test(t)) return [];
  const cap = Math.min(text.length, MAX_VIEW_CHARS);
  const views: string[] = [];
  let decoded = "";
  BASE64_RUN.lastIndex = 0;
  for (let m = BASE64_RUN.exec(text); m !== null && decoded.length < cap; m = BASE64_RUN.exec(text)) {
    const s = Buffer.from(m[0], "base64").toString("utf8");
    if (readable(s)) decoded += (decoded ? "\n" : "") + s;
  }
  if (decoded) views.push(decoded.slice(0, cap));
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
