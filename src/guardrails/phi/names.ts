/**
 * Names of people in context: titles, relation and role words, speech cues, the name dictionary, initials and
 * particles, lists of people, signatures, speaker labels, and every other mention of a name found once. Each rule is a
 * pass over the tokens of ./tokens.ts (small functions, so that each is optimised on its own and early); places are in
 * ./places.ts.
 */
import type { Found, PhiEntityType } from "./entities.js";
import { findPlaces } from "./places.js";
import { nameContext, type NameContext, X_EXTRA } from "./tokens.js";

import { F_AMBIGUOUS, F_COMMON, F_ENAME, F_FIRST, F_LAST, type Lexicon } from "./lexicon.js";
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
  W_NAME_PREV,
  W_NOT_NAMES,
  W_RELATIONS,
  W_ROLE_WORDS,
  W_SUBJECT_VERBS,
  W_TITLES,
  W_UNIT_ACRONYMS,
  W_WEAK_RELATIONS,
} from "./words.js";
import { isLow, isUp, lineStartBefore, type Tok, wsGap, wsGapAt } from "./text.js";
/** Finds names (NAME) and places (LOCATION) of the types asked for and adds them to `found`. */
export function findNames(text: string, found: Found[], lx: Lexicon, extra: ReadonlySet<string>, types: ReadonlySet<PhiEntityType>): void {
  const c = nameContext(text, lx, extra);
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
  const { n, toks, isName } = c;
  if (types.has("NAME")) {
    for (let i = 0; i < n; i++) if (isName[i]) found.push({ s: toks[i]!.s, e: toks[i]!.e, type: "NAME" });
  }
  if (types.has("LOCATION")) findPlaces(c, found);
}

/** Titles, speech cues, person verbs, signature lines, relations and dictionary names in name shape (rules 1-3). */
function cueRules(c: NameContext): void {
  const { text, toks, n, isName, weak, common, known, onlyIntl, isCommon, gap, sentenceStart, allCapsText } = c;
  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    // 1. after a title ("Dr. Jones", "mrs. marcela carlson", "DR SULLIVAN")
    if (((t.f & W_TITLES) !== 0) && i + 1 < n && /^(?:\.?\s{1,3}|\.)$/.test(gap(t, toks[i + 1]!))) {
      const nx = toks[i + 1]!;
      // "MS"/"ms" without a full stop is mental status or morphine sulfate: only before a dictionary name
      if (t.lower === "ms" && t.w !== "Ms" && !gap(t, nx).startsWith(".") && !(known(nx) && !isCommon(nx))) continue;
      if (nx.cap || known(nx) || ((nx.f & F_AMBIGUOUS) !== 0) || !((nx.f & F_COMMON) !== 0)) {
        if (!(((nx.f & F_COMMON) !== 0) && !known(nx) && !((nx.f & F_AMBIGUOUS) !== 0) && !nx.cap)) isName[i + 1] = 1;
      }
      continue;
    }
    // 2a. after "my name is", a speech verb or a greeting: a capitalised word that is not a common word
    if (i > 0 && ((toks[i - 1]!.f & W_NAME_PREV) !== 0) && !((t.f & F_COMMON) !== 0) && !((t.f & W_NOT_NAMES) !== 0) && NAME_IS.test(text.slice(Math.max(0, t.s - 12), t.s)) && (t.cap || (known(t) && /name is\s$/i.test(text.slice(Math.max(0, t.s - 9), t.s))))) {
      isName[i] = 1;
      continue;
    }
    if (i > 0 && ((toks[i - 1]!.f & W_CUE_WORDS) !== 0) && /^[\s,:?]{1,8}$/.test(gap(toks[i - 1]!, t)) && t.tc && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !((t.f & W_NOT_NAMES) !== 0)) {
      isName[i] = 1;
      weak[i] = 1;
      continue;
    }
    // 2c. a capitalised unknown word followed by a person verb ("Timotea lives on", "Vinka: What")
    if (((t.tc && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0)) || ((t.w === t.lower || t.up) && ((t.f & F_FIRST) !== 0) && !((t.f & W_NOT_NAMES) !== 0))) && !((t.f & W_NOT_NAMES) !== 0) && POST_CUE.test(text.slice(t.e, t.e + 16).toLowerCase())) {
      isName[i] = 1;
      weak[i] = 1;
      continue;
    }
    // 2d. a line of two or three capitalised words (a letter head or signature: "Satu Elomo")
    if (t.tc && !((t.f & F_COMMON) !== 0) && !((t.f & W_NOT_NAMES) !== 0) && lineStartBefore(text, t.s) && i + 1 < n) {
      const nx = toks[i + 1]!;
      const line = text.slice(t.s, text.indexOf("\n", t.s) < 0 ? text.length : text.indexOf("\n", t.s));
      const lineToks = line.trim().split(/\s+/);
      if (/^[\p{Lu}][\p{L}'’-]+(?: [\p{Lu}]\.?)?(?: [\p{Lu}][\p{L}'’-]+){1,2}$/u.test(line.trim()) && !((nx.f & F_COMMON) !== 0) && lineToks.every((w) => !common.has(w.toLowerCase()) && !NOT_NAMES.has(w.toLowerCase()) && !UNIT_ACRONYMS.has(w.toLowerCase()))) {
        for (let j = i; j < n && toks[j]!.s < t.s + line.length; j++) isName[j] = 1;
        continue;
      }
    }
    // 2b. a capitalised word with letters outside ASCII (names in English text: "Szöllösy", "Guðmundsdóttir")
    if (t.tc && NON_ASCII.test(t.w) && !((t.f & F_COMMON) !== 0) && !((t.f & W_NOT_NAMES) !== 0)) {
      isName[i] = 1;
      continue;
    }
    // 2. after a relation or "my name is"
    const rel = t.lower.includes("-") ? t.lower.slice(t.lower.lastIndexOf("-") + 1) : t.lower;
    if ((rel === t.lower ? (t.f & W_RELATIONS) !== 0 : RELATIONS.has(rel)) && i + 1 < n) {
      let j = i + 1;
      const g = gap(t, toks[j]!);
      if (!/^[\s,(:"'“]{1,4}$/.test(g)) continue;
      if (toks[j]!.lower === "is" && j + 1 < n) j++;
      const nx = toks[j]!;
      const weak = WEAK_RELATIONS.has(rel);
      if (weak) {
        if (t.lower === "and") continue; // handled when extending runs
        if (nx && (known(nx) || ((nx.f & X_EXTRA) !== 0)) && !isCommon(nx) && (nx.tc || nx.up || (nx.w === nx.lower && ((nx.f & F_FIRST) !== 0)))) isName[j] = 1;
      } else if (ROLE_ABBR.has(rel)) {
        // "NP Grace", "rn amber", "PA Smith"; not "PA sats", "RN aware"
        if (nx && !((nx.f & W_NOT_NAMES) !== 0) && (((known(nx) || (nx.f & F_ENAME) !== 0) && !((nx.f & F_COMMON) !== 0)) || (nx.nc && !((nx.f & F_COMMON) !== 0) && !allCapsText(j)))) isName[j] = 1;
      } else if (nx && !((nx.f & F_COMMON) !== 0) && nx.lower.length > 1 && !((nx.f & W_TITLES) !== 0) && !((nx.f & W_NOT_NAMES) !== 0) && !((nx.f & W_RELATIONS) !== 0) && (known(nx) || (nx.cap && !allCapsText(j)) || (nx.w === nx.lower && !/(?:ed|ing|ly)$/.test(nx.lower) && (!((nx.f & F_AMBIGUOUS) !== 0) || (nx.f & F_ENAME) !== 0)))) {
        isName[j] = 1;
      } else if (nx && ((nx.f & F_AMBIGUOUS) !== 0) && nx.cap && !allCapsText(j)) {
        isName[j] = 1;
      }
      continue;
    }
    // 3. dictionary names in name shape
    if (isName[i]) continue;
    if (((t.f & X_EXTRA) !== 0)) {
      isName[i] = 1;
      continue;
    }
    if (!known(t) || isCommon(t)) continue;
    // a name known only from other countries' lists, starting a sentence: only as a subject ("Sunniva is", "Aksel Berg")
    if (onlyIntl(t) && (!t.tc || ((sentenceStart(i) || t.w.length < 5) && !(i + 1 < n && wsGapAt(text, t.e, toks[i + 1]!.s, 1, 2) && (((toks[i + 1]!.f & W_SUBJECT_VERBS) !== 0) || (toks[i + 1]!.nc && known(toks[i + 1]!) && !isCommon(toks[i + 1]!))))))) continue;
    if (t.tc) {
      isName[i] = 1;
    } else if (t.up && t.w.length > 2 && i + 1 < n && known(toks[i + 1]!) && !isCommon(toks[i + 1]!) && wsGapAt(text, t.e, toks[i + 1]!.s, 1, 2)) {
      isName[i] = 1;
      isName[i + 1] = 1;
    } else if (t.w === t.lower && ((t.f & F_FIRST) !== 0) && i + 1 < n && ((toks[i + 1]!.f & F_LAST) !== 0) && !isCommon(toks[i + 1]!) && wsGapAt(text, t.e, toks[i + 1]!.s, 1, 2)) {
      isName[i] = 1;
      isName[i + 1] = 1;
    }
  }
}

/** 4. extend runs: neighbours that look like names, initials, and signatures */
function extendRuns(c: NameContext): void {
  const { text, toks, n, isName, known, gap, nameLike } = c;
  // 4. extend runs: neighbours that look like names, initials, and signatures ("DAN A. FORMAN-LYONS, RRT")
  for (let pass = 0; pass < 2; pass++) {
    for (let i = 0; i < n; i++) {
      if (!isName[i]) continue;
      const t = toks[i]!;
      if (i + 1 < n && !isName[i + 1]) {
        const nx = toks[i + 1]!;
        const g = gap(t, nx);
        // a full stop between them only after an initial ("J. Smith"), not at the end of a sentence ("Dr. White. Will ...")
        if ((g.length > 0 && g[0] === "." ? t.w.length === 1 && wsGap(g, 1, 2, 46, true) : wsGap(g, 1, 2)) && ((nx.w.length === 1 && nx.up) || (nameLike(nx, i + 1) && (nx.cap === t.cap || known(nx))) || (t.tc && nx.tc && ((nx.f & F_AMBIGUOUS) !== 0) && !((nx.f & W_NOT_NAMES) !== 0)))) {
          if (!(nx.w.length === 1 && !/^\.?\s/.test(text.slice(nx.e, nx.e + 2)) && !/^\s/.test(g))) isName[i + 1] = 1;
        }
      }
      if (i > 0 && !isName[i - 1]) {
        const pv = toks[i - 1]!;
        const g = gap(pv, t);
        if ((g.length > 0 && g[0] === "." ? pv.w.length === 1 && wsGap(g, 1, 2, 46, true) : wsGap(g, 1, 2)) && ((pv.w.length === 1 && pv.up && i > 1 && isName[i - 2]) || (nameLike(pv, i - 1) && known(pv) && pv.cap === t.cap))) {
          isName[i - 1] = 1;
        } else if (g === " " && pv.tc && t.nc && !((pv.f & F_COMMON) !== 0) && !((pv.f & F_AMBIGUOUS) !== 0) && !((pv.f & W_NOT_NAMES) !== 0) && !((pv.f & W_UNIT_ACRONYMS) !== 0) && !((pv.f & W_RELATIONS) !== 0) && !((pv.f & W_TITLES) !== 0)) {
          // "Radu Crosson": a capitalised unknown word right before a surname
          isName[i - 1] = 1;
        }
      }
    }
  }
}

/** initial + surname and <name> and <name> */
function initialsAndPairs(c: NameContext): void {
  const { text, toks, n, isName, known, isCommon, allCapsText } = c;
  // initial + surname ("E. WELSH", "Z. Miller") and "<name> and <name>"
  for (let i = 0; i + 1 < n; i++) {
    const t = toks[i]!;
    const nx = toks[i + 1]!;
    if (t.w.length === 1 && t.up && wsGapAt(text, t.e, nx.s, 1, 2, 46, true) && nx.w.length > 1 && !((nx.f & W_NOT_NAMES) !== 0) && (allCapsText(i + 1) ? (known(nx) && !isCommon(nx)) || (nx.w.length > 2 && !((nx.f & F_COMMON) !== 0) && !((nx.f & F_AMBIGUOUS) !== 0)) : nx.nc && !((nx.f & F_COMMON) !== 0)) && !/[/\w'’]$/.test(text.slice(Math.max(0, t.s - 1), t.s))) {
      isName[i] = 1;
      isName[i + 1] = 1;
    }
    if (isName[i] && !isName[i + 1] && wsGapAt(text, t.e, nx.s, 1, 2, 44, true) && nx.tc && t.tc && !((nx.f & F_COMMON) !== 0) && !((nx.f & F_AMBIGUOUS) !== 0) && !((nx.f & W_NOT_NAMES) !== 0)) {
      isName[i + 1] = 1;
    }
    if (isName[i] && i + 2 < n && nx.lower === "and" && !isName[i + 2]) {
      const y = toks[i + 2]!;
      if (((known(y) || ((y.f & X_EXTRA) !== 0)) && !isCommon(y)) || (y.nc && t.nc && !((y.f & F_COMMON) !== 0) && !((y.f & W_NOT_NAMES) !== 0))) {
        if (wsGapAt(text, t.e, nx.s, 1, 2) && wsGapAt(text, nx.e, y.s, 1, 2)) isName[i + 2] = 1;
      }
    }
  }
}

/** backwards */
function backwards(c: NameContext): void {
  const { text, toks, n, isName, gap } = c;
  // backwards: "<X>, <name>", "<X> and <name>", "<X> <initial> <name>"; forwards: generational suffixes
  for (let i = n - 1; i > 0; i--) {
    if (!isName[i]) continue;
    const t = toks[i]!;
    const pv = toks[i - 1]!;
    const g = gap(pv, t);
    const ok = (x: Tok) => x.nc && !((x.f & F_COMMON) !== 0) && !((x.f & F_AMBIGUOUS) !== 0) && !((x.f & W_NOT_NAMES) !== 0) && !((x.f & W_UNIT_ACRONYMS) !== 0);
    if (!isName[i - 1] && wsGap(g, 1, 2, 44, true) && t.nc && ok(pv)) isName[i - 1] = 1;
    if (i > 1 && pv.lower === "and" && !isName[i - 2] && wsGap(g, 1, 2) && wsGapAt(text, toks[i - 2]!.e, pv.s, 1, 2) && t.nc && ok(toks[i - 2]!)) isName[i - 2] = 1;
    if (i > 1 && pv.w.length === 1 && pv.up && wsGap(g, 1, 2, 46) && wsGapAt(text, toks[i - 2]!.e, pv.s, 1, 2) && ok(toks[i - 2]!)) {
      isName[i - 1] = 1;
      isName[i - 2] = 1;
    }
    if (i + 1 < n && /^(?:II|III|IV|Jr|Sr)$/.test(toks[i + 1]!.w) && wsGapAt(text, t.e, toks[i + 1]!.s, 1, 2, 44)) isName[i + 1] = 1;
  }
}

/** signatures */
function signatures(c: NameContext): void {
  const { text, toks, n, isName, first, known } = c;
  // signatures: name-like words right before a credential ("Marie Munroe, RN", "barbara j. parrilli bsn/rn")
  for (let i = 0; i < n; i++) {
    // a credential is the next word ("RN", "bsn/rn", "PA-C"): no slice and no pattern for any other word
    if (i + 1 >= n || !((toks[i + 1]!.f & W_CREDENTIAL_WORDS) !== 0)) continue;
    const t = toks[i]!;
    const after = text.slice(t.e, t.e + 12);
    const upperCred = CREDENTIAL.test(after);
    if (!upperCred && !CREDENTIAL_LOWER.test(after)) continue;
    if (((t.f & W_CREDENTIALS) !== 0)) continue;
    const line = text.lastIndexOf("\n", t.s);
    if (!upperCred) {
      const head = text.slice(line + 1, t.e).trim();
      const first0 = /^[a-z]+/.exec(head)?.[0];
      if (first0 && first.has(first0) && /^[a-z]+ (?:[a-z]\.? )?[a-z'-]+$/.test(head)) {
        for (let j = i; j >= 0 && toks[j]!.s > line; j--) isName[j] = 1;
        continue;
      }
    }
    for (let j = i; j >= 0 && toks[j]!.s > line && i - j < 4; j--) {
      const tj = toks[j]!;
      if (j < i && !wsGapAt(text, tj.e, toks[j + 1]!.s, 1, 3, 46)) break;
      const initial = tj.w.length === 1;
      if (initial && (j === i || /[\d'’/]$/.test(text.slice(Math.max(0, tj.s - 1), tj.s)))) break;
      const nameish = initial || known(tj) || ((tj.f & F_AMBIGUOUS) !== 0) || (tj.nc && !((tj.f & F_COMMON) !== 0)) || (upperCred && tj.up && !((tj.f & F_COMMON) !== 0));
      if (!nameish || ((tj.f & W_NOT_NAMES) !== 0) || ((tj.f & W_CREDENTIALS) !== 0)) break;
      if (!upperCred && !initial && !known(tj) && !((tj.f & F_AMBIGUOUS) !== 0) && !tj.nc) break;
      isName[j] = 1;
    }
  }
}

/** lists */
function peopleLists(c: NameContext): void {
  const { text, toks, n, isName, known, gap } = c;
  // lists of people ("they had 3: silvana, adam and caleb", "our founders: Monjeau, Graves and Reed"): a run of
  // three or more single words joined by commas / "and", at least two of them dictionary names
  for (let i = 0; i < n; i++) {
    // a list needs a comma after its first item
    if (i + 1 >= n || text.slice(toks[i + 1]!.ge, toks[i + 1]!.s).charCodeAt(0) !== 44) continue;
    const items = [i];
    let j = i;
    while (j + 1 < n) {
      const g = gap(toks[j]!, toks[j + 1]!);
      if (wsGap(g, 1, 2, 44, true)) {
        items.push(++j);
      } else if (wsGap(g, 1, 2, 44) && toks[j + 1]!.lower === "and" && j + 2 < n && wsGapAt(text, toks[j + 1]!.e, toks[j + 2]!.s, 1, 2)) {
        items.push((j += 2));
        break;
      } else break;
    }
    if (items.length >= 3) {
      const sameCase = items.every((k) => toks[k]!.nc) || items.every((k) => toks[k]!.w === toks[k]!.lower);
      const names = items.filter((k) => isName[k] || (known(toks[k]!) && !((toks[k]!.f & F_COMMON) !== 0))).length;
      const plain = items.every((k) => !((toks[k]!.f & W_NOT_NAMES) !== 0) && !((toks[k]!.f & W_UNIT_ACRONYMS) !== 0) && (!((toks[k]!.f & F_COMMON) !== 0) || ((toks[k]!.f & F_AMBIGUOUS) !== 0)));
      if (sameCase && plain && names >= 2) for (const k of items) isName[k] = 1;
    }
    i = Math.max(i, j);
  }
}

/** particles */
function particles(c: NameContext): void {
  const { text, toks, n, isName, known } = c;
  // names with particles or a bare middle initial ("Maika van de Noort", "Willemine ten Pas", "Ravil G Yefimov"):
  // capitalised words around lower-case particles or one capital letter, at least one of them a dictionary name
  for (let i = 0; i + 2 < n; i++) {
    const a = toks[i]!;
    if (!a.tc || ((a.f & F_COMMON) !== 0) || ((a.f & W_NOT_NAMES) !== 0)) continue;
    let j = i + 1;
    while (j < n && j - i <= 3 && (NAME_PARTICLES.has(toks[j]!.w) || (toks[j]!.w.length === 1 && isUp(toks[j]!.w.charCodeAt(0)))) && wsGapAt(text, toks[j - 1]!.e, toks[j]!.s, 1, 1)) j++;
    if (j === i + 1 || j >= n || !wsGapAt(text, toks[j - 1]!.e, toks[j]!.s, 1, 1)) continue;
    const z = toks[j]!;
    if (!z.nc || ((z.f & F_COMMON) !== 0) || ((z.f & W_NOT_NAMES) !== 0) || ((a.f & W_UNIT_ACRONYMS) !== 0) || ((((a.f & F_AMBIGUOUS) !== 0) || ((z.f & F_AMBIGUOUS) !== 0)) && !(known(a) && known(z)))) continue;
    for (let k = i; k <= j; k++) isName[k] = 1;
    i = j;
  }
}

/** relation in parentheses */
function relationInParentheses(c: NameContext): void {
  const { text, toks, n, isName, gap } = c;
  // a name followed by the relation in parentheses ("URSLA MORETTI (DAUGHTER)", "Ann Lee (wife)")
  for (let i = 0; i + 1 < n; i++) {
    const r = toks[i + 1]!;
    if (!((r.f & W_RELATIONS) !== 0) || ((r.f & W_WEAK_RELATIONS) !== 0) || !/^\s?\($/.test(gap(toks[i]!, r))) continue;
    for (let j = i; j >= 0 && i - j < 3; j--) {
      const tj = toks[j]!;
      if (j < i && !wsGapAt(text, tj.e, toks[j + 1]!.s, 1, 2)) break;
      if (!(tj.nc || tj.up) || ((tj.f & F_COMMON) !== 0) || ((tj.f & W_NOT_NAMES) !== 0) || ((tj.f & W_UNIT_ACRONYMS) !== 0) || ((tj.f & W_ROLE_WORDS) !== 0) || ((tj.f & W_RELATIONS) !== 0) || tj.w.length < 3) break;
      isName[j] = 1;
    }
  }
}

/** lower-case initial */
function lowerInitials(c: NameContext): void {
  const { text, toks, n, isName, isCommon } = c;
  // a lower-case initial and a dictionary surname ("nsg (d. renna and j. o'brien)"); "e. coli" is not a surname
  for (let i = 0; i + 1 < n; i++) {
    const t = toks[i]!;
    const nx = toks[i + 1]!;
    if (t.w.length === 1 && isLow(t.w.charCodeAt(0)) && text.slice(nx.ge, nx.s) === ". " && (nx.f & F_LAST) !== 0 && !isCommon(nx) && !((nx.f & W_NOT_NAMES) !== 0) && /(?:^|[(\n]|(?:and|or|by|with|per|to|nsg|rn|md|dr|,)\s)$/i.test(text.slice(Math.max(0, t.s - 5), t.s))) {
      isName[i] = 1;
      isName[i + 1] = 1;
    }
  }
}

/** aware */
function beforeAware(c: NameContext): void {
  const { text, toks, n, isName, known } = c;
  // one or two words before "aware" in a nursing note ("grace dudak aware", "BEA TURA AWARE"; not "MD aware", "team aware")
  for (let i = 1; i < n; i++) {
    if (toks[i]!.lower !== "aware" || !wsGapAt(text, toks[i]!.ge, toks[i]!.s, 1, 2)) continue;
    const plain = (t: Tok) => t.lower.length > 2 && !((t.f & F_COMMON) !== 0) && !((t.f & W_NOT_NAMES) !== 0) && !((t.f & W_UNIT_ACRONYMS) !== 0) && !((t.f & W_ROLE_WORDS) !== 0) && !((t.f & W_RELATIONS) !== 0) && !((t.f & W_TITLES) !== 0) && !((t.f & W_CREDENTIALS) !== 0) && !/\d/.test(text.slice(t.s - 1, t.e + 1));
    const a = toks[i - 1]!;
    if (!plain(a) || (!known(a) && (a.f & F_ENAME) === 0 && !(i > 1 && wsGapAt(text, a.ge, a.s, 1, 2) && plain(toks[i - 2]!) && (known(toks[i - 2]!) || (toks[i - 2]!.f & F_ENAME) !== 0)))) continue;
    isName[i - 1] = 1;
    if (i > 1 && wsGapAt(text, a.ge, a.s, 1, 2) && plain(toks[i - 2]!) && toks[i - 2]!.cap === a.cap) isName[i - 2] = 1;
  }
}

/** speaker label */
function speakerLabels(c: NameContext): void {
  const { text, toks, n, isName, sentenceStart } = c;
  // a speaker label starting a line or sentence ('Zuzana: "Who are you?"')
  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    if (!isName[i] && t.tc && !((t.f & F_COMMON) !== 0) && !((t.f & W_NOT_NAMES) !== 0) && !((t.f & W_ROLE_WORDS) !== 0) && !((t.f & W_RELATIONS) !== 0) && !((t.f & W_TITLES) !== 0) && sentenceStart(i) && /^:\s?["“]/.test(text.slice(t.e, t.e + 3))) isName[i] = 1;
  }
}

/** lower-case text */
function lowerCaseText(c: NameContext): void {
  const { text, toks, n, isName, known, isCommon } = c;
  // all-lower-case text (case says nothing): a first name and the word after it ("olga krylova", "leone mazzi")
  if (c.lowerText) {
    for (let i = 0; i + 1 < n; i++) {
      const t = toks[i]!;
      const nx = toks[i + 1]!;
      if ((((t.f & F_FIRST) !== 0) || isName[i]) && !isCommon(t) && wsGapAt(text, t.e, nx.s, 1, 2) && known(nx) && !isCommon(nx) && nx.lower.length > 2) {
        isName[i] = 1;
        isName[i + 1] = 1;
      } else if (isName[i] && nx.w.length === 1 && i + 2 < n && wsGapAt(text, t.e, nx.s, 1, 1) && wsGapAt(text, nx.e, toks[i + 2]!.s, 1, 1, 46) && (toks[i + 2]!.f & F_COMMON) === 0 && toks[i + 2]!.lower.length > 2) {
        // "eric g. samoylova": a name, a middle initial and the word after it
        isName[i + 1] = 1;
        isName[i + 2] = 1;
      }
    }
  }
}

/** every mention */
function everyMention(c: NameContext): void {
  const { text, toks, n, isName, weak, known, isCommon, sentenceStart } = c;
  // one name, every mention: a word found as a name elsewhere in the text is a name wherever it is written the same way
  const seen = new Set<string>();
  const lowerText = c.lowerText;
  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    // only names found by a strong cue, a dictionary name, or a capitalised word with letters outside ASCII:
    // a drug brand caught by a weak cue ("her Eliquis") must not spread to every dosing order
    const evidence = !weak[i] || known(t) || (t.nc && NON_ASCII.test(t.w));
    if (isName[i] && evidence && t.w.length > 2 && (t.nc || lowerText) && !isCommon(t) && !((t.f & W_UNIT_ACRONYMS) !== 0) && !((t.f & W_CREDENTIALS) !== 0)) seen.add(t.w);
  }
  if (seen.size > 0) {
    for (let i = 0; i < n; i++) {
      const t = toks[i]!;
      if (!isName[i] && seen.has(t.w) && !sentenceStart(i) && !/^\s{0,2}\d/.test(text.slice(t.e, t.e + 3))) isName[i] = 1;
    }
  }
}
