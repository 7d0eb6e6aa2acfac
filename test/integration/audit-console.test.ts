/**
 * The compliance console (`hmcp audit serve`, issue 26) end to end: a real demo trail, the development authorization
 * server's compliance-officer login (authorization code + PKCE), and the console's pages, driven in Debian's Chromium
 * when it is installed (playwright-core) or, where it is not, by the same flows over HTTP (the test's name says which:
 * the browser part then did not run).
 */
import { copyFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileAuditSink, generateAuditSigningKey, queryAudit, verifyAuditFiles, type AuditRecordInput } from "hmcp";
import { startDevAuthorizationServer, type DevAuthorizationServer } from "hmcp/dev-auth";
import { runDemo } from "../../demo/run-demo.js";
import { openAuditTrail, startAuditConsole, type AuditConsole } from "hmcp/console";
import { main as hmcp } from "../../src/cli/main.js";
import { ChromiumDriver, chromiumPath, consoleDriver, type ConsoleDriver } from "../fixtures/console-driver.js";
import { tempDir } from "./demo-helpers.js";

const OFFICER = { username: "compliance-officer", password: "officer-pass-1", scopes: ["user/AuditEvent.rs"], name: "Casey Compliance" };
const CLINICIAN = { username: "clinician", password: "clinician-pass-1", scopes: [] as string[], name: "Dr Lee" };
const kind = chromiumPath() ? "in Chromium" : "over HTTP (Chromium not installed: the browser part did not run)";

let tmp: { dir: string; remove: () => Promise<void> };
let as: DevAuthorizationServer;
let trailDir: string;
let keyFile: string;
let anchorsFile: string;
let tamperedDir: string;
let viewDir: string;
let views: FileAuditSink;
let good: AuditConsole;
let bad: AuditConsole;
let driver: ConsoleDriver;
let records: AuditRecordInput[];

beforeAll(async () => {
  tmp = await tempDir("hmcp-console-");
  const { report, ok } = await runDemo({ store: { dataDir: path.join(tmp.dir, "emr") }, auditRoot: path.join(tmp.dir, "audit"), out: null });
  expect(ok).toBe(true);
  trailDir = report.audit.dir;
  keyFile = report.audit.publicKey;
  anchorsFile = report.audit.anchors;
  records = await queryAudit([trailDir]);
  // a tampered copy: one record's outcome changed in place (its entry hash no longer matches)
  tamperedDir = path.join(tmp.dir, "tampered");
  await mkdir(tamperedDir);
  for (const f of await readdir(trailDir)) if (f.endsWith(".jsonl")) await copyFile(path.join(trailDir, f), path.join(tamperedDir, f));
  const file = (await readdir(tamperedDir)).filter((f) => f.endsWith(".jsonl")).sort()[0]!;
  const lines = (await readFile(path.join(tamperedDir, file), "utf8")).split("\n");
  const victim = lines.findIndex((l) => l.includes('"outcome":"denied"'));
  expect(victim).toBeGreaterThan(0);
  lines[victim] = lines[victim]!.replace('"outcome":"denied"', '"outcome":"allowed"');
  await writeFile(path.join(tamperedDir, file), lines.join("\n"));
  (globalThis as { tampered?: { file: string; line: number } }).tampered = { file, line: victim + 1 };

  as = await startDevAuthorizationServer({
    resources: [],
    clients: [{ clientId: "hmcp-audit-console", scopes: ["openid", "profile", "user/AuditEvent.rs"], grantType: "authorization_code" }],
    users: [OFFICER, CLINICIAN],
  });
  viewDir = path.join(tmp.dir, "views");
  const viewKey = await generateAuditSigningKey();
  views = await FileAuditSink.open({ dir: viewDir, prefix: "console", signing: { privateKey: viewKey.privateJwk } });
  const publicKey = JSON.parse(await readFile(keyFile, "utf8")) as Record<string, unknown>;
  const anchors = (await readFile(anchorsFile, "utf8")).split("\n").filter(Boolean).map((l) => JSON.parse(l) as { chain: string; seq: number; hash: string });
  const signIn = { issuer: as.issuer, clientId: "hmcp-audit-console" };
  good = await startAuditConsole({ trail: () => openAuditTrail({ paths: [trailDir], publicKey, anchors }), audit: views, signIn });
  bad = await startAuditConsole({ trail: () => openAuditTrail({ paths: [tamperedDir], publicKey }), audit: views, signIn });
  as.addRedirectUri("hmcp-audit-console", good.redirectUri);
  as.addRedirectUri("hmcp-audit-console", bad.redirectUri);
  driver = await consoleDriver();
}, 120_000);

afterAll(async () => {
  await driver?.close();
  await good?.close();
  await bad?.close();
  await views?.close();
  await as?.stop();
  await tmp?.remove();
});

/** Opens the integrity page until verification has finished (it reloads itself while a chain is being checked). */
/** The patient id of an actor that is a patient (a patient-facing app's user: `Patient/<id>`). */
function patientActor(r: AuditRecordInput): string | undefined {
  return /^(?:.*\/)?Patient\/([A-Za-z0-9\-.]{1,64})$/.exec(r.actor.fhirUser ?? r.actor.sub ?? "")?.[1];
}

/** The patient whose accounting the tests read: one a patient-facing app tried to reach (the demo's refused attempt). */
function accountingPatient(): string {
  for (const r of records) {
    const actor = patientActor(r);
    const other = actor === undefined ? undefined : r.patients.find((p) => p !== actor);
    if (other !== undefined) return other;
  }
  throw new Error("the demo's trail holds no attempt by a patient-facing app on another patient");
}

async function integrity(url: string) {
  for (let i = 0; i < 100; i++) {
    const page = await driver.open(`${url}/integrity`);
    if (!page.html.includes("checking…")) return page;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("verification did not finish");
}

const text = (html: string) => html.replace(/<[^>]+>/g, " ").replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&amp;/g, "&").replace(/\s+/g, " ");

describe(`the audit console ${kind}`, () => {
  it("refuses every page before sign-in, and a user without the audit scope", async () => {
    const before = await driver.open(`${good.url}/activity`);
    expect(before.status).toBe(401);
    expect(text(before.html)).toContain("sign in");
    const api = await fetch(`${good.url}/api/stats`);
    expect(api.status).toBe(401);
    const refused = await driver.signIn(good.url, CLINICIAN.username, CLINICIAN.password);
    expect(refused.status).toBe(403);
    expect(text(refused.html)).toContain("was not granted the scope user/AuditEvent.rs");
    expect((await driver.open(`${good.url}/integrity`)).status).toBe(401);
    // the refusal page offers to sign in as someone else: every sign-in asks the provider to authenticate again
    // (prompt=login), so the officer signs in at the same browser although the clinician's provider session is there
    expect(text(refused.html)).toContain("Sign in as someone else");
  });

  it("signs the compliance officer in and shows the demo trail intact, with what was checked", async () => {
    const landing = await driver.signIn(good.url, OFFICER.username, OFFICER.password);
    expect(landing.status).toBe(200);
    expect(new URL(landing.url).pathname).toBe("/integrity");
    expect(text(landing.html)).toContain("Signed in as Casey Compliance");
    const page = await integrity(good.url);
    const t = text(page.html);
    expect(t).toMatch(/Chain \S+ : intact/);
    expect(t).not.toContain("BROKEN");
    expect(t).toContain("checkpoint signatures: yes");
    expect(t).toContain("anchors kept outside the trail: yes");
    expect(t).toContain(`${records.length.toLocaleString("en")} audit records`);
  });

  it("shows a tampered copy red, naming the file, the line and why", async () => {
    await driver.signIn(bad.url, OFFICER.username, OFFICER.password);
    const page = await integrity(bad.url);
    const t = text(page.html);
    const { file, line } = (globalThis as { tampered?: { file: string; line: number } }).tampered!;
    expect(t).toContain("BROKEN");
    expect(t).toContain(`${file}, line ${line}`);
    expect(t).toContain("[hash_mismatch]");
  });

  it("filters the activity to one patient, every row that patient's, as many as the query finds", async () => {
    const patient = records.flatMap((r) => r.patients)[0]!;
    await driver.open(`${good.url}/activity`);
    const page = await driver.filter({ patient });
    expect(page.status).toBe(200);
    const expected = records.filter((r) => r.patients.includes(patient));
    expect(text(page.html)).toContain(`${expected.length} matching record`);
    const rows = [...page.html.matchAll(/<tr class="(allowed|denied|blocked|failed)">([\s\S]*?)<\/tr>/g)];
    expect(rows.length).toBe(Math.min(expected.length, 50));
    for (const r of rows) expect(r[2]).toContain(patient);
    // a record's detail opens from the timeline
    const id = /href="\/records\/([0-9a-f-]{36})"/.exec(page.html)![1]!;
    const detail = await driver.open(`${good.url}/records/${id}`);
    expect(text(detail.html)).toContain(expected.find((r) => r.id === id)!.digests.request ?? "–");
  });

  it("downloads the accounting of disclosures, whose rows are what `hmcp audit query` finds", async () => {
    const patient = accountingPatient();
    await driver.open(`${good.url}/accounting`);
    await driver.filter({ patient });
    const csv = await driver.download("CSV");
    expect(csv.filename).toBe(`accounting-${patient}.csv`);
    const [header, ...rows] = csv.body.trim().split("\n");
    expect(header).toBe("time,who,client,agent,method,purpose,outcome,reason,record");
    const out: string[] = [];
    expect(await hmcp(["audit", "query", "--patient", patient, "--format", "json", trailDir], { out: (s) => out.push(s), err: () => {} })).toBe(0);
    const queried = out.join("\n").split("\n").filter(Boolean).map((l) => JSON.parse(l) as AuditRecordInput);
    expect(queried.length).toBeGreaterThan(0);
    expect(rows.map((r) => r.split(",").at(-1))).toEqual(queried.map((r) => r.id));
    expect(rows.map((r) => r.split(",")[6])).toEqual(queried.map((r) => r.outcome));
    const fhir = await driver.download("FHIR R4 AuditEvent Bundle");
    const bundle = JSON.parse(fhir.body) as { resourceType: string; entry: Array<{ fullUrl: string }> };
    expect(bundle.resourceType).toBe("Bundle");
    expect(bundle.entry.map((e) => e.fullUrl)).toEqual(queried.map((r) => `urn:uuid:${r.id}`));
  });

  it("draws the pictures from the trail's counts, under a strict Content-Security-Policy, usable with keyboard and on a phone", async () => {
    const page = await driver.open(`${good.url}/pictures`);
    expect(page.status).toBe(200);
    // the refusals table holds the trail's own counts
    const refused = new Map<string, number>();
    for (const r of records) if (r.outcome !== "allowed") refused.set(r.reason ?? "(none)", (refused.get(r.reason ?? "(none)") ?? 0) + 1);
    const table = /<table id="t-reason">[\s\S]*?<\/table>/.exec(page.html)![0];
    const shown = new Map([...table.matchAll(/<tr><td>([^<]+)<\/td><td>(\d+)<\/td><\/tr>/g)].map((m) => [m[1]!, Number(m[2])]));
    expect(shown).toEqual(refused);
    expect(refused.size).toBeGreaterThan(0);
    // headers: no inline script allowed, nothing framed, nothing cached, no referrer
    const res = await fetch(`${good.url}/signed-out`);
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    // no inline script on any page, and every form control has a label
    for (const p of ["/integrity", "/activity", "/pictures", "/accounting"]) {
      const html = (await driver.open(`${good.url}${p}`)).html;
      // scripts come from files; the only script element without one is the Pictures page's JSON data block
      expect(html).not.toMatch(/<script(?![^>]*\b(?:src=|type="application\/json"))[^>]*>/);
      for (const m of html.matchAll(/<(input|select)(?![^>]*type="hidden")[^>]*\bid="([^"]+)"/g)) expect(html, `${p} #${m[2]}`).toContain(`<label for="${m[2]}">`);
    }
    if (driver instanceof ChromiumDriver) {
      const pg = driver.page;
      // Chart.js drew all four charts (the CSP let the console's own scripts run)
      await driver.open(`${good.url}/pictures`);
      await pg.waitForSelector('#charts[data-drawn="true"]');
      expect(await pg.evaluate("[...document.querySelectorAll('canvas')].filter((c) => c.width > 0).length")).toBe(4);
      // the keyboard: the first Tab reaches the skip link, which moves focus to the content
      await pg.keyboard.press("Tab");
      expect(await pg.evaluate("document.activeElement?.textContent")).toBe("Skip to content");
      // legible at 1280x800 and on a phone: nothing wider than the screen
      for (const viewport of [{ width: 1280, height: 800 }, { width: 390, height: 844 }]) {
        await pg.setViewportSize(viewport);
        for (const p of ["/integrity", "/activity", "/accounting"]) {
          await driver.open(`${good.url}${p}`);
          expect(await pg.evaluate("document.documentElement.scrollWidth"), `${p} at ${viewport.width}px`).toBeLessThanOrEqual(viewport.width);
        }
      }
      await pg.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it("refuses a sign-out without the CSRF token, and signs out with it", async () => {
    expect(await driver.postWithoutCsrf(`${good.url}/logout`)).toBe(403);
    const still = await driver.open(`${good.url}/integrity`);
    expect(still.status).toBe(200);
    const out = await driver.signOut();
    expect(new URL(out.url).pathname).toBe("/signed-out");
    expect((await driver.open(`${good.url}/activity`)).status).toBe(401);
  });

  it("records every view in the console's own trail: who looked at which patient, refusals included", async () => {
    await views.flush();
    const seen = await queryAudit([viewDir]);
    const patient = accountingPatient();
    const signIns = seen.filter((r) => r.type === "session.start");
    expect(signIns.filter((r) => r.outcome === "allowed").map((r) => r.actor.sub)).toEqual([OFFICER.username, OFFICER.username]);
    expect(signIns.filter((r) => r.outcome === "denied").map((r) => [r.actor.sub, r.reason])).toEqual([[CLINICIAN.username, "insufficient_scope"]]);
    const accounting = seen.filter((r) => r.type === "view" && r.method === "GET /accounting.csv");
    expect(accounting.length).toBe(1);
    // the patient, and every patient the file shows as "who" (a patient-facing app's user, Patient/<id>)
    const actorPatients = records
      .filter((r) => r.patients.includes(patient))
      .map(patientActor)
      .filter((id): id is string => id !== undefined && id !== patient);
    expect(actorPatients.length).toBeGreaterThan(0);
    expect(accounting[0]!.patients.sort()).toEqual([...new Set([patient, ...actorPatients])].sort());
    expect(accounting[0]!.actor.sub).toBe(OFFICER.username);
    const activity = seen.filter((r) => r.type === "view" && r.method === "GET /activity" && r.outcome === "allowed");
    expect(activity.some((r) => r.patients.includes(patient))).toBe(true);
    expect(seen.some((r) => r.type === "view" && r.outcome === "denied" && r.reason === "no_session")).toBe(true);
    expect(seen.some((r) => r.type === "view" && r.method === "POST /logout" && r.status === 403)).toBe(true);
    expect(seen.filter((r) => r.type === "session.end").map((r) => r.actor.sub)).toEqual([OFFICER.username]);
    expect((await verifyAuditFiles((await readdir(viewDir)).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(viewDir, f)))).ok).toBe(true);
  });
});
