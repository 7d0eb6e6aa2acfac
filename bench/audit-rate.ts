/**
 * Audit cost per record at a steady arrival rate, as a server produces them, rather than at full speed.
 *
 * Usage: `npx tsx bench/audit-rate.ts [--rate 1500] [--seconds 6] [--modes none,construct,group,group-100ms,fsync-off]`
 *
 * bench/audit.ts appends records as fast as it can: batches fill to 256 records and the cost of each write and fsync
 * is shared by all of them. A server at 1,500 requests/s fills a 5 ms group-commit window with ~7 records, so every
 * batch's fixed costs (timer, promise chain, write, fdatasync) fall on a few records. This script appends request
 * records (as the pipeline writes them) at `--rate` per second for `--seconds` (after 1.5 s of warm-up) and reports the
 * process CPU per record, split into the main thread and the other threads (libuv's pool runs write and fdatasync;
 * Linux only, from /proc/self/task), for each mode:
 * - `none`: the pacing loop alone (subtract it from the others);
 * - `construct`: building the record (`newAuditRecord`), not appending it;
 * - `group`: `FileAuditSink` with its default durability (group commit, 5 ms / 256 records);
 * - `group-100ms`: group commit with a 100 ms window (for comparison: NOT the default, it weakens durability);
 * - `fsync-off`: the default sink with fdatasync replaced by a no-op (what the sync itself costs; never do this).
 * Each mode runs in its own process, in the order given. Figures print as a Markdown table; nothing is written.
 */
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { REPO_ROOT, requestAuditDraft } from "./lib/fixtures.js";
import { threadCpuMs } from "./lib/threads.js";

const MODES = ["none", "construct", "group", "group-100ms", "fsync-off"] as const;
type Mode = (typeof MODES)[number];

interface ModeResult {
  mode: Mode;
  records: number;
  /** process.cpuUsage() user + system per record, µs */
  totalUs: number;
  /** main thread user + system per record, µs (undefined off Linux) */
  mainUs?: number;
  /** every other thread (libuv pool, V8 helpers) per record, µs */
  otherUs?: number;
}

async function child(mode: Mode, rate: number, seconds: number): Promise<ModeResult> {
  const { FileAuditSink, generateAuditSigningKey, newAuditRecord } = await (await import("./lib/hmcp.js")).loadHmcp();
  const dir = mkdtempSync(path.join(os.tmpdir(), "hmcp-audit-rate-"));
  const keys = await generateAuditSigningKey();
  const sink =
    mode === "none" || mode === "construct"
      ? undefined
      : await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, ...(mode === "group-100ms" && { durability: { mode: "group", intervalMs: 100 } }) });
  if (mode === "fsync-off" && sink) (sink as unknown as { file: { handle: { datasync: () => Promise<void> } } }).file.handle.datasync = async () => undefined;
  const record = (i: number) => newAuditRecord(requestAuditDraft(i));
  const t0 = performance.now();
  let i = 0;
  let start: { i: number; cpu: NodeJS.CpuUsage; threads: Map<string, number> | undefined } | undefined;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now() - t0;
      const due = Math.floor((now / 1000) * rate);
      for (; i < due; i++) {
        if (mode === "none") continue;
        const r = record(i);
        sink?.append(r);
      }
      if (start === undefined && now > 1500) start = { i, cpu: process.cpuUsage(), threads: threadCpuMs() };
      if (now < 1500 + seconds * 1000) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  await sink?.flush();
  const cpu = process.cpuUsage(start!.cpu);
  const threads = threadCpuMs();
  const n = i - start!.i;
  const result: ModeResult = { mode, records: n, totalUs: (cpu.user + cpu.system) / n };
  if (threads && start!.threads) {
    const main = String(process.pid);
    let mainMs = 0;
    let otherMs = 0;
    for (const [t, ms] of threads) {
      const d = ms - (start!.threads.get(t) ?? 0);
      if (t === main) mainMs += d;
      else otherMs += d;
    }
    result.mainUs = (mainMs * 1000) / n;
    result.otherUs = (otherMs * 1000) / n;
  }
  await sink?.close();
  rmSync(dir, { recursive: true, force: true });
  return result;
}

function runChild(mode: Mode, rate: number, seconds: number): Promise<ModeResult> {
  return new Promise((resolve, reject) => {
    const c = fork(path.join(REPO_ROOT, "bench/audit-rate.ts"), ["--child", mode, String(rate), String(seconds)], {
      cwd: REPO_ROOT,
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    c.once("message", (m) => resolve(m as ModeResult));
    c.once("exit", (code) => (code === 0 ? undefined : reject(new Error(`audit-rate child (${mode}) exited ${code}`))));
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === "--child") {
    const r = await child(argv[1] as Mode, Number(argv[2]), Number(argv[3]));
    process.send!(r, () => process.exit(0));
    return;
  }
  const opt = (name: string, def: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1]! : def;
  };
  const rate = Number(opt("rate", "1500"));
  const seconds = Number(opt("seconds", "6"));
  const modes = opt("modes", MODES.join(",")).split(",") as Mode[];
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`unknown mode ${m} (${MODES.join(", ")})`);
  (await import("./lib/hmcp.js")).ensureBuilt();
  const results: ModeResult[] = [];
  for (const m of modes) results.push(await runChild(m, rate, seconds));
  const fmt = (v: number | undefined) => (v === undefined ? "-" : v.toFixed(1));
  console.log(`audit CPU per record at ${rate} records/s for ${seconds} s (node ${process.version}, ${os.cpus().length} cores)`);
  console.log("| mode | records | process µs/record | main thread µs/record | other threads µs/record |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const r of results) console.log(`| ${r.mode} | ${r.records} | ${fmt(r.totalUs)} | ${fmt(r.mainUs)} | ${fmt(r.otherUs)} |`);
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(REPO_ROOT, "bench/audit-rate.ts");
if (isMain) {
  main().catch((error: unknown) => {
    console.error((error as Error).stack ?? String(error));
    process.exit(1);
  });
}
