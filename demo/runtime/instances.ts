/**
 * `npm run demo -- --instances <n>`: each demo agent as `n` processes (demo/runtime/instance-agent.ts) behind a reverse
 * proxy (demo/runtime/proxy.ts: HAProxy, or http-proxy-3 with `--proxy node`), sharing one PostgreSQL and one
 * requestState key. The orchestrator talks to the proxies only. Round-robin spreads MCP 2026-07-28 requests over the
 * instances; a 2025-era session sticks to the instance that opened it (`Mcp-Session-Id`).
 *
 * The database: `DATABASE_URL` when given, else a throwaway PostgreSQL server from the machine's packages
 * (demo/runtime/postgres-server.ts, deleted at the end of the run), else (a machine with only npm) one in-memory PGlite
 * in the demo's process, which the agent processes reach through a query bridge (demo/runtime/pglite-bridge.ts):
 * PGlite cannot be opened by several processes. The summary says which one ran. A missing HAProxy is said before
 * anything starts ({@link instancesPrerequisites}), with how to install it; the demo never falls back silently.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { INSTANCE_CONFIG_ENV, type InstanceConfig } from "./agent-config.js";
import type { DemoAuth } from "./auth.js";
import { startPgliteBridge, type PgliteBridge } from "./pglite-bridge.js";
import { realPostgresAvailable, startPostgresServer, type PostgresServer } from "./postgres-server.js";
import { freePort, HAPROXY_INSTALL_HINT, haproxyBinary, haproxyInstalled, startProxy, type Proxy } from "./proxy.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const AGENT_SCRIPT = path.join(here, "instance-agent.ts");
const TSX_LOADER = path.join(here, "..", "..", "node_modules", "tsx", "dist", "loader.mjs");

/** `--proxy`: `haproxy` (default) or `node` (http-proxy-3 in the demo's process, for machines without HAProxy). */
export type ProxyChoice = "haproxy" | "node";

/** A prerequisite of `--instances` that is missing; its message says how to get it. demo/main.ts exits 2 with it. */
export class DemoSetupError extends Error {
  override name = "DemoSetupError";
}

/**
 * What `--instances` lacks here (the proxy: the database always has a way to run), as a message saying how to install
 * it, or `undefined` when nothing is missing. Checked before anything starts.
 */
export function instancesPrerequisites(o: { proxy: ProxyChoice; env?: NodeJS.ProcessEnv }): string | undefined {
  const bin = haproxyBinary(o.env);
  if (o.proxy !== "haproxy" || haproxyInstalled(bin)) return undefined;
  return [
    "--instances runs each agent as several processes behind a reverse proxy, which is missing here:",
    `HAProxy is not installed here (${bin} -v did not run).`,
    `  install it (Debian, Ubuntu): sudo ${HAPROXY_INSTALL_HINT}`,
    "  or name its binary:         HMCP_HAPROXY=/path/to/haproxy npm run demo -- --instances 2",
    "  or balance in Node instead: npm run demo -- --instances 2 --proxy node   (http-proxy-3, for development)",
    "Without --instances the demo runs both agents in one process and needs no proxy.",
  ].join("\n");
}

/** Which shared database ran (see the module comment); "PGlite bridge": PGlite in the demo's process, no PostgreSQL here. */
export type DatabaseKind = "DATABASE_URL" | "throwaway PostgreSQL server" | "PGlite bridge";

/**
 * The database {@link startInstances} will use here. `HMCP_DEMO_DATABASE=pglite` picks the PGlite bridge where a
 * PostgreSQL server is installed (to check what a machine without one runs).
 */
export function instancesDatabaseKind(databaseUrl: string | undefined, env: NodeJS.ProcessEnv = process.env): DatabaseKind {
  if (databaseUrl) return "DATABASE_URL";
  return env["HMCP_DEMO_DATABASE"] !== "pglite" && realPostgresAvailable() ? "throwaway PostgreSQL server" : "PGlite bridge";
}

export interface InstancesOptions {
  /** Processes per agent (>= 2). */
  instances: number;
  proxy: ProxyChoice;
  /** The shared PostgreSQL; default: a throwaway server. */
  databaseUrl?: string | undefined;
  /** Synthea bundles (the patient-data agent's index). */
  dataDir: string;
  auth: DemoAuth;
  /** The run's audit folder (each instance's public checkpoint key goes there) and anchors file. */
  auditDir: string;
  anchorsFile: string;
}

export interface AgentInstance {
  agent: "emr-writeback" | "patient-data";
  /** Its id and audit chain name, e.g. `emr-writeback-1`. */
  id: string;
  /** Its own base URL (a backend of the proxy). */
  url: string;
}

export interface RunningInstances {
  /** The proxies' MCP endpoints: what the orchestrator connects to. */
  emrUrl: string;
  patientDataUrl: string;
  proxy: Proxy["kind"];
  /** `url`: what the agents connect to (a PGlite bridge's URL holds its token). */
  database: { kind: DatabaseKind; url: string };
  instances: AgentInstance[];
  /** This process's connection to the shared database (reports and audit verification). */
  db: { query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: T[] }> };
  /** Stops the proxies, then each instance gracefully (each closes its chain with a signed checkpoint). Idempotent. */
  stop(): Promise<void>;
  /** After {@link stop}: ends `db` and the throwaway server (its data is deleted). Idempotent. */
  close(): Promise<void>;
}

interface Child {
  child: ChildProcess;
  url: string;
}

/** Spawns one instance; resolves once it listens. `stopping()`: whether an exit from now on is expected (else it is reported on stderr). */
function spawnInstance(cfg: InstanceConfig, stopping: () => boolean): Promise<Child> {
  const child = spawn(process.execPath, ["--import", TSX_LOADER, AGENT_SCRIPT], {
    cwd: path.join(here, "..", ".."),
    env: { ...process.env, [INSTANCE_CONFIG_ENV]: JSON.stringify(cfg) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4_000)));
  let ready = false;
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      if (!ready && line.startsWith('{"ready"')) {
        ready = true;
        resolve({ child, url: (JSON.parse(line) as { ready: string }).ready });
      }
    });
    child.once("exit", (code, signal) => {
      if (!ready) return reject(new Error(`agent instance ${cfg.instanceId} exited (${code}) before it was ready: ${stderr.trim()}`));
      // after it was ready: the proxy sends its requests to the others; say why it went
      if (!stopping()) process.stderr.write(`demo: agent instance ${cfg.instanceId} exited during the run (${signal ?? code}): ${stderr.trim().split("\n").slice(-5).join(" | ")}\n`);
    });
  });
}

async function stopChild(c: ChildProcess): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once("exit", r));
  c.kill("SIGTERM");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}

/**
 * Starts the shared database, `instances` processes of each agent and one proxy per agent.
 * @throws DemoSetupError when a prerequisite is missing ({@link instancesPrerequisites})
 */
export async function startInstances(o: InstancesOptions): Promise<RunningInstances> {
  const missing = instancesPrerequisites({ proxy: o.proxy });
  if (missing) throw new DemoSetupError(missing);
  const children: Child[] = [];
  const proxies: Proxy[] = [];
  let server: PostgresServer | undefined;
  let bridge: PgliteBridge | undefined;
  let pool: pg.Pool | undefined;
  let stopped = false;
  let closed = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const p of proxies) await p.close();
    await Promise.all(children.map((c) => stopChild(c.child)));
  };
  const close = async () => {
    await stop();
    if (closed) return;
    closed = true;
    await pool?.end();
    await server?.close();
    await bridge?.close();
  };
  try {
    const kind = instancesDatabaseKind(o.databaseUrl);
    let database: RunningInstances["database"];
    let db: RunningInstances["db"];
    if (kind === "DATABASE_URL" || kind === "throwaway PostgreSQL server") {
      if (kind === "throwaway PostgreSQL server") server = await startPostgresServer();
      database = { kind, url: server?.url ?? o.databaseUrl! };
      db = pool = new pg.Pool({ connectionString: database.url, max: 2 });
      pool.on("error", () => undefined);
    } else {
      bridge = await startPgliteBridge();
      database = { kind, url: bridge.url };
      db = bridge.db;
    }
    // the proxies' ports first: they are the agents' resource identifiers (the audience of their tokens)
    const ports = { "emr-writeback": await freePort(), "patient-data": await freePort() };
    const resource = (agent: AgentInstance["agent"]) => `http://127.0.0.1:${ports[agent]}/mcp`;
    for (const agent of ["emr-writeback", "patient-data"] as const) o.auth.server.addResource(resource(agent));
    const requestStateKey = randomBytes(32).toString("base64url");
    const instances: AgentInstance[] = [];
    const configFor = (agent: AgentInstance["agent"], n: number): InstanceConfig => ({
      agent,
      instanceId: `${agent}-${n}`,
      databaseUrl: database.url,
      resource: resource(agent),
      issuer: o.auth.issuer,
      jwksUri: o.auth.server.jwksUri,
      requestStateKey,
      dataDir: o.dataDir,
      audit: { dir: o.auditDir, anchors: o.anchorsFile },
    });
    const start = async (agent: AgentInstance["agent"], n: number) => {
      const c = await spawnInstance(configFor(agent, n), () => stopped);
      children.push(c);
      instances.push({ agent, id: `${agent}-${n}`, url: c.url });
    };
    // the first creates the shared tables; the others then start together
    await start("emr-writeback", 1);
    await Promise.all([
      ...Array.from({ length: o.instances - 1 }, (_, i) => start("emr-writeback", i + 2)),
      ...Array.from({ length: o.instances }, (_, i) => start("patient-data", i + 1)),
    ]);
    instances.sort((a, b) => a.id.localeCompare(b.id, "en", { numeric: true }));
    const proxyKind: Proxy["kind"] = o.proxy === "haproxy" ? "haproxy" : "http-proxy-3";
    for (const agent of ["emr-writeback", "patient-data"] as const) {
      const backends = instances.filter((i) => i.agent === agent).map((i) => new URL(i.url));
      proxies.push(await startProxy(backends, proxyKind, { port: ports[agent] }));
    }
    return { emrUrl: resource("emr-writeback"), patientDataUrl: resource("patient-data"), proxy: proxyKind, database, instances, db, stop, close };
  } catch (e) {
    await close();
    throw e;
  }
}
