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

/**
 * RFC 8785 written the plain way (recursive, members sorted, every primitive through JSON.stringify): the reference the
 * native fast path of canonicalJson must match byte for byte, and throw where it throws.
 */
function referenceJcs(value: unknown, seen: object[] = []): string {
  if (value === null) return "null";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("non-finite");
    return JSON.stringify(value);
  }
  if (typeof value === "string") {
    if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) throw new TypeError("lone surrogate");
    return JSON.stringify(value);
  }
  if (typeof value === "boolean") return String(value);
  if (typeof value !== "object") throw new TypeError(typeof value);
  const o = value as { toJSON?: () => unknown };
  if (typeof o.toJSON === "function") return referenceJcs(o.toJSON(), seen);
  if (seen.includes(o)) throw new TypeError("cycle");
  const inner = [...seen, o];
  const skip = (v: unknown) => v === undefined || typeof v === "function" || typeof v === "symbol";
  if (Array.isArray(o)) return `[${o.map((v: unknown) => (skip(v) ? "null" : referenceJcs(v, inner))).join(",")}]`;
  const rec = o as Record<string, unknown>;
  const members = Object.keys(rec)
    .sort()
    .filter((k) => !skip(rec[k]))
    .map((k) => `${JSON.stringify(k)}:${referenceJcs(rec[k], inner)}`);
  return `{${members.join(",")}}`;
}

describe("canonicalJson fast path", () => {
  const outcome = (f: () => string) => {
    try {
      return { text: f() };
    } catch (e) {
      return { error: (e as Error).constructor.name };
    }
  };

  it("writes what the reference writes, and throws where it throws, on arbitrary values", async () => {
    const fc = (await import("fast-check")).default;
    // keys that stress the ordering: array indices (enumerated first by V8), astral vs BMP (UTF-16 order differs from
    // code point order), "__proto__", case, prefixes
    const key = fc.oneof(
      fc.string({ maxLength: 4 }),
      fc.constantFrom("0", "1", "10", "9", "01", "4294967295", "-1", "__proto__", "a", "B", "\uffff", "\ud83d\ude00", "\u20ac", "ab", "a\u0000"),
    );
    const leaf = fc.oneof(
      fc.string({ unit: "grapheme" }),
      fc.string({ unit: "binary" }), // includes lone surrogates
      fc.double(), // includes NaN, Infinity, -0
      fc.integer(),
      fc.constantFrom(1e21, 1e-7, 5e-324, 2 ** 53 + 2, null, true, false, undefined),
      fc.date({ noInvalidDate: true }),
      fc.constant(() => 1),
      fc.constant(Symbol("s")),
      fc.bigInt(),
      fc.constant(new Map([["a", 1]])),
    );
    const { tree } = fc.letrec<{ tree: unknown; node: unknown }>((tie) => ({
      tree: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("node")),
      node: fc.oneof(
        fc.array(tie("tree"), { maxLength: 5 }),
        // built with defineProperty semantics, so "__proto__" is an own member as JSON.parse would make it
        fc.array(fc.tuple(key, tie("tree")), { maxLength: 6 }).map((entries) => {
          const o: Record<string, unknown> = {};
          for (const [k, v] of entries) Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
          return o;
        }),
      ),
    }));
    fc.assert(
      fc.property(tree, (v) => {
        expect(outcome(() => canonicalJson(v))).toEqual(outcome(() => referenceJcs(v)));
      }),
      { numRuns: 3000, seed: 7 },
    );
  });

  it("matches the reference on real MCP traffic shapes, sorted or not, and on deep and cyclic structures", () => {
    const request = {
      messages: [{ role: "user", content: { type: "text", text: "Patient reports chest pain \ud83d\ude00 since 2 days." } }],
      maxTokens: 256,
      _meta: { "hmcp/patient": "p-1", progressToken: 3 },
      systemPrompt: "You are the EMR agent.",
    };
    const sortedAlready = JSON.parse(referenceJcs(request)) as unknown;
    for (const v of [request, sortedAlready, [request, { z: request, a: [request] }]]) expect(canonicalJson(v)).toBe(referenceJcs(v));
    // toJSON on an array (own or inherited) replaces it, as JSON.stringify and RFC 8785 implementations do
    const withToJson = Object.assign([{ b: 1, a: 2 }], { toJSON: () => ({ z: 1, a: [{ d: 1, c: 2 }] }) });
    for (const v of [withToJson, { k: withToJson }]) expect(canonicalJson(v)).toBe(referenceJcs(v));
    let deep: unknown = { leaf: 1 };
    for (let i = 0; i < 200; i++) deep = i % 2 ? { b: deep, a: i } : [deep];
    expect(canonicalJson(deep)).toBe(referenceJcs(deep));
    const cyc: Record<string, unknown> = { b: 1 };
    cyc["a"] = [cyc];
    expect(() => canonicalJson(cyc)).toThrow(TypeError);
  });
});
