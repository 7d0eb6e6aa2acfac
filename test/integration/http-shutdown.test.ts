/**
 * Graceful shutdown of the HTTP app: a request running when `close()` is called is finished and answered (its handler's
 * own requests back to the client still get through), its audit record is appended before `close()` resolves, and new
 * sessions and requests are refused with 503 meanwhile; a request whose handler outlives the drain is recorded as
 * abandoned before `close()` resolves, and one that returns after its session closed as aborted (it got no reply).
 */
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { FileAuditSink, HMCPClient, HMCPServer, createHttpApp, generateAuditSigningKey, listen, queryAudit, serveStdio, type AuditRecordInput, type Listening } from "hmcp";
import { TEST_PRINCIPAL, createEchoAgent, textOf } from "../fixtures/echo-agent.js";
import { MCP_HEADERS, openSession } from "../fixtures/raw-http.js";
import { tempLogDir } from "../unit/audit/helpers.js";
import { testAuth } from "../fixtures/bearer.js";

let http: Listening | undefined;
afterEach(async () => {
  await http?.close({ drainTimeoutMs: 0 });
  http = undefined;
});

const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "late", version: "1" } } };

describe("HttpApp.close: graceful shutdown", () => {
  it("finishes the running request (with its round trips to the client), records it, and refuses new work with 503", async () => {
    const dir = await tempLogDir("http-shutdown");
    const audit = await FileAuditSink.open({ dir, signing: { privateKey: (await generateAuditSigningKey()).privateJwk } });
    let releaseModel!: () => void;
    const modelAsked = new Promise<void>((resolve) => (releaseModel = resolve));
    let modelCalled!: () => void;
    const modelReached = new Promise<void>((resolve) => (modelCalled = resolve));
    const auth = await testAuth();
    const client = new HMCPClient(
      { name: "orchestrator", version: "1.0.0" },
      {
        tokenProvider: auth.tokenProvider,
        onSampling: async () => {
          modelCalled();
          await modelAsked; // the server's request back to this client is still open when shutdown begins
          return { role: "assistant", model: "m", content: { type: "text", text: "summary" }, stopReason: "endTurn" };
        },
        onElicitation: async () => ({ action: "accept", content: { approved: true } }),
      },
    );
    http = await listen(createHttpApp({ createServer: () => createEchoAgent({ audit }), bearer: auth.bearer, audit }));
    const endpoint = new URL("/mcp", http.url);
    const otherSession = await openSession(endpoint, auth.headers);
    await client.connect({ type: "http", url: endpoint });
    const answer = client.ask("potassium 4.1");
    await modelReached;

    const closed = http.close({ drainTimeoutMs: 10_000 });
    let closeDone = false;
    void closed.then(() => (closeDone = true));
    // while draining: no new session, no new request on an open session
    const late = await fetch(endpoint, { method: "POST", headers: { ...MCP_HEADERS, ...auth.headers }, body: JSON.stringify(initialize) });
    expect(late.status).toBe(503);
    expect(late.headers.get("retry-after")).toBe("5");
    const newRequest = await fetch(endpoint, {
      method: "POST",
      headers: { ...MCP_HEADERS, ...auth.headers, "mcp-session-id": otherSession, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }),
    });
    expect(newRequest.status).toBe(503);
    expect(closeDone).toBe(false);

    releaseModel(); // the client's answer (a POST carrying a JSON-RPC response) and the elicitation round trip get through
    const result = await answer;
    expect(textOf(result.content)).toBe("echo=potassium 4.1; model=summary; approval=accept:true");
    await closed;
    await client.close().catch(() => undefined);
    http = undefined;
    await audit.close();

    const records = await queryAudit([dir]);
    const sampling = records.filter((r) => r.type === "request" && r.method === "sampling/createMessage");
    expect(sampling).toHaveLength(1);
    expect(sampling[0]).toMatchObject({ outcome: "allowed", actor: { clientId: "test-client", sub: "test-client" } });
    expect(records.filter((r) => r.type === "http" && r.reason === "shutting_down").map((r) => r.status)).toEqual([503, 503]);
    expect(records.filter((r) => r.type === "session.end").map((r) => r.reason).sort()).toEqual(["shutdown", "shutdown"]);
  });

  /** An agent whose sampling handler waits for `release()`, ignoring its signal (e.g. an EMR write it cannot cancel). */
  function stubbornAgent(audit: FileAuditSink) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const handlerEntered = new Promise<void>((resolve) => (entered = resolve));
    let returned!: () => void;
    const handlerReturned = new Promise<void>((resolve) => (returned = resolve));
    const createServer = () =>
      new HMCPServer({ name: "stubborn-agent", version: "1.0.0" }, { guardrails: false, audit }).sampling(async () => {
        entered();
        await released;
        setImmediate(returned);
        return { content: { type: "text", text: "written" }, stopReason: "endTurn" };
      });
    return { createServer, release, handlerEntered, handlerReturned };
  }

  /**
   * A file audit sink in a new dir, the stubborn agent behind `createHttpApp` (in `http`), and a client whose
   * createMessage is running in its handler. `answer` settles with the result or the error.
   */
  async function stubbornRequest(name: string, appOptions: { sessionIdleTimeoutMs?: number } = {}, timeoutMs?: number) {
    const dir = await tempLogDir(name);
    const audit = await FileAuditSink.open({ dir, signing: { privateKey: (await generateAuditSigningKey()).privateJwk } });
    const agent = stubbornAgent(audit);
    const auth = await testAuth();
    const listening = await listen(createHttpApp({ createServer: agent.createServer, bearer: auth.bearer, audit, ...appOptions }));
    http = listening;
    const client = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, { tokenProvider: auth.tokenProvider });
    await client.connect({ type: "http", url: new URL("/mcp", listening.url) });
    const params = { messages: [{ role: "user" as const, content: { type: "text" as const, text: "write the note" } }], maxTokens: 5 };
    const answer = client.createMessage(params, timeoutMs === undefined ? {} : { timeoutMs }).catch((e: unknown) => e);
    await agent.handlerEntered;
    return { dir, audit, agent, client, answer, listening };
  }

  const samplingRecords = (records: AuditRecordInput[]) => records.filter((r) => r.type === "request" && r.method === "sampling/createMessage");

  it.each([
    ["the audit sink closed before the handler returns", true],
    ["the audit sink still open when the handler returns", false],
  ])("records a request whose handler ignores its aborted signal past the drain as failed (abandoned_at_shutdown), once: %s", async (_, closeSinkFirst) => {
    const { dir, audit, agent, client, answer, listening } = await stubbornRequest("http-shutdown-abandoned");
    const { release, handlerReturned } = agent;

    await listening.close({ drainTimeoutMs: 50 });
    http = undefined;
    // closed first: the record must already be in the trail; open: the late return must not add a second record
    if (closeSinkFirst) await audit.close();
    release();
    await handlerReturned;
    if (!closeSinkFirst) await audit.close();
    await client.close().catch(() => undefined);
    expect(await answer).toBeInstanceOf(Error); // the client got no answer

    const sampling = samplingRecords(await queryAudit([dir]));
    expect(sampling).toHaveLength(1);
    expect(sampling[0]).toMatchObject({ outcome: "failed", reason: "abandoned_at_shutdown", agent: "stubborn-agent" });
    expect(sampling[0]!.digests).toHaveProperty("request");
    expect(sampling[0]!.digests).not.toHaveProperty("response");
  });

  it("waits for and records a request of a session its client ended (DELETE) while the request ran: failed, aborted (no reply was sent)", async () => {
    const { dir, audit, agent, client, answer, listening } = await stubbornRequest("http-shutdown-deleted");
    await client.close(); // DELETE: the session ends while its request runs
    expect(await answer).toBeInstanceOf(Error);

    let closeDone = false;
    const closed = listening.close({ drainTimeoutMs: 10_000 }).then(() => (closeDone = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(closeDone).toBe(false); // the drain waits for it
    agent.release();
    await closed;
    http = undefined;
    await audit.close(); // right after close(): the record must be in

    const sampling = samplingRecords(await queryAudit([dir]));
    expect(sampling).toHaveLength(1);
    expect(sampling[0]).toMatchObject({ outcome: "failed", reason: "aborted" });
    expect(sampling[0]!.digests).not.toHaveProperty("response");
  });

  it("records a request that returns in the grace after its session was closed as failed, aborted, without a response digest", async () => {
    const { dir, audit, agent, client, answer, listening } = await stubbornRequest("http-shutdown-grace");
    const closed = listening.close({ drainTimeoutMs: 50 });
    setTimeout(agent.release, 300); // after the drain, inside the 1 s grace
    await closed;
    http = undefined;
    await audit.close();
    await client.close().catch(() => undefined);
    expect(await answer).toBeInstanceOf(Error);

    const sampling = samplingRecords(await queryAudit([dir]));
    expect(sampling).toHaveLength(1);
    expect(sampling[0]).toMatchObject({ outcome: "failed", reason: "aborted" });
    expect(sampling[0]!.digests).toHaveProperty("request");
    expect(sampling[0]!.digests).not.toHaveProperty("response");
  });

  it("stdio: closing records a running request as abandoned before session.end, and not again when it returns", async () => {
    const records: Array<Record<string, unknown>> = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const handlerEntered = new Promise<void>((resolve) => (entered = resolve));
    const server = new HMCPServer({ name: "stdio-agent", version: "1.0.0" }, { auth: { localPrincipal: TEST_PRINCIPAL }, guardrails: false, hooks: { audit: (r) => void records.push({ ...r }) } }).sampling(async () => {
      entered();
      await released;
      return { content: { type: "text", text: "x" }, stopReason: "endTurn" };
    });
    const stdin = new PassThrough();
    const close = await serveStdio(server, { stdin, stdout: new PassThrough() });
    const send = (m: unknown) => stdin.write(JSON.stringify(m) + "\n");
    send(initialize);
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 } });
    await handlerEntered;
    await close();
    const summary = () => records.map((r) => [r["type"], r["outcome"], r["reason"]].filter((x) => x !== undefined).join(" "));
    expect(summary()).toEqual(["session.start allowed", "request failed abandoned_at_shutdown", "session.end allowed stdin_closed"]);
    // every record names the transport, the session's start too (written before the client's first message connects it)
    expect(records.map((r) => r["transport"])).toEqual(["stdio", "stdio", "stdio"]);
    release();
    await new Promise((r) => setTimeout(r, 50));
    expect(summary()).toHaveLength(3);
  });

  it("the idle-session sweep does not end a session while a request in it is running", async () => {
    // idle after 100 ms (the sweep runs every second); a swept session would never answer: fail in 5 s, not 60
    const { dir, audit, agent, client, answer, listening } = await stubbornRequest("http-idle-running", { sessionIdleTimeoutMs: 100 }, 5000);
    await new Promise((r) => setTimeout(r, 1300));
    agent.release();
    const result = await answer;
    expect(result).not.toBeInstanceOf(Error);
    expect(textOf((result as { content: unknown }).content)).toBe("written");
    await client.close();
    await listening.close({ drainTimeoutMs: 0 });
    http = undefined;
    await audit.close();
    expect(samplingRecords(await queryAudit([dir]))[0]).toMatchObject({ outcome: "allowed" });
  });
});
