/**
 * One process per embedded store: PGlite has no lock of its own, and two processes on one data directory corrupt it
 * (a second demo run on the same --store made the first one's writes disappear). `<dataDir>.lock` holds the pid.
 */
import { readFile, unlink, writeFile } from "node:fs/promises";

/**
 * Creates `lockFile` holding this pid, taking over a lock whose process is gone.
 * @returns a function that releases the lock
 * @throws Error naming the pid when a running process holds it
 */
export async function lockDataDir(lockFile: string, what: string): Promise<() => Promise<void>> {
  if (held.has(lockFile)) throw new Error(`${what} is already open in this process (${lockFile})`);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(lockFile, String(process.pid), { flag: "wx", mode: 0o600 });
      held.add(lockFile);
      return async () => {
        held.delete(lockFile);
        await unlink(lockFile).catch(() => undefined);
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const pid = Number((await readFile(lockFile, "utf8").catch(() => "")).trim());
    // our own pid in a lock this process does not hold is stale (a killed earlier process that had the same pid,
    // e.g. pid 1 in a container)
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && running(pid)) {
      throw new Error(`${what} is in use by process ${pid} (${lockFile}); wait for it to finish or use another --store`);
    }
    await unlink(lockFile).catch(() => undefined);
  }
  throw new Error(`could not lock ${what} (${lockFile})`);
}

/** Lock files this process holds. */
const held = new Set<string>();

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
