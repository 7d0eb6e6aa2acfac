import { afterEach, describe, expect, it } from "vitest";
import { ProtocolError } from "@modelcontextprotocol/server";
import { HMCPErrorCode, INFO_NEEDED, isInfoNeeded, type HMCPClientOptions } from "hmcp";
import { connectEcho, type Connected, type TransportName } from "../fixtures/harness.js";
import { textOf } from "../fixtures/echo-agent.js";

const transports: TransportName[] = ["memory", "stdio", "http"];

function recordingClient() {
  const seen: { sampling: string[]; elicitation: string[] } = { sampling: [], elicitation: [] };
  const options: HMCPClientOptions = {
    onSampling: async (params) => {
      seen.sampling.push(textOf(params.messages[0]?.content));
      return { role: "assistant", model: "test-model", content: { type: "text", text: "model-says-hi" }, stopReason: "endTurn" };
    },
    onElicitation: async (params) => {
      seen.elicitation.push(params.message);
      return { action: "accept", content: { approved: true } };
    },
  };
  return { seen, options };
}

describe.each(transports)("bidirectional sampling over %s", (kind) => {
  let conn: Connected | undefined;
  afterEach(async () => {
    await conn?.close();
    conn = undefined;
  });

  it("client → server sampling whose handler samples back, elicits and reports progress", async () => {
    const { seen, options } = recordingClient();
    conn = await connectEcho(kind, options);
    expect(conn.client.serverCapability).toMatchObject({ sampling: true });
    const progress: Array<{ progress: number; total?: number; message?: string }> = [];
    const result = await conn.client.ask("blood pressure 120/80", { onProgress: (p) => progress.push(p) });
    expect(textOf(result.content)).toBe("echo=blood pressure 120/80; model=model-says-hi; approval=accept:true");
    expect(result.role).toBe("assistant");
    expect(result.model).toBe("echo-agent");
    expect(seen.sampling).toEqual(["summarise: blood pressure 120/80"]);
    expect(seen.elicitation).toEqual(["Approve?"]);
    expect(progress.map((p) => p.progress)).toEqual([1, 2, 3]);
    expect(progress[0]).toMatchObject({ total: 3, message: "asking the caller's model" });
  });

  it("infoNeeded round trip", async () => {
    conn = await connectEcho(kind, recordingClient().options);
    const first = await conn.client.ask("need-info");
    expect(first.stopReason).toBe(INFO_NEEDED);
    expect(isInfoNeeded(first)).toBe(true);
    expect(first._meta?.["hmcp/infoNeeded"]).toEqual({ fields: ["patient_id"] });
  });

  it("an exception in the handler becomes an internal error that does not echo its message", async () => {
    conn = await connectEcho(kind, recordingClient().options);
    const err = await conn.client.ask("boom").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe(-32603);
    expect(String((err as ProtocolError).message)).not.toMatch(/secret|John|123-45/);
    // and the server keeps serving
    expect(textOf((await conn.client.ask("need-info")).content)).toMatch(/patient_id/);
  });

  it("a server → client request without a client handler is refused, and the agent's failure is reported", async () => {
    conn = await connectEcho(kind, {});
    const err = await conn.client.ask("hello").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    // the echo agent's ctx.sample() got SamplingNotSupported from the client; the handler did not catch it
    expect((err as ProtocolError).code).toBe(HMCPErrorCode.SamplingNotSupported);
    // the refusal crossed two hops (client → agent → client) but carries the sentence alone, no prefix per hop
    expect((err as ProtocolError).message).toBe("This client has no sampling handler");
  });
});
