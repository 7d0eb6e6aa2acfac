/**
 * The name and place lexicon (guardrails/data/phi-lexicon.json, built by scripts/build-phi-lexicon.ts): one map entry
 * per lower-case word with its classes as bits, so one hash lookup answers every question about a token.
 */
import { readFileSync } from "node:fs";

// Lexicon word classes, as bits of one map entry per word: one hash lookup answers every question about a token.
export const F_FIRST = 1;
export const F_LAST = 2;
export const F_INTL = 4;
export const F_AMBIGUOUS = 8;
export const F_COMMON = 16;
export const F_CITY = 32;
export const F_CITY_FIRST = 64;
/** A census name that is also a common English word ("amber", "art"): a name only after a title or relation word. */
export const F_ENAME = 128;

/** A read-only set view over one class of the lexicon map. */
export interface WordSet {
  has(word: string): boolean;
  readonly size: number;
}

export interface Lexicon {
  /** word -> F_* bits */
  flags: Map<string, number>;
  cities: WordSet;
  /** First words of multi-word city names ("san" for "san diego"). */
  cityFirst: WordSet;
  first: WordSet;
  last: WordSet;
  /** Names of other countries (faker locales): trusted only with some context. */
  intl: WordSet;
  ambiguous: WordSet;
  common: WordSet;
}

export const lexicons = new Map<string, Lexicon>();

export function loadLexicon(file: string): Lexicon {
  let lx = lexicons.get(file);
  if (!lx) {
    const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, string[]>;
    const flags = new Map<string, number>();
    const add = (words: string[] | undefined, bit: number): number => {
      for (const w of words ?? []) flags.set(w, (flags.get(w) ?? 0) | bit);
      return words?.length ?? 0;
    };
    const view = (bit: number, size: number): WordSet => ({ has: (w) => ((flags.get(w) ?? 0) & bit) !== 0, size });
    const cityFirst = (raw["cities"] ?? []).filter((c) => c.includes(" ")).map((c) => c.slice(0, c.indexOf(" ")));
    lx = {
      flags,
      cities: view(F_CITY, add(raw["cities"], F_CITY)),
      cityFirst: view(F_CITY_FIRST, add(cityFirst, F_CITY_FIRST)),
      first: view(F_FIRST, add(raw["first"], F_FIRST)),
      last: view(F_LAST, add(raw["last"], F_LAST)),
      intl: view(F_INTL, add(raw["intl"], F_INTL)),
      ambiguous: view(F_AMBIGUOUS, add(raw["ambiguous"], F_AMBIGUOUS)),
      common: view(F_COMMON, add(raw["common"], F_COMMON)),
    };
    add(raw["englishNames"], F_ENAME);
    lexicons.set(file, lx);
  }
  return lx;
}
