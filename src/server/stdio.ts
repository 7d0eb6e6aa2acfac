/**
 * Runs an HMCPServer over stdin/stdout (MCP spec "Transports: stdio"), both protocol eras: the client's opening message
 * picks the connection's era (an `initialize` handshake: 2025-11-25 and older; a `server/discover` or an enveloped
 * request: 2026-07-28), through the SDK's `serveStdio`. stdio has no HTTP auth: requests run under the server's
 * configured `auth.localPrincipal` (DESIGN.md §2).
 */
import { serveStdio as serveStdioEras, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { STDIO_ENTRY, type HMCPServer } from "./hmcp-server.js";
import { recordStdioRefusals } from "./stdio-refusals.js";

/**
 * Serves `server` on this process's stdin/stdout (it connects on the client's opening message) and resolves at once. The process keeps serving until
 * stdin closes; then the server is closed, and a request still running gets its audit record at once (`outcome:
 * "failed"`, `reason: "abandoned_at_shutdown"`, written before `session.end` and not again when it returns).
 * @returns a function that closes the server.
 */
export async function serveStdio(
  server: HMCPServer,
  io: { stdin?: NodeJS.ReadableStream; stdout?: NodeJS.WritableStream } = {},
): Promise<() => Promise<void>> {
  const transport = new StdioServerTransport(
    (io.stdin ?? process.stdin) as ConstructorParameters<typeof StdioServerTransport>[0],
    (io.stdout ?? process.stdout) as ConstructorParameters<typeof StdioServerTransport>[1],
  );
  // what the SDK answers itself (its stdio entry, its request dispatch), before any handler, gets its audit record there
  const refusals = recordStdioRefusals(transport, server.pipeline);
  // one connection, one instance: on the modern era it serves per request, with sampling reached as its tool
  const handle = serveStdioEras(({ era }) => (era === "modern" ? server[STDIO_ENTRY]().serveModernEra() : server[STDIO_ENTRY]()), { transport });
  refusals.watchInbound();
  // written before the client's first message connects the server (so before it knows its transport)
  server.pipeline.recordSession("session.start", undefined, "stdio");
  const stdin = io.stdin ?? process.stdin;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    // no reply can reach the client any more: a request still running is recorded now, before the session's end, and
    // not again when it returns (the caller may close the audit sink right after this)
    server.pipeline.recordAbandoned("abandoned_at_shutdown");
    server.pipeline.recordSession("session.end", "stdin_closed", "stdio");
    await handle.close();
    await server.close();
  };
  stdin.once("end", () => void close());
  return close;
}
