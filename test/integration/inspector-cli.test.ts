/**
 * A standard MCP host against the demo: the official MCP Inspector CLI (`@modelcontextprotocol/inspector --cli`, run on
 * Node 22 fetched from the npm registry, as the conformance suite is) connects to `npm run demo -- --serve` with a
 * token from `hmcp token`, lists the agents' tools and calls the patient lookup through the sampling tool, which is
 * how a host that cannot send `sampling/createMessage` reaches an HMCP agent.
 */
import { execFile, spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import { loadPatientBundles } from "../../demo/fhir/synthea.js";
import { repoRoot, shippedData, tempDir } from "./demo-helpers.js";

const run = promisify(execFile);
const INSPECTOR = ["-y", "-p", "node@22", "-p", "@modelcontextprotocol/inspector@2.12.0", "mcp-inspector", "--cli"];
const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function inspector(url: string, token: string, ...args: string[]): Promise<unknown> {
  const { stdout } = await run("npx", [...INSPECTOR, url, "--transport", "http", "--header", `Authorization: Bearer ${token}`, ...args], {
    cwd: repoRoot,
    env: { ...process.env, NODE_OPTIONS: "", npm_config_loglevel: "error" },
    timeout: 240_000,
    maxBuffer: 8 * 1024 * 1024,
  });
  return JSON.parse(stdout);
}

describe("the MCP Inspector CLI against the demo (--serve)", () => {
  it("lists the sampling tool and looks a patient up through it with a token from hmcp token", { timeout: 420_000 }, async () => {
    const tmp = await tempDir("hmcp-inspector-");
    cleanup.push(tmp.remove);
    const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "demo/main.ts"), "--serve", "--store", path.join(tmp.dir, "emr"), "--audit-dir", path.join(tmp.dir, "audit")], {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    cleanup.push(() => void child.kill("SIGTERM"));
    child.stderr.resume();
    const line = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        buf += d;
        if (buf.includes("\n")) resolve(buf.slice(0, buf.indexOf("\n")));
      });
      child.once("exit", (code) => reject(new Error(`demo --serve exited early with ${code}`)));
    });
    const info = JSON.parse(line) as { issuer: string; agents: { patientData: { mcp: string } }; audit: string };
    const keyFile = path.join(info.audit, "client-keys", "orchestrator.jwk");
    expect(await readdir(path.dirname(keyFile))).toContain("orchestrator.jwk");
    let token = "";
    const code = await main(["token", "--issuer", info.issuer, "--client-id", "orchestrator", "--private-key", keyFile, "--resource", info.agents.patientData.mcp, "--scope", "hmcp:sample hmcp:access"], {
      out: (s) => (token += s),
      err: () => {},
    });
    expect(code).toBe(0);

    const listed = (await inspector(info.agents.patientData.mcp, token, "--method", "tools/list")) as { tools: Array<{ name: string }> };
    expect(listed.tools.map((t) => t.name)).toContain("sampling_createMessage");

    const patient = (await loadPatientBundles(shippedData))[0]!.patient as unknown as { id: string; birthDate: string; name: Array<{ given: string[]; family: string }> };
    const name = `${patient.name[0]!.given.join(" ")} ${patient.name[0]!.family}`;
    const messages = JSON.stringify([{ role: "user", content: { type: "text", text: `patient identifier for ${name} born ${patient.birthDate}` } }]);
    const called = (await inspector(info.agents.patientData.mcp, token, "--method", "tools/call", "--tool-name", "sampling_createMessage", "--tool-arg", `messages=${messages}`, "--tool-arg", "maxTokens=100")) as {
      structuredContent: { role: string; model: string; stopReason: string; content: { text: string } };
    };
    expect(called.structuredContent).toMatchObject({ role: "assistant", model: "patient-data", stopReason: "endTurn" });
    expect(JSON.parse(called.structuredContent.content.text)).toEqual({ patient_id: patient.id });
  });
});
