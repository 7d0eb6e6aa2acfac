/**
 * Refusals of Node's HTTP parser, before express sees a request: headers over `maxHeaderSize` (431), malformed HTTP
 * (400), a request or its headers not received in time (408). Node answers them itself unless the server has a
 * `clientError` listener; this one answers them the same way and leaves one `http` audit record each.
 */
import type { Duplex } from "node:stream";
import { sourceOf, type RefusalAudit } from "./refusal-audit.js";

/** Node's own answers (lib/_http_server.js), by error code; any other parser error is a 400. */
const ANSWERS: Record<string, { status: number; text: string; reason: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, text: "Request Header Fields Too Large", reason: "headers_too_large" },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, text: "Payload Too Large", reason: "chunk_extensions_too_large" },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, text: "Request Timeout", reason: "request_timeout" },
};
const MALFORMED = { status: 400, text: "Bad Request", reason: "malformed_http" };

/**
 * The `clientError` listener of the app's HTTP server. A connection reset by the peer is no refusal (nothing is
 * answered or recorded); anything else gets Node's answer when the socket can still take one, then the socket is
 * destroyed, and one record: `type: "http"`, `outcome: "denied"`, `reason` (`headers_too_large`, `malformed_http`,
 * `request_timeout`, `chunk_extensions_too_large`), `status`, the peer's address. The parser had no method or path to
 * give, and none is read from the raw bytes (they may hold a token), so the record has no `method`.
 */
export function clientErrorHandler(audit: RefusalAudit): (error: Error & { code?: string }, socket: Duplex) => void {
  return (error, socket) => {
    const address = (socket as Duplex & { remoteAddress?: string }).remoteAddress;
    if (error.code === "ECONNRESET") {
      socket.destroy();
      return;
    }
    const answer = (error.code !== undefined && Object.hasOwn(ANSWERS, error.code) ? ANSWERS[error.code] : undefined) ?? MALFORMED;
    audit.write({ type: "http", actor: {}, source: sourceOf(address), transport: "http", outcome: "denied", reason: answer.reason, status: answer.status, latencyMs: 0 });
    // as Node does: no answer into a response already under way on this (kept-alive) connection
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    // answered and half-closed; what the peer still sends is read and dropped, so closing does not reset the connection
    // before the answer is read (a peer that does not close gets one second)
    if (socket.writable && !inFlight?.headersSent) {
      setTimeout(() => socket.destroy(), 1000).unref();
      socket.on("data", () => undefined).resume();
      socket.end(`HTTP/1.1 ${answer.status} ${answer.text}\r\nConnection: close\r\n\r\n`);
    } else {
      socket.destroy();
    }
  };
}
