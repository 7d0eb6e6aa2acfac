/**
 * The data layer of the compliance console (`hmcp audit serve`, issue 26): a read-only view of an audit trail (audit
 * files, or the PostgreSQL sink's table) that the console's pages render. Shapes: ./trail-types.ts.
 *
 * Index on open: one streaming pass over the trail builds a compact index (./trail-index.ts: typed-array columns,
 * interned strings, a posting list per patient, an id hash table), never the records themselves. Measured on
 * 1,000,000 records (bench/console-trail.ts, BENCHMARKS.md "Compliance console (issue 26)"): 59 bytes per record of
 * typed arrays (56.1 MiB; the JS heap grew 0.7 MiB), 7-10 µs per record to build from files (JSON.parse of each line is
 * most of it), 16 µs from a PostgreSQL table. Pages read back only their own rows (positioned file reads, or one query per chain). The view is a
 * snapshot: records appended after the open are not seen; rows are read back as the trail holds them when asked.
 */
import { importKeyring, type AuditVerifyKey, type CheckpointAnchor } from "../audit/chain.js";
import type { AuditQueryable } from "../audit/postgres-sink.js";
import type { VerifyOptions } from "../audit/verify.js";
import { refuseUnknownOptions } from "../protocol/config-error.js";
import { OUTCOMES, TrailIndex } from "./trail-index.js";
import { indexFiles, indexTable, type ChainSource, type ReadBack, type TrailProgress, type TrailSource } from "./trail-sources.js";
import type { ActivityFilter, ActivityPage, ActivityRow, AuditTrailView, ChainIntegrity, LocatedRecord, TrailStats } from "./trail-types.js";

/** Options of {@link openAuditTrail}: exactly one of `paths` and `db`. */
export interface AuditTrailOptions {
  /** Audit files or directories (a directory stands for its `*.jsonl` files, as `hmcp audit verify` reads them). */
  paths?: string[];
  /** A database client (`pg.Pool`, `pg.Client`, PGlite) over the PostgreSQL sink's table: one chain per instance id. */
  db?: AuditQueryable;
  /** The sink's table, with `db`. Default "hmcp_audit". */
  table?: string;
  /** Public key (or JWK Set) of the checkpoints. Without it signatures are NOT checked (`checked.signatures` false). */
  publicKey?: AuditVerifyKey;
  /** Checkpoints recorded outside the trail (the sinks' `onCheckpoint`); checked against the chains they name. */
  anchors?: ReadonlyArray<Pick<CheckpointAnchor, "chain" | "seq" | "hash">>;
  /** With `publicKey`: accept records after the last signed checkpoint (a crash before close). Default false. */
  allowUnsignedTail?: boolean;
  /** Clock for checkpoint ages, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /** Called as the index on open advances: after each file (records so far, bytes read of all), or each 5,000 rows. */
  onProgress?: (progress: TrailProgress) => void;
}

const OPTION_KEYS = ["paths", "db", "table", "publicKey", "anchors", "allowUnsignedTail", "now", "onProgress"];
/** Most rows of one activity page. */
const MAX_LIMIT = 500;
/** Records read back per batch by `records()`. */
const BATCH = 500;
const HOUR_MS = 3_600_000;
const FILTER_KEYS = new Set(["patient", "actor", "client", "agent", "method", "outcome", "reason", "since", "until"]);

/**
 * Opens a trail for the console: indexes it (index on open, one streaming pass; 59 bytes per record measured), then
 * verifies every chain in the background, one after the other, with the existing verifiers (`verifyAuditFiles` on a
 * chain's files, `verifyAuditTable` per instance): `integrity()` says `pending` until each is done, `verified`
 * resolves when all are. Verification starts on the next turn of the event loop (`setImmediate`: under fake timers,
 * advance them or fake only `Date`), so the view's first `integrity()` always reads every chain pending.
 *
 * Lines that are not audit records (not JSON, not a chain entry, a record without a known type or outcome, a torn last
 * line) are skipped and counted (`skipped`); checkpoints are not records. Records are not schema-checked here (the
 * sinks checked them when written, and verification checks them): the index reads only the fields it needs.
 *
 * @throws TypeError when neither or both of `paths` and `db` are given, or `paths` is empty
 * @throws HMCPConfigError for an unknown option
 * @throws Error (code ENOENT, ...) when a path does not exist or a file cannot be read; when the table name is invalid
 *   or a query fails; when `publicKey` is not a usable public key
 */
export async function openAuditTrail(options: AuditTrailOptions): Promise<AuditTrailView> {
  refuseUnknownOptions("openAuditTrail", options, OPTION_KEYS);
  options ??= {};
  const { paths, db } = options;
  if ((paths === undefined) === (db === undefined)) throw new TypeError("openAuditTrail: give exactly one of 'paths' (audit files or directories) and 'db' (the PostgreSQL sink's database)");
  if (paths !== undefined && (!Array.isArray(paths) || paths.length === 0)) throw new TypeError("openAuditTrail: 'paths' must list at least one file or directory");
  if (db !== undefined && typeof db.query !== "function") throw new TypeError("openAuditTrail: 'db' must have query(text, params) (pg.Pool, pg.Client or PGlite)");
  if (options.publicKey !== undefined) await importKeyring(options.publicKey); // refuse an unusable key now, not in the background
  const index = new TrailIndex();
  const source = paths !== undefined ? await indexFiles(paths, index, options.onProgress) : await indexTable(db!, options.table ?? "hmcp_audit", index, options.onProgress);
  index.finish();
  return new TrailView(index, source, options);
}

class TrailView implements AuditTrailView {
  readonly size: number;
  /** Lines (or rows) that were neither audit records nor checkpoints. */
  readonly skipped: number;
  readonly verified: Promise<void>;
  private readonly chains: ChainIntegrity[];
  private closed = false;

  constructor(
    private readonly index: TrailIndex,
    private readonly source: TrailSource,
    private readonly options: AuditTrailOptions,
  ) {
    this.size = index.size;
    this.skipped = source.skipped;
    const now = options.now ?? Date.now;
    const anchors = options.anchors ?? [];
    this.chains = source.chains.map((c) => ({
      name: c.name,
      sources: c.sources,
      status: "pending",
      checked: { links: true, signatures: options.publicKey !== undefined, anchors: anchors.some((a) => anchoredTo(a, c)) },
      records: 0,
      ...(c.lastCheckpoint && { lastCheckpoint: { ...c.lastCheckpoint, signed: false, ageSeconds: age(now(), c.lastCheckpoint.time) } }),
    }));
    // anchors naming a chain the trail does not hold: its files (or rows) are missing or were replaced
    const listed = new Set<string>();
    for (const a of anchors) {
      if (listed.has(a.chain) || source.chains.some((c) => anchoredTo(a, c))) continue;
      listed.add(a.chain);
      this.chains.push({
        name: a.chain,
        sources: [],
        status: "broken",
        checked: { links: false, signatures: false, anchors: true },
        records: 0,
        failure: { source: "", line: 0, seq: a.seq, reason: "anchor_missing", message: "no chain in this trail has the id of a checkpoint anchored elsewhere: its files (or rows) are missing, or were replaced" },
      });
    }
    // after the caller has the view: the first integrity() reads every chain pending
    this.verified = new Promise<void>((resolve) => setImmediate(() => void this.verifyAll(now).finally(resolve)));
  }

  /** Bytes of the index's typed arrays (not the interned strings). */
  get indexBytes(): number {
    return this.index.bytes();
  }

  integrity(): ChainIntegrity[] {
    return this.chains.map((c) => ({ ...c, checked: { ...c.checked }, sources: [...c.sources] }));
  }

  private async verifyAll(now: () => number): Promise<void> {
    const { publicKey, allowUnsignedTail, anchors } = this.options;
    for (let c = 0; c < this.source.chains.length && !this.closed; c++) {
      const chain = this.source.chains[c]!;
      const state = this.chains[c]!;
      const mine = (anchors ?? []).filter((a) => anchoredTo(a, chain));
      const opts: VerifyOptions = { ...(publicKey !== undefined && { publicKey }), ...(allowUnsignedTail !== undefined && { allowUnsignedTail }), ...(mine.length > 0 && { anchors: mine }) };
      try {
        const result = await this.source.verify(c, opts);
        if (this.closed) return;
        const e = result.firstError;
        Object.assign(state, {
          status: result.ok ? "verified" : "broken",
          records: result.records,
          result,
          ...(e && { failure: { source: e.file, line: e.line, ...(e.seq !== undefined && { seq: e.seq }), reason: e.reason, message: e.message } }),
        });
        if (chain.lastCheckpoint) {
          const signed = result.signaturesChecked && result.signedThrough >= chain.lastCheckpoint.seq;
          state.lastCheckpoint = { ...chain.lastCheckpoint, signed, ageSeconds: age(now(), chain.lastCheckpoint.time) };
        }
      } catch (err) {
        if (this.closed) return;
        const code = (err as { code?: unknown } | null)?.code;
        state.status = "broken";
        state.failure = { source: chain.sources[0] ?? "", line: 0, reason: "unreadable_file", message: `the chain could not be read (${typeof code === "string" ? code : "error"})` };
      }
    }
  }

  async activity(filter: ActivityFilter, page: { offset: number; limit: number }): Promise<ActivityPage> {
    this.assertOpen();
    const { offset, limit } = page ?? {};
    if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError("activity: 'offset' must be an integer >= 0");
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`activity: 'limit' must be an integer from 1 to ${MAX_LIMIT}`);
    const sel = this.select(filter);
    const end = Math.max(0, sel.length - offset);
    const recs = sel.slice(Math.max(0, end - limit), end).reverse(); // a copy: `sel` may be the index's own order
    const back = await this.source.read(this.index, recs);
    const rows: ActivityRow[] = [];
    back.forEach((b, k) => {
      if (b) rows.push(toRow(b, this.chainName(recs[k]!)));
    });
    return { rows, total: sel.length, offset };
  }

  async record(id: string): Promise<LocatedRecord | undefined> {
    this.assertOpen();
    if (typeof id !== "string") return undefined;
    for (const i of this.index.candidates(id)) {
      const [b] = await this.source.read(this.index, [i]);
      if (b?.record["id"] === id) return located(b, this.chainName(i));
    }
    return undefined;
  }

  stats(filter: ActivityFilter): TrailStats {
    const ix = this.index;
    const sel = this.select(filter);
    const perHour: TrailStats["perHour"] = [];
    const refusals = new Uint32Array(ix.reasons.values.length);
    let hour = NaN;
    let counts = [0, 0, 0, 0];
    const flush = () => {
      if (Number.isNaN(hour)) return;
      const row = { hour: `${new Date(hour * HOUR_MS).toISOString().slice(0, 13)}:00Z` } as TrailStats["perHour"][number];
      OUTCOMES.forEach((o, k) => (row[o] = counts[k]!));
      perHour.push(row);
    };
    for (let k = 0; k < sel.length; k++) {
      const i = sel[k]!;
      const h = Math.floor(ix.time[i]! / HOUR_MS);
      if (h !== hour) {
        flush();
        hour = h;
        counts = [0, 0, 0, 0];
      }
      const o = ix.outcome[i]!;
      counts[o]!++;
      if (o !== 0) refusals[ix.reason[i]!]!++;
    }
    flush();
    const refusalsByReason = ranked(refusals, (id) => (id === 0 ? "(none)" : ix.reasons.values[id]!));
    // guardrail blocks of the selected records
    const blocks = ix.blockList();
    const blockCounts = new Uint32Array(ix.guardrails.values.length);
    const all = sel.length === ix.size;
    const member = all ? undefined : new Uint8Array(ix.size);
    if (member) for (let k = 0; k < sel.length; k++) member[sel[k]!] = 1;
    for (let b = 0; b < blocks.rec.length; b++) if (all || member![blocks.rec[b]!] === 1) blockCounts[blocks.guardrail[b]!]!++;
    const guardrailBlocks = ranked(blockCounts, (id) => ix.guardrails.values[id]!).map(({ label, count }) => ({ guardrail: label, count }));
    return {
      perHour,
      refusalsByReason: refusalsByReason.map(({ label, count }) => ({ reason: label, count })),
      guardrailBlocks,
      topActors: filter?.patient === undefined ? [] : this.topActors(sel),
    };
  }

  /** Actors of the selected records by label (sub, else fhirUser, else client id), most first, at most 10. */
  private topActors(sel: Uint32Array): TrailStats["topActors"] {
    const ix = this.index;
    const counts = new Map<string, number>();
    for (let k = 0; k < sel.length; k++) {
      const i = sel[k]!;
      const a = ix.sub[i] || ix.fhirUser[i];
      const label = a ? ix.actors.values[a]! : ix.client[i] ? ix.clients.values[ix.client[i]!]! : undefined;
      if (label !== undefined) counts.set(label, (counts.get(label) ?? 0) + 1);
    }
    return [...counts].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, 10).map(([actor, count]) => ({ actor, count }));
  }

  async *records(filter: ActivityFilter): AsyncIterable<LocatedRecord> {
    this.assertOpen();
    const sel = this.select(filter);
    for (let k = 0; k < sel.length; k += BATCH) {
      // closed mid-way: fail rather than end early, so that a download is not mistaken for the whole list
      this.assertOpen();
      const recs = sel.subarray(k, k + BATCH);
      const back = await this.source.read(this.index, recs);
      for (let j = 0; j < back.length; j++) {
        const b = back[j];
        if (b) yield located(b, this.chainName(recs[j]!));
      }
    }
  }

  facets(): { agents: string[]; methods: string[]; reasons: string[]; clients: string[] } {
    const ix = this.index;
    return { agents: ix.agents.sorted(), methods: ix.methods.sorted(), reasons: ix.reasons.sorted(), clients: ix.clients.sorted() };
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.source.close();
  }

  /** Reading back after close would reopen the files. @throws Error when the view is closed */
  private assertOpen(): void {
    if (this.closed) throw new Error("audit trail view is closed");
  }

  private chainName(i: number): string {
    return this.source.chains[this.source.chainOf(this.index.src[i]!)]!.name;
  }

  /**
   * The record numbers matching `filter`, oldest first (time, then trail order).
   * @throws TypeError for an unknown filter member, or `since`/`until` given and not finite numbers
   */
  private select(filter: ActivityFilter): Uint32Array {
    const f = filter ?? {};
    for (const k of Object.keys(f)) {
      // a misspelt filter would otherwise match everything
      if (!FILTER_KEYS.has(k)) throw new TypeError(`audit trail filter: unknown member '${k}' (known: ${[...FILTER_KEYS].join(", ")})`);
    }
    for (const k of ["since", "until"] as const) {
      if (f[k] !== undefined && !Number.isFinite(f[k])) throw new TypeError(`audit trail filter: '${k}' must be ms since the epoch`);
    }
    const ix = this.index;
    const m = ix.match(f);
    if (m === false) return new Uint32Array(0);
    if (f.patient !== undefined) {
      const time = ix.time;
      const lo = f.since ?? -Infinity;
      const hi = f.until ?? Infinity;
      const out = ix.posting(f.patient).filter((i) => time[i]! >= lo && time[i]! < hi && (m === undefined || m(i)));
      return out.sort((a, b) => time[a]! - time[b]! || a - b);
    }
    const [lo, hi] = ix.timeRange(f.since, f.until);
    const range = ix.order.subarray(lo, hi);
    return m === undefined ? range : range.filter(m);
  }
}

/**
 * Whether an anchor is a chain's: it names the chain id the chain's checkpoints carry, or, for a chain without a
 * checkpoint (cut back before its first one, or never signed), the chain's name (a file sink's chain id defaults to its
 * prefix). The verifier then reports the anchored checkpoint missing from that chain.
 */
function anchoredTo(a: Pick<CheckpointAnchor, "chain">, c: ChainSource): boolean {
  return c.id !== undefined ? a.chain === c.id : a.chain === c.name;
}

function located(b: ReadBack, chain: string): LocatedRecord {
  return { ...(b.record as unknown as LocatedRecord), chain, seq: b.seq };
}

function toRow(b: ReadBack, chain: string): ActivityRow {
  const r = b.record as unknown as LocatedRecord;
  const actor = r.actor?.sub ?? r.actor?.fhirUser;
  return {
    id: r.id,
    time: r.time,
    chain,
    seq: b.seq,
    type: r.type,
    agent: r.agent,
    ...(r.method !== undefined && { method: r.method }),
    ...(actor !== undefined && { actor }),
    ...(r.actor?.clientId !== undefined && { client: r.actor.clientId }),
    patients: r.patients,
    outcome: r.outcome,
    ...(r.reason !== undefined && { reason: r.reason }),
    ...(r.status !== undefined && { status: r.status }),
  };
}

/** Non-zero counts by id, most first, ties by label. */
function ranked(counts: Uint32Array, label: (id: number) => string): Array<{ label: string; count: number }> {
  const out: Array<{ label: string; count: number }> = [];
  counts.forEach((count, id) => {
    if (count > 0) out.push({ label: label(id), count });
  });
  return out.sort((x, y) => y.count - x.count || (x.label < y.label ? -1 : x.label > y.label ? 1 : 0));
}

/** Seconds from `time` (RFC 3339) to `now` (ms), rounded down. */
function age(now: number, time: string): number {
  return Math.floor((now - Date.parse(time)) / 1000);
}
