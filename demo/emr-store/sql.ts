/**
 * The two SQL back ends of the demo EMR store, behind one small interface so the store runs the same SQL on both:
 * embedded Postgres (@electric-sql/pglite, a data directory, no set-up) and PostgreSQL (`pg`, via DATABASE_URL).
 */
import { chmod, mkdir } from "node:fs/promises";
import path from "node:path";
import { lockDataDir } from "./lock.js";

/** Runs one parameterised statement ($1, $2 … placeholders) and returns its rows. */
export type Query = <T = Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<T[]>;

export interface SqlClient {
  query: Query;
  /** Runs `fn` in one transaction: committed (and, for PGlite, synced to disk) when it resolves, rolled back when it throws. */
  transaction<T>(fn: (query: Query) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Where the data lives, for reports: `{ dataDir }` or `{ databaseUrl }` (password removed). */
  readonly location: { dataDir: string } | { databaseUrl: string };
}

/** Where the EMR store lives. Exactly one of the two. */
export type StoreLocation = { dataDir: string } | { databaseUrl: string };

/**
 * Opens embedded Postgres in `dataDir` (created if missing). PGlite keeps its default strict durability
 * (`relaxedDurability: false`): a statement's promise resolves after its changes are written to the data
 * directory, so an acknowledged write survives a crash of this process.
 * Only one process may have a data directory open at a time: `<dataDir>.lock` holds its pid (a second opener gets an
 * error naming that process). The directory is made private (0700).
 */
async function openPglite(dataDir: string): Promise<SqlClient> {
  const { PGlite } = await import("@electric-sql/pglite");
  // readable by its owner only: the store holds patients' records (PGlite writes its files 0666 less the umask)
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700);
  const unlock = await lockDataDir(`${path.resolve(dataDir)}.lock`, `the EMR store ${dataDir}`);
  let db;
  try {
    db = await PGlite.create({ dataDir, relaxedDurability: false });
  } catch (e) {
    await unlock();
    throw e;
  }
  const query: Query = async <T>(sql: string, params: unknown[] = []) => (await db.query<T>(sql, params)).rows;
  return {
    query,
    transaction: (fn) => db.transaction((tx) => fn(async <T>(sql: string, params: unknown[] = []) => (await tx.query<T>(sql, params)).rows)),
    close: async () => {
      try {
        await db.close();
      } finally {
        await unlock();
      }
    },
    location: { dataDir },
  };
}

/**
 * Opens a `pg` pool on `databaseUrl` (max 4 connections). An idle connection that breaks (the server restarted, a
 * proxy dropped it) makes the pool emit 'error', which ends the process when nothing listens: the pool drops that
 * connection and opens a new one on next use, so the error is only logged, by its SQLSTATE or errno code (never the
 * server's message, which may quote a statement's values). A transaction whose connection broke fails, and the
 * connection is discarded rather than returned to the pool.
 */
async function openPg(databaseUrl: string): Promise<SqlClient> {
  const pg = (await import("pg")).default;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  pool.on("error", (e: Error & { code?: string }) => {
    process.stderr.write(`emr-store: an idle PostgreSQL connection failed (${e.code ?? "no code"}); the pool reconnects on next use\n`);
  });
  const query: Query = async <T>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[];
  const safeUrl = (() => {
    try {
      const u = new URL(databaseUrl);
      u.password = "";
      return u.toString();
    } catch {
      return "postgres://(unparsable)";
    }
  })();
  return {
    query,
    async transaction(fn) {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query("BEGIN");
        const out = await fn(async <T>(sql: string, params: unknown[] = []) => (await client.query(sql, params)).rows as T[]);
        await client.query("COMMIT");
        return out;
      } catch (e) {
        // a ROLLBACK that fails too: the connection itself is gone, not to be reused
        await client.query("ROLLBACK").catch((r: Error) => (broken = r));
        throw e;
      } finally {
        client.release(broken);
      }
    },
    close: () => pool.end(),
    location: { databaseUrl: safeUrl },
  };
}

/**
 * Checks `DATABASE_URL` before the demo starts: a postgres:// or postgresql:// URL with a host, and a server that
 * answers `select 1` within 5 s. @throws Error naming DATABASE_URL, the host and port (never the password) and the cause
 */
export async function checkDatabaseUrl(databaseUrl: string): Promise<void> {
  let u: URL;
  try {
    u = new URL(databaseUrl);
  } catch {
    throw new Error("DATABASE_URL is not a URL: expected postgres://user:password@host:5432/database");
  }
  if (u.protocol !== "postgres:" && u.protocol !== "postgresql:") throw new Error(`DATABASE_URL must start with postgres:// or postgresql://, not ${u.protocol}//`);
  if (!u.hostname) throw new Error("DATABASE_URL names no host: expected postgres://user:password@host:5432/database");
  const pg = (await import("pg")).default;
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5000 });
  // a connection broken while this check holds it fails the check's query; its 'error' event must not end the process
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("select 1");
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new Error(`DATABASE_URL: cannot use PostgreSQL at ${u.hostname}:${u.port || 5432}${u.pathname}: ${code ? `${code} ` : ""}${(e as Error).message.replace(u.password, "***")}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The PGlite of `npm run demo -- --instances 2`'s process, through its query bridge (demo/runtime/pglite-bridge.ts):
 * a `databaseUrl` of the form `hmcp-pglite-bridge://…`. Reported without its token.
 */
async function openBridge(databaseUrl: string): Promise<SqlClient> {
  const { connectBridge } = await import("../runtime/pglite-bridge.js");
  const bridge = connectBridge(databaseUrl);
  const u = new URL(databaseUrl);
  u.password = "";
  return {
    query: async <T>(sql: string, params: unknown[] = []) => (await bridge.query<T>(sql, params)).rows,
    transaction: (fn) => bridge.transaction((q) => fn(async <T>(sql: string, params: unknown[] = []) => (await q<T>(sql, params)).rows)),
    close: async () => undefined,
    location: { databaseUrl: u.toString() },
  };
}

/** Opens the SQL back end for `location`. */
export function openSql(location: StoreLocation): Promise<SqlClient> {
  if ("databaseUrl" in location) return location.databaseUrl.startsWith("hmcp-pglite-bridge://") ? openBridge(location.databaseUrl) : openPg(location.databaseUrl);
  return openPglite(location.dataDir);
}
