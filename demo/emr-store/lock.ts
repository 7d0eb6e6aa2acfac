/**
 * One process per embedded store: PGlite has no lock of its own, and two processes on one data directory corrupt it
 * (a second demo run on the same --store made the first one's writes disappear). `<dataDir>.lock` holds the pid.
 *
 * The same algorithm as the audit sink's lock (src/util/pid-lock.ts, where the reasons are written down; the demo
 * imports only the package entry, and a lock file is no part of HMCP's API): the pid goes into a temporary file that
 * is hard-linked to the lock name, so the lock never appears empty; a stale lock is removed only by the holder of
 * `<lock>.<stale pid>.takeover`, after re-reading it, so two processes that find the same stale lock cannot both win.
 * test/integration/audit-lock-race.test.ts races processes on both.
 */
import { randomUUID } from "node:crypto";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { statSync } from "node:fs";
import path from "node:path";

/**
 * Creates `lockFile` holding this pid, taking over a lock whose process is gone.
 * @returns a function that releases the lock
 * @throws Error naming the pid when a running process holds it
 */
export async function lockDataDir(lockFile: string, what: string): Promise<() => Promise<void>> {
  lockFile = path.resolve(lockFile);
  if (held.has(lockFile)) throw new Error(`${what} is already open in this process (${lockFile})`);
  const tmp = `${lockFile}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(tmp, String(process.pid), { flag: "wx", mode: 0o600 });
  let holder: number | undefined;
  try {
    holder = await acquire(lockFile, tmp, 0);
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  if (holder !== undefined) {
    if (holder === process.pid) throw new Error(`${what} is already open in this process (${lockFile})`);
    throw new Error(`${what} is in use by process ${holder} (${lockFile}); wait for it to finish or use another --store`);
  }
  return () => release(lockFile);
}

/** Lock files (the store's and takeover locks) this process holds. */
const held = new Set<string>();
const MAX_DEPTH = 3;
const TAKEOVER_WAIT_MS = 2_000;

/** Takes `file`; returns undefined when taken, else the pid of the running process holding it. */
async function acquire(file: string, tmp: string, depth: number): Promise<number | undefined> {
  const waitUntil = Date.now() + TAKEOVER_WAIT_MS;
  for (;;) {
    if (await linkNew(tmp, file)) return undefined;
    const pid = await readPid(file);
    if (pid === undefined) continue;
    if (running(pid, file)) {
      if (depth === 0) return pid;
      // another process is taking over the stale lock: done after a few file operations
      if (Date.now() > waitUntil) throw new Error(`could not take ${path.basename(file)}: process ${pid} has held it for over ${TAKEOVER_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      continue;
    }
    if (depth >= MAX_DEPTH) throw new Error(`could not take ${path.basename(file)}: stale takeover locks nested ${MAX_DEPTH} deep`);
    const guard = `${file}.${pid}.takeover`;
    await acquire(guard, tmp, depth + 1);
    try {
      if ((await readPid(file)) === pid && !running(pid, file)) {
        await unlink(file).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== "ENOENT") throw e;
        });
      }
      if (await linkNew(tmp, file)) return undefined;
    } finally {
      await release(guard);
    }
  }
}

async function release(file: string): Promise<void> {
  if (held.delete(file)) await unlink(file).catch(() => undefined);
}

async function linkNew(tmp: string, file: string): Promise<boolean> {
  try {
    await link(tmp, file);
    held.add(file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  }
}

/** The pid in a lock file (0 when it names none: stale), undefined when the file is gone. */
async function readPid(file: string): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  const pid = Number(text.trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
}

/** When this process started (ms since the epoch), less 1 s for clock granularity. */
const PROCESS_START_MS = Date.now() - process.uptime() * 1000 - 1000;

/** Whether `file` was last written before `ms` (ms since the epoch); true when it is gone. A hard link keeps the mtime. */
function writtenBefore(file: string, ms: number): boolean {
  try {
    return statSync(file).mtimeMs < ms;
  } catch {
    return true;
  }
}

/** Our own pid in a lock this process does not hold is stale (a killed earlier process that had the same pid, e.g. pid 1 in a container). */
function running(pid: number, file: string): boolean {
  if (pid === 0) return false;
  // our own pid: held by this process when this module took it, or when another instance of it (a worker thread, a
  // second copy of the module, the same folder reached through a symlink) wrote it after this process started; a
  // lock written before that is an earlier process's that had the same pid (pid 1 in a restarted container)
  if (pid === process.pid) return held.has(file) || !writtenBefore(file, PROCESS_START_MS);
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
