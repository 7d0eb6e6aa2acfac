import { describe, expect, it } from "vitest";
import { createPhiDetector } from "../../../src/index.js";

/**
 * The numeric patterns run only when the text has a digit run of the shape their matches need (./digits.ts), and the
 * tokeniser hashes and shapes each whole ASCII word as it reads it (./tokens.ts). Each text below has exactly one
 * such shape, so a gate that shut where its pattern matches, or a word folded wrongly, loses the entity. The expected
 * entities are what the detector found before either path existed.
 */
const detector = createPhiDetector();
const found = (text: string) => detector.detect(text).map((e) => `${e.type}:${text.slice(e.start, e.end)}`);

describe("PHI digit-run gates keep every numeric entity", () => {
  const cases: Array<[string, string[]]> = [
    ["server at 10.1.2.3 down", ["IP:10.1.2.3"]],
    ["SSN 123-45-6789 on file", ["SSN:123-45-6789"]],
    ["card 4111 1111 1111 1111 charged", ["ACCOUNT:4111 1111 1111 1111"]],
    ["card 4111-1111-1111-1111 ok", ["ACCOUNT:4111-1111-1111-1111"]],
    ["call 617-555-0123 4111 1111 1111 1111 now", ["ACCOUNT:617-555-0123 4111 1111 1111 1111"]],
    ["617-555-0123 617-555-0123 617-555-0123", ["PHONE:617-555-0123", "PHONE:617-555-0123", "PHONE:617-555-0123"]],
    ["call 617-555-0123 today", ["PHONE:617-555-0123"]],
    ["call (617) 555-0123", ["PHONE:(617) 555-0123"]],
    ["reach me on +44 20 7946 0958", ["PHONE:+44 20 7946 0958"]],
    ["line 020 7946 0958 12", ["PHONE:020 7946 0958 12"]],
    ["dial 123 4567890 now", ["PHONE:123 4567890"]],
    ["ref 123456-7890 ok", ["PHONE:123456-7890"]],
    ["ward 71-33-52-22 ok", ["PHONE:71-33-52-22"]],
    ["seen 2019-03-04 in clinic", ["DATE:2019-03-04"]],
    ["seen 3/14 in clinic", ["DATE:3/14"]],
    ["seen 3-14-19 here", ["DATE:3-14-19"]],
    ["dated 3/14/2019 here", ["DATE:3/14/2019"]],
    ["from 10/15-10/16 here", ["DATE:10/15", "DATE:10/16"]],
    ["since 4/19 here", ["DATE:4/19"]],
    ["on 3rd of March we met", ["DATE:3rd of March"]],
    ["on 3 March we met", ["DATE:3 March"]],
    ["a '09 PTCA", ["DATE:'09"]],
    ["a 92 yo man", ["AGE:92"]],
    ["a 101-year-old woman", ["AGE:101"]],
    ["the code 02139 was", ["ZIP:02139"]],
    ["id 1234567 here", ["ID:1234567"]],
    ["lives at 12 Main St now", ["ADDRESS:12 Main St now"]],
    ["lives at 4B Elm Road now", ["ADDRESS:4B Elm Road now"]],
    ["ship to USNS Mercy FPO AP 96677 today", ["ADDRESS:USNS Mercy FPO AP 96677"]],
    ["mail PSC 5420, Box 2708 APO AA 33879 now", ["ADDRESS:PSC 5420, Box 2708 APO AA 33879"]],
    ["she moved to Puruntie 82 last year", ["ADDRESS:Puruntie 82"]],
    ["at Mellemvej  32 ok", ["ADDRESS:Mellemvej  32"]],
    ["a 3 mg dose", []],
  ];
  for (const [text, want] of cases) {
    it(`finds ${want.length > 0 ? want.join(", ") : "nothing"} in ${JSON.stringify(text)}`, () => {
      expect(found(text)).toEqual(want);
    });
  }
});

describe("PHI tokens folded as they are scanned, and the gap after a title", () => {
  it("reads dictionary names in every case, with marks, possessives and past the packed length", () => {
    expect(found("Spoke with Olga Krylova today")).toEqual(["NAME:Olga Krylova"]);
    expect(found("Olga Krylova's chart")).toEqual(["NAME:Olga Krylova"]);
    expect(found("grace dudak aware")).toEqual(["NAME:grace dudak"]);
    expect(found("BEA TURA AWARE")).toEqual(["NAME:BEA TURA"]);
    expect(found("Seen by Dr. O'Brien today.")).toEqual(["NAME:O'Brien"]);
    expect(found("Seen by DR. MCDONALD today.")).toEqual(["NAME:MCDONALD"]);
    // the gap after a title, read by char codes: an optional full stop and one to three white-space characters, or a full stop
    expect(["seen by dr.xqzvik today", "seen by dr   xqzvik today", "seen by dr. \u00a0xqzvik today", "seen by dr xqzvik today"].map(found)).toEqual([
      ["NAME:xqzvik"],
      ["NAME:xqzvik"],
      ["NAME:xqzvik"],
      ["NAME:xqzvik"],
    ]);
    expect(["seen by dr    xqzvik today", "seen by dr..xqzvik today", "seen by xqzvik today"].map(found)).toEqual([[], [], []]);
    const named = createPhiDetector({ names: ["Wolfeschlegelsteinhausen", "Kowalczyk-Brandt"] });
    const names = (text: string) => named.detect(text).map((e) => `${e.type}:${text.slice(e.start, e.end)}`);
    expect(names("Spoke with WOLFESCHLEGELSTEINHAUSEN about it.")).toEqual(["NAME:WOLFESCHLEGELSTEINHAUSEN"]);
    expect(names("Spoke with Kowalczyk-Brandt and Kowalczyk-Brandt's son.")).toEqual(["NAME:Kowalczyk-Brandt", "NAME:Kowalczyk-Brandt"]);
  });
});

describe("PHI digit-run gates when only some entity types are asked for", () => {
  const text = "server 10.1.2.3; call 617-555-0123 on 3/14/2019, a 92 yo at 12 Main St, 'ſent to 5 Elm Road'";
  const only = (entities: Parameters<typeof createPhiDetector>[0]) => {
    const d = createPhiDetector(entities);
    return d.detect(text).map((e) => `${e.type}:${text.slice(e.start, e.end)}`);
  };
  it("gathers the digit shapes in their own pass when no start-position scan runs", () => {
    expect(only({ entities: ["IP"] })).toEqual(["IP:10.1.2.3"]);
  });
  it("gathers them in the start-position scan when the name rules are not asked for", () => {
    expect(only({ entities: ["PHONE", "DATE", "AGE", "ADDRESS"] })).toEqual(found(text).filter((e) => !e.startsWith("IP:")));
  });
});
