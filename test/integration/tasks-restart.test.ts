/**
 * MCP tasks outlive the agent process: the task store is PostgreSQL (a real server from the machine's Debian packages
 * where installed, which `.ci/run` does; else PGlite on a directory, one process at a time). An agent killed with
 * `kill -9` mid-task loses no acknowledged task and repeats no EMR write: a new process on the same store finds the task
 * whose runner died, fails it (`task_runner_lost`), or, for a tool that declares itself idempotent, runs it again, its
 * write replayed from the task's journal rather than done twice; a completed task's result is still there.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { PGlite } from "@electric-sql/pglite";
import { HMCPClient } from "hmcp";
import { makeKeys, mint } from "../fixtures/bearer.js";
import { startTestDatabase, testDatabaseKinds } from "../fixtures/postgres.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const AGENT = fileURLToPath(new URL("../fixtures/task-agent.ts", import.meta.url));
const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function startAgent(db: string, jwk: object, leaseMs: number): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", AGENT], {
    cwd: ROOT,
    env: { ...process.env, HMCP_TASK_DB: db, HMCP_TEST_JWK: JSON.stringify(jwk), HMCP_TASK_LEASE_MS: String(leaseMs) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  cleanup.push(() => void child.kill("SIGKILL"));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the agent did not start within 60 s")), 60_000);
    createInterface({ input: child.stdout! }).once("line", (line) => {
      clearTimeout(timer);
      resolve({ child, url: (JSON.parse(line) as { url: string }).url });
    });
    child.once("exit", (code) => reject(new Error(`the agent exited (${code})`)));
  });
}

const CLIENT = fileURLToPath(new URL("../fixtures/task-client.ts", import.meta.url));

/** Runs test/fixtures/task-client.ts: a separate process waits for the task and prints its result (or error). */
function clientProcess(url: string, token: string, taskId: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CLIENT], { cwd: ROOT, env: { ...process.env, HMCP_URL: url, HMCP_TOKEN: token, HMCP_TASK_ID: taskId }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => (out += d));
    child.once("exit", () => {
      try {
        resolve(JSON.parse(out.trim().split("\n").at(-1)!));
      } catch {
        reject(new Error(`the client process printed no result: ${out}`));
      }
    });
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

async function connect(url: string, token: string): Promise<HMCPClient> {
  const c = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, { protocolEra: "modern", guardrails: false });
  await c.connect({ type: "http", url, headers: { authorization: `Bearer ${token}` } });
  cleanup.push(() => c.close());
  return c;
}

/** Polls until the task says its write is done. */
async function untilWritten(c: HMCPClient, taskId: string): Promise<void> {
  for (let i = 0; i < 1500; i++) {
    const t = await c.getTask(taskId);
    if (t.statusMessage === "written") return;
    if (t.status !== "working") throw new Error(`task ended early: ${t.status}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the task did not write within 30 s");
}

describe("MCP tasks across a kill -9 of the agent", () => {
  it.each(testDatabaseKinds())("%s: a task whose agent died is failed or, idempotent, run again without a second write; a finished task survives", { timeout: 240_000 }, async (kind) => {
    const keys = await makeKeys();
    const token = await mint(keys, { scope: "hmcp:access" });
    let target: string;
    let count: () => Promise<Array<{ task: string }>>;
    if (kind === "postgresql") {
      const database = await startTestDatabase(kind);
      cleanup.push(() => database.close());
      target = database.url!;
      count = async () => (await database.db.query("SELECT task FROM emr_writes ORDER BY id")).rows as Array<{ task: string }>;
    } else {
      // PGlite serves one process at a time: its directory is reopened by the next agent, and read here after the last
      const dir = mkdtempSync(path.join(os.tmpdir(), "hmcp-tasks-"));
      cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
      target = dir;
      count = async () => {
        const db = await PGlite.create(dir);
        try {
          return (await db.query("SELECT task FROM emr_writes ORDER BY id")).rows as Array<{ task: string }>;
        } finally {
          await db.close();
        }
      };
    }
    const leaseMs = 500;
    const a = await startAgent(target, keys.jwk, leaseMs);
    const ca = await connect(a.url, token);
    const done = await ca.startToolCall({ name: "write_then_wait", arguments: { ms: 1, label: "finished" } });
    const doneId = "task" in done ? done.task.taskId : "";
    expect((await ca.waitForTask(doneId, { pollIntervalMs: 20 })).content).toEqual([{ type: "text", text: "row 1 (finished)" }]);
    const plain = await ca.startToolCall({ name: "write_then_wait", arguments: { ms: 600_000, label: "plain" } });
    const idem = await ca.startToolCall({ name: "write_then_wait_idempotent", arguments: { ms: 600_000, label: "idempotent" } });
    const plainId = "task" in plain ? plain.task.taskId : "";
    const idemId = "task" in idem ? idem.task.taskId : "";
    await untilWritten(ca, plainId);
    await untilWritten(ca, idemId);
    await killed(a.child);

    // a new process on the same store; the idempotent task's rerun waits 600 s again, so it is checked while working
    const b = await startAgent(target, keys.jwk, leaseMs);
    const cb = await connect(b.url, token);
    expect((await cb.waitForTask(doneId)).content).toEqual([{ type: "text", text: "row 1 (finished)" }]);
    // a new client process, holding only the task's id, fetches the result from the restarted agent
    const fetched = await clientProcess(b.url, token, doneId);
    expect(fetched).toEqual({ content: [{ type: "text", text: "row 1 (finished)" }] });
    await new Promise((r) => setTimeout(r, leaseMs + 100));
    const lost = await cb.getTask(plainId);
    expect(lost).toMatchObject({ status: "failed", error: { code: -32603, data: { reason: "task_runner_lost" } } });
    const again = await cb.getTask(idemId);
    expect(again).toMatchObject({ status: "working", statusMessage: "Run again: the instance running it stopped" });
    // the rerun replays its write from the journal and reports it, without a second row
    await untilWritten(cb, idemId);
    await cb.cancelTask(idemId);
    expect((await cb.getTask(idemId)).status).toBe("cancelled");
    await new Promise<void>((resolve) => {
      b.child.once("exit", () => resolve());
      b.child.kill("SIGTERM");
    });
    expect((await count()).map((r) => r.task)).toEqual(["finished", "plain", "idempotent"]);
  });
});
