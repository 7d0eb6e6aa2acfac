/**
 * The worker side of {@link WorkerFileAuditSink}: a {@link FileAuditSink} on its own thread. It receives batches of
 * records, appends them, flushes (one write and one fdatasync per batch, or per record in fsync mode) and reports the
 * durable position back. Loaded only by worker-sink.ts; not part of the public API.
 * @internal
 */
import { parentPort, workerData } from "node:worker_threads";
import type { JWK } from "jose";
import { SerialisedRecord } from "./chain-sink.js";
import { FileAuditSink, type FileAuditSinkOptions } from "./file-sink.js";

/** What the thread is started with (structured-cloneable: no functions). */
export interface WorkerInit {
  options: Omit<FileAuditSinkOptions, "onDurable" | "onNotice" | "now">;
}

/**
 * Messages to the worker. `append`: one group-commit window, each record as its RFC 8785 canonical JSON with its
 * `type` and its `time` ("" when not a string); `through`: the number of records the main thread had appended up to
 * and including this window.
 */
export type ToWorker = { t: "append"; canonical: string[]; types: string[]; times: string[]; through: number } | { t: "close" };

/** Where the chain stands (see FileAuditSink.position). */
export interface WorkerPosition {
  seq: number;
  head: string;
  file: string;
}

/** An error crossing the thread boundary. */
export interface ErrorInfo {
  name: string;
  message: string;
  code?: string;
}

/** Messages from the worker. */
export type FromWorker =
  | { t: "ready"; position: WorkerPosition; publicJwk: JWK | undefined }
  | { t: "open_failed"; error: ErrorInfo }
  | { t: "durable"; through: number; position: WorkerPosition }
  | { t: "notice"; message: string; meta: Record<string, unknown> }
  | { t: "failed"; error: ErrorInfo }
  | { t: "closed"; position: WorkerPosition }
  | { t: "close_failed"; error: ErrorInfo };

function errorInfo(e: unknown): ErrorInfo {
  const err = e instanceof Error ? e : new Error(String(e));
  const code = (err as { code?: unknown }).code;
  return { name: err.name, message: err.message, ...(typeof code === "string" && { code }) };
}

const port = parentPort;
if (port === null) throw new Error("worker-sink-thread runs only as a worker thread (use WorkerFileAuditSink.open)");
const post = (m: FromWorker): void => port.postMessage(m);
const init = workerData as WorkerInit;

let sink: FileAuditSink | undefined;
/** The position right after the last persisted batch (the sink's onDurable runs before the next batch is sealed). */
let durable: WorkerPosition | undefined;
try {
  sink = await FileAuditSink.open({
    ...init.options,
    onDurable: () => (durable = sink?.position),
    onNotice: (message, meta) => post({ t: "notice", message, meta }),
  });
  durable = sink.position;
} catch (e) {
  post({ t: "open_failed", error: errorInfo(e) });
  port.close();
}

if (sink !== undefined) {
  const s = sink;
  let failed = false;
  const fail = (e: unknown): void => {
    if (failed) return;
    failed = true;
    post({ t: "failed", error: errorInfo(e) });
  };
  port.on("message", (m: ToWorker) => {
    if (m.t === "append") {
      try {
        const batch: SerialisedRecord[] = [];
        for (let i = 0; i < m.canonical.length; i++) batch.push(new SerialisedRecord(m.canonical[i]!, m.types[i]!, m.times[i]));
        s.appendSerialised(batch);
      } catch (e) {
        fail(e);
        return;
      }
      // One flush per batch: the sink writes everything queued with one write and one fdatasync (group mode),
      // batches that arrive while a write is in progress go out together in the next one.
      s.flush().then(() => post({ t: "durable", through: m.through, position: durable ?? s.position }), fail);
    } else if (m.t === "close") {
      s.close().then(
        () => {
          post({ t: "closed", position: s.position });
          port.close();
        },
        (e: unknown) => {
          post({ t: "close_failed", error: errorInfo(e) });
          port.close();
        },
      );
    }
  });
  post({ t: "ready", position: s.position, publicJwk: s.publicJwk });
}
