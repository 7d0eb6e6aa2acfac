import { afterEach, describe, expect, it } from "vitest";
import { ProtocolError, SdkErrorCode, SdkError } from "@modelcontextprotocol/server";
import { HMCPErrorCode } from "hmcp";
import { connectEcho, type Connected } from "../../fixtures/harness.js";

let conn: Connected | undefined;
afterEach(async () => {
  await conn?.close();
  conn = undefined;
});

describe("HMCPClient.createMessage", () => {
  it("times out after timeoutMs without progress", async () => {
    conn = await connectEcho("memory");
    const e = await conn.client.ask("slow:20", { timeoutMs: 50 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SdkError);
    expect((e as SdkError).code).toBe(SdkErrorCode.RequestTimeout);
  });

  it("progress resets the timeout: a long request that reports progress completes", async () => {
    conn = await connectEcho("memory");
    const seen: number[] = [];
    const r = await conn.client.ask("slow:30", { timeoutMs: 300, onProgress: (p) => seen.push(p.progress) });
    expect(r.content).toEqual({ type: "text", text: "done after 30 steps" });
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });

  it("an abort signal cancels the request", async () => {
    conn = await connectEcho("memory");
    const ac = new AbortController();
    const p = conn.client.ask("slow:50", { signal: ac.signal });
    setTimeout(() => ac.abort(new Error("user cancelled")), 30);
    await expect(p).rejects.toThrow(/cancelled/);
    // the connection stays usable
    expect((await conn.client.ask("need-info")).stopReason).toBe("infoNeeded");
  });
});

describe("a patient-bound HMCPClient", () => {
  it("declares its patient on createMessage and checks server → client requests against it", async () => {
    const seen: string[] = [];
    conn = await connectEcho("memory", {
      patient: "p-1",
      onSampling: async (params) => {
        seen.push(JSON.stringify(params.messages));
        return { role: "assistant", model: "m", content: { type: "text", text: "ok" } };
      },
      onElicitation: async () => ({ action: "accept", content: { approved: true } }),
    });
    // the echo agent samples back "summarise: <text>": a FHIR reference to another patient is refused by the
    // client's patient-context guardrail before the client's model sees it
    const e = await conn.client.ask('{"subject":{"reference":"Patient/p-2"}}').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ProtocolError);
    expect((e as ProtocolError).code).toBe(HMCPErrorCode.GuardrailBlocked);
    expect(seen).toEqual([]);
    const ok = await conn.client.ask('{"subject":{"reference":"Patient/p-1"}}');
    expect(ok.content).toMatchObject({ type: "text" });
    expect(seen).toHaveLength(1);
  });
});
