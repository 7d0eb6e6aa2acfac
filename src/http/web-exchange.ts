/**
 * HMCP's own Node ↔ Web step for the MCP 2026-07-28 endpoint: the SDK's per-request handler (`createMcpHandler`) takes
 * a Web `Request` and answers a Web `Response`; express has already read and parsed the body. The SDK's general adapter
 * (`toNodeHandler` from `@modelcontextprotocol/node`) serialises the parsed body back into a string, encodes it again
 * for `content-length` and hands it to undici as a body stream, then copies the answer back chunk by chunk. Here the
 * `Request` carries the headers, the URL and an abort signal but no body: the handler is given the parsed body
 * (`parsedBody`, which it classifies and serves without reading the request's own body), and a JSON answer is written
 * back in one `end`. Measured in BENCHMARKS.md (session 26). Why our own: no library offers this step without the body
 * round trip; it holds no state.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { toWebRequest } from "@modelcontextprotocol/node";
import { INTERNAL_ERROR, TRANSPORT_ERROR } from "../protocol/errors.js";
import { echoableId, jsonRpcError } from "./json-rpc.js";

/** What the SDK's `createMcpHandler(...).fetch` takes besides the request. */
export interface FetchOptions {
  authInfo?: unknown;
  parsedBody?: unknown;
}

/** A Web-standard handler (the SDK's `createMcpHandler(...)`). */
export interface WebHandler {
  fetch(request: Request, options?: FetchOptions): Promise<Response>;
}

/** Headers that describe the body the Web request does not carry (the parsed body goes beside it). */
const BODY_HEADERS: ReadonlySet<string> = new Set(["content-length", "content-encoding", "transfer-encoding"]);

/**
 * The Web `Request` for an already parsed Node request: method, `http://<Host><url>`, the headers as Node parsed them
 * (`req.headers`: a repeated `Host`, `Content-Type` or `Authorization` keeps its first value, as the Host check and the
 * bearer check read it, and as the SDK's `toWebRequest` copies them) but the HTTP/2 pseudo-headers and those describing
 * the body, and `signal`. No body: pass the parsed body to the handler beside it.
 */
export function bodylessWebRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":") || BODY_HEADERS.has(name)) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  const host = req.headers.host ?? "localhost";
  return new Request(`http://${host}${req.url ?? "/"}`, { method: req.method ?? "GET", headers, signal });
}

/**
 * Serves one Node request through a Web-standard handler: builds the bodyless `Request` ({@link bodylessWebRequest});
 * a request no body parser has read (`req.body` undefined) is read into the `Request` by the SDK's own `toWebRequest`
 * instead, up to `maxRequestBodySize` bytes (a larger one is answered 413 by the SDK's handler rules: here, -32000).
 * Then calls `handler.fetch(request, { authInfo, parsedBody })` and writes the `Response` to `res`: a JSON (or empty)
 * answer in one `end`, anything else (an SSE stream) chunk by chunk, honouring backpressure, until it ends or the client
 * goes. The request's signal is aborted when the client goes before the answer is written. A handler that throws gets
 * a 500 with a JSON-RPC internal error (-32603) and `onerror` is told.
 * @param onRequest - called with the `Request` before the handler sees it (to find what the handler builds for it)
 */
export async function serveWebExchange(
  handler: WebHandler,
  req: IncomingMessage & { auth?: unknown; body?: unknown },
  res: ServerResponse,
  options: { onRequest?: (request: Request) => void; onerror?: (error: Error) => void; maxRequestBodySize?: number } = {},
): Promise<void> {
  let finished = false;
  const abort = new AbortController();
  res.on("close", () => {
    if (!finished) abort.abort();
  });
  if (res.destroyed) abort.abort();
  let response: Response;
  try {
    const request =
      req.body === undefined
        ? await toWebRequest(req as Parameters<typeof toWebRequest>[0], undefined, { signal: abort.signal, ...(options.maxRequestBodySize !== undefined && { maxRequestBodySize: options.maxRequestBodySize }) })
        : bodylessWebRequest(req, abort.signal);
    options.onRequest?.(request);
    response = await handler.fetch(request, {
      ...(req.auth !== undefined && { authInfo: req.auth }),
      ...(req.body !== undefined && { parsedBody: req.body }),
    });
  } catch (error) {
    if ((error as { name?: unknown } | null)?.name === "RequestBodyTooLargeError") {
      response = Response.json(jsonRpcError(TRANSPORT_ERROR, (error as Error).message), { status: 413, headers: { connection: "close" } });
    } else {
      try {
        options.onerror?.(error instanceof Error ? error : new Error(String(error)));
      } catch {
        // the observer's own failure must not stop the answer
      }
      response = Response.json({ ...jsonRpcError(INTERNAL_ERROR, "Internal server error"), id: echoableId(req.body) }, { status: 500 });
    }
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers) headers[name] = value;
  if (response.body === null || isJson(headers["content-type"])) {
    let body: Buffer | undefined;
    try {
      body = response.body === null ? undefined : Buffer.from(await response.arrayBuffer());
    } catch {
      // the body failed: the status and headers go out with what there is (nothing), as the chunk loop below would
    }
    // one write with its length: no chunked framing for an answer already whole
    if (body !== undefined) headers["content-length"] = String(body.byteLength);
    else delete headers["content-length"];
    finished = true;
    res.writeHead(response.status, headers);
    res.end(body);
    return;
  }
  res.writeHead(response.status, headers);
  let drained: (() => void) | undefined;
  const onDrain = () => {
    drained?.();
    drained = undefined;
  };
  res.on("drain", onDrain);
  const closed = new Promise<void>((resolve) => abort.signal.addEventListener("abort", () => resolve(), { once: true }));
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      if (abort.signal.aborted) break;
      if (!res.write(chunk)) await Promise.race([new Promise<void>((resolve) => (drained = resolve)), closed]);
    }
  } catch {
    // the stream failed or the client went: end what was sent
  } finally {
    res.off("drain", onDrain);
  }
  finished = true;
  res.end();
}

function isJson(contentType: string | undefined): boolean {
  return contentType !== undefined && /^application\/json\b/i.test(contentType);
}
