/**
 * Canonical JSON per RFC 8785 (JSON Canonicalization Scheme, JCS): object members sorted by the
 * UTF-16 code units of their names, no whitespace, numbers in ECMAScript shortest round-trip form
 * (RFC 8785 §3.2.2.3), strings escaped as ECMAScript `JSON.stringify` does (RFC 8785 §3.2.2.2).
 * Used for the audit chain hashes and the request/response digests.
 */
import { hash } from "node:crypto";

/**
 * Serialises `value` as RFC 8785 canonical JSON.
 * As `JSON.stringify` does: `undefined`, function and symbol object members are omitted, and become
 * `null` in arrays; `toJSON` is honoured (e.g. Date).
 * @throws TypeError for values JSON cannot represent: non-finite numbers, bigint, a function or
 *   symbol as the value itself, lone UTF-16 surrogates (RFC 8785 §3.2.2.2 requires well-formed
 *   strings), cycles.
 */
export function canonicalJson(value: unknown): string {
  // Fast path: put every object's members in RFC 8785 order (a reordered shallow copy only where they are not), then
  // let the native JSON.stringify write it: its number and string forms are the ones RFC 8785 prescribes
  // (§3.2.2.2, §3.2.2.3), and it keeps members in property order. Anything it would not serialise identically
  // (non-finite numbers, lone surrogates, toJSON, non-plain objects, array-index keys out of order, deep or cyclic
  // structures) takes the general serialiser below, which also raises the documented errors.
  const ordered = canonicalOrder(value, 0);
  return ordered === GENERAL ? serialise(value, []) : JSON.stringify(ordered);
}

/** Marker: the value needs the general serialiser. */
const GENERAL: unique symbol = Symbol("general");
/** Nesting beyond this takes the general serialiser (which detects cycles). */
const FAST_MAX_DEPTH = 64;

/**
 * `value` itself when its members are already in RFC 8785 order, a copy with its objects' members reordered when not,
 * or {@link GENERAL} when JSON.stringify of the result would not be the canonical form.
 */
function canonicalOrder(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
      return wellFormed(value) ? value : GENERAL;
    case "number":
      return Number.isFinite(value) ? value : GENERAL;
    case "boolean":
      return value;
    case "object":
      break;
    default:
      // undefined, function and symbol are handled by the caller (omitted or null); bigint is an error
      return GENERAL;
  }
  if (value === null) return null;
  if (depth > FAST_MAX_DEPTH) return GENERAL;
  // toJSON (own, inherited, or on Array.prototype) replaces the value: the general serialiser honours it
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return GENERAL;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (omitted(v)) continue; // JSON.stringify writes null
      const o = canonicalOrder(v, depth + 1);
      if (o === GENERAL) return GENERAL;
      if (o !== v) (copy ??= value.slice())[i] = o;
    }
    return copy ?? value;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return GENERAL;
  const rec = value as Record<string, unknown>;
  const keys = Object.keys(rec);
  let sorted = true;
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      sorted = false;
      break;
    }
  }
  // the copy in RFC 8785 order, made once a member is out of order or a member's value had to be copied
  let out: Record<string, unknown> | undefined;
  if (!sorted) {
    keys.sort();
    out = {};
  }
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const v = rec[k];
    if (omitted(v)) continue; // JSON.stringify omits it
    const o = canonicalOrder(v, depth + 1);
    if (o === GENERAL) return GENERAL;
    if (out === undefined) {
      if (o === v) continue;
      // first changed member of an ordered object: copy the members before it as they are
      out = {};
      for (let j = 0; j < i; j++) {
        const kj = keys[j]!;
        if (kj === "__proto__") return GENERAL;
        const vj = rec[kj];
        if (!omitted(vj)) out[kj] = vj;
      }
    }
    // "__proto__" would set the copy's prototype; an array-index key ("0", "12") is always enumerated first
    if (k === "__proto__" || (!sorted && isArrayIndexLike(k))) return GENERAL;
    out[k] = o;
  }
  return out ?? value;
}

/** Values JSON has no form for: omitted as object members, `null` as array elements (as JSON.stringify does). */
function omitted(v: unknown): boolean {
  return v === undefined || typeof v === "function" || typeof v === "symbol";
}

/** Whether a property name may be an array index (V8 enumerates those first, in numeric order). */
function isArrayIndexLike(k: string): boolean {
  const c = k.charCodeAt(0);
  return c >= 48 && c <= 57;
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
      out += omitted(v) ? "null" : serialise(v, ancestors);
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
      if (omitted(v)) continue;
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
  return hash("sha256", text, "hex");
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
