/**
 * A throwaway PostgreSQL server from the machine's Debian packages (`apt-get install -y postgresql`): `initdb` in a
 * temporary directory, `postgres` on a loopback port (trust authentication for user `hmcp`, `fsync=off`: its data is
 * deleted at close), run as the `postgres` user when this process is root (PostgreSQL refuses to run as root).
 * `npm run demo -- --instances 2` shares one between its agent processes when no DATABASE_URL is given; the tests'
 * real-server database (test/fixtures/postgres.ts) is this one.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";

/** How to install the server, for messages (Debian and Ubuntu). */
export const POSTGRES_INSTALL_HINT = "apt-get install -y postgresql";

export interface PostgresServer {
  /** `postgres://hmcp@127.0.0.1:<port>/postgres` */
  url: string;
  /** A pool on it (max 8 connections), ended by {@link close}. */
  db: pg.Pool;
  /**
   * Stops it, `immediate` as `pg_ctl stop -m immediate` (every backend killed at once, no checkpoint: a crash to
   * PostgreSQL, recovered from its WAL on the next start) or `fast` (clients disconnected, then a clean shutdown).
   * Resolves once the server process has exited. Connections are refused until {@link start}.
   */
  stop(mode: "immediate" | "fast"): Promise<void>;
  /** Starts it again on the same data directory and port; resolves once it answers. */
  start(): Promise<void>;
  /** Ends the pool, stops the server (fast shutdown, SIGKILL after 10 s) and deletes its data. */
  close(): Promise<void>;
}

/** The newest installed PostgreSQL's bin directory (Debian layout), if any. */
function postgresBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], "bin");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Runs `cmd` as the `postgres` user when this process is root (PostgreSQL refuses to run as root). */
function asPostgres(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args];
}

/** Whether a PostgreSQL server can be started here (its binaries, and the `postgres` user when running as root). */
export function realPostgresAvailable(): boolean {
  return postgresBin() !== undefined && !(process.getuid?.() === 0 && spawnSync("id", ["postgres"]).status !== 0);
}

/**
 * Starts a throwaway server (see the module comment); resolves once it answers (30 s at most).
 * @throws Error naming {@link POSTGRES_INSTALL_HINT} when the binaries are missing; Error when initdb or the server fails
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = postgresBin();
  if (bin === undefined || !realPostgresAvailable()) throw new Error(`no PostgreSQL server installed here (${POSTGRES_INSTALL_HINT})`);
  const dir = mkdtempSync(path.join(os.tmpdir(), "hmcp-pg-"));
  const data = path.join(dir, "data");
  if (process.getuid?.() === 0) {
    const ids = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gids = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(dir, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
  }
  const [initCmd, initArgs] = asPostgres(path.join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "hmcp", "--no-sync", "-E", "UTF8"]);
  const init = spawnSync(initCmd, initArgs, { encoding: "utf8" });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const url = `postgres://hmcp@127.0.0.1:${port}/postgres`;
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  // a server stopped under the pool makes its idle clients fail: without a listener the pool would throw that
  pool.on("error", () => undefined);
  let server: ChildProcess = await launch(bin, data, dir, port, pool).catch((e: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  return {
    db: pool,
    url,
    stop: async (mode) => {
      const exited = server.exitCode !== null ? Promise.resolve() : new Promise((r) => server.once("exit", r));
      const [cmd, args] = asPostgres(path.join(bin, "pg_ctl"), ["stop", "-D", data, "-m", mode, "-w", "-t", "30"]);
      const stopped = spawnSync(cmd, args, { encoding: "utf8" });
      if (stopped.status !== 0) throw new Error(`pg_ctl stop failed: ${stopped.stderr}`);
      await exited;
    },
    start: async () => {
      if (server.exitCode === null) throw new Error("start: the server is running");
      server = await launch(bin, data, dir, port, pool);
    },
    close: async () => {
      await pool.end();
      if (server.exitCode !== null) {
        rmSync(dir, { recursive: true, force: true });
        return;
      }
      const exited = new Promise((r) => server.once("exit", r));
      // a fast shutdown through pg_ctl: as root the child is `runuser`, which does not pass a signal on to the
      // server (signalled, it exits and leaves the server running, orphaned)
      const [cmd, args] = asPostgres(path.join(bin, "pg_ctl"), ["stop", "-D", data, "-m", "fast", "-w", "-t", "10"]);
      const stopped = spawnSync(cmd, args, { encoding: "utf8" });
      if (stopped.status !== 0) server.kill("SIGINT");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (server.exitCode === null) server.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Starts the server on `data` and `port` and waits (30 s at most) until `pool` gets an answer. */
async function launch(bin: string, data: string, dir: string, port: number, pool: pg.Pool): Promise<ChildProcess> {
  const [cmd, args] = asPostgres(path.join(bin, "postgres"), ["-D", data, "-p", String(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]);
  const server: ChildProcess = spawn(cmd, args, { stdio: "ignore" });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await pool.query("SELECT 1");
      return server;
    } catch (e) {
      if (Date.now() > deadline || server.exitCode !== null) {
        server.kill("SIGKILL");
        throw new Error(`PostgreSQL did not start: ${(e as Error).message}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
