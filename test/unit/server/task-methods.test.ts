/**
 * Which MCP 2026-07-28 servers have the tasks extension's methods (tasks/get, tasks/update, tasks/cancel): one that
 * advertises the extension, and one that gets a task-capable tool after it connected; not a per-request server without
 * task support (createHttpApp builds one for every request).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { InMemoryTransport } from "@modelcontextprotocol/server";
import { HMCPServer, TASKS_EXTENSION_ID } from "../../../src/index.js";

const TASK_METHODS = ["tasks/get", "tasks/update", "tasks/cancel"];

function methods(server: HMCPServer): string[] {
  const map = (server.server as unknown as { _requestHandlers: Map<string, unknown> })._requestHandlers;
  return TASK_METHODS.filter((m) => map.has(m));
}

async function connected(server: HMCPServer): Promise<HMCPServer> {
  const [a] = InMemoryTransport.createLinkedPair();
  await server.serveModernEra().connect(a);
  return server;
}

const plain = (tasks?: false) => {
  const s = new HMCPServer({ name: "a", version: "1" }, { guardrails: false, audit: false, ...(tasks === false && { tasks }) });
  s.registerTool("greet", { description: "sync", inputSchema: z.object({ name: z.string() }) }, async () => ({ content: [] }));
  return s;
};

describe("the tasks extension's methods on MCP 2026-07-28", () => {
  it("a server without task support has none and does not advertise the extension", async () => {
    const s = await connected(plain());
    expect(methods(s)).toEqual([]);
    expect(s.server.getCapabilities().extensions?.[TASKS_EXTENSION_ID]).toBeUndefined();
    await s.close();
  });

  it("a server with a task-capable tool, or with tasks options, has all three", async () => {
    const tool = plain();
    tool.registerTool("job", { description: "d", execution: { taskSupport: "optional" } }, async () => ({ content: [] }));
    const s1 = await connected(tool);
    expect(methods(s1)).toEqual(TASK_METHODS);
    expect(s1.server.getCapabilities().extensions?.[TASKS_EXTENSION_ID]).toEqual({});
    await s1.close();
    const s2 = await connected(new HMCPServer({ name: "a", version: "1" }, { guardrails: false, audit: false, tasks: { ttlMs: 60_000 } }));
    expect(methods(s2)).toEqual(TASK_METHODS);
    await s2.close();
  });

  it("a task-capable tool registered after connect brings them (its tasks can be polled); tasks: false never", async () => {
    const s = await connected(plain());
    s.registerTool("late", { description: "d", execution: { taskSupport: "required" } }, async () => ({ content: [] }));
    expect(methods(s)).toEqual(TASK_METHODS);
    await s.close();
    const off = await connected(plain(false));
    off.registerTool("late", { description: "d", execution: { taskSupport: "optional" } }, async () => ({ content: [] }));
    expect(methods(off)).toEqual([]);
    await off.close();
  });
});
