/**
 * Issue #25 item 3, the audit sink's folder made unwritable by its permissions (`chmod 0500`: EACCES) under a running
 * agent. Permissions do not stop a process holding CAP_DAC_OVERRIDE, so when the suite runs as root (CI) the agent runs
 * as root without it: `setpriv` drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from its bounding set, so the kernel
 * checks the folder's mode bits against it as against any owner. (Running it as `nobody` instead fails wherever the
 * clone sits under a folder only root may enter, such as a `mktemp -d` one.) The agent is a process of its own
 * (test/fixtures/audit-folder-agent.ts); without root it runs as the suite's own user. The fault is the kernel's:
 * nothing is mocked.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { generateAuditSigningKey, HMCPErrorCode, verifyAuditFiles, type AuditRecordInput } from "hmcp";
import { openSession } from "../fixtures/raw-http.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const AGENT = fileURLToPath(new URL("../fixtures/audit-folder-agent.ts", import.meta.url));
const MODERN = "2026-07-28";
const asRoot = process.getuid?.() === 0;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A fresh audit folder the agent's user owns (mode 0700), beside a folder for its operational log, under one everyone may traverse. */
async function auditFolder(): Promise<string> {
  const base = await mkdtemp(path.join(tmpdir(), "hmcp-eacces-"));
  cleanups.push(() => rm(base, { recursive: true, force: true }));
  await chmod(base, 0o755);
  for (const sub of ["audit", "logs"]) {
    await mkdir(path.join(base, sub), { mode: 0o700 });
  }
  return path.join(base, "audit");
}

type Keys = Awaited<ReturnType<typeof generateAuditSigningKey>>;

interface Agent {
  url: URL;
  stderr: () => string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the agent on `dir`, signing checkpoints with `keys`. */
async function startAgent(dir: string, keys: Keys): Promise<Agent> {
  const node = [process.execPath, "--import", "tsx", AGENT];
  const [cmd, ...args] = asRoot ? ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--", ...node] : node;
  const child: ChildProcess = spawn(cmd!, args, { cwd: ROOT, env: { ...process.env, HMCP_AUDIT_DIR: dir, HMCP_AUDIT_SIGNING_KEY: JSON.stringify(keys.privateJwk), HMCP_LOG_DIR: path.join(dir, "..", "logs"), HOME: tmpdir() }, stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  cleanups.push(async () => {
    child.kill("SIGKILL");
    await exited;
  });
  const first = await new Promise<{ url: string }>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", (line) => resolve(JSON.parse(line) as { url: string }));
    child.once("exit", (code) => reject(new Error(`agent exited (${code}): ${err}`)));
  });
  return {
    url: new URL(first.url),
    stderr: () => err,
    stop: async () => {
      child.kill("SIGTERM");
      return exited;
    },
  };
}

type Rpc = { result?: unknown; error?: { code: number; data?: { reason?: string } } };

/** One MCP 2026-07-28 `tools/call` of `ping`; the JSON-RPC reply. */
async function ping(url: URL, id: number): Promise<Rpc> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "ping" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "ping", arguments: {}, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
  });
  return (await res.json()) as Rpc;
}

/** Pings until one is refused (the write of a new file failed); how many were served before. */
async function serveUntilRefused(url: URL): Promise<{ served: number; refused: Rpc }> {
  for (let i = 0; i < 500; i++) {
    const r = await ping(url, 100 + i);
    if (r.error) return { served: i, refused: r };
    expect(r.result).toBeDefined();
  }
  throw new Error("no write failed in 500 requests");
}

const ready = async (url: URL) => {
  const res = await fetch(new URL("/readyz", url));
  return { status: res.status, body: (await res.json()) as { problems?: Array<Record<string, unknown>> } };
};

async function trail(dir: string): Promise<{ files: string[]; records: AuditRecordInput[] }> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).sort().map((f) => path.join(dir, f));
  const records: AuditRecordInput[] = [];
  for (const f of files) for (const line of (await readFile(f, "utf8")).split("\n").filter(Boolean)) records.push((JSON.parse(line) as { record: AuditRecordInput }).record);
  return { files, records };
}

describe(`audit sink fault: the folder made unwritable by its permissions (EACCES; the agent runs as ${asRoot ? "root without CAP_DAC_OVERRIDE" : "this user"})`, () => {
  it("requests fail closed with -32055 and a record, readiness says EACCES, the sink recovers by itself once the folder is writable again, shutdown completes and the trail verifies", async () => {
    const dir = await auditFolder();
    const keys = await generateAuditSigningKey();
    const agent = await startAgent(dir, keys);
    expect((await ping(agent.url, 1)).result).toBeDefined();
    expect((await ready(agent.url)).status).toBe(200);

    await chmod(dir, 0o500);
    const { served, refused } = await serveUntilRefused(agent.url);
    expect(refused.error).toMatchObject({ code: HMCPErrorCode.AuditUnavailable, data: { reason: "audit_unavailable" } });
    const notReady = await ready(agent.url);
    expect(notReady.status).toBe(503);
    expect(notReady.body.problems).toMatchObject([{ component: "audit", reason: "audit_sink_failed", code: "EACCES", recovers: true }]);
    expect(JSON.stringify(notReady.body)).not.toContain(dir);
    // a new 2025-era session is refused too
    await expect(openSession(agent.url)).rejects.toThrow(/503 .*-32055/);
    expect(agent.stderr()).toMatch(/"message":"audit write failed".*"code":"EACCES"/);

    // writable again: the sink's own retry finds it, no call needed
    await chmod(dir, 0o700);
    await expect.poll(async () => (await ready(agent.url)).status, { timeout: 10_000, interval: 50 }).toBe(200);
    expect((await ping(agent.url, 2)).result).toBeDefined();
    expect(await agent.stop()).toBe(0);

    const { files, records } = await trail(dir);
    const verified = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(verified).toMatchObject({ ok: true, closed: true, signaturesChecked: true });
    expect(verified.recoveries).toHaveLength(1);
    // nothing acknowledged lost: every served request, the refused one and the refused session, one record each
    const requests = records.filter((r) => r.type === "request");
    expect(requests.filter((r) => r.outcome === "allowed")).toHaveLength(2 + served);
    expect(requests.filter((r) => r.reason === "audit_unavailable")).toHaveLength(1);
    expect(records.filter((r) => r.type === "http" && r.reason === "audit_unavailable")).toHaveLength(1);
  });

  it("shut down while the folder stays unwritable: the process exits (its sink's close rejects with write_failed), and the next process reopens the chain once the folder is writable", async () => {
    const dir = await auditFolder();
    const keys = await generateAuditSigningKey();
    const agent = await startAgent(dir, keys);
    await chmod(dir, 0o500);
    await serveUntilRefused(agent.url);
    expect(await agent.stop()).toBe(3);
    expect(agent.stderr()).toMatch(/"closeFailed":"write_failed".*EACCES.*not written/);

    // the lock file it could not remove names a process that is gone: the next one takes it over
    await chmod(dir, 0o700);
    const next = await startAgent(dir, keys);
    expect((await ping(next.url, 1)).result).toBeDefined();
    expect(await next.stop()).toBe(0);
    const { files } = await trail(dir);
    const verified = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(verified).toMatchObject({ ok: true, closed: true, signaturesChecked: true });
    // the first process's unclean end is marked where the next one reopened the chain
    expect(verified.recoveries).toHaveLength(1);
  });
});
