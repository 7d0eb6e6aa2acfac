/**
 * Issue #25 item 3, the audit sink's faults: a FileAuditSink on a file system that fills up (ENOSPC) or becomes
 * read-only under it (EROFS). The faults are real: the sink's folder is a 256 KiB tmpfs mounted for the test
 * (test/fixtures/tmpfs.ts), filled with a ballast file (freeing the ballast clears it) or covered by a read-only bind
 * mount of itself (unmounting it clears it).
 */
import { readFile, readdir, rm, open } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  AuditSinkError,
  FileAuditSink,
  HMCPErrorCode,
  HMCPServer,
  createHttpApp,
  generateAuditSigningKey,
  listen,
  verifyAuditFiles,
  type AuditRecordInput,
  type AuditSink,
  type Listening,
} from "hmcp";
import { MCP_HEADERS, openSession } from "../fixtures/raw-http.js";
import { mountTmpfs, type ScratchFileSystem } from "../fixtures/tmpfs.js";

const mounts: ScratchFileSystem[] = [];
let http: Listening | undefined;
afterEach(async () => {
  await http?.close();
  http = undefined;
  for (const m of mounts.splice(0)) m.release();
});

/** A 256 KiB tmpfs for one test, released after it. */
async function mountTinyFs(): Promise<ScratchFileSystem> {
  const m = await mountTmpfs(256);
  mounts.push(m);
  return m;
}
const mountTiny = async (): Promise<string> => (await mountTinyFs()).dir;

/** Fills the file system of `dir` with `ballast` (a real ENOSPC for whoever writes next). */
async function fill(dir: string): Promise<void> {
  const fh = await open(path.join(dir, "ballast"), "w");
  try {
    for (;;) await fh.write(Buffer.alloc(4096, 1));
  } catch (e) {
    expect((e as NodeJS.ErrnoException).code).toBe("ENOSPC");
  } finally {
    await fh.close();
  }
}
const free = (dir: string) => rm(path.join(dir, "ballast"));

/**
 * Serves requests on `sid` until the write of their records fails (the audit file's last page, still partly free
 * after {@link fill}, fills up first); returns how many were served (each answered: its record was taken).
 */
async function serveUntilWriteFails(endpoint: URL, sid: string, sink: FileAuditSink, firstId: number): Promise<number> {
  for (let i = 0; i < 100; i++) {
    expect((await ask(endpoint, sid, firstId + i)).result).toBeDefined();
    const failed = await sink.flush().then(
      () => undefined,
      (e: unknown) => e,
    );
    if (failed !== undefined) {
      expect(failed).toMatchObject({ name: "AuditSinkError", code: "write_failed" });
      return i + 1;
    }
  }
  throw new Error("the disk never filled up");
}

let handled = 0;
const agentWith = (sink: AuditSink) => () => {
  const s = new HMCPServer({ name: "audited", version: "1" }, { auth: false, audit: sink, guardrails: false }).sampling(async () => {
    handled++;
    return { content: { type: "text", text: "ok" } };
  });
  // for MCP 2026-07-28 requests (client → server sampling/createMessage is gone there)
  s.registerTool("ping", { inputSchema: z.object({}) }, async () => {
    handled++;
    return { content: [{ type: "text", text: "pong" }] };
  });
  return s;
};

const MODERN = "2026-07-28";
/** One MCP 2026-07-28 `tools/call` (no session); the JSON-RPC reply. */
async function askModern(endpoint: URL, id: number): Promise<{ result?: unknown; error?: { code: number; data?: { reason?: string } } }> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "ping" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "ping", arguments: {}, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} } } }),
  });
  const text = await res.text();
  if (text.startsWith("{")) return JSON.parse(text) as Awaited<ReturnType<typeof askModern>>;
  const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)) as { id?: number });
  return data.find((m) => m.id === id) as Awaited<ReturnType<typeof askModern>>;
}

/** One sampling request on a 2025-era session; the JSON-RPC reply. */
async function ask(endpoint: URL, sid: string, id: number): Promise<{ result?: unknown; error?: { code: number; data?: { reason?: string } } }> {
  const res = await fetch(endpoint, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: "hello" } }], maxTokens: 5 } }),
  });
  const text = await res.text();
  const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)) as { id?: number; result?: unknown; error?: { code: number } });
  return data.find((m) => m.id === id)!;
}

const get = async (base: URL, route: string) => {
  const res = await fetch(new URL(route, base));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

async function trail(dir: string): Promise<{ files: string[]; records: AuditRecordInput[] }> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).sort().map((f) => path.join(dir, f));
  const records: AuditRecordInput[] = [];
  for (const f of files) {
    for (const line of (await readFile(f, "utf8")).split("\n").filter(Boolean)) records.push((JSON.parse(line) as { record: AuditRecordInput }).record);
  }
  return { files, records };
}

/**
 * After a recovered fault: closes the app and the sink; the trail verifies, closed, with one `recover` checkpoint, and
 * nothing acknowledged is lost: `allowed` served requests and `refused` -32055 refusals, one record each, and the
 * refused session. @returns the trail's files
 */
async function closeAndCheckTrail(sink: FileAuditSink, dir: string, publicKey: Awaited<ReturnType<typeof generateAuditSigningKey>>["publicJwk"], counts: { allowed: number; refused: number }): Promise<string[]> {
  await http!.close();
  http = undefined;
  await sink.close();
  const { files, records } = await trail(dir);
  const verified = await verifyAuditFiles(files, { publicKey });
  expect(verified).toMatchObject({ ok: true, closed: true, signaturesChecked: true });
  expect(verified.recoveries).toHaveLength(1);
  const requests = records.filter((r) => r.type === "request");
  expect(requests.filter((r) => r.outcome === "allowed")).toHaveLength(counts.allowed);
  expect(requests.filter((r) => r.reason === "audit_unavailable")).toHaveLength(counts.refused);
  expect(records.filter((r) => r.type === "http" && r.reason === "audit_unavailable")).toHaveLength(1);
  return files;
}

/** The documented shutdown while a fault lasts: the listener closes, then the sink's close rejects typed. @returns its error */
async function shutDown(sink: FileAuditSink): Promise<AuditSinkError> {
  await expect(http!.close()).resolves.toBeUndefined();
  http = undefined;
  const closed = await sink.close().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(closed).toBeInstanceOf(AuditSinkError);
  expect(closed).toMatchObject({ code: "write_failed" });
  return closed as AuditSinkError;
}

describe("audit sink fault: the disk fills up (ENOSPC on a tiny tmpfs)", () => {
  it("readiness says so, requests are refused -32055 with a record each, the sink recovers once space is freed, and the trail verifies", async () => {
    const dir = await mountTiny();
    const keys = await generateAuditSigningKey();
    const notices: Array<{ message: string; meta: Record<string, unknown> }> = [];
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, retry: false, onNotice: (message, meta) => notices.push({ message, meta }) });
    handled = 0;
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    expect((await ask(endpoint, sid, 1)).result).toBeDefined();
    expect(await get(http.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
    await sink.flush();

    await fill(dir);
    // served before the write of its record failed: its record waits in the sink and is written on recovery
    const served = await serveUntilWriteFails(endpoint, sid, sink, 100);
    expect(notices.some((n) => n.message === "audit write failed" && n.meta["code"] === "ENOSPC")).toBe(true);

    // liveness apart from readiness: the process is up, it is not ready, and says why in words an operator can act on
    expect(await get(http.url, "/healthz")).toMatchObject({ status: 200, body: { status: "ok", ready: false } });
    const ready = await get(http.url, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: "not_ready", problems: [{ component: "audit", reason: "audit_sink_failed", code: "ENOSPC" }] });
    const problem = (ready.body["problems"] as Array<{ since: string; message: string }>)[0]!;
    expect(Date.parse(problem.since)).not.toBeNaN();
    expect(problem.message).not.toContain(dir);

    // every request now fails closed with the typed refusal; the handler does not run; no session opens
    const refused = await ask(endpoint, sid, 3);
    expect(refused.error?.code).toBe(HMCPErrorCode.AuditUnavailable);
    expect(refused.error?.data?.reason).toBe("audit_unavailable");
    await expect(openSession(endpoint)).rejects.toThrow(/503 .*-32055/);
    expect(handled).toBe(1 + served);

    // recovery without a restart: a retry while the disk is still full is refused with the reason ...
    await expect(sink.recover()).rejects.toMatchObject({ name: "AuditSinkError", code: "write_failed" });
    // ... and once space is freed, the waiting records are written, after a signed recover checkpoint
    await free(dir);
    await sink.recover();
    expect(await get(http.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
    expect((await ask(endpoint, sid, 4)).result).toBeDefined();
    expect(handled).toBe(2 + served);

    await closeAndCheckTrail(sink, dir, keys.publicJwk, { allowed: 2 + served, refused: 1 });
  });

  it("the sink retries by itself with back-off and recovers once space is freed", async () => {
    const dir = await mountTiny();
    const keys = await generateAuditSigningKey();
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, retry: { minDelayMs: 5, maxDelayMs: 20 }, onNotice: () => undefined });
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    await sink.flush();
    await fill(dir);
    const served = await serveUntilWriteFails(endpoint, sid, sink, 1);
    expect((await get(http.url, "/readyz")).status).toBe(503);
    await free(dir);
    // no call of ours: the sink's own retry finds the space
    for (let i = 0; i < 500 && (await get(http.url, "/readyz")).status !== 200; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await get(http.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
    expect((await ask(endpoint, sid, 2)).result).toBeDefined();
    await http.close();
    http = undefined;
    await sink.close();
    const { files, records } = await trail(dir);
    expect(await verifyAuditFiles(files, { publicKey: keys.publicJwk })).toMatchObject({ ok: true, closed: true });
    expect(records.filter((r) => r.type === "request" && r.outcome === "allowed")).toHaveLength(1 + served);
  });

  it("shutdown after a fault that never clears completes: the app closes, the sink's close rejects with a typed error and lets go of the chain", async () => {
    const dir = await mountTiny();
    const keys = await generateAuditSigningKey();
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, retry: false, onNotice: () => undefined });
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    await sink.flush();
    await fill(dir);
    await serveUntilWriteFails(endpoint, sid, sink, 1);

    expect((await shutDown(sink)).message).toMatch(/ENOSPC.*not written/);

    // the lock is released: once space is freed the chain reopens (a recover checkpoint: it did not end with close)
    await free(dir);
    const again = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, onNotice: () => undefined });
    await again.close();
    const { files } = await trail(dir);
    const verified = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(verified).toMatchObject({ ok: true, closed: true });
    expect(verified.recoveries).toHaveLength(1);
  });
});

describe("audit sink fault: the folder becomes read-only under the sink (EROFS)", () => {
  it("the file in hand keeps taking records, the next file (rotation) is refused EROFS: readiness says so, both eras get -32055 with a record each, the sink recovers once the folder is writable, and the trail verifies", async () => {
    const fs = await mountTinyFs();
    const keys = await generateAuditSigningKey();
    const notices: Array<{ message: string; meta: Record<string, unknown> }> = [];
    // small files, so a rotation (a file created in the folder) comes within a few requests
    const sink = await FileAuditSink.open({ dir: fs.dir, signing: { privateKey: keys.privateJwk }, retry: false, rotate: { maxBytes: 4096 }, onNotice: (message, meta) => notices.push({ message, meta }) });
    handled = 0;
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    expect((await ask(endpoint, sid, 1)).result).toBeDefined();
    await sink.flush();

    await fs.readOnly();
    const served = await serveUntilWriteFails(endpoint, sid, sink, 100);
    expect(notices.some((n) => n.message === "audit write failed" && n.meta["code"] === "EROFS")).toBe(true);
    expect(sink.fault).toMatchObject({ code: "EROFS", recovers: true });

    expect(await get(http.url, "/healthz")).toMatchObject({ status: 200, body: { status: "ok", ready: false } });
    const ready = await get(http.url, "/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ status: "not_ready", problems: [{ component: "audit", reason: "audit_sink_failed", code: "EROFS", recovers: true }] });
    expect((ready.body["problems"] as Array<{ message: string }>)[0]!.message).not.toContain(fs.dir);

    // fails closed on both eras, the handler does not run, no session opens
    const refused = await ask(endpoint, sid, 3);
    expect(refused.error).toMatchObject({ code: HMCPErrorCode.AuditUnavailable, data: { reason: "audit_unavailable" } });
    const refusedModern = await askModern(endpoint, 4);
    expect(refusedModern.error).toMatchObject({ code: HMCPErrorCode.AuditUnavailable, data: { reason: "audit_unavailable" } });
    await expect(openSession(endpoint)).rejects.toThrow(/503 .*-32055/);
    expect(handled).toBe(1 + served);

    // a retry while the folder is still read-only is refused with the reason; once it is writable the sink recovers
    await expect(sink.recover()).rejects.toMatchObject({ name: "AuditSinkError", code: "write_failed" });
    expect(sink.fault?.code).toBe("EROFS");
    await fs.writable();
    await sink.recover();
    expect(await get(http.url, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
    expect((await ask(endpoint, sid, 5)).result).toBeDefined();
    expect((await askModern(endpoint, 6)).result).toBeDefined();
    expect(handled).toBe(3 + served);

    const files = await closeAndCheckTrail(sink, fs.dir, keys.publicJwk, { allowed: 3 + served, refused: 2 });
    // the fault came at a rotation: the chain goes on in the next file
    expect(files.length).toBeGreaterThan(1);
  });

  it("shutdown while the folder stays read-only completes: the app closes, the sink's close rejects with a typed error, and the chain reopens once the folder is writable", async () => {
    const fs = await mountTinyFs();
    const keys = await generateAuditSigningKey();
    const sink = await FileAuditSink.open({ dir: fs.dir, signing: { privateKey: keys.privateJwk }, retry: false, rotate: { maxBytes: 4096 }, onNotice: () => undefined });
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    await sink.flush();
    await fs.readOnly();
    await serveUntilWriteFails(endpoint, sid, sink, 1);

    expect((await shutDown(sink)).message).toMatch(/EROFS.*not written/);

    await fs.writable();
    const again = await FileAuditSink.open({ dir: fs.dir, signing: { privateKey: keys.privateJwk }, onNotice: () => undefined });
    await again.close();
    const { files } = await trail(fs.dir);
    const verified = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(verified).toMatchObject({ ok: true, closed: true });
    expect(verified.recoveries).toHaveLength(1);
  });
});

describe("readiness: GET /readyz apart from liveness (GET /healthz)", () => {
  it("not ready while the bearer factory's resource is unbound, ready once bound, not ready while shutting down", async () => {
    const app = createHttpApp({ createServer: agentWith(undefined as unknown as AuditSink), bearer: () => ({ authenticate: async () => { throw new Error("unused"); } }) as never });
    const server = app.app.listen(0, "127.0.0.1");
    await new Promise((r) => server.once("listening", r));
    const base = new URL(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
    try {
      expect(await get(base, "/readyz")).toEqual({ status: 503, body: { status: "not_ready", problems: [{ component: "bearer", reason: "resource_not_bound", message: expect.any(String) }] } });
      expect(await get(base, "/healthz")).toMatchObject({ status: 200, body: { status: "ok", ready: false } });
      app.bindResource!(base);
      expect(await get(base, "/readyz")).toEqual({ status: 200, body: { status: "ready" } });
      await app.close();
      expect(await get(base, "/readyz")).toMatchObject({ status: 503, body: { problems: [{ component: "http", reason: "shutting_down" }] } });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it("a custom sink whose append failed: not ready with audit_sink_failed, until restarted", async () => {
    let broken = false;
    const sink: AuditSink = {
      append: () => {
        if (broken) throw new Error("disk full");
      },
      flush: async () => undefined,
      close: async () => undefined,
    };
    http = await listen(createHttpApp({ createServer: agentWith(sink), bearer: false, audit: sink }));
    const endpoint = new URL("/mcp", http.url);
    const sid = await openSession(endpoint);
    broken = true;
    await ask(endpoint, sid, 1);
    expect(await get(http.url, "/readyz")).toMatchObject({ status: 503, body: { problems: [{ component: "audit", reason: "audit_sink_failed" }] } });
  });
});
