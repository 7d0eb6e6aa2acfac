/**
 * The PHI detector's speed paths against straightforward references, on every row of the development sets in
 * ../shared/data and on built cases: the pattern gates (./gates.ts) against their reference regexes, the lexicon
 * table's lookup cache against a plain Map, the candidate lists grouped by rule against a filter of the candidates,
 * and the address scanner's reused token arrays (a long text scanned first must not change a short one's result).
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createPhiDetector } from "../../../src/guardrails/phi/detector.js";
import { domainGate, GATE_REFERENCE, ipv6Gate, militaryGate, streetNumberGate, uuidGate } from "../../../src/guardrails/phi/gates.js";
import { type Lexicon, LexTable, loadLexicon } from "../../../src/guardrails/phi/lexicon.js";
import { byRule, StartIndex } from "../../../src/guardrails/phi/prefilter.js";
import { isCap, isNameCase, isTitleCase, isUpper } from "../../../src/guardrails/phi/text.js";
import { postCueStart } from "../../../src/guardrails/phi/names.js";
import { POST_CUE } from "../../../src/guardrails/phi/words.js";
import { KEEP_TOKENS, nameContext, SH_CAP, SH_HY, SH_LW, SH_NC, SH_TC, SH_UP, X_EXTRA } from "../../../src/guardrails/phi/tokens.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const data = path.resolve(repo, "../shared/data");

/** Texts of a development set (the named string fields of each row). */
function texts(set: string, fields: string[]): string[] {
  const file = path.join(data, set, "dev.jsonl");
  expect(existsSync(file), `${file} (the shared data sets must sit beside the repository)`).toBe(true);
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .flatMap((l) => {
      const row = JSON.parse(l) as Record<string, unknown>;
      return fields.flatMap((f) => (typeof row[f] === "string" ? [row[f]] : []));
    });
}

const ROWS = [
  ...texts("phi-deid-physionet", ["text"]),
  ...texts("pii-presidio-synth", ["text"]),
  ...texts("mtsamples", ["transcription"]),
  ...texts("medquad", ["question", "answer"]),
];

/**
 * The name rules' words of `text` as [start, end, every character ASCII], found by the regex that the detector's scan
 * of char codes stands for (src/guardrails/phi/tokens.ts scanWordsFolded): a letter, then letters, marks, apostrophes
 * and hyphens. The reference its tokens are compared with below.
 */
function nameWords(text: string): Array<[number, number, boolean]> {
  return Array.from(text.matchAll(/\p{L}[\p{L}\p{M}'’-]*/gu), (m) => [m.index, m.index + m[0].length, [...m[0]].every((ch) => ch.charCodeAt(0) < 128)]);
}

/** Built cases for each gate: matches in every case form, near misses, separators of every kind. */
const GATE_CASES = [
  "Puruntie 82",
  "PURUNTIE  82",
  "Mellemvej\t32",
  "Hauptstraße 5",
  "HAUPTSTRASSE 5",
  "Hauptstr. 5",
  "ul. 73",
  "Storgatan\u00a07",
  "Kungsvägen 3",
  "KUNGSVÄGEN 3",
  "Via 2",
  "committee 2",
  "Maantee\u2028 9",
  "tie   3",
  "tie3",
  "street x 3",
  "USNS Mercy FPO AP 96677",
  "psc 5420, box 2708 apo aa 33879",
  "FPO\tAE\u00a0 12345",
  "PO AA 1234",
  "Po aP 123456",
  "fe80::1 and 1:2:3:4:5:6:7:8",
  "a:1:b",
  "x:12:34:",
  "12345678-aaaa-BBBB-cccc-1234567890ab",
  "-12a4-zzzz-",
  "www.example.com",
  "x.co",
  "a.info.",
  "a.iox",
  ".io",
  "::",
  "",
];

describe("PHI pattern gates", () => {
  const gates = { ipv6: ipv6Gate, military: militaryGate, uuid: uuidGate, streetNumber: streetNumberGate, domain: domainGate } as const;
  for (const [name, gate] of Object.entries(gates)) {
    it(`${name}: the same answer as its reference regex on every development row and on built cases`, () => {
      const ref = GATE_REFERENCE[name as keyof typeof gates];
      const built = [...GATE_CASES, ...GATE_CASES.map((c) => `word ${c} word`), GATE_CASES.join(" ")];
      const wrong = [...ROWS, ...built].filter((t) => gate(t) !== ref.test(t));
      expect(wrong.slice(0, 3)).toEqual([]);
      // the built cases say yes somewhere, so a gate that always says no fails
      expect(built.some((t) => gate(t))).toBe(true);
    });
  }

  it("military: the remembered answer belongs to the text asked about", () => {
    expect(militaryGate("USNS Mercy FPO AP 96677")).toBe(true);
    expect(militaryGate("USNS Mercy FPO AP 9667")).toBe(false);
    expect(militaryGate("USNS Mercy FPO AP 96677")).toBe(true);
  });
});

describe("LexTable lookup cache", () => {
  const words = ["smith", "john", "mary", "the", "and", "patient", "o'brien", "szöllösy", "ab", "x"];
  const table = new LexTable([
    [words.slice(0, 4), 1],
    [words.slice(2, 8), 2],
  ]);
  const reference = new Map<string, number>();
  words.slice(0, 4).forEach((w) => reference.set(w, (reference.get(w) ?? 0) | 1));
  words.slice(2, 8).forEach((w) => reference.set(w, (reference.get(w) ?? 0) | 2));

  it("answers as a Map for every word of the development rows, asked twice (the second time from the cache)", () => {
    const wrong: string[] = [];
    for (const text of ROWS.slice(0, 400)) {
      for (let pass = 0; pass < 2; pass++) {
        for (const [s, e, ascii] of nameWords(text)) {
          const lower = text.slice(s, e).toLowerCase();
          const want = reference.get(lower) ?? 0;
          if (table.bitsOf(table.find(lower)) !== want) wrong.push(`find ${lower}`);
          if (ascii && table.bitsOf(table.findAsciiLower(text, s, e)) !== want) wrong.push(`findAsciiLower ${lower}`);
        }
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it("does not answer for a different word that shares a cache entry", () => {
    // many distinct words (half of them in the table): cache entries are overwritten and reused by words with the same index
    const big = Array.from({ length: 20_000 }, (_, i) => `w${i.toString(36)}`);
    const t = new LexTable([[big.slice(0, 10_000), 4]]);
    const inTable = new Set(big.slice(0, 10_000));
    for (let round = 0; round < 2; round++) {
      for (const w of big) {
        const id = t.find(w);
        expect(t.bitsOf(id), w).toBe(inTable.has(w) ? 4 : 0);
        if (id >= 0) expect(t.wordOf(id)).toBe(w);
        const text = ` ${w.toUpperCase()} `;
        expect(t.bitsOf(t.findAsciiLower(text, 1, text.length - 1)), w).toBe(inTable.has(w) ? 4 : 0);
      }
    }
  });
});

describe("LexTable lookup cache on long words and words that differ only past the packed characters", () => {
  it("answers as a Set for words longer than the packed characters and for words outside ASCII", () => {
    const words = Array.from({ length: 6_000 }, (_, i) => (i % 3 === 0 ? `abcdefghijklmnop${i.toString(36)}` : i % 3 === 1 ? `w${i.toString(36)}` : `é${i.toString(36)}`));
    const inTable = new Set(words.filter((_, i) => i % 2 === 0));
    const t = new LexTable([[[...inTable], 8]]);
    for (let round = 0; round < 2; round++) {
      for (const w of words) {
        const id = t.find(w);
        expect(t.bitsOf(id), w).toBe(inTable.has(w) ? 8 : 0);
        if (id >= 0) expect(t.hitBits).toBe(8);
        if (/^[a-z0-9]+$/.test(w)) {
          const text = `(${w.toUpperCase()})`;
          const a = t.findAsciiLower(text, 1, text.length - 1);
          expect(t.bitsOf(a), w).toBe(inTable.has(w) ? 8 : 0);
          if (a >= 0) expect(t.hitBits).toBe(8);
        }
      }
    }
  });
});

describe("LexTable lookup cache on words with the same full hash", () => {
  /** FNV-1a over UTF-16 units, as the table hashes. */
  const fnv = (w: string): number => {
    let x = 0x811c9dc5;
    for (let i = 0; i < w.length; i++) x = Math.imul(x ^ w.charCodeAt(i), 0x01000193);
    return x;
  };
  /** Two different lower-case words with the same 32-bit hash (birthday search over a few hundred thousand words). */
  const collision = ((): [string, string] => {
    const seen = new Map<number, string>();
    for (let i = 0; ; i++) {
      const w = `c${i.toString(36)}`;
      const other = seen.get(fnv(w));
      if (other !== undefined) return [other, w];
      seen.set(fnv(w), w);
    }
  })();

  it("does not take a cached word for another word with its hash", () => {
    const [a, b] = collision;
    expect(fnv(a)).toBe(fnv(b));
    const t = new LexTable([[[a], 1]]);
    for (let round = 0; round < 2; round++) {
      expect(t.bitsOf(t.find(a))).toBe(1);
      expect(t.find(b)).toBe(-1);
      expect(t.bitsOf(t.findAsciiLower(` ${a} `, 1, a.length + 1))).toBe(1);
      expect(t.findAsciiLower(` ${b.toUpperCase()} `, 1, b.length + 1)).toBe(-1);
    }
  });

  it("does not record 'no word has this hash' when a word with that hash exists", () => {
    const [a, b] = collision;
    const t = new LexTable([[[b], 2]]);
    for (let round = 0; round < 2; round++) {
      expect(t.find(a)).toBe(-1);
      expect(t.bitsOf(t.find(b))).toBe(2);
      expect(t.findAsciiLower(` ${a} `, 1, a.length + 1)).toBe(-1);
      expect(t.bitsOf(t.findAsciiLower(` ${b} `, 1, b.length + 1))).toBe(2);
    }
  });
});

describe("candidate lists grouped by rule", () => {
  it("lists, per rule, exactly the candidates whose mask has its bit, in order", () => {
    const idx = new StartIndex([
      { lead: /^(?:ja|fe|ma)/i, prev: "alnum" },
      { lead: /^\d/, prev: "alnum" },
      { lead: /^(?:ad|li|lo|in)/i, prev: "alnum", fold: true },
    ]);
    for (const text of ROWS.slice(0, 300)) {
      const c = idx.scan(text);
      const want = [0, 1, 2].map((b) => Array.from(c.pos.subarray(0, c.n)).filter((_, i) => (c.mask[i]! & (1 << b)) !== 0));
      const lists = byRule(c);
      const got = [0, 1, 2].map((b) => Array.from(lists.pos.subarray(lists.from[b], lists.from[b + 1])));
      expect(got).toEqual(want);
    }
  });
});

describe("address scanner's reused token arrays", () => {
  it("gives a text the same entities whatever was scanned before it", () => {
    const detector = createPhiDetector();
    const probes = ["Lives at 12 Main St, apt 5.", "1 via 2 via 3 via Rua João Pessoa 1636 via Roma 12", ...ROWS.slice(0, 50)];
    const first = probes.map((t) => detector.detect(t));
    // a long text full of address tokens fills the arrays; shorter texts must not read what it left
    detector.detect("12 Main St ".repeat(5_000) + "moved to 28245 Puruntie 82 Apt. 595\nHelsinki\n");
    expect(probes.map((t) => detector.detect(t))).toEqual(first);
  });
});

/** The name rules' tokens as the string-based tokeniser made them (before the typed arrays): a reference to compare with. */
function referenceTokens(text: string, lx: Lexicon, extra: ReadonlySet<string>) {
  const toks: Array<{ s: number; e: number; ge: number; w: string; lower: string; f: number; tc: boolean; up: boolean; nc: boolean; cap: boolean }> = [];
  for (const [s, end] of nameWords(text)) {
    let e = end;
    for (let c = text.charCodeAt(e - 1); e - s > 1 && (c === 45 || c === 39 || c === 0x2019); c = text.charCodeAt(e - 1)) e--;
    let w = text.slice(s, e);
    let lower = w.toLowerCase();
    if ([...w].every((ch) => ch.charCodeAt(0) < 128)) {
      if (/'s$/i.test(w) && w.length >= 2) {
        w = w.slice(0, -2);
        lower = w.toLowerCase();
      }
    } else if (lower.length >= 2 && /['’]s$/.test(lower)) {
      lower = lower.slice(0, -2);
      w = w.slice(0, -2);
    }
    let f = lx.table.bitsOf(lx.table.find(lower));
    if (extra.has(lower)) f |= X_EXTRA;
    const prev = toks.at(-1);
    toks.push({ s, e: s + w.length, ge: prev ? prev.e : s, w, lower, f, tc: isTitleCase(w), up: isUpper(w), nc: isNameCase(w), cap: isCap(w) });
  }
  return toks;
}

describe("name tokens in typed arrays", () => {
  const lx = loadLexicon(path.join(repo, "guardrails", "data", "phi-lexicon.json"));
  const BUILT = [
    "Mr. O'Brien's wife, Mrs. McDonald-Smith, and MACDONALD's son; Ms D'ANGELO-RUIZ's chart. smith's SMITH'S Smith'S smith'S",
    "Szöllösy’s notes: Guðmundsdóttir, ÅSA Ödegaard-Berg’S, ΟΔΟΣ'S οδος ΣΟΦΙΑ'S İstanbul İS is IS aware AWARE Aware and AND",
    "step-daughter Step-Son a-fib -- x- 'quoted' Jones' Smith- K. J.R.R. Mc Mac MacA McDONALD Mcdonald-Lee medical MED Med center",
    "𝔘𝔞 ℌ𝔞𝔫𝔰 \u0130stanbul e\u0301mile ÉMILE É J. Émile-Zola o'neil O'NEIL O’Neil",
  ];
  const texts = [...BUILT, "smith'S note", "a\u00e9b \u00c9", "plain lower text", "x \u{1D518}y", ...ROWS.slice(0, 1500).flatMap((t) => [t, t.toUpperCase(), t.toLowerCase()])];

  it("has, for every token, the word, lower case, lexicon bits, shape and gap of the string tokeniser", () => {
    const extra = new Set(["smith", "οδος", "émile"]);
    const bad: string[] = [];
    for (const text of texts) {
      const ref = referenceTokens(text, lx, extra);
      const c = nameContext(text, lx, extra);
      if (c.lowerText !== !/\p{Lu}/u.test(text)) bad.push(`lowerText: ${text.slice(0, 40)}`);
      if (c.n !== ref.length) {
        bad.push(`${c.n} tokens, want ${ref.length}: ${text.slice(0, 40)}`);
        continue;
      }
      ref.forEach((t, i) => {
        const sh = c.SH[i]!;
        const got = {
          s: c.S[i], e: c.E[i], ge: c.GE[i], w: c.w(i), lower: c.lower(i), f: c.F[i], tc: (sh & SH_TC) !== 0, up: (sh & SH_UP) !== 0, nc: (sh & SH_NC) !== 0, cap: (sh & SH_CAP) !== 0,
        };
        const want = { s: t.s, e: t.e, ge: t.ge, w: t.w, lower: t.lower, f: t.f, tc: t.tc, up: t.up, nc: t.nc, cap: t.cap };
        if (JSON.stringify(got) !== JSON.stringify(want)) bad.push(`${JSON.stringify(got)} != ${JSON.stringify(want)}`);
        if (((sh & SH_LW) !== 0) !== (t.w === t.lower)) bad.push(`w === lower: ${t.w}`);
        if (((sh & SH_HY) !== 0) !== t.lower.includes("-")) bad.push(`hyphen: ${t.w}`);
        if (c.lowerLen(i) !== t.lower.length) bad.push(`lowerLen: ${t.w}`);
        if (!c.lowerIs(i, t.lower) || c.lowerIs(i, t.lower + "s") || (t.lower.length > 1 && c.lowerIs(i, t.lower.slice(1)))) bad.push(`lowerIs: ${t.w}`);
        if ((c.LID[i]! >= 0) !== (lx.table.find(t.lower) >= 0)) bad.push(`lexicon slot: ${t.w}`);
      });
      if (bad.length > 5) break;
    }
    expect(bad.slice(0, 5)).toEqual([]);
  });

  it("gives a text the same names whatever was read before it (reused and grown arrays)", () => {
    const detector = createPhiDetector({ names: ["Zyx"] });
    const probes = [...BUILT, "Dr. Ann Lee saw John Smith and Zyx today.", "He saw Dr. Zqwert today. Zqwert was fine.", ...ROWS.slice(0, 50)];
    const first = probes.map((t) => detector.detect(t));
    // more words than the reused arrays hold (they grow), many of them names: shorter texts must not read what it left
    const names = "Dr. Ann Lee, John Smith and Mary Jones.\n";
    detector.detect(names.repeat(Math.ceil(KEEP_TOKENS / 8) + 100));
    detector.detect("a ".repeat(40_000));
    // a text of names only fills most of the reused arrays with ones (a stale one would be read as a remembered answer)
    const fill = "Ann Lee John Smith Mary Jones ".repeat(Math.floor(KEEP_TOKENS / 6) - 10);
    expect(probes.map((t) => (detector.detect(fill), detector.detect(t)))).toEqual(first);
    // a word named after a title is not spread to a sentence start (whatever the arrays held before)
    detector.detect(fill);
    expect(detector.detect("He saw Dr. Zqwert today. Zqwert was fine.").map((e) => [e.type, e.start, e.end])).toEqual([["NAME", 11, 17]]);
  });
});

describe("the person-verb cue's first characters", () => {
  it("lets through every position where POST_CUE matches the lower case of the text after it", () => {
    const built = ["Ann's lives on", "ANN LIVES IN", "Bo IS FROM", "Cy Asked", "Di\u0130s from", "Ed'S SAID", "Fa PHONED", "Gu UPDATED", "Hi Had given", "Jo VISITED"];
    const missed: string[] = [];
    for (const text of [...built, ...ROWS.slice(0, 2000).flatMap((t) => [t, t.toUpperCase()])]) {
      for (let at = 0; at < text.length; at++) {
        if (POST_CUE.test(text.slice(at, at + 16).toLowerCase()) && !postCueStart(text, at)) missed.push(text.slice(at, at + 16));
      }
    }
    expect(missed.slice(0, 5)).toEqual([]);
  });
});

describe("the e-mail pattern run once per @", () => {
  it("finds what its regex finds run over the whole text, on every development row and on seeded e-mail-like text", async () => {
    const { PATTERNS } = await import("../../../src/guardrails/phi/patterns.js");
    const email = PATTERNS.find((p) => p.atSign)!;
    expect(email.type).toBe("EMAIL");
    const reference = (t: string): string[] => [...t.matchAll(new RegExp(email.re.source, "g"))].map((m) => `${m.index}-${m.index + m[0].length}`);
    const detector = createPhiDetector({ entities: ["EMAIL"] });
    const found = (t: string): string[] => detector.detect(t).map((e) => `${e.start}-${e.end}`);
    let seed = 7;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const pieces = ["john.doe", "a_b", "x-y", "ex.com", "mail.org", "@", "@", ".io", "_", "%", "+", " ", "\n", "(", "é", "x".repeat(70), "9"];
    const seeded = Array.from({ length: 20_000 }, () => Array.from({ length: Math.floor(rnd() * 14) }, () => pieces[Math.floor(rnd() * pieces.length)]).join(""));
    let withEmail = 0;
    for (const t of [...ROWS, ...seeded]) {
      const want = reference(t);
      if (want.length > 0) withEmail++;
      expect(found(t), t.slice(0, 200)).toEqual(want);
    }
    // the seeded texts hold e-mails (and the cases around them: a run over 64, '_' or '.' before, '@@')
    expect(withEmail).toBeGreaterThan(500);
  });
});

describe("the keyword patterns' three-character leads (StartRule.narrow)", () => {
  it("pass every position where the pattern's regex matches, on every development row, its upper case and seeded text", async () => {
    const { PATTERNS } = await import("../../../src/guardrails/phi/patterns.js");
    const { ADDR_TRIGGER, ADDR_TRIGGER_START } = await import("../../../src/guardrails/phi/addresses.js");
    const rules: Array<[RegExp, (t: string, at: number) => boolean]> = PATTERNS.flatMap((p) => (p.start?.narrow ? [[p.re, p.start.narrow] as [RegExp, (t: string, at: number) => boolean]] : []));
    rules.push([ADDR_TRIGGER, ADDR_TRIGGER_START.narrow!]);
    expect(rules.length).toBeGreaterThanOrEqual(5);
    let seed = 11;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const pieces = ["Jan", "MAY", "may", "Sept", "dec", "\u017Fent", "\u212Aelly", "i\u017F at", "Dr.", "driver's license", "MRN", "mr#", "id#", "ID:", "pager", "PGR", "Cell", "Fax", "work", "in", "IN:", "it is", "is at", "drops you off at", "13", "2019", "A1234567", " ", "\n", ":", "#", "é"];
    const seeded = Array.from({ length: 5_000 }, () => Array.from({ length: 1 + Math.floor(rnd() * 10) }, () => pieces[Math.floor(rnd() * pieces.length)]).join(rnd() < 0.7 ? " " : ""));
    let matches = 0;
    const missed: string[] = [];
    for (const [global, narrow] of rules) {
      const re = new RegExp(global.source, global.flags.replace("g", "") + "y");
      for (const text of [...ROWS, ...ROWS.map((t) => t.toUpperCase()), ...seeded]) {
        for (let at = 0; at < text.length; at++) {
          re.lastIndex = at;
          if (!re.test(text)) continue;
          matches++;
          if (!narrow(text, at)) missed.push(text.slice(at, at + 30));
        }
      }
    }
    expect(missed.slice(0, 5)).toEqual([]);
    expect(matches).toBeGreaterThan(1000);
  });
});

describe("the address scanner's number tokens read by char codes", () => {
  it("end where the token regex ends, at every position of the development rows and of seeded number-like text", async () => {
    const { ADDR_TOKEN, numberTokenEnd } = await import("../../../src/guardrails/phi/addresses.js");
    const re = new RegExp(ADDR_TOKEN.source, ADDR_TOKEN.flags);
    const reference = (t: string, at: number): number => {
      re.lastIndex = at;
      return re.test(t) && re.lastIndex !== at ? re.lastIndex : -1;
    };
    let seed = 5;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
    const pieces = ["1", "12", "1234567", "12a", "12-345", "12-34567", "1A-2", "a", "Z", "-", "-1", " ", "  ", "\t", "     ", ",", "\n", ".", "é", "\u0663", "\u00a0", "x"];
    const seeded = Array.from({ length: 20_000 }, () => Array.from({ length: 1 + Math.floor(rnd() * 7) }, () => pieces[Math.floor(rnd() * pieces.length)]).join(""));
    let numbers = 0;
    const wrong: string[] = [];
    for (const text of [...ROWS, ...seeded]) {
      for (let at = 0; at < text.length; at++) {
        const end = numberTokenEnd(text, at);
        if (end < 0) continue;
        numbers++;
        if (end !== reference(text, at)) wrong.push(JSON.stringify(text.slice(at, at + 20)));
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(numbers).toBeGreaterThan(10_000);
  });
});
