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
import { LexTable } from "../../../src/guardrails/phi/lexicon.js";
import { byRule, StartIndex } from "../../../src/guardrails/phi/prefilter.js";
import { scanWords } from "../../../src/guardrails/phi/text.js";

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
        scanWords(text, (s, e, _lower, ascii) => {
          const lower = text.slice(s, e).toLowerCase();
          const want = reference.get(lower) ?? 0;
          if (table.bitsOf(table.find(lower)) !== want) wrong.push(`find ${lower}`);
          if (ascii && table.bitsOf(table.findAsciiLower(text, s, e)) !== want) wrong.push(`findAsciiLower ${lower}`);
        });
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
