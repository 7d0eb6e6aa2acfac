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
/**
 * A large city (US >= 100,000 people, elsewhere >= 1,000,000), common word or not ("Denver", "Boston", "Jackson"): a
 * place after a strong place cue only (./places.ts). Above the word-class bits of ./words.ts (1 << 8 .. 1 << 27) and
 * ./tokens.ts X_EXTRA (1 << 28).
 */
export const F_BIG_CITY = 1 << 30;

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
      [list("bigCities"), F_BIG_CITY],
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

/** FNV-1a's offset basis and prime (the table's hash; ./tokens.ts folds words with them as it scans). */
export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 0x01000193;

/**
 * A word -> bits map as an open-addressing hash table (FNV-1a over UTF-16 units, linear probing, load factor <= 2/3):
 * {@link LexTable.findAsciiLower} looks up the lower case of an ASCII range of a text by its char codes, so a token costs
 * neither a substring, nor `toLowerCase`, nor a `Map` lookup. A slot holds the word's id, full hash and bits side by
 * side, so a lookup reads one slot and, when the hash matches, the word: ~70 ns instead of ~200 ns per word.
 *
 * The table is ~3 MB (the lexicon's ~140 k words), so a lookup is mostly waiting for memory: the slot, the word list
 * and the word are three cache misses. A direct-mapped cache in front of it (16,384 entries of 32 bytes, indexed by
 * the hash) remembers, per full hash, the slot and bits of the last word found with that hash and, for an ASCII word
 * of up to 16 characters, its characters packed into four ints; or that no word of the table has that hash at all.
 * Text repeats its words (Zipf), so most lookups read one cache entry and compare four ints. Exact: a remembered slot
 * is used only after its word compares equal (packed characters and length, or the word itself), and "no word has
 * this hash" is only recorded when the probe met no slot with that hash.
 */
export class LexTable {
  /** The words (index = id). */
  readonly keys: readonly string[];
  /** Slot k: [id + 1 (0 = empty), hash, bits] at 3k. */
  readonly #slots: Int32Array;
  readonly #mask: number;
  /**
   * The lookup cache, {@link ROW} ints per entry (one entry per cache line half): [full hash, (slot offset + 1) of a word
   * with that hash or -1 (no word of the table has it) or 0 (empty), the word's bits, its length or -1 (not packed),
   * then its characters packed four to an int when it is ASCII and at most {@link PACKED} long]. A hit on an ASCII
   * range compares the packed characters: it reads one cache entry and neither the slots, nor the word list, nor the word.
   */
  readonly #cache = new Int32Array(CACHE_SIZE * ROW);
  /** Bits of the word the last {@link find} / {@link findAsciiLower} found (meaningless after a -1). */
  hitBits = 0;

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

  /** Slot offset of `word` (for {@link bitsOf} and {@link wordOf}), or -1; on a hit also sets {@link hitBits}. */
  find(word: string): number {
    let x = FNV_OFFSET;
    // packed as findAsciiLower packs a range, when the word is short and ASCII
    const len = word.length;
    let packed = len <= PACKED;
    let p0 = 0, p1 = 0, p2 = 0, p3 = 0;
    for (let k = 0; k < len; k++) {
      const ch = word.charCodeAt(k);
      x = Math.imul(x ^ ch, FNV_PRIME);
      if (!packed) continue;
      if (ch >= 128) packed = false;
      else if (k < 4) p0 |= ch << (k * 8);
      else if (k < 8) p1 |= ch << ((k - 4) * 8);
      else if (k < 12) p2 |= ch << ((k - 8) * 8);
      else p3 |= ch << ((k - 12) * 8);
    }
    const slots = this.#slots;
    const cache = this.#cache;
    const r = (x & CACHE_MASK) * ROW;
    if (cache[r] === x) {
      const v = cache[r + 1]!;
      if (v < 0) return -1;
      if (v > 0 && (packed ? cache[r + 3] === len && cache[r + 4] === p0 && cache[r + 5] === p1 && cache[r + 6] === p2 && cache[r + 7] === p3 : this.keys[slots[v - 1]! - 1] === word)) {
        this.hitBits = cache[r + 2]!;
        return v - 1;
      }
    }
    let seen = false;
    for (let h = x & this.#mask; ; h = (h + 1) & this.#mask) {
      const id = slots[h * 3]!;
      if (id === 0) return seen ? -1 : this.#remember(x, -1);
      if (slots[h * 3 + 1] === x) {
        seen = true;
        if (this.keys[id - 1] === word) return this.#rememberWord(x, h * 3, packed ? len : -1, p0, p1, p2, p3);
      }
    }
  }

  /** Records "no word has hash `x`" (`v` = -1) in the cache and returns it. */
  #remember(x: number, v: number): number {
    const r = (x & CACHE_MASK) * ROW;
    this.#cache[r] = x;
    this.#cache[r + 1] = v;
    return v;
  }

  /** Records slot offset `slot` with its bits, length and packed characters for hash `x`; sets {@link hitBits}; returns `slot`. */
  #rememberWord(x: number, slot: number, len: number, p0: number, p1: number, p2: number, p3: number): number {
    const cache = this.#cache;
    const r = (x & CACHE_MASK) * ROW;
    cache[r] = x;
    cache[r + 1] = slot + 1;
    cache[r + 2] = this.hitBits = this.#slots[slot + 2]!;
    cache[r + 3] = len;
    cache[r + 4] = p0;
    cache[r + 5] = p1;
    cache[r + 6] = p2;
    cache[r + 7] = p3;
    return slot;
  }

  /** Slot offset of the lower case of `text[s, e)`, or -1; the range must be ASCII (A-Z folded to a-z). On a hit also sets {@link hitBits}. */
  findAsciiLower(text: string, s: number, e: number): number {
    let x = FNV_OFFSET;
    // the folded characters, packed four to an int (the first PACKED), as the cache holds them
    let p0 = 0, p1 = 0, p2 = 0, p3 = 0;
    for (let i = s; i < e; i++) {
      let c = text.charCodeAt(i);
      if (c >= 65 && c <= 90) c += 32;
      x = Math.imul(x ^ c, FNV_PRIME);
      const k = i - s;
      if (k < 4) p0 |= c << (k * 8);
      else if (k < 8) p1 |= c << ((k - 4) * 8);
      else if (k < 12) p2 |= c << ((k - 8) * 8);
      else if (k < 16) p3 |= c << ((k - 12) * 8);
    }
    return this.findAsciiLowerHashed(text, s, e, x, p0, p1, p2, p3);
  }

  /**
   * {@link findAsciiLower} of a range whose lower case the caller has already hashed (`x`) and packed (`p0`-`p3`: its
   * first {@link PACKED} characters four to an int, low byte first; zero beyond its length).
   */
  findAsciiLowerHashed(text: string, s: number, e: number, x: number, p0: number, p1: number, p2: number, p3: number): number {
    const len = e - s;
    const slots = this.#slots;
    const keys = this.keys;
    const cache = this.#cache;
    const r = (x & CACHE_MASK) * ROW;
    if (cache[r] === x) {
      const v = cache[r + 1]!;
      if (v < 0) return -1;
      if (v > 0 && (len <= PACKED ? cache[r + 3] === len && cache[r + 4] === p0 && cache[r + 5] === p1 && cache[r + 6] === p2 && cache[r + 7] === p3 : equalsAsciiLower(keys[slots[v - 1]! - 1]!, text, s, e))) {
        this.hitBits = cache[r + 2]!;
        return v - 1;
      }
    }
    let seen = false;
    for (let h = x & this.#mask; ; h = (h + 1) & this.#mask) {
      const id = slots[h * 3]!;
      if (id === 0) return seen ? -1 : this.#remember(x, -1);
      if (slots[h * 3 + 1] !== x) continue;
      seen = true;
      if (equalsAsciiLower(keys[id - 1]!, text, s, e)) return this.#rememberWord(x, h * 3, len <= PACKED ? len : -1, p0, p1, p2, p3);
    }
  }

  /**
   * Slot offset of the lower case of `text[s, e)`, or -1, when that lower case is `lower[c]` for each code unit `c`
   * (the caller has checked: ./text.ts LOWER_UNIT); on a hit also sets {@link hitBits}. The same answer as
   * {@link find} on the lower-case string, without making it.
   */
  findFolded(text: string, s: number, e: number, lower: Uint16Array): number {
    let x = FNV_OFFSET;
    for (let i = s; i < e; i++) x = Math.imul(x ^ lower[text.charCodeAt(i)]!, FNV_PRIME);
    const slots = this.#slots;
    const keys = this.keys;
    const cache = this.#cache;
    const r = (x & CACHE_MASK) * ROW;
    if (cache[r] === x) {
      const v = cache[r + 1]!;
      if (v < 0) return -1;
      if (v > 0 && equalsFolded(keys[slots[v - 1]! - 1]!, text, s, e, lower)) {
        this.hitBits = cache[r + 2]!;
        return v - 1;
      }
    }
    let seen = false;
    for (let h = x & this.#mask; ; h = (h + 1) & this.#mask) {
      const id = slots[h * 3]!;
      if (id === 0) return seen ? -1 : this.#remember(x, -1);
      if (slots[h * 3 + 1] !== x) continue;
      seen = true;
      if (equalsFolded(keys[id - 1]!, text, s, e, lower)) return this.#rememberWord(x, h * 3, -1, 0, 0, 0, 0);
    }
  }
}

const CACHE_SIZE = 16384;
/** Ints per cache entry (see LexTable's cache). */
const ROW = 8;
/** Words of up to this many ASCII characters are compared in the cache by their packed characters. */
const PACKED = 16;
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


/** `k` equals `text[s, e)` with each code unit mapped by `lower`. */
function equalsFolded(k: string, text: string, s: number, e: number, lower: Uint16Array): boolean {
  if (k.length !== e - s) return false;
  for (let i = s; i < e; i++) if (lower[text.charCodeAt(i)] !== k.charCodeAt(i - s)) return false;
  return true;
}
