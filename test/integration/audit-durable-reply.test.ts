/**
 * `replyAfterAuditDurable`: no answered request without a durable audit record, even when the process is killed
 * (SIGKILL) the moment its answer leaves. The agent's file trail commits in groups every 3 s; killed right after an
 * answer, the trail holds that request's record when the option is on, and (the window the option closes) not when it
 * is off.
 */
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { iterateAudit } from "hmcp";
import { tempLogDir } from "../unit/audit/helpers.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const AGENT = fileURLToPath(new URL("../fixtures/durable-reply-agent.ts", import.meta.url));
const MODERN = "2026-07-28";

/** Starts the agent, calls its tool once, SIGKILLs it as soon as the answer is in; the trail's request records. */
async function answerThenKill(durable: boolean): Promise<{ answered: string; records: Array<{ requestId?: unknown; outcome?: string }> }> {
  const dir = await tempLogDir(`durable-reply-${durable}`);
  const child = spawn(process.execPath, ["--import", "tsx", AGENT], { cwd: ROOT, env: { ...process.env, HMCP_AUDIT_DIR: dir, HMCP_REPLY_DURABLE: durable ? "1" : "0" }, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once("line", (line) => resolve((JSON.parse(line) as { url: string }).url));
      child.once("exit", (code) => reject(new Error(`agent exited (${code})`)));
    });
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "write" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "write", arguments: { n: 1 }, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
    });
    const body = await res.text();
    child.kill("SIGKILL");
    await exited;
    const files = (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(dir, f));
    const records: Array<{ requestId?: unknown; outcome?: string }> = [];
    for await (const r of iterateAudit(files)) if ((r as { type?: string }).type === "request") records.push(r as { requestId?: unknown; outcome?: string });
    return { answered: body, records };
  } finally {
    child.kill("SIGKILL");
  }
}

describe("replyAfterAuditDurable", () => {
  it("an answer killed on the spot still has its record when the option is on; off, the record in the commit window is lost with the process", { timeout: 120_000 }, async () => {
    const on = await answerThenKill(true);
    expect(on.answered).toContain("wrote 1");
    expect(on.records).toEqual([expect.objectContaining({ requestId: 7, outcome: "allowed" })]);
    const off = await answerThenKill(false);
    expect(off.answered).toContain("wrote 1");
    expect(off.records).toEqual([]);
  });
});
