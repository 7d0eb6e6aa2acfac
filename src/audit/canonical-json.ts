/**
 * Canonical JSON per RFC 8785 (JSON Canonicalization Scheme, JCS): object members sorted by the
 * UTF-16 code units of their names, no whitespace, numbers in ECMAScript shortest round-trip form
 * (RFC 8785 §3.2.2.3), strings escaped as ECMAScript `JSON.stringify` does (RFC 8785 §3.2.2.2).
 * Used for the audit chain hashes and the request/response digests.
 */
import { createHash } from "node:crypto";

/**
 * Serialises `value` as RFC 8785 canonical JSON.
 * As `JSON.stringify` does: `undefined`, function and symbol object members are omitted, and become
 * `null` in arrays; `toJSON` is honoured (e.g. Date).
 * @throws TypeError for values JSON cannot represent: non-finite numbers, bigint, a function or
 *   symbol as the value itself, lone UTF-16 surrogates (RFC 8785 §3.2.2.2 requires well-formed
 *   strings), cycles.
 */
export function canonicalJson(value: unknown): string {
  return serialise(value, []);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// String.prototype.isWellFormed (ES2024, Node 20+) is native; the regex is the fallback.
const wellFormed: (s: string) => boolean =
  typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function"
    ? (s) => (s as string & { isWellFormed(): boolean }).isWellFormed()
    : (s) => !LONE_SURROGATE.test(s);

function serialise(value: unknown, ancestors: object[]): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("canonicalJson: non-finite number");
      // ECMAScript Number::toString is the RFC 8785 number form; -0 serialises as 0.
      return JSON.stringify(value);
    case "string":
      if (!wellFormed(value)) throw new TypeError("canonicalJson: string with a lone surrogate");
      return JSON.stringify(value);
    case "object":
      break;
    default:
      throw new TypeError(`canonicalJson: cannot serialise a ${typeof value}`);
  }
  const obj = value as object & { toJSON?: () => unknown };
  if (typeof obj.toJSON === "function") return serialise(obj.toJSON(), ancestors);
  if (ancestors.includes(obj)) throw new TypeError("canonicalJson: cyclic structure");
  ancestors.push(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = "[";
    for (let i = 0; i < obj.length; i++) {
      const v: unknown = obj[i];
      if (i > 0) out += ",";
      out += v === undefined || typeof v === "function" || typeof v === "symbol" ? "null" : serialise(v, ancestors);
    }
    out += "]";
  } else {
    const rec = obj as Record<string, unknown>;
    // Default sort compares UTF-16 code units, which is what RFC 8785 §3.2.3 asks for.
    const keys = Object.keys(rec).sort();
    out = "{";
    let first = true;
    for (const k of keys) {
      const v = rec[k];
      if (v === undefined || typeof v === "function" || typeof v === "symbol") continue;
      out += (first ? "" : ",") + JSON.stringify(k) + ":" + serialise(v, ancestors);
      first = false;
    }
    out += "}";
  }
  ancestors.pop();
  return out;
}

/** Lowercase hex SHA-256 of a string's UTF-8 bytes. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * Hex SHA-256 digest of the RFC 8785 canonical JSON of `value`: the integrity digest the audit
 * record keeps of request params and responses instead of their content (no PHI in the trail).
 * @returns `undefined` when `value` is `undefined`.
 * @throws TypeError as {@link canonicalJson}.
 */
export function contentDigest(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return sha256Hex(canonicalJson(value));
}
