#!/usr/bin/env node
/**
 * The `hmcp` command: `hmcp audit verify|query|export`, `hmcp guardrails eval`.
 * Exit codes: 0 success, 1 check failed (e.g. a broken audit chain), 2 usage error.
 */
import { readFileSync } from "node:fs";
import { runAuditCommand } from "./audit-command.js";
import { runGuardrailsCommand } from "./guardrails-command.js";
import { DEV_AUTH_USAGE, runDevAuthServerCommand } from "./dev-auth-command.js";
import { runTokenCommand, TOKEN_USAGE } from "./token-command.js";

const USAGE = `usage: hmcp <command> ...   (hmcp audit --help, hmcp guardrails --help: every option; hmcp --version)
  hmcp audit verify <files or dirs...> [--key <public JWK or JWK Set file>] [--anchors <file>]   (checkpoint anchors: also catch a trail cut back or rewritten)
  hmcp audit query [--patient ID] [--actor ID] [--outcome O] [--reason R] [--method M] [--since T] [--until T] [--format table|json] <files or dirs...>
  hmcp audit export --format fhir <files or dirs...>
  hmcp audit serve <files or dirs...> | --database-url URL  --issuer <url> --client-id <id>   (the compliance console)
  hmcp guardrails eval --policy <file> --data <file.jsonl> [--format text|json] [--show-errors N]
  hmcp dev-auth-server --resource <url> --client <id>=<scope>[,<scope>...][@<patient>]   (development only)
  hmcp token --issuer <url> --client-id <id> (--client-secret <secret> | --private-key <private JWK file>) [--resource <url>] [--scope "<scopes>"]`;

/** Runs the CLI with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  const [command, ...rest] = argv;
  // `--help` / `-h` anywhere after a command asks for that command's usage (exit 0).
  if (command !== undefined && rest.some((a) => a === "--help" || a === "-h")) {
    if (command === "dev-auth-server") return (io.out(DEV_AUTH_USAGE), 0);
    if (command === "token") return (io.out(TOKEN_USAGE), 0);
    return command === "audit" ? runAuditCommand(["--help"], io) : command === "guardrails" ? runGuardrailsCommand(["--help"], io) : main(["--help"], io);
  }
  switch (command) {
    case "audit":
      return runAuditCommand(rest, io);
    case "guardrails":
      return runGuardrailsCommand(rest, io);
    case "dev-auth-server":
      return runDevAuthServerCommand(rest, io);
    case "token":
      return runTokenCommand(rest, io);
    case "--version":
    case "-v":
    case "version":
      io.out(packageVersion());
      return 0;
    case undefined:
    case "help":
    case "--help":
    case "-h":
      io.out(USAGE);
      return command === undefined ? 2 : 0;
    default:
      io.err(`hmcp: unknown command '${command}'\n${USAGE}`);
      return 2;
  }
}

/** This package's version, from its package.json (two folders up from src/cli and from dist/src/cli alike). */
function packageVersion(): string {
  for (const up of ["../../package.json", "../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "hmcp" && typeof pkg.version === "string") return pkg.version;
    } catch {
      // not there: try the next
    }
  }
  return "unknown";
}
