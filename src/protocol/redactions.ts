/**
 * The `_meta` a redacted result carries (HMCP extension): which entity types a guardrail replaced and how many.
 */

/**
 * `_meta` key of a result whose text a guardrail redacted: how many entities of each type were replaced, e.g.
 * `{ "NAME": 2, "DATE": 1 }` (types and counts, never values), so that a caller knows the text it got was altered.
 */
export const REDACTIONS_META_KEY = "hmcp/redactions";

/** `payload` (an MCP result) with {@link REDACTIONS_META_KEY} set in its `_meta`, when `redactions` counts any entity. */
export function withRedactionsMeta<T>(payload: T, redactions: Record<string, number> | undefined): T {
  if (redactions === undefined || typeof payload !== "object" || payload === null || Array.isArray(payload)) return payload;
  const keys = Object.keys(redactions);
  if (keys.length === 0) return payload;
  const p = payload as Record<string, unknown>;
  const meta = typeof p["_meta"] === "object" && p["_meta"] !== null ? (p["_meta"] as Record<string, unknown>) : {};
  // (the empty spreads first: on Node 20 a literal that starts with a spread and adds members takes V8's slow path)
  return { ...{}, ...p, _meta: { ...{}, ...meta, [REDACTIONS_META_KEY]: Object.fromEntries(keys.sort().map((k) => [k, redactions[k]!])) } } as T;
}
