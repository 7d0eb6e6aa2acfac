/**
 * The compact in-memory index of an audit trail that ./trail.ts builds on open: typed-array columns per record (where
 * to read it back, time, outcome, type, interned strings), a posting list per patient, the guardrail blocks, and an
 * open-addressing table from a 32-bit hash of the record id to the record. No record content and no line is kept:
 * records are read back from the trail when shown. Per record: 16 bytes where (source, offset, length), 8 time, 2
 * outcome and type, 12 interned ids (agent, method, sub, fhirUser, client, reason: 2 bytes each, 4 for a field with
 * more than 65,535 distinct values), 4 id hash, 4 time order, 5.3-10.7 id table slots (a power of two, at most 3/4
 * full); plus 4 per patient mention and 8 per guardrail block. Columns grow by doubling while indexing and are trimmed
 * after. Measured: see ./trail.ts.
 */
import type { AuditOutcome, AuditRecordInput } from "../audit/record.js";
import type { ActivityFilter } from "./trail-types.js";

/** Outcomes in column order (the `outcome` column holds the index). */
export const OUTCOMES: readonly AuditOutcome[] = ["allowed", "denied", "blocked", "failed"];
/** Record types in column order. */
export const TYPES: ReadonlyArray<AuditRecordInput["type"]> = ["request", "http", "session.start", "session.end", "token"];
const OUTCOME_ID = new Map<unknown, number>(OUTCOMES.map((o, i) => [o, i]));
const TYPE_ID = new Map<unknown, number>(TYPES.map((t, i) => [t, i]));

/** Distinct strings of one field, numbered from 1 (0 = absent). */
export class Interner {
  private readonly ids = new Map<string, number>();
  readonly values: string[] = [""];

  /** The id of `s`, numbering it when new; 0 for undefined or a non-string. */
  id(s: unknown): number {
    if (typeof s !== "string") return 0;
    let v = this.ids.get(s);
    if (v === undefined) {
      v = this.values.length;
      this.values.push(s);
      this.ids.set(s, v);
    }
    return v;
  }

  /** The id of `s` when seen, else -1 (a filter naming it matches nothing). */
  find(s: string): number {
    return this.ids.get(s) ?? -1;
  }

  /** The distinct values, sorted. */
  sorted(): string[] {
    return this.values.slice(1).sort();
  }
}

/** The fields of a parsed record the index reads; `undefined` when the object is not an audit record. */
interface IndexedFields {
  time: number;
  outcome: number;
  type: number;
}

/** A column of interned ids: 2 bytes per record until a field has more than 65,535 distinct values, then 4. */
export type IdColumn = Uint16Array | Uint32Array;
type IdColumnName = "agent" | "method" | "sub" | "fhirUser" | "client" | "reason";

/** A match test over record numbers, or `false` when the filter names a value never seen (nothing matches). */
export type Match = ((i: number) => boolean) | false;

function grown<T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(a: T, cap: number): T {
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a.subarray(0, Math.min(a.length, cap)));
  return b;
}

/** FNV-1a over the UTF-16 code units of `s`: the id table's hash. */
export function idHash(s: string): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 0x01000193);
  return h >>> 0;
}

/**
 * The index. Build with {@link add} in trail order, then {@link finish}; the query methods work after that.
 * Record numbers (0..size-1) are in trail order (chains in order, entries in seq order).
 */
export class TrailIndex {
  size = 0;
  private cap = 1024;
  src = new Uint32Array(this.cap);
  pos = new Float64Array(this.cap);
  len = new Uint32Array(this.cap);
  /** ms since the epoch */
  time = new Float64Array(this.cap);
  outcome = new Uint8Array(this.cap);
  type = new Uint8Array(this.cap);
  agent: IdColumn = new Uint16Array(this.cap);
  method: IdColumn = new Uint16Array(this.cap);
  /** `actor.sub` and `actor.fhirUser`, both in {@link actors} */
  sub: IdColumn = new Uint16Array(this.cap);
  fhirUser: IdColumn = new Uint16Array(this.cap);
  client: IdColumn = new Uint16Array(this.cap);
  reason: IdColumn = new Uint16Array(this.cap);
  private hash = new Uint32Array(this.cap);
  /** open addressing: record number + 1, 0 = empty; at most 3/4 full */
  private slots = new Uint32Array(2 * this.cap);

  readonly agents = new Interner();
  readonly methods = new Interner();
  readonly actors = new Interner();
  readonly clients = new Interner();
  readonly reasons = new Interner();
  readonly patients = new Interner();
  readonly guardrails = new Interner();
  /** per patient id: record numbers (ascending), `postingSize` of them used until {@link finish} trims */
  private postings: Uint32Array[] = [new Uint32Array(0)];
  private postingSize: number[] = [0];
  /** guardrail blocks: record number and guardrail id of each decision with action "block" */
  private blockRec = new Uint32Array(64);
  private blockGuardrail = new Uint32Array(64);
  blocks = 0;
  /** record numbers by time, then trail order (after finish) */
  order: Uint32Array = new Uint32Array(0);

  /**
   * Indexes one record (a parsed chain entry's `record`) found at `src` (file number, or chain number for a table),
   * `pos` (byte offset of its line, or its seq for a table) and `len` (byte length of its line; 0 for a table). Reads
   * only the indexed fields.
   * @returns false when the object is not an audit record (not indexed).
   */
  add(r: Record<string, unknown>, src: number, pos: number, len: number): boolean {
    const f = fields(r);
    if (f === undefined) return false;
    if (this.size === this.cap) this.grow();
    const i = this.size++;
    this.src[i] = src;
    this.pos[i] = pos;
    this.len[i] = len;
    this.time[i] = f.time;
    this.outcome[i] = f.outcome;
    this.type[i] = f.type;
    this.put("agent", i, this.agents.id(r["agent"]));
    this.put("method", i, this.methods.id(r["method"]));
    const actor = r["actor"] as Record<string, unknown> | undefined;
    this.put("sub", i, this.actors.id(actor?.["sub"]));
    this.put("fhirUser", i, this.actors.id(actor?.["fhirUser"]));
    this.put("client", i, this.clients.id(actor?.["clientId"]));
    this.put("reason", i, this.reasons.id(r["reason"]));
    const h = idHash(r["id"] as string);
    this.hash[i] = h;
    this.insertSlot(i, h);
    for (const p of r["patients"] as unknown[]) {
      if (typeof p !== "string") continue;
      const pid = this.patients.id(p);
      if (pid === this.postings.length) {
        this.postings.push(new Uint32Array(4));
        this.postingSize.push(0);
      }
      let list = this.postings[pid]!;
      const n = this.postingSize[pid]!;
      if (n > 0 && list[n - 1] === i) continue; // a patient named twice in one record
      if (n === list.length) this.postings[pid] = list = grown(list, n * 2);
      list[n] = i;
      this.postingSize[pid] = n + 1;
    }
    const gs = r["guardrails"];
    if (Array.isArray(gs)) {
      for (const g of gs as Array<Record<string, unknown> | null>) {
        if (g?.["action"] !== "block" || typeof g["guardrail"] !== "string") continue;
        if (this.blocks === this.blockRec.length) {
          this.blockRec = grown(this.blockRec, this.blocks * 2);
          this.blockGuardrail = grown(this.blockGuardrail, this.blocks * 2);
        }
        this.blockRec[this.blocks] = i;
        this.blockGuardrail[this.blocks++] = this.guardrails.id(g["guardrail"]);
      }
    }
    return true;
  }

  /** Trims the columns to size and sorts records by time. Call once, after the last {@link add}. */
  finish(): void {
    this.cap = this.size;
    this.src = grown(this.src, this.size);
    this.pos = grown(this.pos, this.size);
    this.len = grown(this.len, this.size);
    this.time = grown(this.time, this.size);
    this.outcome = grown(this.outcome, this.size);
    this.type = grown(this.type, this.size);
    this.agent = grown(this.agent, this.size);
    this.method = grown(this.method, this.size);
    this.sub = grown(this.sub, this.size);
    this.fhirUser = grown(this.fhirUser, this.size);
    this.client = grown(this.client, this.size);
    this.reason = grown(this.reason, this.size);
    this.hash = grown(this.hash, this.size);
    this.postings = this.postings.map((l, pid) => grown(l, this.postingSize[pid]!));
    this.blockRec = grown(this.blockRec, this.blocks);
    this.blockGuardrail = grown(this.blockGuardrail, this.blocks);
    this.order = sortByTime(this.time, this.size);
  }

  /** Bytes held by the typed arrays (not the interned strings). */
  bytes(): number {
    const arrays = [this.src, this.pos, this.len, this.time, this.outcome, this.type, this.agent, this.method, this.sub, this.fhirUser, this.client, this.reason, this.hash, this.slots, this.blockRec, this.blockGuardrail, this.order];
    return arrays.reduce((n, a) => n + a.byteLength, 0) + this.postings.reduce((n, a) => n + a.byteLength, 0);
  }

  /** Record numbers whose id hashes like `id` (read them back and compare the id). */
  candidates(id: string): number[] {
    const h = idHash(id);
    const mask = this.slots.length - 1;
    const out: number[] = [];
    for (let s = h & mask; this.slots[s] !== 0; s = (s + 1) & mask) {
      const i = this.slots[s]! - 1;
      if (this.hash[i] === h) out.push(i);
    }
    return out;
  }

  /** The record numbers of one patient, ascending; empty when never seen. */
  posting(patient: string): Uint32Array {
    const pid = this.patients.find(patient);
    return pid < 0 ? new Uint32Array(0) : this.postings[pid]!.subarray(0, this.postingSize[pid]!);
  }

  /** Guardrail blocks as parallel arrays (record number, guardrail id). */
  blockList(): { rec: Uint32Array; guardrail: Uint32Array } {
    return { rec: this.blockRec.subarray(0, this.blocks), guardrail: this.blockGuardrail.subarray(0, this.blocks) };
  }

  /** Positions [lo, hi) in {@link order} of the records with since <= time < until. */
  timeRange(since: number | undefined, until: number | undefined): [number, number] {
    const lo = since === undefined ? 0 : this.lowerBound(since);
    const hi = until === undefined ? this.size : this.lowerBound(until);
    return [lo, Math.max(lo, hi)];
  }

  private lowerBound(t: number): number {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.time[this.order[mid]!]! < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * A test for the filter's fields other than the patient (the caller starts from {@link posting}) and the time (the
   * caller walks {@link timeRange}); `undefined` when no such field is given; `false` when a value was never seen.
   */
  match(f: ActivityFilter): Match | undefined {
    const tests: Array<(i: number) => boolean> = [];
    const named: Array<[Interner, string | undefined, IdColumn]> = [
      [this.agents, f.agent, this.agent],
      [this.methods, f.method, this.method],
      [this.clients, f.client, this.client],
      [this.reasons, f.reason, this.reason],
    ];
    for (const [interner, value, col] of named) {
      if (value === undefined) continue;
      const id = interner.find(value);
      if (id < 0) return false;
      tests.push((i) => col[i] === id);
    }
    if (f.outcome !== undefined) {
      const o = OUTCOMES.indexOf(f.outcome);
      if (o < 0) return false;
      const col = this.outcome;
      tests.push((i) => col[i] === o);
    }
    if (f.actor !== undefined) {
      const a = this.actors.find(f.actor);
      if (a < 0) return false;
      const { sub, fhirUser } = this;
      tests.push((i) => sub[i] === a || fhirUser[i] === a);
    }
    if (tests.length === 0) return undefined;
    if (tests.length === 1) return tests[0]!;
    return (i) => {
      for (const t of tests) if (!t(i)) return false;
      return true;
    };
  }

  private grow(): void {
    this.cap *= 2;
    this.src = grown(this.src, this.cap);
    this.pos = grown(this.pos, this.cap);
    this.len = grown(this.len, this.cap);
    this.time = grown(this.time, this.cap);
    this.outcome = grown(this.outcome, this.cap);
    this.type = grown(this.type, this.cap);
    this.agent = grown(this.agent, this.cap);
    this.method = grown(this.method, this.cap);
    this.sub = grown(this.sub, this.cap);
    this.fhirUser = grown(this.fhirUser, this.cap);
    this.client = grown(this.client, this.cap);
    this.reason = grown(this.reason, this.cap);
    this.hash = grown(this.hash, this.cap);
  }

  /** Stores an interned id, widening the column to 32 bits when the id no longer fits in 16. */
  private put(name: IdColumnName, i: number, id: number): void {
    let col = this[name];
    if (id > 0xffff && col instanceof Uint16Array) {
      col = new Uint32Array(col.length);
      col.set(this[name]);
      this[name] = col;
    }
    col[i] = id;
  }

  private insertSlot(i: number, h: number): void {
    // at most 3/4 full (linear probing: about 2.5 probes per hit, 8.5 per miss at the limit)
    if (4 * (i + 1) > 3 * this.slots.length) {
      const old = this.slots;
      this.slots = new Uint32Array(old.length * 2);
      for (const v of old) if (v !== 0) this.place(v - 1, this.hash[v - 1]!);
    }
    this.place(i, h);
  }

  private place(i: number, h: number): void {
    const mask = this.slots.length - 1;
    let s = h & mask;
    while (this.slots[s] !== 0) s = (s + 1) & mask;
    this.slots[s] = i + 1;
  }
}

/** The indexed fields of a record, or undefined when it is not an audit record of a known type and outcome. */
function fields(r: Record<string, unknown>): IndexedFields | undefined {
  const type = TYPE_ID.get(r["type"]);
  const outcome = OUTCOME_ID.get(r["outcome"]);
  if (type === undefined || outcome === undefined) return undefined;
  if (typeof r["id"] !== "string" || typeof r["agent"] !== "string" || typeof r["time"] !== "string" || !Array.isArray(r["patients"])) return undefined;
  const actor = r["actor"];
  if (typeof actor !== "object" || actor === null) return undefined;
  const time = Date.parse(r["time"]);
  if (Number.isNaN(time)) return undefined;
  return { time, outcome, type };
}

/**
 * Record numbers 0..n-1 sorted by `time`, ties in record order (stable): a bottom-up merge sort over the natural runs
 * (a chain is mostly in time order already, so a trail of k chains is about k runs).
 */
function sortByTime(time: Float64Array, n: number): Uint32Array {
  let a = new Uint32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  // run starts
  const runs: number[] = [0];
  for (let i = 1; i < n; i++) if (time[i]! < time[i - 1]!) runs.push(i);
  if (runs.length === 1) return a;
  runs.push(n);
  let b = new Uint32Array(n);
  let bounds = runs;
  while (bounds.length > 2) {
    const next: number[] = [0];
    for (let k = 0; k + 1 < bounds.length; k += 2) {
      const lo = bounds[k]!;
      const mid = bounds[k + 1]!;
      const hi = k + 2 < bounds.length ? bounds[k + 2]! : mid;
      let x = lo;
      let y = mid;
      let o = lo;
      while (x < mid && y < hi) b[o++] = time[a[y]!]! < time[a[x]!]! ? a[y++]! : a[x++]!;
      while (x < mid) b[o++] = a[x++]!;
      while (y < hi) b[o++] = a[y++]!;
      next.push(hi);
    }
    [a, b] = [b, a];
    bounds = next;
  }
  return a;
}
