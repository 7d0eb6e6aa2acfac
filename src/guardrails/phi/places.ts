/**
 * Facilities and places in context: "VAMC HOSPITAL", "reisterstown hospital", "lives in Hampton", gazetteer cities,
 * named wards, facility acronyms after a transfer verb (LOCATION). Runs after the name rules (./names.ts), whose names
 * it reads.
 */
import type { Found } from "./entities.js";

import { F_AMBIGUOUS, F_CITY, F_CITY_FIRST, F_COMMON } from "./lexicon.js";
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
import type { NameContext } from "./tokens.js";

/** Adds the places of the text to `found` (after the name rules have run on `c`). */
export function findPlaces(c: NameContext, found: Found[]): void {
  hospitalsAfterPreposition(c, found);
  places(c, found);
}

/** "to holy cross hospital", "from sacred heart hosp": one or two words between a place preposition and a hospital word. */
function hospitalsAfterPreposition(c: NameContext, found: Found[]): void {
  const { text, toks, n } = c;
  // "to holy cross hospital", "from sacred heart hosp": one or two words between a place preposition and a hospital
  // word name the hospital even when they are common words (not "to the hospital", "from an outside hospital")
  for (let i = 1; i + 1 < n; i++) {
    const hw = toks[i + 1]!.lower;
    if (!wsGapAt(text, toks[i + 1]!.ge, toks[i + 1]!.s, 1, 2)) continue;
    // "med"/"medical" only as "medical center" ("cardiac med changes" is a medication)
    if ((toks[i + 1]!.f & W_HOSPITAL_WORDS) === 0 && !((hw === "medical" || hw === "med") && i + 2 < n && ((toks[i + 2]!.f & W_CENTER_WORDS) !== 0))) continue;
    for (const k of [2, 1]) {
      const a = i - k + 1;
      if (a < 1 || !((toks[a - 1]!.f & W_LOC_PREPOSITIONS) !== 0) || !wsGapAt(text, toks[a]!.ge, toks[a]!.s, 1, 2)) continue;
      let ok = true;
      for (let j = a; j <= i && ok; j++) {
        const w = toks[j]!;
        ok = (j === a || wsGapAt(text, w.ge, w.s, 1, 2)) && w.lower.length > 2 && !((w.f & W_HOSPITAL_MODIFIERS) !== 0) && !((w.f & W_UNIT_ACRONYMS) !== 0) && !((w.f & W_FACILITY_WORDS) !== 0) && !((w.f & W_TITLES) !== 0) && !((w.f & W_RELATIONS) !== 0);
      }
      if (ok) {
        found.push({ s: toks[a]!.s, e: toks[i]!.e, type: "LOCATION" });
        break;
      }
    }
  }
}

/** Named facilities, cities of the gazetteer, wards, facility acronyms and places after a place cue. */
function places(c: NameContext, found: Found[]): void {
  const { text, toks, n, isName, commonParts, sentenceStart, allCapsText, cities } = c;
  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    // a named facility word after a name or place ("FREDERICK MEMORIAL", "Baltimore Rehab", "LAUREL REGIONAL")
    if (i + 1 < n && ((toks[i + 1]!.f & W_NAMED_FACILITY) !== 0) && wsGapAt(text, t.e, toks[i + 1]!.s, 1, 2) && toks[i + 1]!.cap && (isName[i] || ((t.f & F_CITY) !== 0))) {
      found.push({ s: t.s, e: toks[i + 1]!.e, type: "LOCATION" });
      i++;
      continue;
    }
    // a lower-case city after "lives in" ("both live in hampton")
    if (t.w === t.lower && ((t.f & F_CITY) !== 0) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && i > 0 && /\b(?:lives?|living|resides?|nearby) in\s{1,2}$/i.test(text.slice(Math.max(0, t.s - 16), t.s))) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      continue;
    }
    // city names (gazetteer), capitalised, up to three words ("San Diego", "New Haven", "BALTIMORE")
    if (cities.size > 0 && (!isName[i] || ((t.f & F_CITY_FIRST) !== 0)) && (t.nc || (t.up && t.w.length > 2)) && !((t.f & W_UNIT_ACRONYMS) !== 0)) {
      let matched = 0;
      let key = t.lower;
      const maxK = ((t.f & F_CITY_FIRST) !== 0) ? 3 : 1;
      for (let k = 1; k <= maxK && i + k - 1 < n; k++) {
        if (k > 1) {
          const nx = toks[i + k - 1]!;
          const pv = toks[i + k - 2]!;
          if (nx.s - pv.e !== 1 || text.charCodeAt(pv.e) !== 32 || !(nx.nc || nx.up)) break;
          key += " " + nx.lower;
        }
        // one word: its own lexicon bits answer (no lookup); several: the gazetteer's multi-word names
        if ((k === 1 ? (t.f & F_CITY) !== 0 : cities.has(key)) && (k > 1 || ((t.f & (F_COMMON | F_AMBIGUOUS | W_NOT_NAMES)) === 0 && (t.nc || !allCapsText(i) || (i > 0 && ((toks[i - 1]!.f & W_LOC_PREV) !== 0) && t.w.length >= 5))))) matched = k;
      }
      if (matched > 1 || (matched === 1 && !isName[i])) {
        const last = toks[i + matched - 1]!;
        found.push({ s: t.s, e: last.e, type: "LOCATION" });
        i += matched - 1;
        continue;
      }
    }
    if (isName[i]) continue;
    const after = i + 1 < n && ((toks[i + 1]!.f & W_FACILITY_WORDS) !== 0) ? text.slice(t.e, t.e + 24) : "";
    if (i + 1 < n && ((toks[i + 1]!.f & W_FACILITY_WORDS) !== 0) && t.lower.length > 1 && (!((t.f & F_COMMON) !== 0) || (t.tc && !((t.f & W_NOT_NAMES) !== 0))) && FACILITY.test(after)) {
      const fw = toks[i + 1]!;
      found.push({ s: t.s, e: ((fw.f & W_NAMED_FACILITY) !== 0) && fw.cap === t.cap ? fw.e : t.e, type: "LOCATION" });
      const pv = i > 0 ? toks[i - 1]! : undefined;
      if (pv && wsGapAt(text, pv.e, t.s, 1, 2) && (!((pv.f & F_COMMON) !== 0) || (pv.tc && t.tc && !((pv.f & W_NOT_NAMES) !== 0))) && pv.cap === t.cap) {
        found.push({ s: toks[i - 1]!.s, e: toks[i - 1]!.e, type: "LOCATION" });
      }
      continue;
    }
    // a named ward or building with a floor number after to/from/on/at ("to quartermain 2", "ON QUARTERMAIN 6")
    if (i > 0 && t.w.length >= 5 && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !((t.f & W_NOT_NAMES) !== 0) && !((t.f & W_UNIT_ACRONYMS) !== 0) && ((toks[i - 1]!.f & W_WARD_PREV) !== 0) && !DRUG_LIKE.test(t.lower) && /^\s\d{1,2}(?![\d,/]|\.\d|\s?(?:%|mg|mcg|ml|cc|u|units?|am|pm|hours?|hrs?|days?|x|l|liters?|meq|gm?)\b)/i.test(text.slice(t.e, t.e + 10))) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      continue;
    }
    // a facility acronym after a transfer verb or "at"/"in" ("transferred to GH", "at BIDMC"), not a hospital unit
    if (i > 0 && t.w.length >= 2 && t.w.length <= 5 && t.up && !((t.f & W_UNIT_ACRONYMS) !== 0) && !((t.f & F_COMMON) !== 0) && ((toks[i - 1]!.f & W_LOC_PREV) !== 0) && (STRONG_LOC_PREFIX.test(text.slice(Math.max(0, t.s - 24), t.s)) || (!allCapsText(i) && /\b(?:at|in|to)\s$/i.test(text.slice(Math.max(0, t.s - 4), t.s)))) && !/^\s?\d/.test(text.slice(t.e, t.e + 2))) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      continue;
    }
    if (i > 0 && ((toks[i - 1]!.f & W_LOC_PREV) !== 0) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && t.lower.length > 1 && !((t.f & W_NOT_NAMES) !== 0) && !commonParts(t.lower) && STRONG_LOC_PREFIX.test(text.slice(Math.max(0, t.s - 24), t.s))) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      const nx = toks[i + 1];
      if (nx && wsGapAt(text, t.e, nx.s, 1, 2) && !((nx.f & F_COMMON) !== 0) && !((nx.f & W_NOT_NAMES) !== 0) && nx.cap === t.cap) found.push({ s: nx.s, e: nx.e, type: "LOCATION" });
      continue;
    }
    if (i > 0 && t.tc && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !((t.f & W_NOT_NAMES) !== 0) && ((toks[i - 1]!.f & W_LOC_PREV) !== 0) && LOC_PREFIX.test(text.slice(Math.max(0, t.s - 20), t.s)) && !sentenceStart(i)) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      for (let j = i + 1; j < n && j < i + 3; j++) {
        const nx = toks[j]!;
        if (!wsGapAt(text, toks[j - 1]!.e, nx.s, 1, 2) || !nx.tc || ((nx.f & F_COMMON) !== 0)) break;
        found.push({ s: nx.s, e: nx.e, type: "LOCATION" });
      }
    }
  }
}
