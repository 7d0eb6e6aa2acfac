/**
 * The package as a consumer gets it: `npm pack` of the built dist/ (`npm ci` builds it; run `npm run build` after
 * changing src/), installed from the tarball into a fresh project
 * (dependencies from the npm cache `npm ci` filled, else the registry), then the README's embedding example run as
 * ESM, type-checked as TypeScript with `skipLibCheck: false` (and an import of every public subpath entry), loaded through `require` (Node >= 20.19 loads ES modules
 * synchronously), and every relative link of the shipped README resolved inside the installed package; then the
 * README's first-token path: the installed `hmcp dev-auth-server` (with the optional peer `oidc-provider`), a token for
 * the consumer's own agent, and an authenticated HMCP call.
 */
import { execFileSync, spawn } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
let work: string;
let consumer: string;
let installed: string;

/** The README's "Embedding HMCP" code block, as written there. */
function readmeExample(): string {
  const readme = readFileSync(path.join(repo, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Embedding HMCP"));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error("README has no ts block under 'Embedding HMCP'");
  return m[1]!;
}

const run = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, npm_config_loglevel: "error" } });

/**
 * Type-checks `file` in the consumer project (strict, skipLibCheck: false, NodeNext) with a tsconfig written as
 * `tsconfig`; the compiler's output, "" when clean. The compiler is ours; the types it reads are the consumer's
 * node_modules only.
 */
function typeCheck(file: string, tsconfig: string): string {
  writeFileSync(
    path.join(consumer, tsconfig),
    JSON.stringify({ compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, skipLibCheck: false, noEmit: true }, files: [file] }),
  );
  try {
    return run(process.execPath, [path.join(repo, "node_modules/typescript/bin/tsc"), "-p", tsconfig], consumer);
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? e);
  }
}

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), "hmcp-consumer-"));
  // the dist/ that `npm ci` built (prepare): not rebuilt here, since other test files run the built CLI meanwhile
  run(npm, ["pack", "--ignore-scripts", "--pack-destination", work], repo);
  const tarball = readdirSync(work).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error("npm pack wrote no tarball");
  consumer = path.join(work, "app");
  execFileSync("mkdir", [consumer]);
  writeFileSync(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  run(npm, ["install", path.join(work, tarball), "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], consumer);
  installed = path.join(consumer, "node_modules", "hmcp");
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the packed package in a fresh consumer project", () => {
  it("runs the README's embedding example as ESM", () => {
    writeFileSync(path.join(consumer, "main.mjs"), readmeExample());
    const out = run(process.execPath, ["main.mjs"], consumer);
    expect(out).toContain("written");
  }, 60_000);

  it("type-checks the README's example as TypeScript with skipLibCheck: false and no dev dependency of ours", () => {
    writeFileSync(path.join(consumer, "main.ts"), readmeExample());
    expect(typeCheck("main.ts", "tsconfig.json")).toBe("");
  }, 120_000);

  it("type-checks every public subpath entry (hmcp/dev-auth, hmcp/console) with skipLibCheck: false and without the optional peer oidc-provider", () => {
    // every entry of package.json `exports` but ./package.json, so a new entry needs a line here
    const entries = Object.keys((JSON.parse(readFileSync(path.join(repo, "package.json"), "utf8")) as { exports: Record<string, unknown> }).exports);
    expect(entries).toEqual([".", "./console", "./dev-auth", "./package.json"]);
    expect(existsSync(path.join(consumer, "node_modules", "oidc-provider"))).toBe(false);
    writeFileSync(
      path.join(consumer, "entries.ts"),
      `import { HMCPServer } from "hmcp";
import { startAuditConsole, openAuditTrail, parseFilter } from "hmcp/console";
import type { AuditConsoleOptions } from "hmcp/console";
import { startDevAuthorizationServer, createMemoryAdapter, MemoryStoreFullError } from "hmcp/dev-auth";
import type { DevAuthorizationServerOptions, DevAuthorizationServer, DevClientConfig, DevUserConfig } from "hmcp/dev-auth";
const options: DevAuthorizationServerOptions = { clients: [{ clientId: "me", scopes: ["hmcp:sample"] }], resources: ["http://127.0.0.1:1/mcp"] };
const user: DevUserConfig = { username: "u", password: "p", scopes: [] };
const client: DevClientConfig | undefined = options.clients?.[0];
export const used: unknown[] = [HMCPServer, startAuditConsole, openAuditTrail, parseFilter, createMemoryAdapter, MemoryStoreFullError, user, client];
export type Used = [AuditConsoleOptions, DevAuthorizationServer, ReturnType<typeof startDevAuthorizationServer>];
`,
    );
    expect(typeCheck("entries.ts", "tsconfig.entries.json")).toBe("");
  }, 120_000);

  it("loads through require (ESM-only, required synchronously on Node >= 20.19)", () => {
    const out = run(process.execPath, ["-e", "const h = require('hmcp'); console.log(typeof h.HMCPServer, typeof h.HMCPClient)"], consumer);
    expect(out.trim()).toBe("function function");
  });

  it("ships LICENSE, CHANGELOG and every file the README links to; source maps carry their sources", () => {
    expect(readFileSync(path.join(installed, "LICENSE"), "utf8")).toMatch(/Apache License\s+Version 2\.0/);
    expect(existsSync(path.join(installed, "CHANGELOG.md"))).toBe(true);
    const readme = readFileSync(path.join(installed, "README.md"), "utf8");
    const links = [...readme.matchAll(/\]\(([^)#:\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(5);
    for (const link of links) expect(existsSync(path.join(installed, link)), link).toBe(true);
    const map = JSON.parse(readFileSync(path.join(installed, "dist/src/index.js.map"), "utf8")) as { sources: string[]; sourcesContent?: string[] };
    expect(map.sourcesContent?.length).toBe(map.sources.length);
  });

  it("serves the audit console (hmcp/console) with its pages and assets from the installed package", () => {
    writeFileSync(path.join(consumer, "trail.jsonl"), "");
    writeFileSync(
      path.join(consumer, "console.mjs"),
      `import { openAuditTrail, startAuditConsole } from "hmcp/console";
import { FileAuditSink, generateAuditSigningKey } from "hmcp";
const key = await generateAuditSigningKey();
const audit = await FileAuditSink.open({ dir: "views", prefix: "console", signing: { privateKey: key.privateJwk } });
const app = await startAuditConsole({ trail: await openAuditTrail({ paths: ["trail.jsonl"] }), audit, signIn: { issuer: "http://127.0.0.1:9", clientId: "c" } });
const out = [];
for (const p of ["/integrity", "/static/console.css", "/static/charts.js", "/static/chart.umd.min.js"]) {
  const res = await fetch(app.url + p);
  out.push(p + " " + res.status + " " + (await res.text()).length);
}
await app.close();
await audit.close();
console.log(out.join("\\n"));
`,
    );
    const lines = run(process.execPath, ["console.mjs"], consumer).trim().split("\n");
    // the sign-in page (rendered from the shipped views), then the stylesheet, our script and Chart.js, none empty
    expect(lines.map((l) => l.split(" ").slice(0, 2).join(" "))).toEqual(["/integrity 401", "/static/console.css 200", "/static/charts.js 200", "/static/chart.umd.min.js 200"]);
    for (const l of lines) expect(Number(l.split(" ")[2])).toBeGreaterThan(200);
  }, 60_000);

  it("reaches a first authenticated HMCP call with the installed hmcp dev-auth-server", async () => {
    run(npm, ["install", "oidc-provider", "--save-dev", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], consumer);
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const resource = `http://127.0.0.1:${port}/mcp`;
    const as = spawn(process.execPath, [path.join(consumer, "node_modules/hmcp/bin/hmcp.js"), "dev-auth-server", "--resource", resource, "--client", "me=hmcp:sample", "--format", "json"], {
      cwd: consumer,
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const first = await new Promise<string>((resolve, reject) => {
        let buf = "";
        as.stdout.on("data", (d: Buffer) => {
          buf += d.toString();
          if (buf.includes("\n")) resolve(buf.slice(0, buf.indexOf("\n")));
        });
        as.once("exit", (code) => reject(new Error(`dev-auth-server exited ${code}`)));
      });
      const printed = JSON.parse(first) as { issuer: string; jwksUri: string; clients: Array<{ clientId: string; clientSecret: string }> };
      writeFileSync(
        path.join(consumer, "first-call.mjs"),
        `import { HMCPServer, HMCPClient, createHttpApp, listen, createJwtBearerAuthenticator, createClientCredentialsTokenProvider } from "hmcp";
const [issuer, jwksUri, secret, resource, port] = process.argv.slice(2);
const bearer = createJwtBearerAuthenticator({ issuer, audience: resource, jwks: { uri: jwksUri } });
const agent = () => new HMCPServer({ name: "mine", version: "1.0.0" }).sampling(async () => ({ content: { type: "text", text: "authenticated hello" }, stopReason: "endTurn" }));
const http = await listen(createHttpApp({ createServer: agent, bearer }), { port: Number(port) });
const tokenProvider = createClientCredentialsTokenProvider({ issuer, clientId: "me", auth: { type: "client_secret_basic", clientSecret: secret }, scope: "hmcp:sample", resource, allowInsecureRequests: true });
const client = new HMCPClient({ name: "me", version: "1.0.0" }, { tokenProvider });
await client.connect({ type: "http", url: resource });
console.log((await client.ask("say hello")).content.text);
await client.close();
await http.close();
`,
      );
      const out = run(process.execPath, ["first-call.mjs", printed.issuer, printed.jwksUri, printed.clients[0]!.clientSecret, resource, String(port)], consumer);
      expect(out.trim()).toBe("authenticated hello");
    } finally {
      as.kill("SIGTERM");
    }
  }, 120_000);
});
