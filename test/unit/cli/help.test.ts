import { describe, expect, it } from "vitest";
import { main } from "../../../src/cli/main.js";
import { runGuardrailsCommand } from "../../../src/cli/guardrails-command.js";

async function run(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("hmcp --help", () => {
  it.each([["--help"], ["audit", "--help"], ["audit", "query", "--help"], ["guardrails", "eval", "-h"]])("%s prints usage and exits 0", async (...argv) => {
    const r = await run(argv);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/usage/i);
    expect(r.err).toBe("");
  });

  // The guardrails command itself (not only main's interception) treats --help as help, not as an option missing its value.
  it.each([["eval", "--help"], ["eval", "-h"], ["eval", "--policy", "p.yaml", "--help"], ["eval", "--format", "json", "-h", "--data", "d.jsonl"]])(
    "runGuardrailsCommand %s prints the eval usage and exits 0",
    async (...argv) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runGuardrailsCommand(argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
      expect(code).toBe(0);
      expect(out.join("\n")).toMatch(/^usage: hmcp guardrails eval /);
      expect(err).toEqual([]);
    },
  );

  it("hmcp --help names the options the README's commands use: audit verify --anchors, token --private-key", async () => {
    const r = await run(["--help"]);
    expect(r.out).toMatch(/^ {2}hmcp audit verify .*--anchors <file>/m);
    expect(r.out).toMatch(/^ {2}hmcp token .*\(--client-secret <secret> \| --private-key <private JWK file>\)/m);
  });

  it("an unknown command is a usage error (exit 2)", async () => {
    const r = await run(["frobnicate"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/unknown command 'frobnicate'/);
  });

  it("--version prints the package's version", async () => {
    const { readFileSync } = await import("node:fs");
    const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
    for (const flag of ["--version", "-v"]) {
      const r = await run([flag]);
      expect([r.code, r.out, r.err]).toEqual([0, pkg.version, ""]);
    }
  });
});
