/**
 * Issue #25 item 3, a guardrail that throws or hangs, through the public API over HTTP on both eras: a custom guardrail
 * registered with `registerGuardrail` and placed by a policy (`defaults.timeoutMs`). A throw blocks with
 * `guardrail_error`, a check that never settles blocks with `guardrail_timeout` once its time budget is spent (its
 * signal aborted); each is one -32053 answer and one audit record, the handler does not run (input stage), and the
 * agent answers other requests meanwhile. The budget is the policy's 200 ms; no test measures time.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  HMCPErrorCode,
  HMCPServer,
  SAMPLING_TOOL_NAME,
  createHttpApp,
  listen,
  loadGuardrailPolicy,
  registerGuardrail,
  type AuditRecordInput,
  type AuditSink,
  type Listening,
} from "hmcp";
import { MCP_HEADERS, openSession } from "../fixtures/raw-http.js";

/** Checks started that never settle, and how many of them saw their signal aborted (their budget spent). */
const hung = { started: 0, aborted: 0 };
registerGuardrail("fault-injector", () => ({
  name: "fault-injector",
  check: (text, context) => {
    if (text.includes("THROW")) throw new Error("the guardrail's own bug");
    if (text.includes("HANG")) {
      hung.started++;
      context.signal?.addEventListener("abort", () => hung.aborted++, { once: true });
      return new Promise(() => undefined);
    }
    return { action: "allow" };
  },
}));

const policy = () =>
  loadGuardrailPolicy({
    version: 1,
    name: "faulty",
    defaults: { timeoutMs: 200 },
    stages: { input: [{ guardrail: "fault-injector" }], output: [{ guardrail: "fault-injector" }] },
  });

let http: Listening | undefined;
afterEach(async () => {
  await http?.close();
  http = undefined;
});

interface Agent {
  endpoint: URL;
  records: AuditRecordInput[];
  handled: () => number;
}

async function agent(): Promise<Agent> {
  const records: AuditRecordInput[] = [];
  const sink: AuditSink = { append: (r) => void records.push(r), flush: async () => undefined, close: async () => undefined };
  let handled = 0;
  const guardrails = policy();
  const createServer = () =>
    new HMCPServer({ name: "guarded", version: "1" }, { auth: false, audit: sink, guardrails }).sampling(async (params) => {
      handled++;
      // the output stage sees what the handler answers: "shout hang" (which the input check lets pass) answers "HANG"
      const text = (params.messages[0]?.content as { text?: string } | undefined)?.text ?? "";
      return { content: { type: "text", text: text.startsWith("shout ") ? text.slice(6).toUpperCase() : "ok" } };
    });
  http = await listen(createHttpApp({ createServer, bearer: false, audit: sink }));
  return { endpoint: new URL("/mcp", http.url), records, handled: () => handled };
}

interface Reply {
  result?: { isError?: boolean; structuredContent?: unknown };
  error?: { code: number; data?: { reason?: string; guardrail?: string; stage?: string } };
}

async function replyTo(res: Response, id: number): Promise<Reply> {
  const text = await res.text();
  const messages = res.headers.get("content-type")?.startsWith("application/json")
    ? [JSON.parse(text) as Reply & { id?: number }]
    : text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)) as Reply & { id?: number });
  const m = messages.find((x) => x.id === id);
  if (m === undefined) throw new Error(`no answer to request ${id} (HTTP ${res.status})`);
  return m;
}

const params = (text: string) => ({ messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 5 });

type Era = "2025-06-18" | "2026-07-28";
/** One sampling request on `era`: on a session (2025), or as HMCP's sampling tool on its own (2026-07-28). */
async function ask(a: Agent, era: Era, sid: string, id: number, text: string): Promise<Reply> {
  if (era === "2025-06-18") {
    const res = await fetch(a.endpoint, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": era },
      body: JSON.stringify({ jsonrpc: "2.0", id, method: "sampling/createMessage", params: params(text) }),
    });
    return replyTo(res, id);
  }
  const res = await fetch(a.endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-protocol-version": era, "mcp-method": "tools/call", "mcp-name": SAMPLING_TOOL_NAME },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: SAMPLING_TOOL_NAME, arguments: params(text), _meta: { "io.modelcontextprotocol/protocolVersion": era, "io.modelcontextprotocol/clientCapabilities": {} } },
    }),
  });
  return replyTo(res, id);
}

/** The one request record of `id` (-32053 `reason` at `stage`). */
function expectOneBlockRecord(a: Agent, id: number, reason: string, stage: "input" | "output"): void {
  const mine = a.records.filter((r) => r.type === "request" && r.requestId === id);
  expect(mine).toHaveLength(1);
  expect(mine[0]).toMatchObject({ outcome: "blocked", reason });
  expect(mine[0]!.guardrails).toContainEqual(expect.objectContaining({ guardrail: "fault-injector", stage, action: "block", reason }));
}

describe.each<Era>(["2025-06-18", "2026-07-28"])("a custom guardrail that throws or hangs, MCP %s over HTTP", (era) => {
  it("throws: -32053 guardrail_error, one record, the handler does not run", async () => {
    const a = await agent();
    const sid = era === "2025-06-18" ? await openSession(a.endpoint) : "";
    const r = await ask(a, era, sid, 1, "please THROW");
    expect(r.error).toMatchObject({ code: HMCPErrorCode.GuardrailBlocked, data: { reason: "guardrail_error", guardrail: "fault-injector", stage: "input" } });
    expect(a.handled()).toBe(0);
    expectOneBlockRecord(a, 1, "guardrail_error", "input");
    // the guardrail's own message reaches neither the client nor the trail
    expect(JSON.stringify(r)).not.toContain("own bug");
    expect(JSON.stringify(a.records)).not.toContain("own bug");
    expect((await ask(a, era, sid, 2, "fine")).result).toBeDefined();
  });

  it("hangs at the input stage: -32053 guardrail_timeout once the policy's timeoutMs is spent (its signal aborted), one record, and other requests are answered meanwhile", async () => {
    const a = await agent();
    const sid = era === "2025-06-18" ? await openSession(a.endpoint) : "";
    const before = { ...hung };
    const pending = ask(a, era, sid, 1, "HANG here");
    // answered while the hung check waits (same session on 2025)
    expect((await ask(a, era, sid, 2, "fine")).result).toBeDefined();
    const r = await pending;
    expect(r.error).toMatchObject({ code: HMCPErrorCode.GuardrailBlocked, data: { reason: "guardrail_timeout", guardrail: "fault-injector", stage: "input" } });
    expect(hung.started - before.started).toBe(1);
    expect(hung.aborted - before.aborted).toBe(1);
    expect(a.handled()).toBe(1); // only the "fine" request
    expectOneBlockRecord(a, 1, "guardrail_timeout", "input");
    expect((await ask(a, era, sid, 3, "fine again")).result).toBeDefined();
  });

  it("hangs at the output stage: the handler's answer is withheld, -32053 guardrail_timeout, one record", async () => {
    const a = await agent();
    const sid = era === "2025-06-18" ? await openSession(a.endpoint) : "";
    const r = await ask(a, era, sid, 1, "shout hang");
    expect(r.error).toMatchObject({ code: HMCPErrorCode.GuardrailBlocked, data: { reason: "guardrail_timeout", stage: "output" } });
    expect(JSON.stringify(r)).not.toContain("HANG");
    expect(a.handled()).toBe(1);
    expectOneBlockRecord(a, 1, "guardrail_timeout", "output");
  });
});
