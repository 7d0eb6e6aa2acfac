/**
 * The audit console's edges (issue 26), over HTTP on a small trail written through the public API: a failing audit
 * sink refuses pages instead of showing them unrecorded; reloads do not leak views nor cut a download short; the view
 * record names every patient a page showed; odd query shapes and times are refused with 400; a malformed entry is named,
 * not rendered; the downloads stream every row.
 */
import { appendFile, mkdir, readdir } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileAuditSink, generateAuditSigningKey, newAuditRecord, queryAudit, type AuditRecordInput } from "hmcp";
import { openAuditTrail, parseFilter, startAuditConsole, type AuditTrailView } from "hmcp/console";
import { startDevAuthorizationServer, type DevAuthorizationServer } from "hmcp/dev-auth";
import { HttpDriver } from "../fixtures/console-driver.js";
import { tempDir } from "./demo-helpers.js";

let tmp: { dir: string; remove: () => Promise<void> };
let as: DevAuthorizationServer;
let trailDir: string;
const written: AuditRecordInput[] = [];

beforeAll(async () => {
  tmp = await tempDir("hmcp-console-edges-");
  as = await startDevAuthorizationServer({
    resources: [],
    clients: [{ clientId: "console", scopes: ["openid", "profile", "user/AuditEvent.rs"], grantType: "authorization_code" }],
    users: [{ username: "officer", password: "pw", scopes: ["user/AuditEvent.rs"] }],
  });
  trailDir = path.join(tmp.dir, "trail");
  const key = await generateAuditSigningKey();
  const sink = await FileAuditSink.open({ dir: trailDir, prefix: "demo", signing: { privateKey: key.privateJwk } });
  // 2,400 records: patient "p-big" in 1,500 of them (more than the accounting page shows), others in pairs
  for (let i = 0; i < 2400; i++) {
    const r = newAuditRecord({
      type: "request",
      agent: "emr-writeback",
      method: "tools/call",
      outcome: i % 10 === 0 ? "denied" : "allowed",
      ...(i % 10 === 0 && { reason: "insufficient_scope" }),
      actor: { sub: `user-${i % 7}`, clientId: "orchestrator" },
      patients: i % 8 < 5 ? ["p-big", `p-${i % 3}`] : [`p-${i % 3}`],
      time: new Date(Date.UTC(2026, 10, 1) + i * 60_000),
    });
    written.push(r);
    sink.append(r);
  }
  await sink.close();
}, 60_000);

afterAll(async () => {
  await as?.stop();
  await tmp?.remove();
});

async function consoleOn(trail: AuditTrailView | (() => Promise<AuditTrailView>), name: string) {
  const key = await generateAuditSigningKey();
  const viewDir = path.join(tmp.dir, `views-${name}`);
  const views = await FileAuditSink.open({ dir: viewDir, prefix: "console", signing: { privateKey: key.privateJwk } });
  const app = await startAuditConsole({ trail, audit: views, signIn: { issuer: as.issuer, clientId: "console" } });
  as.addRedirectUri("console", app.redirectUri);
  const officer = new HttpDriver();
  expect((await officer.signIn(app.url, "officer", "pw")).status).toBe(200);
  return { app, views, viewDir, officer };
}

describe("the audit console's edges", () => {
  it("refuses every page with 503 once its own audit sink cannot record, and shows nothing unrecorded", async () => {
    const t = await openAuditTrail({ paths: [trailDir] });
    const { app, views, officer } = await consoleOn(t, "sink");
    expect((await officer.open(`${app.url}/activity?patient=p-big`)).status).toBe(200);
    await views.close(); // the sink is gone: append would throw
    const refused = await officer.open(`${app.url}/activity?patient=p-big`);
    expect(refused.status).toBe(503);
    expect(refused.html).not.toContain("p-big");
    expect(refused.html).toContain("cannot record views");
    // the process is still serving (no crash from a record that could not be written)
    expect((await fetch(`${app.url}/static/console.css`)).status).toBe(503);
    await app.close();
    await t.close();
  });

  it("records, for a page of the timeline, every patient the page showed", async () => {
    const t = await openAuditTrail({ paths: [trailDir] });
    const { app, views, viewDir, officer } = await consoleOn(t, "patients");
    const page = await officer.open(`${app.url}/activity?actor=user-3`);
    expect(page.status).toBe(200);
    await views.flush();
    const rec = (await queryAudit([viewDir])).find((r) => r.method === "GET /activity")!;
    const newest50 = written.filter((r) => r.actor.sub === "user-3").slice(-50);
    expect(new Set(rec.patients)).toEqual(new Set(newest50.flatMap((r) => r.patients)));
    await app.close();
    await views.close();
    await t.close();
  });

  it("closes every view it opened, however many reloads run at once, and a download spanning a reload is whole", async () => {
    const opened: AuditTrailView[] = [];
    const closed = new Set<AuditTrailView>();
    const factory = async () => {
      const v = await openAuditTrail({ paths: [trailDir] });
      const close = v.close.bind(v);
      v.close = async () => {
        closed.add(v);
        await close();
      };
      opened.push(v);
      return v;
    };
    const { app, views, officer } = await consoleOn(factory, "reload");
    const integrity = await officer.open(`${app.url}/integrity`);
    const token = /name="_csrf" value="([^"]+)"/.exec(integrity.html)![1]!;
    // a download under way while four reloads are asked for at once
    const csv = officer.open(`${app.url}/accounting.csv?patient=p-big`);
    const reloads = await Promise.all(Array.from({ length: 4 }, () => officer.post(`${app.url}/reload`, { _csrf: token })));
    for (const r of reloads) expect(r.status).toBe(200);
    const rows = (await csv).html.trim().split("\n").slice(1);
    expect(rows.length).toBe(written.filter((r) => r.patients.includes("p-big")).length);
    expect(opened.length).toBeGreaterThan(1);
    await app.close();
    await views.close();
    expect(opened.every((v) => closed.has(v))).toBe(true);
  });

  it("stops reading the trail when the client of a download goes away", async () => {
    const t = await openAuditTrail({ paths: [trailDir] });
    // count the read-backs of the accounting that are under way and that have ended
    let open = 0;
    let ended = 0;
    const records = t.records.bind(t);
    t.records = (filter) =>
      (async function* () {
        open++;
        try {
          yield* records(filter);
        } finally {
          ended++;
        }
      })();
    const { app, views, officer } = await consoleOn(t, "abort");
    for (const kind of ["csv", "fhir.json"]) {
      const stop = new AbortController();
      const res = await fetch(`${app.url}/accounting.${kind}?patient=p-big`, { headers: { cookie: officer.cookiesFor(app.url) }, signal: stop.signal });
      const reader = res.body!.getReader();
      await reader.read();
      stop.abort();
      await reader.cancel().catch(() => {});
    }
    for (let i = 0; i < 100 && ended < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(open).toBe(2);
    expect(ended).toBe(2);
    await app.close();
    await views.close();
    await t.close();
  });

  it("shows at most 1,000 rows of an accounting and says the downloads hold the rest; the FHIR download holds all", async () => {
    const t = await openAuditTrail({ paths: [trailDir] });
    const { app, views, officer } = await consoleOn(t, "cap");
    const big = written.filter((r) => r.patients.includes("p-big"));
    const page = await officer.open(`${app.url}/accounting?patient=p-big`);
    expect([...page.html.matchAll(/<tr class="(allowed|denied)">/g)].length).toBe(1000);
    expect(page.html).toContain(`${big.length.toLocaleString("en")} records; the first 1,000 are shown here, the downloads hold them all`);
    const fhir = await fetch(`${app.url}/accounting.fhir.json?patient=p-big`, { headers: { cookie: officer.cookiesFor(app.url) } });
    const bundle = (await fhir.json()) as { resourceType: string; type: string; entry: Array<{ fullUrl: string; resource: { resourceType: string } }> };
    expect(bundle.type).toBe("collection");
    expect(bundle.entry.map((e) => e.fullUrl)).toEqual(big.map((r) => `urn:uuid:${r.id}`));
    expect(bundle.entry.every((e) => e.resource.resourceType === "AuditEvent")).toBe(true);
    await app.close();
    await views.close();
    await t.close();
  });

  it("refuses odd query shapes and loose times with 400, and names a malformed entry instead of rendering it", async () => {
    const dir = path.join(tmp.dir, "odd");
    await mkdir(dir);
    const key = await generateAuditSigningKey();
    const sink = await FileAuditSink.open({ dir, prefix: "demo", signing: { privateKey: key.privateJwk } });
    sink.append(newAuditRecord({ type: "request", agent: "a", outcome: "allowed", patients: ["p-1"] }));
    await sink.close();
    // an entry appended by hand that is a chain entry but not a valid record (its hash will not verify either)
    const file = path.join(dir, (await readdir(dir)).find((f) => f.endsWith(".jsonl"))!);
    const id = "0b5c2a44-8a39-4e55-9d7e-2f3a4f4e1c11";
    await appendFile(file, `${JSON.stringify({ seq: 99, prev: "0".repeat(64), hash: "0".repeat(64), record: { id, agent: "x", time: "2026-11-02T00:00:00.000Z", type: "request", outcome: "allowed", patients: ["p-1"], actor: {} } })}\n`);
    const t = await openAuditTrail({ paths: [dir] });
    const { app, views, officer } = await consoleOn(t, "odd");
    for (const q of ["patient=a&patient=b", "offset=99999999999999999999", "offset=-1", "since=yesterday", "since=2026-02-31", "until=Nov%201%202026", "since=2026-11-01%2008:00"]) {
      expect((await officer.open(`${app.url}/activity?${q}`)).status, q).toBe(400);
    }
    const unreadable = await officer.open(`${app.url}/records/${id}`);
    expect(unreadable.status).toBe(422);
    expect(unreadable.html).toContain("does not fit the audit record schema");
    const accounting = await officer.open(`${app.url}/accounting?patient=p-1`);
    expect(accounting.html).toContain("1 entry does not fit the audit record schema");
    await app.close();
    await views.close();
    await t.close();
  });
});

describe("the audit console's Integrity page on anchors", () => {
  it("says there is none to check yet before a chain's first checkpoint, and how to check them after one", async () => {
    const dir = path.join(tmp.dir, "live");
    const key = await generateAuditSigningKey();
    const live = await FileAuditSink.open({ dir, prefix: "live", signing: { privateKey: key.privateJwk } });
    live.append(newAuditRecord({ type: "request", agent: "a", outcome: "allowed", patients: ["p-1"] }));
    await live.flush(); // written, no checkpoint yet (a signing sink writes one at its interval or at close)
    const t = await openAuditTrail({ paths: [dir], publicKey: key.publicJwk, allowUnsignedTail: true });
    const { app, views, officer } = await consoleOn(t, "live");
    const before = (await officer.open(`${app.url}/integrity`)).html;
    expect(before).toContain("anchors kept outside the trail: none to check yet");
    expect(before).not.toContain("start the console with --anchors");
    await app.close();
    await views.close();
    await t.close();
    await live.close(); // the close checkpoint: now there is one to anchor, and this console was given no anchors
    const closed = await openAuditTrail({ paths: [dir], publicKey: key.publicJwk });
    const second = await consoleOn(closed, "closed");
    expect((await second.officer.open(`${second.app.url}/integrity`)).html).toContain("anchors kept outside the trail: no (start the console with --anchors to check them)");
    await second.app.close();
    await second.views.close();
    await closed.close();
  });
});

describe("the audit console reading its trail in the background (openInBackground)", () => {
  it("answers at once, says how far the index has come, refuses data until it is ready, then shows the trail", async () => {
    let ready!: () => void;
    const gate = new Promise<void>((r) => (ready = r));
    const factory = async (onProgress: (p: { records: number; bytes?: number; totalBytes?: number }) => void) => {
      onProgress({ records: 1234, bytes: 1 << 20, totalBytes: 4 << 20 });
      await gate;
      return openAuditTrail({ paths: [trailDir] });
    };
    const key = await generateAuditSigningKey();
    const views = await FileAuditSink.open({ dir: path.join(tmp.dir, "views-bg"), prefix: "console", signing: { privateKey: key.privateJwk } });
    const app = await startAuditConsole({ trail: factory, openInBackground: true, audit: views, signIn: { issuer: as.issuer, clientId: "console" } });
    as.addRedirectUri("console", app.redirectUri);
    const officer = new HttpDriver();
    const landing = await officer.signIn(app.url, "officer", "pw");
    expect(landing.status).toBe(200);
    expect(landing.html).toContain("1,234 records read so far (25 % of 4 MiB)");
    expect(landing.html).toContain('http-equiv="refresh"');
    const csv = await fetch(`${app.url}/accounting.csv?patient=p-big`, { headers: { cookie: officer.cookiesFor(app.url) } });
    expect(csv.status).toBe(503);
    // signing out works while the trail is read (the page's own sign-out form)
    const out = await officer.signOut();
    expect(new URL(out.url).pathname).toBe("/signed-out");
    await officer.signIn(app.url, "officer", "pw");
    ready();
    let page = await officer.open(`${app.url}/activity?patient=p-big`);
    for (let i = 0; i < 50 && page.html.includes("Reading the audit trail"); i++) page = await officer.open(`${app.url}/activity?patient=p-big`);
    expect(page.html).toContain(`${written.filter((r) => r.patients.includes("p-big")).length.toLocaleString("en")} matching records`);
    await app.close();
    await views.close();
  });

  it("says on every page when the trail could not be read", async () => {
    const key = await generateAuditSigningKey();
    const views = await FileAuditSink.open({ dir: path.join(tmp.dir, "views-bad"), prefix: "console", signing: { privateKey: key.privateJwk } });
    const app = await startAuditConsole({ trail: () => openAuditTrail({ paths: [path.join(tmp.dir, "no-such-trail")] }), openInBackground: true, audit: views, signIn: { issuer: as.issuer, clientId: "console" } });
    as.addRedirectUri("console", app.redirectUri);
    const officer = new HttpDriver();
    await officer.signIn(app.url, "officer", "pw");
    const page = await officer.open(`${app.url}/activity`);
    expect(page.status).toBe(500);
    expect(page.html).toContain("The console could not read the trail (ENOENT)");
    await app.close();
    await views.close();
  });
});

describe("parseFilter (hmcp/console)", () => {
  it("takes dates and times as UTC, RFC 3339 offsets as given, and nothing looser", () => {
    expect(parseFilter({ since: "2026-11-01", until: "2026-11-01T08:30" })).toEqual({ ok: true, filter: { since: Date.UTC(2026, 10, 1), until: Date.UTC(2026, 10, 1, 8, 30) } });
    expect(parseFilter({ since: "2026-11-01T08:30:00+02:00" })).toEqual({ ok: true, filter: { since: Date.UTC(2026, 10, 1, 6, 30) } });
    for (const bad of ["1", "Nov 1 2026", "2026-02-29", "2026-11-01 08:00", "2026-11-01T25:00"]) expect(parseFilter({ since: bad }).ok, bad).toBe(false);
    expect(parseFilter({ outcome: "maybe" }).ok).toBe(false);
  });
});
