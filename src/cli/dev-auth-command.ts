/**
 * `hmcp dev-auth-server --resource <url> [--resource <url> ...] --client <id>=<scope>[,<scope>...][@<patient>] ...
 *   [--port N] [--ttl SECONDS] [--format text|json]`
 *
 * Starts the development authorization server (`hmcp/dev-auth`, on `oidc-provider`, an optional peer dependency) on
 * 127.0.0.1 for your own agents, registers each `--client` with a generated client secret (client_secret_basic),
 * prints the issuer, the JWKS URI, each client's credentials and scopes, the `hmcp token` and `curl` lines that get
 * a token, and the bearer authenticator options an agent needs; then serves until SIGINT / SIGTERM (or `signal`).
 * Development only: keys and secrets live in memory, the issuer is plain http on loopback.
 * Exit codes: 0 stopped, 2 usage error or `oidc-provider` not installed, 1 the server could not start.
 */
import { randomBytes } from "node:crypto";
import type { DevAuthorizationServer, DevClientConfig } from "../dev-auth/index.js";

type IO = { out: (s: string) => void; err: (s: string) => void };

export const DEV_AUTH_USAGE =
  "usage: hmcp dev-auth-server --resource <url> [--resource <url> ...] --client <id>=<scope>[,<scope>...][@<patient>] [--client ...] [--port N] [--ttl SECONDS] [--format text|json]";

/** A parsed `--client id=scope,scope@patient`. */
function parseClient(spec: string): DevClientConfig | string {
  const m = /^([A-Za-z0-9._~-]+)=([^@]*)(?:@([A-Za-z0-9.-]{1,64}))?$/.exec(spec);
  if (!m) return `--client '${spec}': expected <id>=<scope>[,<scope>...][@<patient>], e.g. orchestrator=hmcp:sample,system/*.rs`;
  const scopes = m[2]!.split(",").map((s) => s.trim()).filter(Boolean);
  if (scopes.length === 0) return `--client '${spec}': name at least one scope`;
  return { clientId: m[1]!, scopes, ...(m[3] !== undefined && { patient: m[3] }), clientSecret: randomBytes(24).toString("base64url") };
}

function parse(argv: string[]): { resources: string[]; clients: DevClientConfig[]; port: number; ttl: number | undefined; format: string } | string {
  const resources: string[] = [];
  const clients: DevClientConfig[] = [];
  let port = 0;
  let ttl: number | undefined;
  let format = "text";
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i]!, argv[i + 1]];
    if (value === undefined || value.startsWith("--")) return `option ${flag} needs a value`;
    switch (flag) {
      case "--resource": {
        let u: URL;
        try {
          u = new URL(value);
        } catch {
          return `--resource '${value}' is not a URL (the agent's MCP endpoint, e.g. http://127.0.0.1:3001/mcp)`;
        }
        resources.push(u.href);
        break;
      }
      case "--client": {
        const c = parseClient(value);
        if (typeof c === "string") return c;
        if (clients.some((x) => x.clientId === c.clientId)) return `--client '${c.clientId}' given twice`;
        clients.push(c);
        break;
      }
      case "--port":
        port = Number(value);
        if (!Number.isInteger(port) || port < 0 || port > 65535) return "--port must be an integer from 0 to 65535";
        break;
      case "--ttl":
        ttl = Number(value);
        if (!Number.isInteger(ttl) || ttl <= 0) return "--ttl must be a positive number of seconds";
        break;
      case "--format":
        format = value;
        if (format !== "text" && format !== "json") return "--format must be text or json";
        break;
      default:
        return `unknown option ${flag}`;
    }
  }
  if (resources.length === 0) return "name at least one --resource (an agent's MCP endpoint URL)";
  if (clients.length === 0) return "register at least one --client <id>=<scopes>";
  return { resources, clients, port, ttl, format };
}

const shellQuote = (s: string) => (/^[A-Za-z0-9_./:=@,+-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** What the command prints (text): where the server is, who may get which token, and how. */
function banner(as: DevAuthorizationServer, resources: string[], clients: DevClientConfig[]): string[] {
  const first = clients[0]!;
  const lines = [
    "HMCP development authorization server (development only: in-memory keys, plain http on loopback)",
    `issuer          ${as.issuer}`,
    `jwks uri        ${as.jwksUri}`,
    `token endpoint  ${as.tokenEndpoint}`,
    `resources       ${resources.join(" ")}`,
    "clients (client_secret_basic):",
  ];
  for (const c of clients) {
    lines.push(`  ${c.clientId}  secret ${c.clientSecret}  scopes ${c.scopes.join(" ")}${c.patient !== undefined ? `  patient ${c.patient}` : ""}`);
  }
  const scope = first.scopes.join(" ");
  lines.push(
    "a token:",
    // the secret in the environment, not on the command line (shell history)
    `  HMCP_CLIENT_SECRET=${first.clientSecret} npx --no hmcp token --issuer ${as.issuer} --client-id ${first.clientId} --resource ${shellQuote(resources[0]!)} --scope ${shellQuote(scope)}`,
    `  curl -s -u ${first.clientId}:${first.clientSecret} -d grant_type=client_credentials --data-urlencode ${shellQuote(`scope=${scope}`)} --data-urlencode ${shellQuote(`resource=${resources[0]}`)} ${as.tokenEndpoint}`,
    "your agent trusts it with:",
    `  createJwtBearerAuthenticator({ issuer: "${as.issuer}", audience: "${resources[0]}", jwks: { uri: "${as.jwksUri}" } })`,
    "serving until Ctrl-C",
  );
  return lines;
}

/**
 * Runs `hmcp dev-auth-server`; resolves to the exit code once the server has stopped (SIGINT, SIGTERM or `signal`).
 * @param signal - stops the server when aborted (tests); the process signals always do
 */
export async function runDevAuthServerCommand(argv: string[], io: IO, signal?: AbortSignal): Promise<number> {
  if (argv.some((a) => a === "--help" || a === "-h")) {
    io.out(DEV_AUTH_USAGE);
    return 0;
  }
  const opts = parse(argv);
  if (typeof opts === "string") {
    io.err(`hmcp dev-auth-server: ${opts}\n${DEV_AUTH_USAGE}`);
    return 2;
  }
  let mod: typeof import("../dev-auth/index.js");
  try {
    mod = await import("../dev-auth/index.js");
  } catch (e) {
    if ((e as { code?: string }).code === "ERR_MODULE_NOT_FOUND") {
      io.err("hmcp dev-auth-server: needs the optional peer dependency oidc-provider: npm install --save-dev oidc-provider");
      return 2;
    }
    throw e;
  }
  let as: DevAuthorizationServer;
  try {
    as = await mod.startDevAuthorizationServer({
      clients: opts.clients,
      resources: opts.resources.map((identifier) => ({ identifier, ...(opts.ttl !== undefined && { accessTokenTTLSec: opts.ttl }) })),
      port: opts.port,
    });
  } catch (e) {
    io.err(`hmcp dev-auth-server: cannot start: ${(e as Error).message}`);
    return 1;
  }
  if (opts.format === "json") {
    io.out(
      JSON.stringify({
        issuer: as.issuer,
        jwksUri: as.jwksUri,
        tokenEndpoint: as.tokenEndpoint,
        resources: opts.resources,
        clients: opts.clients.map((c) => ({ clientId: c.clientId, clientSecret: c.clientSecret, scopes: c.scopes, ...(c.patient !== undefined && { patient: c.patient }) })),
      }),
    );
  } else {
    for (const line of banner(as, opts.resources, opts.clients)) io.out(line);
  }
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      signal?.removeEventListener("abort", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    if (signal?.aborted) stop();
    else signal?.addEventListener("abort", stop, { once: true });
  });
  await as.stop();
  return 0;
}
