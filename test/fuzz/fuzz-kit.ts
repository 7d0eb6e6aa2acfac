/**
 * Shared pieces of the fuzz suites (test/fuzz): run counts and seed from the environment, JSON-RPC message templates of
 * both eras and the mutations applied to them, an in-memory audit sink that counts, the process watch (unhandled
 * rejections, uncaught exceptions) and the heap measurement.
 *
 * `HMCP_FUZZ_RUNS` sets fast-check's `numRuns` (default small, for `npm test`; `.ci/run` sets a large one),
 * `HMCP_FUZZ_SEED` its seed (default fixed; fast-check prints seed and path of a failing case to replay it).
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import type { AuditRecordInput, AuditSink } from "hmcp";

export const MODERN = "2026-07-28";
export const LEGACY = "2025-11-25";

/** fast-check's `numRuns`: `HMCP_FUZZ_RUNS`, else `fallback`. */
export function fuzzRuns(fallback: number): number {
  const n = Number(process.env["HMCP_FUZZ_RUNS"]);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
}

/** fast-check's seed: `HMCP_FUZZ_SEED`, else a fixed one (the same cases on every run of `npm test`). */
export function fuzzSeed(): number {
  const n = Number(process.env["HMCP_FUZZ_SEED"]);
  return Number.isSafeInteger(n) ? n : 20_260_728;
}

/** An in-memory audit sink that counts records (by reason) and keeps none, so it does not grow over a long run. */
export class CountingSink implements AuditSink {
  count = 0;
  readonly byReason = new Map<string, number>();
  append(record: AuditRecordInput): void {
    this.count++;
    const key = `${record.outcome}:${record.reason ?? "-"}`;
    this.byReason.set(key, (this.byReason.get(key) ?? 0) + 1);
  }
  flush(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Collects unhandled rejections and uncaught exceptions while installed. */
export function watchProcess(): { problems: string[]; stop(): void } {
  const problems: string[] = [];
  const onRejection = (reason: unknown) => problems.push(`unhandledRejection: ${String((reason as Error)?.stack ?? reason)}`);
  const onException = (error: Error) => problems.push(`uncaughtException: ${String(error?.stack ?? error)}`);
  process.on("unhandledRejection", onRejection);
  process.on("uncaughtException", onException);
  return {
    problems,
    stop() {
      process.off("unhandledRejection", onRejection);
      process.off("uncaughtException", onException);
    },
  };
}

/**
 * A full garbage collection: `global.gc` when the process runs with `--expose-gc`, else the same function obtained by
 * turning the flag on at run time (V8 hands `gc` to contexts created after that). `undefined` when neither works:
 * the caller then applies a coarse bound.
 */
export function findGc(): { gc: (() => void) | undefined; how: string } {
  const g = (globalThis as { gc?: () => void }).gc;
  if (typeof g === "function") return { gc: g, how: "global.gc (--expose-gc)" };
  try {
    setFlagsFromString("--expose-gc");
    const fn = runInNewContext("gc") as unknown;
    if (typeof fn === "function") return { gc: fn as () => void, how: "gc via v8.setFlagsFromString('--expose-gc')" };
  } catch {
    // fall through
  }
  return { gc: undefined, how: "no gc: coarse bound" };
}

/** Heap in use after a full collection (several passes, with a turn of the event loop between them). */
export async function settledHeap(gc: (() => void) | undefined): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, 20));
  }
  return process.memoryUsage().heapUsed;
}

export const MB = 1024 * 1024;

// ---------------------------------------------------------------------------------------------------------------
// JSON values and their mutation

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** One edit of a JSON value at one of its paths (chosen by `at`, modulo the number of paths). */
export interface Mutation {
  at: number;
  op: "delete" | "replace" | "wrap" | "stringify" | "duplicate-key" | "empty";
  value: Json;
}

export const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  op: fc.constantFrom("delete", "replace", "wrap", "stringify", "duplicate-key", "empty"),
  value: fc.oneof(
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json> },
    fc.constantFrom<Json>(null, true, -1, 0, 1e308, -0.5, 2 ** 53 + 1, "", "2.0", "1.0", "2026-07-28", "2025-11-25", "__proto__", "\u0000", "\ud800", "x".repeat(5_000), [], {}),
  ),
});

/** Every path of `v` (the root first), as key lists. */
function paths(v: Json, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(prefix);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...prefix, i], out));
  else if (v && typeof v === "object") for (const k of Object.keys(v)) paths(v[k]!, [...prefix, k], out);
  return out;
}

/** `v` with `m` applied (a fresh value; `v` is not changed). */
export function mutate(v: Json, m: Mutation): Json {
  const root = structuredClone(v);
  const all = paths(root);
  const path = all[m.at % all.length]!;
  if (path.length === 0) {
    if (m.op === "wrap") return [root];
    if (m.op === "stringify") return JSON.stringify(root);
    if (m.op === "empty") return Array.isArray(root) ? [] : {};
    return m.op === "replace" ? m.value : root;
  }
  let parent: Json = root;
  for (const k of path.slice(0, -1)) parent = (parent as Record<string | number, Json>)[k]!;
  const key = path.at(-1)!;
  const p = parent as Record<string | number, Json> & Json[];
  const old = p[key]!;
  switch (m.op) {
    case "delete":
      if (Array.isArray(p)) p.splice(key as number, 1);
      else delete p[key];
      break;
    case "replace":
      p[key] = m.value;
      break;
    case "wrap":
      p[key] = [old];
      break;
    case "stringify":
      p[key] = JSON.stringify(old);
      break;
    case "empty":
      p[key] = Array.isArray(old) ? [] : old && typeof old === "object" ? {} : "";
      break;
    case "duplicate-key":
      // the serialised text gets the key twice (the last one wins in JSON.parse): marked here, expanded in `serialise`
      if (!Array.isArray(parent)) (parent as Record<string, Json>)[`${String(key)}\u0001dup`] = m.value;
      break;
  }
  return root;
}

/** JSON text of `v`; keys marked by a "duplicate-key" mutation appear twice under the same name. */
export function serialise(v: Json): string {
  return JSON.stringify(v).replace(/"([^"\\]*)\\u0001dup"/g, (_m, k: string) => `"${k}"`);
}

/** A text-level edit of a serialised body. */
export type TextEdit = { kind: "none" } | { kind: "truncate"; at: number } | { kind: "insert"; at: number; text: string } | { kind: "batch"; n: number } | { kind: "bom" } | { kind: "pad"; bytes: number } | { kind: "nul" };

export const textEditArb: fc.Arbitrary<TextEdit> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<TextEdit>({ kind: "none" }) },
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), text: fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom(",", "]", "}", '"', "\\", "{", "[", "\n", "\u2028", "\ud83d")) }),
  fc.record({ kind: fc.constant("batch" as const), n: fc.integer({ min: 0, max: 3 }) }),
  fc.constant<TextEdit>({ kind: "bom" }),
  fc.constant<TextEdit>({ kind: "nul" }),
  fc.record({ kind: fc.constant("pad" as const), bytes: fc.constantFrom(10, 70_000) }),
);

export function applyTextEdit(text: string, e: TextEdit): string {
  switch (e.kind) {
    case "none":
      return text;
    case "truncate":
      return text.slice(0, e.at % (text.length + 1));
    case "insert": {
      const at = e.at % (text.length + 1);
      return text.slice(0, at) + e.text + text.slice(at);
    }
    case "batch":
      return `[${Array.from({ length: e.n }, () => text).join(",")}]`;
    case "bom":
      return `\ufeff${text}`;
    case "nul":
      return `${text}\u0000`;
    case "pad":
      return text.replace(/}\s*$/, `,"pad":"${"p".repeat(e.bytes)}"}`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// JSON-RPC templates

export const METHODS = [
  "initialize", "notifications/initialized", "ping", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
  "prompts/list", "prompts/get", "sampling/createMessage", "elicitation/create", "completion/complete", "logging/setLevel", "server/discover",
  "subscriptions/listen", "notifications/cancelled", "notifications/progress", "roots/list", "no/such/method", "",
] as const;

/** Parameters a method's template starts from (a valid call where there is one). */
export function paramsFor(method: string): Record<string, Json> {
  switch (method) {
    case "initialize":
      return { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: "fuzz", version: "1" } };
    case "tools/call":
      return { name: "add", arguments: { a: 1, b: 2 } };
    case "resources/read":
      return { uri: "test://greeting" };
    case "prompts/get":
      return { name: "triage", arguments: { topic: "chest pain" } };
    case "sampling/createMessage":
      return { messages: [{ role: "user", content: { type: "text", text: "hello" } }], maxTokens: 10 };
    case "completion/complete":
      return { ref: { type: "ref/prompt", name: "triage" }, argument: { name: "topic", value: "c" } };
    case "logging/setLevel":
      return { level: "info" };
    case "notifications/cancelled":
      return { requestId: 1, reason: "fuzz" };
    case "notifications/progress":
      return { progressToken: 1, progress: 1 };
    case "subscriptions/listen":
      return { notifications: { toolsListChanged: true } };
    default:
      return {};
  }
}

/** The MCP 2026-07-28 `_meta` envelope. */
export function envelope(capabilities: Record<string, Json> = { elicitation: { form: {} }, sampling: {} }): Record<string, Json> {
  return { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities, "io.modelcontextprotocol/clientInfo": { name: "fuzz", version: "1" } };
}

/** A 2025-era message: a request (an id), or a notification for `notifications/*`. */
export function legacyMessage(id: Json, method: string): Record<string, Json> {
  const msg: Record<string, Json> = { jsonrpc: "2.0", method, params: paramsFor(method) };
  if (!method.startsWith("notifications/")) msg["id"] = id;
  return msg;
}

/** A 2026-07-28 request: its parameters carry the `_meta` envelope. */
export function modernMessage(id: Json, method: string, extra: Record<string, Json> = {}): Record<string, Json> {
  const msg: Record<string, Json> = { jsonrpc: "2.0", method, params: { ...paramsFor(method), ...extra, _meta: envelope() } };
  if (!method.startsWith("notifications/")) msg["id"] = id;
  return msg;
}

export const idArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 1_000_000 }) },
  { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
  fc.constantFrom<Json>(null, -1, 1.5, 2 ** 53, true, {}, [], "", "__proto__"),
);

/** A JSON-RPC reply is well-formed: jsonrpc "2.0", and either a result or an error with an integer code and a string message. */
export function wellFormedReply(m: unknown): string | undefined {
  if (!m || typeof m !== "object" || Array.isArray(m)) return "not an object";
  const o = m as Record<string, unknown>;
  if (o["jsonrpc"] !== "2.0") return "jsonrpc is not 2.0";
  if ("method" in o) return typeof o["method"] === "string" ? undefined : "method not a string"; // a server request or notification
  if ("error" in o) {
    const e = o["error"] as Record<string, unknown> | null;
    if (!e || typeof e !== "object") return "error is not an object";
    if (!Number.isInteger(e["code"])) return "error.code is not an integer";
    if (typeof e["message"] !== "string") return "error.message is not a string";
    return undefined;
  }
  return "result" in o ? undefined : "neither result nor error";
}
