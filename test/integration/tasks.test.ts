/**
 * MCP tasks (extension io.modelcontextprotocol/tasks, SEP-2663) on MCP 2026-07-28: a tool that declares task support
 * runs as a task for a client that declares the extension; tasks/get, tasks/update (the clinician's approval), and
 * tasks/cancel; the task is the creating principal's and patient's only; one audit record per outcome names the task.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PGlite } from "@electric-sql/pglite";
import { z } from "zod";
import { createHttpApp, defaultGuardrails, HMCPClient, HMCPServer, hmcpContext, INFO_NEEDED, listen, PostgresTaskStore, SAMPLING_TOOL_NAME, TASKS_EXTENSION_ID, type AuditRecordInput, type AuditSink, type HMCPServerOptions, type TaskStore } from "hmcp";
import { bearerFor, makeKeys, mint, type TestKeys } from "../fixtures/bearer.js";
import { registerSharedTaskTools } from "../fixtures/task-tools.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

const MODERN = "2026-07-28";
/** One embedded PostgreSQL (PGlite) for the file: it takes seconds to start. */
let pglite: PGlite;
let store: TaskStore;
beforeAll(async () => {
  pglite = await PGlite.create();
  store = await PostgresTaskStore.open({ db: pglite });
}, 60_000);
afterAll(async () => {
  await pglite.close();
});
const WITH_TASKS = { elicitation: { form: {} }, extensions: { [TASKS_EXTENSION_ID]: {} } };

/** An EMR-writeback-like agent whose approval-and-write runs as a task. */
function agent(audit: AuditRecordInput[], writes: string[], tasks: HMCPServerOptions["tasks"]) {
  const s = new HMCPServer({ name: "emr-writeback", version: "1.0.0" }, { guardrails: false, hooks: { audit: (r) => audit.push(r) }, ...(tasks !== undefined && { tasks }) });
  s.registerTool(
    "write_observation",
    { description: "asks the clinician, then writes one Observation", inputSchema: z.object({ patient: z.string(), code: z.string() }), execution: { taskSupport: "optional" } },
    async ({ patient, code }, extra) => {
      const ctx = hmcpContext(extra);
      ctx.assertPatient(patient);
      await ctx.progress(0, 2, "validated");
      const approval = await ctx.elicit({ message: `Approve writing ${code} for ${patient}?`, requestedSchema: { type: "object", properties: { approve: { type: "boolean" } }, required: ["approve"] } });
      if (approval.action !== "accept" || approval.content?.["approve"] !== true) return { content: [{ type: "text", text: "not written" }] };
      const id = await ctx.step("write", () => {
        writes.push(`${patient}:${code}`);
        return `Observation/obs-${writes.length}`;
      });
      return { content: [{ type: "text", text: `written ${id}` }] };
    },
  );
  registerSharedTaskTools(s);
  s.registerTool("lab_report", { description: "returns PHI", execution: { taskSupport: "optional" } }, async () => ({
    content: [{ type: "text", text: "Lab report for John Smith, SSN 123-45-6789: potassium 4.1 mmol/L" }],
  }));
  return s;
}

type Rpc = { result?: Record<string, any>; error?: { code: number; message: string; data?: Record<string, any> } };

async function rpc(url: URL, token: string, method: string, params: Record<string, unknown>, capabilities: Record<string, unknown> = WITH_TASKS): Promise<Rpc> {
  const name = (params["name"] ?? params["taskId"]) as string | undefined;
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method, ...(name !== undefined && { "mcp-name": name }) },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities } } }),
  });
  return (await res.json()) as Rpc;
}

async function until(url: URL, token: string, taskId: string, done: (r: Record<string, any>) => boolean): Promise<Record<string, any>> {
  for (let i = 0; i < 500; i++) {
    const r = await rpc(url, token, "tasks/get", { taskId });
    if (r.error) throw new Error(JSON.stringify(r.error));
    if (done(r.result!)) return r.result!;
    await new Promise((x) => setTimeout(x, 20));
  }
  throw new Error("task did not reach the state");
}

async function serve(keys: TestKeys, audit: AuditRecordInput[], writes: string[], tasks: HMCPServerOptions["tasks"], build = agent) {
  const http = await listen(createHttpApp({ createServer: () => build(audit, writes, tasks), bearer: bearerFor(keys) }));
  closers.push(() => http.close());
  return new URL("/mcp", http.url);
}

describe("MCP tasks on 2026-07-28", () => {
  it("approval and write as a task: created, input_required, answered with tasks/update, completed; the write happens once", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const url = await serve(keys, audit, writes, { store, pollIntervalMs: 50 });
    const token = await mint(keys, { scope: "hmcp:access", patient: "p1" });
    const created = await rpc(url, token, "tools/call", { name: "write_observation", arguments: { patient: "p1", code: "bp" } });
    expect(created.result?.["resultType"]).toBe("task");
    const taskId = created.result!["taskId"] as string;
    expect(created.result).toMatchObject({ status: "working", pollIntervalMs: 50, ttlMs: 3_600_000 });
    const waiting = await until(url, token, taskId, (t) => t["status"] !== "working");
    expect(waiting["status"]).toBe("input_required");
    const [key, question] = Object.entries(waiting["inputRequests"] as Record<string, any>)[0]!;
    expect(question.method).toBe("elicitation/create");
    expect(question.params.message).toContain("Approve writing bp for p1");
    const ack = await rpc(url, token, "tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { approve: true } } } });
    expect(ack.error).toBeUndefined();
    expect(ack.result).toMatchObject({ resultType: "complete" });
    expect(Object.keys(ack.result!).filter((k) => k !== "_meta" && k !== "resultType")).toEqual([]);
    const done = await until(url, token, taskId, (t) => t["status"] !== "working" && t["status"] !== "input_required");
    expect(done["status"]).toBe("completed");
    expect(done["result"].content[0].text).toBe("written Observation/obs-1");
    expect(writes).toEqual(["p1:bp"]);
    // one record per outcome, each naming the task: created, the run that asked, each read, the answer, the run that wrote
    const ofTask = audit.filter((r) => r.task?.id === taskId);
    expect(ofTask[0]).toMatchObject({ method: "tools/call", outcome: "allowed", reason: "task_created", task: { status: "working" } });
    const runs = ofTask.filter((r) => r.method === "tools/call").slice(1);
    expect(runs.map((r) => r.task?.status)).toEqual(["input_required", "completed"]);
    expect(runs[0]!.interactions).toEqual([{ kind: "elicitation", outcome: "input_required" }]);
    expect(runs.every((r) => r.patients.includes("p1") && r.actor.sub !== undefined)).toBe(true);
    expect(ofTask.find((r) => r.method === "tasks/update")).toMatchObject({ outcome: "allowed", interactions: [{ kind: "elicitation", outcome: "accept" }], patients: ["p1"] });
    expect(ofTask.filter((r) => r.method === "tasks/get").every((r) => r.patients.includes("p1"))).toBe(true);
    // the answer and the write are in the task's journal; nothing of them in any record
    expect(JSON.stringify(audit)).not.toContain("approve");
  });

  it("task support is the server's decision: a sync tool answers at once, an optional one runs inline for a client without the extension, a required one is -32021", async () => {
    const keys = await makeKeys();
    const url = await serve(keys, [], [], { store });
    const token = await mint(keys, { scope: "hmcp:access", patient: "p1" });
    const discover = await rpc(url, token, "server/discover", {});
    expect(discover.result?.["capabilities"]?.extensions?.[TASKS_EXTENSION_ID]).toEqual({});
    const greet = await rpc(url, token, "tools/call", { name: "greet", arguments: { name: "World" } });
    expect(greet.result).toMatchObject({ resultType: "complete", content: [{ type: "text", text: "Hello, World!" }] });
    expect(greet.result?.["taskId"]).toBeUndefined();
    const noExt = { elicitation: { form: {} } };
    const inline = await rpc(url, token, "tools/call", { name: "write_observation", arguments: { patient: "p1", code: "hr" } }, noExt);
    expect(inline.result?.["resultType"]).toBe("input_required");
    const required = await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: 1 } }, noExt);
    expect(required.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } } });
    const task = await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: 1 } });
    const taskId = task.result!["taskId"] as string;
    expect((await rpc(url, token, "tasks/get", { taskId }, noExt)).error).toMatchObject({ code: -32021 });
    // arguments that cannot run are refused before a task exists
    expect((await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: "soon" } })).error).toMatchObject({ code: -32602 });
    expect((await until(url, token, taskId, (t) => t["status"] === "completed"))["result"].content[0].text).toBe("slept 1");
  });

  it("a task is its creator's: another client, or the same client in another patient's context, is told it does not exist, and the attempt is recorded as denied", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const url = await serve(keys, audit, [], { store });
    const owner = await mint(keys, { scope: "hmcp:access", patient: "p1" });
    const created = await rpc(url, owner, "tools/call", { name: "write_observation", arguments: { patient: "p1", code: "bp" } });
    const taskId = created.result!["taskId"] as string;
    const waiting = await until(url, owner, taskId, (t) => t["status"] === "input_required");
    const key = Object.keys(waiting["inputRequests"])[0]!;
    const others = [await mint(keys, { scope: "hmcp:access", patient: "p1", sub: "someone-else" }), await mint(keys, { scope: "hmcp:access", patient: "p2" }), await mint(keys, { scope: "hmcp:access", client_id: "other-app", patient: "p1" })];
    for (const other of others) {
      for (const [method, params] of [["tasks/get", { taskId }], ["tasks/cancel", { taskId }], ["tasks/update", { taskId, inputResponses: { [key]: { action: "accept", content: { approve: true } } } }]] as const) {
        const r = await rpc(url, other, method, params);
        expect(r.error).toMatchObject({ code: -32602, message: "Failed to retrieve task: Task not found", data: { reason: "task_not_found" } });
      }
    }
    const unknown = await rpc(url, owner, "tasks/get", { taskId: "00000000-0000-4000-8000-000000000000" });
    expect(unknown.error).toMatchObject({ code: -32602, data: { reason: "task_not_found" } });
    // untouched by them: still waiting for its owner's answer
    expect((await rpc(url, owner, "tasks/get", { taskId })).result?.["status"]).toBe("input_required");
    const denied = audit.filter((r) => (r.method ?? "").startsWith("tasks/") && r.outcome === "denied");
    expect(denied).toHaveLength(9);
    expect(denied.every((r) => r.reason === "task_owner_mismatch" && r.task === undefined)).toBe(true);
    expect(audit.find((r) => r.method === "tasks/get" && r.outcome === "failed")).toMatchObject({ reason: "task_not_found" });
  });

  it("tasks/cancel: a running task ends cancelled; cancelling again, or a finished task, is acknowledged; its run's record says cancelled", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const url = await serve(keys, audit, [], { store });
    const token = await mint(keys, { scope: "hmcp:access" });
    const taskId = (await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: 20_000 } })).result!["taskId"] as string;
    expect((await rpc(url, token, "tasks/get", { taskId })).result?.["status"]).toBe("working");
    expect((await rpc(url, token, "tasks/cancel", { taskId })).result).toMatchObject({ resultType: "complete" });
    const cancelled = await until(url, token, taskId, (t) => t["status"] !== "working");
    expect(cancelled).toMatchObject({ status: "cancelled" });
    expect(cancelled["result"]).toBeUndefined();
    expect((await rpc(url, token, "tasks/cancel", { taskId })).result).toMatchObject({ resultType: "complete" });
    for (let i = 0; i < 100 && !audit.some((r) => r.method === "tools/call" && r.task?.status === "cancelled"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(audit.find((r) => r.method === "tools/call" && r.task?.id === taskId && r.task.status === "cancelled")).toMatchObject({ outcome: "failed", reason: "aborted" });
    const quick = (await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: 1 } })).result!["taskId"] as string;
    await until(url, token, quick, (t) => t["status"] === "completed");
    expect((await rpc(url, token, "tasks/cancel", { taskId: quick })).result).toMatchObject({ resultType: "complete" });
    expect((await rpc(url, token, "tasks/get", { taskId: quick })).result?.["status"]).toBe("completed");
  });

  it("HttpApp.close: a task run still going after the drain is aborted and recorded before close returns; its task stays working for its lease", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const http = await listen(createHttpApp({ createServer: () => agent(audit, [], { store }), bearer: bearerFor(keys) }));
    const url = new URL("/mcp", http.url);
    const token = await mint(keys, { scope: "hmcp:access" });
    const taskId = (await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: 60_000 } })).result!["taskId"] as string;
    expect((await rpc(url, token, "tasks/get", { taskId })).result?.["status"]).toBe("working");
    // the run would sleep a minute: close drains for 200 ms, then aborts it and waits for its record
    await http.close({ drainTimeoutMs: 200 });
    expect(audit.find((r) => r.method === "tools/call" && r.task?.id === taskId && r.task.status !== "working")).toMatchObject({ outcome: "failed", reason: "aborted" });
    // not stored as cancelled or failed: an instance still serving fails it (task_runner_lost) or re-runs it once its lease runs out
    const stored = await store.get(taskId);
    expect(stored?.status).toBe("working");
  });

  it("HttpApp.close stops only the task runs its own servers started: another app of the same agent on the same store keeps running", async () => {
    const keys = await makeKeys();
    const auditA: AuditRecordInput[] = [];
    const auditB: AuditRecordInput[] = [];
    const a = await listen(createHttpApp({ createServer: () => agent(auditA, [], { store }), bearer: bearerFor(keys) }));
    const b = await listen(createHttpApp({ createServer: () => agent(auditB, [], { store }), bearer: bearerFor(keys) }));
    closers.push(() => b.close({ drainTimeoutMs: 50 }));
    const token = await mint(keys, { scope: "hmcp:access" });
    const urlB = new URL("/mcp", b.url);
    const taskId = (await rpc(urlB, token, "tools/call", { name: "slow_compute", arguments: { ms: 60_000 } })).result!["taskId"] as string;
    await a.close({ drainTimeoutMs: 50 });
    // B's run goes on: no record of its end, and B still answers that it is working
    expect(auditB.find((r) => r.method === "tools/call" && r.task?.id === taskId && r.task.status !== "working")).toBeUndefined();
    expect((await rpc(urlB, token, "tasks/get", { taskId })).result?.["status"]).toBe("working");
    await b.close({ drainTimeoutMs: 50 });
    expect(auditB.find((r) => r.method === "tools/call" && r.task?.id === taskId && r.task.status !== "working")).toMatchObject({ outcome: "failed", reason: "aborted" });
  });

  it("a burst of progress is coalesced: a few task-store writes, and the last message is the one stored", async () => {
    const keys = await makeKeys();
    // the shared store, counting the writes that set a status message
    let progressWrites = 0;
    const counting: TaskStore = {
      create: (t, max) => store.create(t, max),
      get: (id) => store.get(id),
      put: (t) => {
        if (t.status === "working" && t.statusMessage !== undefined) progressWrites++;
        return store.put(t);
      },
      renew: (runner, ids, until) => store.renew(runner, ids, until),
      sweep: (now) => store.sweep(now),
      list: (owner, o) => store.list(owner, o),
    };
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const url = await serve(keys, [], [], { store: counting }, (audit, writes, tasks) => {
      const s = agent(audit, writes, tasks);
      s.registerTool("progress_burst", { description: "reports progress 200 times", execution: { taskSupport: "required" } }, async (extra) => {
        const ctx = hmcpContext(extra);
        for (let i = 1; i <= 200; i++) await ctx.progress(i, 200, `step ${i} of 200`);
        await hold;
        return { content: [{ type: "text", text: "done" }] };
      });
      return s;
    });
    const token = await mint(keys, { scope: "hmcp:access" });
    const taskId = (await rpc(url, token, "tools/call", { name: "progress_burst", arguments: {} })).result!["taskId"] as string;
    const last = await until(url, token, taskId, (t) => t["statusMessage"] === "step 200 of 200");
    expect(last["status"]).toBe("working");
    // one write per message would be 200
    expect(progressWrites).toBeLessThan(20);
    release();
    await until(url, token, taskId, (t) => t["status"] === "completed");
  });

  it("once an origin's runs are stopped (HttpApp.close), a run of that origin a late request starts never runs; another origin's does", async () => {
    const { taskRuntimeFor, RUN_ORIGIN } = await import("../../src/server/tasks.js");
    const runtime = taskRuntimeFor({ store });
    const ran: string[] = [];
    const runOf = (name: string, origin: object) =>
      Object.assign(async () => {
        ran.push(name);
        return { kind: "completed" as const, result: { content: [] }, journal: [] };
      }, { [RUN_ORIGIN]: () => origin });
    const closed = {};
    const open = {};
    expect(await runtime.stopRuns(closed, 10)).toBe(0);
    const request = { jsonrpc: "2.0" as const, id: 1, method: "tools/call", params: { name: "slow_compute", arguments: { ms: 1 } } };
    const late = await runtime.create({ agent: "emr-writeback", principal: undefined, request, capabilities: {}, idempotent: false, patients: [] });
    const other = await runtime.create({ agent: "emr-writeback", principal: undefined, request, capabilities: {}, idempotent: false, patients: [] });
    runtime.start(late, runOf("late", closed));
    runtime.start(other, runOf("other", open));
    await runtime.whenIdle();
    expect(ran).toEqual(["other"]);
    expect((await store.get(late.taskId))?.status).toBe("working");
    expect((await store.get(other.taskId))?.status).toBe("completed");
  });

  it("a JSON-RPC error fails the task with the error inline; a tool's exception completes it as isError without its message; results pass the output guardrails before they are stored", async () => {
    const keys = await makeKeys();
    const url = await serve(keys, [], [], { store }, (audit, writes, tasks) => {
      const s = agent(audit, writes, tasks);
      return s;
    });
    const token = await mint(keys, { scope: "hmcp:access" });
    const failed = await until(url, token, (await rpc(url, token, "tools/call", { name: "protocol_error_job", arguments: {} })).result!["taskId"], (t) => t["status"] !== "working");
    expect(failed).toMatchObject({ status: "failed", error: { code: -32603, message: "The EMR refused the write", data: { reason: "emr_refused" } } });
    expect(failed["result"]).toBeUndefined();
    const toolError = await until(url, token, (await rpc(url, token, "tools/call", { name: "failing_job", arguments: {} })).result!["taskId"], (t) => t["status"] !== "working");
    expect(toolError).toMatchObject({ status: "completed", result: { isError: true, content: [{ type: "text", text: "Tool execution failed" }] } });
    expect(JSON.stringify(toolError)).not.toContain("555-12-3456");
    // the sampling tool answers as sampling/createMessage does: a handler's exception fails its task with internal error
    const sampler = await serve(keys, [], [], { store }, (_audit, _writes, tasks) =>
      new HMCPServer({ name: "sampler", version: "1.0.0" }, { guardrails: false, tasks }).sampling(
        () => {
          throw new Error("EMR down for patient 555-12-3456");
        },
        { tool: true, taskSupport: "required" },
      ),
    );
    const sampleToken = await mint(keys, { scope: "hmcp:sample" });
    const args = { messages: [{ role: "user", content: { type: "text", text: "write it" } }], maxTokens: 10 };
    const started = await rpc(sampler, sampleToken, "tools/call", { name: SAMPLING_TOOL_NAME, arguments: args });
    const sampled = await until(sampler, sampleToken, started.result!["taskId"], (t) => t["status"] !== "working");
    expect(sampled).toMatchObject({ status: "failed", error: { code: -32603, message: "Internal error" } });
    expect(JSON.stringify(sampled)).not.toContain("555-12-3456");

    const guarded = await serve(keys, [], [], { store }, (audit, writes, tasks) => {
      const s = new HMCPServer({ name: "lab", version: "1.0.0" }, { guardrails: defaultGuardrails(), tasks });
      s.registerTool("lab_report", { description: "returns PHI", execution: { taskSupport: "optional" } }, async () => ({
        content: [{ type: "text", text: "Lab report for John Smith, SSN 123-45-6789: potassium 4.1 mmol/L" }],
      }));
      void audit;
      void writes;
      return s;
    });
    const lab = (await rpc(guarded, token, "tools/call", { name: "lab_report", arguments: {} })).result!["taskId"] as string;
    const report = await until(guarded, token, lab, (t) => t["status"] !== "working");
    expect(report["status"]).toBe("completed");
    expect(report["result"].content[0].text).not.toContain("123-45-6789");
    expect(report["result"].content[0].text).toContain("potassium 4.1");
    const { rows } = (await pglite.query("SELECT body::text AS body FROM hmcp_tasks WHERE task_id = $1", [lab])) as { rows: Array<{ body: string }> };
    expect(rows[0]!.body).not.toContain("123-45-6789");
  });

  it("subscriptions/listen asking for task notifications without the extension is -32021 naming it (HTTP 400, audited)", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const url = await serve(keys, audit, [], { store });
    const token = await mint(keys, { scope: "hmcp:access" });
    const listen = (capabilities: Record<string, unknown>, signal?: AbortSignal) =>
      fetch(url, {
        method: "POST",
        ...(signal && { signal }),
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "subscriptions/listen", params: { notifications: { taskIds: ["00000000-0000-4000-8000-000000000000"] }, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities } } }),
      });
    const refused = await listen({});
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ id: 9, error: { code: -32021, data: { reason: "missing_client_capability", requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } } } });
    const abort = new AbortController();
    const accepted = await listen({ extensions: { [TASKS_EXTENSION_ID]: {} } }, abort.signal);
    expect(accepted.status).toBe(200);
    abort.abort();
  });

  it("a server without task support registers no tasks/* methods: tasks/get is -32021 to a client not declaring the extension (HTTP 400, one HTTP audit record, before any server is built) and -32601 (HTTP 404) to one declaring it", async () => {
    const keys = await makeKeys();
    const records: AuditRecordInput[] = [];
    const sink: AuditSink = { append: (r) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    let built = 0;
    // default task options, no tool declaring task support: the extension is not advertised
    const plain = () => {
      built++;
      const s = new HMCPServer({ name: "plain", version: "1.0.0" }, { guardrails: false, hooks: { audit: (r) => void records.push(r) } });
      s.registerTool("greet", { description: "sync", inputSchema: z.object({ name: z.string() }) }, async ({ name }) => ({ content: [{ type: "text", text: `Hello, ${name}!` }] }));
      return s;
    };
    const http = await listen(createHttpApp({ createServer: plain, bearer: bearerFor(keys), audit: sink }));
    closers.push(() => http.close());
    const url = new URL("/mcp", http.url);
    const token = await mint(keys, { scope: "hmcp:access", patient: "p1" });
    expect((await rpc(url, token, "server/discover", {})).result?.["capabilities"]?.extensions?.[TASKS_EXTENSION_ID]).toBeUndefined();
    const taskId = "00000000-0000-4000-8000-000000000000";
    const raw = (method: string, params: Record<string, unknown>, capabilities: Record<string, unknown>) =>
      fetch(url, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": method, "mcp-name": taskId },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params: { ...params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": capabilities } } }),
      });
    records.length = 0;
    const before = built;
    for (const [method, params] of [["tasks/get", { taskId }], ["tasks/cancel", { taskId }], ["tasks/update", { taskId, inputResponses: {} }]] as const) {
      const refused = await raw(method, params, { elicitation: { form: {} } });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ id: 7, error: { code: -32021, data: { reason: "missing_client_capability", requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID]: {} } } } } });
    }
    expect(built).toBe(before);
    expect(records.map((r) => [r.type, r.status, r.reason, r.outcome])).toEqual([
      ["http", 400, "missing_client_capability", "denied"],
      ["http", 400, "missing_client_capability", "denied"],
      ["http", 400, "missing_client_capability", "denied"],
    ]);
    records.length = 0;
    const unknown = await raw("tasks/get", { taskId }, WITH_TASKS);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ id: 7, error: { code: -32601 } });
    expect(records.map((r) => [r.type, r.status, r.reason])).toEqual([["http", 404, "method_not_found"]]);
    // the same server's tools answer as before
    expect((await rpc(url, token, "tools/call", { name: "greet", arguments: { name: "World" } })).result).toMatchObject({ content: [{ text: "Hello, World!" }] });
  });

  it("a -32021 the pipeline answers in-band (HTTP 400) has its own request record and no second, HTTP-level one", async () => {
    const keys = await makeKeys();
    const records: AuditRecordInput[] = [];
    const sink: AuditSink = { append: (r) => void records.push(r), flush: async () => undefined, close: async () => undefined };
    const http = await listen(createHttpApp({ createServer: () => agent(records, [], { store }), bearer: bearerFor(keys), audit: sink }));
    closers.push(() => http.close());
    const url = new URL("/mcp", http.url);
    const token = await mint(keys, { scope: "hmcp:access", patient: "p1" });
    records.length = 0;
    const required = await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: 1 } }, { elicitation: { form: {} } });
    expect(required.error).toMatchObject({ code: -32021 });
    await new Promise((r) => setTimeout(r, 50));
    expect(records.map((r) => [r.type, r.method, r.reason])).toEqual([["request", "tools/call", "missing_client_capability"]]);
  });

  it("maxActivePerOwner: a caller with that many tasks not yet ended is refused another (-32000 too_many_tasks, audited), others are not; once one ends it may start another", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const capStore = await PostgresTaskStore.open({ db: pglite, table: "hmcp_tasks_cap" });
    const url = await serve(keys, audit, [], { store: capStore, maxActivePerOwner: 2 });
    const token = await mint(keys, { scope: "hmcp:access" });
    const other = await mint(keys, { scope: "hmcp:access", sub: "another-clinician" });
    const start = (t: string) => rpc(url, t, "tools/call", { name: "slow_compute", arguments: { ms: 20_000 } });
    const first = (await start(token)).result!["taskId"] as string;
    const second = (await start(token)).result!["taskId"] as string;
    const third = await start(token);
    expect(third.error).toMatchObject({ code: -32000, data: { reason: "too_many_tasks" } });
    expect(audit.find((r) => r.reason === "too_many_tasks")).toMatchObject({ method: "tools/call", outcome: "failed" });
    const others = await start(other);
    expect(others.result?.["resultType"]).toBe("task");
    await rpc(url, token, "tasks/cancel", { taskId: first });
    const fourth = await start(token);
    expect(fourth.result?.["resultType"]).toBe("task");
    // the rest cancelled, so that the app's shutdown has nothing to wait for
    for (const taskId of [second, fourth.result!["taskId"] as string]) await rpc(url, token, "tasks/cancel", { taskId });
    await rpc(url, other, "tasks/cancel", { taskId: others.result!["taskId"] as string });
  });

  it("ttlMs: a task past its lifetime is refused as expired and deleted", async () => {
    const keys = await makeKeys();
    const ttlStore = await PostgresTaskStore.open({ db: pglite, table: "hmcp_tasks_ttl" });
    const url = await serve(keys, [], [], { store: ttlStore, ttlMs: 400 });
    const token = await mint(keys, { scope: "hmcp:access" });
    const created = await rpc(url, token, "tools/call", { name: "slow_compute", arguments: { ms: 1 } });
    expect(created.result?.["ttlMs"]).toBe(400);
    const taskId = created.result!["taskId"] as string;
    await until(url, token, taskId, (t) => t["status"] === "completed");
    await new Promise((r) => setTimeout(r, 450));
    expect((await rpc(url, token, "tasks/get", { taskId })).error).toMatchObject({ code: -32602, message: "Failed to retrieve task: Task has expired", data: { reason: "task_expired" } });
    expect(await ttlStore.sweep(Date.now())).toBe(1);
    expect((await rpc(url, token, "tasks/get", { taskId })).error).toMatchObject({ code: -32602, data: { reason: "task_not_found" } });
  });

  it("questions asked at once (Promise.all of ctx.elicit) wait side by side: tasks/get surfaces both keys, a partial tasks/update keeps the task input_required with the other key, the last answer resumes it", async () => {
    const keys = await makeKeys();
    const audit: AuditRecordInput[] = [];
    const writes: string[] = [];
    const url = await serve(keys, audit, writes, { store }, (a, w, tasks) => {
      const s = agent(a, w, tasks);
      s.registerTool("co_sign", { description: "asks two clinicians at once, then writes", execution: { taskSupport: "optional" } }, async (extra) => {
        const ctx = hmcpContext(extra);
        const ask = (who: string) => ctx.elicit({ message: `Co-sign as ${who}?`, requestedSchema: { type: "object", properties: { approve: { type: "boolean" } }, required: ["approve"] } });
        const [attending, resident] = await Promise.all([ask("attending"), ask("resident")]);
        const id = await ctx.step("write", () => {
          w.push("co-signed");
          return "Observation/obs-co";
        });
        return { content: [{ type: "text", text: `attending=${attending.action} resident=${resident.action} ${id}` }] };
      });
      return s;
    });
    const token = await mint(keys, { scope: "hmcp:access", patient: "p1" });
    const taskId = (await rpc(url, token, "tools/call", { name: "co_sign", arguments: {} })).result!["taskId"] as string;
    const waiting = await until(url, token, taskId, (t) => t["status"] !== "working");
    expect(waiting["status"]).toBe("input_required");
    const asked = waiting["inputRequests"] as Record<string, any>;
    expect(Object.keys(asked)).toHaveLength(2);
    const [first, second] = Object.keys(asked) as [string, string];
    expect(asked[first].params.message).toBe("Co-sign as attending?");
    expect(asked[second].params.message).toBe("Co-sign as resident?");
    // the second question answered first; an unknown key beside it is ignored
    const ack = await rpc(url, token, "tasks/update", { taskId, inputResponses: { [second]: { action: "decline" }, "elicitation-99": { action: "accept" } } });
    expect(ack.result).toMatchObject({ resultType: "complete" });
    const partial = (await rpc(url, token, "tasks/get", { taskId })).result!;
    expect(partial["status"]).toBe("input_required");
    expect(Object.keys(partial["inputRequests"])).toEqual([first]);
    // tasks/update without inputResponses (a required member) is refused
    expect((await rpc(url, token, "tasks/update", { taskId })).error).toMatchObject({ code: -32602 });
    // an answered key is not taken again; the malformed answer to the open one is refused and takes nothing
    expect((await rpc(url, token, "tasks/update", { taskId, inputResponses: { [first]: { nope: true } } })).error).toMatchObject({ code: -32602, data: { reason: "invalid_input_response" } });
    await rpc(url, token, "tasks/update", { taskId, inputResponses: { [second]: { action: "accept", content: { approve: true } } } });
    expect(Object.keys((await rpc(url, token, "tasks/get", { taskId })).result!["inputRequests"])).toEqual([first]);
    await rpc(url, token, "tasks/update", { taskId, inputResponses: { [first]: { action: "accept", content: { approve: true } } } });
    const done = await until(url, token, taskId, (t) => t["status"] === "completed" || t["status"] === "failed");
    expect(done["result"]?.content[0].text).toBe("attending=accept resident=decline Observation/obs-co");
    expect(writes).toEqual(["co-signed"]);
    const updates = audit.filter((r) => r.method === "tasks/update" && r.task?.id === taskId && r.outcome === "allowed");
    expect(updates.map((r) => r.interactions ?? [])).toEqual([[{ kind: "elicitation", outcome: "decline" }], [], [{ kind: "elicitation", outcome: "accept" }]]);
    const asking = audit.find((r) => r.method === "tools/call" && r.task?.id === taskId && r.task.status === "input_required");
    expect(asking?.interactions).toEqual([{ kind: "elicitation", outcome: "input_required" }, { kind: "elicitation", outcome: "input_required" }]);
  });

  it("HMCPClient: callTool waits a task out, answering its question through onElicitation; another client fetches a task by id; HMCP sampling through the tool runs as a task", async () => {
    const keys = await makeKeys();
    const writes: string[] = [];
    const url = await serve(keys, [], writes, { store, pollIntervalMs: 20 }, (audit, w, tasks) => {
      const s = agent(audit, w, tasks);
      s.sampling(async (params, ctx) => {
        const ok = await ctx.elicit({ message: "Share the summary?", requestedSchema: { type: "object", properties: {} } });
        if (ok.action !== "accept") return { content: { type: "text", text: "not shared" }, stopReason: INFO_NEEDED };
        return { content: { type: "text", text: `summary of ${params.messages.length} message(s)` }, stopReason: "endTurn" };
      }, { taskSupport: "optional" });
      return s;
    });
    const token = await mint(keys, { scope: "hmcp:access hmcp:sample", patient: "p1" });
    const asked: string[] = [];
    const statuses: string[] = [];
    const c = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, {
      protocolEra: "modern",
      guardrails: false,
      onElicitation: async (params) => {
        asked.push(params.message);
        return { action: "accept", content: { approve: true } };
      },
    });
    await c.connect({ type: "http", url: url.href, headers: { authorization: `Bearer ${token}` } });
    closers.push(() => c.close());
    const result = await c.callTool({ name: "write_observation", arguments: { patient: "p1", code: "spo2" } }, { onStatus: (t) => statuses.push(t.status) });
    expect(result.content).toEqual([{ type: "text", text: "written Observation/obs-1" }]);
    expect(asked).toEqual(["Approve writing spo2 for p1?"]);
    expect(statuses).toContain("input_required");

    const started = await c.startToolCall({ name: "slow_compute", arguments: { ms: 300 } });
    expect("task" in started && started.task.status).toBe("working");
    const taskId = "task" in started ? started.task.taskId : "";
    // another process (here another connection) holding only the id
    const d = new HMCPClient({ name: "orchestrator-2", version: "1.0.0" }, { protocolEra: "modern", guardrails: false });
    await d.connect({ type: "http", url: url.href, headers: { authorization: `Bearer ${token}` } });
    closers.push(() => d.close());
    expect((await d.waitForTask(taskId)).content).toEqual([{ type: "text", text: "slept 300" }]);
    expect((await d.getTask(taskId)).status).toBe("completed");

    const sampled = await c.ask("Summarise the chart", { patient: "p1" });
    expect(sampled.content).toEqual({ type: "text", text: "summary of 1 message(s)" });
    expect(asked).toContain("Share the summary?");
    expect(writes).toEqual(["p1:spo2"]);
  });
});
