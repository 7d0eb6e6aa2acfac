/**
 * `hmcp audit serve` (issue 26): its refusals of bad command lines (exit 2, before anything listens), and a run over a
 * file trail (and, where PostgreSQL is installed, over the PostgreSQL sink's table by `--database-url`) that a
 * compliance officer signs in to, whose own trail of views verifies with the key file it writes.
 */
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileAuditSink, generateAuditSigningKey, newAuditRecord, PostgresAuditSink, queryAudit, verifyAuditFiles, expandAuditPaths } from "hmcp";
import { startDevAuthorizationServer, type DevAuthorizationServer } from "hmcp/dev-auth";
import { main as hmcp } from "../../src/cli/main.js";
import { serve } from "../../src/cli/audit-serve.js";
import { HttpDriver } from "../fixtures/console-driver.js";
import { startTestDatabase, testDatabaseKinds } from "../fixtures/postgres.js";
import { tempDir } from "./demo-helpers.js";

let tmp: { dir: string; remove: () => Promise<void> };
let as: DevAuthorizationServer;
const PATIENTS = ["pat-1", "pat-2"];

function records() {
  return Array.from({ length: 12 }, (_, i) =>
    newAuditRecord({
      type: "request",
      agent: i % 2 ? "emr-writeback" : "patient-data",
      method: i % 3 ? "tools/call" : "sampling/createMessage",
      outcome: i % 4 === 0 ? "denied" : "allowed",
      ...(i % 4 === 0 && { reason: "insufficient_scope" }),
      actor: { sub: `user-${i % 3}`, clientId: "orchestrator" },
      patients: [PATIENTS[i % 2]!],
      time: new Date(Date.UTC(2026, 10, 1, i)),
    }),
  );
}

/** A signed file trail of {@link records} in `<tmp>/<name>`. */
async function writeTrail(name: string): Promise<string> {
  const dir = path.join(tmp.dir, name);
  const key = await generateAuditSigningKey();
  const sink = await FileAuditSink.open({ dir, prefix: "demo", signing: { privateKey: key.privateJwk } });
  for (const r of records()) sink.append(r);
  await sink.close();
  return dir;
}

beforeAll(async () => {
  tmp = await tempDir("hmcp-cli-serve-");
  as = await startDevAuthorizationServer({
    resources: [],
    clients: [{ clientId: "console", scopes: ["openid", "profile", "user/AuditEvent.rs"], grantType: "authorization_code" }],
    users: [{ username: "officer", password: "pw-officer", scopes: ["user/AuditEvent.rs"] }],
  });
});
afterAll(async () => {
  await as?.stop();
  await tmp?.remove();
});

async function run(argv: string[]): Promise<{ code: number; err: string }> {
  const err: string[] = [];
  const code = await hmcp(["audit", "serve", ...argv], { out: () => {}, err: (s) => err.push(s) });
  return { code, err: err.join("\n") };
}

describe("hmcp audit serve: refused command lines (exit 2)", () => {
  it("needs a trail, exactly one kind of it, an issuer and a client id, and TLS files in pairs", async () => {
    const trail = path.join(tmp.dir, "none");
    expect(await run(["--issuer", as.issuer, "--client-id", "console"])).toMatchObject({ code: 2, err: expect.stringContaining("no trail given") });
    expect(await run([trail, "--database-url", "postgres://x@127.0.0.1/db", "--issuer", as.issuer, "--client-id", "console"])).toMatchObject({ code: 2, err: expect.stringContaining("not both") });
    const noIssuer = await run([trail]);
    expect(noIssuer).toMatchObject({ code: 2, err: expect.stringContaining("--issuer and --client-id are required") });
    // the hint names only what signs someone in: the demo's console (hmcp dev-auth-server registers no users)
    expect(noIssuer.err).toContain("npm run demo -- --serve");
    expect(noIssuer.err).not.toContain("dev-auth-server");
    expect(await run([trail, "--issuer", as.issuer, "--client-id", "console", "--tls-cert", "c.pem"])).toMatchObject({ code: 2, err: expect.stringContaining("go together") });
    expect(await run([trail, "--issuer", as.issuer, "--client-id", "console", "--port", "70000"])).toMatchObject({ code: 2, err: expect.stringContaining("--port") });
    expect(await run([trail, "--issuer", as.issuer, "--client-id", "console"])).toMatchObject({ code: 2, err: expect.stringContaining("no such file or directory") });
  });
});

/** Starts `serve` until aborted, signs in, returns the pages' HTML and the view trail's folder. */
async function serveAndLook(args: string[], name: string): Promise<{ activity: string; accounting: string; viewDir: string; code: number }> {
  const viewDir = path.join(tmp.dir, `views-${name}`);
  const out: string[] = [];
  const stop = new AbortController();
  let announce!: (s: string) => void;
  const printed = new Promise<string>((resolve) => (announce = resolve));
  const io = {
    out: (s: string) => {
      out.push(s);
      announce(s);
    },
    err: (s: string) => out.push(s),
  };
  const exit = serve([...args, "--issuer", as.issuer, "--client-id", "console", "--view-audit", viewDir], io, stop.signal);
  const banner = await Promise.race([printed, exit.then((c) => Promise.reject(new Error(`serve exited ${c}: ${out.join("\n")}`)))]);
  const url = /HMCP audit console: (\S+)/.exec(banner)![1]!;
  const redirect = /register this redirect URI at your OpenID provider: (\S+)/.exec(banner)![1]!;
  expect(redirect).toBe(`${url}/callback`);
  as.addRedirectUri("console", redirect);
  const officer = new HttpDriver();
  expect((await officer.signIn(url, "officer", "pw-officer")).status).toBe(200);
  // the trail is read in the background: the pages say so until it is ready
  for (let i = 0; i < 100 && (await officer.open(`${url}/integrity`)).html.includes("Reading the audit trail"); i++) await new Promise((r) => setTimeout(r, 100));
  const activity = (await officer.open(`${url}/activity?outcome=denied`)).html;
  const accounting = (await officer.open(`${url}/accounting?patient=pat-2`)).html;
  stop.abort();
  return { activity, accounting, viewDir, code: await exit };
}

describe("hmcp audit serve: a run", () => {
  it("serves a file trail to a signed-in officer until stopped, and its own trail of views verifies", async () => {
    const dir = await writeTrail("trail");
    const { activity, accounting, viewDir, code } = await serveAndLook([dir], "files");
    expect(code).toBe(0);
    expect(activity).toContain("3 matching records");
    expect([...accounting.matchAll(/<tr class="(allowed|denied)">/g)].length).toBe(6);
    // the console's own trail: a sign-in, the landing page and the two views, signed with the key whose public half it wrote beside them
    const views = await queryAudit([viewDir]);
    const seen = views.map((r) => `${r.type} ${r.method}`);
    expect(seen[0]).toBe("session.start GET /callback");
    expect(seen.slice(1, -2).every((v) => v === "view GET /integrity")).toBe(true);
    expect(seen.slice(-2)).toEqual(["view GET /activity", "view GET /accounting"]);
    expect(views.at(-1)!.patients).toEqual(["pat-2"]);
    const verified = await verifyAuditFiles(await expandAuditPaths([viewDir]), { publicKey: JSON.parse(await (await import("node:fs/promises")).readFile(path.join(viewDir, "checkpoint-keys.jwks.json"), "utf8")) });
    expect(verified.ok).toBe(true);
    expect(verified.signaturesChecked).toBe(true);
  });

  it("signs its own trail with a kept key (--view-key) and writes its checkpoint anchors outside it (--view-anchors)", async () => {
    const dir = await writeTrail("trail-kept");
    const { writeFile, readFile } = await import("node:fs/promises");
    const viewKey = await generateAuditSigningKey();
    const keyFile = path.join(tmp.dir, "view-key.jwk");
    await writeFile(keyFile, JSON.stringify(viewKey.privateJwk), { mode: 0o600 });
    const anchorsFile = path.join(tmp.dir, "view-anchors.jsonl");
    // a missing key file, or a public key, is refused: the console signs with it
    expect(await run([dir, "--issuer", as.issuer, "--client-id", "console", "--view-key", path.join(tmp.dir, "pub.jwk")])).toMatchObject({ code: 2, err: expect.stringContaining("no such file") });
    await writeFile(path.join(tmp.dir, "pub.jwk"), JSON.stringify(viewKey.publicJwk));
    expect(await run([dir, "--issuer", as.issuer, "--client-id", "console", "--view-key", path.join(tmp.dir, "pub.jwk")])).toMatchObject({ code: 2, err: expect.stringContaining("PRIVATE key") });
    const { viewDir, code } = await serveAndLook([dir, "--view-key", keyFile, "--view-anchors", anchorsFile], "kept");
    expect(code).toBe(0);
    // no key file beside the trail: the operator holds the public half
    expect(await readFile(path.join(viewDir, "checkpoint-keys.jwks.json"), "utf8").catch(() => "absent")).toBe("absent");
    const anchors = (await readFile(anchorsFile, "utf8")).trim().split("\n").map((l) => JSON.parse(l) as { chain: string; seq: number; hash: string; why: string });
    expect(anchors.at(-1)).toMatchObject({ why: "close" });
    const verified = await verifyAuditFiles(await expandAuditPaths([viewDir]), { publicKey: viewKey.publicJwk, anchors });
    expect(verified.ok).toBe(true);
    expect(verified.signaturesChecked).toBe(true);
  });

  for (const kind of testDatabaseKinds().filter((k) => k === "postgresql")) {
    it(`serves the PostgreSQL sink's table by --database-url (${kind})`, async () => {
      const db = await startTestDatabase(kind);
      try {
        const key = await generateAuditSigningKey();
        const sink = await PostgresAuditSink.open({ db: db.db, instanceId: "emr-1", signing: { privateKey: key.privateJwk } });
        for (const r of records()) sink.append(r);
        await sink.close();
        const { activity, accounting, code } = await serveAndLook(["--database-url", db.url!], "pg");
        expect(code).toBe(0);
        expect(activity).toContain("3 matching records");
        expect([...accounting.matchAll(/<tr class="(allowed|denied)">/g)].length).toBe(6);
      } finally {
        await db.close();
      }
    });
  }
});
