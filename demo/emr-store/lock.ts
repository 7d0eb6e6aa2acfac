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
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(lockFile, String(process.pid), { flag: "wx", mode: 0o600 });
      return () => unlink(lockFile).catch(() => undefined);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const pid = Number((await readFile(lockFile, "utf8").catch(() => "")).trim());
    if (Number.isInteger(pid) && pid > 0 && running(pid)) {
      throw new Error(`${what} is in use by process ${pid} (${lockFile}); wait for it to finish or use another --store`);
    }
    await unlink(lockFile).catch(() => undefined);
  }
  throw new Error(`could not lock ${what} (${lockFile})`);
}

function running(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
