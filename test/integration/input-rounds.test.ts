/**
 * Asking the caller mid-request, one handler for both eras: `ctx.elicit` / `ctx.sample` are real server → client
 * requests on 2025-11-25 and input-required rounds on 2026-07-28 (sealed `requestState`, bound to the principal,
 * patient context, tool and arguments, expiring and single-use); `ctx.step` runs once per flow on either.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { inputRequired } from "@modelcontextprotocol/server";
import { createHttpApp, HMCPClient, HMCPErrorCode, HMCPServer, hmcpContext, INFO_NEEDED, listen, PostgresRequestStateStore, SAMPLING_TOOL_NAME, type AuditRecordInput, type HMCPServerOptions } from "hmcp";
import { bearerFor, makeKeys, mint, type TestKeys } from "../fixtures/bearer.js";
import { connectEcho } from "../fixtures/harness.js";
import { startTestDatabase, testDatabaseKinds } from "../fixtures/postgres.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const MODERN = "2026-07-28";
const KEY = "a requestState key of at least 32 bytes, for tests only";

/** An EMR-writeback-like agent: validates, asks the clinician, writes once, asks the caller's model for a summary. */
function emrAgent(audit: AuditRecordInput[], writes: string[], requestState?: HMCPServerOptions["requestState"]) {
  const s = new HMCPServer({ name: "emr-writeback", version: "1.0.0" }, { guardrails: false, hooks: { audit: (r) => audit.push(r) }, ...(requestState && { requestState }) });
  s.sampling(
    async (params, ctx) => {
      const text = JSON.stringify(params.messages);
      const patient = /patient_id=([\w-]+)/.exec(text)?.[1];
      if (!patient) return { content: { type: "text", text: "need patient_id" }, stopReason: INFO_NEEDED };
      ctx.assertPatient(patient);
      await ctx.progress(0, 2, "validated");
      const approval = await ctx.elicit({
        message: `Approve writing 1 Observation for patient ${patient}?`,
        requestedSchema: { type: "object", properties: { approve: { type: "boolean" } }, required: ["approve"] },
      });
      if (approval.action !== "accept" || approval.content?.["approve"] !== true) return { content: { type: "text", text: `not written (${approval.action})` }, stopReason: "endTurn" };
      const id = await ctx.step("write", () => {
        writes.push(patient);
        return `Observation/obs-${writes.length}`;
      });
      await ctx.progress(1, 2, "written");
      const summary = await ctx.sample({ messages: [{ role: "user", content: { type: "text", text: `Summarise ${id} in one line` } }], maxTokens: 40 });
      return { content: { type: "text", text: `${id}: ${summary.content.type === "text" ? summary.content.text : ""}` }, stopReason: "endTurn" };
    },
    { tool: true },
  );
  s.registerTool("approve", { description: "asks the clinician once", inputSchema: z.object({ what: z.string() }) }, async ({ what }, extra) => {
    const ctx = hmcpContext(extra);
    const answer = await ctx.elicit({ message: `Approve ${what}?`, requestedSchema: { type: "object", properties: {} } });
    const n = await ctx.step("apply", () => {
      writes.push(what);
      return writes.length;
    });
    return { content: [{ type: "text", text: `${answer.action} #${n}` }] };
  });
  // asks while its step still runs (not awaited): the step's result would have no place in the journal
  s.registerTool("hasty", { description: "asks beside a running step" }, async (extra) => {
    const ctx = hmcpContext(extra);
    const pending = ctx.step("slow-write", async () => {
      await new Promise((r) => setTimeout(r, 50));
      writes.push("hasty");
      return 1;
    });
    const answer = await ctx.elicit({ message: "Go on?", requestedSchema: { type: "object", properties: {} } });
    await pending;
    return { content: [{ type: "text", text: answer.action }] };
  });
  // a step, then the SDK's own input-required result: its retry would lose the step's journal
  s.registerTool("mixed", { description: "steps, then asks the SDK's way" }, async (extra) => {
    const ctx = hmcpContext(extra);
    await ctx.step("write", () => void writes.push("mixed"));
    if (extra.mcpReq.inputResponses?.["confirm"] === undefined) {
      return inputRequired({ inputRequests: { confirm: inputRequired.elicit({ message: "Sure?", requestedSchema: { type: "object", properties: {} } }) }, requestState: "handler-own" });
    }
    return { content: [{ type: "text", text: "done" }] };
  });
  // asks a question that changes between runs (createHttpApp builds a server per modern request: the count is the
  // module's): a replay must not hand it the earlier answer
  s.registerTool("unsteady", { description: "asks something else each run" }, async (extra) => {
    const answer = await hmcpContext(extra).elicit({ message: `Question ${++runs}?`, requestedSchema: { type: "object", properties: {} } });
    return { content: [{ type: "text", text: answer.action }] };
  });
  return s;
}

async function serve(keys: TestKeys, audit: AuditRecordInput[], writes: string[], requestState?: HMCPServerOptions["requestState"]) {
  const http = await listen(createHttpApp({ createServer: () => emrAgent(audit, writes, requestState), bearer: bearerFor(keys) }));
  closers.push(() => http.close());
  return new URL("/mcp", http.url);
}

function client(era: "legacy" | "modern", token: string, elicitations: string[], onProgress?: string[]) {
  void onProgress;
  const c = new HMCPClient(
    { name: "orchestrator", version: "1.0.0" },
    {
      protocolEra: era,
      guardrails: false,
      onElicitation: async (params) => {
        elicitations.push(params.message);
        return { action: "accept", content: { approve: true } };
      },
      onSampling: async () => ({ role: "assistant", model: "caller-model", content: { type: "text", text: "BP 120/80 recorded" }, stopReason: "endTurn" }),
    },
  );
  return { c, headers: { authorization: `Bearer ${token}` } };
}

/** The EMR-like agent over HTTP, its audit records and writes, and a token for patient p1 that may sample it. */
async function servedForP1() {
  const keys = await makeKeys();
  const audit: AuditRecordInput[] = [];
  const writes: string[] = [];
  const url = await serve(keys, audit, writes);
  const token = await mint(keys, { scope: "hmcp:sample", patient: "p1" });
  return { keys, audit, writes, url, token };
}

type Rpc = { result?: Record<string, unknown> & { resultType?: string; requestState?: string; inputRequests?: Record<string, { method: string; params: { message?: string } }>; content?: unknown }; error?: { code: number; data?: { reason?: string } } | string };

/** A raw 2026-07-28 tools/call (envelope, headers), optionally a retry with `requestState` and `inputResponses`. */
async function call(url: URL, token: string, id: number, name: string, args: Record<string, unknown>, retry: { requestState?: string; inputResponses?: Record<string, unknown> } = {}, capabilities: Record<string, unknown> = { elicitation: { form: {} }, sampling: {} }): Promise<Rpc> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": name },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, ...retry, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities } } }),
  });
  return (await res.json()) as Rpc;
}

const accept = { action: "accept", content: {} };
let runs = 0;

describe("asking the caller mid-request on both eras", () => {
  it("HMCP sampling with nested elicitation, a step and sampling back to the caller: the same handler on 2025-11-25 and 2026-07-28", async () => {
    const { audit, writes, url, token } = await servedForP1();
    for (const era of ["legacy", "modern"] as const) {
      const asked: string[] = [];
      const { c, headers } = client(era, token, asked);
      await c.connect({ type: "http", url: url.href, headers });
      closers.unshift(() => c.close());
      expect(c.protocolEra).toBe(era);
      const progress: number[] = [];
      const r = await c.ask("patient_id=p1: write BP 120/80", { onProgress: (p) => progress.push(p.progress) });
      expect(r.content).toEqual({ type: "text", text: `Observation/obs-${writes.length}: BP 120/80 recorded` });
      expect(asked).toEqual(["Approve writing 1 Observation for patient p1?"]);
      expect(progress.length).toBeGreaterThan(0);
      expect((await c.ask("write BP 120/80")).stopReason).toBe(INFO_NEEDED);
    }
    // one write per era: the modern era's three rounds ran the write step once
    expect(writes).toEqual(["p1", "p1"]);
    const legacy = audit.filter((r) => r.method === "sampling/createMessage");
    expect(legacy.map((r) => r.interactions)).toEqual([
      [
        { kind: "elicitation", outcome: "accept" },
        { kind: "sampling", outcome: "answered" },
      ],
      undefined,
    ]);
    // modern: every round is its own request and record, linked by one flow id, numbered 1, 2, 3
    const rounds = audit.filter((r) => r.method === "tools/call" && r.inputRound !== undefined);
    expect(rounds.map((r) => [r.inputRound?.round, r.outcome, r.interactions])).toEqual([
      [1, "allowed", [{ kind: "elicitation", outcome: "input_required" }]],
      [2, "allowed", [{ kind: "elicitation", outcome: "accept" }, { kind: "sampling", outcome: "input_required" }]],
      [3, "allowed", [{ kind: "sampling", outcome: "answered" }]],
    ]);
    expect(new Set(rounds.map((r) => r.inputRound?.flow)).size).toBe(1);
    expect(rounds.every((r) => r.patients.includes("p1") && r.actor.sub !== undefined)).toBe(true);
  });

  it("an accepted form that does not fit its requestedSchema is refused (-32602) before the handler reads it, on both eras; nothing is written", async () => {
    const { writes, url, token } = await servedForP1();
    for (const era of ["legacy", "modern"] as const) {
      for (const content of [{}, { approve: "yes" }]) {
        const c = new HMCPClient(
          { name: "orchestrator", version: "1.0.0" },
          { protocolEra: era, guardrails: false, onElicitation: async () => ({ action: "accept", content }) as never, onSampling: async () => ({ role: "assistant", model: "m", content: { type: "text", text: "-" } }) },
        );
        await c.connect({ type: "http", url: url.href, headers: { authorization: `Bearer ${token}` } });
        closers.unshift(() => c.close());
        const err = await c.ask("patient_id=p1: write BP 120/80").catch((e: unknown) => e);
        expect(err, `${era} ${JSON.stringify(content)}`).toMatchObject({ code: -32602, data: { reason: "invalid_elicitation_content" } });
        expect((err as Error).message).toMatch(/does not match the requested schema: content(\/approve)? must/);
      }
    }
    expect(writes).toEqual([]);
  });

  it("the foundation echo agent (samples, then elicits) on 2026-07-28 over stdio and HTTP, as on 2025-11-25", { timeout: 60_000 }, async () => {
    for (const kind of ["stdio", "http"] as const) {
      for (const era of ["modern", "legacy"] as const) {
        const asked: string[] = [];
        const conn = await connectEcho(kind, {
          protocolEra: era,
          guardrails: false,
          onSampling: async () => ({ role: "assistant", model: "m", content: { type: "text", text: "short" } }),
          onElicitation: async (params) => {
            asked.push(params.message);
            return { action: "accept", content: { approved: true } };
          },
        });
        closers.unshift(() => conn.close());
        expect(conn.client.protocolEra).toBe(era);
        const r = await conn.client.ask("hello");
        expect(r.content).toEqual({ type: "text", text: "echo=hello; model=short; approval=accept:true" });
        expect(asked).toEqual(["Approve?"]);
      }
    }
  });

  it("a plain SDK v2 Client on 2026-07-28 answers the agent's question through its own elicitation handler", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const url = await serve(keys, audit, writes);
    const sdk = new Client({ name: "plain-sdk-host", version: "1.0.0" }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "auto" } });
    const asked: string[] = [];
    sdk.setRequestHandler("elicitation/create", async (request) => {
      asked.push((request.params as { message: string }).message);
      return { action: "accept", content: {} };
    });
    await sdk.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${await mint(keys, { scope: "hmcp:access" })}` } } }));
    closers.unshift(() => sdk.close());
    expect(sdk.getProtocolEra()).toBe("modern");
    const r = await sdk.callTool({ name: "approve", arguments: { what: "the discharge letter" } });
    expect(r.content).toEqual([{ type: "text", text: "accept #1" }]);
    expect(asked).toEqual(["Approve the discharge letter?"]);
    expect(writes).toEqual(["the discharge letter"]);
  });

  it("a replayed, tampered, expired or other-principal requestState is refused with a typed error and audited; nothing is written twice", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const url = await serve(keys, audit, writes, { keys: [KEY] });
    // the expiry on an agent whose states live 1 s (the rest on the default 600 s, so a loaded machine cannot turn a
    // refusal for another reason into an expiry)
    const shortLived = await serve(keys, audit, writes, { keys: [KEY], ttlSeconds: 1 });
    const alice = await mint(keys, { scope: "hmcp:access", sub: "alice" });
    const bob = await mint(keys, { scope: "hmcp:access", sub: "bob" });

    const first = await call(url, alice, 1, "approve", { what: "order 7" });
    expect(first.result?.resultType).toBe("input_required");
    const state = first.result!.requestState!;
    const [key] = Object.keys(first.result!.inputRequests!);
    expect(first.result!.inputRequests![key!]).toMatchObject({ method: "elicitation/create", params: { message: "Approve order 7?" } });
    // the state is sealed (AEAD): nothing of the journal or the binding is readable
    expect(Buffer.from(state.split(".").join(""), "base64url").toString("latin1")).not.toMatch(/order 7|alice|approve/);

    // another principal, other arguments, a tampered state: refused before anything runs
    const other = await call(url, bob, 2, "approve", { what: "order 7" }, { requestState: state, inputResponses: { [key!]: accept } });
    expect(other.error).toMatchObject({ code: -32602, data: { reason: "request_state_mismatch" } });
    const args = await call(url, alice, 3, "approve", { what: "order 8" }, { requestState: state, inputResponses: { [key!]: accept } });
    expect(args.error).toMatchObject({ code: -32602, data: { reason: "request_state_mismatch" } });
    const flipped = state.slice(0, -6) + (state.at(-6) === "A" ? "B" : "A") + state.slice(-5);
    const tampered = await call(url, alice, 4, "approve", { what: "order 7" }, { requestState: flipped, inputResponses: { [key!]: accept } });
    expect(tampered.error).toMatchObject({ code: -32602, data: { reason: "request_state_invalid" } });

    // the rightful retry completes: the step runs once
    const done = await call(url, alice, 5, "approve", { what: "order 7" }, { requestState: state, inputResponses: { [key!]: accept } });
    expect(done.result?.content).toEqual([{ type: "text", text: "accept #1" }]);
    // the same retry again (a replay, or a client retrying after a lost response): refused, no second write
    const replay = await call(url, alice, 6, "approve", { what: "order 7" }, { requestState: state, inputResponses: { [key!]: accept } });
    expect(replay.error).toMatchObject({ code: -32602, data: { reason: "request_state_replayed" } });
    expect(writes).toEqual(["order 7"]);

    // expired: sealed for 1 s
    const late = await call(shortLived, alice, 7, "approve", { what: "order 9" });
    await new Promise((r) => setTimeout(r, 2_100));
    const expired = await call(shortLived, alice, 8, "approve", { what: "order 9" }, { requestState: late.result!.requestState!, inputResponses: { [key!]: accept } });
    expect(expired.error).toMatchObject({ code: -32602, data: { reason: "request_state_expired" } });
    expect(writes).toEqual(["order 7"]);

    const calls = audit.filter((r) => r.method === "tools/call");
    expect(calls.map((r) => [r.outcome, r.reason ?? null])).toEqual([
      ["allowed", null],
      ["denied", "request_state_mismatch"],
      ["denied", "request_state_mismatch"],
      ["denied", "request_state_invalid"],
      ["allowed", null],
      ["denied", "request_state_replayed"],
      ["allowed", null],
      ["failed", "request_state_expired"],
    ]);
    expect(calls[0]!.inputRound?.flow).toBe(calls[4]!.inputRound?.flow);
  });

  it("a retry answered through another instance with the same keys completes; a rotated-out key is refused", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const next = "the next requestState key, also at least 32 bytes long";
    const a = await serve(keys, audit, writes, { keys: [KEY] });
    const b = await serve(keys, audit, writes, { keys: [next, KEY] });
    const c = await serve(keys, audit, writes, { keys: [next] });
    const token = await mint(keys, { scope: "hmcp:access" });
    const first = await call(a, token, 1, "approve", { what: "x" });
    const key = Object.keys(first.result!.inputRequests!)[0]!;
    const onC = await call(c, token, 2, "approve", { what: "x" }, { requestState: first.result!.requestState!, inputResponses: { [key]: accept } });
    expect(onC.error).toMatchObject({ code: -32602, data: { reason: "request_state_invalid" } });
    const onB = await call(b, token, 3, "approve", { what: "x" }, { requestState: first.result!.requestState!, inputResponses: { [key]: accept } });
    expect(onB.result?.content).toEqual([{ type: "text", text: "accept #1" }]);
    expect(() => new HMCPServer({ name: "x", version: "1" }, { requestState: { keys: ["too short"] } })).toThrow(/32 bytes/);
  });

  // a real PostgreSQL server where its Debian package is installed (.ci/run installs it), and PGlite everywhere
  it.each(testDatabaseKinds())("two instances sharing a PostgreSQL ledger (%s) and one key: a round started on A completes on B, and its replay on A is refused", { timeout: 60_000 }, async (kind) => {
    const database = await startTestDatabase(kind);
    closers.push(() => database.close());
    const db = database.db;
    const store = await PostgresRequestStateStore.open({ db });
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const a = await serve(keys, audit, writes, { keys: [KEY], store });
    const b = await serve(keys, audit, writes, { keys: [KEY], store });
    const token = await mint(keys, { scope: "hmcp:access" });
    const first = await call(a, token, 1, "approve", { what: "lab order" });
    const key = Object.keys(first.result!.inputRequests!)[0]!;
    const retry = { requestState: first.result!.requestState!, inputResponses: { [key]: accept } };
    const [onB, onA] = [await call(b, token, 2, "approve", { what: "lab order" }, retry), await call(a, token, 3, "approve", { what: "lab order" }, retry)];
    expect(onB.result?.content).toEqual([{ type: "text", text: "accept #1" }]);
    expect(onA.error).toMatchObject({ code: -32602, data: { reason: "request_state_replayed" } });
    // concurrent replays through both instances: exactly one wins
    const second = await call(a, token, 4, "approve", { what: "imaging order" });
    const k2 = Object.keys(second.result!.inputRequests!)[0]!;
    const r2 = { requestState: second.result!.requestState!, inputResponses: { [k2]: accept } };
    const both = await Promise.all([call(a, token, 5, "approve", { what: "imaging order" }, r2), call(b, token, 6, "approve", { what: "imaging order" }, r2)]);
    expect(both.filter((x) => x.result !== undefined)).toHaveLength(1);
    expect(both.filter((x) => typeof x.error === "object" && x.error.data?.reason === "request_state_replayed")).toHaveLength(1);
    expect(writes).toEqual(["lab order", "imaging order"]);
    const { rows } = (await db.query("SELECT count(*)::int AS n FROM hmcp_request_state")) as { rows: Array<{ n: number }> };
    expect(rows[0]!.n).toBe(2);
  });

  it("a retry without the answer asks again; a changed question is refused; a client without elicitation gets a typed refusal", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const url = await serve(keys, audit, writes);
    const token = await mint(keys, { scope: "hmcp:access" });
    const first = await call(url, token, 1, "approve", { what: "y" });
    const again = await call(url, token, 2, "approve", { what: "y" }, { requestState: first.result!.requestState! });
    expect(again.result?.resultType).toBe("input_required");
    expect(Object.values(again.result!.inputRequests!)[0]).toMatchObject({ params: { message: "Approve y?" } });
    // an answer of the wrong kind
    const key = Object.keys(again.result!.inputRequests!)[0]!;
    const wrong = await call(url, token, 3, "approve", { what: "y" }, { requestState: again.result!.requestState!, inputResponses: { [key]: { role: "assistant" } } });
    expect(wrong.error).toMatchObject({ code: -32602, data: { reason: "invalid_input_response" } });

    const u1 = await call(url, token, 4, "unsteady", {});
    const uk = Object.keys(u1.result!.inputRequests!)[0]!;
    const u2 = await call(url, token, 5, "unsteady", {}, { requestState: u1.result!.requestState!, inputResponses: { [uk]: accept } });
    expect(u2.error).toMatchObject({ code: -32603, data: { reason: "input_round_diverged" } });

    // MCP 2026-07-28: -32021 with the missing capability (HTTP 400, as the SDK answers it)
    const noElicitation = await call(url, token, 6, "approve", { what: "z" }, {}, { sampling: {} });
    expect(noElicitation.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: {} } } });
    // a client that declared URL-mode elicitation only gets no form question either
    const urlOnly = await call(url, token, 8, "approve", { what: "z" }, {}, { elicitation: { url: {} } });
    expect(urlOnly.error).toMatchObject({ code: -32021 });
    // a state that is not HMCP's (a handler's own, minted with the SDK's inputRequired) is left to the handler: the
    // HMCP journal starts afresh and asks again, nothing is answered from it
    const foreign = await call(url, token, 7, "approve", { what: "y" }, { requestState: "the-handler's-own-state", inputResponses: { "elicitation-0": accept } });
    expect(foreign.result?.resultType).toBe("input_required");
    expect(writes).toEqual([]);
  });

  it("a refused answer leaves the state usable for a corrected retry; asking beside a running step and mixing with the SDK's own rounds are refused; refused states' records name their flow", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const http = await listen(createHttpApp({ createServer: () => emrAgent(audit, writes), bearer: bearerFor(keys) }));
    closers.push(() => http.close());
    const url = new URL("/mcp", http.url);
    const token = await mint(keys, { scope: "hmcp:access" });
    const first = await call(url, token, 1, "approve", { what: "order 1" });
    const key = Object.keys(first.result!.inputRequests!)[0]!;
    const state = first.result!.requestState!;
    // a malformed answer is refused before the state is used up: the corrected retry completes, once
    const malformed = await call(url, token, 2, "approve", { what: "order 1" }, { requestState: state, inputResponses: { [key]: { action: "maybe" } } });
    expect(malformed.error).toMatchObject({ code: -32602, data: { reason: "invalid_input_response" } });
    const corrected = await call(url, token, 3, "approve", { what: "order 1" }, { requestState: state, inputResponses: { [key]: accept } });
    expect(corrected.result?.content).toEqual([{ type: "text", text: "accept #1" }]);
    const replay = await call(url, token, 4, "approve", { what: "order 1" }, { requestState: state, inputResponses: { [key]: accept } });
    expect(replay.error).toMatchObject({ data: { reason: "request_state_replayed" } });
    // the replay's record names the flow it tried to re-enter
    const records = audit.filter((r) => r.method === "tools/call");
    expect(records.at(-1)).toMatchObject({ outcome: "denied", reason: "request_state_replayed", inputRound: { flow: records[0]!.inputRound!.flow } });

    const hasty = await call(url, token, 5, "hasty", {});
    expect(hasty.error).toMatchObject({ code: -32603, data: { reason: "input_round_concurrent" } });
    const mixed = await call(url, token, 6, "mixed", {});
    expect(mixed.error).toMatchObject({ code: -32603, data: { reason: "input_round_mixed" } });
    // the hasty step, not awaited by its handler, ends on its own; "order 1" was written once
    await new Promise((r) => setTimeout(r, 200));
    expect([...writes].sort()).toEqual(["hasty", "mixed", "order 1"]);
  });

  it("scope and patient-context refusals hold on the sampling tool before any question is asked", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const url = await serve(keys, audit, writes);
    const args = { messages: [{ role: "user", content: { type: "text", text: "patient_id=p2: write" } }], maxTokens: 50 };
    // sampling's scopes are checked at the HTTP bearer check already (403, RFC 6750 insufficient_scope)
    const noScope = await call(url, await mint(keys, { scope: "hmcp:read" }), 1, SAMPLING_TOOL_NAME, args);
    expect(noScope.error).toBe("insufficient_scope");
    const otherPatient = await call(url, await mint(keys, { scope: "hmcp:sample", patient: "p1" }), 2, SAMPLING_TOOL_NAME, args);
    expect(otherPatient.error).toMatchObject({ code: HMCPErrorCode.PatientContextViolation });
    expect(audit.filter((r) => r.method === "tools/call").map((r) => [r.outcome, r.reason, r.interactions])).toEqual([["denied", "patient_context_mismatch", undefined]]);
    expect(writes).toEqual([]);
  });
});
