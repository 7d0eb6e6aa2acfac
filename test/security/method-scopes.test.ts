/**
 * Method scopes at the HTTP layer with real tokens: the bearer authenticator's `methodScopes` hold inside a session as
 * well as outside it, together with the session server's own requirement (a token must satisfy both), and the 403
 * challenge names what is missing.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { HMCPServer, createHttpApp, listen, type JwtBearerOptions, type Listening, type SamplingHandlerOptions } from "hmcp";
import { MCP_HEADERS, openSession } from "../fixtures/raw-http.js";
import { bearerFor, makeKeys, mint, type TestKeys } from "../fixtures/bearer.js";

let keys: TestKeys;
let http: Listening | undefined;
beforeAll(async () => {
  keys = await makeKeys();
});
afterEach(async () => {
  await http?.close();
  http = undefined;
});

/** An agent with a privileged tool and a sampling handler; `runs` counts what ran. */
function agent(runs: { n: number }, sampling: SamplingHandlerOptions = {}) {
  const s = new HMCPServer({ name: "scoped-agent", version: "1" }, { guardrails: false });
  s.registerTool("delete_everything", { description: "a privileged act", inputSchema: z.object({ x: z.number() }) }, async () => {
    runs.n++;
    return { content: [{ type: "text", text: "done" }] };
  });
  s.sampling(async () => {
    runs.n++;
    return { content: { type: "text", text: "ok" }, stopReason: "endTurn" };
  }, sampling);
  return s;
}

async function start(runs: { n: number }, auth: Partial<JwtBearerOptions>, sampling: SamplingHandlerOptions = {}) {
  http = await listen(createHttpApp({ createServer: () => agent(runs, sampling), bearer: bearerFor(keys, auth), enableJsonResponse: true }));
  return new URL("/mcp", http.url);
}

const toolCall = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "delete_everything", arguments: { x: 1 } } };
const samplingCall = { jsonrpc: "2.0", id: 2, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hi" } }], maxTokens: 5 } };

/** POSTs `body` with `token` (in session `sid` when given): the status and the challenge's `scope`. */
async function send(endpoint: URL, token: string, body: unknown, sid?: string): Promise<{ status: number; scope: string | undefined }> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, authorization: `Bearer ${token}`, "mcp-protocol-version": "2025-06-18", ...(sid && { "mcp-session-id": sid }) },
    body: JSON.stringify(body),
  });
  await res.body?.cancel();
  return { status: res.status, scope: /scope="([^"]*)"/.exec(res.headers.get("www-authenticate") ?? "")?.[1] };
}

describe("the bearer authenticator's methodScopes inside a session", () => {
  it("a tools/call the authenticator's table refuses is refused inside a session too (403 naming the scope), and the tool does not run", async () => {
    const runs = { n: 0 };
    // The deployer restricts tools/call at the resource server: only hmcp:write, not the default's hmcp:access.
    const endpoint = await start(runs, { methodScopes: { "tools/call": ["hmcp:write"] } });
    const access = await mint(keys, { scope: "hmcp:access" });
    expect(await send(endpoint, access, toolCall)).toEqual({ status: 403, scope: "hmcp:write" });
    const sid = await openSession(endpoint, { authorization: `Bearer ${access}` });
    expect(await send(endpoint, access, toolCall, sid)).toEqual({ status: 403, scope: "hmcp:write" });
    expect(runs.n).toBe(0);

    const writer = await mint(keys, { scope: "hmcp:write" });
    const sidW = await openSession(endpoint, { authorization: `Bearer ${writer}` });
    expect((await send(endpoint, writer, toolCall, sidW)).status).toBe(200);
    expect(runs.n).toBe(1);
  });

  it("a method with an entry in the authenticator's table and a requirement of the session's server needs both; the 403 names what is missing", async () => {
    const runs = { n: 0 };
    const endpoint = await start(runs, { methodScopes: { "sampling/createMessage": ["hmcp:sample"] } }, { requiredScopes: ["patient/hmcp:read"] });
    const both = await mint(keys, { scope: "hmcp:sample patient/hmcp:read", patient: "p1" });
    const sid = await openSession(endpoint, { authorization: `Bearer ${both}` });
    const sendAs = async (scope: string) => send(endpoint, await mint(keys, { scope, patient: "p1" }), samplingCall, sid);
    expect(await sendAs("hmcp:sample")).toEqual({ status: 403, scope: "patient/hmcp:read" });
    expect(await sendAs("patient/hmcp:read")).toEqual({ status: 403, scope: "hmcp:sample" });
    expect(await sendAs("openid")).toEqual({ status: 403, scope: "hmcp:sample patient/hmcp:read" });
    expect(runs.n).toBe(0);
    expect((await send(endpoint, both, samplingCall, sid)).status).toBe(200);
    expect(runs.n).toBe(1);
  });

  it("without an entry in the authenticator's table, a sampling handler's requiredScopes decide as before (in place of the default)", async () => {
    const runs = { n: 0 };
    const endpoint = await start(runs, {}, { requiredScopes: ["hmcp:read"] });
    const reader = await mint(keys, { scope: "hmcp:read" });
    const sid = await openSession(endpoint, { authorization: `Bearer ${reader}` });
    expect((await send(endpoint, reader, samplingCall, sid)).status).toBe(200);
    const sampler = await mint(keys, { scope: "hmcp:sample" });
    const sidS = await openSession(endpoint, { authorization: `Bearer ${sampler}` });
    expect(await send(endpoint, sampler, samplingCall, sidS)).toEqual({ status: 403, scope: "hmcp:read" });
    expect(runs.n).toBe(1);
  });
});
