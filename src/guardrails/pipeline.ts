/**
 * The guardrail pipeline: ordered guardrails per stage, each with a timeout and a failure mode.
 * Implements the {@link GuardrailRunner} seam the server and the client call (DESIGN.md §2).
 */
import { createHash, hash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { ExchangeDecision, Guardrail, TextCheckContext } from "./guardrail.js";
import { walkPayload, type Walk } from "./content.js";
import { listenForAbort } from "../util/abort.js";
import { FHIR_ID } from "../protocol/fhir-id.js";
import type {
  Decision,
  DecisionEvidence,
  GuardrailContext,
  GuardrailDecisionSummary,
  GuardrailOutcome,
  GuardrailRunner,
  GuardrailStage,
  RedactedEntity,
} from "./types.js";

/** What happens when a guardrail throws or times out. */
export type FailMode = "closed" | "open";

/** One guardrail placed at a stage. */
export interface PipelineEntry {
  guardrail: Guardrail;
  /**
   * Time budget for this guardrail over one `evaluate` call (all text items), ms. Default 1000.
   * Async checks are abandoned (their `signal` aborted) when it expires; a synchronous check cannot be
   * interrupted, so its elapsed time is compared after it returns.
   */
  timeoutMs?: number;
  /** Default `"closed"`: an error or timeout blocks with reason `guardrail_error` / `guardrail_timeout`. */
  failMode?: FailMode;
}

/**
 * Limits of the per-session decision cache (see {@link PipelineConfig.decisionCache}). Both bound the whole cache,
 * over all sessions; the least recently used decisions are evicted first.
 */
export interface DecisionCacheOptions {
  /** Most decisions kept (an integer > 0). Default {@link DEFAULT_DECISION_CACHE}.maxEntries (4096). */
  maxEntries?: number;
  /**
   * Most bytes kept (an integer > 0), counted as 2 bytes per UTF-16 unit of each key and of each cached redacted text
   * or block reason, plus 128 bytes per entry and 80 per redacted entity. A decision larger than a caller's share
   * (below) is not cached. Default {@link DEFAULT_DECISION_CACHE}.maxBytes (8 MiB).
   */
  maxBytes?: number;
}

/**
 * Share of each limit one caller may hold, so that one caller cannot evict everyone else's entries: 1/8 of
 * `maxEntries` and of `maxBytes` (512 entries, 1 MiB by default: a 100-message conversation checked by two cacheable
 * guardrails fits), but never less than 64 entries / 64 KiB (or the whole limit, if smaller). The caller here is the
 * principal (issuer, tenant, client, subject) across all its sessions, or the session when there is no principal.
 */
export const DECISION_CACHE_CALLER_SHARE = 1 / 8;

/** Default limits of the decision cache. */
export const DEFAULT_DECISION_CACHE: Readonly<Required<DecisionCacheOptions>> = Object.freeze({ maxEntries: 4096, maxBytes: 8 * 1024 * 1024 });

/** Guardrails per stage, in evaluation order. */
export interface PipelineConfig {
  input?: PipelineEntry[];
  output?: PipelineEntry[];
  /**
   * The per-session decision cache: in a sampling conversation every request resends the whole history (and usually
   * the same system prompt), so the decisions of guardrails that declare `cacheable: true` on text items already seen
   * in the same session are reused instead of recomputed. Default on, with {@link DEFAULT_DECISION_CACHE}; `false`
   * turns it off; `true` is the default. See {@link GuardrailPipeline} for what is cached and how it is keyed.
   */
  decisionCache?: DecisionCacheOptions | boolean;
}

/** Counters of the decision cache (for monitoring and benchmarks). */
export interface DecisionCacheStats {
  /** Decisions held now. */
  entries: number;
  /** Bytes held now, as counted against `maxBytes`. */
  bytes: number;
  /** Text items answered from the cache since the pipeline was built. */
  hits: number;
  /** Text items of cacheable guardrails checked afresh (within a cache scope) since the pipeline was built. */
  misses: number;
  /** Decisions evicted (count or byte limit) since the pipeline was built. */
  evictions: number;
}

/** The result of {@link GuardrailPipeline.inspectText}: entities in the offsets of the ORIGINAL text. */
export interface TextInspection {
  action: "allow" | "redact" | "block";
  text: string;
  entities: RedactedEntity[];
  decisions: GuardrailDecisionSummary[];
  blocked?: { guardrail: string; reason: string; evidence?: DecisionEvidence; patients?: string[] };
}

/** Default per-guardrail timeout, ms. */
export const DEFAULT_GUARDRAIL_TIMEOUT_MS = 1000;

interface Entry {
  guardrail: Guardrail;
  timeoutMs: number;
  failMode: FailMode;
}

class GuardrailTimeout extends Error {}

/** A flat copy of `s` that references no other string (no rope or slice of the original). */
function flatCopy(s: string): string {
  return Buffer.from(s, "utf16le").toString("utf16le");
}

interface CachedDecision {
  decision: Decision;
  bytes: number;
  /** The caller whose share the entry counts against. */
  scope: string;
}

/** One caller's entries (keys in least-recently-used-first order) and their total size. */
interface ScopeUsage {
  keys: Set<string>;
  bytes: number;
}

/** A bounded LRU map from cache key to decision (a Map iterates in insertion order: the first entry is the oldest). */
class DecisionCache {
  readonly #map = new Map<string, CachedDecision>();
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  readonly #scopeEntries: number;
  readonly #scopeBytes: number;
  readonly #scopes = new Map<string, ScopeUsage>();
  #bytes = 0;
  hits = 0;
  misses = 0;
  evictions = 0;

  constructor(options: DecisionCacheOptions) {
    this.#maxEntries = options.maxEntries ?? DEFAULT_DECISION_CACHE.maxEntries;
    this.#maxBytes = options.maxBytes ?? DEFAULT_DECISION_CACHE.maxBytes;
    for (const [k, v] of [["maxEntries", this.#maxEntries], ["maxBytes", this.#maxBytes]] as const) {
      if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`decisionCache.${k} must be an integer > 0`);
    }
    this.#scopeEntries = Math.max(Math.min(this.#maxEntries, 64), Math.floor(this.#maxEntries * DECISION_CACHE_CALLER_SHARE));
    this.#scopeBytes = Math.max(Math.min(this.#maxBytes, 64 * 1024), Math.floor(this.#maxBytes * DECISION_CACHE_CALLER_SHARE));
  }

  get(key: string): Decision | undefined {
    const e = this.#map.get(key);
    if (e === undefined) return undefined;
    this.#map.delete(key);
    this.#map.set(key, e);
    const keys = this.#scopes.get(e.scope)!.keys;
    keys.delete(key);
    keys.add(key);
    return e.decision;
  }

  #evict(key: string): void {
    const e = this.#map.get(key)!;
    this.#map.delete(key);
    this.#bytes -= e.bytes;
    const u = this.#scopes.get(e.scope)!;
    u.keys.delete(key);
    u.bytes -= e.bytes;
    if (u.keys.size === 0) this.#scopes.delete(e.scope);
  }

  /** Caches `d` under `key`, counted against the share of `scope` (the caller: see {@link callerScope}). */
  set(key: string, d: Decision, scope: string): void {
    let decision: Decision = d;
    let bytes = 128 + 2 * key.length;
    if (d.action === "redact") {
      // A copy: the guardrail keeps its objects. The content is copied flat: a string built by concatenating
      // slices of the checked text can keep that (unredacted) text reachable for as long as the entry lives.
      decision = { action: "redact", content: flatCopy(d.content), entities: d.entities.map((e) => ({ ...e })) };
      // ~80 bytes per entity object (header, four fields, the replacement string shared)
      bytes += 2 * d.content.length + 80 * d.entities.length;
    } else if (d.action === "block") {
      // the evidence as the pipeline would pass it on (checked, rounded; a fresh object), so a cached block explains itself too
      const evidence = checkedEvidence(d.evidence);
      const patients = checkedPatients(d.patients);
      decision = { action: "block", reason: d.reason, ...(evidence && { evidence }), ...(patients && { patients }) };
      bytes += 2 * d.reason.length + (evidence ? 2 * evidence.class.length + 64 : 0) + (patients ? patients.reduce((n, id) => n + 2 * id.length + 16, 0) : 0);
    } else {
      decision = ALLOW;
    }
    if (bytes > this.#scopeBytes) return;
    if (this.#map.has(key)) this.#evict(key);
    this.#map.set(key, { decision, bytes, scope });
    this.#bytes += bytes;
    let u = this.#scopes.get(scope);
    if (u === undefined) this.#scopes.set(scope, (u = { keys: new Set(), bytes: 0 }));
    u.keys.add(key);
    u.bytes += bytes;
    // this caller's share first (its own least recently used entries), then the whole cache's limits
    while (u.keys.size > this.#scopeEntries || u.bytes > this.#scopeBytes) {
      this.#evict(u.keys.values().next().value!);
      this.evictions++;
    }
    while (this.#map.size > this.#maxEntries || this.#bytes > this.#maxBytes) {
      this.#evict(this.#map.keys().next().value!);
      this.evictions++;
    }
  }

  stats(): DecisionCacheStats {
    return { entries: this.#map.size, bytes: this.#bytes, hits: this.hits, misses: this.misses, evictions: this.evictions };
  }
}

const ALLOW: Decision = Object.freeze({ action: "allow" });

/**
 * The caller of a request, for the decision cache, both as unambiguous strings:
 * - `key`: whose entries these are: the transport session and the principal (issuer, tenant, client, subject);
 * - `share`: whose share of the limits they count against: the principal across all its sessions (so opening more
 *   sessions does not buy a larger share), or the session when there is no principal identity.
 * Undefined (no caching) when there is neither a session id nor a principal identity.
 */
function callerScope(c: GuardrailContext): { key: string; share: string } | undefined {
  const p = c.principal;
  const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : null);
  const session = str(c.sessionId);
  const principal = [str(p?.issuer), str(p?.tenant), str(p?.clientId), str(p?.sub)];
  const hasPrincipal = principal[2] !== null || principal[3] !== null;
  if (session === null && !hasPrincipal) return undefined;
  return { key: JSON.stringify([session, ...principal]), share: hasPrincipal ? JSON.stringify(["p", ...principal]) : JSON.stringify([session]) };
}

/**
 * SHA-256 of a text item. UTF-8 encodes well-formed text injectively; text with lone surrogates (which UTF-8 would
 * replace by U+FFFD) is hashed as its UTF-16 code units instead, under a different prefix.
 */
function textDigest(text: string): string {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed()
    ? hash("sha256", text, "base64")
    : "~" + createHash("sha256").update(text, "utf16le").digest("base64");
}

/** A well-formed text decision: `allow`, `block` with a reason, or `redact` with its content and entities. */
/** `e` when it is a well-formed {@link DecisionEvidence} (finite scores in 0..1, a code-like class), else undefined. */
function checkedEvidence(e: unknown): DecisionEvidence | undefined {
  if (typeof e !== "object" || e === null) return undefined;
  const x = e as Partial<Record<keyof DecisionEvidence, unknown>>;
  const unit = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 1;
  if (!unit(x.score) || !unit(x.threshold) || typeof x.class !== "string" || !/^[a-z0-9_]{1,40}$/.test(x.class)) return undefined;
  return { score: Math.round(x.score * 1000) / 1000, threshold: Math.round(x.threshold * 1000) / 1000, class: x.class };
}

/**
 * A block's `patients` as the pipeline passes them on: the FHIR ids among them (at most 64, no duplicates; a copy), or
 * undefined when none.
 */
function checkedPatients(patients: unknown): string[] | undefined {
  if (!Array.isArray(patients)) return undefined;
  const ids = [...new Set(patients.filter((id): id is string => typeof id === "string" && FHIR_ID.test(id)))].slice(0, 64);
  return ids.length > 0 ? ids : undefined;
}

function isDecision(d: unknown): d is Decision {
  if (typeof d !== "object" || d === null) return false;
  const x = d as { action?: unknown; reason?: unknown; content?: unknown; entities?: unknown };
  if (x.action === "allow") return true;
  if (x.action === "block") return typeof x.reason === "string";
  return x.action === "redact" && typeof x.content === "string" && Array.isArray(x.entities);
}

/** A well-formed structural decision: `allow`, `block` with a reason, or `modify` with a payload and changes. */
function isExchangeDecision(d: unknown): d is ExchangeDecision {
  if (typeof d !== "object" || d === null) return false;
  const x = d as { action?: unknown; reason?: unknown; changes?: unknown };
  if (x.action === "allow") return true;
  if (x.action === "block") return typeof x.reason === "string";
  return x.action === "modify" && "payload" in x && Array.isArray(x.changes);
}

function isPromise<T>(v: T | Promise<T>): v is Promise<T> {
  return typeof (v as { then?: unknown } | null)?.then === "function";
}

function withTimeout<T>(p: Promise<T>, ms: number, ac: AbortController): Promise<T> {
  if (ms <= 0) {
    // the check's own promise settles after the abort: observed here, or it would be an unhandled rejection
    p.catch(() => undefined);
    ac.abort();
    return Promise.reject(new GuardrailTimeout());
  }
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => {
      ac.abort();
      reject(new GuardrailTimeout());
    }, ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error("guardrail failed"));
      },
    );
  });
}

/**
 * What one guardrail's run over one payload hands the guardrail, built on first use: its contexts and its signal (the
 * request's signal combined with this guardrail's timeout; built only when read, as most checks never read it).
 */
class EntryRun {
  #ac: AbortController | undefined;
  #signal: AbortSignal | undefined;
  #unlink: (() => void) | undefined;
  #ctx: GuardrailContext | undefined;

  constructor(
    private readonly parent: GuardrailContext,
    private readonly stage: GuardrailStage,
  ) {}

  controller(): AbortController {
    return (this.#ac ??= new AbortController());
  }

  /**
   * The controller's signal, also aborted (with the request's reason) when the request's signal aborts first. A
   * listener forwards the request's abort until {@link EntryRun.release}: AbortSignal.any cost ~17 µs per call on
   * Node 20 (measured), a listener ~1 µs.
   */
  signal(): AbortSignal {
    if (this.#signal) return this.#signal;
    const ac = this.controller();
    const parent = this.parent.signal;
    if (parent?.aborted) ac.abort(parent.reason);
    else if (parent) this.#unlink = listenForAbort(parent, () => ac.abort(parent.reason));
    return (this.#signal = ac.signal);
  }

  abort(): void {
    this.#ac?.abort();
  }

  /** The guardrail has finished with this payload: stop forwarding the request's abort. */
  release(): void {
    this.#unlink?.();
    this.#unlink = undefined;
  }

  /** The context of `checkExchange`: the caller's, at this stage, with this guardrail's signal. */
  context(): GuardrailContext {
    if (this.#ctx === undefined) {
      const ctx = copyMembers(new CheckContext(this), this.parent);
      ctx.stage = this.stage;
      this.#ctx = ctx;
    }
    return this.#ctx;
  }

  /** The context of `check` for one text item. */
  textContext(location: TextCheckContext["location"]): TextCheckContext {
    const ctx = copyMembers(new CheckContext(this), this.parent) as unknown as TextCheckContext;
    ctx.stage = this.stage;
    ctx.location = location;
    return ctx;
  }
}

/**
 * A context handed to a guardrail: the caller's members (copied by {@link copyMembers}), and `signal`, an accessor on
 * this class that builds the guardrail's signal on first read ({@link EntryRun.signal}, which follows the caller's own
 * `signal`). Built this way rather than as an object literal that spreads the caller's context and defines a getter
 * (~2 µs per text item on Node 20, measured: 15 % of a cached stage's time; this, ~0.16 µs). `signal` is therefore
 * inherited, not an own member: `{ ...ctx }` leaves it out (read `ctx.signal`).
 */
class CheckContext {
  readonly #run: EntryRun;

  constructor(run: EntryRun) {
    this.#run = run;
  }

  get signal(): AbortSignal {
    return this.#run.signal();
  }
}

/**
 * Copies the caller's own enumerable members onto `to` as a spread would (a member named `__proto__` becomes an own
 * member, never the prototype), except `signal` (the guardrail's own is {@link CheckContext}'s).
 */
function copyMembers<T extends object>(to: T, from: object): T & GuardrailContext {
  const src = from as Record<string | symbol, unknown>;
  const dst = to as Record<string | symbol, unknown>;
  for (const k of Object.keys(src)) {
    if (k === "signal") continue;
    if (k === "__proto__") Object.defineProperty(dst, k, { value: src[k], enumerable: true, writable: true, configurable: true });
    else dst[k] = src[k];
  }
  for (const k of Object.getOwnPropertySymbols(src)) if (Object.prototype.propertyIsEnumerable.call(src, k)) dst[k] = src[k];
  return to as T & GuardrailContext;
}

/** A replacement made in a text, in current and original coordinates (for offset mapping). */
interface Region {
  cs: number;
  ce: number;
  os: number;
  oe: number;
}

/**
 * Ordered guardrails per stage. `evaluate` walks an MCP params/result object, runs every guardrail on
 * every text item (every message and the system prompt, results, elicitation text, tool arguments and
 * resource text) and on the exchange structure, and returns the same shape, redacted where redacted.
 *
 * Semantics: guardrails run in order; a block stops evaluation; a redaction is written back before the
 * next guardrail runs (redactions compose); an error or timeout blocks (`guardrail_error`,
 * `guardrail_timeout`) unless the entry's `failMode` is `"open"`, in which case it is recorded and
 * skipped. The input payload is never mutated: a copy is made on the first change.
 *
 * Decision cache (on by default, {@link PipelineConfig.decisionCache}): the text decisions of guardrails that declare
 * `cacheable: true` are kept, keyed by (caller scope, side, stage, guardrail entry, `location.kind`, `location.role`,
 * SHA-256 of the text), and an identical text item is then answered from the cache instead of calling `check`. The
 * caller scope is the context's `sessionId` together with its principal (issuer, tenant, client id, subject); without
 * a session id and a principal identity nothing is cached. The scope is part of the key on purpose: a decision
 * computed for one caller is never reused for another, so no caller can learn from response times whether another
 * caller's text was seen. Only decisions of checks that finished without error and within the guardrail's time budget
 * are cached: allow, redact (the redacted text counts against the byte limit) and block (the same text blocks the
 * same way); errors and timeouts never are. Structural checks (`checkExchange`) and {@link inspectText} are never
 * cached. Every guardrail still yields its decision summary; `cached` counts the items answered from the cache.
 */
export class GuardrailPipeline implements GuardrailRunner {
  readonly #stages: Record<GuardrailStage, Entry[]>;
  readonly #cache: DecisionCache | undefined;

  /**
   * @param config - guardrails per stage, and the decision cache's limits (or `false` to turn it off)
   * @throws Error when a guardrail is placed at a stage it does not support, a timeout is not positive, a guardrail that
   *   requires it (`requiresFailClosed`, e.g. phi-redaction) is given `failMode: "open"`, or a decision cache limit is
   *   not an integer > 0
   */
  constructor(config: PipelineConfig = {}) {
    const build = (stage: GuardrailStage, list: PipelineEntry[] | undefined): Entry[] =>
      (list ?? []).map((e) => {
        if (e.guardrail.stages && !e.guardrail.stages.includes(stage)) {
          throw new Error(`guardrail "${e.guardrail.name}" does not run at stage "${stage}"`);
        }
        if (!e.guardrail.check && !e.guardrail.checkExchange) {
          throw new Error(`guardrail "${e.guardrail.name}" has neither check nor checkExchange`);
        }
        const timeoutMs = e.timeoutMs ?? DEFAULT_GUARDRAIL_TIMEOUT_MS;
        if (!(timeoutMs > 0)) throw new Error(`guardrail "${e.guardrail.name}": timeoutMs must be > 0`);
        if (e.failMode === "open" && e.guardrail.requiresFailClosed) {
          throw new Error(`guardrail "${e.guardrail.name}": failMode must be "closed" (a failed or timed-out check would pass what it redacts)`);
        }
        return { guardrail: e.guardrail, timeoutMs, failMode: e.failMode ?? "closed" };
      });
    this.#stages = { input: build("input", config.input), output: build("output", config.output) };
    const dc = config.decisionCache ?? true;
    this.#cache = dc === false ? undefined : new DecisionCache(dc === true ? {} : dc);
  }

  /** Counters of the decision cache; undefined when it is turned off. */
  decisionCacheStats(): DecisionCacheStats | undefined {
    return this.#cache?.stats();
  }

  /** The caller scope of the last session seen per frozen principal object (a verified principal is reused across requests). */
  readonly #callers = new WeakMap<object, { sessionId: string | undefined; scope: ReturnType<typeof callerScope> }>();

  #callerScope(context: GuardrailContext): ReturnType<typeof callerScope> {
    const p = context.principal;
    // only a frozen principal (the JWT and introspection authenticators' are) can be remembered by identity
    if (p === undefined || !Object.isFrozen(p)) return callerScope(context);
    const memo = this.#callers.get(p);
    if (memo !== undefined && memo.sessionId === context.sessionId) return memo.scope;
    const scope = callerScope(context);
    this.#callers.set(p, { sessionId: context.sessionId, scope });
    return scope;
  }

  names(stage: GuardrailStage): string[] {
    return this.#stages[stage].map((e) => e.guardrail.name);
  }

  async evaluate<T>(stage: GuardrailStage, payload: T, context: GuardrailContext): Promise<GuardrailOutcome<T>> {
    const root = { value: payload as unknown };
    let walk: Walk = walkPayload(root);
    // Fail closed: text nested deeper than the walker visits would reach the handler (or the caller) unchecked.
    if (walk.tooDeep && this.#stages[stage].length > 0) return this.#block(payload, [], "pipeline", "payload_too_deep");
    let copied = false;
    let changed = false;
    const decisions: GuardrailDecisionSummary[] = [];
    // entities replaced per type over the whole payload (for the result's `_meta`, REDACTIONS_META_KEY)
    const redactions: Record<string, number> = {};
    const cache = this.#cache;
    // the key prefix of this caller and stage; undefined: nothing is cached in this call
    const caller = cache === undefined ? undefined : this.#callerScope(context);
    // key prefix of every cached decision in this call: caller, side and stage
    const scope = caller === undefined ? undefined : `${caller.key}|${context.side}|${stage}|`;
    const share = caller?.share;
    // SHA-256 per slot, reused by every cacheable guardrail while the slot's text is unchanged
    let digests: Array<[string, string] | undefined> = [];

    const entries = this.#stages[stage];
    for (let index = 0; index < entries.length; index++) {
      const entry = entries[index]!;
      const g = entry.guardrail;
      const start = performance.now();
      // The per-guardrail signal (request signal + this guardrail's timeout) and the contexts are built only when a
      // guardrail is called and reads them: a signal costs µs and GC work per call, the built-in checks
      // are synchronous, and an item answered from the decision cache needs neither.
      let run: EntryRun | undefined;
      let entityTypes: Set<string> | undefined;
      let note: string | undefined;
      // items of this guardrail answered from the cache, and fresh decisions to cache once it has finished cleanly
      let hits = 0;
      let fresh: Array<[string, Decision]> | undefined;
      try {
        if (g.checkExchange) {
          let d = g.checkExchange(walk.view, (run ??= new EntryRun(context, stage)).context());
          if (isPromise(d)) d = await withTimeout(d, entry.timeoutMs - (performance.now() - start), run.controller());
          if (!isExchangeDecision(d)) throw new Error("not a decision");
          if (d.action === "block") return this.#block(root.value as T, decisions, g.name, d.reason, 0, undefined, checkedPatients(d.patients));
          if (d.action === "modify") {
            root.value = d.payload;
            walk = walkPayload(root);
            digests = [];
            copied = false;
            changed = true;
            for (const c of d.changes) (entityTypes ??= new Set()).add(c);
          }
        }
        if (g.check) {
          const keyPrefix = scope !== undefined && g.cacheable === true ? `${scope}${index}|` : undefined;
          for (let i = 0; i < walk.slots.length; i++) {
            const slot = walk.slots[i]!;
            const text = slot.holder[slot.key] as string;
            let key: string | undefined;
            let d: Decision | undefined;
            if (keyPrefix !== undefined) {
              let memo = digests[i];
              if (memo === undefined || memo[0] !== text) digests[i] = memo = [text, textDigest(text)];
              const role = slot.location.role;
              key = `${keyPrefix}${slot.location.kind}|${role === undefined ? "-" : JSON.stringify(role)}|${memo[1]}`;
              d = cache!.get(key);
              if (d === undefined) cache!.misses++;
              else {
                cache!.hits++;
                hits++;
              }
            }
            if (d === undefined) {
              run ??= new EntryRun(context, stage);
              const r = g.check(text, run.textContext(slot.location));
              d = isPromise(r) ? await withTimeout(r, entry.timeoutMs - (performance.now() - start), run.controller()) : r;
              // anything but allow, redact (with its content) or block is an error: blocked (fail closed) or skipped
              if (!isDecision(d)) throw new Error("not a decision");
              if (key !== undefined) (fresh ??= []).push([key, d]);
            }
            if (d.action === "block") {
              if (fresh !== undefined && performance.now() - start <= entry.timeoutMs) for (const [k, v] of fresh) cache!.set(k, v, share!);
              return this.#block(root.value as T, decisions, g.name, d.reason, hits, checkedEvidence(d.evidence), checkedPatients(d.patients));
            }
            if (d.action === "redact" && d.content !== text) {
              if (!copied) {
                root.value = structuredClone(root.value);
                walk = walkPayload(root);
                copied = true;
              }
              const s = walk.slots[i]!;
              s.holder[s.key] = d.content;
              changed = true;
              entityTypes ??= new Set();
              for (const e of d.entities) {
                entityTypes.add(e.type);
                redactions[e.type] = (redactions[e.type] ?? 0) + 1;
              }
            }
          }
        }
        if (performance.now() - start > entry.timeoutMs) throw new GuardrailTimeout();
        // finished without error and within its budget: its fresh decisions may be reused
        if (fresh !== undefined) for (const [k, v] of fresh) cache!.set(k, v, share!);
      } catch (e) {
        const reason = e instanceof GuardrailTimeout ? "guardrail_timeout" : "guardrail_error";
        run?.abort();
        if (entry.failMode === "closed") return this.#block(root.value as T, decisions, g.name, reason);
        note = reason;
      } finally {
        run?.release();
      }
      const summary: GuardrailDecisionSummary = { guardrail: g.name, action: entityTypes !== undefined && entityTypes.size > 0 ? "redact" : "allow" };
      if (summary.action === "redact") summary.entityTypes = [...entityTypes!];
      if (note !== undefined) summary.reason = note;
      if (hits > 0) summary.cached = hits;
      decisions.push(summary);
    }
    return changed ? { action: "redact", payload: root.value as T, decisions, redactions } : { action: "allow", payload: root.value as T, decisions };
  }

  #block<T>(payload: T, decisions: GuardrailDecisionSummary[], guardrail: string, reason: string, cached = 0, evidence?: DecisionEvidence, patients?: string[]): GuardrailOutcome<T> {
    decisions.push({ guardrail, action: "block", reason, ...(evidence && { evidence }), ...(cached > 0 ? { cached } : {}) });
    return { action: "block", payload, decisions, blocked: { guardrail, reason, ...(evidence && { evidence }), ...(patients && { patients }) } };
  }

  /**
   * Runs a stage's text checks over one string and reports every redacted entity in the offsets of the
   * ORIGINAL string (redactions of later guardrails are mapped back through earlier ones). Structural
   * checks (`checkExchange`) are skipped. Used by `hmcp guardrails eval` to score detection quality.
   */
  async inspectText(stage: GuardrailStage, text: string, context?: Partial<GuardrailContext>): Promise<TextInspection> {
    const base: GuardrailContext = { side: "server", method: "sampling/createMessage", ...context, stage };
    const decisions: GuardrailDecisionSummary[] = [];
    let regions: Region[] = [];
    let current = text;
    for (const entry of this.#stages[stage]) {
      const g = entry.guardrail;
      if (!g.check) continue;
      const start = performance.now();
      const ac = new AbortController();
      try {
        let d: Decision | Promise<Decision> = g.check(current, { ...base, signal: ac.signal, location: { path: "", kind: "message", role: "user" } });
        if (isPromise(d)) d = await withTimeout(d, entry.timeoutMs - (performance.now() - start), ac);
        if (!isDecision(d)) throw new Error("not a decision");
        if (d.action === "block") {
          const evidence = checkedEvidence(d.evidence);
          decisions.push({ guardrail: g.name, action: "block", reason: d.reason, ...(evidence && { evidence }) });
          return { action: "block", text: current, entities: [], decisions, blocked: { guardrail: g.name, reason: d.reason, ...(evidence && { evidence }) } };
        }
        if (d.action === "redact" && d.content !== current) {
          regions = composeRegions(regions, current, d.content, d.entities);
          current = d.content;
          decisions.push({ guardrail: g.name, action: "redact", entityTypes: [...new Set(d.entities.map((e) => e.type))] });
        } else {
          decisions.push({ guardrail: g.name, action: "allow" });
        }
      } catch (e) {
        const reason = e instanceof GuardrailTimeout ? "guardrail_timeout" : "guardrail_error";
        if (entry.failMode === "closed") {
          decisions.push({ guardrail: g.name, action: "block", reason });
          return { action: "block", text: current, entities: [], decisions, blocked: { guardrail: g.name, reason } };
        }
        decisions.push({ guardrail: g.name, action: "allow", reason });
      }
    }
    const entities: RedactedEntity[] = regions.map((r) => ({ type: typeOf(current, r), start: r.os, end: r.oe }));
    return { action: regions.length > 0 ? "redact" : "allow", text: current, entities, decisions };
  }
}

function typeOf(text: string, r: Region): string {
  const m = /^\[([A-Z_]+)\]$/.exec(text.slice(r.cs, r.ce));
  return m ? m[1]! : "REDACTED";
}

/** Maps a position of the current text to the original text. */
function toOriginal(regions: Region[], pos: number, isEnd: boolean): number {
  let delta = 0;
  for (const r of regions) {
    if (pos <= r.cs) break;
    if (pos < r.ce) return isEnd ? r.oe : r.os;
    delta = r.oe - r.ce;
  }
  return pos + delta;
}

/**
 * Given the regions already replaced (current → original), the text before and after a guardrail's
 * redaction and its entities (offsets in `before`), returns the regions of `after` mapped to the original.
 */
function composeRegions(regions: Region[], before: string, after: string, entities: RedactedEntity[]): Region[] {
  const sorted = [...entities].sort((a, b) => a.start - b.start);
  const fresh: Array<Region & { be: number }> = [];
  let shift = 0; // after-position minus before-position for unchanged text
  let lastEnd = 0;
  for (let i = 0; i < sorted.length; i++) {
    const e = sorted[i]!;
    if (e.start < lastEnd) continue; // overlaps the previous entity
    const ns = e.start + shift;
    let ne: number;
    if (e.replacement !== undefined) {
      ne = ns + e.replacement.length;
    } else {
      let next = before.length;
      for (let j = i + 1; j < sorted.length; j++) if (sorted[j]!.start >= e.end) { next = sorted[j]!.start; break; }
      const gap = before.slice(e.end, Math.min(next, e.end + 16));
      const found = gap.length > 0 ? after.indexOf(gap, ns) : after.length - (before.length - e.end);
      ne = found < ns ? ns : found;
    }
    fresh.push({ cs: ns, ce: ne, os: toOriginal(regions, e.start, false), oe: toOriginal(regions, e.end, true), be: e.end });
    shift = ne - e.end;
    lastEnd = e.end;
  }
  const merged: Region[] = fresh.map(({ cs, ce, os, oe }) => ({ cs, ce, os, oe }));
  for (const r of regions) {
    if (fresh.some((f) => f.os <= r.os && f.oe >= r.oe)) continue;
    let s = 0;
    for (const f of fresh) if (f.be <= r.cs) s = f.ce - f.be;
    merged.push({ cs: r.cs + s, ce: r.ce + s, os: r.os, oe: r.oe });
  }
  return merged.sort((a, b) => a.cs - b.cs);
}
