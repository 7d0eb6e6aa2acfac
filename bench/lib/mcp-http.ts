/**
 * Raw Streamable HTTP helpers for the runner: open a session with `initialize` (MCP spec 2025-06-18, "Lifecycle"),
 * probe a request's answer, close a session with DELETE. Plain fetch, so the measured client is only autocannon or
 * the SDK/HMCP client where a figure says so.
 */
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/server";

export interface OpenSession {
  sessionId: string;
  protocolVersion: string;
  /** Headers every request of this session needs (content type, accept, session, protocol version, bearer). */
  headers: Record<string, string>;
}

const BASE_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

/** Reads a JSON-RPC message from a JSON or single-event SSE response. */
export async function readJsonRpc(res: Response): Promise<Record<string, unknown>> {
  const text = await res.text();
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (line.startsWith("data:") && line.length > 6) return JSON.parse(line.slice(5)) as Record<string, unknown>;
    }
    throw new Error("SSE response without a data line");
  }
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Opens a stateful session: initialize, then notifications/initialized.
 * @throws Error when the server refuses either step
 */
export async function openSession(url: string, extraHeaders: Record<string, string> = {}): Promise<OpenSession> {
  const res = await fetch(url, {
    method: "POST",
    headers: { ...BASE_HEADERS, ...extraHeaders },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "initialize",
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: "bench-load", version: "1.0.0" } },
    }),
  });
  if (res.status !== 200) throw new Error(`initialize: HTTP ${res.status} ${await res.text()}`);
  const msg = await readJsonRpc(res);
  const sessionId = res.headers.get("mcp-session-id");
  if (!sessionId) throw new Error("initialize: no mcp-session-id");
  const protocolVersion = String((msg["result"] as { protocolVersion?: string } | undefined)?.protocolVersion ?? LATEST_PROTOCOL_VERSION);
  const headers = { ...BASE_HEADERS, ...extraHeaders, "mcp-session-id": sessionId, "mcp-protocol-version": protocolVersion };
  const ack = await fetch(url, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) });
  await ack.text();
  if (ack.status !== 202) throw new Error(`notifications/initialized: HTTP ${ack.status}`);
  return { sessionId, protocolVersion, headers };
}

/** Ends a session (HTTP DELETE, MCP spec "Session Management"). */
export async function closeSession(url: string, session: OpenSession): Promise<void> {
  const res = await fetch(url, { method: "DELETE", headers: session.headers });
  await res.text();
}

/** Sends one body and returns the parsed answer. */
export async function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; message: Record<string, unknown> }> {
  const res = await fetch(url, { method: "POST", headers, body });
  return { status: res.status, message: await readJsonRpc(res) };
}
