import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { connectEcho, type Connected } from "../fixtures/harness.js";
import { textOf } from "../fixtures/echo-agent.js";

const answer = { role: "assistant" as const, model: "m", content: { type: "text" as const, text: "ok" } };

describe("HMCPClient over Streamable HTTP: abort signals", () => {
  let conn: Connected | undefined;
  const realFetch = globalThis.fetch;
  afterEach(async () => {
    globalThis.fetch = realFetch;
    await conn?.close();
    conn = undefined;
  });

  it("a long-lived client leaves no abort listeners behind on the signals it hands to fetch", async () => {
    // Every signal fetch is given, recorded: before the fix this was the transport's one session-long signal, which
    // collected one listener per request until a major GC (and a MaxListenersExceededWarning past 1,500).
    const signals = new Set<AbortSignal>();
    globalThis.fetch = (input, init) => {
      if (init?.signal) signals.add(init.signal);
      return realFetch(input, init);
    };
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(w.name);
    process.on("warning", onWarning);
    try {
      conn = await connectEcho("http", { onSampling: async () => answer });
      for (let i = 0; i < 250; i++) {
        const r = await conn.client.createMessage({ messages: [{ role: "user", content: { type: "text", text: `note ${i}` } }], maxTokens: 10 });
        expect(textOf(r.content)).toContain(`echo=note ${i};`);
      }
    } finally {
      process.off("warning", onWarning);
    }
    expect(signals.size).toBeGreaterThan(0);
    const most = Math.max(...[...signals].map((s) => getEventListeners(s, "abort").length));
    expect(most).toBeLessThan(10);
    expect(warnings).not.toContain("MaxListenersExceededWarning");
  });

  it("closing the client still aborts a request in flight", async () => {
    conn = await connectEcho("http", { onSampling: async () => answer });
    const started = performance.now();
    const pending = conn.client.createMessage({ messages: [{ role: "user", content: { type: "text", text: "slow:200" } }], maxTokens: 10 });
    const outcome = pending.then(
      () => "answered",
      (e: unknown) => (e instanceof Error ? e.message : String(e)),
    );
    await new Promise((r) => setTimeout(r, 100));
    await conn.client.close();
    const result = await outcome;
    expect(result).not.toBe("answered");
    expect(result).toMatch(/closed|abort/i);
    // slow:200 sends 200 progress notifications 20 ms apart (~4 s): the call ended with the close, not with the handler
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
