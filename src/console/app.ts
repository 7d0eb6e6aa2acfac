/**
 * The compliance officer's console (`hmcp audit serve`, issue 26): a read-only web console over an audit trail.
 *
 * Pages (server-rendered, Eta templates in `src/console/views/`, no inline script):
 * - `/integrity` (the first page): each chain's status, what was checked, where it breaks and why, the last checkpoint;
 * - `/activity`: the filterable, paginated timeline (newest first) and `/records/<id>`, one record's detail;
 * - `/pictures`: requests per hour by outcome, refusals by reason, guardrail blocks by guardrail, top actors of a
 *   patient, drawn by Chart.js from `/api/stats`, each with a table of the same figures;
 * - `/accounting`: the accounting of disclosures for one patient over a date range (HIPAA 45 CFR 164.528), with
 *   `/accounting.csv` and `/accounting.fhir.json` (the FHIR R4 AuditEvent Bundle `hmcp audit export` writes).
 *
 * Access: never open. Every page needs a session, which only an OpenID Connect sign-in (./sign-in.ts) whose grant holds
 * the audit-read scope opens. Sessions live in a sealed cookie (`HttpOnly`, `SameSite=Lax`, `Secure` when served over
 * TLS or behind an https `publicUrl`), 30 min by default; the state-changing request (sign-out) needs the CSRF token
 * (double submit, csrf-csrf, bound to the session). Security headers by helmet, with a strict Content-Security-Policy
 * (`script-src 'self'`, no inline script or style).
 *
 * Every view is itself an audit record (type `view`, in the console's own trail `audit`): who looked, at which page,
 * which patients it named, and the HTTP status. Sign-ins are `session.start` records (a refused one `denied` with its
 * reason), sign-outs `session.end`.
 */
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import cookieParser from "cookie-parser";
import { doubleCsrf } from "csrf-csrf";
import { stringify as csvStream } from "csv-stringify";
import { Eta } from "eta";
import express, { type NextFunction, type Request, type Response } from "express";
import helmet from "helmet";
import { contentDigest } from "../audit/canonical-json.js";
import { toAuditEvent } from "../audit/fhir.js";
import { newAuditRecord } from "../audit/new-record.js";
import { AuditOutcomeSchema, StoredAuditRecordSchema, type AuditRecordInput, type AuditSink } from "../audit/record.js";
import { FHIR_ID_SOURCE } from "../protocol/fhir-id.js";
import { ConsoleSignIn, CookieSeal, type ConsoleSignInOptions, type ConsoleUser, type PendingSignIn } from "./sign-in.js";
import type { TrailProgress } from "./trail-sources.js";
import type { ActivityFilter, AuditTrailView, LocatedRecord } from "./trail-types.js";

/** Options of {@link startAuditConsole}. */
export interface AuditConsoleOptions {
  /**
   * The trail to show: a view (`openAuditTrail`), which the console does not close, or a function that opens one. With
   * a function, the Integrity page offers "Read the trail again" (a POST, CSRF-protected), which opens a new view of a
   * trail that is still being written and closes the old one; the console closes the last one on `close`.
   */
  trail: AuditTrailView | ((onProgress: (progress: TrailProgress) => void) => Promise<AuditTrailView>);
  /**
   * With a `trail` function: listen at once and read the trail in the background, the pages saying how far it has come
   * until it is ready (a large trail takes seconds per million records to index). Default false: `startAuditConsole`
   * resolves once the trail is read. A failure to read it is then shown on every page (and written to stderr).
   */
  openInBackground?: boolean;
  /** The organisation's OpenID provider and the console's client there. */
  signIn: ConsoleSignInOptions;
  /** Where the console records every view, sign-in and sign-out (its own trail, not the one it shows). */
  audit: AuditSink;
  /** Interface to listen on. Default `127.0.0.1` (loopback only). */
  host?: string;
  /** TCP port. Default 0 (any free port). */
  port?: number;
  /** Serve https with this certificate and key (PEM). Cookies are then `Secure` and HSTS is sent. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * The console's URL as the browser sees it, when a TLS-terminating proxy is in front (e.g.
   * `https://audit.example.org`). Sets the redirect URI and, when https, `Secure` cookies. Default: the URL it listens on.
   */
  publicUrl?: string;
  /** Session lifetime, seconds. Default 1,800 (30 min). */
  sessionTtlSec?: number;
  /** The console's name in its own audit records (`agent`). Default `hmcp-audit-console`. */
  agent?: string;
  /** Purpose of use shown in the accounting, by method (e.g. `{"tools/call": "treatment"}`). Default: the method itself. */
  purposes?: Record<string, string>;
  /** Rows per activity page. Default 50, at most 500. */
  pageSize?: number;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
}

/** A running console. */
export interface AuditConsole {
  /** The console's URL (`publicUrl` when given). */
  url: string;
  /** The redirect URI to register at the provider: `<url>/callback`. */
  redirectUri: string;
  /** Stops listening; does not close the trail or the audit sink. */
  close(): Promise<void>;
}

// Cookie names carry the console's port: browsers share cookies between ports of one host, and two consoles on one
// machine (the demo's and another) must not overwrite each other's sessions.
const cookieNames = (port: number) => ({ session: `hmcp-console-${port}.session`, login: `hmcp-console-${port}.login`, csrf: `hmcp-console-${port}.csrf` });
const LOGIN_TTL_SEC = 600;

type Authed = Request & {
  user?: ConsoleUser;
  /** The patients the answer named (recorded in the view's audit record). */
  viewPatients?: Set<string>;
  /** The trail view this request reads (a reload swaps the console's view; this one stays open until the request ends). */
  trail?: AuditTrailView;
  /** Set when the request's own record was written by its handler (sign-out), so the view record is not added. */
  recorded?: boolean;
  /** The request failed its CSRF check. */
  csrfRefused?: boolean;
};

/** An actor that is a patient: a FHIR reference `Patient/<id>` (relative or absolute) as `fhirUser` or `sub`. */
const PATIENT_ACTOR = new RegExp(`^(?:.*/)?Patient/(${FHIR_ID_SOURCE})$`);

/** Most rows the accounting page shows (the downloads hold them all). */
const ACCOUNTING_PAGE_ROWS = 1000;
/** Largest activity offset accepted. */
const MAX_OFFSET = 1_000_000_000;

/**
 * The package's `src/console/<sub>` folder (views, static files): walks up from this module to the folder holding
 * package.json and it (works from src/ under tsx and vitest, and from dist/src/ after a build).
 */
function packageDir(sub: string): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "src", "console", sub);
    if (existsSync(path.join(dir, "package.json")) && existsSync(candidate)) return candidate;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`hmcp: cannot find src/console/${sub} above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/**
 * Starts the console (see the module comment for its pages and access control).
 * @throws Error when the port is in use, the issuer is plain http and not loopback, or `publicUrl` is not a URL
 */
export async function startAuditConsole(options: AuditConsoleOptions): Promise<AuditConsole> {
  const now = options.now ?? Date.now;
  const agent = options.agent ?? "hmcp-audit-console";
  const pageSize = Math.min(Math.max(options.pageSize ?? 50, 1), 500);
  const ttl = options.sessionTtlSec ?? 1800;
  const signIn = new ConsoleSignIn(options.signIn);
  const seal = new CookieSeal(randomBytes(32));
  const csrfSecret = randomBytes(32).toString("base64url");
  const reopen = typeof options.trail === "function" ? options.trail : undefined;
  // The current view, the requests reading each view, and the views a reload retired (closed once no request reads them).
  let trail: AuditTrailView | undefined;
  let progress: TrailProgress = { records: 0 };
  let openError: string | undefined;
  const first = reopen ? reopen((p) => (progress = p)) : Promise.resolve(options.trail as AuditTrailView);
  if (options.openInBackground && reopen) {
    first.then(
      (v) => (trail = v),
      (e: unknown) => {
        openError = (e as NodeJS.ErrnoException).code ?? "error";
        process.stderr.write(`hmcp audit console: the trail could not be read (${openError})\n`);
      },
    );
  } else trail = await first;
  const readers = new Map<AuditTrailView, number>();
  const retired = new Set<AuditTrailView>();
  let reloading: Promise<void> | undefined;
  let closing = false;
  const release = (view: AuditTrailView): void => {
    const n = (readers.get(view) ?? 1) - 1;
    if (n > 0) return void readers.set(view, n);
    readers.delete(view);
    if (retired.delete(view)) void view.close().catch(() => {});
  };
  // requests admitted and not yet recorded: the audit sink must have room for all of their records
  let unrecorded = 0;
  const eta = new Eta({ views: packageDir("views"), cache: true, autoEscape: true });
  const staticDir = packageDir("static");
  const chartJs = path.join(path.dirname(fileURLToPath(import.meta.resolve("chart.js"))), "chart.umd.min.js");

  // the URL is known once listening; the redirect URI and cookie flags depend on it
  const site = { url: "", secure: false, cookies: cookieNames(0) };
  const redirectUri = (): string => `${site.url}/callback`;

  const cookieOpts = (maxAgeSec: number) => ({ httpOnly: true, sameSite: "lax" as const, secure: site.secure, path: "/", maxAge: maxAgeSec * 1000 });

  // built once the port (and so the cookie's name) and the scheme (its Secure flag) are known: csrf-csrf reads them once
  const csrf: { current?: ReturnType<typeof doubleCsrf> } = {};
  const makeCsrf = () =>
    doubleCsrf({
      getSecret: () => csrfSecret,
      getSessionIdentifier: (req) => (req as Authed).user?.sid ?? "",
      cookieName: site.cookies.csrf,
      cookieOptions: { sameSite: "strict", path: "/", httpOnly: true, secure: site.secure },
      getCsrfTokenFromRequest: (req) => {
        const v = (req.body as Record<string, unknown> | undefined)?.["_csrf"];
        return typeof v === "string" ? v : undefined;
      },
    });
  const generateCsrfToken = (req: Request, res: Response): string => csrf.current!.generateCsrfToken(req, res);
  const doubleCsrfProtection = (req: Request, res: Response, next: NextFunction): void => csrf.current!.doubleCsrfProtection(req, res, next);

  /** Appends one record to the console's own trail. Never throws: a failing sink is refused at the next request's gate. */
  const record = (req: Request, draft: Partial<AuditRecordInput> & Pick<AuditRecordInput, "type" | "outcome">, started: number): void => {
    const user = (req as Authed).user;
    try {
      appendRecord(req, user, draft, started);
    } catch {
      // fixed text, no request detail: the sink's own error says what failed; the gate refuses further requests
      process.stderr.write("hmcp audit console: a view could not be recorded (audit sink refused it); requests are refused until it recovers\n");
    }
  };
  const appendRecord = (req: Request, user: ConsoleUser | undefined, draft: Partial<AuditRecordInput> & Pick<AuditRecordInput, "type" | "outcome">, started: number): void => {
    options.audit.append(
      newAuditRecord(
        {
          agent,
          transport: "http",
          actor: { ...(user && { sub: user.sub }), clientId: options.signIn.clientId },
          source: req.socket.remoteAddress !== undefined ? { address: req.socket.remoteAddress } : {},
          scopes: user?.scopes ?? [],
          latencyMs: Math.max(0, now() - started),
          digests: { request: contentDigest({ path: req.path, query: req.query }) },
          ...draft,
        },
        now,
      ),
    );
  };

  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", false);
  // security headers: built once per scheme (HSTS and upgrade-insecure-requests only over https), not per request
  const headers = (secure: boolean) =>
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          "default-src": ["'none'"],
          "script-src": ["'self'"],
          "style-src": ["'self'"],
          "img-src": ["'self'"],
          "connect-src": ["'none'"],
          "form-action": ["'self'"],
          "base-uri": ["'none'"],
          "frame-ancestors": ["'none'"],
          ...(secure && { "upgrade-insecure-requests": [] }),
        },
      },
      strictTransportSecurity: secure ? { maxAge: 31_536_000 } : false,
      referrerPolicy: { policy: "no-referrer" },
    });
  const plainHeaders = headers(false);
  const secureHeaders = headers(true);
  app.use((req, res, next) => (site.secure ? secureHeaders : plainHeaders)(req, res, next));
  app.use((_req, res, next) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });
  app.use(cookieParser());
  app.use(express.urlencoded({ extended: false, limit: "4kb" }));

  // Nothing is shown that could not be recorded: the sink must have room for the record of this request and of every
  // request admitted before it (the AuditSink contract, as the MCP pipeline uses it); else 503 before anything is read.
  app.use((_req, res, next) => {
    try {
      options.audit.assertWritable?.(unrecorded + 1);
    } catch {
      res.status(503).setHeader("Retry-After", "5");
      return void res.type("text/plain").send("the audit console cannot record views right now, so it shows nothing; try again shortly\n");
    }
    unrecorded++;
    res.once("close", () => unrecorded--);
    next();
  });

  app.get("/favicon.ico", (_req, res) => void res.status(204).end());
  app.get("/static/console.css", (_req, res) => res.sendFile(path.join(staticDir, "console.css")));
  app.get("/static/charts.js", (_req, res) => res.sendFile(path.join(staticDir, "charts.js")));
  app.get("/static/chart.umd.min.js", (_req, res) => res.sendFile(chartJs));

  // sign-in
  app.get("/login", async (_req, res, next) => {
    try {
      const { url, pending } = await signIn.start(redirectUri());
      res.cookie(site.cookies.login, await seal.seal(pending, LOGIN_TTL_SEC, "login"), cookieOpts(LOGIN_TTL_SEC));
      res.redirect(303, url.href);
    } catch (e) {
      next(e);
    }
  });
  app.get("/callback", async (req, res) => {
    const started = now();
    const pending = await seal.open<PendingSignIn>(req.cookies?.[site.cookies.login], "login");
    res.clearCookie(site.cookies.login, { path: "/" });
    if (!pending) {
      record(req, { type: "session.start", outcome: "denied", reason: "invalid_callback", status: 400, method: "GET /callback" }, started);
      return render(res, 400, "message", { title: "Sign-in expired", message: "The sign-in took too long or was not started here. Please sign in again.", signInLink: true });
    }
    const result = await signIn.finish(new URL(req.originalUrl, site.url), redirectUri(), pending, () => randomBytes(16).toString("base64url"));
    if (!result.ok) {
      record(
        req,
        { type: "session.start", outcome: "denied", reason: result.reason, status: result.status, method: "GET /callback", actor: { ...(result.sub && { sub: result.sub }), clientId: options.signIn.clientId }, scopes: result.scopes ?? [] },
        started,
      );
      return render(res, result.status, "message", { title: result.reason === "insufficient_scope" ? "Not authorised" : "Sign-in failed", message: result.message, signInLink: true, signInText: result.reason === "insufficient_scope" ? "Sign in as someone else" : undefined });
    }
    (req as Authed).user = result.user;
    record(req, { type: "session.start", outcome: "allowed", status: 303, method: "GET /callback" }, started);
    res.cookie(site.cookies.session, await seal.seal(result.user, ttl, "session"), cookieOpts(ttl));
    res.redirect(303, "/integrity");
  });

  app.get("/signed-out", (req, res) => render(res, 200, "message", { title: "Signed out", message: "You are signed out of the audit console.", signInLink: true, nav: req.path }));

  // everything below needs a session
  app.use(async (req, res, next) => {
    const user = await seal.open<ConsoleUser>(req.cookies?.[site.cookies.session], "session");
    if (user && Array.isArray(user.scopes) && user.scopes.includes(signIn.requiredScope)) {
      (req as Authed).user = { sub: user.sub, scopes: user.scopes, sid: user.sid, ...(user.name !== undefined && { name: user.name }) };
      return next();
    }
    // an API call or a non-GET gets a status it can act on; a page view goes to sign-in
    record(req, { type: "view", outcome: "denied", reason: "no_session", status: 401, method: `${req.method} ${req.path}` }, now());
    if (req.method === "GET" && !req.path.startsWith("/api/") && !/\.(csv|json)$/.test(req.path)) return render(res, 401, "message", { title: "Sign in", message: "The audit console needs you to sign in with your organisation's account.", signInLink: true });
    res.status(401).type("text/plain").send("sign-in required\n");
  });

  // every view below is audited once, when its answer has been sent (or the connection closed), naming the patients
  // it showed; it reads the view that was current when it arrived, even if a reload swaps it meanwhile
  app.use((req, res, next) => {
    const started = now();
    const a = req as Authed;
    a.viewPatients = new Set();
    a.trail = trail;
    if (trail) readers.set(trail, (readers.get(trail) ?? 0) + 1);
    res.once("close", () => {
      if (a.trail) release(a.trail);
      if (a.recorded) return;
      const status = res.statusCode;
      const reason = status < 400 ? undefined : a.csrfRefused ? "invalid_csrf_token" : status === 400 ? "bad_request" : status === 404 ? "not_found" : status >= 500 ? "internal_error" : "refused";
      // an answer cut off before it was complete (a closed connection) is recorded as failed
      const outcome = status >= 500 || !res.writableFinished ? "failed" : status >= 400 ? "denied" : "allowed";
      record(req, { type: "view", outcome, ...(reason !== undefined && { reason }), ...(!res.writableFinished && status < 400 && { reason: "incomplete" }), status, method: `${req.method} ${req.path}`, patients: [...a.viewPatients!] }, started);
    });
    next();
  });
  const view = (req: Request): AuditTrailView => (req as Authed).trail!;
  app.post("/logout", doubleCsrfProtection, (req, res) => {
    (req as Authed).recorded = true;
    record(req, { type: "session.end", outcome: "allowed", status: 303, method: "POST /logout" }, now());
    res.clearCookie(site.cookies.session, { path: "/" });
    res.redirect(303, "/signed-out");
  });

  // until the trail has been read (openInBackground): a page that says how far, reloading itself; other requests 503
  app.use((req, res, next) => {
    if ((req as Authed).trail) return next();
    if (req.method === "GET" && !req.path.startsWith("/api/") && !/\.(csv|json)$/.test(req.path)) {
      const user = (req as Authed).user!;
      const done = progress.totalBytes ? ` (${Math.floor((100 * (progress.bytes ?? 0)) / progress.totalBytes)} % of ${(progress.totalBytes / 1048576).toFixed(0)} MiB)` : "";
      return render(res, openError ? 500 : 200, "message", {
        title: openError ? "The trail could not be read" : "Reading the audit trail",
        message: openError ? `The console could not read the trail (${openError}). Check the paths or the database, then restart it.` : `${progress.records.toLocaleString("en")} records read so far${done}. This page reloads itself every few seconds until the trail is ready.`,
        refresh: openError ? undefined : 3,
        user: user.name ?? user.sub,
        csrf: generateCsrfToken(req, res),
        nav: req.path,
      });
    }
    res.status(503).setHeader("Retry-After", "3");
    res.type("text/plain").send(openError ? "the audit trail could not be read\n" : "the audit trail is still being read\n");
  });
  const shown = (req: Request, patients: Iterable<string>): void => {
    for (const p of patients) (req as Authed).viewPatients!.add(p);
  };
  /**
   * A record shown: the actor when the actor is a patient (a patient-facing app's user, `fhirUser` or `sub`
   * "Patient/<id>": a page that shows another patient's id as "who" shows that patient too), and with `patients` (a
   * page or file that lists them) its patients.
   */
  const shownRecord = (req: Request, r: { patients?: unknown; actor?: string | { sub?: string; fhirUser?: string } }, patients = true): void => {
    if (patients && Array.isArray(r.patients)) shown(req, r.patients.filter((p): p is string => typeof p === "string"));
    const actors = typeof r.actor === "string" ? [r.actor] : [r.actor?.fhirUser, r.actor?.sub];
    for (const a of actors) {
      const id = typeof a === "string" ? PATIENT_ACTOR.exec(a)?.[1] : undefined;
      if (id !== undefined) shown(req, [id]);
    }
  };

  const page = (res: Response, req: Request, view: string, data: Record<string, unknown>): void => {
    const user = (req as Authed).user!;
    render(res, 200, view, { ...data, user: user.name ?? user.sub, csrf: generateCsrfToken(req, res), nav: req.path });
  };
  function render(res: Response, status: number, view: string, data: Record<string, unknown>): void {
    const user = (res.req as Authed).user;
    if (data["user"] !== undefined && user) data = { ...data, user: user.name ?? user.sub };
    res.status(status).type("html").send(eta.render(view, { nav: "", user: undefined, csrf: undefined, ...data }));
  }

  app.get("/", (_req, res) => res.redirect(303, "/integrity"));
  app.get("/integrity", (req, res) => {
    const t = view(req);
    const chains = t.integrity();
    const was = typeof req.query["was"] === "string" && /^\d{1,12}$/.test(req.query["was"]) ? Number(req.query["was"]) : undefined;
    page(res, req, "integrity", { title: "Integrity", chains, age: ageInWords, reloadable: reopen !== undefined, pending: chains.some((c) => c.status === "pending"), size: t.size, was });
  });

  app.get("/activity", async (req, res, next) => {
    try {
      const parsed = parseFilter(req.query);
      if (!parsed.ok) return badRequest(req, res, parsed.message);
      const filter = parsed.filter;
      const rawOffset = req.query["offset"] ?? "0";
      if (typeof rawOffset !== "string" || !/^\d{1,10}$/.test(rawOffset) || Number(rawOffset) > MAX_OFFSET) return badRequest(req, res, "'offset' must be a whole number of rows.");
      const t = view(req);
      const result = await t.activity(filter, { offset: Number(rawOffset), limit: pageSize });
      if (filter.patient !== undefined) shown(req, [filter.patient]);
      for (const row of result.rows) shownRecord(req, row);
      const base = filterQuery(req.query);
      page(res, req, "activity", { title: "Activity", result, q: formValues(req.query), facets: t.facets(), pageSize, base, outcomes: AuditOutcomeSchema.options });
    } catch (e) {
      next(e);
    }
  });

  app.get("/records/:id", async (req, res, next) => {
    try {
      const id = String(req.params["id"]);
      const rec = /^[0-9a-f-]{36}$/i.test(id) ? await view(req).record(id) : undefined;
      if (!rec) return render(res, 404, "message", { title: "No such record", message: "There is no record with this id in the trail." });
      // read back as stored: a line that does not fit the record schema is named, not rendered (verification reports it)
      const checked = StoredAuditRecordSchema.safeParse(stripLocation(rec));
      shownRecord(req, rec as { patients?: unknown; actor?: { sub?: string; fhirUser?: string } });
      if (!checked.success) return render(res, 422, "message", { title: "Unreadable record", message: `The entry for this id (chain ${rec.chain}, entry ${rec.seq}) does not fit the audit record schema. The Integrity page names the first such entry of each chain.`, user: (req as Authed).user?.sub });
      page(res, req, "record", { title: `Record ${rec.id}`, r: { ...checked.data, chain: rec.chain, seq: rec.seq } });
    } catch (e) {
      next(e);
    }
  });

  app.get("/pictures", (req, res) => {
    const parsed = parseFilter(req.query);
    if (!parsed.ok) return badRequest(req, res, parsed.message);
    if (parsed.filter.patient !== undefined) shown(req, [parsed.filter.patient]);
    const stats = view(req).stats(parsed.filter);
    // the chart of who accessed the patient names its actors: a patient-facing app's user is a patient shown
    for (const a of stats.topActors) shownRecord(req, { actor: a.actor });
    // the figures go to charts.js inside the page, as a JSON data block (not executed; `<` escaped so it cannot end it)
    page(res, req, "pictures", { title: "Pictures", stats, statsJson: JSON.stringify(stats).replace(/</g, "\\u003c"), q: formValues(req.query), base: filterQuery(req.query) });
  });
  app.get("/api/stats", (req, res) => {
    const parsed = parseFilter(req.query);
    if (!parsed.ok) return void res.status(400).json({ error: parsed.message });
    if (parsed.filter.patient !== undefined) shown(req, [parsed.filter.patient]);
    const stats = view(req).stats(parsed.filter);
    for (const a of stats.topActors) shownRecord(req, { actor: a.actor });
    res.json(stats);
  });

  /** The accounting's patient and time range from the query, or why not. */
  const accountingQuery = (req: Request): { ok: true; patient: string; filter: ActivityFilter; since?: string; until?: string } | { ok: false; message: string } | { ok: "form" } => {
    const raw = req.query["patient"];
    if (raw !== undefined && typeof raw !== "string") return { ok: false, message: "Give one patient id." };
    const patient = (raw ?? "").trim();
    if (patient === "") return { ok: "form" };
    const parsed = parseFilter({ since: req.query["since"], until: req.query["until"] });
    if (!parsed.ok) return parsed;
    shown(req, [patient]);
    const since = req.query["since"];
    const until = req.query["until"];
    return { ok: true, patient, filter: { ...parsed.filter, patient }, ...(typeof since === "string" && since !== "" && { since }), ...(typeof until === "string" && until !== "" && { until }) };
  };
  /** The patient's records, oldest first, as stored; entries that do not fit the record schema are counted, not returned. */
  async function* disclosures(req: Request, filter: ActivityFilter, skipped: { n: number }): AsyncGenerator<AuditRecordInput> {
    for await (const r of view(req).records(filter)) {
      const checked = StoredAuditRecordSchema.safeParse(stripLocation(r));
      if (checked.success) yield checked.data;
      else skipped.n++;
    }
  }
  const purpose = (r: AuditRecordInput): string => (r.method !== undefined ? (options.purposes?.[r.method] ?? r.method) : r.type);
  const who = (r: AuditRecordInput): string => r.actor.fhirUser ?? r.actor.sub ?? r.actor.clientId ?? "(unknown)";
  const refuseDownload = (res: Response, a: { ok: false; message: string } | { ok: "form" }): void => void res.status(400).type("text/plain").send(a.ok === "form" ? "patient is required\n" : `${a.message}\n`);

  app.get("/accounting", async (req, res, next) => {
    try {
      const a = accountingQuery(req);
      if (a.ok === false) return badRequest(req, res, a.message);
      let shownRows: AuditRecordInput[] | undefined;
      let total = 0;
      const skipped = { n: 0 };
      if (a.ok === true) {
        total = (await view(req).activity(a.filter, { offset: 0, limit: 1 })).total;
        shownRows = [];
        for await (const r of disclosures(req, a.filter, skipped)) {
          // (the page lists who, not the record's other patients)
          shownRecord(req, r, false);
          shownRows.push(r);
          if (shownRows.length >= ACCOUNTING_PAGE_ROWS) break;
        }
      }
      page(res, req, "accounting", {
        title: "Accounting of disclosures",
        a: a.ok === true ? { patient: a.patient, since: a.since, until: a.until, rows: shownRows, total, skipped: skipped.n, cap: ACCOUNTING_PAGE_ROWS } : undefined,
        q: formValues(req.query),
        base: filterQuery(req.query, ["patient", "since", "until"]),
        purpose,
        who,
      });
    } catch (e) {
      next(e);
    }
  });
  // The downloads stream every row (no cap, memory bounded by one batch); a failure half-way ends the connection
  // without the end of the body, so it cannot pass for a complete file.
  app.get("/accounting.csv", async (req, res, next) => {
    const a = accountingQuery(req);
    if (a.ok !== true) return refuseDownload(res, a);
    const csv = csvStream({ header: true, columns: ["time", "who", "client", "agent", "method", "purpose", "outcome", "reason", "record"] });
    // a client that goes away ends the loop (and the read-back of the rest)
    const gone = new AbortController();
    res.once("close", () => gone.abort());
    let started = false;
    const start = () => {
      started = true;
      res.attachment(`accounting-${safeName(a.patient)}.csv`).type("text/csv");
      csv.pipe(res);
    };
    try {
      for await (const r of disclosures(req, a.filter, { n: 0 })) {
        if (gone.signal.aborted) break;
        // (the file lists who, not the record's other patients)
        shownRecord(req, r, false);
        if (!started) start();
        if (!csv.write({ time: r.time, who: who(r), client: r.actor.clientId ?? "", agent: r.agent, method: r.method ?? "", purpose: purpose(r), outcome: r.outcome, reason: r.reason ?? "", record: r.id })) await once(csv, "drain", { signal: gone.signal });
      }
      if (gone.signal.aborted) return void csv.destroy();
      if (!started) start();
      csv.end();
    } catch (e) {
      csv.unpipe(res);
      csv.destroy();
      if (res.headersSent || gone.signal.aborted) res.destroy(e as Error);
      else next(e);
    }
  });
  app.get("/accounting.fhir.json", async (req, res, next) => {
    const a = accountingQuery(req);
    if (a.ok !== true) return refuseDownload(res, a);
    const gone = new AbortController();
    res.once("close", () => gone.abort());
    // the Bundle `hmcp audit export --format fhir` writes (type collection, no total), one entry at a time
    const open = () => {
      res.attachment(`accounting-${safeName(a.patient)}.fhir.json`).type("application/fhir+json");
      res.write(`{"resourceType":"Bundle","type":"collection","timestamp":${JSON.stringify(new Date(now()).toISOString())},"entry":[`);
    };
    try {
      let first = true;
      for await (const r of disclosures(req, a.filter, { n: 0 })) {
        if (gone.signal.aborted) break;
        shownRecord(req, r);
        if (first) open();
        const ok = res.write(`${first ? "" : ","}${JSON.stringify({ fullUrl: `urn:uuid:${r.id}`, resource: toAuditEvent(r) })}`);
        first = false;
        if (!ok) await once(res, "drain", { signal: gone.signal });
      }
      if (gone.signal.aborted) return;
      if (first) open();
      res.end("]}");
    } catch (e) {
      if (res.headersSent || gone.signal.aborted) res.destroy(e as Error);
      else next(e);
    }
  });

  app.post("/reload", doubleCsrfProtection, async (req, res, next) => {
    if (!reopen) return render(res, 404, "message", { title: "Not found", message: "This console shows a fixed trail." });
    try {
      // one reload at a time: a second request waits for the one under way instead of opening another view
      reloading ??= (async () => {
        const next = await reopen(() => {});
        if (closing) return void (await next.close());
        const old = trail!;
        trail = next;
        // the old view closes once the last request reading it has ended
        if (readers.has(old)) retired.add(old);
        else await old.close();
      })().finally(() => (reloading = undefined));
      const was = view(req).size;
      await reloading;
      res.redirect(303, `/integrity?was=${was}`);
    } catch (e) {
      next(e);
    }
  });


  app.use((req, res) => render(res, 404, "message", { title: "Not found", message: "There is no such page in the audit console.", user: (req as Authed).user?.sub }));
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if ((err as { code?: string }).code === "EBADCSRFTOKEN" || (err as { name?: string }).name === "ForbiddenError") {
      (req as Authed).csrfRefused = true;
      return render(res, 403, "message", { title: "Refused", message: "This form was not sent from the console (its CSRF token is missing or wrong). Reload the page and try again." });
    }
    const status = typeof (err as { status?: unknown }).status === "number" && (err as { status: number }).status < 500 ? (err as { status: number }).status : 500;
    if (res.headersSent) return void res.destroy();
    render(res, status, "message", { title: "Error", message: status === 500 ? "The console could not answer this request." : "The request was not valid." });
  });

  function badRequest(req: Request, res: Response, message: string): void {
    render(res, 400, "message", { title: "Not a valid filter", message, user: (req as Authed).user?.sub, back: { href: req.path, text: "Back, without the filter" } });
  }

  const server: Server = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, app) : createHttpServer(app);
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const listenUrl = `${options.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`;
  site.url = (options.publicUrl !== undefined ? new URL(options.publicUrl).origin : listenUrl).replace(/\/$/, "");
  site.secure = site.url.startsWith("https:");
  site.cookies = cookieNames(port);
  csrf.current = makeCsrf();
  return {
    url: site.url,
    redirectUri: redirectUri(),
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      });
      closing = true;
      await reloading?.catch(() => {});
      for (const v of retired) await v.close();
      retired.clear();
      if (!reopen) return;
      if (trail) await trail.close();
      // still being read in the background: not waited for (it may take minutes); closed when it arrives
      else void first.then((v) => v.close(), () => {});
    },
  };
}

const FILTER_KEYS = ["patient", "actor", "client", "agent", "method", "outcome", "reason", "since", "until"] as const;

/** The filter of a query string; times are RFC 3339 or `YYYY-MM-DD` (UTC midnight) or `YYYY-MM-DDTHH:MM` (UTC). */
export function parseFilter(query: Record<string, unknown>): { ok: true; filter: ActivityFilter } | { ok: false; message: string } {
  const filter: ActivityFilter = {};
  for (const k of FILTER_KEYS) {
    const raw = query[k];
    if (raw === undefined || raw === "") continue;
    if (typeof raw !== "string" || raw.length > 256) return { ok: false, message: `The filter '${k}' is not valid.` };
    const v = raw.trim();
    if (v === "") continue;
    if (k === "since" || k === "until") {
      const t = parseTime(v);
      if (t === undefined) return { ok: false, message: `'${k}' is not a date or time (use 2026-11-01, 2026-11-01T08:00 or RFC 3339; times without an offset are UTC).` };
      filter[k] = t;
    } else if (k === "outcome") {
      const o = AuditOutcomeSchema.safeParse(v);
      if (!o.success) return { ok: false, message: "'outcome' must be allowed, denied, blocked or failed." };
      filter.outcome = o.data;
    } else filter[k] = v;
  }
  return { ok: true, filter };
}

/**
 * A date (`2026-11-01`, UTC midnight), a UTC time without offset (`2026-11-01T08:00`, seconds and milliseconds
 * optional), or an RFC 3339 date-time with `Z` or an offset. Nothing else (no locale forms, no server time zone), and
 * the date must exist (no 2026-02-31).
 */
function parseTime(v: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/.exec(v);
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", sec = "00", frac = "", zone = "Z"] = m;
  const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (day.getUTCFullYear() !== Number(y) || day.getUTCMonth() !== Number(mo) - 1 || day.getUTCDate() !== Number(d)) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec) > 59) return undefined;
  const t = Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${sec}${frac}${zone}`);
  return Number.isNaN(t) ? undefined : t;
}

/** A located record without its location members, as stored. */
function stripLocation(r: LocatedRecord): Record<string, unknown> {
  const { chain: _chain, seq: _seq, ...rest } = r as LocatedRecord & Record<string, unknown>;
  return rest;
}

function formValues(query: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of FILTER_KEYS) if (typeof query[k] === "string") out[k] = query[k] as string;
  return out;
}

function filterQuery(query: Record<string, unknown>, keys: readonly string[] = FILTER_KEYS): string {
  const p = new URLSearchParams();
  for (const k of keys) if (typeof query[k] === "string" && query[k] !== "") p.set(k, query[k] as string);
  return p.toString();
}

function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 64);
}

/** "3 min", "2 h 5 min", "4 d 1 h": the age of a checkpoint in words. */
function ageInWords(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}
