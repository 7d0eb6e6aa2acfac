/**
 * The file audit trail with its serialisation, hashing and I/O on a worker thread (issue 6: "keep audit I/O off the
 * request's critical path without weakening the durability policy").
 *
 * Why a worker and not the event loop: on the event loop, every record costs its serialisation, a SHA-256 chain hash
 * and its share of the write loop and of a write and an fdatasync call (about 25 µs at full speed, more when a
 * server's arrival rate makes group-commit batches small); a server spends that time not serving requests. Here the
 * event loop gathers the records of one group-commit window, serialises them (RFC 8785 canonical JSON, mostly native
 * JSON.stringify) and posts the strings to the worker in one message; the worker runs an ordinary
 * {@link FileAuditSink} (same chain, files, rotation, checkpoints, lock and recovery) and persists each window with
 * one write and one fdatasync. Durability is unchanged: the window closes
 * on the same `intervalMs` / `maxRecords` (default 5 ms / 256), `flush()` resolves only once the worker reports the
 * records fdatasync'd, and after a failed write every `append` throws (fail closed), as with `FileAuditSink`.
 */
import { Worker } from "node:worker_threads";
import type { JWK } from "jose";
import { AuditSinkError, serialiseRecord } from "./chain-sink.js";
import { validateFileSinkOptions, type FileAuditSinkOptions } from "./file-sink.js";
import { AUDIT_RECORD_VERSION, type AuditRecordInput, type AuditSink } from "./record.js";
import type { ErrorInfo, FromWorker, ToWorker, WorkerInit, WorkerPosition } from "./worker-sink-thread.js";

/** Options of {@link WorkerFileAuditSink.open}: those of {@link FileAuditSinkOptions} except the test clock `now`. */
export type WorkerFileAuditSinkOptions = Omit<FileAuditSinkOptions, "now">;

interface Waiter {
  target: number;
  resolve: () => void;
  reject: (e: unknown) => void;
}

const SINK_ERROR_CODES = new Set(["closed", "backpressure", "write_failed", "invalid_record", "unreadable_tail"]);

/**
 * Hash-chained JSON Lines audit sink whose serialisation, hashing, writes and fdatasync run on a worker thread.
 * Same files, chain, durability policy, rotation, signed checkpoints and failure behaviour as {@link FileAuditSink}
 * (it runs one on the worker); use it for servers. Open with {@link WorkerFileAuditSink.open}; always
 * `await close()` on shutdown.
 *
 * Each record is serialised (RFC 8785) on the calling thread when its window closes and crosses to the worker as a
 * string; the worker hashes, chains, writes and syncs. The chain holds exactly what `FileAuditSink` would write.
 */
export class WorkerFileAuditSink implements AuditSink {
  readonly #worker: Worker;
  readonly #options: WorkerFileAuditSinkOptions;
  readonly #intervalMs: number;
  readonly #batchMax: number;
  readonly #maxQueued: number;
  readonly #publicJwk: JWK | undefined;
  #position: WorkerPosition;
  #pending: AuditRecordInput[] = [];
  #timer: NodeJS.Timeout | undefined;
  #appended = 0;
  #durable = 0;
  #waiters: Waiter[] = [];
  #failure: AuditSinkError | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #onClosed: { resolve: () => void; reject: (e: unknown) => void } | undefined;
  #refd = false;
  #exited = false;
  #closedOk = false;

  private constructor(worker: Worker, options: WorkerFileAuditSinkOptions, ready: Extract<FromWorker, { t: "ready" }>) {
    this.#worker = worker;
    this.#options = options;
    const d = options.durability ?? { mode: "group" };
    this.#intervalMs = d.mode === "group" ? (d.intervalMs ?? 5) : 0;
    this.#batchMax = d.mode === "group" ? (d.maxRecords ?? 256) : 1;
    this.#maxQueued = options.maxQueued ?? 100_000;
    this.#position = ready.position;
    this.#publicJwk = ready.publicJwk;
    worker.on("message", (m: FromWorker) => this.#onMessage(m));
    worker.on("error", (e) => this.#fail(e));
    worker.on("exit", (code) => {
      this.#exited = true;
      if (this.#closedOk) return;
      this.#fail(new Error(`audit worker exited (code ${code})`));
      this.#onClosed?.reject(this.#failure);
    });
    worker.unref();
  }

  /**
   * Starts the worker and opens (or continues) the chain in `opts.dir`, as {@link FileAuditSink.open} does.
   * Takes ~30 ms (~200 ms when running the TypeScript sources through tsx).
   * @throws Error on invalid options (before starting the worker; `now` is not supported: use FileAuditSink in
   *   tests that need a clock) or when a live process holds the lock; {@link AuditSinkError} `unreadable_tail`.
   */
  static async open(opts: WorkerFileAuditSinkOptions): Promise<WorkerFileAuditSink> {
    if ((opts as FileAuditSinkOptions).now !== undefined) throw new Error("WorkerFileAuditSink: option 'now' is not supported (use FileAuditSink)");
    validateFileSinkOptions(opts);
    const { onDurable: _d, onNotice: _n, ...options } = opts;
    const worker = startWorker({ options });
    const ready = await new Promise<Extract<FromWorker, { t: "ready" }>>((resolve, reject) => {
      const onMessage = (m: FromWorker): void => {
        if (m.t === "ready") done(() => resolve(m));
        else if (m.t === "open_failed") done(() => reject(toError(m.error)));
        else if (m.t === "notice") opts.onNotice?.(m.message, m.meta);
      };
      const onError = (e: unknown): void => done(() => reject(e));
      const onExit = (code: number): void => done(() => reject(new Error(`audit worker exited (code ${code}) before the sink opened`)));
      const done = (settle: () => void): void => {
        worker.off("message", onMessage).off("error", onError).off("exit", onExit);
        settle();
      };
      worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    }).catch(async (e: unknown) => {
      await worker.terminate();
      throw e;
    });
    return new WorkerFileAuditSink(worker, opts, ready);
  }

  /** Public JWK that verifies this sink's checkpoints (undefined when unsigned). */
  get publicJwk(): JWK | undefined {
    return this.#publicJwk;
  }

  /** The chain's last durable `seq`, its hash and the current file, as of the worker's last report. */
  get position(): WorkerPosition {
    return { ...this.#position };
  }

  /**
   * Enqueues a record: a few checks and a push; it goes to the worker when the group-commit window closes. The
   * record is durable when `flush()` resolves. The sink takes ownership: do not mutate the record afterwards.
   * @throws AuditSinkError `closed` after close, `write_failed` after a persist error or a worker failure (fail
   *   closed), `backpressure` when `maxQueued` records are not yet durable, `invalid_record` without `v`/`id`/`type`.
   */
  append(record: AuditRecordInput): void {
    if (this.#closed) throw new AuditSinkError("closed", "audit sink is closed");
    if (this.#failure) throw this.#failure;
    if (typeof record !== "object" || record === null || record.v !== AUDIT_RECORD_VERSION || typeof record.id !== "string" || typeof record.type !== "string") {
      throw new AuditSinkError("invalid_record", "audit record needs v, id and type (build it with newAuditRecord)");
    }
    if (this.#appended - this.#durable >= this.#maxQueued) {
      throw new AuditSinkError("backpressure", `audit sink has ${this.#appended - this.#durable} records waiting to be written`);
    }
    this.#pending.push(record);
    this.#appended++;
    if (this.#pending.length >= this.#batchMax || this.#intervalMs === 0) this.#post();
    else this.#timer ??= setTimeout(() => this.#post(), this.#intervalMs);
  }

  /**
   * Resolves when every record appended before the call is durable (written and fdatasync'd by the worker).
   * @throws AuditSinkError `write_failed` when persisting failed or the worker died.
   */
  flush(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    const target = this.#appended;
    if (this.#durable >= target) return Promise.resolve();
    const p = new Promise<void>((resolve, reject) => this.#waiters.push({ target, resolve, reject }));
    this.#post();
    return p;
  }

  /**
   * Flushes, has the worker write a final checkpoint (signed sinks) and release the file and lock, then stops the
   * worker. Idempotent.
   * @throws AuditSinkError `write_failed` when records could not be persisted.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    let flushError: unknown;
    await this.flush().catch((e: unknown) => (flushError = e));
    if (!this.#exited) {
      const closed = new Promise<void>((resolve, reject) => (this.#onClosed = { resolve, reject }));
      this.#worker.ref();
      this.#send({ t: "close" });
      try {
        await closed;
      } catch (e) {
        await this.#worker.terminate();
        throw flushError ?? e;
      }
      // The worker ends by itself once it has closed its port; wait for it so nothing outlives close().
      if (!this.#exited) await new Promise((resolve) => this.#worker.once("exit", resolve));
    }
    if (flushError !== undefined) throw flushError;
  }

  /** Sends the open window to the worker. */
  #post(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#pending.length === 0 || this.#failure) return;
    const records = this.#pending;
    this.#pending = [];
    // Keep the process alive while records are on their way to the disk.
    if (!this.#refd) {
      this.#worker.ref();
      this.#refd = true;
    }
    // Serialised here (RFC 8785, the fast path is native JSON.stringify): a string crosses to the worker as a copy of
    // its bytes, where a structured clone of the record object would cost more than serialising it.
    const canonical: string[] = [];
    const types: string[] = [];
    const times: string[] = [];
    for (const r of records) {
      canonical.push(serialiseRecord(r, this.#options.onNotice));
      types.push(r.type);
      times.push(typeof r.time === "string" ? r.time : "");
    }
    this.#send({ t: "append", canonical, types, times, through: this.#appended });
  }

  #send(m: ToWorker): void {
    try {
      this.#worker.postMessage(m);
    } catch (e) {
      this.#fail(e);
    }
  }

  #onMessage(m: FromWorker): void {
    switch (m.t) {
      case "durable":
        if (m.through > this.#durable) this.#durable = m.through;
        this.#position = m.position;
        this.#options.onDurable?.(m.position.seq);
        this.#settle();
        if (this.#durable === this.#appended && this.#refd && this.#onClosed === undefined) {
          this.#worker.unref();
          this.#refd = false;
        }
        return;
      case "notice":
        this.#options.onNotice?.(m.message, m.meta);
        return;
      case "failed":
        this.#fail(toError(m.error));
        return;
      case "closed":
        this.#position = m.position;
        this.#closedOk = true;
        this.#onClosed?.resolve();
        return;
      case "close_failed":
        this.#fail(toError(m.error));
        this.#onClosed?.reject(this.#failure);
        return;
      default:
        return;
    }
  }

  #settle(): void {
    if (this.#waiters.length === 0) return;
    const keep: Waiter[] = [];
    for (const w of this.#waiters) {
      if (w.target <= this.#durable) w.resolve();
      else keep.push(w);
    }
    this.#waiters = keep;
  }

  #fail(cause: unknown): void {
    if (this.#failure) return;
    this.#failure =
      cause instanceof AuditSinkError && cause.code === "write_failed"
        ? cause
        : new AuditSinkError("write_failed", "audit write failed; the sink refuses further records", { cause });
    this.#options.onNotice?.("audit worker failed", { where: "worker", code: (cause as NodeJS.ErrnoException)?.code });
    for (const w of this.#waiters.splice(0)) w.reject(this.#failure);
    if (this.#timer) clearTimeout(this.#timer);
    this.#pending = [];
    if (this.#refd) {
      this.#worker.unref();
      this.#refd = false;
    }
  }
}

/** The worker, from the compiled .js next to this module, or through tsx's loader when running the .ts sources. */
function startWorker(init: WorkerInit): Worker {
  const here = import.meta.url;
  if (!here.endsWith(".ts")) return new Worker(new URL("./worker-sink-thread.js", here), { workerData: init });
  // Node 20 cannot load TypeScript, and a worker does not inherit the tsx loader of a vitest or tsx parent.
  const entry = new URL("./worker-sink-thread.ts", here).href;
  const tsx = import.meta.resolve("tsx/esm/api");
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(boot, { eval: true, workerData: init });
}

function toError(info: ErrorInfo): Error {
  if (info.name === "AuditSinkError" && info.code !== undefined && SINK_ERROR_CODES.has(info.code)) {
    return new AuditSinkError(info.code as AuditSinkError["code"], info.message);
  }
  const e = new Error(info.message);
  if (info.code !== undefined) (e as NodeJS.ErrnoException).code = info.code;
  return e;
}
