/**
 * The pid lock (src/util/pid-lock.ts) when a lock this process released was left behind on a read-only folder, and the
 * same file name later holds another holder's lock in the same process (another copy of the module, loaded here
 * through a second URL) in the inode the left-behind one had: that lock is live, not the stale one to take over.
 * Real file system: a tmpfs with a real read-only bind mount (test/fixtures/tmpfs.ts), nothing mocked.
 */
import { afterEach, describe, expect, it } from "vitest";
import { link, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { mountTmpfs, type ScratchFileSystem } from "../../fixtures/tmpfs.js";

type PidLock = typeof import("../../../src/util/pid-lock.js");
/** A copy of the module of its own (its own held locks and left-behind record), as a second bundle or worker would have. */
const copy = (name: string) => import(/* @vite-ignore */ `../../../src/util/pid-lock.js?copy=${name}`) as Promise<PidLock>;

const mounts: ScratchFileSystem[] = [];

/** A tmpfs whose `audit.lock` copy `a` took and released while the folder was read-only: left behind, stale. */
async function leftBehind(a: PidLock): Promise<{ fs: ScratchFileSystem; lock: string }> {
  const fs = await mountTmpfs(256);
  mounts.push(fs);
  const lock = path.join(fs.dir, "audit.lock");
  expect(await a.takePidLock(lock)).toEqual({ taken: true });
  await fs.readOnly();
  await a.releasePidLock(lock);
  await fs.writable();
  return { fs, lock };
}
afterEach(() => {
  for (const m of mounts.splice(0)) m.release();
});

describe("takePidLock, a lock left behind on a read-only folder", () => {
  it("is not taken over once the file holds another module copy's live lock in the same inode", async () => {
    const a = await copy("a");
    const b = await copy("b");
    // copy A takes the lock and releases it while the folder is read-only: the file stays (left behind, stale)
    const { lock } = await leftBehind(a);
    const left = await stat(lock);

    // the operator removes the stale lock (its inode kept alive through a second name, to be reused below), then copy B
    // takes the lock
    await link(lock, `${lock}.inode`);
    await rm(lock);
    expect(await b.takePidLock(lock)).toEqual({ taken: true });
    const liveLock = await readFile(lock, "utf8");

    // the file system reuses the freed inode for B's lock: the file B holds is the left-behind inode with B's contents
    await writeFile(`${lock}.inode`, liveLock);
    await rename(`${lock}.inode`, lock);
    expect((await stat(lock)).ino).toBe(left.ino);

    // A takes it again: B's lock is live (this process holds it), so A is refused and B's lock stays
    expect(await a.takePidLock(lock)).toEqual({ taken: false, pid: process.pid });
    expect(await readFile(lock, "utf8")).toBe(liveLock);
    await b.releasePidLock(lock);
    // released by its holder, the file is gone, and A takes it
    expect(await a.takePidLock(lock)).toEqual({ taken: true });
    await a.releasePidLock(lock);
  });

  it("is taken over by the copy that left it, and a lock an earlier version wrote (the pid alone) is read as before", async () => {
    const a = await copy("c");
    const { lock } = await leftBehind(a);
    expect(await a.takePidLock(lock)).toEqual({ taken: true });
    await a.releasePidLock(lock);

    // the pid alone: a dead process's is stale; this process's, written now by another copy, is live
    await writeFile(lock, "2147483646");
    expect(await a.takePidLock(lock)).toEqual({ taken: true });
    await a.releasePidLock(lock);
    await writeFile(lock, String(process.pid));
    expect(await a.takePidLock(lock)).toEqual({ taken: false, pid: process.pid });
    await rm(lock);
  });
});
