/**
 * The hash-chained, fsync'd JSON Lines audit sink (DESIGN.md §4 "audit trail"; issue 4 "Storage").
 *
 * Why not a winston Transport: winston's `Transport.log(info, next)` acknowledges a line once it is
 * handed to a Node stream, with no hook for fsync or for telling the caller which records are
 * durable, and its object-mode stream pipeline costs more per record than the enqueue the request
 * path may afford. winston stays the project's operational logger ({@link createOperationalLogger});
 * this appender owns the chain, the durability policy and rotation.
 */
import { mkdir, open, readdir, stat, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { canonicalJson } from "./canonical-json.js";
import { GENESIS_HASH, createCheckpointSigner, sealEntry, type AuditSigningKey, type CheckpointBody, type CheckpointSigner } from "./chain.js";
import type { AuditRecordInput, AuditSink } from "./record.js";

/**
 * When appended records become durable.
 * - `fsync`: every record is written and fsync'd on its own before the next; an acknowledged
 *   record (see `onDurable`) survives a power loss. Throughput is bounded by the disk's fsync rate.
 * - `group` (default): records are gathered for at most `intervalMs` (default 5 ms) or
 *   `maxRecords` (default 256), then written with one `write` and one fsync. A crash loses at most
 *   the records of the open window; earlier records are intact.
 */
export type AuditDurability = { mode: "fsync" } | { mode: "group"; intervalMs?: number; maxRecords?: number };

/** Options of {@link FileAuditSink.open}. */
export interface FileAuditSinkOptions {
  /** Directory of the audit files; created if missing. */
  dir: string;
  /** File name prefix; files are `<prefix>-<YYYYMMDD>-<NNNNNN>.jsonl` (UTC day of opening, counter). Default "audit". */
  prefix?: string;
  /** Default `{ mode: "group", intervalMs: 5, maxRecords: 256 }`. */
  durability?: AuditDurability;
  /**
   * Rotation: a new file when the current one would exceed `maxBytes` (default 64 MiB) or, with
   * `daily` (default true), when the UTC day changes. The chain continues across files; each file
   * ends with a checkpoint.
   */
  rotate?: { maxBytes?: number; daily?: boolean };
  /**
   * The checkpoint key (Ed25519 or P-256 private key). Required: pass `false` only to opt out of
   * signed checkpoints knowingly (then a rewrite of the whole file with recomputed hashes is NOT
   * detectable).
   */
  signing: AuditSigningKey | false;
  /** A checkpoint every this many records (default 1000), plus one at rotation and at close. */
  checkpointEvery?: number;
  /** Chain id written in checkpoints (default: the prefix). One chain per instance. */
  chainId?: string;
  /** Called after each write+fsync with the highest durable `seq`. */
  onDurable?: (seq: number) => void;
  /**
   * Operational notices without PHI (torn tail recovered at open, write failure). Default: none.
   * Pass e.g. `(m, meta) => logger.warn(m, meta)` from {@link createOperationalLogger}.
   */
  onNotice?: (message: string, meta: Record<string, unknown>) => void;
  /** Maximum records waiting to be written before `append` throws (default 100,000). */
  maxQueued?: number;
  /** Clock (ms since the epoch), for tests. Default `Date.now`. */
  now?: () => number;
}

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

const FILE_RE = /^(.+)-(\d{8})-(\d{6})\.jsonl$/;

/**
 * Hash-chained JSON Lines audit sink with a durability policy, rotation and signed checkpoints.
 * Use {@link FileAuditSink.open}; always `await close()` on shutdown (flush, fsync, final checkpoint).
 *
 * `append` validates lightly (object with `v`, `id`, `type`) and enqueues; serialisation, hashing,
 * signing and I/O run in the write loop. The sink takes ownership of appended records: do not
 * mutate them afterwards.
 */
export class FileAuditSink implements AuditSink {
  private queue: AuditRecordInput[] = [];
  private appended = 0;
  private durable = 0;
  private waiters: { target: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failure: AuditSinkError | undefined;
  private closed = false;
  private sinceCheckpoint = 0;
  private readonly intervalMs: number;
  private readonly batchMax: number;
  private readonly maxBytes: number;
  private readonly daily: boolean;
  private readonly checkpointEvery: number;
  private readonly maxQueued: number;
  private readonly now: () => number;

  private constructor(
    private readonly opts: FileAuditSinkOptions,
    private readonly prefix: string,
    private readonly chainId: string,
    private readonly signer: CheckpointSigner | undefined,
    private file: { handle: FileHandle; path: string; bytes: number; day: string; counter: number },
    private seq: number,
    private head: string,
  ) {
    const d = opts.durability ?? { mode: "group" };
    this.intervalMs = d.mode === "group" ? (d.intervalMs ?? 5) : 0;
    this.batchMax = d.mode === "group" ? (d.maxRecords ?? 256) : 1;
    this.maxBytes = opts.rotate?.maxBytes ?? 64 * 1024 * 1024;
    this.daily = opts.rotate?.daily ?? true;
    this.checkpointEvery = opts.checkpointEvery ?? 1000;
    this.maxQueued = opts.maxQueued ?? 100_000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Opens (or continues) the chain in `opts.dir`: finds the newest `<prefix>-*.jsonl`, reads its
   * last complete line to continue `seq`/`prev`, and cuts off a torn last line (an incomplete write
   * from a crash; never an acknowledged record), reporting it through `onNotice`.
   * @throws Error on invalid options; {@link AuditSinkError} `unreadable_tail` when the last complete
   *   line is not a chain entry (run `hmcp audit verify` on the files).
   */
  static async open(opts: FileAuditSinkOptions): Promise<FileAuditSink> {
    validateOptions(opts);
    const prefix = opts.prefix ?? "audit";
    const signer = opts.signing === false ? undefined : await createCheckpointSigner(opts.signing);
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    const existing = (await readdir(opts.dir))
      .map((name) => ({ name, m: FILE_RE.exec(name) }))
      .filter((f): f is { name: string; m: RegExpExecArray } => f.m !== null && f.m[1] === prefix)
      .sort((a, b) => Number(a.m[3]) - Number(b.m[3]));
    const now = opts.now ?? Date.now;
    const today = utcDay(now());
    const last = existing.at(-1);
    let seq = 0;
    let head = GENESIS_HASH;
    let counter = 1;
    if (last !== undefined) {
      const p = path.join(opts.dir, last.name);
      const tail = await readTail(p, opts.onNotice);
      counter = Number(last.m[3]);
      if (tail !== undefined) {
        seq = tail.seq;
        head = tail.hash;
      }
    }
    let fileDay = last?.m[2] ?? today;
    const size = last !== undefined ? (await stat(path.join(opts.dir, last.name))).size : 0;
    if (last === undefined) fileDay = today;
    const name = last?.name ?? fileName(prefix, today, counter);
    const p = path.join(opts.dir, name);
    const handle = await open(p, "a", 0o600);
    return new FileAuditSink(opts, prefix, opts.chainId ?? prefix, signer, { handle, path: p, bytes: size, day: fileDay, counter }, seq, head);
  }

  /** Public JWK that verifies this sink's checkpoints (undefined when unsigned). */
  get publicJwk() {
    return this.signer?.publicJwk;
  }

  /** Highest `seq` written so far and the current file, for operations. */
  get position(): { seq: number; head: string; file: string } {
    return { seq: this.seq, head: this.head, file: this.file.path };
  }

  /**
   * Enqueues a record. Synchronous and cheap; the record is durable when `flush()` resolves.
   * @throws AuditSinkError `closed` after close, `write_failed` after a write error (fail closed),
   *   `backpressure` when `maxQueued` records wait, `invalid_record` when `v`/`id`/`type` are missing.
   */
  append(record: AuditRecordInput): void {
    if (this.closed) throw new AuditSinkError("closed", "audit sink is closed");
    if (this.failure) throw this.failure;
    if (typeof record !== "object" || record === null || record.v !== 1 || typeof record.id !== "string" || typeof record.type !== "string") {
      throw new AuditSinkError("invalid_record", "audit record needs v, id and type (build it with newAuditRecord)");
    }
    if (this.queue.length >= this.maxQueued) throw new AuditSinkError("backpressure", `audit sink has ${this.queue.length} records waiting to be written`);
    this.queue.push(record);
    this.appended++;
    if (this.queue.length >= this.batchMax || this.intervalMs === 0) this.kick();
    else this.timer ??= setTimeout(() => this.kick(), this.intervalMs);
  }

  /**
   * Resolves when every record appended before the call is written and fsync'd.
   * @throws AuditSinkError `write_failed` when the write or fsync failed.
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
   * Flushes, writes a final checkpoint (signed sinks), fsyncs and closes the file. Idempotent.
   * @throws AuditSinkError `write_failed` when records could not be written.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    while (this.loop) await this.loop;
    try {
      if (this.signer && this.sinceCheckpoint > 0) {
        const line = await this.checkpointLine("close");
        await this.file.handle.write(line);
        await this.file.handle.datasync();
      }
    } finally {
      await this.file.handle.close();
    }
  }

  private kick(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.loop) return;
    this.loop = this.run().finally(() => {
      this.loop = undefined;
      if (this.queue.length > 0 && !this.failure) this.kick();
    });
  }

  private async run(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.batchMax);
        await this.writeBatch(batch);
        this.durable += batch.length;
        this.opts.onDurable?.(this.seq);
        this.settle();
      }
    } catch (e) {
      this.failure = new AuditSinkError("write_failed", "audit write failed; the sink refuses further records", { cause: e });
      this.opts.onNotice?.("audit write failed", { file: path.basename(this.file.path), code: (e as NodeJS.ErrnoException).code });
      for (const w of this.waiters.splice(0)) w.reject(this.failure);
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

  private async writeBatch(batch: AuditRecordInput[]): Promise<void> {
    let out = "";
    let outBytes = 0;
    for (const record of batch) {
      let canonical: string;
      try {
        canonical = canonicalJson(record);
      } catch (e) {
        // A record JSON cannot carry: keep the chain honest with a placeholder that says so.
        this.opts.onNotice?.("audit record not serialisable; placeholder written", { id: String(record.id) });
        canonical = canonicalJson({ v: 1, id: record.id, type: record.type, time: record.time, error: "unserialisable_record", detail: String((e as Error).message) });
      }
      // 200 bytes: the seq/prev/hash envelope around the record.
      if (this.needsRotation(outBytes, Buffer.byteLength(canonical) + 200)) {
        await this.rotate(out);
        out = "";
        outBytes = 0;
      }
      const { line, hash } = sealEntry(++this.seq, this.head, canonical);
      this.head = hash;
      out += line + "\n";
      outBytes += Buffer.byteLength(line) + 1;
      this.sinceCheckpoint++;
      if (this.signer && this.sinceCheckpoint >= this.checkpointEvery) {
        const cp = await this.checkpointLine("interval");
        out += cp;
        outBytes += Buffer.byteLength(cp);
      }
    }
    if (out.length > 0) {
      await this.file.handle.write(out);
      this.file.bytes += outBytes;
      await this.file.handle.datasync();
    }
  }

  private needsRotation(pendingBytes: number, lineBytes: number): boolean {
    if (this.file.bytes === 0 && pendingBytes === 0) return false;
    if (this.daily && utcDay(this.now()) !== this.file.day) return true;
    return this.file.bytes + pendingBytes + lineBytes > this.maxBytes;
  }

  /** Writes `pending`, a rotation checkpoint, fsyncs, and opens the next file. */
  private async rotate(pending: string): Promise<void> {
    let out = pending;
    if (this.signer && this.sinceCheckpoint > 0) out += await this.checkpointLine("rotate");
    if (out.length > 0) await this.file.handle.write(out);
    await this.file.handle.datasync();
    await this.file.handle.close();
    const day = utcDay(this.now());
    const counter = this.file.counter + 1;
    const p = path.join(this.opts.dir, fileName(this.prefix, day, counter));
    const handle = await open(p, "a", 0o600);
    this.file = { handle, path: p, bytes: 0, day, counter };
  }

  private async checkpointLine(why: CheckpointBody["why"]): Promise<string> {
    const signer = this.signer!;
    const seq = ++this.seq;
    const time = new Date(this.now()).toISOString();
    const jws = await signer.sign(this.chainId, seq, this.head, time);
    const body: CheckpointBody = { type: "checkpoint", time, chain: this.chainId, kid: signer.kid, why, jws };
    const { line, hash } = sealEntry(seq, this.head, canonicalJson(body));
    this.head = hash;
    this.sinceCheckpoint = 0;
    const text = line + "\n";
    return text;
  }
}

function validateOptions(opts: FileAuditSinkOptions): void {
  if (typeof opts?.dir !== "string" || opts.dir === "") throw new Error("FileAuditSink: 'dir' is required");
  if (opts.signing === undefined) throw new Error("FileAuditSink: 'signing' is required (a checkpoint key, or false to opt out knowingly)");
  const known = new Set(["dir", "prefix", "durability", "rotate", "signing", "checkpointEvery", "chainId", "onDurable", "onNotice", "maxQueued", "now"]);
  for (const k of Object.keys(opts)) if (!known.has(k)) throw new Error(`FileAuditSink: unknown option '${k}'`);
  if (opts.prefix !== undefined && !/^[A-Za-z0-9_.]+$/.test(opts.prefix)) throw new Error("FileAuditSink: 'prefix' may hold letters, digits, '_' and '.' only");
  const d = opts.durability;
  if (d !== undefined) {
    if (d.mode !== "fsync" && d.mode !== "group") throw new Error("FileAuditSink: durability.mode must be 'fsync' or 'group'");
    if (d.mode === "group" && d.intervalMs !== undefined && !(d.intervalMs >= 0)) throw new Error("FileAuditSink: durability.intervalMs must be >= 0");
    if (d.mode === "group" && d.maxRecords !== undefined && !(Number.isInteger(d.maxRecords) && d.maxRecords >= 1)) throw new Error("FileAuditSink: durability.maxRecords must be an integer >= 1");
  }
  if (opts.checkpointEvery !== undefined && !(Number.isInteger(opts.checkpointEvery) && opts.checkpointEvery >= 1)) throw new Error("FileAuditSink: checkpointEvery must be an integer >= 1");
  if (opts.rotate?.maxBytes !== undefined && !(opts.rotate.maxBytes >= 4096)) throw new Error("FileAuditSink: rotate.maxBytes must be >= 4096");
}

function fileName(prefix: string, day: string, counter: number): string {
  return `${prefix}-${day}-${String(counter).padStart(6, "0")}.jsonl`;
}

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll("-", "");
}

/** Reads the last complete entry of a file, truncating a torn (unterminated) last line. */
async function readTail(file: string, onNotice: FileAuditSinkOptions["onNotice"]): Promise<{ seq: number; hash: string } | undefined> {
  const fh = await open(file, "r+");
  try {
    const { size } = await fh.stat();
    if (size === 0) return undefined;
    let chunk = Math.min(size, 256 * 1024);
    for (;;) {
      const buf = Buffer.alloc(chunk);
      await fh.read(buf, 0, chunk, size - chunk);
      const end = buf.lastIndexOf(0x0a);
      if (end !== chunk - 1) {
        // Torn last line: bytes after the last newline were never a complete (acknowledged) entry.
        const cut = end === -1 ? size - chunk : size - chunk + end + 1;
        if (end === -1 && chunk < size) {
          chunk = Math.min(size, chunk * 4);
          continue;
        }
        await fh.truncate(cut);
        await fh.datasync();
        onNotice?.("audit file had a torn last line (incomplete write); cut it off", { file: path.basename(file), bytes: size - cut });
        if (cut === 0) return undefined;
        return readTail(file, onNotice);
      }
      const start = buf.lastIndexOf(0x0a, end - 1);
      if (start === -1 && chunk < size) {
        chunk = Math.min(size, chunk * 4);
        continue;
      }
      const line = buf.subarray(start + 1, end).toString("utf8");
      try {
        const e = JSON.parse(line) as { seq?: unknown; hash?: unknown };
        if (typeof e.seq === "number" && typeof e.hash === "string") return { seq: e.seq, hash: e.hash };
      } catch {
        // fall through
      }
      throw new AuditSinkError("unreadable_tail", `audit file ${path.basename(file)} ends with a line that is not a chain entry; run 'hmcp audit verify'`);
    }
  } finally {
    await fh.close();
  }
}
