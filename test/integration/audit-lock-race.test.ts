// One writer per audit chain, across processes: several processes open the same chain at the same instant, round
// after round, each time over a lock a dead process left behind. The lock must go to one of them at a time: a stale
// lock read, removed and re-created in separate steps let two of them each remove the other's new lock and both write,
// forking the chain. The demo's EMR store takes its lock the same way.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { verifyAuditFiles } from "hmcp";
import { tempLogDir } from "../unit/audit/helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const racer = path.resolve(here, "../unit/audit/fixtures/lock-racer.ts");
const PROCESSES = 4;
const ROUNDS = 30;
const PERIOD_MS = 30;
/** No such process (above Linux's pid_max and macOS's): the lock of a writer that crashed. */
const DEAD_PID = "2147483646";

function start(args: string[]): { child: ChildProcess; ready: Promise<void>; exited: Promise<string> } {
  const child = spawn(process.execPath, ["--import", "tsx", racer, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (err += d));
  const ready = new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()));
  const exited = new Promise<string>((resolve) => child.on("exit", (code) => resolve(code === 0 ? "" : `exit ${code}: ${err}`)));
  return { child, ready, exited };
}

/** Runs the race; returns the rounds in which two processes held the lock at once, and the rounds nobody took. */
async function race(what: "sink" | "emr", base: string): Promise<{ overlapping: number[]; untaken: number[]; log: string[] }> {
  for (let r = 0; r < ROUNDS; r++) {
    await mkdir(path.join(base, String(r)), { mode: 0o700 });
    await writeFile(what === "sink" ? path.join(base, String(r), "audit.lock") : path.join(base, `${r}.lock`), DEAD_PID);
  }
  const kids = Array.from({ length: PROCESSES }, () => start([what, base, String(ROUNDS), String(PERIOD_MS)]));
  await Promise.all(kids.map((k) => k.ready));
  const t0 = performance.timeOrigin + performance.now() + 100;
  for (const k of kids) k.child.stdin!.end(`${t0}\n`);
  expect((await Promise.all(kids.map((k) => k.exited))).filter((e) => e !== "")).toEqual([]);
  const log = (await readFile(path.join(base, "log"), "utf8")).trim().split("\n");
  const holders = new Map<number, number>();
  const overlapping = new Set<number>();
  const taken = new Set<number>();
  for (const l of log) {
    const [ev, r] = l.split(" ") as [string, string];
    const n = Number(r);
    if (ev === "take") {
      taken.add(n);
      if ((holders.get(n) ?? 0) > 0) overlapping.add(n);
      holders.set(n, (holders.get(n) ?? 0) + 1);
    } else if (ev === "release") holders.set(n, holders.get(n)! - 1);
  }
  return { overlapping: [...overlapping], untaken: Array.from({ length: ROUNDS }, (_, r) => r).filter((r) => !taken.has(r)), log };
}

describe("one writer per lock across processes racing to take over a stale lock", () => {
  it("FileAuditSink: one process holds the chain at a time; every chain verifies", async () => {
    const base = await tempLogDir("audit-lock-race");
    const { overlapping, untaken, log } = await race("sink", base);
    expect(overlapping).toEqual([]);
    expect(log.filter((l) => l.startsWith("error"))).toEqual([]);
    expect(untaken).toEqual([]);
    for (let r = 0; r < ROUNDS; r++) {
      const dir = path.join(base, String(r));
      const files = (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(dir, f));
      expect(await verifyAuditFiles(files)).toMatchObject({ ok: true });
      // no lock, takeover lock or temporary file is left behind
      expect((await readdir(dir)).filter((f) => !f.endsWith(".jsonl"))).toEqual([]);
    }
  });

  it("the demo's EMR store lock: one process holds it at a time", async () => {
    const base = await tempLogDir("emr-lock-race");
    const { overlapping, untaken, log } = await race("emr", base);
    expect(overlapping).toEqual([]);
    expect(log.filter((l) => l.startsWith("error"))).toEqual([]);
    expect(untaken).toEqual([]);
    expect((await readdir(base)).filter((f) => f.includes(".lock"))).toEqual([]);
  });
});
