/**
 * Sealed `requestState` for MCP 2026-07-28 multi round-trip requests (specification 2026-07-28, "Multi Round-Trip
 * Requests": servers MUST protect the integrity of a `requestState` that influences authorization or business logic,
 * SHOULD bind it to the principal, an expiry and the originating request, and MUST enforce single use server-side
 * where a step must not repeat).
 *
 * HMCP seals the state as a JWE (RFC 7516, compact serialization) with `alg: "dir"` and `enc: "A256GCM"` (AEAD: the
 * client can neither read nor change it), through jose's `EncryptJWT` / `jwtDecrypt`, with these claims:
 * - `exp` / `iat` (RFC 7519): the state expires `ttlSeconds` after it was minted;
 * - `jti`: a fresh random id, claimed once in a {@link RequestStateStore} when the state comes back (single use);
 * - `bnd`: the SHA-256 of the binding (agent, method, tool / prompt / resource, the arguments' digest, the principal
 *   and the patient launch context): state presented with any other binding is refused;
 * - `hmcp`: the flow's journal (the answers and step results so far), which only this server reads.
 *
 * Keys come from configuration (`requestState.keys`, each at least 32 bytes): the first seals, every one opens, so a key
 * is rotated by putting the new one first and dropping the old one after `ttlSeconds`. Each key is stretched with
 * HKDF-SHA256 to the 256-bit AEAD key and named in the JWE header (`kid`, a digest of the derived key).
 * Why jose and not the SDK's `createRequestStateCodec`: that codec signs (HMAC) but does not encrypt, so the journal,
 * which carries the clinician's answers and the handler's step results, would be readable by the client.
 */
import { createHash, hkdfSync, randomBytes, randomUUID } from "node:crypto";
import { EncryptJWT, jwtDecrypt, errors as joseErrors } from "jose";
import { HMCPConfigError, refuseUnknownOptions } from "../protocol/index.js";

/** Why a `requestState` was refused (the `data.reason` of the -32602 error and of the audit record). */
export type RequestStateRefusal =
  /** Not a state this agent sealed: malformed, tampered with, or sealed with a key no longer configured. */
  | "request_state_invalid"
  /** Sealed more than `ttlSeconds` ago. */
  | "request_state_expired"
  /** Sealed for another principal, patient context, agent, method, tool or arguments. */
  | "request_state_mismatch"
  /** Presented before: every state is single-use. */
  | "request_state_replayed";

/** A refused `requestState` (mapped to JSON-RPC -32602 with `data.reason`). @internal */
export class RequestStateError extends Error {
  /** The sealed journal, when the state could be opened (expired, bound elsewhere, used before): for the audit record. */
  readonly journal: unknown;
  constructor(readonly reason: RequestStateRefusal, journal?: unknown) {
    super(`requestState refused: ${reason}`);
    this.name = "RequestStateError";
    this.journal = journal;
  }
}

/** An opened state, not yet claimed: {@link RequestStateSealer.claim} it once the retry is found fit to run. */
export interface OpenedRequestState {
  journal: unknown;
  /** The state's `jti` and expiry (ms since the epoch). */
  id: string;
  expiresAt: number;
}

/**
 * Where the ids (`jti`) of the `requestState`s already presented are kept, so that each is accepted once. Share one store
 * (e.g. a database table) between every instance that may receive a retry; the default is this process's memory.
 */
export interface RequestStateStore {
  /**
   * Claims `id` until `expiresAt` (ms since the epoch; after it the state is refused as expired anyway, so the id may be
   * forgotten). Must be atomic: of two concurrent claims of one id, exactly one resolves true.
   * `principal` is the claiming caller's key (issuer, tenant, client, subject as JSON; absent without authentication),
   * for a per-principal bound; a store may ignore it.
   * @returns true when `id` was not claimed before, false when it was (a replay)
   */
  claim(id: string, expiresAt: number, principal?: string): boolean | Promise<boolean>;
}

/** Options of {@link MemoryRequestStateStore}. */
export interface MemoryRequestStateStoreOptions {
  /**
   * Most ids held at once, a count: the states claimed and not yet expired, i.e. the input rounds answered on this
   * process within the last `ttlSeconds` (default 600 s). Default 100,000 (about 15 MiB of heap: 14.3 MiB measured for
   * 100,000 held ids with their principals). Expired ids are dropped as claims arrive: all of them at least once a
   * second, and at the bound before a claim is refused (the earliest claimed at once; all of them when any held id has
   * expired, at most every 20 ms: ids are held in claim order, and a state sealed early but answered late expires
   * before ids claimed ahead of it). At the bound a claim is refused with {@link RequestStateStoreFull}: the retry gets JSON-RPC
   * `-32000`, `data.reason` `too_many_input_rounds` (audited, outcome `failed`) before its handler runs, and its state
   * stays usable until it expires (retry later). An unexpired id is never dropped to make room: its state could be
   * replayed.
   */
  maxEntries?: number;
  /**
   * Most ids held at once for one principal (issuer, tenant, client, subject), a count: so that one caller answering
   * rounds cannot fill `maxEntries` and hold everyone else's rounds off for `ttlSeconds`. Default 10,000. At the bound
   * that caller's retry is refused as at `maxEntries` (`-32000` `too_many_input_rounds`, audited, the state usable);
   * other principals are served. Claims without a principal (an agent without authentication) count against
   * `maxEntries` only.
   */
  maxEntriesPerPrincipal?: number;
}

const MEMORY_STORE_OPTIONS: ReadonlySet<string> = new Set(["maxEntries", "maxEntriesPerPrincipal"]);
const DEFAULT_MAX_ENTRIES = 100_000;
/** At the bound, all held ids are swept for expired ones at most this often, ms. */
const BOUND_SWEEP_MS = 20;
const DEFAULT_MAX_PER_PRINCIPAL = 10_000;

/** One principal's count of held ids (its key kept once, not once per id). */
interface Holder {
  key: string;
  n: number;
}

/**
 * Thrown by the claim of both stores HMCP ships, {@link MemoryRequestStateStore.claim} and
 * `PostgresRequestStateStore.claim`, at their `maxEntries` bound (scope "agent") or `maxEntriesPerPrincipal` bound
 * (scope "principal"). A store of your own may throw it too: the pipeline answers it with `-32000`
 * `too_many_input_rounds`, where any other error of a store is `-32603`.
 */
export class RequestStateStoreFull extends Error {
  /**
   * @param maxEntries - the bound reached
   * @param scope - whose: the whole store ("agent", `maxEntries`) or the claiming principal's share ("principal",
   *   `maxEntriesPerPrincipal`)
   */
  constructor(
    readonly maxEntries: number,
    readonly scope: "agent" | "principal" = "agent",
  ) {
    super(`requestState store full: ${maxEntries} unexpired ids held${scope === "principal" ? " for this principal" : ""}`);
    this.name = "RequestStateStoreFull";
  }
}

/**
 * A {@link RequestStateStore} in this process's memory: ids are dropped once expired (swept as new ones arrive, and at
 * the bound before a claim is refused: see {@link MemoryRequestStateStoreOptions.maxEntries}), and at
 * most `maxEntries` are held, `maxEntriesPerPrincipal` of one principal (see {@link MemoryRequestStateStoreOptions}). Right for one instance; several instances
 * behind a load balancer need a shared store.
 */
export class MemoryRequestStateStore implements RequestStateStore {
  /**
   * Held ids in claim order. Not expiry order: a state expires `ttlSeconds` after it was sealed, not claimed, so one
   * sealed early and answered late expires before ids claimed ahead of it.
   */
  readonly #ids = new Map<string, { expiresAt: number; holder: Holder | undefined }>();
  /** Ids held per principal key (one {@link Holder} per principal, shared by its ids). */
  readonly #held = new Map<string, Holder>();
  readonly #maxEntries: number;
  readonly #maxPerPrincipal: number;
  #nextSweep = 0;
  /** No held id expires before this (ms; a lower bound: an id it was taken from may be gone). */
  #earliest = Infinity;
  /** When the last sweep at the bound ran (ms). */
  #boundSweepAt = -Infinity;

  /**
   * @throws HMCPConfigError on an unknown option (a misspelt `maxEntires` is refused with a "did you mean" hint, not
   *   silently given the default), or when `maxEntries` or `maxEntriesPerPrincipal` is not a positive integer
   */
  constructor(options: MemoryRequestStateStoreOptions = {}) {
    refuseUnknownOptions("MemoryRequestStateStore", options, MEMORY_STORE_OPTIONS);
    const max = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    if (!(Number.isSafeInteger(max) && max > 0)) throw new HMCPConfigError("MemoryRequestStateStore: 'maxEntries' must be a positive integer", "maxEntries");
    const perPrincipal = options.maxEntriesPerPrincipal ?? DEFAULT_MAX_PER_PRINCIPAL;
    if (!(Number.isSafeInteger(perPrincipal) && perPrincipal > 0)) {
      throw new HMCPConfigError("MemoryRequestStateStore: 'maxEntriesPerPrincipal' must be a positive integer", "maxEntriesPerPrincipal");
    }
    this.#maxEntries = max;
    this.#maxPerPrincipal = perPrincipal;
  }

  /**
   * @throws RequestStateStoreFull when `id` is not held and `maxEntries` unexpired ids are held (scope "agent"), or
   *   `maxEntriesPerPrincipal` of `principal` (scope "principal"; not counted without `principal`)
   */
  claim(id: string, expiresAt: number, principal?: string): boolean {
    const now = Date.now();
    if (now >= this.#nextSweep) {
      this.#sweep(now);
      this.#nextSweep = now + 1_000;
    }
    const held = this.#ids.get(id);
    if (held !== undefined && held.expiresAt > now) return false;
    if (held === undefined && this.#full(principal)) {
      // full: drop the expired ids at the head (the oldest claims) before refusing; a few at most between sweeps
      for (const [k, e] of this.#ids) {
        if (e.expiresAt > now) break;
        this.#forget(k, e.holder);
      }
      // still full, and an id behind an unexpired one has expired (sealed early, claimed late): sweep them all before
      // refusing; at most every 20 ms (a sweep visits every held id), and only when one is known to have expired
      if (this.#full(principal) && now >= this.#earliest && now - this.#boundSweepAt >= BOUND_SWEEP_MS) {
        this.#boundSweepAt = now;
        this.#sweep(now);
      }
      if (this.#ids.size >= this.#maxEntries) throw new RequestStateStoreFull(this.#maxEntries);
      if (this.#heldBy(principal) >= this.#maxPerPrincipal) throw new RequestStateStoreFull(this.#maxPerPrincipal, "principal");
    }
    if (held !== undefined) this.#forget(id, held.holder);
    let holder: Holder | undefined;
    if (principal !== undefined) {
      holder = this.#held.get(principal);
      if (!holder) this.#held.set(principal, (holder = { key: principal, n: 0 }));
      holder.n++;
    }
    this.#ids.set(id, { expiresAt, holder });
    if (expiresAt < this.#earliest) this.#earliest = expiresAt;
    return true;
  }

  /** Whether a new id of `principal` would be over a bound. */
  #full(principal: string | undefined): boolean {
    return this.#ids.size >= this.#maxEntries || this.#heldBy(principal) >= this.#maxPerPrincipal;
  }

  /** Drops every expired id, and notes the earliest expiry of those left. */
  #sweep(now: number): void {
    let earliest = Infinity;
    for (const [k, e] of this.#ids) {
      if (e.expiresAt <= now) this.#forget(k, e.holder);
      else if (e.expiresAt < earliest) earliest = e.expiresAt;
    }
    this.#earliest = earliest;
  }

  /** Ids held for `principal`; 0 without one (not counted). */
  #heldBy(principal: string | undefined): number {
    return principal === undefined ? 0 : (this.#held.get(principal)?.n ?? 0);
  }

  #forget(id: string, holder: Holder | undefined): void {
    this.#ids.delete(id);
    if (holder !== undefined && --holder.n === 0) this.#held.delete(holder.key);
  }

  /** Ids held now (for tests and metrics). */
  get size(): number {
    return this.#ids.size;
  }
}

/** Options of the sealed `requestState` (`HMCPServerOptions.requestState`). */
export interface RequestStateOptions {
  /**
   * Sealing keys, each a string (UTF-8) or bytes of at least 32 bytes, and as random as 32 random bytes (e.g.
   * `openssl rand -base64 32`: HKDF does not stretch a passphrase); the first seals, all open (rotation: put the new
   * key first, drop the old one after `ttlSeconds`). Every instance that may receive a retry needs the same keys.
   * Default: one random key per process (a retry must then reach the same process).
   */
  keys?: Array<string | Uint8Array>;
  /** How long a state stays valid, seconds. Default 600 (10 minutes: a clinician's approval takes a while). */
  ttlSeconds?: number;
  /**
   * Single-use ledger. Default: one {@link MemoryRequestStateStore} per process (at most 100,000 unexpired ids). Build it once, outside
   * `createHttpApp`'s `createServer` (which runs per 2026-07-28 request): a store made per server forgets every claim.
   */
  store?: RequestStateStore;
}

const HKDF_INFO = "hmcp requestState A256GCM v1";
/** The JWE `typ` of HMCP's sealed states. */
const STATE_TYP = "hmcp-request-state";
const MIN_KEY_BYTES = 32;
const DEFAULT_TTL_SECONDS = 600;

interface DerivedKey {
  kid: string;
  key: Uint8Array;
}

function derive(secret: string | Uint8Array, index: number): DerivedKey {
  const raw = typeof secret === "string" ? new TextEncoder().encode(secret) : secret;
  if (!(raw instanceof Uint8Array) || raw.byteLength < MIN_KEY_BYTES) {
    throw new HMCPConfigError(`requestState.keys[${index}]: a key must be at least ${MIN_KEY_BYTES} bytes`, `requestState.keys.${index}`);
  }
  const key = new Uint8Array(hkdfSync("sha256", raw, new Uint8Array(0), HKDF_INFO, 32));
  const kid = createHash("sha256").update(key).digest("base64url").slice(0, 12);
  return { kid, key };
}

let processKey: DerivedKey | undefined;
let processStore: MemoryRequestStateStore | undefined;

/**
 * Seals and opens `requestState`s for one server configuration. Built once per options object (createHttpApp builds a
 * server per modern request: they share it).
 * @internal
 */
export class RequestStateSealer {
  readonly #keys: DerivedKey[];
  readonly #ttlSeconds: number;
  readonly #store: RequestStateStore;

  constructor(options: RequestStateOptions = {}) {
    const keys = options.keys;
    if (keys !== undefined && (!Array.isArray(keys) || keys.length === 0)) {
      throw new HMCPConfigError("requestState.keys: expected a non-empty list of keys (the first seals)", "requestState.keys");
    }
    this.#keys = keys?.map(derive) ?? [(processKey ??= derive(randomBytes(32), 0))];
    const ttl = options.ttlSeconds ?? DEFAULT_TTL_SECONDS;
    if (!Number.isInteger(ttl) || ttl < 1 || ttl > 86_400) {
      throw new HMCPConfigError("requestState.ttlSeconds: expected whole seconds from 1 to 86400", "requestState.ttlSeconds");
    }
    this.#ttlSeconds = ttl;
    const store = options.store;
    if (store !== undefined && typeof (store as RequestStateStore).claim !== "function") {
      throw new HMCPConfigError("requestState.store: expected a RequestStateStore (claim)", "requestState.store");
    }
    this.#store = store ?? (processStore ??= new MemoryRequestStateStore());
  }

  get ttlSeconds(): number {
    return this.#ttlSeconds;
  }

  /** Seals `journal` for `binding` (any string; only its SHA-256 is sealed). */
  async seal(journal: unknown, binding: string): Promise<string> {
    const { kid, key } = this.#keys[0]!;
    return new EncryptJWT({ bnd: bindingTag(binding), hmcp: journal })
      .setProtectedHeader({ alg: "dir", enc: "A256GCM", kid, typ: STATE_TYP })
      .setIssuedAt()
      .setExpirationTime(`${this.#ttlSeconds}s`)
      .setJti(randomUUID())
      .encrypt(key);
  }

  /**
   * Opens `state` and checks its binding; does not claim it (see {@link claim}), so a retry refused before it runs
   * (a guardrail block, a malformed answer) leaves the state usable for a corrected retry.
   * @throws RequestStateError: `request_state_invalid` (not sealed by a configured key, or malformed),
   *   `request_state_expired`, `request_state_mismatch` (another binding)
   */
  async open(state: string, binding: string): Promise<OpenedRequestState> {
    let payload;
    try {
      ({ payload } = await jwtDecrypt(state, (header) => {
        const k = this.#keys.find((x) => x.kid === header.kid);
        if (!k) throw new RequestStateError("request_state_invalid");
        return k.key;
      }, { keyManagementAlgorithms: ["dir"], contentEncryptionAlgorithms: ["A256GCM"], typ: STATE_TYP, requiredClaims: ["exp", "jti", "bnd"] }));
    } catch (e) {
      // authenticated but expired: its journal still names the flow, for the refusal's audit record
      if (e instanceof joseErrors.JWTExpired) throw new RequestStateError("request_state_expired", (e.payload as Record<string, unknown>)["hmcp"]);
      throw new RequestStateError("request_state_invalid");
    }
    if (payload["bnd"] !== bindingTag(binding)) throw new RequestStateError("request_state_mismatch", payload["hmcp"]);
    return { journal: payload["hmcp"], id: payload.jti!, expiresAt: payload.exp! * 1000 };
  }

  /**
   * Claims an opened state (single use), right before the retry runs, for `principal` (see {@link RequestStateStore.claim}).
   * @throws RequestStateError `request_state_replayed` (claimed before); whatever the store throws
   *   ({@link RequestStateStoreFull} at its bound)
   */
  async claim(opened: OpenedRequestState, principal?: string): Promise<void> {
    if (!(await this.#store.claim(opened.id, opened.expiresAt, principal))) throw new RequestStateError("request_state_replayed", opened.journal);
  }
}

/**
 * Whether `state` claims to be one HMCP sealed: a JWE compact serialization (five parts) whose protected header says
 * `typ: "hmcp-request-state"`. A state a handler minted itself through the SDK's `inputRequired({ requestState })` does
 * not, and is left to that handler (HMCP's journal then starts afresh, so nothing of HMCP's trusts it).
 */
export function claimsHmcpState(state: string): boolean {
  const dot = state.indexOf(".");
  if (dot <= 0 || state.split(".").length !== 5) return false;
  try {
    const header = JSON.parse(Buffer.from(state.slice(0, dot), "base64url").toString("utf8")) as { typ?: unknown };
    return header.typ === STATE_TYP;
  } catch {
    return false;
  }
}

function bindingTag(binding: string): string {
  return createHash("sha256").update(binding).digest("base64url");
}
