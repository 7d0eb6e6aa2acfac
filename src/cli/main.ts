#!/usr/bin/env node
/**
 * The `hmcp` command: `hmcp audit verify|query|export`, `hmcp guardrails eval`.
 * Exit codes: 0 success, 1 check failed (e.g. a broken audit chain), 2 usage error.
 */
import { runAuditCommand } from "./audit-command.js";
import { runGuardrailsCommand } from "./guardrails-command.js";

const USAGE = `usage: hmcp <command> ...
  hmcp audit verify <files...> [--key <public JWK file>]
  hmcp audit query [--patient ID] [--actor ID] [--outcome O] [--method M] [--since T] [--until T] [--format table|json] <files...>
  hmcp audit export --format fhir <files...>
  hmcp guardrails eval --policy <file> --data <file.jsonl> [--format text|json]`;

/** Runs the CLI with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], io: { out: (s: string) => void; err: (s: string) => void }): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "audit":
      return runAuditCommand(rest, io);
    case "guardrails":
      return runGuardrailsCommand(rest, io);
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
