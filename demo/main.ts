/**
 * `npm run demo [-- options]`: the HMCP EMR demo on Synthea patients. See `--help`.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import type { ClientElicitationHandler } from "hmcp";
import { runDemo, SHIPPED_DATA_DIR, writeReport } from "./run-demo.js";
import { checkDatabaseUrl } from "./emr-store/sql.js";
import { serveDemo } from "./serve.js";
import { createTerminalApprover, type TerminalApprover } from "./runtime/approver.js";
import { instancesPrerequisites } from "./runtime/instances.js";

const HELP = `HMCP EMR demo: writes real (synthetic) FHIR data for Synthea patients through two HMCP agents.

Usage: npm run demo -- [options]
  --all                 write every clinical resource of every patient (default: each patient's most recent encounter)
  --data <dir>          folder of Synthea FHIR R4 bundles (default: the shipped sample, demo/data/bundles)
  --store <dir>         EMR data directory, embedded Postgres (default: .hmcp/emr); DATABASE_URL=postgres://… uses PostgreSQL instead
  --report <file.json>  write a machine-readable report (mode 0600: it names the patients)
  --json                print that report on stdout instead of the summary (progress goes to stderr)
  --audit-dir <dir>     where each run's audit trail goes, one sub-folder per run (default: .hmcp/audit)
  --transport <kind>    http (default: agents on loopback ports) or stdio (agents as child processes)
  --era <era>           modern (default: MCP 2026-07-28; the write is an MCP task, its approval and summary questions
                        answered with tasks/update) or legacy (2025-11-25 sessions, questions sent back as requests)
  --instances <n>       each agent as n processes behind a reverse proxy, sharing one database (default 1: both
                        agents in this process). Needs HAProxy (apt-get install -y haproxy; HMCP_HAPROXY=<path>
                        names the binary), else exits 2 saying so. The database: DATABASE_URL, else a throwaway
                        PostgreSQL server when installed (apt-get install -y postgresql), else PGlite in this process
  --proxy <kind>        with --instances: haproxy (default) or node (the same balancing on http-proxy-3 in the demo's
                        process, for a machine without HAProxy)
  --interactive         ask on the terminal before each write (default: approvals are automatic)
  --serve               start the authorization server and both agents, print their URLs as one JSON line, run until Ctrl-C
  --help                this text
`;

/** Demo options npm took as its own config (`npm run demo --all` without `--`): npm exports them as npm_config_<name>=true. */
function optionsTakenByNpm(names: string[]): string[] {
  if (process.env["npm_lifecycle_event"] !== "demo") return [];
  return names.filter((n) => process.env[`npm_config_${n.replace(/-/g, "_")}`] === "true");
}

async function main(): Promise<number> {
  const swallowed = optionsTakenByNpm(["all", "data", "store", "report", "audit-dir", "transport", "era", "interactive", "json", "serve", "instances", "proxy", "help"]);
  if (swallowed.length > 0) {
    const flags = swallowed.map((n) => `--${n}`).join(" ");
    process.stderr.write(`npm took ${flags} as its own option, so the demo never saw it. Put the demo's options after "--":\n  npm run demo -- ${flags} ...\n`);
    return 2;
  }
  const { values } = parseArgs({
    options: {
      all: { type: "boolean", default: false },
      data: { type: "string" },
      store: { type: "string" },
      report: { type: "string" },
      "audit-dir": { type: "string" },
      transport: { type: "string", default: "http" },
      era: { type: "string", default: "modern" },
      interactive: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      serve: { type: "boolean", default: false },
      instances: { type: "string", default: "1" },
      proxy: { type: "string", default: "haproxy" },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.transport !== "http" && values.transport !== "stdio") throw new Error(`--transport must be http or stdio, not "${values.transport}"`);
  if (values.era !== "modern" && values.era !== "legacy") throw new Error(`--era must be modern or legacy, not "${values.era}"`);
  const instances = Number(values.instances);
  if (!Number.isInteger(instances) || instances < 1 || instances > 8) throw new Error(`--instances must be a whole number from 1 to 8, not "${values.instances}"`);
  if (values.proxy !== "haproxy" && values.proxy !== "node") throw new Error(`--proxy must be haproxy or node, not "${values.proxy}"`);
  if (instances > 1 && values.transport !== "http") throw new Error("--instances runs the agents over HTTP behind a proxy: it does not go with --transport stdio");
  if (instances > 1 && values.serve) throw new Error("--instances does not go with --serve (yet): --serve runs both agents in one process");
  const databaseUrl = process.env["DATABASE_URL"];
  if (instances > 1) {
    // what is missing, and how to install it, before anything starts: no silent fallback to one process
    const missing = instancesPrerequisites({ proxy: values.proxy });
    if (missing) {
      process.stderr.write(`${missing}\n`);
      return 2;
    }
  }
  // fail at start, naming DATABASE_URL, rather than after the approval step with a bare network error
  if (databaseUrl) await checkDatabaseUrl(databaseUrl);
  const store = databaseUrl ? { databaseUrl } : { dataDir: path.resolve(values.store ?? ".hmcp/emr") };
  const dataDir = path.resolve(values.data ?? SHIPPED_DATA_DIR);
  const auditRoot = path.resolve(values["audit-dir"] ?? ".hmcp/audit");
  if (values.serve) return serveDemo({ dataDir, store, auditRoot });

  let approve: ClientElicitationHandler | "auto" = "auto";
  let terminal: TerminalApprover | undefined;
  if (values.interactive) {
    terminal = createTerminalApprover(process.stdin, process.stdout, !process.stdin.isTTY);
    approve = terminal.approve;
  }
  try {
    const { report, ok } = await runDemo({
      dataDir,
      store,
      auditRoot,
      all: values.all,
      transport: values.transport,
      era: values.era,
      ...(instances > 1 && { instances, proxy: values.proxy }),
      approve,
      ...(values.interactive && { verbose: true, bars: false, timeoutMs: 600_000 }),
      // --json: stdout carries the report alone, the progress and summary a person reads go to stderr
      ...(values.json && { out: process.stderr }),
    });
    if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    if (values.report) {
      await writeReport(values.report, report);
      process.stdout.write(`Report: ${values.report}\n`);
    }
    return ok ? 0 : 1;
  } finally {
    terminal?.close();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`demo failed: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
