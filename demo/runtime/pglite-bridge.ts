/**
 * One PGlite shared by several processes, for `npm run demo -- --instances 2` on a machine with neither a PostgreSQL
 * server nor DATABASE_URL (only npm). PGlite cannot be opened by two processes, so one PGlite (in memory: the run's
 * database, gone when it ends) lives in the demo's process and the agent processes reach it through a query bridge on
 * loopback: `POST` with `authorization: Bearer <token>` and a JSON body `{op, text?, params?, tx?}`:
 * - `query`: one statement (`$1…` parameters), answered `{rows}`; with `tx`, inside that open transaction;
 * - `begin`: opens a transaction, answered `{tx}`; `commit` / `rollback` end it.
 * The same SQL on the same engine, without PostgreSQL's wire protocol. PGlite runs one statement at a time and holds
 * every other caller while a transaction is open, so an open transaction is rolled back after
 * {@link TRANSACTION_TIMEOUT_MS} (its process may have died). Errors come back `{code, message}` with status 500, and
 * are thrown on the client side with that `code` (SQLSTATE), as `pg` does.
 *
 * A bridge is named by a URL, `hmcp-pglite-bridge://bridge:<token>@127.0.0.1:<port>/` ({@link isBridgeUrl}), which
 * the demo hands its agents where it would hand them a PostgreSQL URL. Not for production: one process holds the data.
 */
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export const BRIDGE_PROTOCOL = "hmcp-pglite-bridge:";
/** An open transaction's longest life, ms: then it is rolled back (a process that died holding it frees the database). */
export const TRANSACTION_TIMEOUT_MS = 30_000;

/** What the bridge's clients get: `query` as `pg.Pool` and PGlite answer it, and transactions. */
export interface BridgeClient {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: T[] }>;
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (query: <R = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<{ rows: R[] }>) => Promise<T>): Promise<T>;
}

/** Whether `url` names a bridge (else it is a PostgreSQL URL). */
export const isBridgeUrl = (url: string) => url.startsWith(`${BRIDGE_PROTOCOL}//`);

interface Body {
  op: "query" | "begin" | "commit" | "rollback";
  text?: string;
  params?: unknown[];
  tx?: string;
}

type Tx = { query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }> };

export interface PgliteBridge {
  /** The bridge URL (holds its token: hand it to the agent processes only). */
  url: string;
  /** This process's own client of the PGlite (direct, not through HTTP). */
  db: BridgeClient;
  close(): Promise<void>;
}

/** Starts an in-memory PGlite and its bridge on a loopback port. */
export async function startPgliteBridge(): Promise<PgliteBridge> {
  const { PGlite } = await import("@electric-sql/pglite");
  const lite = await PGlite.create();
  const token = randomBytes(24).toString("base64url");
  const expected = Buffer.from(`Bearer ${token}`);
  const open = new Map<string, { tx: Tx; end: (commit: boolean) => void; timer: NodeJS.Timeout; settled: Promise<void> }>();

  /** Opens a transaction (once PGlite lets it: it waits for the one open before) and names it. */
  const begin = () =>
    new Promise<string>((resolveId, rejectId) => {
      const id = randomUUID();
      let opened = false;
      const settled = lite
        .transaction(
          (tx) =>
            new Promise<void>((resolve, reject) => {
              const timer = setTimeout(() => {
                open.delete(id);
                reject(new Error("transaction timed out"));
              }, TRANSACTION_TIMEOUT_MS);
              open.set(id, { tx, timer, settled, end: (commit) => (commit ? resolve() : reject(new Error("rolled back"))) });
              opened = true;
              resolveId(id);
            }),
        )
        .then(() => undefined)
        .finally(() => open.delete(id));
      settled.catch((e: unknown) => (opened ? undefined : rejectId(e)));
    });
  /** Commits or rolls back transaction `id`; a commit resolves once COMMIT ran (and rejects when it failed). */
  const end = async (id: string | undefined, commit: boolean) => {
    const t = id ? open.get(id) : undefined;
    if (!t) throw Object.assign(new Error("no such transaction (timed out?)"), { code: "25P01" });
    clearTimeout(t.timer);
    open.delete(id!);
    t.end(commit);
    if (commit) await t.settled;
    else await t.settled.catch(() => undefined);
  };
  const handle = async (b: Body): Promise<unknown> => {
    switch (b.op) {
      case "query": {
        if (b.tx === undefined) return { rows: (await lite.query(b.text!, b.params ?? [])).rows };
        const t = open.get(b.tx);
        if (!t) throw Object.assign(new Error("no such transaction (timed out?)"), { code: "25P01" });
        return { rows: (await t.tx.query(b.text!, b.params ?? [])).rows };
      }
      case "begin":
        return { tx: await begin() };
      case "commit":
      case "rollback":
        await end(b.tx, b.op === "commit");
        return {};
    }
  };
  const server: Server = createServer((req, res) => {
    const auth = Buffer.from(req.headers.authorization ?? "");
    if (req.method !== "POST" || auth.length !== expected.length || !timingSafeEqual(auth, expected)) {
      res.writeHead(401).end();
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let body: Body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Body;
      } catch {
        res.writeHead(400).end();
        return;
      }
      handle(body).then(
        (out) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))),
        (e: { code?: string; message?: string }) => res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ code: e.code, message: e.message })),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const direct: BridgeClient = {
    query: async <T>(text: string, params?: unknown[]) => ({ rows: (await lite.query<T>(text, params ?? [])).rows }),
    transaction: (fn) => lite.transaction((tx) => fn(async <R>(text: string, params?: unknown[]) => ({ rows: (await tx.query<R>(text, params ?? [])).rows }))),
  };
  return {
    url: `${BRIDGE_PROTOCOL}//bridge:${token}@127.0.0.1:${port}/`,
    db: direct,
    close: async () => {
      for (const [id, t] of open) {
        clearTimeout(t.timer);
        open.delete(id);
        t.end(false);
      }
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await lite.close();
    },
  };
}

/** A client of the bridge at `url` (see the module comment). */
export function connectBridge(url: string): BridgeClient {
  const u = new URL(url);
  const endpoint = `http://${u.host}/`;
  const authorization = `Bearer ${decodeURIComponent(u.password)}`;
  const call = async <T>(body: Body): Promise<T> => {
    const res = await fetch(endpoint, { method: "POST", headers: { authorization, "content-type": "application/json" }, body: JSON.stringify(body) });
    if (res.status === 401) throw new Error("pglite bridge: refused the token");
    const out = (await res.json()) as T & { code?: string; message?: string };
    if (res.status !== 200) throw Object.assign(new Error(out.message ?? "query failed"), { code: out.code });
    return out;
  };
  return {
    query: <T>(text: string, params?: unknown[]) => call<{ rows: T[] }>({ op: "query", text, ...(params && { params }) }),
    async transaction(fn) {
      const { tx } = await call<{ tx: string }>({ op: "begin" });
      try {
        const out = await fn(<R>(text: string, params?: unknown[]) => call<{ rows: R[] }>({ op: "query", text, tx, ...(params && { params }) }));
        await call({ op: "commit", tx });
        return out;
      } catch (e) {
        await call({ op: "rollback", tx }).catch(() => undefined);
        throw e;
      }
    },
  };
}
