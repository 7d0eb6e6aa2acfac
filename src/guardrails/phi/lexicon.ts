/**
 * The name and place lexicon (guardrails/data/phi-lexicon.json, built by scripts/build-phi-lexicon.ts): one table entry
 * per lower-case word with its classes as bits, so one hash lookup answers every question about a token.
 */
import { readFileSync } from "node:fs";
import { WORD_CLASSES } from "./words.js";

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
  /** word -> F_* bits (and the W_* word-class bits of ./words.ts), as a hash table that also answers for a range of a text */
  table: LexTable;
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
    const list = (k: string): string[] => raw[k] ?? [];
    const cityFirst = list("cities").filter((c) => c.includes(" ")).map((c) => c.slice(0, c.indexOf(" ")));
    const table = new LexTable([
      [list("cities"), F_CITY],
      [cityFirst, F_CITY_FIRST],
      [list("first"), F_FIRST],
      [list("last"), F_LAST],
      [list("intl"), F_INTL],
      [list("ambiguous"), F_AMBIGUOUS],
      [list("common"), F_COMMON],
      [list("englishNames"), F_ENAME],
      // the name rules' word classes (titles, relations, units ...) as higher bits of the same table: one lookup per token
      ...WORD_CLASSES.map(([set, bit]) => [[...set], bit] as const),
    ]);
    const view = (bit: number, size: number): WordSet => ({ has: (w) => (table.bitsOf(table.find(w)) & bit) !== 0, size });
    lx = {
      table,
      cities: view(F_CITY, list("cities").length),
      cityFirst: view(F_CITY_FIRST, cityFirst.length),
      first: view(F_FIRST, list("first").length),
      last: view(F_LAST, list("last").length),
      intl: view(F_INTL, list("intl").length),
      ambiguous: view(F_AMBIGUOUS, list("ambiguous").length),
      common: view(F_COMMON, list("common").length),
    };
    lexicons.set(file, lx);
  }
  return lx;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * A word -> bits map as an open-addressing hash table (FNV-1a over UTF-16 units, linear probing, load factor <= 2/3):
 * {@link LexTable.findAsciiLower} looks up the lower case of an ASCII range of a text by its char codes, so a token costs
 * neither a substring, nor `toLowerCase`, nor a `Map` lookup. A slot holds the word's id, full hash and bits side by
 * side, so a lookup reads one slot and, when the hash matches, the word: ~70 ns instead of ~200 ns per word.
 *
 * The table is ~3 MB (the lexicon's ~140 k words), so a lookup is mostly waiting for memory: the slot, the word list
 * and the word are three cache misses. A small direct-mapped cache in front of it (4,096 entries of 8 bytes, indexed by
 * the hash) remembers, per full hash, the slot of the last word found with that hash, or that no word of the table
 * has that hash at all; text repeats its words (Zipf), so most lookups stay in that cache and in the words recently
 * compared. Exact: a remembered slot is used only after its word compares equal, and "no word has this hash" is only
 * recorded when the probe met no slot with that hash.
 */
export class LexTable {
  /** The words (index = id). */
  readonly keys: readonly string[];
  /** Slot k: [id + 1 (0 = empty), hash, bits] at 3k. */
  readonly #slots: Int32Array;
  readonly #mask: number;
  /** Cache entry c: the full hash it is for, and (slot offset + 1) of a word with that hash, or -1: no word has it; 0 empty. */
  readonly #cacheHash = new Int32Array(CACHE_SIZE);
  readonly #cacheSlot = new Int32Array(CACHE_SIZE);

  /** Builds the table from lists of words and their bits (a word in several lists gets the union). */
  constructor(lists: ReadonlyArray<readonly [readonly string[], number]>) {
    let words = 0;
    for (const [ws] of lists) words += ws.length;
    let size = 16;
    while (size * 2 < words * 3) size *= 2;
    const mask = size - 1;
    const slots = new Int32Array(size * 3);
    const keys: string[] = [];
    for (const [ws, bit] of lists) {
      for (let j = 0; j < ws.length; j++) {
        const k = ws[j]!;
        let x = FNV_OFFSET;
        for (let i = 0; i < k.length; i++) x = Math.imul(x ^ k.charCodeAt(i), FNV_PRIME);
        let h = x & mask;
        for (;;) {
          const id = slots[h * 3]!;
          if (id === 0) {
            slots[h * 3] = keys.push(k);
            slots[h * 3 + 1] = x;
            slots[h * 3 + 2] = bit;
            break;
          }
          if (slots[h * 3 + 1] === x && keys[id - 1] === k) {
            slots[h * 3 + 2]! |= bit;
            break;
          }
          h = (h + 1) & mask;
        }
      }
    }
    this.keys = keys;
    this.#slots = slots;
    this.#mask = mask;
  }

  /** Bits of word `id` (see {@link find}). */
  bitsOf(id: number): number {
    return id < 0 ? 0 : this.#slots[id + 2]!;
  }

  /** Word of a result of {@link find}. */
  wordOf(id: number): string {
    return this.keys[this.#slots[id]! - 1]!;
  }

  /** Slot offset of `word` (for {@link bitsOf} and {@link wordOf}), or -1. */
  find(word: string): number {
    let x = FNV_OFFSET;
    for (let i = 0; i < word.length; i++) x = Math.imul(x ^ word.charCodeAt(i), FNV_PRIME);
    const slots = this.#slots;
    const c = x & CACHE_MASK;
    if (this.#cacheHash[c] === x) {
      const v = this.#cacheSlot[c]!;
      if (v < 0) return -1;
      if (v > 0 && this.keys[slots[v - 1]! - 1] === word) return v - 1;
    }
    let seen = false;
    for (let h = x & this.#mask; ; h = (h + 1) & this.#mask) {
      const id = slots[h * 3]!;
      if (id === 0) return seen ? -1 : this.#remember(x, -1);
      if (slots[h * 3 + 1] === x) {
        seen = true;
        if (this.keys[id - 1] === word) return this.#remember(x, h * 3 + 1) - 1;
      }
    }
  }

  /** Records `v` (slot offset + 1, or -1) for hash `x` in the cache and returns it. */
  #remember(x: number, v: number): number {
    const c = x & CACHE_MASK;
    this.#cacheHash[c] = x;
    this.#cacheSlot[c] = v;
    return v;
  }

  /** Slot offset of the lower case of `text[s, e)`, or -1; the range must be ASCII (A-Z folded to a-z). */
  findAsciiLower(text: string, s: number, e: number): number {
    let x = FNV_OFFSET;
    for (let i = s; i < e; i++) {
      const c = text.charCodeAt(i);
      x = Math.imul(x ^ (c >= 65 && c <= 90 ? c + 32 : c), FNV_PRIME);
    }
    const slots = this.#slots;
    const keys = this.keys;
    const c = x & CACHE_MASK;
    if (this.#cacheHash[c] === x) {
      const v = this.#cacheSlot[c]!;
      if (v < 0) return -1;
      if (v > 0 && equalsAsciiLower(keys[slots[v - 1]! - 1]!, text, s, e)) return v - 1;
    }
    let seen = false;
    for (let h = x & this.#mask; ; h = (h + 1) & this.#mask) {
      const id = slots[h * 3]!;
      if (id === 0) return seen ? -1 : this.#remember(x, -1);
      if (slots[h * 3 + 1] !== x) continue;
      seen = true;
      if (equalsAsciiLower(keys[id - 1]!, text, s, e)) return this.#remember(x, h * 3 + 1) - 1;
    }
  }
}

const CACHE_SIZE = 4096;
const CACHE_MASK = CACHE_SIZE - 1;

/** `k` equals the lower case of the ASCII range `text[s, e)` (A-Z folded to a-z). */
function equalsAsciiLower(k: string, text: string, s: number, e: number): boolean {
  const len = e - s;
  if (k.length !== len) return false;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(s + i);
    if ((c >= 65 && c <= 90 ? c + 32 : c) !== k.charCodeAt(i)) return false;
  }
  return true;
}

