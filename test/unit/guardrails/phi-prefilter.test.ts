import { describe, expect, it } from "vitest";
import { createPhiDetector } from "../../../src/guardrails/phi/detector.js";
import { StartIndex } from "../../../src/guardrails/phi/prefilter.js";
import { LexTable } from "../../../src/guardrails/phi/lexicon.js";
import { ADDR_NUM_START_RULE, ADDR_TRIGGER_START } from "../../../src/guardrails/phi/addresses.js";
import { PATTERNS } from "../../../src/guardrails/phi/patterns.js";

/**
 * Exact entities on inputs that exercise the speed paths (start-position prefilter, lexicon table, bounded address
 * look-ahead). The expected spans are what the detector found before those paths existed (same output, faster).
 */
const detector = createPhiDetector();
const spans = (text: string) => detector.detect(text).map((e) => [e.type, e.start, e.end]);

describe("PHI detector speed paths keep the output", () => {
  it("finds keyword patterns only where a word may start", () => {
    // "x-may 5" / "_May 6" / "émay 7" / "10may 8" are no dates; the month patterns run at candidate positions only
    expect(spans("seen x-may 5 and _May 6 and émay 7 and 10may 8; Jan 2019 and 5th of June 2020")).toEqual([
      ["DATE", 48, 56],
      ["DATE", 61, 77],
    ]);
  });

  it("tries the address cues at a long s and a Kelvin sign (case-insensitive unicode regex)", () => {
    expect(spans("\u017Fent to 12 Main Street. The patient \u212Aelly lives at 5 Elm Road.")).toEqual([
      ["ADDRESS", 8, 41],
      ["ADDRESS", 51, 62],
    ]);
  });

  it("looks words up by char codes, possessives included", () => {
    expect(spans("Called SMITH'S daughter; O'Brien's wife and Szöllösy’s son came. MARY’S nurse Kathy.")).toEqual([
      ["NAME", 44, 52],
      ["LOCATION", 65, 69],
      ["NAME", 78, 83],
    ]);
  });

  it("joins the short lines after a street, and not a long one", () => {
    const text = "12 Main St\nBoston, MA\n02139\n" + "x".repeat(50) + "\n24 Elm Street " + "word ".repeat(20);
    expect(spans(text)).toEqual([
      ["ADDRESS", 0, 59],
      ["ADDRESS", 79, 92],
    ]);
  });

  it("keeps structured identifiers", () => {
    expect(spans("1 via 2 via 3 via Rua João Pessoa 1636 via Roma 12")).toEqual([["ADDRESS", 0, 50]]);
    expect(spans("contact: www.example.org, HTTP://x.io/a?b=1. SSN 123-45-6789; ssn: 123456789; MRN: 12345678; acct 998877")).toEqual([
      ["URL", 9, 24],
      ["URL", 26, 43],
      ["SSN", 49, 60],
      ["SSN", 67, 76],
      ["ID", 83, 91],
      ["ID", 98, 104],
    ]);
    expect(spans("Dr. Ann Lee, APO AE 09012, PSC 5420, Box 2708 APO AA 33879, apt 5, p.o. box 12, zip 02139, NY 10001")).toEqual([
      ["NAME", 4, 11],
      ["ADDRESS", 13, 78],
      ["ZIP", 84, 89],
      ["ZIP", 94, 99],
    ]);
    expect(spans("University of Maryland, U of Michigan, St. Joseph's, Saint Agnes; AB12 3456 7890 1234; X43747560X; aged 95; 97 yo; CVA 74'")).toEqual([
      ["LOCATION", 0, 64],
      ["ACCOUNT", 66, 85],
      ["ID", 87, 97],
      ["AGE", 104, 106],
      ["AGE", 108, 110],
      ["DATE", 119, 122],
    ]);
  });

  it("reads a long line of street addresses as one address", () => {
    expect(spans("12 Main St ".repeat(300))).toEqual([["ADDRESS", 0, 3299]]);
  });
});

describe("StartIndex", () => {
  it("lists every position whose first two characters and predecessor fit a rule", () => {
    const idx = new StartIndex([
      { lead: /^ja/i, prev: "alnum" },
      { lead: /^\d/, prev: "digit" },
      { lead: /^s/i, prev: "any", fold: true },
    ]);
    const c = idx.scan("Jan xjan 12 ſ s");
    const got = Array.from({ length: c.n }, (_, i) => [c.pos[i], c.mask[i]]);
    expect(got).toEqual([
      [0, 1],
      [9, 2],
      [12, 4],
      [14, 4],
    ]);
  });
});

describe("StartIndex pair table", () => {
  it("allows exactly the ASCII pairs each lead matches (the table is built by a batched scan)", () => {
    const rules = [...PATTERNS.flatMap((p) => (p.start ? [p.start] : [])), ADDR_TRIGGER_START, ADDR_NUM_START_RULE];
    const idx = new StartIndex(rules);
    const bad: string[] = [];
    for (let c0 = 0; c0 < 128; c0++) {
      for (let c1 = 0; c1 < 128; c1++) {
        const s = String.fromCharCode(c0, c1);
        let want = 0;
        rules.forEach((r, b) => {
          if (new RegExp(r.lead.source, r.lead.flags).test(s)) want |= 1 << b;
        });
        const c = idx.scan(s);
        const got = c.n > 0 && c.pos[0] === 0 ? c.mask[0]! : 0;
        if (got !== want) bad.push(`${c0},${c1}: ${got} != ${want}`);
      }
    }
    expect(bad).toEqual([]);
  });
});

describe("StartIndex word-start scan", () => {
  it("finds what the general scan finds", () => {
    const rules = [...PATTERNS.flatMap((p) => (p.start ? [p.start] : [])), ADDR_TRIGGER_START, ADDR_NUM_START_RULE];
    const fast = new StartIndex(rules);
    // a rule that never matches but may follow anything forces the general scan
    const general = new StartIndex([...rules, { lead: /^(?!)/, prev: "any" }]);
    const texts = ["", "a", "Jan 5, 2019 in 12 Main St", "x-may 5 _May 6 émay 7 10may 8 ſent to Kelly", "ID# AB1234567 (pager 555) aged 95 http://x.io", "\u{1D518}in of\tthe\u00a0a 12"];
    const list = (c: { n: number; pos: Int32Array; mask: Int32Array }) => Array.from({ length: c.n }, (_, i) => `${c.pos[i]}:${c.mask[i]}`).join(" ");
    for (const t of texts) expect(list(fast.scan(t))).toBe(list(general.scan(t)));
  });
});

describe("LexTable", () => {
  it("answers like the map it is built from, by string and by an ASCII range folded to lower case", () => {
    const t = new LexTable([
      [["smith", "o'brien"], 1],
      [["smith", "szöllösy"], 2],
      [["o'brien"], 4],
      [["szöllösy"], 8],
    ]);
    expect(t.bitsOf(t.find("o'brien"))).toBe(5);
    expect(t.bitsOf(t.find("szöllösy"))).toBe(10);
    expect(t.bitsOf(t.find("smith"))).toBe(3);
    expect(t.find("smit")).toBe(-1);
    expect(t.wordOf(t.findAsciiLower("Mr SMITH", 3, 8))).toBe("smith");
    expect(t.bitsOf(t.findAsciiLower("O'Brien", 0, 7))).toBe(5);
    expect(t.findAsciiLower("Smithy", 0, 6)).toBe(-1);
  });
});
