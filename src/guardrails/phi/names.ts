/**
 * Names of people in context: titles, relation and role words, speech cues, the name dictionary, initials and
 * particles, lists of people, signatures, speaker labels, and every other mention of a name found once. Each rule is a
 * pass over the tokens of ./tokens.ts (small functions, so that each is optimised on its own and early); places are in
 * ./places.ts.
 */
import type { FoundList, PhiEntityType } from "./entities.js";
import { findPlaces } from "./places.js";
import { eponymBefore, nameContext, type NameContext, SH_ASCII, SH_CAP, SH_HY, SH_LW, SH_NC, SH_TC, SH_UP, X_EXTRA } from "./tokens.js";

import { F_AMBIGUOUS, F_CITY, F_COMMON, F_ENAME, F_FIRST, F_LAST, type Lexicon } from "./lexicon.js";
import {
  CREDENTIAL,
  CREDENTIAL_LOWER,
  NAME_IS,
  NAME_PARTICLES,
  NON_ASCII,
  NOT_NAMES,
  POST_CUE,
  RELATIONS,
  ROLE_ABBR,
  UNIT_ACRONYMS,
  WEAK_RELATIONS,
  W_CREDENTIALS,
  W_CREDENTIAL_WORDS,
  W_CUE_WORDS,
  W_LOC_PREPOSITIONS,
  W_NAME_PREV,
  W_NOT_NAMES,
  W_RELATIONS,
  W_ROLE_ABBR,
  W_ROLE_WORDS,
  W_SUBJECT_VERBS,
  W_TITLES,
  W_UNIT_ACRONYMS,
  W_WARD_PREV,
  W_LOC_PREV,
  W_WEAK_RELATIONS,
} from "./words.js";
import { isLow, isUp, lineStartBefore, wsGapAt } from "./text.js";
import { US_STATES } from "./patterns.js";
/**
 * The names of a text as tokens: token `i < n` is a name when `isName[i]` is 1, at `[S[i], E[i])` (ascending, not
 * overlapping). Views of reused arrays: valid until the next text is tokenised.
 */
export interface NameTokens {
  n: number;
  S: Int32Array;
  E: Int32Array;
  isName: Uint8Array;
}

/**
 * Finds names (NAME) and places (LOCATION) of the types asked for: adds the places to `found` and returns the names
 * (when NAME is asked for) as tokens, which the detector merges with `found` in order (one object per name token and
 * their sort were most of the cost of a text of names).
 */
export function findNames(text: string, found: FoundList, lx: Lexicon, extra: ReadonlySet<string>, types: ReadonlySet<PhiEntityType>, context?: NameContext): NameTokens | undefined {
  // the text's tokens: those of nameContext(text, ...) made earlier in the same detection, or made now
  const c = context ?? nameContext(text, lx, extra);
  cueRules(c);
  extendRuns(c);
  initialsAndPairs(c);
  backwards(c);
  signatures(c);
  peopleLists(c);
  particles(c);
  relationInParentheses(c);
  lowerInitials(c);
  beforeAware(c);
  speakerLabels(c);
  lowerCaseText(c);
  everyMention(c);
  if (types.has("LOCATION")) findPlaces(c, found);
  return types.has("NAME") ? { n: c.n, S: c.S, E: c.E, isName: c.isName } : undefined;
}


/** Titles, speech cues, person verbs, signature lines, relations and dictionary names in name shape (rules 1-3). */
function cueRules(c: NameContext): void {
  const { text, n, S, E, F, SH, isName, weak, common, known, onlyIntl, isCommon, gap, sentenceStart, allCapsText, w, lower, lowerLen, lowerIs } = c;
  for (let i = 0; i < n; i++) {
    const f = F[i]!;
    const sh = SH[i]!;
    const tc = (sh & SH_TC) !== 0;
    // 1. after a title ("Dr. Jones", "mrs. marcela carlson", "DR SULLIVAN")
    if (((f & W_TITLES) !== 0) && i + 1 < n && titleGap(text, E[i]!, S[i + 1]!)) {
      const nx = i + 1;
      const nf = F[nx]!;
      const ncap = (SH[nx]! & SH_CAP) !== 0;
      // "MS"/"ms" without a full stop is mental status or morphine sulfate: only before a dictionary name
      if (lowerIs(i, "ms") && w(i) !== "Ms" && !gap(i, nx).startsWith(".") && !(known(nx) && !isCommon(nx))) continue;
      // "MR"/"MS" right after a grade, unless a dictionary name follows, or written in capitals before a common word
      // that is no census name, is mitral regurgitation or mental status ending a sentence ("3-4+MR. Given", "4+ MR. PT HAS",
      // "in MS. Aspiration", "IN MS. TOLERATING"; "MR. SMITH", "Mr. Abc" stay names, and so does a capitalised name
      // that is an English word but no common one after the grade: "4+ MR. Smith notified", "2+ MS. GRACE"); a title that is a whole word ends one before a full stop ("see your
      // doctor. They"); no title names a role word ("Sir bot", "DR. FELLOW"), unless the role word is also a name and
      // capitalised in mixed-case text ("Mr. Case", "Ms. Coach"), nor a lower-case letter before a colon, a heading
      // ("ms. p: follow", mental status then the plan of a SOAP note; "dr. x, who" stays a name)
      // ("mr" / "ms" by char codes: this runs for every title, and 1 MB of "Dr. " has 260,000)
      const t1 = text.charCodeAt(S[i]! + 1) | 32;
      if (E[i]! - S[i]! === 2 && (text.charCodeAt(S[i]!) | 32) === 109 && (t1 === 114 || t1 === 115) && (/(?:\+\s?|\d)$/.test(text.slice(Math.max(0, S[i]! - 2), S[i]!)) ? !(known(nx) && !isCommon(nx)) && !((nf & (F_AMBIGUOUS | F_COMMON)) === F_AMBIGUOUS && ncap) : isUp(text.charCodeAt(S[i]! + 1)) && (nf & F_COMMON) !== 0 && !known(nx) && (nf & F_AMBIGUOUS) === 0)) continue;
      if ((nf & W_ROLE_WORDS) !== 0 ? !known(nx) && !((SH[nx]! & SH_TC) !== 0 && (nf & (F_AMBIGUOUS | F_ENAME)) !== 0 && !allCapsText(nx)) : (E[nx]! - S[nx]! === 1 && text.charCodeAt(E[nx]!) === 58 && isLow(text.charCodeAt(S[nx]!))) || (E[i]! - S[i]! > 4 && text.charCodeAt(E[i]!) === 46)) continue;
      if (ncap || known(nx) || ((nf & F_AMBIGUOUS) !== 0) || !((nf & F_COMMON) !== 0)) {
        if (!(((nf & F_COMMON) !== 0) && !known(nx) && !((nf & F_AMBIGUOUS) !== 0) && !ncap)) isName[nx] = 1;
      }
      continue;
    }
    // 2a. after "my name is", a speech verb or a greeting: a capitalised word that is not a common word
    // (not one letter: "THIS IS A 61 Y/O")
    if (i > 0 && ((F[i - 1]! & W_NAME_PREV) !== 0) && !((f & F_COMMON) !== 0) && !((f & W_NOT_NAMES) !== 0) && E[i]! - S[i]! > 1 && NAME_IS.test(text.slice(Math.max(0, S[i]! - 12), S[i]!)) && ((sh & SH_CAP) !== 0 || (known(i) && /name is\s$/i.test(text.slice(Math.max(0, S[i]! - 9), S[i]!))))) {
      isName[i] = 1;
      continue;
    }
    // (a title before a colon is a heading: "MS: Recievd sedated", mental status)
    if (i > 0 && ((F[i - 1]! & W_CUE_WORDS) !== 0) && /^[\s,:?]{1,8}$/.test(gap(i - 1, i)) && !((F[i - 1]! & W_TITLES) !== 0 && text.charCodeAt(E[i - 1]!) === 58) && tc && !((f & F_COMMON) !== 0) && !((f & F_AMBIGUOUS) !== 0) && !((f & W_NOT_NAMES) !== 0)) {
      isName[i] = 1;
      weak[i] = 1;
      continue;
    }
    // 2c. a capitalised unknown word followed by a person verb ("Timotea lives on", "Vinka: What"); only the two
    // characters after the word that can start a cue of POST_CUE need the slice and the pattern
    if (((tc && !((f & F_COMMON) !== 0) && !((f & F_AMBIGUOUS) !== 0)) || ((sh & (SH_LW | SH_UP)) !== 0 && ((f & F_FIRST) !== 0) && !((f & W_NOT_NAMES) !== 0))) && (f & (W_NOT_NAMES | W_RELATIONS | W_ROLE_WORDS)) === 0 && postCueStart(text, E[i]!) && POST_CUE.test(text.slice(E[i]!, E[i]! + 16).toLowerCase())) {
      isName[i] = 1;
      weak[i] = 1;
      continue;
    }
    // 2d. a line of two or three capitalised words (a letter head or signature: "Satu Elomo")
    if (tc && !((f & F_COMMON) !== 0) && !((f & W_NOT_NAMES) !== 0) && lineStartBefore(text, S[i]!) && i + 1 < n) {
      const nx = i + 1;
      const s = S[i]!;
      const line = text.slice(s, text.indexOf("\n", s) < 0 ? text.length : text.indexOf("\n", s));
      // the words of the line are split only when the line has the shape (a long line fails the pattern early)
      if (/^[\p{Lu}][\p{L}'’-]+(?: [\p{Lu}]\.?)?(?: [\p{Lu}][\p{L}'’-]+){1,2}$/u.test(line.trim()) && !((F[nx]! & F_COMMON) !== 0) && line.trim().split(/\s+/).every((x) => !common.has(x.toLowerCase()) && !NOT_NAMES.has(x.toLowerCase()) && !UNIT_ACRONYMS.has(x.toLowerCase()))) {
        // (a credential ending the line is not part of the name: "David Murray RRT")
        for (let j = i; j < n && S[j]! < s + line.length; j++) if ((F[j]! & W_CREDENTIALS) === 0) isName[j] = 1;
        continue;
      }
    }
    // 2b. a capitalised word with letters outside ASCII (names in English text: "Szöllösy", "Guðmundsdóttir")
    if (tc && (sh & SH_ASCII) === 0 && NON_ASCII.test(w(i)) && !((f & F_COMMON) !== 0) && !((f & W_NOT_NAMES) !== 0)) {
      isName[i] = 1;
      continue;
    }
    // 2. after a relation or "my name is" (a hyphenated word: its last part, "step-daughter")
    const hy = (sh & SH_HY) !== 0;
    if ((hy ? RELATIONS.has(lastPart(lower(i))) : (f & W_RELATIONS) !== 0) && i + 1 < n) {
      // the relation word itself answers by its bits; only a hyphenated word's last part is looked up by name
      const rel = hy ? lastPart(lower(i)) : "";
      let j = i + 1;
      const g = gap(i, j);
      if (!/^[\s,(:"'“]{1,4}$/.test(g)) continue;
      if (lowerIs(j, "is") && j + 1 < n) j++;
      const nx = j;
      // "with PAO2", "to SaO2": a lab value, not a name
      if (isDigit(text.charCodeAt(E[nx]!))) continue;
      const nf = F[nx]!;
      const nsh = SH[nx]!;
      const isWeak = hy ? WEAK_RELATIONS.has(rel) : (f & W_WEAK_RELATIONS) !== 0;
      if (isWeak) {
        if (lowerIs(i, "and")) continue; // handled when extending runs
        // in upper-case text "to" / "with" / "from" name only a first name or a city ("TO ROME", "WITH THOMAS"; not "NGT
        // TO LIS", "WITH CONT", "WITH GREY LIQUID STOOL"; "PER", "BY", "CALLED" still name a surname), and an
        // upper-case word of two letters in mixed-case text is an acronym ("with LE spasm"); after a word of talk the
        // relation names a person again ("REPORT FROM GARCIA", "SPOKE WITH OKAFOR", "CALL TO NGUYEN")
        const upperOnly = (nsh & SH_UP) !== 0 && (nsh & SH_TC) === 0;
        if (upperOnly && (allCapsText(nx) ? (nf & (F_FIRST | F_CITY | X_EXTRA)) === 0 && E[nx]! - S[nx]! > 1 && (lowerIs(i, "to") || lowerIs(i, "with") || lowerIs(i, "from")) && !TALK_BEFORE.test(text.slice(Math.max(0, S[i]! - 14), S[i]!)) : E[nx]! - S[nx]! <= 2)) continue;
        // (a US state after "to" / "from" is a place, and no identifier: Safe Harbor keeps states; "moving from Florida",
        // "retire to florida"; asked last, of a dictionary name only)
        if ((known(nx) || ((nf & X_EXTRA) !== 0)) && !isCommon(nx) && (nf & W_ROLE_WORDS) === 0 && ((nsh & (SH_TC | SH_UP)) !== 0 || ((nsh & SH_LW) !== 0 && ((nf & F_FIRST) !== 0))) && !eponymBefore(c, nx) && !((lowerIs(i, "to") || lowerIs(i, "from")) && STATE_NAMES.has(lower(nx)))) isName[j] = 1;
      } else if (hy ? ROLE_ABBR.has(rel) : (f & W_ROLE_ABBR) !== 0) {
        // "NP Grace", "rn amber", "PA Smith"; not "PA sats", "RN aware"
        // (nor a word before a number: "PA STAS 73,72", pulmonary artery pressures; a month/day date is no measure:
        // "RN Julia 10/2", "NP Ada 4/11")
        if (!((nf & W_NOT_NAMES) !== 0) && (((known(nx) || (nf & F_ENAME) !== 0) && !((nf & F_COMMON) !== 0)) || ((nsh & SH_NC) !== 0 && !((nf & F_COMMON) !== 0) && !allCapsText(j))) && !ROLE_NUMBER_AFTER.test(text.slice(E[nx]!, E[nx]! + 9))) isName[j] = 1;
      } else if (!((nf & F_COMMON) !== 0) && lowerLen(nx) > 1 && (nf & (W_TITLES | W_NOT_NAMES | W_RELATIONS | W_UNIT_ACRONYMS | W_ROLE_WORDS)) === 0 && (known(nx) || ((nsh & SH_CAP) !== 0 && !allCapsText(j)) || ((nsh & SH_LW) !== 0 && ((nf & F_ENAME) !== 0 || (j === i + 1 && (sh & SH_UP) === 0 && !/(?:ed|ing|ly)$/.test(lower(nx)) && !((nf & F_AMBIGUOUS) !== 0)))))) {
        isName[j] = 1;
      } else if (((nf & F_AMBIGUOUS) !== 0) && (nsh & SH_CAP) !== 0 && !allCapsText(j)) {
        isName[j] = 1;
      }
      continue;
    }
    // 3. dictionary names in name shape
    if (isName[i]) continue;
    if (((f & X_EXTRA) !== 0)) {
      isName[i] = 1;
      continue;
    }
    // (nor a word with digits right after it: a lab value or a code, "Sao2", "Sa02", "Ax4")
    // (nor a word right after a size or a temperature: "#6 Shiley", "T max 96.3 Ax")
    if (!known(i) || isCommon(i) || eponymBefore(c, i) || isDigit(text.charCodeAt(E[i]!)) || (S[i]! > 1 && isDigit(text.charCodeAt(S[i]! - 2)) && /(?:(?:^|\s)#\d{1,2}|(?:^|[^\d.])\d{2,3}\.\d) $/.test(text.slice(Math.max(0, S[i]! - 8), S[i]!)))) continue;
    // a US state after a place preposition ("moving from Florida", "in Maryland")
    if (i > 0 && (F[i - 1]! & W_LOC_PREPOSITIONS) !== 0 && STATE_NAMES.has(lower(i))) continue;
    // a name known only from other countries' lists, starting a sentence: only as a subject ("Sunniva is", "Aksel Berg")
    if (onlyIntl(i) && (!tc || ((sentenceStart(i) || E[i]! - S[i]! < 5) && !(i + 1 < n && wsGapAt(text, E[i]!, S[i + 1]!, 1, 2) && (((F[i + 1]! & W_SUBJECT_VERBS) !== 0) || ((SH[i + 1]! & SH_NC) !== 0 && known(i + 1) && !isCommon(i + 1))))))) continue;
    if (tc) {
      isName[i] = 1;
    } else if ((sh & SH_UP) !== 0 && E[i]! - S[i]! > 2 && i + 1 < n && known(i + 1) && !isCommon(i + 1) && wsGapAt(text, E[i]!, S[i + 1]!, 1, 2)) {
      isName[i] = 1;
      isName[i + 1] = 1;
    } else if ((f & (F_LAST | W_UNIT_ACRONYMS)) === F_LAST && (sh & SH_LW) === 0 && i + 1 < n && wsGapAt(text, E[i]!, S[i + 1]!, 1, 2) && (lowerIs(i + 1, "family") || lowerIs(i + 1, "families"))) {
      // a surname before "family", in any case and however short ("discussed with WU family", "THE DAO FAMILY AT BEDSIDE")
      isName[i] = 1;
    } else if ((sh & SH_LW) !== 0 && ((f & F_FIRST) !== 0) && i + 1 < n && ((F[i + 1]! & F_LAST) !== 0) && !isCommon(i + 1) && wsGapAt(text, E[i]!, S[i + 1]!, 1, 2) && !eponymBefore(c, i + 1)) {
      isName[i] = 1;
      isName[i + 1] = 1;
    }
  }
}

/**
 * The characters at `at` and `at + 1` can start a match of POST_CUE on the lower case of the text there: "'s" or a space
 * and the first letter of one of its verbs (any character outside ASCII is let through: its lower case is not tested here).
 */
export function postCueStart(text: string, at: number): boolean {
  const a = text.charCodeAt(at);
  if (a !== 32 && a !== 39) return false;
  const b = text.charCodeAt(at + 1);
  if (b >= 128) return true;
  if (a === 39) return b === 115 || b === 83;
  return b < 128 && POST_CUE_FIRST[b] === 1;
}
/** ASCII letters (both cases) that start a verb of POST_CUE after its space: l, i, s, h, w, t, a, v, c, p, u. */
const POST_CUE_FIRST = new Uint8Array(128);
for (const ch of "lishwtavcpu") POST_CUE_FIRST[ch.charCodeAt(0)] = POST_CUE_FIRST[ch.toUpperCase().charCodeAt(0)] = 1;

/**
 * One-word US state names (./patterns.ts US_STATES), but for the two that are among the 1,000 most frequent census first
 * names (Virginia 34th, Georgia 230th of the female list; Florida, Maryland, Nevada rank past 1,600): "to Virginia" may
 * be a person.
 */
const STATE_NAMES: ReadonlySet<string> = new Set(US_STATES.split("|").filter((x) => !x.includes(" ") && x !== "virginia" && x !== "georgia"));

/**
 * A number right after the word after a role abbreviation, other than a month/day date: a measure ("PA STAS 73,72",
 * pulmonary artery saturations), so the word is no name.
 */
const ROLE_NUMBER_AFTER = /^\s{1,2}(?!(?:0?[1-9]|1[0-2])\/(?:0?[1-9]|[12]\d|3[01])(?!\d|\.\d))\d{1,3}(?![\d-])/;

/** The char code is an ASCII digit. */
const isDigit = (ch: number): boolean => ch >= 48 && ch <= 57;

/**
 * A word of talk right before "to" / "with" / "from": what follows is whom one talks with ("REPORT FROM", "SPOKE WITH",
 * "CALL TO", "D/W"), so an upper-case surname there is a person, not a word of the note.
 */
const TALK_BEFORE = /(?:^|[^a-z])(?:reports?|call(?:s|ed)?|phone(?:d| call)?|messages?|msg|paged?|spoke(?:n)?|talk(?:s|ed|ing)?|discuss(?:ed|ion)|d\/w|met|visit(?:ed)?|update(?:d)?|consult(?:ed)?|conversation|meeting|heard|signed out)\s{1,2}$/i;

/** The part of a hyphenated word after its last hyphen. */
const lastPart = (w: string): string => w.slice(w.lastIndexOf("-") + 1);

/** 4. extend runs: neighbours that look like names, initials, and signatures */
function extendRuns(c: NameContext): void {
  // each candidate is next to a name
  if (c.isName.indexOf(1) < 0) return;
  const { text, n, S, E, F, SH, isName, known, gap, nameLike, lower } = c;
  // 4. extend runs: neighbours that look like names, initials, and signatures ("DAN A. FORMAN-LYONS, RRT")
  for (let pass = 0; pass < 2; pass++) {
    for (let i = 0; i < n; i++) {
      if (!isName[i]) continue;
      const sh = SH[i]!;
      if (i + 1 < n && !isName[i + 1]) {
        const nx = i + 1;
        const nsh = SH[nx]!;
        const nlen = E[nx]! - S[nx]!;
        // a full stop between them only after an initial ("J. Smith"), not at the end of a sentence ("Dr. White. Will ...")
        const dot = S[nx]! > E[i]! && text.charCodeAt(E[i]!) === 46;
        if ((dot ? E[i]! - S[i]! === 1 && wsGapAt(text, E[i]!, S[nx]!, 1, 2, 46, true) : wsGapAt(text, E[i]!, S[nx]!, 1, 2)) && ((nlen === 1 && (nsh & SH_UP) !== 0) || (nameLike(nx) && (((nsh ^ sh) & SH_CAP) === 0 || known(nx))) || ((sh & SH_TC) !== 0 && (nsh & SH_TC) !== 0 && ((F[nx]! & F_AMBIGUOUS) !== 0) && !((F[nx]! & W_NOT_NAMES) !== 0)))) {
          // not a unit acronym, nor an unknown word that is a verb form or joins common words ("DR LAVELY NOTIFED",
          // "DR. SHAUGHNESSY PRONOUNCED", "DR. HOLMES CALLED-PT", "DR MADDEN PICC")
          if (!(nlen === 1 && !/^\.?\s/.test(text.slice(E[nx]!, E[nx]! + 2)) && !/^\s/.test(gap(i, nx))) && (F[nx]! & (W_UNIT_ACRONYMS | W_CREDENTIALS)) === 0 && !(nlen > 4 && !known(nx) && (/(?:ed|ing)$/.test(lower(nx)) || allPartsCommon(c, lower(nx))))) isName[nx] = 1;
        }
      }
      if (i > 0 && !isName[i - 1]) {
        const pv = i - 1;
        const psh = SH[pv]!;
        const pf = F[pv]!;
        const dot = S[i]! > E[pv]! && text.charCodeAt(E[pv]!) === 46;
        if ((dot ? E[pv]! - S[pv]! === 1 && wsGapAt(text, E[pv]!, S[i]!, 1, 2, 46, true) : wsGapAt(text, E[pv]!, S[i]!, 1, 2)) && ((E[pv]! - S[pv]! === 1 && (psh & SH_UP) !== 0 && i > 1 && isName[i - 2]) || (nameLike(pv) && known(pv) && ((psh ^ sh) & SH_CAP) === 0)) && !pronounI(text, S[pv]!, E[pv]!)) {
          isName[pv] = 1;
        } else if (S[i]! - E[pv]! === 1 && text.charCodeAt(E[pv]!) === 32 && (psh & SH_TC) !== 0 && (sh & SH_NC) !== 0 && (pf & (F_COMMON | F_AMBIGUOUS | W_NOT_NAMES | W_UNIT_ACRONYMS | W_RELATIONS | W_TITLES | W_CUE_WORDS)) === 0 && !pronounI(text, S[pv]!, E[pv]!)) {
          // "Radu Crosson": a capitalised unknown word right before a surname
          isName[pv] = 1;
        }
      }
    }
  }
}

/** `text[s, e)` is the pronoun "I" with a contraction ("I'm", "I’d", "I've", "I'll"), which reads like "O'Neil". */
function pronounI(text: string, s: number, e: number): boolean {
  const q = text.charCodeAt(s + 1);
  return e - s >= 3 && e - s <= 4 && text.charCodeAt(s) === 73 && (q === 39 || q === 0x2019);
}

/** A hyphenated word whose every part is a common word or shorter than three letters ("CALLED-PT", "VA-INTUBATED"). */
function allPartsCommon(c: NameContext, w: string): boolean {
  if (!w.includes("-")) return false;
  for (const p of w.split("-")) if (p.length >= 3 && !c.common.has(p)) return false;
  return true;
}

/** initial + surname and <name> and <name> */
function initialsAndPairs(c: NameContext): void {
  // each candidate is an upper-case letter or next to a name
  if ((c.anySH & SH_UP) === 0 && c.isName.indexOf(1) < 0) return;
  const { text, n, S, E, F, SH, isName, known, isCommon, allCapsText, lowerIs } = c;
  // initial + surname ("E. WELSH", "Z. Miller") and "<name> and <name>"
  for (let i = 0; i + 1 < n; i++) {
    const nx = i + 1;
    const sh = SH[i]!;
    const nf = F[nx]!;
    const nsh = SH[nx]!;
    const nlen = E[nx]! - S[nx]!;
    if (E[i]! - S[i]! === 1 && (sh & SH_UP) !== 0 && wsGapAt(text, E[i]!, S[nx]!, 1, 2, 46, true) && nlen > 1 && !((nf & W_NOT_NAMES) !== 0) && (allCapsText(nx) ? (known(nx) && !isCommon(nx)) || (nlen > 2 && !((nf & F_COMMON) !== 0) && !((nf & F_AMBIGUOUS) !== 0)) : (nsh & SH_NC) !== 0 && !((nf & F_COMMON) !== 0)) && !/[/\w'’&<>=+.]$/.test(text.slice(Math.max(0, S[i]! - 1), S[i]!)) && !letterOfPhrase(c, i)) {
      isName[i] = 1;
      isName[nx] = 1;
    }
    if (isName[i] && !isName[nx] && wsGapAt(text, E[i]!, S[nx]!, 1, 2, 44, true) && (nsh & SH_TC) !== 0 && (sh & SH_TC) !== 0 && !((nf & F_COMMON) !== 0) && !((nf & F_AMBIGUOUS) !== 0) && !((nf & W_NOT_NAMES) !== 0) && !pronounI(text, S[nx]!, E[nx]!)) {
      isName[nx] = 1;
    }
    if (isName[i] && i + 2 < n && lowerIs(nx, "and") && !isName[i + 2]) {
      const y = i + 2;
      const yf = F[y]!;
      if (((known(y) || ((yf & X_EXTRA) !== 0)) && !isCommon(y)) || ((SH[y]! & SH_NC) !== 0 && (sh & SH_NC) !== 0 && !((yf & F_COMMON) !== 0) && !((yf & W_NOT_NAMES) !== 0))) {
        if (wsGapAt(text, E[i]!, S[nx]!, 1, 2) && wsGapAt(text, E[nx]!, S[y]!, 1, 2)) isName[y] = 1;
      }
    }
  }
}

/**
 * The capital letter `i` ends a phrase rather than starting a name ("AMPHO B. AWATING", "LOW GRADE T. CULTURED", "Dsg D and
 * I. X-ray"): the word right before it (one space, no punctuation) is a common word or, in upper-case text, a word that is
 * not a dictionary name, and is no title, relation, cue or preposition ("PER K. ABRAMS", "EARL N. RAND", "Hanne I.
 * Kreutzmann", "on C. Beerninckstraat"); or it pairs with another letter ("D and I", "I and O"). A letter right after
 * "&", ">", "<", "=", "+" or "." (caller) is one of a pair or an abbreviation too ("D&I. NTG", "R>L. SAO2", "I.S.").
 */
function letterOfPhrase(c: NameContext, i: number): boolean {
  const { text, S, E, F, known, allCapsText, lowerIs } = c;
  if (i === 0 || S[i]! - E[i - 1]! !== 1 || text.charCodeAt(E[i - 1]!) !== 32) return false;
  const p = i - 1;
  const pf = F[p]!;
  if ((pf & (W_TITLES | W_RELATIONS | W_CUE_WORDS | W_ROLE_ABBR | W_WARD_PREV | W_LOC_PREV)) !== 0) return i > 1 && lowerIs(p, "and") && E[i - 2]! - S[i - 2]! === 1 && S[p]! - E[i - 2]! === 1;
  return (pf & F_COMMON) !== 0 || (allCapsText(p) && !known(p));
}

/** backwards */
function backwards(c: NameContext): void {
  // each candidate is next to a name
  if (c.isName.indexOf(1) < 0) return;
  const { text, n, S, E, F, SH, isName, lowerIs } = c;
  // backwards: "<X>, <name>", "<X> and <name>", "<X> <initial> <name>"; forwards: generational suffixes
  // (not a relation, role or title: "GUARDIAN: Niece, Patricia WAITE")
  const ok = (x: number) => (SH[x]! & SH_NC) !== 0 && (F[x]! & (F_COMMON | F_AMBIGUOUS | W_NOT_NAMES | W_UNIT_ACRONYMS | W_RELATIONS | W_ROLE_WORDS | W_TITLES)) === 0;
  for (let i = n - 1; i > 0; i--) {
    if (!isName[i]) continue;
    const pv = i - 1;
    const tnc = (SH[i]! & SH_NC) !== 0;
    if (!isName[pv] && wsGapAt(text, E[pv]!, S[i]!, 1, 2, 44, true) && tnc && ok(pv)) isName[pv] = 1;
    if (i > 1 && lowerIs(pv, "and") && !isName[i - 2] && wsGapAt(text, E[pv]!, S[i]!, 1, 2) && wsGapAt(text, E[i - 2]!, S[pv]!, 1, 2) && tnc && ok(i - 2)) isName[i - 2] = 1;
    if (i > 1 && E[pv]! - S[pv]! === 1 && (SH[pv]! & SH_UP) !== 0 && wsGapAt(text, E[pv]!, S[i]!, 1, 2, 46) && wsGapAt(text, E[i - 2]!, S[pv]!, 1, 2) && ok(i - 2)) {
      isName[pv] = 1;
      isName[i - 2] = 1;
    }
    if (i + 1 < n && generational(text, S[i + 1]!, E[i + 1]!) && wsGapAt(text, E[i]!, S[i + 1]!, 1, 2, 44)) isName[i + 1] = 1;
  }
}

/**
 * What `/^(?:II|III|IV|Jr|Sr)$/` finds in `text[s, e)` (a generational suffix), by char codes: the test on the token's
 * substring made one string per name token (1 MB of "Dr. " made 260,000, ~5 % of its time with their collection).
 */
function generational(text: string, s: number, e: number): boolean {
  const len = e - s;
  if (len < 2 || len > 3) return false;
  const a = text.charCodeAt(s);
  const b = text.charCodeAt(s + 1);
  if (len === 3) return a === 73 && b === 73 && text.charCodeAt(s + 2) === 73; // III
  // II, IV, Jr, Sr
  return a === 73 ? b === 73 || b === 86 : (a === 74 || a === 83) && b === 114;
}

/** signatures */
function signatures(c: NameContext): void {
  // each candidate is the word before a credential word, or a word after "by" (a weak relation) before PT / RT / ...
  if ((c.anyF & (W_CREDENTIAL_WORDS | W_WEAK_RELATIONS)) === 0) return;
  const { text, n, S, E, F, SH, isName, first, known, isCommon } = c;
  // signatures: name-like words right before a credential ("Marie Munroe, RN", "barbara j. parrilli bsn/rn")
  for (let i = 0; i < n; i++) {
    // a credential is the next word ("RN", "bsn/rn", "PA-C"): no slice and no pattern for any other word
    if (i + 1 >= n) continue;
    if ((F[i + 1]! & W_CREDENTIAL_WORDS) === 0) {
      if (i > 0 && (F[i - 1]! & W_WEAK_RELATIONS) !== 0 && clinicalCredential(text, S[i + 1]!, E[i + 1]!) && byBefore(c, i)) isName[i] = 1;
      continue;
    }
    const after = text.slice(E[i]!, E[i]! + 12);
    const upperCred = CREDENTIAL.test(after);
    if (!upperCred && !CREDENTIAL_LOWER.test(after)) continue;
    if (((F[i]! & W_CREDENTIALS) !== 0)) continue;
    const line = text.lastIndexOf("\n", S[i]!);
    if (!upperCred) {
      const head = text.slice(line + 1, E[i]!).trim();
      const first0 = /^[a-z]+/.exec(head)?.[0];
      if (first0 && first.has(first0) && /^[a-z]+ (?:[a-z]\.? )?[a-z'-]+$/.test(head)) {
        for (let j = i; j >= 0 && S[j]! > line; j--) isName[j] = 1;
        continue;
      }
    }
    // the run before the credential is a name only with one word that is more than an English word ("WILL KEEP NP",
    // "BP STABLE, RN", "via MD" are not): a dictionary name, a capitalised unknown word, or, in a signature line (the
    // credential ends it), an upper-case unknown word ("EMPERATRICE, RRT"; not "PRECEDEX OFF MD AWARE")
    let from = i + 1;
    let strong = false;
    const endsLine = upperCred && /^,?\s{0,2}[A-Za-z-]+\.?\s*(?:\n|$)/.test(text.slice(E[i]!, E[i]! + 16));
    for (let j = i; j >= 0 && S[j]! > line && i - j < 4; j--) {
      const fj = F[j]!;
      const shj = SH[j]!;
      const initial = E[j]! - S[j]! === 1;
      // words joined by a full stop only after an initial ("EDWARD C. JONES"; not "now RLL. Stord-Painter MD")
      if (j < i && !(initial ? wsGapAt(text, E[j]!, S[j + 1]!, 1, 3, 46) : wsGapAt(text, E[j]!, S[j + 1]!, 1, 3))) break;
      if (initial && (j === i || /[\d'’/]$/.test(text.slice(Math.max(0, S[j]! - 1), S[j]!)))) break;
      const nameish = initial || known(j) || ((fj & F_AMBIGUOUS) !== 0) || ((shj & SH_NC) !== 0 && !((fj & F_COMMON) !== 0)) || (upperCred && (shj & SH_UP) !== 0 && !((fj & F_COMMON) !== 0));
      if (!nameish || ((fj & (W_NOT_NAMES | W_CREDENTIALS | W_UNIT_ACRONYMS)) !== 0) || /\d/.test(text.slice(Math.max(0, S[j]! - 1), E[j]!))) break;
      if (!upperCred && !initial && !known(j) && !((fj & F_AMBIGUOUS) !== 0) && !((shj & SH_NC) !== 0)) break;
      from = j;
      if (!initial && !isCommon(j) && (known(j) || (shj & SH_NC) !== 0 || (endsLine && E[j]! - S[j]! > 2))) strong = true;
    }
    if (!strong && from <= i) strong = signatureCue(c, from, i);
    if (strong) for (let j = from; j <= i; j++) isName[j] = 1;
  }
}

/**
 * `text[s, e)` is a credential that is also a clinical abbreviation, written in capitals: PA (pulmonary artery), PT
 * (patient), RT (right), OT, DO. It is a credential only after "by" and a name ({@link byBefore}).
 */
function clinicalCredential(text: string, s: number, e: number): boolean {
  if (e - s !== 2) return false;
  const a = text.charCodeAt(s);
  const b = text.charCodeAt(s + 1);
  return (b === 84 && (a === 80 || a === 82 || a === 79)) || (a === 80 && b === 65) || (a === 68 && b === 79);
}

/**
 * Token `i` is one word between "by" and a credential of {@link clinicalCredential} that ends the clause (a full stop,
 * comma, semicolon or colon, a line end or the text's end after it: in "SUPPORTED BY LEVOPHED PT STABLE" PT is the
 * patient), each one space apart, of four letters or more, capitalised, and no common word, unit acronym, role, title or
 * relation: a name ("SEEN BY OYELARAN PT.", "TX BY ADEBAYO RT, TOL WELL"; not "SEEN BY ORTHO PA.", "EVAL BY ACUTE PT.";
 * not after "per", which reads orders and charts: "PER FLOWSHEET PT", "PER PROPOFOL RT.").
 */
function byBefore(c: NameContext, i: number): boolean {
  const { text, S, E, F, SH, isCommon, lowerIs } = c;
  return lowerIs(i - 1, "by") && E[i]! - S[i]! > 3 && (SH[i]! & (SH_UP | SH_TC)) !== 0 && !isCommon(i) && !SERVICE.test(c.lower(i)) && (F[i]! & (W_NOT_NAMES | W_UNIT_ACRONYMS | W_CREDENTIALS | W_ROLE_WORDS | W_TITLES | W_RELATIONS)) === 0 && wsGapAt(text, E[i - 1]!, S[i]!, 1, 1) && wsGapAt(text, E[i]!, S[i + 1]!, 1, 1) && clauseEnd(text.charCodeAt(E[i + 1]!));
}

/**
 * A clinical service or specialty, not a person, before a credential ("SEEN BY DERM PA.", "by Orthopedics PA",
 * "EVAL BY PODIATRY DO"): a word of a specialty's form (-ology, -ologist, -iatry, -ics) or a service's usual
 * abbreviation. Medical vocabulary, not a list of rows.
 */
const SERVICE = /^(?:\w+(?:olog(?:y|ist|ists)|iatry|iatrist|ics)|derm|ortho|neuro|cards|onc|psych|peds|gyn|obgyn|rheum|surg|surgery|vasc|nephro|renal|gastro|plastics|rehab|nutrition|palliative|hospice|anesthesia|anesth|trauma|wound|medicine|hospitalist|hospitalists)$/;

/** The char code ends a clause: NaN (the text's end), a full stop, comma, semicolon, colon, line feed or return. */
const clauseEnd = (ch: number): boolean => Number.isNaN(ch) || ch === 46 || ch === 44 || ch === 59 || ch === 58 || ch === 10 || ch === 13;

/**
 * The words `[from, to]` before a credential, each a possible name but none more than an English word, are a name all
 * the same when their form or context says so: an initial and a full stop before a word of three letters or more that
 * is no plain English word ("J. SMITH RN", "r. brown md"), or a person preposition right before a run with a word of
 * four letters or more that is no common word ("BY OYELARAN RN", "per Adeyemi NP"; not "and", nor a city before a
 * comma and a state: "from Rockville, MD").
 */
function signatureCue(c: NameContext, from: number, to: number): boolean {
  const { text, S, E, F, lowerIs, isCommon } = c;
  for (let j = from; j < to; j++) {
    const fn = F[j + 1]!;
    if (E[j]! - S[j]! === 1 && text.charCodeAt(E[j]!) === 46 && E[j + 1]! - S[j + 1]! > 2 && ((fn & F_COMMON) === 0 || (fn & F_AMBIGUOUS) !== 0) && !letterOfPhrase(c, j)) return true;
  }
  const p = from - 1;
  if (p < 0 || (F[p]! & W_WEAK_RELATIONS) === 0 || lowerIs(p, "and") || !wsGapAt(text, E[p]!, S[from]!, 1, 2)) return false;
  // (not a city before a comma and a state's code: "FILMS FROM ROCKVILLE, MD")
  if (text.charCodeAt(E[to]!) === 44 && (F[to]! & F_CITY) !== 0) return false;
  // (a word of four letters or more: three capitals are a service's abbreviation, "SEEN BY ONC NP")
  for (let j = from; j <= to; j++) if (E[j]! - S[j]! > 3 && !isCommon(j) && !SERVICE.test(c.lower(j))) return true;
  return false;
}

/** lists */
function peopleLists(c: NameContext): void {
  // each list has a comma
  if (c.text.indexOf(",") < 0) return;
  const { text, n, S, E, GE, F, SH, isName, known, lowerIs } = c;
  // lists of people ("they had 3: silvana, adam and caleb", "our founders: Monjeau, Graves and Reed"): a run of
  // three or more single words joined by commas / "and", at least two of them dictionary names
  for (let i = 0; i < n; i++) {
    // a list needs a comma after its first item
    if (i + 1 >= n || GE[i + 1]! >= S[i + 1]! || text.charCodeAt(GE[i + 1]!) !== 44) continue;
    const items = [i];
    let j = i;
    while (j + 1 < n) {
      if (wsGapAt(text, E[j]!, S[j + 1]!, 1, 2, 44, true)) {
        items.push(++j);
      } else if (wsGapAt(text, E[j]!, S[j + 1]!, 1, 2, 44) && lowerIs(j + 1, "and") && j + 2 < n && wsGapAt(text, E[j + 1]!, S[j + 2]!, 1, 2)) {
        items.push((j += 2));
        break;
      } else break;
    }
    if (items.length >= 3) {
      const sameCase = items.every((k) => (SH[k]! & SH_NC) !== 0) || items.every((k) => (SH[k]! & SH_LW) !== 0);
      const names = items.filter((k) => isName[k] || (known(k) && !((F[k]! & F_COMMON) !== 0))).length;
      const plain = items.every((k) => !((F[k]! & W_NOT_NAMES) !== 0) && !((F[k]! & W_UNIT_ACRONYMS) !== 0) && (!((F[k]! & F_COMMON) !== 0) || ((F[k]! & F_AMBIGUOUS) !== 0)));
      if (sameCase && plain && names >= 2) for (const k of items) isName[k] = 1;
    }
    i = Math.max(i, j);
  }
}

/** particles */
function particles(c: NameContext): void {
  // each candidate starts with a title-case word
  if ((c.anySH & SH_TC) === 0) return;
  const { text, n, S, E, F, SH, isName, known, w } = c;
  // names with particles or a bare middle initial ("Maika van de Noort", "Willemine ten Pas", "Ravil G Yefimov"):
  // capitalised words around lower-case particles or one capital letter, at least one of them a dictionary name
  for (let i = 0; i + 2 < n; i++) {
    const af = F[i]!;
    if (!((SH[i]! & SH_TC) !== 0) || ((af & F_COMMON) !== 0) || ((af & W_NOT_NAMES) !== 0)) continue;
    let j = i + 1;
    while (j < n && j - i <= 3 && (((SH[j]! & SH_LW) !== 0 && E[j]! - S[j]! <= 5 && NAME_PARTICLES.has(w(j))) || (E[j]! - S[j]! === 1 && isUp(text.charCodeAt(S[j]!)))) && wsGapAt(text, E[j - 1]!, S[j]!, 1, 1)) j++;
    if (j === i + 1 || j >= n || !wsGapAt(text, E[j - 1]!, S[j]!, 1, 1)) continue;
    const z = j;
    const zf = F[z]!;
    if (!((SH[z]! & SH_NC) !== 0) || ((zf & F_COMMON) !== 0) || ((zf & W_NOT_NAMES) !== 0) || ((af & W_UNIT_ACRONYMS) !== 0) || ((((af & F_AMBIGUOUS) !== 0) || ((zf & F_AMBIGUOUS) !== 0)) && !(known(i) && known(z)))) continue;
    for (let k = i; k <= j; k++) isName[k] = 1;
    i = j;
  }
}

/** relation in parentheses */
function relationInParentheses(c: NameContext): void {
  // each candidate is the word before a relation word
  if ((c.anyF & W_RELATIONS) === 0) return;
  const { text, n, S, E, F, SH, isName, gap } = c;
  // a name followed by the relation in parentheses ("URSLA MORETTI (DAUGHTER)", "Ann Lee (wife)")
  for (let i = 0; i + 1 < n; i++) {
    const r = i + 1;
    if (!((F[r]! & W_RELATIONS) !== 0) || ((F[r]! & W_WEAK_RELATIONS) !== 0) || !/^\s?\($/.test(gap(i, r))) continue;
    for (let j = i; j >= 0 && i - j < 3; j--) {
      const fj = F[j]!;
      if (j < i && !wsGapAt(text, E[j]!, S[j + 1]!, 1, 2)) break;
      if (!((SH[j]! & (SH_NC | SH_UP)) !== 0) || ((fj & F_COMMON) !== 0) || ((fj & W_NOT_NAMES) !== 0) || ((fj & W_UNIT_ACRONYMS) !== 0) || ((fj & W_ROLE_WORDS) !== 0) || ((fj & W_RELATIONS) !== 0) || E[j]! - S[j]! < 3) break;
      isName[j] = 1;
    }
  }
}

/** lower-case initial */
function lowerInitials(c: NameContext): void {
  // each candidate is an initial before a dictionary surname
  if ((c.anyF & F_LAST) === 0) return;
  const { text, n, S, E, F, isName, isCommon } = c;
  // a lower-case initial and a dictionary surname ("nsg (d. renna and j. o'brien)"); "e. coli" is not a surname
  for (let i = 0; i + 1 < n; i++) {
    const nx = i + 1;
    if (E[i]! - S[i]! === 1 && isLow(text.charCodeAt(S[i]!)) && S[nx]! - E[i]! === 2 && text.charCodeAt(E[i]!) === 46 && text.charCodeAt(E[i]! + 1) === 32 && (F[nx]! & F_LAST) !== 0 && !isCommon(nx) && !((F[nx]! & W_NOT_NAMES) !== 0) && /(?:^|[(\n]|(?:and|or|by|with|per|to|nsg|rn|md|dr|,)\s)$/i.test(text.slice(Math.max(0, S[i]! - 5), S[i]!))) {
      isName[i] = 1;
      isName[nx] = 1;
    }
  }
}

/** aware */
function beforeAware(c: NameContext): void {
  const { text, n, S, E, GE, F, SH, isName, known, lowerLen, lowerIs } = c;
  // one or two words before "aware" in a nursing note ("grace dudak aware", "BEA TURA AWARE"; not "MD aware", "team aware")
  const plain = (t: number) => {
    const f = F[t]!;
    return lowerLen(t) > 2 && !((f & F_COMMON) !== 0) && !((f & W_NOT_NAMES) !== 0) && !((f & W_UNIT_ACRONYMS) !== 0) && !((f & W_ROLE_WORDS) !== 0) && !((f & W_RELATIONS) !== 0) && !((f & W_TITLES) !== 0) && !((f & W_CREDENTIALS) !== 0) && !/\d/.test(text.slice(S[t]! - 1, E[t]! + 1));
  };
  for (let i = 1; i < n; i++) {
    if ((E[i]! - S[i]! !== 5 && (SH[i]! & SH_ASCII) !== 0) || !lowerIs(i, "aware") || !wsGapAt(text, GE[i]!, S[i]!, 1, 2)) continue;
    const a = i - 1;
    if (!plain(a) || (!known(a) && (F[a]! & F_ENAME) === 0 && !(i > 1 && wsGapAt(text, GE[a]!, S[a]!, 1, 2) && plain(i - 2) && (known(i - 2) || (F[i - 2]! & F_ENAME) !== 0)))) continue;
    isName[a] = 1;
    if (i > 1 && wsGapAt(text, GE[a]!, S[a]!, 1, 2) && plain(i - 2) && ((SH[i - 2]! ^ SH[a]!) & SH_CAP) === 0) isName[i - 2] = 1;
  }
}

/** speaker label */
function speakerLabels(c: NameContext): void {
  // each candidate is a title-case word
  if ((c.anySH & SH_TC) === 0) return;
  const { text, n, E, F, SH, isName, sentenceStart } = c;
  // a speaker label starting a line or sentence ('Zuzana: "Who are you?"')
  for (let i = 0; i < n; i++) {
    const f = F[i]!;
    if (!isName[i] && (SH[i]! & SH_TC) !== 0 && text.charCodeAt(E[i]!) === 58 && !((f & F_COMMON) !== 0) && !((f & W_NOT_NAMES) !== 0) && !((f & W_ROLE_WORDS) !== 0) && !((f & W_RELATIONS) !== 0) && !((f & W_TITLES) !== 0) && sentenceStart(i) && /^:\s?["“]/.test(text.slice(E[i]!, E[i]! + 3))) isName[i] = 1;
  }
}

/** lower-case text */
function lowerCaseText(c: NameContext): void {
  // each candidate starts at a dictionary first name or a name
  if ((c.anyF & F_FIRST) === 0 && c.isName.indexOf(1) < 0) return;
  const { text, n, S, E, F, isName, known, isCommon, lowerLen } = c;
  // all-lower-case text (case says nothing): a first name and the word after it ("olga krylova", "leone mazzi")
  if (c.lowerText) {
    for (let i = 0; i + 1 < n; i++) {
      const nx = i + 1;
      if ((((F[i]! & F_FIRST) !== 0) || isName[i]) && !isCommon(i) && wsGapAt(text, E[i]!, S[nx]!, 1, 2) && known(nx) && !isCommon(nx) && lowerLen(nx) > 2 && !eponymBefore(c, nx)) {
        isName[i] = 1;
        isName[nx] = 1;
      } else if (isName[i] && E[nx]! - S[nx]! === 1 && i + 2 < n && wsGapAt(text, E[i]!, S[nx]!, 1, 1) && wsGapAt(text, E[nx]!, S[i + 2]!, 1, 1, 46) && (F[i + 2]! & F_COMMON) === 0 && lowerLen(i + 2) > 2) {
        // "eric g. samoylova": a name, a middle initial and the word after it
        isName[nx] = 1;
        isName[i + 2] = 1;
      }
    }
  }
}

/** every mention */
function everyMention(c: NameContext): void {
  // each mention repeats a name
  if (c.isName.indexOf(1) < 0) return;
  const { text, n, S, E, F, SH, LID, isName, weak, known, isCommon, sentenceStart, w } = c;
  // one name, every mention: a word found as a name elsewhere in the text is a name wherever it is written the same way
  const seen = new Set<string>();
  /** Bit k set when a word of length k (or k mod 32) is in `seen`: most words need no substring to be ruled out. */
  let lengths = 0;
  /** A token already added, per lexicon slot: a repeated dictionary word written the same way is not sliced again. */
  const added = new Map<number, number>();
  const lowerText = c.lowerText;
  for (let i = 0; i < n; i++) {
    if (!isName[i]) continue;
    const f = F[i]!;
    const sh = SH[i]!;
    const nc = (sh & SH_NC) !== 0;
    // only names found by a strong cue, a dictionary name, or a capitalised word with letters outside ASCII:
    // a drug brand caught by a weak cue ("her Eliquis") must not spread to every dosing order
    const evidence = !weak[i] || known(i) || (nc && (sh & SH_ASCII) === 0 && NON_ASCII.test(w(i)));
    if (evidence && E[i]! - S[i]! > 2 && (nc || lowerText) && !isCommon(i) && !((f & W_UNIT_ACRONYMS) !== 0) && !((f & W_CREDENTIALS) !== 0)) {
      const id = LID[i]!;
      if (id >= 0) {
        const r = added.get(id);
        if (r !== undefined && sameRange(text, S[r]!, E[r]!, S[i]!, E[i]!)) continue;
        added.set(id, i);
      }
      seen.add(w(i));
      lengths |= 1 << ((E[i]! - S[i]!) & 31);
    }
  }
  if (seen.size > 0) {
    for (let i = 0; i < n; i++) {
      if (!isName[i] && (lengths & (1 << ((E[i]! - S[i]!) & 31))) !== 0 && seen.has(w(i)) && !sentenceStart(i) && !/^\s{0,2}\d/.test(text.slice(E[i]!, E[i]! + 3))) isName[i] = 1;
    }
  }
}

/** What `/^(?:\.?\s{1,3}|\.)$/` finds in `text[from, to)` (the gap after a title), without the substring. */
function titleGap(text: string, from: number, to: number): boolean {
  return wsGapAt(text, from, to, 1, 3, 46) || (to - from === 1 && text.charCodeAt(from) === 46);
}

/** `text[a, ae)` and `text[b, be)` are the same string. */
function sameRange(text: string, a: number, ae: number, b: number, be: number): boolean {
  if (ae - a !== be - b) return false;
  for (let k = 0; k < ae - a; k++) if (text.charCodeAt(a + k) !== text.charCodeAt(b + k)) return false;
  return true;
}
