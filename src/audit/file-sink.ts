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
import { GENESIS_HASH, createCheckpointSigner, type AuditSigningKey, type CheckpointSigner } from "./chain.js";
import { AuditSinkError, ChainSinkBase, COMMON_OPTION_KEYS, noticeTo, validateCommon, type ChainSinkCommon, type SealedEntry } from "./chain-sink.js";
import { releasePidLock, takePidLock } from "../util/pid-lock.js";
import { refuseUnknownOptions } from "../protocol/config-error.js";

/** Options of {@link FileAuditSink.open}. */
export interface FileAuditSinkOptions extends ChainSinkCommon {
  /** Directory of the audit files; created if missing. */
  dir: string;
  /** File name prefix; files are `<prefix>-<YYYYMMDD>-<NNNNNN>.jsonl` (UTC day of opening, counter). Default "audit". */
  prefix?: string;
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
  /** Chain id written in checkpoints (default: the prefix). One chain per instance. */
  chainId?: string;
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
export class FileAuditSink extends ChainSinkBase {
  private readonly maxBytes: number;
  private readonly daily: boolean;
  private lockPath: string | undefined;
  /** A write failed after the last persisted entry: bytes past `file.bytes` may be a torn line. */
  private torn = false;
  /** The current file's handle was closed by a rotation that failed before the next file opened. */
  private handleClosed = false;
  /** When the current file's UTC day ends, ms since the epoch. */
  private dayEnds: number;

  private constructor(
    private readonly opts: FileAuditSinkOptions,
    private readonly prefix: string,
    chainId: string,
    signer: CheckpointSigner | undefined,
    private file: { handle: FileHandle; path: string; bytes: number; day: string; counter: number },
    seq: number,
    head: string,
  ) {
    super(opts, chainId, signer, seq, head);
    this.maxBytes = opts.rotate?.maxBytes ?? 64 * 1024 * 1024;
    this.daily = opts.rotate?.daily ?? true;
    this.dayEnds = dayEnd(file.day);
  }

  /**
   * Opens (or continues) the chain in `opts.dir`: finds the newest `<prefix>-*.jsonl`, reads its
   * last complete line to continue `seq`/`prev`, and cuts off a torn last line (an incomplete write
   * from a crash; never an acknowledged record), reporting it through `onNotice`. When the newest
   * file holds no complete entry (a crash right after rotation created it), `seq`/`prev` come from
   * the newest file that does, and writing goes on in the newest file. A chain that did not end with
   * its close checkpoint gets a signed `recover` checkpoint first.
   * One writer per chain: `<prefix>.lock` in `dir` holds the writer's pid; a lock left by a dead
   * process (crash) is taken over, by one process only when several open the chain at once (the lock
   * appears with its pid in it, and a stale one is removed only under `<prefix>.lock.<pid>.takeover`).
   * The folder's file system must support hard links (POSIX file systems, NTFS).
   * @throws Error on invalid options or when a live process holds the lock; {@link AuditSinkError}
   *   `unreadable_tail` when the last complete line is not a chain entry (run `hmcp audit verify`).
   */
  static async open(opts: FileAuditSinkOptions): Promise<FileAuditSink> {
    validateOptions(opts);
    const prefix = opts.prefix ?? "audit";
    const signer = opts.signing === false ? undefined : await createCheckpointSigner(opts.signing);
    await mkdir(opts.dir, { recursive: true, mode: 0o700 });
    const lock = await takeLock(path.join(opts.dir, `${prefix}.lock`));
    try {
      return await FileAuditSink.openLocked(opts, prefix, signer, lock);
    } catch (e) {
      await releasePidLock(lock);
      throw e;
    }
  }

  private static async openLocked(opts: FileAuditSinkOptions, prefix: string, signer: CheckpointSigner | undefined, lock: string): Promise<FileAuditSink> {
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
    let size = 0;
    let tail: Awaited<ReturnType<typeof readTail>>;
    if (last !== undefined) {
      // The newest file may hold no entry: rotate() creates it before the first batch is written into it, so a crash
      // in between leaves it empty (or holding only a torn line, cut off here). The chain goes on from the newest file
      // that holds a complete entry, and is written into the newest file; an empty file left between is no entry.
      for (let i = existing.length - 1; i >= 0 && tail === undefined; i--) tail = await readTail(path.join(opts.dir, existing[i]!.name), noticeTo(opts));
      counter = Number(last.m[3]);
      if (tail !== undefined) {
        seq = tail.seq;
        head = tail.hash;
      }
      size = (await stat(path.join(opts.dir, last.name))).size;
    }
    const fileDay = last?.m[2] ?? today;
    const p = path.join(opts.dir, last?.name ?? fileName(prefix, today, counter));
    const handle = await open(p, "a", 0o600);
    // a new file, or one a crash may have left before its directory entry was synced (rotate syncs after creating)
    if (last === undefined || size === 0) await syncDir(opts.dir);
    await noticeOpenModes(opts.dir, handle, noticeTo(opts)).catch(() => undefined);
    const sink = new FileAuditSink(opts, prefix, opts.chainId ?? prefix, signer, { handle, path: p, bytes: size, day: fileDay, counter }, seq, head);
    sink.lockPath = lock;
    if (tail !== undefined) {
      try {
        await sink.continueAfter(tail.record);
      } catch (e) {
        await handle.close().catch(() => undefined);
        throw e;
      }
    }
    return sink;
  }

  /** Highest `seq` sealed so far, the chain head and the current file, for operations. */
  get position(): { seq: number; head: string; file: string } {
    return { seq: this.seq, head: this.head, file: this.file.path };
  }

  protected override async persist(entries: SealedEntry[]): Promise<void> {
    if (entries.length === 0) return;
    let out = "";
    for (const e of entries) out += e.line + "\n";
    // A write that failed may have left part of its lines (a torn line) after the last persisted entry: cut it off
    // before writing them again (recovery), so the file holds each entry once.
    if (this.torn) await this.file.handle.truncate(this.file.bytes);
    this.torn = true;
    // appendFile loops until every byte is written (a single write(2) may be partial, e.g. near ENOSPC).
    await this.file.handle.appendFile(out, "utf8");
    await this.file.handle.datasync();
    this.file.bytes += Buffer.byteLength(out);
    this.torn = false;
  }

  protected override shouldRotate(pendingBytes: number, lineBytes: number): boolean {
    if (this.file.bytes === 0 && pendingBytes === 0) return false;
    if (this.daily && this.now() >= this.dayEnds) return true;
    return this.file.bytes + pendingBytes + lineBytes > this.maxBytes;
  }

  protected override async rotate(): Promise<void> {
    // a rotation retried after a failure (recovery) finds the old file closed already
    if (!this.handleClosed) {
      await this.file.handle.close();
      this.handleClosed = true;
    }
    const day = utcDay(this.now());
    const counter = this.file.counter + 1;
    const p = path.join(this.opts.dir, fileName(this.prefix, day, counter));
    const handle = await open(p, "a", 0o600);
    await syncDir(this.opts.dir);
    this.file = { handle, path: p, bytes: 0, day, counter };
    this.handleClosed = false;
    this.torn = false;
    this.dayEnds = dayEnd(day);
  }

  protected override async release(): Promise<void> {
    try {
      if (!this.handleClosed) await this.file.handle.close();
    } finally {
      if (this.lockPath) await releasePidLock(this.lockPath);
    }
  }

  protected override where(): string {
    return path.basename(this.file.path);
  }
}

function validateOptions(opts: FileAuditSinkOptions): void {
  if (typeof opts?.dir !== "string" || opts.dir === "") throw new Error("FileAuditSink: 'dir' is required");
  if (opts.signing === undefined) throw new Error("FileAuditSink: 'signing' is required (a checkpoint key, or false to opt out knowingly)");
  const known = new Set(["dir", "prefix", "rotate", "signing", "chainId", ...COMMON_OPTION_KEYS]);
  refuseUnknownOptions("FileAuditSink", opts, known);
  if (opts.prefix !== undefined && !/^[A-Za-z0-9_.]+$/.test(opts.prefix)) throw new Error("FileAuditSink: 'prefix' may hold letters, digits, '_' and '.' only");
  validateCommon("FileAuditSink", opts);
  if (opts.rotate?.maxBytes !== undefined && !(opts.rotate.maxBytes >= 4096)) throw new Error("FileAuditSink: rotate.maxBytes must be >= 4096");
}

function fileName(prefix: string, day: string, counter: number): string {
  return `${prefix}-${day}-${String(counter).padStart(6, "0")}.jsonl`;
}

/** Takes `<prefix>.lock` (see {@link takePidLock}). @throws Error when a running process, this one included, holds it. */
async function takeLock(lock: string): Promise<string> {
  const r = await takePidLock(lock);
  if (r.taken) return lock;
  if (r.pid === process.pid) throw new Error(`FileAuditSink: this process already has a sink open on ${path.basename(lock)}`);
  throw new Error(`FileAuditSink: ${path.basename(lock)} is held by running process ${r.pid}; one writer per audit chain (use another dir or prefix)`);
}

/** fsyncs a directory so a newly created file's entry survives a power loss (POSIX; best effort elsewhere). */
async function syncDir(dir: string): Promise<void> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, "r");
    await fh.sync();
  } catch {
    // Some platforms cannot open or fsync a directory; the file's own fsync still holds its data.
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** End of a UTC day "YYYYMMDD", ms since the epoch. */
function dayEnd(day: string): number {
  return Date.UTC(Number(day.slice(0, 4)), Number(day.slice(4, 6)) - 1, Number(day.slice(6, 8)) + 1);
}

/**
 * Audit records name patients and clients, so the sink creates its folder 0700 and its files 0600. A folder or file
 * that existed before with group or other access keeps its mode (an operator may have granted a log shipper's group
 * read access on purpose), and is reported once at open. POSIX modes only; not checked on Windows.
 */
async function noticeOpenModes(dir: string, handle: FileHandle, notice: (message: string, meta: Record<string, unknown>) => void): Promise<void> {
  if (process.platform === "win32") return;
  const dirMode = (await stat(dir)).mode & 0o777;
  if ((dirMode & 0o077) !== 0) {
    notice("audit folder is open to other users (audit records name patients and clients); restrict it, e.g. chmod 700", { mode: dirMode.toString(8).padStart(4, "0") });
  }
  const fileMode = (await handle.stat()).mode & 0o777;
  if ((fileMode & 0o077) !== 0) {
    notice("audit file is open to other users (audit records name patients and clients); restrict it, e.g. chmod 600", { mode: fileMode.toString(8).padStart(4, "0") });
  }
}

function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll("-", "");
}

/** Reads the last complete entry of a file, truncating a torn (unterminated) last line. */
async function readTail(file: string, onNotice: (message: string, meta: Record<string, unknown>) => void): Promise<{ seq: number; hash: string; record: unknown } | undefined> {
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
        onNotice("audit file had a torn last line (incomplete write); cut it off", { file: path.basename(file), bytes: size - cut });
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
        const e = JSON.parse(line) as { seq?: unknown; hash?: unknown; record?: unknown };
        if (typeof e.seq === "number" && typeof e.hash === "string") return { seq: e.seq, hash: e.hash, record: e.record };
      } catch {
        // fall through
      }
      throw new AuditSinkError("unreadable_tail", `audit file ${path.basename(file)} ends with a line that is not a chain entry; run 'hmcp audit verify'`);
    }
  } finally {
    await fh.close();
  }
}
