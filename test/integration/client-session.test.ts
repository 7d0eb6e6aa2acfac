/**
 * HMCPClient and the server's session over Streamable HTTP: a server that restarted (404 to the session id) gets a new
 * session and the request once more; close() ends the session on the server at once (HTTP DELETE); and the client's
 * guardrails check what its own createMessage gets back.
 */
import type { AddressInfo } from "node:net";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { HMCPClient, HMCPErrorCode, HMCPServer, createHttpApp, listen, type HttpApp, type Listening } from "hmcp";
import { createEchoAgent, textOf } from "../fixtures/echo-agent.js";

/** Sessions and reconnects, not authorization: the echo agent with `auth: false` behind an app without a bearer check. */
const openAgent = () => createEchoAgent({ auth: false });

const running: Listening[] = [];
afterEach(async () => {
  for (const l of running.splice(0)) await l.close({ drainTimeoutMs: 0 });
});

const answers = {
  onSampling: async () => ({ role: "assistant" as const, model: "m", content: { type: "text" as const, text: "ok" }, stopReason: "endTurn" }),
  onElicitation: async () => ({ action: "accept" as const, content: { approved: true } }),
};

async function serve(app: HttpApp, port = 0): Promise<Listening> {
  const l = await listen(app, { port });
  running.push(l);
  return l;
}

/**
 * An echo agent on a free port with a connected client; `stop()` takes the agent down (the client's pooled connection
 * has seen it close when it resolves) and leaves the port free for its restart.
 */
async function agentAndClient(): Promise<{ client: HMCPClient; port: number; stop: () => Promise<void> }> {
  const first = await serve(createHttpApp({ createServer: openAgent, bearer: false }));
  const port = Number((first.server.address() as AddressInfo).port);
  const client = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, answers);
  await client.connect({ type: "http", url: new URL("/mcp", first.url) });
  const stop = async () => {
    await first.close();
    running.splice(running.indexOf(first), 1);
    await new Promise((r) => setTimeout(r, 50));
  };
  return { client, port, stop };
}

describe("HMCPClient sessions over HTTP", () => {
  it("after the server restarts, the next createMessage starts a new session and succeeds (MCP: a 404 to the session means start anew)", async () => {
    let served = 0;
    const { client, port, stop } = await agentAndClient();
    expect(textOf((await client.ask("potassium 4.1")).content)).toBe("echo=potassium 4.1; model=ok; approval=accept:true");

    // the agent restarts on the same port: it knows no session
    await stop();
    const restarted = createHttpApp({
      createServer: () => {
        served++;
        return openAgent();
      },
      bearer: false,
    });
    await serve(restarted, port);
    expect(textOf((await client.ask("sodium 139")).content)).toBe("echo=sodium 139; model=ok; approval=accept:true");
    expect(served).toBe(1);
    expect(restarted.sessionCount).toBe(1);
    await client.close();
  });

  it("after a restart, concurrent calls all succeed on one new session, and a call made during the reconnect waits for it", async () => {
    const { client, port, stop } = await agentAndClient();
    await client.ask("potassium 4.1");
    await stop();
    const restarted = createHttpApp({ createServer: openAgent, bearer: false });
    // the restarted agent answers initialize after 150 ms, so later calls arrive while the reconnect is under way
    const slow = express();
    slow.use((req, _res, next) => (req.method === "POST" && !req.headers["mcp-session-id"] ? setTimeout(next, 150) : next()));
    slow.use(restarted.app);
    await serve({ app: slow, get sessionCount() { return restarted.sessionCount; }, notify: restarted.notify, close: (o) => restarted.close(o) }, port);
    const early = [1, 2, 3].map((i) => client.ask(`sodium 13${i}`));
    await new Promise((r) => setTimeout(r, 60));
    const late = client.ask("sodium 139");
    const texts = (await Promise.all([...early, late])).map((r) => textOf(r.content));
    expect(texts).toEqual([1, 2, 3, 9].map((i) => `echo=sodium 13${i}; model=ok; approval=accept:true`));
    expect(restarted.sessionCount).toBe(1);
    await client.close();
  });

  it("a reconnect that fails (the agent refuses new sessions) is tried again by the next call once the agent is back", async () => {
    const { client, port, stop } = await agentAndClient();
    await stop();
    // starting up: every session is unknown (404) and initialize is refused (503)
    const starting = express();
    starting.use((req, res) => (req.headers["mcp-session-id"] ? res.status(404).json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }) : res.status(503).end()));
    const tmp = starting.listen(port, "127.0.0.1");
    await new Promise((r) => tmp.once("listening", r));
    await expect(client.ask("potassium 4.1")).rejects.toMatchObject({ status: 503 });
    await new Promise<void>((r) => {
      tmp.close(() => r());
      tmp.closeAllConnections();
    });
    await new Promise((r) => setTimeout(r, 50));
    await serve(createHttpApp({ createServer: openAgent, bearer: false }), port);
    expect(textOf((await client.ask("potassium 4.2")).content)).toBe("echo=potassium 4.2; model=ok; approval=accept:true");
    await client.close();
    // after close() the client does not reconnect by itself
    await expect(client.ask("potassium 4.3")).rejects.toThrow();
  });

  it("close() ends the session on the server at once instead of at its idle timeout", async () => {
    const app = createHttpApp({ createServer: openAgent, bearer: false });
    const l = await serve(app);
    const client = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, answers);
    await client.connect({ type: "http", url: new URL("/mcp", l.url) });
    expect(app.sessionCount).toBe(1);
    await client.close();
    expect(app.sessionCount).toBe(0);
  });

  it("a patient-bound client blocks a result that names another patient (its input stage), though the server allowed it", async () => {
    const leaky = () => {
      const s = new HMCPServer({ name: "leaky", version: "1.0.0" }, { auth: false, guardrails: false });
      s.sampling(async () => ({ content: { type: "text", text: "Results for Patient/p-2 attached." }, stopReason: "endTurn", _meta: { subject: { reference: "Patient/p-2" } } }));
      return s;
    };
    const l = await serve(createHttpApp({ createServer: leaky, bearer: false }));
    const client = new HMCPClient({ name: "patient-app", version: "1.0.0" }, { patient: "p-1" });
    await client.connect({ type: "http", url: new URL("/mcp", l.url) });
    const err = await client.ask("my results").catch((e: unknown) => e);
    expect(err).toMatchObject({ code: HMCPErrorCode.GuardrailBlocked, data: { guardrail: "patient-context", stage: "input" } });
    // the same server's answer about the client's own patient passes
    const own = new HMCPClient({ name: "patient-app", version: "1.0.0" }, { patient: "p-2" });
    await own.connect({ type: "http", url: new URL("/mcp", l.url) });
    expect(textOf((await own.ask("my results")).content)).toBe("Results for Patient/p-2 attached.");
    await client.close();
    await own.close();
  });
});
