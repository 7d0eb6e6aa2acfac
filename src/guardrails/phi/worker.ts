/**
 * The worker thread of a {@link PhiDetectorPool} (./pool.ts): one PHI detector built from `workerData.options`,
 * saying `{ ready: true }` once the detector is built, then answering `{ id, op, text }` with `{ id, result }` (a
 * {@link PhiRedaction} or the entity list), or `{ id, error }` naming the error class only (never the text).
 */
import { parentPort, workerData } from "node:worker_threads";
import { createPhiDetector, type PhiDetectorOptions } from "./detector.js";

/** A scan request from the pool. */
export interface PhiWorkerRequest {
  id: number;
  op: "redact" | "detect";
  text: string;
}

const port = parentPort;
if (port === null) throw new Error("guardrails/phi/worker: must run as a worker thread");
const detector = createPhiDetector((workerData as { options: PhiDetectorOptions }).options);
// the pool sends scans only once the detector is built: a scan's timeout never includes (or aborts) the start-up
port.postMessage({ ready: true });
port.on("message", (m: PhiWorkerRequest) => {
  try {
    port.postMessage({ id: m.id, result: m.op === "redact" ? detector.redact(m.text) : detector.detect(m.text) });
  } catch (e) {
    port.postMessage({ id: m.id, error: e instanceof Error ? e.name : "Error" });
  }
});
