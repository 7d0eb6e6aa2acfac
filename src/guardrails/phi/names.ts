/**
 * Names of people and places in context: titles, relation and role words, speech cues, the name dictionary, initials
 * and particles, lists of people, signatures, speaker labels, every other mention of a name found once, and
 * facilities and places after a place cue or in the gazetteer.
 */
import type { Found, PhiEntityType } from "./entities.js";
import { F_AMBIGUOUS, F_CITY, F_CITY_FIRST, F_COMMON, F_ENAME, F_FIRST, F_INTL, F_LAST, type Lexicon } from "./lexicon.js";
import {
  CENTER_WORDS,
  CREDENTIAL,
  CREDENTIAL_LOWER,
  CREDENTIAL_WORDS,
  CREDENTIALS,
  CUE_WORDS,
  DRUG_LIKE,
  FACILITY,
  FACILITY_WORDS,
  HOSPITAL_MODIFIERS,
  HOSPITAL_WORDS,
  LOC_PREFIX,
  LOC_PREPOSITIONS,
  LOC_PREV,
  NAME_IS,
  NAME_PARTICLES,
  NAME_PREV,
  NAMED_FACILITY,
  NON_ASCII,
  NOT_NAMES,
  POST_CUE,
  RELATIONS,
  ROLE_ABBR,
  ROLE_WORDS,
  STRONG_LOC_PREFIX,
  SUBJECT_VERBS,
  TITLES,
  UNIT_ACRONYMS,
  WARD_PREV,
  WEAK_RELATIONS,
} from "./words.js";
import { isCap, isLow, isNameCase, isTitleCase, isUp, isUpper, lineStartBefore, scanWords, type Tok, wsGap } from "./text.js";

/** Finds names (NAME) and places (LOCATION) of the types asked for and adds them to `found`. */
export function findNames(text: string, found: Found[], lx: Lexicon, extra: ReadonlySet<string>, types: ReadonlySet<PhiEntityType>): void {
  const { first, common, ambiguous } = lx;
  const lexFlags = lx.flags;
  const toks: Tok[] = [];
  scanWords(text, (s, end, asciiLower) => {
    // trailing hyphens and apostrophes are not part of the word ("Smith-", "Jones'")
    let e = end;
    for (let c = text.charCodeAt(e - 1); e - s > 1 && (c === 45 || c === 39 || c === 0x2019); c = text.charCodeAt(e - 1)) e--;
    let w = text.slice(s, e);
    let lower = asciiLower ? w : w.toLowerCase();
    // possessive: "Smith's", "SMITH’S" (the test is on the lower case, as the word's own case may differ)
    const ll = lower.length;
    if (ll >= 2 && lower.charCodeAt(ll - 1) === 115 && (lower.charCodeAt(ll - 2) === 39 || lower.charCodeAt(ll - 2) === 0x2019)) {
      lower = lower.slice(0, -2);
      w = w.slice(0, -2);
    }
    const prev = toks.length > 0 ? toks[toks.length - 1]! : undefined;
    toks.push({ s, e: s + w.length, w, lower, i: toks.length, g: prev ? text.slice(prev.e, s) : "", f: lexFlags.get(lower) ?? 0 });
  });
  const n = toks.length;
  const isName = new Uint8Array(n);
  /** Named only by a weak cue ("her X", "X was"): such a word is not spread to its other mentions. */
  const weak = new Uint8Array(n);
  // per-token answers are memoised (0 unknown, 1 false, 2 true): the passes below ask the same questions many times
  const knownM = new Uint8Array(n);
  const commonM = new Uint8Array(n);
  const startM = new Uint8Array(n);
  const known = (t: Tok) => {
    let v = knownM[t.i]!;
    if (v === 0) knownM[t.i] = v = extra.has(t.lower) || ((((t.f & F_FIRST) !== 0) || ((t.f & F_LAST) !== 0) || ((t.f & F_INTL) !== 0)) && !NOT_NAMES.has(t.lower)) ? 2 : 1;
    return v === 2;
  };
  const onlyIntl = (t: Tok) => ((t.f & F_INTL) !== 0) && !((t.f & F_FIRST) !== 0) && !((t.f & F_LAST) !== 0) && !extra.has(t.lower);
  const isCommon = (t: Tok) => {
    let v = commonM[t.i]!;
    if (v === 0) commonM[t.i] = v = ((t.f & F_COMMON) !== 0) || ((t.f & F_AMBIGUOUS) !== 0) || t.lower.length < 2 ? 2 : 1;
    return v === 2;
  };
  /** A hyphenated word with a one-letter or common part ("a-fib", "step-down"). */
  const commonParts = (w: string) => w.includes("-") && w.split("-").some((p) => p.length < 2 || common.has(p));
  const gap = (a: Tok, b: Tok) => (b.i === a.i + 1 ? b.g : text.slice(a.e, b.s));
  const sentenceStart = (i: number) => {
    if (i === 0) return true;
    let v = startM[i]!;
    if (v === 0) startM[i] = v = /[.!?:;\n]\s*$/.test(toks[i]!.g) || /^\s*["'(]$/.test(toks[i]!.g) ? 2 : 1;
    return v === 2;
  };
  // upper-case words before each position: the share of upper-case neighbours is a difference of two prefix sums
  const upperBefore = new Int32Array(n + 1);
  for (let j = 0; j < n; j++) upperBefore[j + 1] = upperBefore[j]! + (isUpper(toks[j]!.w) ? 1 : 0);
  const allCapsText = (i: number) => {
    // True when the surrounding text is upper case (so case says nothing about names).
    const lo = Math.max(0, i - 4);
    const hi = Math.min(n, i + 5);
    const tot = hi - lo - 1;
    const up = upperBefore[hi]! - upperBefore[lo]! - (upperBefore[i + 1]! - upperBefore[i]!);
    return tot > 0 && up / tot > 0.6;
  };
  const nameLike = (t: Tok, i: number) => {
    if (extra.has(t.lower)) return true;
    if (((t.f & F_COMMON) !== 0) && !known(t)) return false;
    if (NOT_NAMES.has(t.lower)) return false;
    if (isUpper(t.w) && allCapsText(i)) return (known(t) && !isCommon(t)) || (t.w.length > 2 && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0));
    if (isNameCase(t.w) || (isUpper(t.w) && t.w.length > 1)) return !((t.f & F_COMMON) !== 0) || known(t) || ((t.f & F_AMBIGUOUS) !== 0) ? true : false;
    // lower case: only dictionary names
    return known(t) && !allCapsText(i);
  };

  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    // 1. after a title ("Dr. Jones", "mrs. marcela carlson", "DR SULLIVAN")
    if (TITLES.has(t.lower) && i + 1 < n && /^(?:\.?\s{1,3}|\.)$/.test(gap(t, toks[i + 1]!))) {
      const nx = toks[i + 1]!;
      // "MS"/"ms" without a full stop is mental status or morphine sulfate: only before a dictionary name
      if (t.lower === "ms" && t.w !== "Ms" && !gap(t, nx).startsWith(".") && !(known(nx) && !isCommon(nx))) continue;
      if (isCap(nx.w) || known(nx) || ((nx.f & F_AMBIGUOUS) !== 0) || !((nx.f & F_COMMON) !== 0)) {
        if (!(((nx.f & F_COMMON) !== 0) && !known(nx) && !((nx.f & F_AMBIGUOUS) !== 0) && !isCap(nx.w))) isName[i + 1] = 1;
      }
      continue;
    }
    // 2a. after "my name is", a speech verb or a greeting: a capitalised word that is not a common word
    if (i > 0 && NAME_PREV.has(toks[i - 1]!.lower) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower) && NAME_IS.test(text.slice(Math.max(0, t.s - 12), t.s)) && (isCap(t.w) || (known(t) && /name is\s$/i.test(text.slice(Math.max(0, t.s - 9), t.s))))) {
      isName[i] = 1;
      continue;
    }
    if (i > 0 && CUE_WORDS.has(toks[i - 1]!.lower) && /^[\s,:?]{1,8}$/.test(gap(toks[i - 1]!, t)) && isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(t.lower)) {
      isName[i] = 1;
      weak[i] = 1;
      continue;
    }
    // 2c. a capitalised unknown word followed by a person verb ("Timotea lives on", "Vinka: What")
    if (((isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0)) || ((t.w === t.lower || isUpper(t.w)) && ((t.f & F_FIRST) !== 0) && !NOT_NAMES.has(t.lower))) && !NOT_NAMES.has(t.lower) && POST_CUE.test(text.slice(t.e, t.e + 16).toLowerCase())) {
      isName[i] = 1;
      weak[i] = 1;
      continue;
    }
    // 2d. a line of two or three capitalised words (a letter head or signature: "Satu Elomo")
    if (isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower) && lineStartBefore(text, t.s) && i + 1 < n) {
      const nx = toks[i + 1]!;
      const line = text.slice(t.s, text.indexOf("\n", t.s) < 0 ? text.length : text.indexOf("\n", t.s));
      const lineToks = line.trim().split(/\s+/);
      if (/^[\p{Lu}][\p{L}'’-]+(?: [\p{Lu}]\.?)?(?: [\p{Lu}][\p{L}'’-]+){1,2}$/u.test(line.trim()) && !((nx.f & F_COMMON) !== 0) && lineToks.every((w) => !common.has(w.toLowerCase()) && !NOT_NAMES.has(w.toLowerCase()) && !UNIT_ACRONYMS.has(w.toLowerCase()))) {
        for (let j = i; j < n && toks[j]!.s < t.s + line.length; j++) isName[j] = 1;
        continue;
      }
    }
    // 2b. a capitalised word with letters outside ASCII (names in English text: "Szöllösy", "Guðmundsdóttir")
    if (isTitleCase(t.w) && NON_ASCII.test(t.w) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower)) {
      isName[i] = 1;
      continue;
    }
    // 2. after a relation or "my name is"
    const rel = t.lower.includes("-") ? t.lower.slice(t.lower.lastIndexOf("-") + 1) : t.lower;
    if (RELATIONS.has(rel) && i + 1 < n) {
      let j = i + 1;
      const g = gap(t, toks[j]!);
      if (!/^[\s,(:"'“]{1,4}$/.test(g)) continue;
      if (toks[j]!.lower === "is" && j + 1 < n) j++;
      const nx = toks[j]!;
      const weak = WEAK_RELATIONS.has(rel);
      if (weak) {
        if (t.lower === "and") continue; // handled when extending runs
        if (nx && (known(nx) || extra.has(nx.lower)) && !isCommon(nx) && (isTitleCase(nx.w) || isUpper(nx.w) || (nx.w === nx.lower && ((nx.f & F_FIRST) !== 0)))) isName[j] = 1;
      } else if (ROLE_ABBR.has(rel)) {
        // "NP Grace", "rn amber", "PA Smith"; not "PA sats", "RN aware"
        if (nx && !NOT_NAMES.has(nx.lower) && (((known(nx) || (nx.f & F_ENAME) !== 0) && !((nx.f & F_COMMON) !== 0)) || (isNameCase(nx.w) && !((nx.f & F_COMMON) !== 0) && !allCapsText(j)))) isName[j] = 1;
      } else if (nx && !((nx.f & F_COMMON) !== 0) && nx.lower.length > 1 && !TITLES.has(nx.lower) && !NOT_NAMES.has(nx.lower) && !RELATIONS.has(nx.lower) && (known(nx) || (isCap(nx.w) && !allCapsText(j)) || (nx.w === nx.lower && !/(?:ed|ing|ly)$/.test(nx.lower) && (!((nx.f & F_AMBIGUOUS) !== 0) || (nx.f & F_ENAME) !== 0)))) {
        isName[j] = 1;
      } else if (nx && ((nx.f & F_AMBIGUOUS) !== 0) && isCap(nx.w) && !allCapsText(j)) {
        isName[j] = 1;
      }
      continue;
    }
    // 3. dictionary names in name shape
    if (isName[i]) continue;
    if (extra.has(t.lower)) {
      isName[i] = 1;
      continue;
    }
    if (!known(t) || isCommon(t)) continue;
    // a name known only from other countries' lists, starting a sentence: only as a subject ("Sunniva is", "Aksel Berg")
    if (onlyIntl(t) && (!isTitleCase(t.w) || ((sentenceStart(i) || t.w.length < 5) && !(i + 1 < n && wsGap(gap(t, toks[i + 1]!), 1, 2) && (SUBJECT_VERBS.has(toks[i + 1]!.lower) || (isNameCase(toks[i + 1]!.w) && known(toks[i + 1]!) && !isCommon(toks[i + 1]!))))))) continue;
    if (isTitleCase(t.w)) {
      isName[i] = 1;
    } else if (isUpper(t.w) && t.w.length > 2 && i + 1 < n && known(toks[i + 1]!) && !isCommon(toks[i + 1]!) && wsGap(gap(t, toks[i + 1]!), 1, 2)) {
      isName[i] = 1;
      isName[i + 1] = 1;
    } else if (t.w === t.lower && ((t.f & F_FIRST) !== 0) && i + 1 < n && ((toks[i + 1]!.f & F_LAST) !== 0) && !isCommon(toks[i + 1]!) && wsGap(gap(t, toks[i + 1]!), 1, 2)) {
      isName[i] = 1;
      isName[i + 1] = 1;
    }
  }
  // 4. extend runs: neighbours that look like names, initials, and signatures ("DAN A. FORMAN-LYONS, RRT")
  for (let pass = 0; pass < 2; pass++) {
    for (let i = 0; i < n; i++) {
      if (!isName[i]) continue;
      const t = toks[i]!;
      if (i + 1 < n && !isName[i + 1]) {
        const nx = toks[i + 1]!;
        const g = gap(t, nx);
        // a full stop between them only after an initial ("J. Smith"), not at the end of a sentence ("Dr. White. Will ...")
        if ((g.length > 0 && g[0] === "." ? t.w.length === 1 && wsGap(g, 1, 2, 46, true) : wsGap(g, 1, 2)) && ((nx.w.length === 1 && isUpper(nx.w)) || (nameLike(nx, i + 1) && (isCap(nx.w) === isCap(t.w) || known(nx))) || (isTitleCase(t.w) && isTitleCase(nx.w) && ((nx.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(nx.lower)))) {
          if (!(nx.w.length === 1 && !/^\.?\s/.test(text.slice(nx.e, nx.e + 2)) && !/^\s/.test(g))) isName[i + 1] = 1;
        }
      }
      if (i > 0 && !isName[i - 1]) {
        const pv = toks[i - 1]!;
        const g = gap(pv, t);
        if ((g.length > 0 && g[0] === "." ? pv.w.length === 1 && wsGap(g, 1, 2, 46, true) : wsGap(g, 1, 2)) && ((pv.w.length === 1 && isUpper(pv.w) && i > 1 && isName[i - 2]) || (nameLike(pv, i - 1) && known(pv) && isCap(pv.w) === isCap(t.w)))) {
          isName[i - 1] = 1;
        } else if (g === " " && isTitleCase(pv.w) && isNameCase(t.w) && !((pv.f & F_COMMON) !== 0) && !((pv.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(pv.lower) && !UNIT_ACRONYMS.has(pv.lower) && !RELATIONS.has(pv.lower) && !TITLES.has(pv.lower)) {
          // "Radu Crosson": a capitalised unknown word right before a surname
          isName[i - 1] = 1;
        }
      }
    }
  }
  // initial + surname ("E. WELSH", "Z. Miller") and "<name> and <name>"
  for (let i = 0; i + 1 < n; i++) {
    const t = toks[i]!;
    const nx = toks[i + 1]!;
    if (t.w.length === 1 && isUpper(t.w) && wsGap(gap(t, nx), 1, 2, 46, true) && nx.w.length > 1 && !NOT_NAMES.has(nx.lower) && (allCapsText(i + 1) ? (known(nx) && !isCommon(nx)) || (nx.w.length > 2 && !((nx.f & F_COMMON) !== 0) && !((nx.f & F_AMBIGUOUS) !== 0)) : isNameCase(nx.w) && !((nx.f & F_COMMON) !== 0)) && !/[/\w'’]$/.test(text.slice(Math.max(0, t.s - 1), t.s))) {
      isName[i] = 1;
      isName[i + 1] = 1;
    }
    if (isName[i] && !isName[i + 1] && wsGap(gap(t, nx), 1, 2, 44, true) && isTitleCase(nx.w) && isTitleCase(t.w) && !((nx.f & F_COMMON) !== 0) && !((nx.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(nx.lower)) {
      isName[i + 1] = 1;
    }
    if (isName[i] && i + 2 < n && nx.lower === "and" && !isName[i + 2]) {
      const y = toks[i + 2]!;
      if (((known(y) || extra.has(y.lower)) && !isCommon(y)) || (isNameCase(y.w) && isNameCase(t.w) && !((y.f & F_COMMON) !== 0) && !NOT_NAMES.has(y.lower))) {
        if (wsGap(gap(t, nx), 1, 2) && wsGap(gap(nx, y), 1, 2)) isName[i + 2] = 1;
      }
    }
  }
  // backwards: "<X>, <name>", "<X> and <name>", "<X> <initial> <name>"; forwards: generational suffixes
  for (let i = n - 1; i > 0; i--) {
    if (!isName[i]) continue;
    const t = toks[i]!;
    const pv = toks[i - 1]!;
    const g = gap(pv, t);
    const ok = (x: Tok) => isNameCase(x.w) && !((x.f & F_COMMON) !== 0) && !((x.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(x.lower) && !UNIT_ACRONYMS.has(x.lower);
    if (!isName[i - 1] && wsGap(g, 1, 2, 44, true) && isNameCase(t.w) && ok(pv)) isName[i - 1] = 1;
    if (i > 1 && pv.lower === "and" && !isName[i - 2] && wsGap(g, 1, 2) && wsGap(gap(toks[i - 2]!, pv), 1, 2) && isNameCase(t.w) && ok(toks[i - 2]!)) isName[i - 2] = 1;
    if (i > 1 && pv.w.length === 1 && isUpper(pv.w) && wsGap(g, 1, 2, 46) && wsGap(gap(toks[i - 2]!, pv), 1, 2) && ok(toks[i - 2]!)) {
      isName[i - 1] = 1;
      isName[i - 2] = 1;
    }
    if (i + 1 < n && /^(?:II|III|IV|Jr|Sr)$/.test(toks[i + 1]!.w) && wsGap(gap(t, toks[i + 1]!), 1, 2, 44)) isName[i + 1] = 1;
  }
  // signatures: name-like words right before a credential ("Marie Munroe, RN", "barbara j. parrilli bsn/rn")
  for (let i = 0; i < n; i++) {
    // a credential is the next word ("RN", "bsn/rn", "PA-C"): no slice and no pattern for any other word
    if (i + 1 >= n || !CREDENTIAL_WORDS.has(toks[i + 1]!.lower)) continue;
    const t = toks[i]!;
    const after = text.slice(t.e, t.e + 12);
    const upperCred = CREDENTIAL.test(after);
    if (!upperCred && !CREDENTIAL_LOWER.test(after)) continue;
    if (CREDENTIALS.has(t.lower)) continue;
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
      if (j < i && !wsGap(gap(tj, toks[j + 1]!), 1, 3, 46)) break;
      const initial = tj.w.length === 1;
      if (initial && (j === i || /[\d'’/]$/.test(text.slice(Math.max(0, tj.s - 1), tj.s)))) break;
      const nameish = initial || known(tj) || ((tj.f & F_AMBIGUOUS) !== 0) || (isNameCase(tj.w) && !((tj.f & F_COMMON) !== 0)) || (upperCred && isUpper(tj.w) && !((tj.f & F_COMMON) !== 0));
      if (!nameish || NOT_NAMES.has(tj.lower) || CREDENTIALS.has(tj.lower)) break;
      if (!upperCred && !initial && !known(tj) && !((tj.f & F_AMBIGUOUS) !== 0) && !isNameCase(tj.w)) break;
      isName[j] = 1;
    }
  }
  // lists of people ("they had 3: silvana, adam and caleb", "our founders: Monjeau, Graves and Reed"): a run of
  // three or more single words joined by commas / "and", at least two of them dictionary names
  for (let i = 0; i < n; i++) {
    // a list needs a comma after its first item
    if (i + 1 >= n || toks[i + 1]!.g.charCodeAt(0) !== 44) continue;
    const items = [i];
    let j = i;
    while (j + 1 < n) {
      const g = gap(toks[j]!, toks[j + 1]!);
      if (wsGap(g, 1, 2, 44, true)) {
        items.push(++j);
      } else if (wsGap(g, 1, 2, 44) && toks[j + 1]!.lower === "and" && j + 2 < n && wsGap(gap(toks[j + 1]!, toks[j + 2]!), 1, 2)) {
        items.push((j += 2));
        break;
      } else break;
    }
    if (items.length >= 3) {
      const sameCase = items.every((k) => isNameCase(toks[k]!.w)) || items.every((k) => toks[k]!.w === toks[k]!.lower);
      const names = items.filter((k) => isName[k] || (known(toks[k]!) && !((toks[k]!.f & F_COMMON) !== 0))).length;
      const plain = items.every((k) => !NOT_NAMES.has(toks[k]!.lower) && !UNIT_ACRONYMS.has(toks[k]!.lower) && (!((toks[k]!.f & F_COMMON) !== 0) || ((toks[k]!.f & F_AMBIGUOUS) !== 0)));
      if (sameCase && plain && names >= 2) for (const k of items) isName[k] = 1;
    }
    i = Math.max(i, j);
  }
  // names with particles or a bare middle initial ("Maika van de Noort", "Willemine ten Pas", "Ravil G Yefimov"):
  // capitalised words around lower-case particles or one capital letter, at least one of them a dictionary name
  for (let i = 0; i + 2 < n; i++) {
    const a = toks[i]!;
    if (!isTitleCase(a.w) || ((a.f & F_COMMON) !== 0) || NOT_NAMES.has(a.lower)) continue;
    let j = i + 1;
    while (j < n && j - i <= 3 && (NAME_PARTICLES.has(toks[j]!.w) || (toks[j]!.w.length === 1 && isUp(toks[j]!.w.charCodeAt(0)))) && wsGap(gap(toks[j - 1]!, toks[j]!), 1, 1)) j++;
    if (j === i + 1 || j >= n || !wsGap(gap(toks[j - 1]!, toks[j]!), 1, 1)) continue;
    const z = toks[j]!;
    if (!isNameCase(z.w) || ((z.f & F_COMMON) !== 0) || NOT_NAMES.has(z.lower) || UNIT_ACRONYMS.has(a.lower) || ((((a.f & F_AMBIGUOUS) !== 0) || ((z.f & F_AMBIGUOUS) !== 0)) && !(known(a) && known(z)))) continue;
    for (let k = i; k <= j; k++) isName[k] = 1;
    i = j;
  }
  // a name followed by the relation in parentheses ("URSLA MORETTI (DAUGHTER)", "Ann Lee (wife)")
  for (let i = 0; i + 1 < n; i++) {
    const r = toks[i + 1]!;
    if (!RELATIONS.has(r.lower) || WEAK_RELATIONS.has(r.lower) || !/^\s?\($/.test(gap(toks[i]!, r))) continue;
    for (let j = i; j >= 0 && i - j < 3; j--) {
      const tj = toks[j]!;
      if (j < i && !wsGap(gap(tj, toks[j + 1]!), 1, 2)) break;
      if (!(isNameCase(tj.w) || isUpper(tj.w)) || ((tj.f & F_COMMON) !== 0) || NOT_NAMES.has(tj.lower) || UNIT_ACRONYMS.has(tj.lower) || ROLE_WORDS.has(tj.lower) || RELATIONS.has(tj.lower) || tj.w.length < 3) break;
      isName[j] = 1;
    }
  }
  // a lower-case initial and a dictionary surname ("nsg (d. renna and j. o'brien)"); "e. coli" is not a surname
  for (let i = 0; i + 1 < n; i++) {
    const t = toks[i]!;
    const nx = toks[i + 1]!;
    if (t.w.length === 1 && isLow(t.w.charCodeAt(0)) && nx.g === ". " && (nx.f & F_LAST) !== 0 && !isCommon(nx) && !NOT_NAMES.has(nx.lower) && /(?:^|[(\n]|(?:and|or|by|with|per|to|nsg|rn|md|dr|,)\s)$/i.test(text.slice(Math.max(0, t.s - 5), t.s))) {
      isName[i] = 1;
      isName[i + 1] = 1;
    }
  }
  // one or two words before "aware" in a nursing note ("grace dudak aware", "BEA TURA AWARE"; not "MD aware", "team aware")
  for (let i = 1; i < n; i++) {
    if (toks[i]!.lower !== "aware" || !wsGap(toks[i]!.g, 1, 2)) continue;
    const plain = (t: Tok) => t.lower.length > 2 && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower) && !UNIT_ACRONYMS.has(t.lower) && !ROLE_WORDS.has(t.lower) && !RELATIONS.has(t.lower) && !TITLES.has(t.lower) && !CREDENTIALS.has(t.lower) && !/\d/.test(text.slice(t.s - 1, t.e + 1));
    const a = toks[i - 1]!;
    if (!plain(a) || (!known(a) && (a.f & F_ENAME) === 0 && !(i > 1 && wsGap(a.g, 1, 2) && plain(toks[i - 2]!) && (known(toks[i - 2]!) || (toks[i - 2]!.f & F_ENAME) !== 0)))) continue;
    isName[i - 1] = 1;
    if (i > 1 && wsGap(a.g, 1, 2) && plain(toks[i - 2]!) && isCap(toks[i - 2]!.w) === isCap(a.w)) isName[i - 2] = 1;
  }
  // a speaker label starting a line or sentence ('Zuzana: "Who are you?"')
  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    if (!isName[i] && isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower) && !ROLE_WORDS.has(t.lower) && !RELATIONS.has(t.lower) && !TITLES.has(t.lower) && sentenceStart(i) && /^:\s?["“]/.test(text.slice(t.e, t.e + 3))) isName[i] = 1;
  }
  // all-lower-case text (case says nothing): a first name and the word after it ("olga krylova", "leone mazzi")
  if (!/\p{Lu}/u.test(text)) {
    for (let i = 0; i + 1 < n; i++) {
      const t = toks[i]!;
      const nx = toks[i + 1]!;
      if ((((t.f & F_FIRST) !== 0) || isName[i]) && !isCommon(t) && wsGap(gap(t, nx), 1, 2) && known(nx) && !isCommon(nx) && nx.lower.length > 2) {
        isName[i] = 1;
        isName[i + 1] = 1;
      } else if (isName[i] && nx.w.length === 1 && i + 2 < n && wsGap(gap(t, nx), 1, 1) && wsGap(gap(nx, toks[i + 2]!), 1, 1, 46) && (toks[i + 2]!.f & F_COMMON) === 0 && toks[i + 2]!.lower.length > 2) {
        // "eric g. samoylova": a name, a middle initial and the word after it
        isName[i + 1] = 1;
        isName[i + 2] = 1;
      }
    }
  }
  // one name, every mention: a word found as a name elsewhere in the text is a name wherever it is written the same way
  const seen = new Set<string>();
  const lowerText = !/\p{Lu}/u.test(text);
  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    // only names found by a strong cue, a dictionary name, or a capitalised word with letters outside ASCII:
    // a drug brand caught by a weak cue ("her Eliquis") must not spread to every dosing order
    const evidence = !weak[i] || known(t) || (isNameCase(t.w) && NON_ASCII.test(t.w));
    if (isName[i] && evidence && t.w.length > 2 && (isNameCase(t.w) || lowerText) && !isCommon(t) && !UNIT_ACRONYMS.has(t.lower) && !CREDENTIALS.has(t.lower)) seen.add(t.w);
  }
  if (seen.size > 0) {
    for (let i = 0; i < n; i++) {
      const t = toks[i]!;
      if (!isName[i] && seen.has(t.w) && !sentenceStart(i) && !/^\s{0,2}\d/.test(text.slice(t.e, t.e + 3))) isName[i] = 1;
    }
  }
  if (types.has("NAME")) {
    for (let i = 0; i < n; i++) if (isName[i]) found.push({ s: toks[i]!.s, e: toks[i]!.e, type: "NAME" });
  }
  if (!types.has("LOCATION")) return;
  // Facilities and places in context: "VAMC HOSPITAL", "reisterstown hospital", "lives in Hampton".
  const cities = lx.cities;
  // "to holy cross hospital", "from sacred heart hosp": one or two words between a place preposition and a hospital
  // word name the hospital even when they are common words (not "to the hospital", "from an outside hospital")
  for (let i = 1; i + 1 < n; i++) {
    const hw = toks[i + 1]!.lower;
    if (!wsGap(toks[i + 1]!.g, 1, 2)) continue;
    // "med"/"medical" only as "medical center" ("cardiac med changes" is a medication)
    if (!HOSPITAL_WORDS.has(hw) && !((hw === "medical" || hw === "med") && i + 2 < n && CENTER_WORDS.has(toks[i + 2]!.lower))) continue;
    for (const k of [2, 1]) {
      const a = i - k + 1;
      if (a < 1 || !LOC_PREPOSITIONS.has(toks[a - 1]!.lower) || !wsGap(toks[a]!.g, 1, 2)) continue;
      let ok = true;
      for (let j = a; j <= i && ok; j++) {
        const w = toks[j]!;
        ok = (j === a || wsGap(w.g, 1, 2)) && w.lower.length > 2 && !HOSPITAL_MODIFIERS.has(w.lower) && !UNIT_ACRONYMS.has(w.lower) && !FACILITY_WORDS.has(w.lower) && !TITLES.has(w.lower) && !RELATIONS.has(w.lower);
      }
      if (ok) {
        found.push({ s: toks[a]!.s, e: toks[i]!.e, type: "LOCATION" });
        break;
      }
    }
  }
  for (let i = 0; i < n; i++) {
    const t = toks[i]!;
    // a named facility word after a name or place ("FREDERICK MEMORIAL", "Baltimore Rehab", "LAUREL REGIONAL")
    if (i + 1 < n && NAMED_FACILITY.has(toks[i + 1]!.lower) && wsGap(gap(t, toks[i + 1]!), 1, 2) && isCap(toks[i + 1]!.w) && (isName[i] || ((t.f & F_CITY) !== 0))) {
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
    if (cities.size > 0 && (!isName[i] || ((t.f & F_CITY_FIRST) !== 0)) && (isNameCase(t.w) || (isUpper(t.w) && t.w.length > 2)) && !UNIT_ACRONYMS.has(t.lower)) {
      let matched = 0;
      let key = t.lower;
      const maxK = ((t.f & F_CITY_FIRST) !== 0) ? 3 : 1;
      for (let k = 1; k <= maxK && i + k - 1 < n; k++) {
        if (k > 1) {
          const nx = toks[i + k - 1]!;
          if (!/^ $/.test(gap(toks[i + k - 2]!, nx)) || !(isNameCase(nx.w) || isUpper(nx.w))) break;
          key += " " + nx.lower;
        }
        if (cities.has(key) && (k > 1 || (!common.has(key) && !ambiguous.has(key) && !NOT_NAMES.has(key) && (isNameCase(t.w) || !allCapsText(i) || (i > 0 && LOC_PREV.has(toks[i - 1]!.lower) && t.w.length >= 5))))) matched = k;
      }
      if (matched > 1 || (matched === 1 && !isName[i])) {
        const last = toks[i + matched - 1]!;
        found.push({ s: t.s, e: last.e, type: "LOCATION" });
        i += matched - 1;
        continue;
      }
    }
    if (isName[i]) continue;
    const after = i + 1 < n && FACILITY_WORDS.has(toks[i + 1]!.lower) ? text.slice(t.e, t.e + 24) : "";
    if (i + 1 < n && FACILITY_WORDS.has(toks[i + 1]!.lower) && t.lower.length > 1 && (!((t.f & F_COMMON) !== 0) || (isTitleCase(t.w) && !NOT_NAMES.has(t.lower))) && FACILITY.test(after)) {
      const fw = toks[i + 1]!;
      found.push({ s: t.s, e: NAMED_FACILITY.has(fw.lower) && isCap(fw.w) === isCap(t.w) ? fw.e : t.e, type: "LOCATION" });
      const pv = i > 0 ? toks[i - 1]! : undefined;
      if (pv && wsGap(gap(pv, t), 1, 2) && (!((pv.f & F_COMMON) !== 0) || (isTitleCase(pv.w) && isTitleCase(t.w) && !NOT_NAMES.has(pv.lower))) && isCap(pv.w) === isCap(t.w)) {
        found.push({ s: toks[i - 1]!.s, e: toks[i - 1]!.e, type: "LOCATION" });
      }
      continue;
    }
    // a named ward or building with a floor number after to/from/on/at ("to quartermain 2", "ON QUARTERMAIN 6")
    if (i > 0 && t.w.length >= 5 && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(t.lower) && !UNIT_ACRONYMS.has(t.lower) && WARD_PREV.has(toks[i - 1]!.lower) && !DRUG_LIKE.test(t.lower) && /^\s\d{1,2}(?![\d,/]|\.\d|\s?(?:%|mg|mcg|ml|cc|u|units?|am|pm|hours?|hrs?|days?|x|l|liters?|meq|gm?)\b)/i.test(text.slice(t.e, t.e + 10))) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      continue;
    }
    // a facility acronym after a transfer verb or "at"/"in" ("transferred to GH", "at BIDMC"), not a hospital unit
    if (i > 0 && t.w.length >= 2 && t.w.length <= 5 && isUpper(t.w) && !UNIT_ACRONYMS.has(t.lower) && !((t.f & F_COMMON) !== 0) && LOC_PREV.has(toks[i - 1]!.lower) && (STRONG_LOC_PREFIX.test(text.slice(Math.max(0, t.s - 24), t.s)) || (!allCapsText(i) && /\b(?:at|in|to)\s$/i.test(text.slice(Math.max(0, t.s - 4), t.s)))) && !/^\s?\d/.test(text.slice(t.e, t.e + 2))) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      continue;
    }
    if (i > 0 && LOC_PREV.has(toks[i - 1]!.lower) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && t.lower.length > 1 && !NOT_NAMES.has(t.lower) && !commonParts(t.lower) && STRONG_LOC_PREFIX.test(text.slice(Math.max(0, t.s - 24), t.s))) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      const nx = toks[i + 1];
      if (nx && wsGap(gap(t, nx), 1, 2) && !((nx.f & F_COMMON) !== 0) && !NOT_NAMES.has(nx.lower) && isCap(nx.w) === isCap(t.w)) found.push({ s: nx.s, e: nx.e, type: "LOCATION" });
      continue;
    }
    if (i > 0 && isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(t.lower) && LOC_PREV.has(toks[i - 1]!.lower) && LOC_PREFIX.test(text.slice(Math.max(0, t.s - 20), t.s)) && !sentenceStart(i)) {
      found.push({ s: t.s, e: t.e, type: "LOCATION" });
      for (let j = i + 1; j < n && j < i + 3; j++) {
        const nx = toks[j]!;
        if (!wsGap(gap(toks[j - 1]!, nx), 1, 2) || !isTitleCase(nx.w) || ((nx.f & F_COMMON) !== 0)) break;
        found.push({ s: nx.s, e: nx.e, type: "LOCATION" });
      }
    }
  }
}
