/**
 * Runs a demo agent as a process over stdio until stdin closes or SIGTERM / SIGINT arrives; then closes the server and
 * whatever else the agent opened (its EMR store, its audit sink), once, and exits 0.
 */
import { serveStdio, type HMCPServer } from "hmcp";

export async function runStdioAgent(server: HMCPServer, closeAlso: Array<() => Promise<unknown> | undefined>): Promise<void> {
  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    await server.close().catch(() => undefined);
    for (const close of closeAlso) await close()?.catch(() => undefined);
    process.exit(0);
  };
  await serveStdio(server);
  process.stdin.once("end", () => void shutdown());
  process.once("SIGTERM", () => void shutdown());
  process.once("SIGINT", () => void shutdown());
}
