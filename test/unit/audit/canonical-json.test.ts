import { describe, expect, it } from "vitest";
import { canonicalJson, contentDigest, newAuditRecord, AuditRecordInputSchema } from "hmcp";

describe("canonicalJson (RFC 8785)", () => {
  it("sorts keys by UTF-16 code units and drops whitespace (RFC 8785 §3.2.3 example)", () => {
    // RFC 8785 §3.2.3 sorting example: property names in UTF-16 order.
    const input = { "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis" };
    const keys = Object.keys(JSON.parse(canonicalJson(input)) as object);
    // JSON.parse re-orders integer-like keys, so check the text order instead.
    const text = canonicalJson(input);
    const order = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"].map((k) => text.indexOf(JSON.stringify(k)));
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(keys).toHaveLength(7);
  });

  it("serialises numbers in ECMAScript form (RFC 8785 Appendix B vectors)", () => {
    expect(canonicalJson([1e30, 4.5, 0.002, 1e-27, -0, 333333333.3333333, 9007199254740992])).toBe(
      "[1e+30,4.5,0.002,1e-27,0,333333333.3333333,9007199254740992]",
    );
  });

  it("matches the RFC 8785 §3.2.2 sample", () => {
    const sample = { numbers: [333333333.3333333, 1e30, 4.5, 2e-3, 0.000000000000000000000000001], string: "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/", literals: [null, true, false] };
    expect(canonicalJson(sample)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it("rejects values JSON cannot carry", () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ a: 1n })).toThrow(TypeError);
    expect(() => canonicalJson("\ud800x")).toThrow(TypeError);
    const cyc: Record<string, unknown> = {};
    cyc["self"] = cyc;
    expect(() => canonicalJson(cyc)).toThrow(TypeError);
  });

  it("digests are independent of key order and sensitive to content", () => {
    expect(contentDigest({ a: 1, b: [2, { c: 3, d: 4 }] })).toBe(contentDigest({ b: [2, { d: 4, c: 3 }], a: 1 }));
    expect(contentDigest({ a: 1 })).not.toBe(contentDigest({ a: 2 }));
    expect(contentDigest({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
    expect(contentDigest(undefined)).toBeUndefined();
  });
});

describe("newAuditRecord", () => {
  it("fills version, id, time and defaults into a schema-valid record", () => {
    const r = newAuditRecord({ type: "request", agent: "emr-writeback", outcome: "allowed" }, () => Date.UTC(2026, 0, 2, 3, 4, 5, 6));
    expect(AuditRecordInputSchema.parse(r)).toEqual(r);
    expect(r.time).toBe("2026-01-02T03:04:05.006Z");
    expect(r.patients).toEqual([]);
    const r2 = newAuditRecord({ type: "request", agent: "a", outcome: "denied", time: new Date(0), patients: ["p1"], reason: "insufficient_scope" });
    expect(r2.time).toBe("1970-01-01T00:00:00.000Z");
    expect(r2.patients).toEqual(["p1"]);
    expect(r2.id).not.toBe(r.id);
  });
});

describe("canonicalJson properties", () => {
  it("is stable under parse/serialise, independent of key order, and parses back to the value", async () => {
    const fc = (await import("fast-check")).default;
    const shuffleKeys = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(shuffleKeys);
      if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, shuffleKeys(x)]));
      return v;
    };
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const c = canonicalJson(v);
        expect(canonicalJson(JSON.parse(c))).toBe(c);
        expect(canonicalJson(shuffleKeys(v))).toBe(c);
        expect(JSON.parse(c)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 300, seed: 42 },
    );
  });
});
