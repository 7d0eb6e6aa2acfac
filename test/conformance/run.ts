/**
 * Runs the official MCP conformance suite (`@modelcontextprotocol/conformance`, server scenarios) against the HMCP
 * fixture server, with test/conformance/baseline.yml as the expected-failures baseline.
 *
 *   npm run conformance                      # every server scenario (suite "all": active + pending)
 *   npm run conformance -- --scenario ping   # one scenario (the baseline still applies)
 *   npm run conformance:2026                 # `--requirements 2026-07-28`: the scenarios MCP 2026-07-28 requires, on
 *                                            # suite 0.2.0-alpha.12 with baseline-2026-07-28.yml
 *   npm run conformance:2026 -- --scenario tasks-lifecycle   # one scenario of that suite at the 2026-07-28 wire
 *   npm run conformance:tasks                # the tasks extension's scenarios (not scored for 2026-07-28, so a
 *                                            # requirement-set run does not hold them to the baseline), one by one
 *
 * Exit status: 0 when every scenario passes or is baselined; 1 on an unexpected failure (a FAILURE or WARNING check
 * in a scenario not in the baseline), on a stale baseline entry (a baselined scenario that now passes), or when the
 * fixture or the suite cannot start. The suite needs Node >= 22, so it runs under `npx -p node@22` (the npm registry
 * is the only network it needs; npx caches both packages after the first run).
 *
 * Environment: CONFORMANCE_OUTPUT_DIR saves each scenario's checks.json there (the suite's `-o`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { readBaseline } from "./baseline.js";

/**
 * The suite version each baseline was written against. Changing one means re-reading the scenarios. The frozen
 * requirement set of 2026-07-28 exists only in the 0.2 line (pre-releases so far).
 */
const REQUIREMENTS = process.argv.includes("--requirements") ? process.argv[process.argv.indexOf("--requirements") + 1] : undefined;
const CONFORMANCE_PACKAGE = REQUIREMENTS === undefined ? "@modelcontextprotocol/conformance@0.1.16" : "@modelcontextprotocol/conformance@0.2.0-alpha.12";
/** The suite needs Node 22 (its dependencies declare `engines: node >= 22`). */
const SUITE_NODE = "node@22";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FIXTURE = fileURLToPath(new URL("./fixture-server.ts", import.meta.url));
const BASELINE = fileURLToPath(new URL(REQUIREMENTS === undefined ? "./baseline.yml" : `./baseline-${REQUIREMENTS}.yml`, import.meta.url));
/** Time the fixture may take to print its URL, ms (it opens its task store first: PGlite takes seconds to start). */
const FIXTURE_START_TIMEOUT_MS = 90_000;
/** Time the fixture may take to shut down on SIGTERM before it is killed, ms. */
const FIXTURE_STOP_TIMEOUT_MS = 10_000;
/** Time the whole suite may take, ms (it takes seconds once npx has cached the packages). */
const SUITE_TIMEOUT_MS = 10 * 60_000;

async function startFixture(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fixture did not print its URL within ${FIXTURE_START_TIMEOUT_MS} ms`)), FIXTURE_START_TIMEOUT_MS);
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => {
      clearTimeout(timer);
      try {
        const parsed = JSON.parse(line) as { url?: unknown };
        if (typeof parsed.url !== "string") throw new Error("no url");
        resolve(parsed.url);
      } catch {
        reject(new Error(`fixture printed an unexpected first line: ${line.slice(0, 200)}`));
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`fixture exited before listening (code ${code}, signal ${signal})`));
    });
  });
  // Keep draining stdout so the fixture never blocks on a full pipe.
  child.stdout!.resume();
  return { child, url };
}

async function stopFixture(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), FIXTURE_STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/**
 * The suite refuses `--requirements` with `--scenario` (a requirement set fixes the scenarios): one scenario of a
 * revision (`npm run conformance:2026 -- --scenario tasks-lifecycle`) runs at that revision's wire instead
 * (`--spec-version <revision> --force`), with the revision's suite version and baseline all the same.
 */
function suiteArgs(extraArgs: string[]): string[] {
  const i = extraArgs.indexOf("--requirements");
  if (i < 0 || !extraArgs.includes("--scenario")) return extraArgs;
  // --force: the extension scenarios (tasks-*) are "not on the spec timeline", and run only when forced, as a
  // requirement set run forces them
  return [...extraArgs.slice(0, i), "--spec-version", extraArgs[i + 1] ?? "", "--force", ...extraArgs.slice(i + 2)];
}

function runSuite(url: string, extraArgs: string[]): Promise<number> {
  const args = [
    "-y",
    "-p",
    SUITE_NODE,
    "-p",
    CONFORMANCE_PACKAGE,
    "conformance",
    "server",
    "--url",
    url,
    "--expected-failures",
    BASELINE,
    ...(process.env["CONFORMANCE_OUTPUT_DIR"] ? ["-o", process.env["CONFORMANCE_OUTPUT_DIR"]] : []),
    ...(extraArgs.includes("--scenario") || extraArgs.includes("--suite") || extraArgs.includes("--requirements") ? [] : ["--suite", "all"]),
    ...suiteArgs(extraArgs),
  ];
  const npx = process.platform === "win32" ? "npx.cmd" : "npx";
  return new Promise((resolve, reject) => {
    const child = spawn(npx, args, { cwd: ROOT, stdio: "inherit", env: { ...process.env, npm_config_yes: "true" } });
    const timer = setTimeout(() => {
      process.stderr.write(`conformance: the suite did not finish within ${SUITE_TIMEOUT_MS / 1000} s\n`);
      child.kill("SIGTERM");
    }, SUITE_TIMEOUT_MS);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

async function main(): Promise<number> {
  const started = performance.now();
  // Fails early (before npx) when an entry has no reason.
  const baseline = readBaseline(BASELINE);
  process.stdout.write(`conformance: ${CONFORMANCE_PACKAGE} under ${SUITE_NODE}; baseline ${baseline.server.length} scenario(s)\n`);
  for (const entry of baseline.server) process.stdout.write(`  ~ ${entry.scenario}: ${entry.reason}\n`);

  const { child, url } = await startFixture();
  const stopOnSignal = () => {
    void stopFixture(child).finally(() => process.exit(130));
  };
  process.once("SIGINT", stopOnSignal);
  process.once("SIGTERM", stopOnSignal);
  let code: number;
  try {
    process.stdout.write(`conformance: fixture listening at ${url}\n`);
    // `--scenario a,b,c`: each scenario in turn against the one fixture (the baseline applies to each); the run fails
    // if any does
    const args = process.argv.slice(2);
    const at = args.indexOf("--scenario");
    const scenarios = at < 0 ? [undefined] : (args[at + 1] ?? "").split(",").filter((name) => name !== "");
    code = 0;
    for (const scenario of scenarios) {
      const one = scenario === undefined ? args : [...args.slice(0, at + 1), scenario, ...args.slice(at + 2)];
      const exit = await runSuite(url, one);
      if (exit !== 0) {
        if (scenario !== undefined) process.stdout.write(`conformance: scenario ${scenario} FAILED (exit ${exit})\n`);
        code = exit;
      }
    }
  } finally {
    await stopFixture(child);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(`conformance: ${code === 0 ? "passed" : "FAILED"} (exit ${code}) in ${seconds} s\n`);
  return code;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`conformance: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
