/**
 * The machinery every chained sink shares: the append queue, the group-commit / fsync policy, the
 * durable-seq bookkeeping, sealing entries into the chain and writing checkpoints. Subclasses only
 * persist sealed entries (durably, before their promise resolves) and, for files, rotate.
 * @internal
 */
import { canonicalJson } from "./canonical-json.js";
import { sealEntry, type CheckpointAnchor, type CheckpointBody, type CheckpointSigner } from "./chain.js";
import { randomUUID } from "node:crypto";
import { AUDIT_RECORD_VERSION, AuditRecordInputSchema, isInternalRecord, type AuditRecordInput, type AuditSink } from "./record.js";
import { defaultOperationalLogger } from "../server/logger.js";

/**
 * When appended records become durable.
 * - `fsync`: every record is persisted (written and fsync'd, or committed) on its own before the
 *   next; an acknowledged record (see `onDurable`) survives a power loss. Throughput is bounded by
 *   the storage's sync rate.
 * - `group` (default): records are gathered for at most `intervalMs` (default 5 ms) or `maxRecords`
 *   (default 256), then persisted with one write and one fsync (or one INSERT); a backlog that
 *   built up behind a slow fsync is written as one batch (up to 8,192 records). A crash loses at
 *   most the records not yet acknowledged: the open window, plus any queued behind a write in
 *   progress when the disk is slower than the offered load; earlier records are intact.
 */
export type AuditDurability = { mode: "fsync" } | { mode: "group"; intervalMs?: number; maxRecords?: number };

/** Thrown by `append` and rejected by `flush` when the sink cannot take or keep records. */
export class AuditSinkError extends Error {
  constructor(
    readonly code: "closed" | "backpressure" | "write_failed" | "invalid_record" | "unreadable_tail",
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "AuditSinkError";
  }
}

/** A sealed chain entry, ready to persist. */
export interface SealedEntry {
  seq: number;
  prev: string;
  hash: string;
  /** The JSON Lines line, without newline. */
  line: string;
  /** The record's (or checkpoint's) time, RFC 3339. */
  time: string;
  type: string;
  /** Why a checkpoint entry was written; undefined for records. */
  why?: CheckpointBody["why"];
}

/** Options every chained sink takes. */
export interface ChainSinkCommon {
  durability?: AuditDurability;
  /** A checkpoint every this many records (default 1000), plus at rotation and at close. */
  checkpointEvery?: number;
  /** Called after each persisted batch with the highest durable `seq`. A throw becomes a notice; it never fails the sink. */
  onDurable?: (seq: number) => void;
  /**
   * Called after each checkpoint (signed sinks: every `checkpointEvery` records, at rotation, at close and on recovery)
   * is persisted durably, with its {@link CheckpointAnchor} (no PHI). Ship anchors off the machine (a write-once
   * bucket, a SIEM, another database) and verify with `anchors`: a trail cut back past an anchored checkpoint, or
   * rewritten by someone holding the signing key, then fails verification. The latest anchor covers everything before
   * it, so a lost one weakens only the stretch since the one before. Not awaited; a throw or rejection becomes a notice
   * and never fails the sink.
   */
  onCheckpoint?: (anchor: CheckpointAnchor) => void | Promise<void>;
  /**
   * Operational notices without PHI (recovery of a torn line, write failure, an audit folder or file other users can
   * read). Default: a warning on the default operational logger (stderr; see `defaultOperationalLogger`).
   */
  onNotice?: (message: string, meta: Record<string, unknown>) => void;
  /** Maximum records waiting to be persisted before `append` throws (default 100,000). */
  maxQueued?: number;
  /**
   * After a failed write (disk full, read-only file system, database down), the sink retries on its own, first after
   * `minDelayMs` (default 1,000), doubling up to `maxDelayMs` (default 30,000), until a write succeeds or the sink is
   * closed; `false`: only when {@link ChainSinkBase.recover} is called. Records appended meanwhile wait in the queue.
   */
  retry?: { minDelayMs?: number; maxDelayMs?: number } | false;
  /** Clock (ms since the epoch), for tests. Default `Date.now`. */
  now?: () => number;
}

/** Largest batch written with one write and one fsync in group mode (records). */
const MAX_BATCH = 8192;

export const COMMON_OPTION_KEYS = ["durability", "checkpointEvery", "onDurable", "onCheckpoint", "onNotice", "maxQueued", "retry", "now"];

/** A rotation step among the entries a failed write left unwritten. */
const ROTATE = Symbol("rotate");

/** What a sink's `fault` reports: no PHI, no path. */
export interface AuditSinkFault {
  /**
   * The error code of the failed write (`ENOSPC`, `EROFS`, `EIO`, a SQLSTATE such as `57P01` for a server shut down
   * under the write, `ECONNREFUSED` while the database refuses connections, `HANDLE_CLOSED` for a database handle
   * closed under the sink ...), or `write_failed` when it had none.
   */
  code: string;
  /** When the first write of this fault failed, RFC 3339. */
  since: string;
  /** Records appended and not written yet (they are written on recovery). */
  waiting: number;
  /**
   * False when retrying cannot help (a second writer on the same PostgreSQL chain, a database handle closed under the
   * sink): the sink then refuses records (`append` throws) until the process restarts with the cause fixed.
   */
  recovers: boolean;
}

/** Where a sink's notices go: `onNotice`, or a warning on the default operational logger. */
export function noticeTo(common: ChainSinkCommon): (message: string, meta: Record<string, unknown>) => void {
  return common.onNotice ?? ((message, meta) => defaultOperationalLogger().warn(message, { component: "audit", ...meta }));
}

/** Checks the common options; @throws Error naming the bad option. */
export function validateCommon(where: string, opts: ChainSinkCommon): void {
  const d = opts.durability;
  if (d !== undefined) {
    if (d.mode !== "fsync" && d.mode !== "group") throw new Error(`${where}: durability.mode must be 'fsync' or 'group'`);
    if (d.mode === "group" && d.intervalMs !== undefined && !(d.intervalMs >= 0)) throw new Error(`${where}: durability.intervalMs must be >= 0`);
    if (d.mode === "group" && d.maxRecords !== undefined && !(Number.isInteger(d.maxRecords) && d.maxRecords >= 1)) throw new Error(`${where}: durability.maxRecords must be an integer >= 1`);
  }
  if (opts.checkpointEvery !== undefined && !(Number.isInteger(opts.checkpointEvery) && opts.checkpointEvery >= 1)) throw new Error(`${where}: checkpointEvery must be an integer >= 1`);
  if (opts.maxQueued !== undefined && !(Number.isInteger(opts.maxQueued) && opts.maxQueued >= 1)) throw new Error(`${where}: maxQueued must be an integer >= 1`);
  if (opts.onCheckpoint !== undefined && typeof opts.onCheckpoint !== "function") throw new Error(`${where}: onCheckpoint must be a function`);
  const r = opts.retry;
  if (r !== undefined && r !== false) {
    if (typeof r !== "object" || r === null) throw new Error(`${where}: retry must be false or { minDelayMs, maxDelayMs }`);
    if (r.minDelayMs !== undefined && !(r.minDelayMs >= 1)) throw new Error(`${where}: retry.minDelayMs must be >= 1`);
    if (r.maxDelayMs !== undefined && !(r.maxDelayMs >= (r.minDelayMs ?? 1))) throw new Error(`${where}: retry.maxDelayMs must be >= retry.minDelayMs`);
  }
}

/** The error code of a failed write's cause (errno code, SQLSTATE), or undefined. */
function errorCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[A-Z0-9_]{1,32}$/.test(code) ? code : undefined;
}

/** @internal */
export abstract class ChainSinkBase implements AuditSink {
  private queue: AuditRecordInput[] = [];
  private appended = 0;
  private durable = 0;
  private waiters: { target: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failure: AuditSinkError | undefined;
  /** When the current fault began (ms), and its code. */
  private failedSince = 0;
  private failedCode = "write_failed";
  /** Entries sealed into the chain (and rotation steps) a failed write left unwritten: written first on recovery. */
  private unwritten: Array<SealedEntry | typeof ROTATE> = [];
  /** Whether the current fault's `recover` checkpoint is sealed already (one per fault). */
  private recoverSealed = false;
  /** The fault is one retrying cannot clear ({@link isPermanent}). */
  private permanent = false;
  private recovering: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = 0;
  private readonly retry: { minDelayMs: number; maxDelayMs: number } | false;
  private closed = false;
  /** The first `close()` call's work: later calls wait for it rather than resolving before the trail is closed. */
  private closing: Promise<void> | undefined;
  protected sinceCheckpoint = 0;
  /**
   * Why the last entry of the chain was written, when it is a checkpoint (`undefined` after a record); set from the
   * chain's last entry by {@link continueAfter}. `close` writes its checkpoint unless the chain already ends with one
   * written at close.
   */
  private tailWhy: CheckpointBody["why"] | undefined;
  private readonly intervalMs: number;
  private readonly batchMax: number;
  private readonly checkpointEvery: number;
  private readonly maxQueued: number;
  protected readonly now: () => number;

  protected constructor(
    private readonly common: ChainSinkCommon,
    protected readonly chainId: string,
    protected readonly signer: CheckpointSigner | undefined,
    protected seq: number,
    protected head: string,
  ) {
    const d = common.durability ?? { mode: "group" };
    this.intervalMs = d.mode === "group" ? (d.intervalMs ?? 5) : 0;
    this.batchMax = d.mode === "group" ? (d.maxRecords ?? 256) : 1;
    this.checkpointEvery = common.checkpointEvery ?? 1000;
    this.maxQueued = common.maxQueued ?? 100_000;
    this.now = common.now ?? Date.now;
    const r = common.retry;
    this.retry = r === false ? false : { minDelayMs: r?.minDelayMs ?? 1000, maxDelayMs: Math.max(r?.maxDelayMs ?? 30_000, r?.minDelayMs ?? 1000) };
    this.notice = noticeTo(common);
  }

  /** Reports an operational notice (no PHI in `meta`). */
  protected readonly notice: (message: string, meta: Record<string, unknown>) => void;

  /** Persists entries durably (write + fsync, or a committed INSERT) before resolving. */
  protected abstract persist(entries: SealedEntry[]): Promise<void>;
  /** Releases resources after the final checkpoint. */
  protected abstract release(): Promise<void>;
  /** Whether to start a new segment before an entry of `lineBytes` when `pendingBytes` are unpersisted. */
  protected shouldRotate(_pendingBytes: number, _lineBytes: number): boolean {
    return false;
  }
  /** Starts a new segment (everything before is persisted). */
  protected async rotate(): Promise<void> {}
  /** Short operational name of where entries go (no PHI), for notices. */
  protected abstract where(): string;
  /** Whether a write error is one retrying cannot clear (no retry then, and `append` refuses). Default: none is. */
  protected isPermanent(_error: unknown): boolean {
    return false;
  }
  /**
   * An error (with a `code`) when the store's handle can never write again (closed under the sink), else undefined.
   * Checked before a request is admitted ({@link assertWritable}) and when a write fails; return only errors
   * {@link isPermanent} counts as permanent. Default: never.
   */
  protected handleLost(): Error | undefined {
    return undefined;
  }

  /** Public JWK that verifies this sink's checkpoints (undefined when unsigned). */
  get publicJwk() {
    return this.signer?.publicJwk;
  }

  /**
   * Enqueues a record. Synchronous and cheap (a few checks and a push); the record is durable when
   * `flush()` resolves. The sink takes ownership: do not mutate the record afterwards.
   * Records HMCP's server and HTTP app build are taken as they are; any other record must fit
   * `AuditRecordInputSchema` (strict: no other members, so nothing else, e.g. message text, reaches the trail).
   * After a failed write the record is still taken (it waits for {@link recover}), so the record of a request admitted
   * before the fault is not lost; {@link assertWritable} then refuses, so no new request is admitted.
   * @throws AuditSinkError `closed` after close, `backpressure` when `maxQueued` records wait, `invalid_record` when
   *   the record does not fit the schema (the message names the first offending member, never its value).
   */
  append(record: AuditRecordInput): void {
    if (this.closed) throw new AuditSinkError("closed", "audit sink is closed");
    if (this.permanent) throw this.failure!;
    if (this.queue.length + 1 > this.maxQueued) throw new AuditSinkError("backpressure", `audit sink has ${this.queue.length} records waiting to be written`);
    if (typeof record !== "object" || record === null || record.v !== AUDIT_RECORD_VERSION || typeof record.id !== "string" || typeof record.type !== "string") {
      throw new AuditSinkError("invalid_record", "audit record needs v, id and type (build it with newAuditRecord)");
    }
    if (!isInternalRecord(record)) {
      const parsed = AuditRecordInputSchema.safeParse(record);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue ? [...issue.path, ...(issue.code === "unrecognized_keys" ? issue.keys : [])].map(String).join(".") || "(record)" : "(record)";
        throw new AuditSinkError("invalid_record", `audit record does not fit the schema at ${where} (${issue?.code ?? "invalid"}); build it with newAuditRecord`);
      }
    }
    this.queue.push(record);
    this.appended++;
    if (this.failure) return;
    if (this.queue.length >= this.batchMax || this.intervalMs === 0) this.kick();
    else this.timer ??= setTimeout(() => this.kick(), this.intervalMs);
  }

  /**
   * Throws what `append` would throw for the next `reserve` well-formed records (see {@link AuditSink.assertWritable}).
   * @param reserve - records that must fit, default 1
   * @throws AuditSinkError `closed`, `write_failed` while a write fault lasts (see {@link fault}, {@link recover}), or
   *   `backpressure` when fewer than `reserve` more fit under `maxQueued`
   */
  assertWritable(reserve = 1): void {
    if (this.closed) throw new AuditSinkError("closed", "audit sink is closed");
    if (!this.failure) {
      // a handle closed under the sink: refuse before a request is served whose record could not be kept
      const lost = this.handleLost();
      if (lost !== undefined) this.fail(lost);
    }
    if (this.failure) throw this.failure;
    if (this.queue.length + reserve > this.maxQueued) throw new AuditSinkError("backpressure", `audit sink has ${this.queue.length} records waiting to be written`);
  }

  /** The write fault the sink is in (it refuses new requests through {@link assertWritable}), or undefined. */
  get fault(): AuditSinkFault | undefined {
    if (!this.failure) return undefined;
    const waiting = this.queue.length + this.unwritten.filter((e) => e !== ROTATE && e.why === undefined).length;
    return { code: this.failedCode, since: new Date(this.failedSince).toISOString(), waiting, recovers: !this.permanent };
  }

  /**
   * After a failed write: writes what waits (the entries sealed before the fault, a signed `recover` checkpoint that
   * marks the fault in the trail, then the records appended meanwhile), and the sink takes records again. Nothing
   * appended is lost and the chain goes on unbroken. The sink calls it itself with back-off (option `retry`); call it
   * to retry now (e.g. once space is freed). Resolves at once when there is no fault.
   * @throws AuditSinkError `write_failed` (its `cause` the new error) while the fault lasts, `closed` after close
   */
  recover(): Promise<void> {
    if (!this.failure) return Promise.resolve();
    if (this.closing) return Promise.reject(new AuditSinkError("closed", "audit sink is closed"));
    if (this.permanent) return Promise.reject(this.failure);
    return this.attemptRecovery();
  }

  private attemptRecovery(): Promise<void> {
    return (this.recovering ??= this.recoverOnce().finally(() => (this.recovering = undefined)));
  }

  private async recoverOnce(): Promise<void> {
    while (this.loop) await this.loop;
    if (!this.failure) return;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    try {
      if (!this.recoverSealed && this.signer && this.seq > 0) {
        this.unwritten.push(await this.checkpoint("recover"));
        this.recoverSealed = true;
      }
      await this.writeUnwritten();
    } catch (e) {
      this.fail(e);
      throw this.failure!;
    }
    const { code, since } = this.fault!;
    this.failure = undefined;
    this.recoverSealed = false;
    this.retryDelay = 0;
    this.notice("audit sink recovered", { where: this.where(), code, since });
    this.durableHook();
    this.settle();
    if (this.queue.length > 0) this.kick();
  }

  /** Enters (or stays in) a write fault: refuse new requests, reject flushes, retry later. */
  private fail(error: unknown): void {
    // a write that failed because the handle is closed is that fault, whatever the driver's own error says
    const lost = this.handleLost();
    const e: unknown = lost === undefined || lost === error ? error : Object.assign(lost, { cause: error });
    const code = errorCode(e) ?? "write_failed";
    if (!this.failure) {
      this.failedSince = this.now();
      this.notice("audit write failed", { where: this.where(), code });
    }
    this.failedCode = code;
    this.permanent = this.isPermanent(e);
    const until = this.permanent ? "until restarted with the cause fixed" : "until a write succeeds";
    this.failure = new AuditSinkError("write_failed", `audit write failed (${code}); the sink refuses new requests ${until}`, { cause: e });
    for (const w of this.waiters.splice(0)) w.reject(this.failure);
    if (this.retry === false || this.closed || this.permanent) return;
    this.retryDelay = this.retryDelay === 0 ? this.retry.minDelayMs : Math.min(this.retryDelay * 2, this.retry.maxDelayMs);
    this.retryTimer = setTimeout(() => void this.attemptRecovery().catch(() => undefined), this.retryDelay);
    this.retryTimer.unref();
  }

  /**
   * Resolves when every record appended before the call is persisted durably.
   * @throws AuditSinkError `write_failed` when persisting failed.
   */
  flush(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const target = this.appended;
    if (this.durable >= target) return Promise.resolve();
    const p = new Promise<void>((resolve, reject) => this.waiters.push({ target, resolve, reject }));
    this.kick();
    return p;
  }

  /**
   * Flushes, writes a final checkpoint (signed sinks), persists it and releases resources. Idempotent: every call
   * resolves (or rejects) with the first, once the trail is closed. After a write fault it retries once; when that
   * fails too, resources are released all the same (the lock too: the chain can be reopened, and gets a `recover`
   * checkpoint then) and it rejects.
   * @throws AuditSinkError `write_failed` when records could not be persisted (the message says how many).
   */
  close(): Promise<void> {
    return (this.closing ??= this.closeOnce());
  }

  private async closeOnce(): Promise<void> {
    // Refuse new records first, so everything accepted is written before the final checkpoint.
    this.closed = true;
    try {
      if (this.failure) {
        try {
          if (this.permanent) throw this.failure;
          await this.attemptRecovery();
        } catch {
          const { code, waiting } = this.fault!;
          throw new AuditSinkError("write_failed", `audit sink closed after a write fault (${code}): ${waiting} records not written`, { cause: this.failure });
        }
      }
      await this.flush();
      while (this.loop) await this.loop;
      // after records, and after an interval, rotate or recover checkpoint too: a chain ends closed only on "close"
      if (this.signer && this.seq > 0 && this.tailWhy !== "close") await this.persistEntries([await this.checkpoint("close")]);
    } finally {
      this.closed = true;
      if (this.timer) clearTimeout(this.timer);
      if (this.retryTimer) clearTimeout(this.retryTimer);
      await this.release();
    }
  }

  private kick(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.loop) return;
    if (this.failure) return;
    this.loop = this.run().finally(() => {
      this.loop = undefined;
      if (this.queue.length > 0 && !this.failure) this.kick();
    });
  }

  private async run(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        // A backlog that built up behind a slow fsync goes out in one write and one fsync (adaptive
        // group commit): fewer syncs, and older records become durable sooner. fsync mode stays 1.
        const take = this.batchMax === 1 ? 1 : Math.min(Math.max(this.batchMax, this.queue.length), MAX_BATCH);
        await this.writeBatch(take);
        this.durableHook();
        this.settle();
      }
    } catch (e) {
      this.fail(e);
    }
  }

  /** Calls `onDurable`; its throw is a notice, not a write failure (the records are on disk). */
  private durableHook(): void {
    const hook = this.common.onDurable;
    if (hook === undefined) return;
    try {
      hook(this.seq);
    } catch (err) {
      this.notice("audit onDurable failed", { where: this.where(), seq: this.seq, error: err instanceof Error ? err.name : typeof err });
    }
  }

  private settle(): void {
    if (this.waiters.length === 0) return;
    const keep: typeof this.waiters = [];
    for (const w of this.waiters) {
      if (w.target <= this.durable) w.resolve();
      else keep.push(w);
    }
    this.waiters = keep;
  }

  /**
   * Seals up to `take` queued records into the chain and persists them. A record leaves the queue once sealed; what is
   * sealed and not persisted when a write fails stays in {@link unwritten}, in order, for {@link recover}.
   */
  private async writeBatch(take: number): Promise<void> {
    const batch = this.queue.splice(0, take);
    let sealed = 0;
    try {
      await this.sealAndWrite(batch, () => sealed++);
    } catch (e) {
      this.queue.unshift(...batch.slice(sealed));
      throw e;
    }
  }

  /** Persists, in order, the entries and rotations a failed write left (all of them, or throws). */
  private async writeUnwritten(): Promise<void> {
    while (this.unwritten.length > 0) {
      const next = this.unwritten.indexOf(ROTATE);
      const entries = this.unwritten.slice(0, next === -1 ? undefined : next) as SealedEntry[];
      if (entries.length > 0) {
        await this.persistEntries(entries);
        this.unwritten.splice(0, entries.length);
      }
      if (this.unwritten[0] === ROTATE) {
        await this.rotate();
        this.unwritten.shift();
      }
    }
  }

  private async sealAndWrite(batch: AuditRecordInput[], onSealed: () => void): Promise<void> {
    let entries: SealedEntry[] = this.unwritten as SealedEntry[];
    let pendingBytes = 0;
    for (const record of batch) {
      let canonical: string;
      try {
        canonical = canonicalJson(record);
      } catch (e) {
        // A record JSON cannot carry: keep the chain honest with a placeholder that says so. The placeholder is itself
        // a valid record (the verifier checks every record against the schema), built only from values known to
        // serialise; the original's id, type and time where they are well-formed.
        canonical = canonicalJson(placeholderRecord(record, this.now()));
        this.notice("audit record not serialisable; placeholder written", { id: JSON.parse(canonical).id as string, error: (e as Error).name });
      }
      // 200 bytes: the seq/prev/hash envelope around the record.
      if (this.shouldRotate(pendingBytes, Buffer.byteLength(canonical) + 200)) {
        if (this.signer && this.sinceCheckpoint > 0) entries.push(await this.checkpoint("rotate"));
        this.unwritten.push(ROTATE);
        await this.writeUnwritten();
        entries = this.unwritten as SealedEntry[];
        pendingBytes = 0;
      }
      const seq = ++this.seq;
      const { line, hash } = sealEntry(seq, this.head, canonical);
      // the entry's time (the row's timestamptz in PostgreSQL, the day of a file) in one form every store takes
      const ms = typeof record.time === "string" ? Date.parse(record.time) : Number.NaN;
      const time = new Date(Number.isNaN(ms) ? this.now() : ms).toISOString();
      entries.push({ seq, prev: this.head, hash, line, time, type: record.type });
      onSealed();
      this.head = hash;
      pendingBytes += Buffer.byteLength(line) + 1;
      this.sinceCheckpoint++;
      this.tailWhy = undefined;
      if (this.signer && this.sinceCheckpoint >= this.checkpointEvery) {
        const cp = await this.checkpoint("interval");
        entries.push(cp);
        pendingBytes += Buffer.byteLength(cp.line) + 1;
      }
    }
    await this.writeUnwritten();
  }

  /** {@link persist} (counting the records among `entries` durable), then hands out the anchors of the checkpoints among `entries` (`onCheckpoint`). */
  private async persistEntries(entries: SealedEntry[]): Promise<void> {
    await this.persist(entries);
    for (const e of entries) if (e.why === undefined) this.durable++;
    const hook = this.common.onCheckpoint;
    if (hook === undefined) return;
    for (const e of entries) {
      if (e.why === undefined) continue;
      const anchor: CheckpointAnchor = { chain: this.chainId, seq: e.seq, hash: e.hash, why: e.why, time: e.time };
      const failed = (err: unknown) => this.notice("audit onCheckpoint failed", { where: this.where(), seq: e.seq, error: err instanceof Error ? err.name : typeof err });
      try {
        const r = hook(anchor);
        if (r !== undefined && typeof (r as Promise<void>).then === "function") (r as Promise<void>).then(undefined, failed);
      } catch (err) {
        failed(err);
      }
    }
  }

  /**
   * Called by `open` before the sink is handed out, with the record of the chain's last entry when it continues one.
   * A chain that ended with its close checkpoint goes on as it is; any other end (a crash, a kill, a cut) gets a signed
   * `recover` checkpoint first, so the unclean end stays visible in the trail (see VerifyResult.recoveries).
   */
  protected async continueAfter(lastRecord: unknown): Promise<void> {
    const r = lastRecord as { type?: unknown; why?: unknown } | null | undefined;
    if (r?.type === "checkpoint" && r.why === "close") this.tailWhy = "close";
    else if (this.signer !== undefined && this.seq > 0) await this.persistEntries([await this.checkpoint("recover")]);
  }

  /** Seals a checkpoint entry over the current head. */
  private async checkpoint(why: CheckpointBody["why"]): Promise<SealedEntry> {
    const signer = this.signer!;
    const seq = ++this.seq;
    const time = new Date(this.now()).toISOString();
    const jws = await signer.sign(this.chainId, seq, this.head, time, why);
    const body: CheckpointBody = { type: "checkpoint", time, chain: this.chainId, kid: signer.kid, why, jws };
    const { line, hash } = sealEntry(seq, this.head, canonicalJson(body));
    const entry = { seq, prev: this.head, hash, line, time, type: "checkpoint", why };
    this.head = hash;
    this.sinceCheckpoint = 0;
    this.tailWhy = why;
    return entry;
  }
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A valid record standing in for `record`, which canonical JSON cannot represent (outcome failed, reason unserialisable_record). */
function placeholderRecord(record: AuditRecordInput, now: number): AuditRecordInput {
  const parsed = AuditRecordInputSchema.shape.type.safeParse(record.type);
  const time = typeof record.time === "string" && /^\d{4}-\d{2}-\d{2}T[\d:.]+Z$/.test(record.time) ? record.time : new Date(now).toISOString();
  return {
    v: AUDIT_RECORD_VERSION,
    id: typeof record.id === "string" && UUID_RE.test(record.id) ? record.id : randomUUID(),
    time,
    // a record is never a checkpoint (the verifier checks those as signed chain entries)
    type: parsed.success ? parsed.data : "request",
    actor: {},
    source: {},
    agent: typeof record.agent === "string" && /^[\w .:/-]{1,128}$/.test(record.agent) ? record.agent : "unknown",
    patients: [],
    scopes: [],
    outcome: "failed",
    reason: "unserialisable_record",
    guardrails: [],
    latencyMs: 0,
    digests: {},
  };
}
