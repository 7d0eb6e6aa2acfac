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
import { existsSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import cookieParser from "cookie-parser";
import { doubleCsrf } from "csrf-csrf";
import { stringify as csvStringify } from "csv-stringify/sync";
import { Eta } from "eta";
import express, { type NextFunction, type Request, type Response } from "express";
import helmet from "helmet";
import { contentDigest } from "../audit/canonical-json.js";
import { exportFhirAuditEvents } from "../audit/fhir.js";
import { newAuditRecord } from "../audit/new-record.js";
import { AuditOutcomeSchema, type AuditRecordInput, type AuditSink } from "../audit/record.js";
import { ConsoleSignIn, CookieSeal, type ConsoleSignInOptions, type ConsoleUser, type PendingSignIn } from "./sign-in.js";
import type { ActivityFilter, AuditTrailView, LocatedRecord } from "./trail-types.js";

/** Options of {@link startAuditConsole}. */
export interface AuditConsoleOptions {
  /**
   * The trail to show: a view (`openAuditTrail`), which the console does not close, or a function that opens one. With
   * a function, the Integrity page offers "Read the trail again" (a POST, CSRF-protected), which opens a new view of a
   * trail that is still being written and closes the old one; the console closes the last one on `close`.
   */
  trail: AuditTrailView | (() => Promise<AuditTrailView>);
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

type Authed = Request & { user?: ConsoleUser; viewPatients?: string[] };

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
  let trail: AuditTrailView = typeof options.trail === "function" ? await options.trail() : options.trail;
  const eta = new Eta({ views: packageDir("views"), cache: true, autoEscape: true });
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

  const record = (req: Request, draft: Partial<AuditRecordInput> & Pick<AuditRecordInput, "type" | "outcome">, started: number): void => {
    const user = (req as Authed).user;
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
  app.use((req, res, next) => {
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          "default-src": ["'none'"],
          "script-src": ["'self'"],
          "style-src": ["'self'"],
          "img-src": ["'self'"],
          "connect-src": ["'self'"],
          "form-action": ["'self'"],
          "base-uri": ["'none'"],
          "frame-ancestors": ["'none'"],
          ...(site.secure && { "upgrade-insecure-requests": [] }),
        },
      },
      strictTransportSecurity: site.secure ? { maxAge: 31_536_000 } : false,
      referrerPolicy: { policy: "no-referrer" },
    })(req, res, next);
  });
  app.use((_req, res, next) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });
  app.use(cookieParser());
  app.use(express.urlencoded({ extended: false, limit: "4kb" }));

  app.get("/static/console.css", (_req, res) => res.sendFile(path.join(packageDir("static"), "console.css")));
  app.get("/static/charts.js", (_req, res) => res.sendFile(path.join(packageDir("static"), "charts.js")));
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
      return render(res, result.status, "message", { title: result.reason === "insufficient_scope" ? "Not authorised" : "Sign-in failed", message: result.message, signInLink: result.reason !== "insufficient_scope" });
    }
    (req as Authed).user = result.user;
    record(req, { type: "session.start", outcome: "allowed", status: 303, method: "GET /callback" }, started);
    res.cookie(site.cookies.session, await seal.seal(result.user, ttl, "session"), cookieOpts(ttl));
    res.redirect(303, "/integrity");
  });

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

  // every view below is audited once, when its answer is sent
  app.use((req, res, next) => {
    const started = now();
    res.on("finish", () => {
      const patients = (req as Authed).viewPatients ?? [];
      record(req, { type: "view", outcome: res.statusCode < 400 ? "allowed" : "denied", ...(res.statusCode >= 400 && { reason: res.statusCode === 403 ? "invalid_csrf_token" : "bad_request" }), status: res.statusCode, method: `${req.method} ${req.path}`, patients }, started);
    });
    next();
  });

  const page = (res: Response, req: Request, view: string, data: Record<string, unknown>): void => {
    const user = (req as Authed).user!;
    render(res, 200, view, { ...data, user: user.name ?? user.sub, csrf: generateCsrfToken(req, res), nav: req.path });
  };
  function render(res: Response, status: number, view: string, data: Record<string, unknown>): void {
    res.status(status).type("html").send(eta.render(view, { nav: "", user: undefined, csrf: undefined, ...data }));
  }

  app.get("/", (_req, res) => res.redirect(303, "/integrity"));
  app.get("/integrity", (req, res) => {
    const chains = trail.integrity();
    page(res, req, "integrity", { title: "Integrity", chains, age: ageInWords, reloadable: reopen !== undefined, pending: chains.some((c) => c.status === "pending"), size: trail.size });
  });

  app.get("/activity", async (req, res, next) => {
    try {
      const parsed = parseFilter(req.query);
      if (!parsed.ok) return badRequest(req, res, parsed.message);
      const filter = parsed.filter;
      if (filter.patient !== undefined) (req as Authed).viewPatients = [filter.patient];
      const offset = Math.max(0, Number.parseInt(String(req.query["offset"] ?? "0"), 10) || 0);
      const result = await trail.activity(filter, { offset, limit: pageSize });
      const base = filterQuery(req.query);
      page(res, req, "activity", { title: "Activity", result, q: formValues(req.query), facets: trail.facets(), pageSize, base, outcomes: AuditOutcomeSchema.options });
    } catch (e) {
      next(e);
    }
  });

  app.get("/records/:id", async (req, res, next) => {
    try {
      const id = String(req.params["id"]);
      const rec = /^[0-9a-f-]{36}$/i.test(id) ? await trail.record(id) : undefined;
      if (!rec) return render(res.status(404), 404, "message", { title: "No such record", message: "There is no record with this id in the trail." });
      (req as Authed).viewPatients = rec.patients;
      page(res, req, "record", { title: `Record ${rec.id}`, r: rec });
    } catch (e) {
      next(e);
    }
  });

  app.get("/pictures", (req, res) => {
    const parsed = parseFilter(req.query);
    if (!parsed.ok) return badRequest(req, res, parsed.message);
    if (parsed.filter.patient !== undefined) (req as Authed).viewPatients = [parsed.filter.patient];
    const stats = trail.stats(parsed.filter);
    page(res, req, "pictures", { title: "Pictures", stats, q: formValues(req.query), base: filterQuery(req.query) });
  });
  app.get("/api/stats", (req, res) => {
    const parsed = parseFilter(req.query);
    if (!parsed.ok) return void res.status(400).json({ error: parsed.message });
    if (parsed.filter.patient !== undefined) (req as Authed).viewPatients = [parsed.filter.patient];
    res.json(trail.stats(parsed.filter));
  });

  const accounting = async (req: Request): Promise<{ ok: true; patient: string; rows: LocatedRecord[]; since?: string; until?: string } | { ok: false; message: string } | { ok: "form" }> => {
    const patient = typeof req.query["patient"] === "string" ? req.query["patient"].trim() : "";
    if (patient === "") return { ok: "form" };
    const parsed = parseFilter({ since: req.query["since"], until: req.query["until"] });
    if (!parsed.ok) return parsed;
    (req as Authed).viewPatients = [patient];
    const rows: LocatedRecord[] = [];
    for await (const r of trail.records({ ...parsed.filter, patient })) rows.push(r);
    return { ok: true, patient, rows, ...(typeof req.query["since"] === "string" && req.query["since"] !== "" && { since: req.query["since"] }), ...(typeof req.query["until"] === "string" && req.query["until"] !== "" && { until: req.query["until"] }) };
  };
  const purpose = (r: AuditRecordInput): string => (r.method !== undefined ? (options.purposes?.[r.method] ?? r.method) : r.type);
  const who = (r: AuditRecordInput): string => r.actor.fhirUser ?? r.actor.sub ?? r.actor.clientId ?? "(unknown)";

  app.get("/accounting", async (req, res, next) => {
    try {
      const a = await accounting(req);
      if (a.ok === false) return badRequest(req, res, a.message);
      page(res, req, "accounting", { title: "Accounting of disclosures", a: a.ok === "form" ? undefined : a, q: formValues(req.query), base: filterQuery(req.query, ["patient", "since", "until"]), purpose, who });
    } catch (e) {
      next(e);
    }
  });
  app.get("/accounting.csv", async (req, res, next) => {
    try {
      const a = await accounting(req);
      if (a.ok !== true) return void res.status(400).type("text/plain").send(a.ok === "form" ? "patient is required\n" : `${a.message}\n`);
      const csv = csvStringify(
        a.rows.map((r) => ({ time: r.time, who: who(r), client: r.actor.clientId ?? "", agent: r.agent, method: r.method ?? "", purpose: purpose(r), outcome: r.outcome, reason: r.reason ?? "", record: r.id })),
        { header: true, columns: ["time", "who", "client", "agent", "method", "purpose", "outcome", "reason", "record"] },
      );
      res.type("text/csv").attachment(`accounting-${safeName(a.patient)}.csv`).send(csv);
    } catch (e) {
      next(e);
    }
  });
  app.get("/accounting.fhir.json", async (req, res, next) => {
    try {
      const a = await accounting(req);
      if (a.ok !== true) return void res.status(400).type("text/plain").send(a.ok === "form" ? "patient is required\n" : `${a.message}\n`);
      res.type("application/fhir+json").attachment(`accounting-${safeName(a.patient)}.fhir.json`).send(JSON.stringify(exportFhirAuditEvents(a.rows, { timestamp: new Date(now()) }), null, 2));
    } catch (e) {
      next(e);
    }
  });

  app.post("/reload", doubleCsrfProtection, async (req, res, next) => {
    if (!reopen) return render(res, 404, "message", { title: "Not found", message: "This console shows a fixed trail." });
    try {
      const old = trail;
      trail = await reopen();
      await old.close();
      res.redirect(303, "/integrity");
    } catch (e) {
      next(e);
    }
  });

  app.post("/logout", doubleCsrfProtection, (req, res) => {
    const user = (req as Authed).user!;
    options.audit.append(newAuditRecord({ type: "session.end", agent, outcome: "allowed", transport: "http", method: "POST /logout", actor: { sub: user.sub, clientId: options.signIn.clientId }, scopes: user.scopes, source: req.socket.remoteAddress !== undefined ? { address: req.socket.remoteAddress } : {}, status: 303 }, now));
    res.clearCookie(site.cookies.session, { path: "/" });
    res.redirect(303, "/signed-out");
  });
  app.get("/signed-out", (req, res) => render(res, 200, "message", { title: "Signed out", message: "You are signed out of the audit console.", signInLink: true, nav: req.path }));

  app.use((req, res) => render(res, 404, "message", { title: "Not found", message: "There is no such page in the audit console.", user: (req as Authed).user?.sub }));
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    if ((err as { code?: string }).code === "EBADCSRFTOKEN" || (err as { name?: string }).name === "ForbiddenError") {
      return render(res, 403, "message", { title: "Refused", message: "This form was not sent from the console (its CSRF token is missing or wrong). Reload the page and try again." });
    }
    const status = typeof (err as { status?: unknown }).status === "number" && (err as { status: number }).status < 500 ? (err as { status: number }).status : 500;
    render(res, status, "message", { title: "Error", message: status === 500 ? "The console could not answer this request." : "The request was not valid." });
    void req;
  });

  function badRequest(req: Request, res: Response, message: string): void {
    render(res, 400, "message", { title: "Not a valid filter", message, user: (req as Authed).user?.sub });
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
      if (reopen) await trail.close();
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

function parseTime(v: string): number | undefined {
  const s = /^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T00:00:00Z` : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v) ? `${v}Z` : v;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
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
