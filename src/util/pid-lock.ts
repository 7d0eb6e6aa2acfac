/**
 * A lock file holding its owner's pid, for "one process per resource" (the audit chain's writer). A lock whose process
 * is gone (a crash, a kill) is taken over.
 *
 * Why not `writeFile(lock, pid, { flag: "wx" })` and `unlink` a stale one: the exclusive create makes the file before
 * the pid is in it, so a reader could see it empty and take it for stale; and "read, check, unlink, create" in
 * separate steps let two processes that both saw the same stale lock each unlink the other's new one, and both win.
 * Here the pid goes into a private temporary file first, which is then hard-linked to the lock name (`link` fails if
 * the name exists), so the lock never appears without its pid; and a stale lock is removed only by the holder of a
 * second lock, `<lock>.<stale pid>.takeover`, taken the same way, after re-reading the lock under it. A takeover lock
 * left by a process that died while holding it is stale in turn and taken over the same way (one level deeper).
 *
 * The lock holds `<pid>:<nonce>`, the nonce random per take, which tells this take's lock from a later one in the same
 * file (a lock of an earlier version holds the pid alone, and is read the same way).
 *
 * Needs a file system with hard links (POSIX file systems, NTFS). Temporary files are named
 * `<lock>.<pid>.<random>.tmp` and removed before returning; a crash can leave one behind, which nothing reads.
 */
import { randomUUID } from "node:crypto";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";

/** Outcome of {@link takePidLock}: taken, or held by the running process `pid`. */
export type PidLockResult = { taken: true } | { taken: false; pid: number };

/** Takeover locks nest one level per process that died holding one; deeper than this is refused. */
const MAX_DEPTH = 3;
/** How long to wait for another process's takeover in progress (ms): it holds its takeover lock for a few file operations. */
const TAKEOVER_WAIT_MS = 2_000;

/** Lock files (absolute paths; locks and takeover locks) this process holds. */
const held = new Set<string>();

/**
 * Creates `file` holding this process's pid, taking over a lock whose process is no longer running. A lock naming
 * this process's own pid is held when this process took it (another open of the same resource), and stale otherwise
 * (a restarted container's pid 1 finding the lock its previous run left). Release it with {@link releasePidLock}.
 * @returns `{ taken: true }`, or `{ taken: false, pid }` when a running process (this one included) holds it
 * @throws Error when the file system refuses (no hard links, permissions), or when takeover locks of dead processes
 *   are nested too deep or another process's takeover does not finish within 2 s
 */
export async function takePidLock(file: string): Promise<PidLockResult> {
  file = path.resolve(file);
  const tmp = `${file}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(tmp, `${process.pid}:${randomUUID()}`, { flag: "wx", mode: 0o600 });
  try {
    return await acquire(file, tmp, 0);
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

/**
 * Lock files this module released but could not remove (their folder became read-only, `EROFS` / `EACCES`): stale, so
 * the next {@link takePidLock} of this module takes them over instead of taking them for another open. Known by device,
 * inode and contents (the take's nonce): an inode alone may be reused by another holder's lock once the file is
 * removed (another copy of this module in the process, whose lock names the same pid).
 */
const leftBehind = new Map<string, { dev: number; ino: number; text: string }>();

/**
 * Removes `file` if this process holds it. When the file system refuses the removal (a read-only folder) the lock is
 * released all the same: the file stays, naming this process, and is taken over by the next take, in this process or
 * (once this one has ended) another.
 */
export async function releasePidLock(file: string): Promise<void> {
  file = path.resolve(file);
  if (!held.delete(file)) return;
  await unlink(file).catch(() => {
    try {
      const { dev, ino } = statSync(file);
      leftBehind.set(file, { dev, ino, text: readFileSync(file, "utf8") });
    } catch {
      // gone after all
    }
  });
}

async function acquire(file: string, tmp: string, depth: number): Promise<PidLockResult> {
  const waitUntil = Date.now() + TAKEOVER_WAIT_MS;
  for (;;) {
    if (await linkNew(tmp, file)) return { taken: true };
    const lock = await readLock(file);
    if (lock === undefined) continue; // removed since the link failed: try again
    const { pid } = lock;
    if (running(lock, file)) {
      // the lock itself: its holder keeps it. A takeover lock: another process (or another open in this one) is
      // taking over right now, and is done after a few file operations.
      if (depth === 0) return { taken: false, pid };
      if (Date.now() > waitUntil) throw new Error(`could not take ${path.basename(file)}: process ${pid} has held it for over ${TAKEOVER_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
      continue;
    }
    if (depth >= MAX_DEPTH) throw new Error(`could not take ${path.basename(file)}: stale takeover locks nested ${MAX_DEPTH} deep`);
    // Stale. Only the holder of `<file>.<pid>.takeover` may remove it, and only while it still names the dead `pid`:
    // whoever removes a lock naming `pid` holds that takeover lock, so two processes never remove each other's lock.
    const guard = `${file}.${pid}.takeover`;
    await acquire(guard, tmp, depth + 1);
    try {
      const again = await readLock(file);
      if (again?.text === lock.text && !running(again, file)) {
        await unlink(file).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== "ENOENT") throw e;
        });
      }
      if (await linkNew(tmp, file)) return { taken: true };
    } finally {
      await releasePidLock(guard);
    }
  }
}

/** Links `tmp` to `file` (then held by this process); false when `file` exists. */
async function linkNew(tmp: string, file: string): Promise<boolean> {
  try {
    await link(tmp, file);
    held.add(file);
    leftBehind.delete(file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  }
}

/** A lock file's contents and the pid it names (0 when it names none: an empty or garbled file, stale). */
interface LockContents {
  pid: number;
  text: string;
}

/** Reads a lock file (`<pid>:<nonce>`, or `<pid>` as earlier versions wrote it); undefined when it is gone. */
async function readLock(file: string): Promise<LockContents | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  const pid = Number(text.trim().split(":", 1)[0]);
  return { pid: Number.isSafeInteger(pid) && pid > 0 ? pid : 0, text };
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

/**
 * Whether `lock` (read from `file`) is the one this module released and could not remove: the same device, inode and
 * contents (its take's nonce), so not another holder's lock in a reused inode.
 */
function releasedHere(file: string, lock: LockContents): boolean {
  const left = leftBehind.get(file);
  if (left === undefined || left.text !== lock.text) return false;
  try {
    const { dev, ino } = statSync(file);
    return dev === left.dev && ino === left.ino;
  } catch {
    return false;
  }
}

/** Whether the lock `file` (its contents `lock`) belongs to a running process. */
function running(lock: LockContents, file: string): boolean {
  const { pid } = lock;
  if (pid === 0) return false;
  // our own pid: held by this process when this module took it, or when another instance of it (a worker thread, a
  // second copy of the module, the same folder reached through a symlink) wrote it after this process started; a
  // lock written before that is an earlier process's that had the same pid (pid 1 in a restarted container)
  if (pid === process.pid) return held.has(file) || (!releasedHere(file, lock) && !writtenBefore(file, PROCESS_START_MS));
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
