import { afterEach, describe, expect, it } from "vitest";
import { InMemoryTransport, McpServer, ProtocolError } from "@modelcontextprotocol/server";
import { HMCPClient, HMCPError, HMCPErrorCode, HMCPServer, readHMCPCapability } from "hmcp";
import { createEchoAgent, TEST_PRINCIPAL, textOf } from "../fixtures/echo-agent.js";
import { connectPlainClient } from "../fixtures/harness.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const plainClientTo = (server: McpServer) => connectPlainClient(server, closers);

describe("interop with the unmodified MCP SDK", () => {
  it("an unmodified SDK Client sends sampling/createMessage to an HMCPServer", async () => {
    const client = await plainClientTo(createEchoAgent());
    const caps = readHMCPCapability(client.getServerCapabilities() as never);
    expect(caps).toMatchObject({ sampling: true, audit: false });
    const result = await client.request(
      { method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "need-info" } }], maxTokens: 10 } }
    );
    expect(result.stopReason).toBe("infoNeeded");
  });

  it("HMCPServer still serves ordinary tools, resources and prompts to an unmodified client", async () => {
    const client = await plainClientTo(createEchoAgent());
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toEqual(["add"]);
    const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
    expect(textOf((sum.content as unknown[])[0])).toBe("42");
    const res = await client.readResource({ uri: "test://greeting" });
    expect(res.contents[0]).toMatchObject({ text: "hello" });
    const prompt = await client.getPrompt({ name: "triage", arguments: { topic: "chest pain" } });
    expect(textOf(prompt.messages[0]?.content)).toBe("Triage chest pain");
  });

  it("a server without a sampling handler does not claim sampling and answers sampling with a clear error", async () => {
    const server = new HMCPServer({ name: "no-sampling", version: "1.0.0" }, { auth: { localPrincipal: TEST_PRINCIPAL } });
    const client = await plainClientTo(server);
    expect(readHMCPCapability(client.getServerCapabilities() as never)?.sampling).toBe(false);
    const err = await client
      .request({ method: "sampling/createMessage", params: { messages: [], maxTokens: 1 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as ProtocolError).code).toBe(HMCPErrorCode.SamplingNotSupported);
    expect((err as ProtocolError).data).toEqual({ reason: "sampling_not_supported" });
  });

  it("HMCPClient refuses to send sampling to a plain MCP server, without sending anything", async () => {
    const plain = new McpServer({ name: "plain", version: "1.0.0" });
    const seen: string[] = [];
    plain.server.fallbackRequestHandler = async (req) => {
      seen.push(req.method);
      return {};
    };
    const client = new HMCPClient({ name: "c", version: "1" });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await plain.connect(b);
    await client.connect({ type: "transport", transport: a });
    closers.push(async () => {
      await client.close();
      await plain.close();
    });
    expect(client.serverCapability).toBeUndefined();
    const err = await client.ask("hello").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HMCPError);
    expect((err as HMCPError).code).toBe(HMCPErrorCode.SamplingNotSupported);
    expect(seen).toEqual([]);
  });

  it("parses the Python reference's capability and rejects malformed ones", () => {
    expect(readHMCPCapability({ experimental: { hmcp: { sampling: true, version: "0.1.0" } } })).toEqual({ sampling: true, version: "0.1.0" });
    expect(readHMCPCapability({ experimental: { hmcp: { sampling: "yes" } } })).toBeUndefined();
    expect(readHMCPCapability({})).toBeUndefined();
  });
});
