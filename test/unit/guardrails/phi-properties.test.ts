import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redactPhi } from "../../../src/guardrails/index.js";

describe("PHI detector properties", () => {
  it("returns sorted, non-overlapping entities inside the input, and a text built from them", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const r = redactPhi(text);
        let at = 0;
        let rebuilt = "";
        for (const e of r.entities) {
          expect(e.start).toBeGreaterThanOrEqual(at);
          expect(e.end).toBeGreaterThan(e.start);
          expect(e.end).toBeLessThanOrEqual(text.length);
          expect(e.replacement).toBe(`[${e.type}]`);
          rebuilt += text.slice(at, e.start) + e.replacement;
          at = e.end;
        }
        expect(r.text).toBe(rebuilt + text.slice(at));
      }),
      { numRuns: 300, seed: 7 },
    );
  });

  it("removes an embedded SSN, e-mail and phone number wherever they sit", () => {
    const words = fc.array(fc.constantFrom("the", "patient", "was", "seen", "today", "and", "BP", "120/80", "stable", "."), { maxLength: 12 });
    fc.assert(
      fc.property(words, words, fc.integer({ min: 100, max: 899 }), fc.integer({ min: 1000, max: 9999 }), (a, b, x, y) => {
        const ssn = `${x}-${String(y % 90 + 10)}-${y}`;
        const mail = `p${y}@clinic.example.org`;
        const phone = `(${x}) 555-${y}`;
        const text = `${a.join(" ")} SSN ${ssn}, mail ${mail}, call ${phone} ${b.join(" ")}`;
        const out = redactPhi(text).text;
        expect(out).not.toContain(ssn);
        expect(out).not.toContain(mail);
        expect(out).not.toContain(`555-${y}`);
      }),
      { numRuns: 200, seed: 11 },
    );
  });

  it("handles long pathological inputs (regexes are linear: this would hang otherwise)", () => {
    for (const text of ["a".repeat(20_000), "1-".repeat(10_000), "x@".repeat(10_000), "A. ".repeat(7_000), "12 Main ".repeat(2_500), ":".repeat(20_000)]) {
      const r = redactPhi(text);
      expect(r.text.length).toBeGreaterThan(0);
    }
  });
});
