/**
 * CPU time per thread of this process from /proc/self/task (Linux only): what the event loop spent apart from the
 * libuv pool, V8's helper threads and worker threads.
 */
import { readFileSync, readdirSync } from "node:fs";

/** USER_HZ (clock ticks per second) is 100 on Linux. */
const TICK_MS = 1000 / 100;

function taskCpuMs(tid: string): number {
  const s = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  // utime and stime, fields 14 and 15 of proc(5)
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

/** CPU ms per thread, keyed by thread id (the main thread's id is the pid); undefined where /proc is not there. */
export function threadCpuMs(): Map<string, number> | undefined {
  try {
    const out = new Map<string, number>();
    for (const t of readdirSync("/proc/self/task")) out.set(t, taskCpuMs(t));
    return out;
  } catch {
    return undefined;
  }
}

/** CPU ms of the main thread (the event loop) in 10 ms ticks; undefined where /proc is not there. */
export function mainThreadCpuMs(): number | undefined {
  try {
    return taskCpuMs(String(process.pid));
  } catch {
    return undefined;
  }
}
