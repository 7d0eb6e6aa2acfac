/**
 * `npm run demo -- --serve`: one JSON line with the URLs; the endpoints answer (metadata public, MCP behind a bearer
 * token); SIGTERM stops everything and the process exits 0.
 */
import { execFileSync, spawn } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import path from "node:path";
import type { JWK } from "jose";
import { HMCPClient, createClientCredentialsTokenProvider } from "hmcp";
import { afterAll, describe, expect, it } from "vitest";
import { HttpDriver } from "../fixtures/console-driver.js";
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
    // the JSON line, then the readable banner (which ends with the audit trail's verify line)
    const printed = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        buf += d;
        if (/who viewed what\)\n/.test(buf)) resolve(buf);
      });
      void exited.then((code) => reject(new Error(`demo --serve exited early with ${code}`)));
    });
    const line = printed.slice(0, printed.indexOf("\n"));
    const info = JSON.parse(line) as {
      issuer: string;
      agents: { emrWriteback: { mcp: string; protectedResourceMetadata: string }; patientData: { mcp: string; protectedResourceMetadata: string } };
      clients: string;
      checkpointKeys: string;
      anchors: string;
      console: { url: string; username: string; password: string };
    };
    const meta = (await (await fetch(info.agents.emrWriteback.protectedResourceMetadata)).json()) as { resource: string; authorization_servers: string[] };
    expect(meta.resource).toBe(info.agents.emrWriteback.mcp);
    expect(meta.authorization_servers).toEqual([info.issuer]);
    const discovery = await fetch(`${info.issuer}/.well-known/openid-configuration`);
    expect(discovery.status).toBe(200);
    const noToken = await fetch(info.agents.patientData.mcp, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" }, body: "{}" });
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get("www-authenticate")).toMatch(/^Bearer /);
    // an outside client: the demo clients' keys (owner-only file) get a token, and the token opens a session
    expect((await stat(info.clients)).mode & 0o777).toBe(0o600);
    const registry = JSON.parse(await readFile(info.clients, "utf8")) as { clients: Array<{ clientId: string; scopes: string[]; privateJwk: JWK }> };
    const orchestrator = registry.clients.find((c) => c.clientId === "orchestrator")!;
    const tokens = createClientCredentialsTokenProvider({
      issuer: info.issuer,
      clientId: "orchestrator",
      auth: { type: "private_key_jwt", privateKey: orchestrator.privateJwk },
      scope: orchestrator.scopes,
      resource: info.agents.patientData.mcp,
      allowInsecureRequests: true,
    });
    const client = new HMCPClient({ name: "outside", version: "1" }, { tokenProvider: tokens });
    await client.connect({ type: "http", url: info.agents.patientData.mcp });
    expect(client.serverCapability?.sampling).toBe(true);
    await client.close();
    // the banner names each client's scopes, and its token command and curl work as printed (run by bash)
    expect(printed).toMatch(/^ {2}reader +hmcp:sample hmcp:read system\/\*\.rs$/m);
    const tokenLine = printed.split("\n").find((l) => l.trim().startsWith("TOKEN=$("))!.trim();
    const curlLine = printed.split("\n").find((l) => l.trim().startsWith("curl "))!.trim();
    const answer = execFileSync("bash", ["-c", `set -e\n${tokenLine}\n${curlLine}`], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } });
    expect(answer).toContain('"serverInfo":{"name":"emr-writeback"');
    expect(answer).toContain('"samplingTool":"sampling_createMessage"');
    // the audit console over this run's trail: closed without sign-in; the printed login opens it; "Read the trail
    // again" (a CSRF-protected POST) shows what the agents wrote since it opened
    expect(printed).toContain(`${info.console.url}   sign in as compliance-officer / ${info.console.password}`);
    expect((await fetch(`${info.console.url}/integrity`)).status).toBe(401);
    const officer = new HttpDriver();
    const landing = await officer.signIn(info.console.url, info.console.username, info.console.password);
    expect(landing.status).toBe(200);
    expect(landing.html).toContain("Read the trail again");
    const token = /<form method="post" action="\/reload"><input type="hidden" name="_csrf" value="([^"]+)"/.exec(landing.html)![1]!;
    const before = Number(/([\d,]+) audit records/.exec(landing.html)![1]!.replace(/,/g, ""));
    const reloaded = await officer.post(`${info.console.url}/reload`, { _csrf: token });
    expect(reloaded.status).toBe(200);
    expect(Number(/([\d,]+) audit records/.exec(reloaded.html)![1]!.replace(/,/g, ""))).toBeGreaterThan(before);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const { verifyAuditFiles, expandAuditPaths } = await import("hmcp");
    // the trail verifies with the checkpoint key the line names, and against the anchor of its close checkpoint
    const anchors = (await readFile(info.anchors, "utf8")).trim().split("\n").map((l) => JSON.parse(l) as { chain: string; seq: number; hash: string; why: string });
    expect(anchors.at(-1)).toMatchObject({ chain: "demo", why: "close" });
    const verified = await verifyAuditFiles(await expandAuditPaths([path.dirname(info.clients)]), { publicKey: JSON.parse(await readFile(info.checkpointKeys, "utf8")), anchors });
    expect(verified.ok).toBe(true);
    // the console's own trail (who viewed what) verifies with the line the banner printed, anchors included
    const consoleVerify = printed.split("\n").find((l) => l.includes("who viewed what"))!.trim().replace(/\s+\(the console's own trail.*$/, "");
    const said = execFileSync("bash", ["-c", consoleVerify], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } });
    expect(said).toMatch(/^OK: /);
    expect(said).toContain("checkpoint signatures verified; checked against");
  });
});

describe("demo options given to npm instead of the demo", () => {
  it("`npm run demo --all` (no `--`): exits 2 and says where the option must go, instead of running without it", { timeout: 60_000 }, async () => {
    // npm keeps an option given before "--" for itself and exports it as npm_config_<name>=true
    const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "demo/main.ts")], {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "", npm_lifecycle_event: "demo", npm_config_all: "true", npm_config_audit_dir: "true" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr).toContain("npm run demo -- --all --audit-dir");
  });
});

describe("npm run demo -- --serve, stopped by a signal to npm alone", () => {
  it("SIGTERM to npm stops the agents too (its script execs node); with nothing recorded it prints a verify line that passes", { timeout: 90_000 }, async () => {
    const tmp = await tempDir("hmcp-demo-serve-npm-");
    cleanup.push(tmp.remove);
    // npm in its own process group, and the signal to npm's pid only (not the group, as Ctrl-C would): what a process
    // manager or `kill <pid>` does
    const child = spawn("npm", ["run", "--silent", "demo", "--", "--serve", "--store", path.join(tmp.dir, "emr"), "--audit-dir", path.join(tmp.dir, "audit")], {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (/who viewed what\)\n/.test(out)) {
          clearInterval(timer);
          resolve();
        }
      }, 100);
      void exited.then((code) => {
        clearInterval(timer);
        reject(new Error(`demo --serve exited early with ${code}`));
      });
    });
    const info = JSON.parse(out.slice(0, out.indexOf("\n"))) as { agents: { emrWriteback: { mcp: string; protectedResourceMetadata: string } }; console: { url: string } };
    // serving (the metadata is public and not an audited request)
    expect((await fetch(info.agents.emrWriteback.protectedResourceMetadata)).status).toBe(200);
    // every holder of npm's stdout pipe (npm, the demo) has exited once the pipe closes: before the fix, npm's `sh -c`
    // died of the signal and left tsx and the demo serving, holding the pipe open; and through the tsx CLI, a demo busy
    // for more than tsx's 30 ms relay window was SIGKILLed without closing its trail
    const closed = new Promise<void>((resolve) => child.stdout.on("close", () => resolve()));
    child.kill("SIGTERM");
    // the demo shut down cleanly (exit 0), and npm, which waited for it, reports that
    expect(await exited).toBe(0);
    await closed;
    await expect(fetch(info.agents.emrWriteback.protectedResourceMetadata)).rejects.toThrow();
    await expect(fetch(`${info.console.url}/integrity`)).rejects.toThrow();
    // nothing was recorded: the run says so and gives a verify line for each empty trail, which passes as printed
    const lines = out.split("\n").filter((l) => l.trim().startsWith("npx --no hmcp audit verify") && l.includes("--allow-empty"));
    expect(out, err).toContain("No request reached the agents, so their audit trail is empty");
    expect(lines.length).toBe(2);
    for (const l of lines) {
      const said = execFileSync("bash", ["-c", l.trim()], { cwd: repoRoot, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } });
      expect(said).toMatch(/^OK: /);
    }
  });
});
