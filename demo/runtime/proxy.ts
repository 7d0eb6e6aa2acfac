/**
 * A real reverse proxy in front of several agent instances, on loopback, with the balancing HMCP needs:
 * - a request carrying an `Mcp-Session-Id` the proxy has seen in a response goes to the instance that issued it
 *   (the 2025 era's sessions live in one instance's memory);
 * - any other request (MCP 2026-07-28 is stateless; a 2025-era `initialize`) goes round-robin;
 * - an instance that refuses the connection (it died) is skipped and the request sent to the next one; a request an
 *   instance dies in the middle of is answered 502.
 *
 * HAProxy (Debian's `haproxy` package, which `.ci/run` installs) learns the session id from the response header
 * (`stick store-response res.hdr(mcp-session-id)`, `stick match req.hdr(mcp-session-id)`), with `option redispatch`
 * and `retries`. nginx OSS cannot learn a header its backend mints, which is why it is not used. The same rules also
 * run on `http-proxy-3` (a maintained fork of `http-proxy`, a devDependency) inside the calling process: the tests use
 * it where the haproxy binary is missing, and `npm run demo -- --instances 2 --proxy node` when asked to.
 *
 * Used by `npm run demo -- --instances 2` (demo/runtime/instances.ts), test/fixtures/proxy.ts and bench/instances.ts.
 * `HMCP_HAPROXY` names the haproxy binary (default `/usr/sbin/haproxy` when it exists, else `haproxy` on PATH).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, createServer as createNetServer, type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";

export interface Proxy {
  kind: "haproxy" | "http-proxy-3";
  /** The proxy's base URL, e.g. `http://127.0.0.1:43121`. */
  url: URL;
  close(): Promise<void>;
}

/** How to install HAProxy, for messages (Debian and Ubuntu; other systems: their `haproxy` package). */
export const HAPROXY_INSTALL_HINT = "apt-get install -y haproxy";

/** The haproxy binary: `HMCP_HAPROXY` when set, else Debian's /usr/sbin/haproxy (which a non-root PATH may lack), else `haproxy` on PATH. */
export function haproxyBinary(env: NodeJS.ProcessEnv = process.env): string {
  const named = env["HMCP_HAPROXY"];
  if (named) return named;
  return existsSync("/usr/sbin/haproxy") ? "/usr/sbin/haproxy" : "haproxy";
}

/** Whether `binary` runs (`haproxy -v` exits 0). */
export function haproxyInstalled(binary: string = haproxyBinary()): boolean {
  return spawnSync(binary, ["-v"], { stdio: "ignore" }).status === 0;
}

/** Options of {@link startProxy}. */
export interface ProxyOptions {
  /** Loopback port to listen on. Default 0: a free one. */
  port?: number;
  /** The haproxy binary. Default {@link haproxyBinary}. */
  haproxy?: string;
}

/** A free loopback port (free when this resolves; a proxy or agent given it binds it next). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts a proxy of `kind` in front of `backends` (base URLs; see the module comment).
 * @throws Error when haproxy refuses its configuration or does not start within 15 s
 */
export async function startProxy(backends: URL[], kind: Proxy["kind"], options: ProxyOptions = {}): Promise<Proxy> {
  return kind === "haproxy" ? startHaproxy(backends, options) : startNodeProxy(backends, options);
}

async function startHaproxy(backends: URL[], options: ProxyOptions): Promise<Proxy> {
  const HAPROXY = options.haproxy ?? haproxyBinary();
  const dir = mkdtempSync(path.join(os.tmpdir(), "hmcp-haproxy-"));
  const port = options.port || (await freePort());
  const config = [
    "global",
    "  maxconn 512",
    "  log stderr format raw local0",
    "defaults",
    "  mode http",
    "  log global",
    "  option httplog",
    "  timeout connect 2s",
    "  timeout client 120s",
    "  timeout server 120s",
    "  retries 2",
    // one backend connection per request: Node closes an idle keep-alive connection after 5 s, and a request HAProxy
    // sends on one it is closing fails (HAProxy then closes the client's connection, which a POST's client does not
    // retry: "fetch failed"). Loopback connections are cheap.
    "  option http-server-close",
    "  option redispatch 1",
    "frontend mcp",
    `  bind 127.0.0.1:${port}`,
    "  default_backend agents",
    "backend agents",
    "  balance roundrobin",
    "  stick-table type string len 64 size 100k expire 30m",
    "  stick store-response res.hdr(mcp-session-id)",
    "  stick match req.hdr(mcp-session-id)",
    ...backends.map((b, i) => `  server agent${i} ${b.hostname}:${b.port}`),
    "",
  ].join("\n");
  const file = path.join(dir, "haproxy.cfg");
  writeFileSync(file, config);
  const check = spawnSync(HAPROXY, ["-c", "-q", "-f", file], { encoding: "utf8" });
  if (check.status !== 0) throw new Error(`haproxy refused its configuration: ${check.stderr}`);
  const child: ChildProcess = spawn(HAPROXY, ["-db", "-f", file], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const deadline = Date.now() + 15_000;
  while (!(await accepts(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`haproxy did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    kind: "haproxy",
    url: new URL(`http://127.0.0.1:${port}`),
    close: async () => {
      if (process.env["HMCP_TEST_PROXY_LOG"]) process.stderr.write(stderr);
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

/** The HAProxy rules above, on http-proxy-3: sticky by the learnt session id, else round-robin; redispatch on a refused connection. */
async function startNodeProxy(backends: URL[], options: ProxyOptions): Promise<Proxy> {
  // a devDependency: loaded only when this proxy is asked for
  const { createProxyServer } = await import("http-proxy-3");
  // no keep-alive to the backends, for the reason given at `option http-server-close` above
  const proxy = createProxyServer({ proxyTimeout: 120_000, agent: new Agent({ keepAlive: false }) });
  const sticky = new Map<string, number>();
  let next = 0;
  proxy.on("proxyRes", (proxyRes, req) => {
    const sid = proxyRes.headers["mcp-session-id"];
    const backend = (req as IncomingMessage & { backend?: number }).backend;
    if (typeof sid === "string" && backend !== undefined) sticky.set(sid, backend);
  });
  const forward = (req: IncomingMessage & { backend?: number }, res: ServerResponse, body: Buffer, backend: number, attemptsLeft: number) => {
    req.backend = backend;
    proxy.web(req, res, { target: backends[backend]!.href, buffer: Readable.from([body]) }, (error: Error & { code?: string }) => {
      // a refused connection: the instance is gone, try the next one (HAProxy's redispatch); anything else: 502
      if (error.code === "ECONNREFUSED" && attemptsLeft > 0 && !res.headersSent) return forward(req, res, body, (backend + 1) % backends.length, attemptsLeft - 1);
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" }).end("Bad Gateway");
      else res.destroy();
    });
  };
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const sid = req.headers["mcp-session-id"];
      const stuck = typeof sid === "string" ? sticky.get(sid) : undefined;
      const backend = stuck ?? next++ % backends.length;
      // a session's requests stay on its instance: redispatched only when it is gone (as HAProxy's `option redispatch`)
      forward(req, res, Buffer.concat(chunks), backend, 2);
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    kind: "http-proxy-3",
    url: new URL(`http://127.0.0.1:${port}`),
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      proxy.close();
    },
  };
}
