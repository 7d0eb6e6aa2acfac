/**
 * A fetch for the SDK's Streamable HTTP client transport whose link to the caller's AbortSignal ends with the request.
 *
 * Why: the transport passes one session-long AbortSignal (aborted by `close()`) to every fetch. Node's fetch (undici)
 * adds an abort listener to that signal per request and removes it only after the request object is garbage-collected
 * (a FinalizationRegistry callback). A client that sends requests steadily therefore holds thousands of stale listeners
 * on that signal until a major GC (measured: 2,242 after 3,000 sequential createMessage calls over one session), and
 * Node prints a MaxListenersExceededWarning to stderr for every request past 1,500.
 *
 * How: each request gets its own AbortController, linked to the caller's signal by one listener that is removed when
 * the response body has been read to the end, fails or is cancelled (or when fetch itself fails). Aborting the
 * caller's signal still aborts every request and body in flight. Redirect responses (3xx) are returned unwrapped so
 * the SDK's same-origin redirect handling sees the original response.
 */

import { listenForAbort } from "../util/abort.js";

/** The `fetch` signature the SDK's `StreamableHTTPClientTransportOptions.fetch` accepts. */
export type FetchFn = (input: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * Wraps `base` (default: the global `fetch`, looked up per call) so each request's abort link to `init.signal` is
 * released when the request ends, as described above.
 * @returns a fetch with the same contract; its responses (other than 3xx) are new `Response` objects with the same
 *   status, status text, headers and body (their `url` is empty)
 */
export function releasedSignalFetch(base?: FetchFn): FetchFn {
  return async (input, init) => {
    const call: FetchFn = base ?? ((i, o) => fetch(i, o));
    const outer = init?.signal;
    if (!outer || outer.aborted) return call(input, init);
    const inner = new AbortController();
    const release = listenForAbort(outer, () => inner.abort(outer.reason));
    let response: Response;
    try {
      response = await call(input, { ...init, signal: inner.signal });
    } catch (error) {
      release();
      throw error;
    }
    if (response.body === null || (response.status >= 300 && response.status < 400)) {
      release();
      return response;
    }
    return new Response(releasingBody(response.body, release), { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

/** `body`, read through: `release` runs once it ends, errors or is cancelled. */
function releasingBody(body: ReadableStream<Uint8Array>, release: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (error) {
        release();
        controller.error(error);
        return;
      }
      if (chunk.done) {
        release();
        controller.close();
      } else {
        controller.enqueue(chunk.value);
      }
    },
    async cancel(reason) {
      release();
      await reader.cancel(reason);
    },
  });
}
