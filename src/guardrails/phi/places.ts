/**
 * Facilities and places in context: "VAMC HOSPITAL", "reisterstown hospital", "lives in Hampton", gazetteer cities,
 * named wards, facility acronyms after a transfer verb (LOCATION). Runs after the name rules (./names.ts), whose names
 * it reads.
 */
import type { FoundList } from "./entities.js";

import { F_AMBIGUOUS, F_BIG_CITY, F_CITY, F_CITY_FIRST, F_COMMON } from "./lexicon.js";
import {
  DRUG_LIKE,
  FACILITY,
  LOC_PREFIX,
  STRONG_LOC_PREFIX,
  W_CENTER_WORDS,
  W_HOSPITAL_WORDS,
  W_FACILITY_WORDS,
  W_HOSPITAL_MODIFIERS,
  W_LOC_PREPOSITIONS,
  W_LOC_PREV,
  W_NAMED_FACILITY,
  W_NOT_NAMES,
  W_RELATIONS,
  W_TITLES,
  W_UNIT_ACRONYMS,
  W_WARD_PREV,
} from "./words.js";
import { wsGapAt } from "./text.js";
import { US_STATES } from "./patterns.js";
import { eponymBefore, type NameContext, SH_CAP, SH_LW, SH_NC, SH_TC, SH_UP } from "./tokens.js";

/** Place cues before a large city ({@link F_BIG_CITY}) beside ./words.ts STRONG_LOC_PREFIX: where a person is from or goes. */
const BIG_CITY_CUE = /\b(?:(?:is|are|was|were|originally|recently|pt|patient|family) from|(?:flying|flew|flown|coming|came|comes|drove|driving|visiting|back|home|up|down|over|in|moved here|relocated) from|born in|raised in|grew up in|native of|resident of|vacation(?:ing|ed)? in|visiting|trip to|travel(?:l?ing|led|s)? to|relocated to|moving to|lives? (?:near|outside|just outside))\s{1,2}$/i;

/** A US state after a city: ", CO" (capitals), ", Colorado" (the city then needs only "from", "in", "near", "of" or "to" before it). */
const STATE_CODE_AFTER = /^,\s?(?:A[KLRZ]|C[AOT]|D[CE]|FL|GA|HI|I[ADLN]|K[SY]|LA|M[ADEINOST]|N[CDEHJMVY]|O[HKR]|PA|RI|S[CD]|T[NX]|UT|V[AT]|W[AIVY])\b/;
const STATE_NAME_AFTER = new RegExp(`^,\\s?(?:${US_STATES})\\b`, "i");
const stateAfter = (s: string): boolean => STATE_CODE_AFTER.test(s) || STATE_NAME_AFTER.test(s);

/** Adds the places of the text to `found` (after the name rules have run on `c`). */
export function findPlaces(c: NameContext, found: FoundList): void {
  hospitalsAfterPreposition(c, found);
  places(c, found);
}

/** "to holy cross hospital", "from sacred heart hosp": one or two words between a place preposition and a hospital word. */
function hospitalsAfterPreposition(c: NameContext, found: FoundList): void {
  // each candidate ends before a hospital word or before "medical" / "med" and a center word
  if ((c.anyF & (W_HOSPITAL_WORDS | W_CENTER_WORDS)) === 0) return;
  const { text, n, S, E, GE, F, lowerIs, lowerLen } = c;
  // "to holy cross hospital", "from sacred heart hosp": one or two words between a place preposition and a hospital
  // word name the hospital even when they are common words (not "to the hospital", "from an outside hospital")
  for (let i = 1; i + 1 < n; i++) {
    const h = i + 1;
    // "med"/"medical" only as "medical center" ("cardiac med changes" is a medication)
    if ((F[h]! & W_HOSPITAL_WORDS) === 0 && !(i + 2 < n && ((F[i + 2]! & W_CENTER_WORDS) !== 0) && (lowerIs(h, "medical") || lowerIs(h, "med")))) continue;
    if (!wsGapAt(text, GE[h]!, S[h]!, 1, 2)) continue;
    for (const k of [2, 1]) {
      const a = i - k + 1;
      if (a < 1 || !((F[a - 1]! & W_LOC_PREPOSITIONS) !== 0) || !wsGapAt(text, GE[a]!, S[a]!, 1, 2)) continue;
      let ok = true;
      for (let j = a; j <= i && ok; j++) {
        const f = F[j]!;
        ok = (j === a || wsGapAt(text, GE[j]!, S[j]!, 1, 2)) && lowerLen(j) > 2 && !((f & W_HOSPITAL_MODIFIERS) !== 0) && !((f & W_UNIT_ACRONYMS) !== 0) && !((f & W_FACILITY_WORDS) !== 0) && !((f & W_TITLES) !== 0) && !((f & W_RELATIONS) !== 0);
      }
      if (ok) {
        found.add(S[a]!, E[i]!, "LOCATION");
        break;
      }
    }
  }
}

/** Named facilities, cities of the gazetteer, wards, facility acronyms and places after a place cue. */
function places(c: NameContext, found: FoundList): void {
  // each rule below needs a token of one of these classes: a facility word, a city of the gazetteer, a ward or place
  // cue; or, for a city of several words, its first word in name shape
  if ((c.anyF & (W_NAMED_FACILITY | F_BIG_CITY | F_CITY | W_FACILITY_WORDS | W_WARD_PREV | W_LOC_PREV)) === 0 && (c.anyNameShapeF & F_CITY_FIRST) === 0) return;
  const { text, n, S, E, F, SH, isName, commonParts, sentenceStart, allCapsText, cities, lower, lowerLen } = c;
  for (let i = 0; i < n; i++) {
    const f = F[i]!;
    const sh = SH[i]!;
    const len = E[i]! - S[i]!;
    const tc = (sh & SH_TC) !== 0;
    const up = (sh & SH_UP) !== 0;
    // a named facility word after a name or place ("FREDERICK MEMORIAL", "Baltimore Rehab", "LAUREL REGIONAL")
    if (i + 1 < n && ((F[i + 1]! & W_NAMED_FACILITY) !== 0) && wsGapAt(text, E[i]!, S[i + 1]!, 1, 2) && (SH[i + 1]! & SH_CAP) !== 0 && (isName[i] || ((f & F_CITY) !== 0))) {
      found.add(S[i]!, E[i + 1]!, "LOCATION");
      i++;
      continue;
    }
    // a large city after a strong place cue, even one that is a common word or an eponym elsewhere ("lives in Denver",
    // "moved from Boston", "flying in from Houston"; not "Denver shunt", "Jackson-Pratt drain")
    // (a facility named after its city, "to baltimore rehab", is left to the facility rules, which take both words)
    if ((f & F_BIG_CITY) !== 0 && i > 0 && len > 2 && !(i + 1 < n && (F[i + 1]! & (W_HOSPITAL_WORDS | W_NAMED_FACILITY | W_FACILITY_WORDS)) !== 0)) {
      const before = text.slice(Math.max(0, S[i]! - 28), S[i]!);
      if (STRONG_LOC_PREFIX.test(before) || BIG_CITY_CUE.test(before) || (/\b(?:from|in|near|of|to)\s{1,2}$/i.test(before) && stateAfter(text.slice(E[i]!, E[i]! + 20)))) {
        found.add(S[i]!, E[i]!, "LOCATION");
        continue;
      }
    }
    // a lower-case city after "lives in" ("both live in hampton")
    if ((sh & SH_LW) !== 0 && ((f & F_CITY) !== 0) && !((f & F_COMMON) !== 0) && !((f & F_AMBIGUOUS) !== 0) && i > 0 && /\b(?:lives?|living|resides?|nearby) in\s{1,2}$/i.test(text.slice(Math.max(0, S[i]! - 16), S[i]!))) {
      found.add(S[i]!, E[i]!, "LOCATION");
      continue;
    }
    // city names (gazetteer), capitalised, up to three words ("San Diego", "New Haven", "BALTIMORE")
    // (not an eponym: "Murphy's sign", "Baker's cyst", "Turner syndrome")
    if (cities.size > 0 && (!isName[i] || ((f & F_CITY_FIRST) !== 0)) && ((sh & SH_NC) !== 0 || (up && len > 2)) && !((f & W_UNIT_ACRONYMS) !== 0) && !eponymBefore(c, i)) {
      let matched = 0;
      const maxK = ((f & F_CITY_FIRST) !== 0) ? 3 : 1;
      // one word: its own lexicon bits answer (no lookup, no string); several: the gazetteer's multi-word names
      for (let k = 1; k <= maxK && i + k - 1 < n; k++) {
        if (k > 1) {
          const nx = i + k - 1;
          const pv = i + k - 2;
          if (S[nx]! - E[pv]! !== 1 || text.charCodeAt(E[pv]!) !== 32 || !((SH[nx]! & (SH_NC | SH_UP)) !== 0)) break;
        }
        if ((k === 1 ? (f & F_CITY) !== 0 : multiWordCity(c, i, k)) && (k > 1 || ((f & (F_COMMON | F_AMBIGUOUS | W_NOT_NAMES)) === 0 && ((sh & SH_NC) !== 0 || !allCapsText(i) || (i > 0 && ((F[i - 1]! & W_LOC_PREV) !== 0) && len >= 5))))) matched = k;
      }
      if (matched > 1 || (matched === 1 && !isName[i])) {
        found.add(S[i]!, E[i + matched - 1]!, "LOCATION");
        i += matched - 1;
        continue;
      }
    }
    if (isName[i]) continue;
    // (not clinical shorthand, "prev rehab", "poss rehab"; nor a hyphenated word with a common part, "ROTATED-CO GENERAL")
    if (i + 1 < n && ((F[i + 1]! & W_FACILITY_WORDS) !== 0) && lowerLen(i) > 1 && (!((f & F_COMMON) !== 0) || (tc && !((f & W_NOT_NAMES) !== 0))) && FACILITY.test(text.slice(E[i]!, E[i]! + 24)) && !commonParts(lower(i)) && !CLINICAL_SHORTHAND.test(lower(i))) {
      const fw = i + 1;
      found.add(S[i]!, ((F[fw]! & W_NAMED_FACILITY) !== 0) && ((SH[fw]! ^ sh) & SH_CAP) === 0 ? E[fw]! : E[i]!, "LOCATION");
      const pv = i - 1;
      if (i > 0 && wsGapAt(text, E[pv]!, S[i]!, 1, 2) && (!((F[pv]! & F_COMMON) !== 0) || ((SH[pv]! & SH_TC) !== 0 && tc && !((F[pv]! & W_NOT_NAMES) !== 0))) && ((SH[pv]! ^ sh) & SH_CAP) === 0) {
        found.add(S[pv]!, E[pv]!, "LOCATION");
      }
      continue;
    }
    // a named ward or building with a floor number after to/from/on/at ("to quartermain 2", "ON QUARTERMAIN 6")
    // (not a verb, a hyphenated word with a common part, nor a word before a range: "AUGMENTING 0-12", "retaped 20",
    // "in place-Ademand 60", "c-pap 10", "GD-UO 20-30CC")
    if (i > 0 && len >= 5 && !((f & F_COMMON) !== 0) && !((f & F_AMBIGUOUS) !== 0) && !((f & W_NOT_NAMES) !== 0) && !((f & W_UNIT_ACRONYMS) !== 0) && ((F[i - 1]! & W_WARD_PREV) !== 0) && !DRUG_LIKE.test(lower(i)) && /^\s\d{1,2}(?![\d,/-]|\.\d|\s?(?:%|mg|mcg|ml|cc|u|units?|am|pm|hours?|hrs?|days?|x|l|liters?|meq|gm?)\b)/i.test(text.slice(E[i]!, E[i]! + 10)) && !/(?:ed|ing)$/.test(lower(i)) && !commonParts(lower(i))) {
      found.add(S[i]!, E[i]!, "LOCATION");
      continue;
    }
    // a facility acronym after a transfer verb or "at"/"in" ("transferred to GH", "at BIDMC"), not a hospital unit
    // (after a bare "at"/"in"/"to", only an acronym of a hospital or a medical center, ending in H or C, or one before a
    // facility word: "at GH", "to VAMC", "in UTMB Hospitals"; not "drop in CI", "able to OOB", "IVs in LLA", "A&O to
    // TPP", "change in UGI", "PLT at ULN"; after a verb of care or work and "at", also a university's, ending in U or
    // starting with it: "seen at NYU", "followed at OHSU", "treated at UCLA"; not "seen at HD", "appt at PFT")
    if (i > 0 && len >= 2 && len <= 5 && up && !((f & W_UNIT_ACRONYMS) !== 0) && !((f & F_COMMON) !== 0) && ((F[i - 1]! & W_LOC_PREV) !== 0) && !unitLike(c, i) && (STRONG_LOC_PREFIX.test(text.slice(Math.max(0, S[i]! - 24), S[i]!)) || (len > 2 && institutionAcronym(text, S[i]!, E[i]!) && VISIT_AT.test(text.slice(Math.max(0, S[i]! - 24), S[i]!))) || (!allCapsText(i) && /\b(?:at|in|to)\s$/i.test(text.slice(Math.max(0, S[i]! - 4), S[i]!)) && (facilityAcronym(text.charCodeAt(E[i]! - 1)) || (i + 1 < n && ((F[i + 1]! & W_FACILITY_WORDS) !== 0 || /^\s{1,2}hospitals\b/i.test(text.slice(E[i]!, E[i]! + 12))))))) && !/^\s?\d/.test(text.slice(E[i]!, E[i]! + 2))) {
      found.add(S[i]!, E[i]!, "LOCATION");
      continue;
    }
    if (i > 0 && ((F[i - 1]! & W_LOC_PREV) !== 0) && !((f & F_COMMON) !== 0) && !((f & F_AMBIGUOUS) !== 0) && lowerLen(i) > 1 && (f & (W_NOT_NAMES | W_UNIT_ACRONYMS)) === 0 && !unitLike(c, i) && !commonParts(lower(i)) && STRONG_LOC_PREFIX.test(text.slice(Math.max(0, S[i]! - 24), S[i]!))) {
      found.add(S[i]!, E[i]!, "LOCATION");
      const nx = i + 1;
      if (nx < n && wsGapAt(text, E[i]!, S[nx]!, 1, 2) && !((F[nx]! & F_COMMON) !== 0) && !((F[nx]! & W_NOT_NAMES) !== 0) && ((SH[nx]! ^ sh) & SH_CAP) === 0) found.add(S[nx]!, E[nx]!, "LOCATION");
      continue;
    }
    // (not an adverb: "Attempted to Nasally suction")
    if (i > 0 && tc && (f & (F_COMMON | F_AMBIGUOUS | W_NOT_NAMES | W_UNIT_ACRONYMS)) === 0 && ((F[i - 1]! & W_LOC_PREV) !== 0) && LOC_PREFIX.test(text.slice(Math.max(0, S[i]! - 20), S[i]!)) && !sentenceStart(i) && !eponymBefore(c, i) && !commonParts(lower(i)) && !lower(i).endsWith("ly")) {
      found.add(S[i]!, E[i]!, "LOCATION");
      for (let j = i + 1; j < n && j < i + 3; j++) {
        if (!wsGapAt(text, E[j - 1]!, S[j]!, 1, 2) || !((SH[j]! & SH_TC) !== 0) || ((F[j]! & F_COMMON) !== 0)) break;
        found.add(S[j]!, E[j]!, "LOCATION");
      }
    }
  }
}

/**
 * A verb of care, study or work and "at" (possibly "the"): what follows is an institution ("seen at", "followed at",
 * "works at the"), where an acronym of an institution's shape names a hospital or a university, Safe Harbor location
 * identifiers.
 */
const VISIT_AT = /\b(?:seen|followed|treated|evaluated|hospitali[sz]ed|managed|operated on|delivered|born|works?|worked|working|employed|stud(?:ies|ied|ying|ent)|attend(?:s|ed|ing)|care|appointments?|appts?|visits?)\s{1,2}(?:here\s|there\s)?at\s{1,2}(?:the\s)?$/i;

/**
 * `text[s, e)` (capitals) has the shape of an institution's acronym: it ends in H (hospital), C (center, clinic) or U
 * (university), or starts with U (university of): "MGH", "BIDMC", "NYU", "UCSF"; not "HD", "PFT", "OPD".
 */
function institutionAcronym(text: string, s: number, e: number): boolean {
  const last = text.charCodeAt(e - 1);
  return facilityAcronym(last) || last === 85 || text.charCodeAt(s) === 85;
}

/** Clinical shorthand before a facility word: "prev rehab" (previous), "poss rehab" (possible), "prob", "approx". */
const CLINICAL_SHORTHAND = /^(?:prev|poss|prob|approx)$/;

/** The last letter of an acronym of a hospital (H), a medical center or a clinic (C). */
const facilityAcronym = (last: number): boolean => last === 72 || last === 67;

/**
 * Token `i` (3-7 letters) is a care unit of the hospital, however spelt, not a place that identifies anyone: it ends in
 * U (unit) with a C (care) before it ("PACU", "TCU", "CVICU", "MCIU", "CSRU"), or holds "cu" after its first letter
 * ("micua"). ("NYU", "CUNY" are no units; "VCU" reads as one.) Read on the char codes (no string).
 */
function unitLike(c: NameContext, i: number): boolean {
  const { text, S, E } = c;
  const s = S[i]!;
  const e = E[i]!;
  if (e - s < 3 || e - s > 7) return false;
  const endsU = (text.charCodeAt(e - 1) | 32) === 117;
  for (let k = s; k < e - 1; k++) {
    if ((text.charCodeAt(k) | 32) !== 99) continue;
    if (endsU || (k > s && (text.charCodeAt(k + 1) | 32) === 117)) return true;
  }
  return false;
}

/**
 * Answers of {@link multiWordCity} by the tokens' lexicon slots, per lexicon table: entry `r` holds [slot of the first
 * word, of the second, of the third (-2: a two-word name), answer (0/1)] (-1: empty). The answer depends only on the
 * words' lower case, which equal slots share, so a name run repeated through a text (or across texts) is looked up once.
 */
const runCaches = new WeakMap<object, Int32Array>();
const RUN_CACHE_SIZE = 4096;

/** `tokens i .. i + k - 1` (k = 2 or 3, one space apart) in lower case, joined by spaces, are a gazetteer name. */
function multiWordCity(c: NameContext, i: number, k: number): boolean {
  const { LID, cities, lower } = c;
  const a = LID[i]!;
  const b = LID[i + 1]!;
  const d = k === 3 ? LID[i + 2]! : -2;
  const lookUp = () => cities.has(k === 3 ? `${lower(i)} ${lower(i + 1)} ${lower(i + 2)}` : `${lower(i)} ${lower(i + 1)}`);
  // a word outside the lexicon has no slot: the string answers
  if (a < 0 || b < 0 || d === -1) return lookUp();
  let cache = runCaches.get(cities);
  if (cache === undefined) runCaches.set(cities, (cache = new Int32Array(RUN_CACHE_SIZE * 4).fill(-1)));
  const r = Math.imul(Math.imul(Math.imul(a, 0x9e3779b1) ^ b, 0x85ebca6b) ^ (d + 2), 0xc2b2ae35) >>> 20;
  const o = r * 4;
  if (cache[o] === a && cache[o + 1] === b && cache[o + 2] === d) return cache[o + 3] === 1;
  const yes = lookUp();
  cache[o] = a;
  cache[o + 1] = b;
  cache[o + 2] = d;
  cache[o + 3] = yes ? 1 : 0;
  return yes;
}
