/**
 * One abort listener whose lifetime the caller ends: for linking work to a signal that lives longer than the work (a
 * session-long transport signal, a request signal shared by several guardrails), without leaving a listener behind per
 * unit of work (Node warns past 10 listeners on one signal, and each keeps its closure alive).
 */

/**
 * Calls `onAbort` once when `signal` aborts, until the returned function is called. The returned function is
 * idempotent. Does not call `onAbort` for a signal that is already aborted: check `signal.aborted` first.
 * @returns a function removing the listener
 */
export function listenForAbort(signal: AbortSignal, onAbort: () => void): () => void {
  signal.addEventListener("abort", onAbort, { once: true });
  return () => signal.removeEventListener("abort", onAbort);
}
