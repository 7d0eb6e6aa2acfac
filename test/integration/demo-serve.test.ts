/**
 * `npm run demo -- --serve`: one JSON line with the URLs; the endpoints answer (metadata public, MCP behind a bearer
 * token); SIGTERM stops everything and the process exits 0.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot, tempDir } from "./demo-helpers.js";

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanup) await c();
});

describe("demo --serve", () => {
  it("prints the URLs as one JSON line, serves until SIGTERM, then exits 0", { timeout: 90_000 }, async () => {
    const tmp = await tempDir("hmcp-demo-serve-");
    cleanup.push(tmp.remove);
    const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "demo/main.ts"), "--serve", "--store", path.join(tmp.dir, "emr"), "--audit-dir", path.join(tmp.dir, "audit")], {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stderr.resume();
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const line = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        buf += d;
        const i = buf.indexOf("\n");
        if (i >= 0) resolve(buf.slice(0, i));
      });
      void exited.then((code) => reject(new Error(`demo --serve exited early with ${code}`)));
    });
    const info = JSON.parse(line) as {
      issuer: string;
      agents: { emrWriteback: { mcp: string; protectedResourceMetadata: string }; patientData: { mcp: string; protectedResourceMetadata: string } };
    };
    const meta = (await (await fetch(info.agents.emrWriteback.protectedResourceMetadata)).json()) as { resource: string; authorization_servers: string[] };
    expect(meta.resource).toBe(info.agents.emrWriteback.mcp);
    expect(meta.authorization_servers).toEqual([info.issuer]);
    const discovery = await fetch(`${info.issuer}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    const noToken = await fetch(info.agents.patientData.mcp, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" });
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get("www-authenticate")).toMatch(/^Bearer /);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });
});
