/**
 * `createHttpApp`'s `createServer` must build a new HMCPServer per session / request: a factory that hands out one
 * instance again is refused where it happens (the caller gets an error, the operator a log line naming the cause),
 * where before the reused instance's later sessions failed with -32601 and nothing said why.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createHttpApp, HMCPClient, HMCPServer, listen } from "hmcp";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe("createHttpApp's createServer", () => {
  it("a factory returning an instance it returned before is refused on that session or request, with the cause logged", async () => {
    const logged: string[] = [];
    // (the legacy era logs the error itself, the modern era its name and, for a configuration error, its message)
    const log = (m: string, meta?: Record<string, unknown>) => logged.push(`${m}: ${(meta?.["error"] as Error | undefined)?.message ?? meta?.["message"] ?? ""}`);
    const logger = { error: log, warn: log, info: () => undefined, debug: () => undefined };
    const shared = new HMCPServer({ name: "agent", version: "1.0.0" }, { auth: false, guardrails: false, audit: false }).sampling(() => ({ content: { type: "text", text: "ok" }, stopReason: "endTurn" }));
    const http = await listen(createHttpApp({ createServer: () => shared, bearer: false, logger } as Parameters<typeof createHttpApp>[0]));
    closers.push(() => http.close());
    const url = new URL("/mcp", http.url).href;
    const first = new HMCPClient({ name: "c1", version: "1.0.0" }, { guardrails: false });
    await first.connect({ type: "http", url });
    closers.unshift(() => first.close());
    expect((await first.ask("hello")).content).toMatchObject({ text: "ok" });
    for (const protocolEra of ["legacy", "modern"] as const) {
      const again = new HMCPClient({ name: "c2", version: "1.0.0" }, { protocolEra, guardrails: false });
      const err = await again
        .connect({ type: "http", url })
        .then(() => again.ask("hello"))
        .catch((e: unknown) => e);
      await again.close().catch(() => undefined);
      expect(err, protocolEra).toBeInstanceOf(Error);
    }
    // one log line per refused session (legacy) and request (modern), each naming the cause
    const cause = "createHttpApp: createServer returned a server it had returned before";
    expect(logged.filter((l) => l.startsWith("request failed: ") && l.includes(cause))).toHaveLength(1);
    expect(logged.filter((l) => l.startsWith("modern-era request failed") && l.includes(cause))).toHaveLength(1);
  });
});
