/**
 * Child processes of the benchmark runner: servers (bench/server.ts) and load generators (bench/load.ts), each its own
 * Node process with tsx loaded, talking to the runner over IPC.
 */
import { fork, spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import type { LoadResult, LoadSpec } from "../load.js";
import type { ServerSpec, ServerStats } from "../server.js";
import { REPO_ROOT } from "./fixtures.js";

export const BENCH_DIR = path.join(REPO_ROOT, "bench");

type Msg = { type: string; url?: string; stats?: ServerStats; result?: LoadResult; error?: string };

function nextMessage(child: ChildProcess, type: string, timeoutMs: number): Promise<Msg> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`child ${child.pid}: no '${type}' message within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMsg = (m: Msg) => {
      if (m?.type !== type) return;
      cleanup();
      resolve(m);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`child ${child.pid} exited (${code}) before sending '${type}'`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off("message", onMsg);
      child.off("exit", onExit);
    };
    child.on("message", onMsg);
    child.on("exit", onExit);
  });
}

/** A benchmark server child. */
export class ServerProc {
  private constructor(
    readonly spec: ServerSpec,
    readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(spec: ServerSpec): Promise<ServerProc> {
    const execArgv = ["--import", "tsx", "--expose-gc"];
    const child = fork(path.join(BENCH_DIR, "server.ts"), [spec.config], {
      cwd: REPO_ROOT,
      execArgv,
      env: { ...process.env, BENCH_SERVER: JSON.stringify(spec) },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const ready = await nextMessage(child, "ready", 60_000);
    return new ServerProc(spec, child, ready.url!);
  }

  async stats(): Promise<ServerStats> {
    const p = nextMessage(this.child, "stats", 30_000);
    this.child.send({ type: "stats" });
    return (await p).stats!;
  }

  /** Stats after forced garbage collection (three full GCs). */
  async gcStats(): Promise<ServerStats> {
    const p = nextMessage(this.child, "stats", 30_000);
    this.child.send({ type: "gc" });
    return (await p).stats!;
  }

  /** Starts the inspector's CPU profiler in the server. */
  async profileStart(): Promise<void> {
    const p = nextMessage(this.child, "prof", 30_000);
    this.child.send({ type: "prof-start" });
    await p;
  }

  /** Stops the profiler and writes the `.cpuprofile` JSON to `file`. */
  async profileStop(file: string): Promise<void> {
    const p = nextMessage(this.child, "prof", 60_000);
    this.child.send({ type: "prof-stop", file });
    await p;
  }

  async stop(): Promise<ServerStats | undefined> {
    if (this.child.exitCode !== null) return undefined;
    const p = nextMessage(this.child, "stopped", 30_000);
    const exited = new Promise<void>((r) => this.child.once("exit", () => r()));
    this.child.send({ type: "stop" });
    try {
      const m = await p;
      await exited;
      return m.stats;
    } catch {
      this.child.kill("SIGKILL");
      return undefined;
    }
  }
}

/** The load generator child (bench/load.ts), started once and reused for every run. */
export class LoadProc {
  private constructor(readonly child: ChildProcess) {}

  static async start(): Promise<LoadProc> {
    const child = fork(path.join(BENCH_DIR, "load.ts"), [], {
      cwd: REPO_ROOT,
      execArgv: ["--import", "tsx"],
      env: { ...process.env, BENCH_LOAD_WORKER: "1" },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    await nextMessage(child, "ready", 60_000);
    return new LoadProc(child);
  }

  async run(spec: LoadSpec): Promise<LoadResult> {
    const p = nextMessage(this.child, "result", (spec.durationSec + 60) * 1000);
    this.child.send({ type: "run", spec });
    const m = await p;
    if (m.error !== undefined || !m.result) throw new Error(`load: ${m.error ?? "no result"}`);
    return m.result;
  }

  stop(): void {
    if (this.child.connected) this.child.disconnect();
  }
}

let shared: LoadProc | undefined;

/** Runs one autocannon load in the (shared, lazily started) load generator process. */
export async function runLoadProcess(spec: LoadSpec): Promise<LoadResult> {
  shared ??= await LoadProc.start();
  return shared.run(spec);
}

/** Ends the shared load generator process, if started. */
export function stopLoadProcess(): void {
  shared?.stop();
  shared = undefined;
}

/** Runs a TypeScript script with tsx in a child process; resolves with its exit code and output. */
export function runScript(
  script: string,
  args: string[],
  options: { timeoutMs: number; env?: Record<string, string> },
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - t0 });
    });
  });
}
