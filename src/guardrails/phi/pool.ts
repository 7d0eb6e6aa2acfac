/**
 * PHI scans on worker threads (`node:worker_threads`). The detector (./detector.ts) is synchronous: about 0.3 ms per KB
 * of clinical text, up to ~1 ms per KB on text built to be slow. On the event loop every other request waits that long,
 * and a guardrail timeout cannot interrupt it. A pool runs the scans beside the event loop: the event loop only copies
 * the text to a worker and the result back, an aborted scan is stopped (its worker is terminated after a 100 ms grace
 * and replaced), and on a machine with a free core the server answers more requests per second. Time spent waiting for
 * a worker counts against a caller's timeout: under a burst, scans queue (see docs/guardrails.md).
 *
 * Results are exactly those of {@link createPhiDetector} with the same options (the worker runs the same detector).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { listenForAbort } from "../../util/abort.js";
import { createPhiDetector, type PhiDetector, type PhiDetectorOptions, type PhiEntity, type PhiRedaction } from "./detector.js";
import type { PhiWorkerRequest } from "./worker.js";

/** Options of {@link createPhiDetectorPool}. */
export interface PhiDetectorPoolOptions {
  /** The detector each worker builds (entity types, extra names, lexicon file); default all types, shipped lexicon. */
  detector?: PhiDetectorOptions;
  /** Worker threads, 1–16; default 1. Each holds its own copy of the lexicon (about 30 MB RSS). */
  size?: number;
  /** A worker idle this long (ms) is stopped, freeing its memory; the next scan starts another (~0.2 s). Default 300,000 (5 min). */
  idleTimeoutMs?: number;
}

/** Scans run on worker threads. Safe to share; each worker runs one scan at a time, in the order they were asked for. */
export interface PhiDetectorPool {
  /**
   * Finds and replaces PHI with `[TYPE]`, as {@link PhiDetector.redact}.
   * @param signal - aborting it drops a queued scan, or stops the running one (its worker is terminated and replaced)
   * @throws PhiPoolError `aborted` (signal), `closed` (pool closed), `worker_failed` (the worker stopped or threw, or the detector cannot be built); TypeError when `text` is not a string; in the in-thread fallback, what the detector throws
   */
  redact(text: string, signal?: AbortSignal): Promise<PhiRedaction>;
  /** Finds entities, as {@link PhiDetector.detect}. @throws PhiPoolError as {@link PhiDetectorPool.redact} */
  detect(text: string, signal?: AbortSignal): Promise<PhiEntity[]>;
  /** Counters since creation. */
  stats(): PhiDetectorPoolStats;
  /**
   * Characters of the scans waiting for or held by a worker now (a caller may scan in place rather than queue behind a
   * backlog). A scan aborted after it was sent to a worker still counts until the worker is done with it or stopped.
   */
  backlogChars(): number;
  /** Starts the workers now instead of on the first scan (~0.2 s each), so that the first scans do not wait. */
  start(): void;
  /** Rejects queued and running scans (`closed`) and terminates the workers. Idempotent. */
  close(): Promise<void>;
}

/** What a pool has done. */
export interface PhiDetectorPoolStats {
  /** Scans answered by a worker. */
  workerScans: number;
  /** Workers started (the first scan, after an idle stop, after a restart). */
  started: number;
  /** Scans run on the calling thread because workers could not be started (see `fallback`). */
  inlineScans: number;
  /** Workers stopped before their scan ended: aborted scans, and workers that died. */
  restarts: number;
  /** Scans waiting for a worker now. */
  queued: number;
  /**
   * True once workers failed to start three times in a row (no scan answered): the pool then scans on the calling
   * thread, with the same results, and says so once with a process warning (`HMCP_PHI_WORKER_FALLBACK`). When the
   * detector cannot be built on the calling thread either (an unreadable lexicon), every scan fails with `worker_failed`.
   */
  fallback: boolean;
}

/** Why a pool scan did not complete. */
export class PhiPoolError extends Error {
  override readonly name = "PhiPoolError";
  constructor(
    readonly code: "aborted" | "closed" | "worker_failed",
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * How a worker starts. From dist/ it runs worker.js. From the TypeScript sources (tests, `tsx`) it runs worker.ts, which
 * plain Node cannot load: the worker first registers tsx's loader (the `tsx/esm/api` export, a dev dependency; a
 * `--import tsx` flag does not reach a worker's module loader on Node 20).
 */
function workerEntry(): { entry: URL | string; eval: boolean } {
  if (!import.meta.url.endsWith(".ts")) return { entry: new URL("./worker.js", import.meta.url), eval: false };
  const require = createRequire(import.meta.url);
  const pkgFile = require.resolve("tsx/package.json");
  const pkg = JSON.parse(readFileSync(pkgFile, "utf8")) as { exports: Record<string, { import: { default: string } }> };
  const api = pathToFileURL(path.join(path.dirname(pkgFile), pkg.exports["./esm/api"]!.import.default)).href;
  const worker = new URL("./worker.ts", import.meta.url).href;
  return { entry: `import(${JSON.stringify(api)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(worker)}); });`, eval: true };
}
let WORKER: ReturnType<typeof workerEntry> | undefined;
const START_FAILURES_BEFORE_FALLBACK = 3;

interface Job {
  id: number;
  op: PhiWorkerRequest["op"];
  text: string;
  resolve(v: unknown): void;
  reject(e: Error): void;
  /** Removes the job's abort listener (when it was given a signal). */
  unlink: (() => void) | undefined;
  signal: AbortSignal | undefined;
  /** Settled already (aborted while in a worker's queue): its reply is dropped. */
  done: boolean;
  /** When the worker began it (performance.now(), ms), once it is first in its worker. */
  startedAt: number;
  /** Posted to a worker and not yet answered or taken back: the worker is (or will be) busy with it, even if aborted. */
  sent: boolean;
  /** Its characters are in the pool's backlog count. */
  counted: boolean;
}

interface Slot {
  worker: Worker | undefined;
  /** The worker has built its detector (said `{ ready: true }`); scans are sent only then. */
  ready: boolean;
  /**
   * Scans posted to the worker, in the order it runs them: the first is running (or about to). Posting ahead keeps the
   * worker busy without waiting for the event loop between scans, and wakes it once per burst rather than per scan.
   */
  sent: Job[];
  idle: NodeJS.Timeout | undefined;
}

/** Scans posted ahead to one worker; the rest wait in the pool's queue (where an abort drops them at no cost). */
const MAX_SENT_PER_WORKER = 16;
/**
 * An aborted scan that has run for less than this (ms) may finish (its result is dropped) before its worker is stopped:
 * a scan of ordinary text ends within it, and stopping the worker would cost a restart (~0.2 s) for every scan queued
 * behind it. Text that takes longer (built to be slow, or huge) is stopped at this point.
 */
const ABORT_GRACE_MS = 100;

type WorkerReply = { ready: true } | { id: number; result: unknown } | { id: number; error: string };

class Pool implements PhiDetectorPool {
  readonly #options: PhiDetectorOptions;
  readonly #idleMs: number;
  readonly #slots: Slot[];
  readonly #queue: Job[] = [];
  #seq = 0;
  #closed = false;
  #startFailures = 0;
  #inline: PhiDetector | undefined;
  #broken: PhiPoolError | undefined;
  #workerScans = 0;
  #started = 0;
  #inlineScans = 0;
  #restarts = 0;
  #backlog = 0;

  constructor(options: PhiDetectorPoolOptions) {
    const size = options.size ?? 1;
    if (!(Number.isSafeInteger(size) && size >= 1 && size <= 16)) throw new TypeError("createPhiDetectorPool: 'size' must be an integer from 1 to 16");
    const idle = options.idleTimeoutMs ?? 300_000;
    if (!(Number.isSafeInteger(idle) && idle > 0)) throw new TypeError("createPhiDetectorPool: 'idleTimeoutMs' must be a positive integer");
    this.#options = { ...options.detector };
    this.#idleMs = idle;
    this.#slots = Array.from({ length: size }, () => ({ worker: undefined, ready: false, sent: [], idle: undefined }));
  }

  redact(text: string, signal?: AbortSignal): Promise<PhiRedaction> {
    return this.#submit("redact", text, signal) as Promise<PhiRedaction>;
  }

  detect(text: string, signal?: AbortSignal): Promise<PhiEntity[]> {
    return this.#submit("detect", text, signal) as Promise<PhiEntity[]>;
  }

  stats(): PhiDetectorPoolStats {
    return { workerScans: this.#workerScans, started: this.#started, inlineScans: this.#inlineScans, restarts: this.#restarts, queued: this.#queue.length, fallback: this.#inline !== undefined };
  }

  backlogChars(): number {
    return this.#backlog;
  }

  start(): void {
    if (this.#closed || this.#inline || this.#broken) return;
    for (const slot of this.#slots) if (!slot.worker && !this.#spawn(slot)) return;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const closed = () => new PhiPoolError("closed", "PHI detector pool is closed");
    for (const job of this.#queue.splice(0)) this.#settle(job, closed());
    const stopping: Array<Promise<number>> = [];
    for (const slot of this.#slots) {
      const worker = slot.worker;
      for (const job of this.#clear(slot)) this.#settle(job, closed());
      if (worker) stopping.push(worker.terminate());
    }
    await Promise.all(stopping);
  }

  #submit(op: Job["op"], text: string, signal: AbortSignal | undefined): Promise<unknown> {
    if (this.#closed) return Promise.reject(new PhiPoolError("closed", "PHI detector pool is closed"));
    if (typeof text !== "string") return Promise.reject(new TypeError("PhiDetectorPool: text must be a string"));
    if (signal?.aborted) return Promise.reject(new PhiPoolError("aborted", "PHI scan aborted", { cause: signal.reason }));
    if (this.#broken) return Promise.reject(this.#broken);
    if (this.#inline) return this.#runInline(op, text);
    return new Promise((resolve, reject) => {
      const job: Job = { id: ++this.#seq, op, text, resolve, reject, signal, unlink: undefined, done: false, startedAt: 0, sent: false, counted: true };
      if (signal) job.unlink = listenForAbort(signal, () => this.#abort(job));
      this.#queue.push(job);
      this.#backlog += text.length;
      this.#dispatch();
    });
  }

  #runInline(op: Job["op"], text: string): Promise<unknown> {
    this.#inlineScans++;
    try {
      return Promise.resolve(op === "redact" ? this.#inline!.redact(text) : this.#inline!.detect(text));
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error("PHI scan failed"));
    }
  }

  #settle(job: Job, error: Error | undefined, result?: unknown): void {
    if (job.done) return;
    job.done = true;
    // a scan a worker holds keeps counting until the worker is done with it (#onReply) or stopped (#clear)
    if (!job.sent) this.#uncount(job);
    job.unlink?.();
    if (error) job.reject(error);
    else job.resolve(result);
  }

  /** Takes a scan's characters out of the backlog count (once). */
  #uncount(job: Job): void {
    if (!job.counted) return;
    job.counted = false;
    this.#backlog -= job.text.length;
  }

  /**
   * Posts queued scans to the ready workers with the fewest outstanding, up to {@link MAX_SENT_PER_WORKER} each, and
   * starts the workers that are not running.
   */
  #dispatch(): void {
    if (this.#broken || this.#closed) return;
    if (this.#inline) {
      for (const job of this.#queue.splice(0)) this.#runInline(job.op, job.text).then((r) => this.#settle(job, undefined, r), (e: Error) => this.#settle(job, e));
      return;
    }
    if (this.#queue.length === 0) return;
    for (const slot of this.#slots) {
      if (!slot.worker && !this.#spawn(slot)) return;
      if (!slot.ready) slot.worker!.ref(); // scans wait for it
    }
    while (this.#queue.length > 0) {
      let best: Slot | undefined;
      for (const slot of this.#slots) if (slot.ready && slot.sent.length < MAX_SENT_PER_WORKER && (!best || slot.sent.length < best.sent.length)) best = slot;
      if (!best) return;
      this.#post(best, this.#queue.shift()!);
    }
  }

  #post(slot: Slot, job: Job): void {
    if (slot.idle) {
      clearTimeout(slot.idle);
      slot.idle = undefined;
    }
    const worker = slot.worker!;
    if (slot.sent.length === 0) {
      worker.ref();
      job.startedAt = performance.now();
    }
    slot.sent.push(job);
    job.sent = true;
    worker.postMessage({ id: job.id, op: job.op, text: job.text } satisfies PhiWorkerRequest);
  }

  /**
   * Starts the slot's worker (referenced until it is ready: a caller waiting for scans keeps the process alive). False
   * when the thread could not be created (e.g. ERR_WORKER_INIT_FAILED when the system is out of threads): counted as a
   * start failure, retried on the next turn of the event loop.
   */
  #spawn(slot: Slot): boolean {
    let worker: Worker;
    try {
      WORKER ??= workerEntry();
      worker = new Worker(WORKER.entry, { eval: WORKER.eval, workerData: { options: this.#options }, name: "hmcp-phi" });
    } catch (e) {
      this.#startFailed(e instanceof Error ? e : new Error("worker start failed"));
      setImmediate(() => this.#dispatch());
      return false;
    }
    slot.worker = worker;
    slot.ready = false;
    this.#started++;
    // a worker started ahead of any scan (start()) does not hold the process open while it starts
    if (this.#queue.length === 0) worker.unref();
    worker.on("message", (m: WorkerReply) => this.#onReply(slot, worker, m));
    worker.on("error", (e) => this.#onDown(slot, worker, e));
    worker.on("exit", (code) => this.#onDown(slot, worker, new Error(`PHI worker exited with code ${code}`)));
    return true;
  }

  #onReply(slot: Slot, worker: Worker, m: WorkerReply): void {
    if (slot.worker !== worker) return;
    if ("ready" in m) {
      slot.ready = true;
      this.#startFailures = 0;
      this.#dispatch();
      if (slot.worker === worker && slot.sent.length === 0) this.#idle(slot, worker);
      return;
    }
    if (slot.sent[0]?.id !== m.id) return;
    const job = slot.sent.shift()!;
    job.sent = false;
    this.#uncount(job);
    this.#workerScans++;
    if ("error" in m) this.#settle(job, new PhiPoolError("worker_failed", `PHI scan failed in the worker (${m.error})`));
    else this.#settle(job, undefined, m.result);
    const next = slot.sent[0];
    if (next) {
      next.startedAt = performance.now();
      // aborted while it waited in the worker: it runs now, and is stopped if it outlasts the grace
      if (next.done) this.#stopLater(slot, next);
    }
    this.#dispatch();
    if (slot.worker === worker && slot.sent.length === 0) this.#idle(slot, worker);
  }

  /** No scan for the worker: it no longer keeps the process alive, and stops after the idle timeout. */
  #idle(slot: Slot, worker: Worker): void {
    worker.unref();
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = setTimeout(() => {
      if (slot.worker !== worker || slot.sent.length > 0) return;
      this.#clear(slot);
      void worker.terminate();
    }, this.#idleMs);
    slot.idle.unref();
  }

  /** The slot's worker died (error or exit we did not ask for). */
  #onDown(slot: Slot, worker: Worker, error: Error): void {
    if (slot.worker !== worker) return; // replaced on purpose, or the second event of the same death
    const wasReady = slot.ready;
    const sent = this.#clear(slot);
    this.#restarts++;
    void worker.terminate();
    if (this.#closed) return;
    if (!wasReady) {
      // a worker that died before its detector was built failed to start (module or lexicon load; it had no scan):
      // the scans wait for the next worker; after three failures in a row they run on this thread
      this.#startFailed(error);
    } else {
      // the running scan took the worker down; the ones behind it go to the next worker
      const [running, ...waiting] = sent;
      if (running) this.#settle(running, new PhiPoolError("worker_failed", "the PHI scan's worker thread stopped", { cause: error }));
      this.#requeue(waiting);
    }
    this.#dispatch();
  }

  #startFailed(error: Error): void {
    if (++this.#startFailures >= START_FAILURES_BEFORE_FALLBACK) this.#fallback(error);
  }

  #fallback(error: Error): void {
    if (this.#inline || this.#broken) return;
    for (const slot of this.#slots) {
      const worker = slot.worker;
      this.#requeue(this.#clear(slot));
      if (worker) void worker.terminate();
    }
    try {
      this.#inline = createPhiDetector(this.#options);
    } catch (e) {
      // the detector cannot be built here either (its lexicon cannot be read): every scan fails, and fails closed
      this.#broken = new PhiPoolError("worker_failed", "PHI detector cannot be built (see cause)", { cause: e });
      for (const job of this.#queue.splice(0)) this.#settle(job, this.#broken);
      return;
    }
    const code = (error as NodeJS.ErrnoException).code;
    process.emitWarning(`PHI scans run on the event loop: worker threads failed to start ${START_FAILURES_BEFORE_FALLBACK} times (${error.name}${code ? ` ${code}` : ""})`, {
      code: "HMCP_PHI_WORKER_FALLBACK",
    });
  }

  #abort(job: Job): void {
    if (job.done) return;
    const i = this.#queue.indexOf(job);
    this.#settle(job, new PhiPoolError("aborted", "PHI scan aborted", { cause: job.signal?.reason }));
    if (i >= 0) {
      this.#queue.splice(i, 1);
      return;
    }
    // running (first in its worker): the scan cannot be interrupted inside the worker; past the grace its worker is
    // stopped and the scans behind it go to a new one. Waiting behind another scan: handled when it comes up (#onReply).
    const slot = this.#slots.find((s) => s.sent[0] === job);
    if (slot) this.#stopLater(slot, job);
  }

  /** Stops the slot's worker if `job` (aborted, first in the worker) is still running at the end of its grace. */
  #stopLater(slot: Slot, job: Job): void {
    const worker = slot.worker;
    const stop = () => {
      if (slot.worker !== worker || slot.sent[0] !== job) return; // finished, or the worker is gone already
      this.#restart(slot);
      this.#dispatch();
    };
    const left = job.startedAt + ABORT_GRACE_MS - performance.now();
    if (left <= 0) stop();
    else setTimeout(stop, left).unref();
  }

  /** Terminates the slot's worker; the scans it held that are still wanted go back to the front of the queue. */
  #restart(slot: Slot): void {
    const worker = slot.worker;
    const sent = this.#clear(slot);
    this.#restarts++;
    if (worker) void worker.terminate();
    this.#requeue(sent);
  }

  /** Puts scans a worker held back at the front of the queue, in order, less those already settled (aborted). */
  #requeue(jobs: Job[]): void {
    this.#queue.unshift(...jobs.filter((j) => !j.done));
  }

  /**
   * Empties the slot; returns the scans it had sent. Those already settled (aborted) leave the backlog count; the others
   * stay in it, to be requeued or settled by the caller.
   */
  #clear(slot: Slot): Job[] {
    if (slot.idle) clearTimeout(slot.idle);
    slot.idle = undefined;
    slot.worker = undefined;
    slot.ready = false;
    const sent = slot.sent.splice(0);
    for (const job of sent) {
      job.sent = false;
      if (job.done) this.#uncount(job);
    }
    return sent;
  }
}

/**
 * Creates a pool of PHI detector worker threads. Workers start on the first scan (or `start()`) and stop after
 * `idleTimeoutMs` without one; an idle worker does not keep the process alive.
 * @throws TypeError when `size` is not an integer from 1 to 16 or `idleTimeoutMs` not a positive integer
 */
export function createPhiDetectorPool(options: PhiDetectorPoolOptions = {}): PhiDetectorPool {
  return new Pool(options);
}
