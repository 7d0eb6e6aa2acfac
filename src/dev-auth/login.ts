/**
 * The development authorization server's sign-in page: oidc-provider's interaction step (its `interactions.url`,
 * `/interaction/<uid>`) for the authorization code flow (RFC 6749 §4.1, OpenID Connect Core §3.1). A server-rendered
 * form (no script, no external resource, everything printed escaped) checks a configured user's password and finishes
 * the interaction with the login and the consent at once: the grant holds `openid`, the identity scopes `profile` and
 * `fhirUser` when requested, and the requested scopes the user may be granted ({@link DevUserConfig.scopes}); the
 * others are refused silently (RFC 6749 §3.3), so a user without `user/AuditEvent.rs` still signs in with `openid` only.
 *
 * Development and tests only: users and passwords come from a config list, in memory, in clear; failed attempts are
 * not limited. Not provided: a logout page of its own (RP-initiated logout and signing in as another user while a
 * session is open go through oidc-provider's own pages), any second factor.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { InteractionDetails, ProviderLike } from "./provider-types.js";

/** A user who can sign in on the development authorization server's login page. */
export interface DevUserConfig {
  /** Login name; also the subject (`sub`) of the user's ID tokens and access tokens. */
  username: string;
  /** Password, in clear (development only). Compared in constant time. */
  password: string;
  /**
   * Scopes this user may be granted beyond `openid` (and the identity scopes `profile` and `fhirUser`, granted to every
   * user who asks), e.g. `["user/AuditEvent.rs"]`. A client gets the intersection with what it requested, which its
   * registration already limits to the client's own `scopes`.
   */
  scopes: string[];
  /** `name` claim (OpenID Connect Core §5.1), released with scope `profile`. */
  name?: string;
  /** SMART `fhirUser` claim (a FHIR resource URL or `Practitioner/<id>`), released with scope `fhirUser`. */
  fhirUser?: string;
}

/** Scopes about the signed-in user's identity, granted to every user who requests them. */
export const IDENTITY_SCOPES: readonly string[] = ["openid", "profile", "fhirUser"];

/** Longest login form body read, bytes. */
const MAX_FORM_BYTES = 4096;

/** What the sign-in page needs from the server that mounts it. */
export interface LoginPageContext {
  /** The provider in force (it changes when the signing key rotates). */
  provider(): ProviderLike;
  /** Configured users by username. */
  users: ReadonlyMap<string, DevUserConfig>;
  /** Scopes the client may be granted (its resource servers' scope list), by client id. */
  clientScopes(clientId: string): readonly string[];
}

/** `/interaction/<uid>` → the uid; anything else → undefined. */
export function interactionUid(url: string | undefined): string | undefined {
  return /^\/interaction\/([A-Za-z0-9_-]{1,64})$/.exec(url ?? "")?.[1];
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A CSP source for where the authorization response goes (the browser checks `form-action` along redirects too). */
function redirectSource(redirectUri: unknown): string {
  if (typeof redirectUri !== "string") return "";
  const u = URL.parse(redirectUri);
  if (!u) return "";
  return u.origin !== "null" ? ` ${u.origin}` : ` ${u.protocol}`;
}

function sendPage(res: ServerResponse, status: number, body: string, formAction = ""): void {
  res.writeHead(status, {
    ...PAGE_HEADERS,
    "content-security-policy": `default-src 'none'; form-action 'self'${formAction}; frame-ancestors 'none'; base-uri 'none'`,
  });
  res.end(body);
}

function layout(title: string, main: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>
<body>
<main>
${main}
<p><small>HMCP development authorization server: for development and tests only.</small></p>
</main>
</body>
</html>
`;
}

function loginForm(uid: string, clientId: string, username: string, error?: string): string {
  return layout(
    "Sign in",
    `<h1>Sign in</h1>
<p>to continue to <strong>${escapeHtml(clientId)}</strong></p>
${error !== undefined ? `<p role="alert">${escapeHtml(error)}</p>\n` : ""}<form method="post" action="/interaction/${escapeHtml(uid)}">
<p><label for="username">Username</label><br><input id="username" name="username" autocomplete="username" required value="${escapeHtml(username)}"></p>
<p><label for="password">Password</label><br><input id="password" name="password" type="password" autocomplete="current-password" required></p>
<p><button type="submit" name="action" value="login">Sign in</button> <button type="submit" name="action" value="cancel" formnovalidate>Cancel</button></p>
</form>`,
  );
}

const messagePage = (text: string): string => layout("Sign in", `<h1>Sign in</h1>\n<p>${escapeHtml(text)}</p>`);

/** The headers of every page this server renders itself (login, errors). */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "content-security-policy": "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
};

/**
 * oidc-provider's `renderError`: the error page of the authorization endpoint (e.g. a redirect_uri not registered),
 * without the library's default stylesheet from a font CDN, with the same headers as the login page.
 */
export function renderErrorPage(ctx: { status: number; set(headers: Record<string, string>): void; body: unknown }, out: { error?: string; error_description?: string }): void {
  ctx.set({ ...PAGE_HEADERS });
  const detail = [out.error, out.error_description].filter((s): s is string => typeof s === "string" && s !== "").join(": ");
  ctx.body = layout("Sign-in error", `<h1>Sign-in error</h1>\n<p>${escapeHtml(detail || "The request failed.")}</p>`);
}

/** Constant-time comparison of two strings (their SHA-256 digests, so the length leaks nothing either). */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

class FormError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw new FormError(415, "The form must be sent as application/x-www-form-urlencoded.");
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new FormError(413, "The form is too large.");
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

const split = (s: unknown): string[] => (typeof s === "string" ? s.split(" ").filter(Boolean) : []);

/**
 * Creates and saves the grant for `user` from the interaction's request: OIDC scopes `openid` plus the identity scopes
 * and the user's allowed scopes among those requested; for each requested resource (RFC 8707), the requested scopes the
 * resource serves and the user may have. Everything else requested is recorded as refused, so oidc-provider does not
 * ask for consent again.
 * @returns the grant id
 */
async function saveGrant(ctx: LoginPageContext, details: InteractionDetails, user: DevUserConfig): Promise<string> {
  const provider = ctx.provider();
  const clientId = String(details.params["client_id"]);
  const requested = split(details.params["scope"]);
  const allowed = new Set([...IDENTITY_SCOPES, ...user.scopes]);
  const grant = new provider.Grant({ accountId: user.username, clientId });
  const granted = requested.filter((s) => allowed.has(s));
  const refused = requested.filter((s) => !allowed.has(s));
  grant.addOIDCScope([...new Set(["openid", ...granted])].join(" "));
  if (refused.length > 0) grant.rejectOIDCScope(refused.join(" "));
  const claims = (details.prompt.details["missingOIDCClaims"] as string[] | undefined) ?? [];
  if (claims.length > 0) grant.addOIDCClaims(claims);
  const resource = details.params["resource"];
  const resources = typeof resource === "string" ? [resource] : Array.isArray(resource) ? resource.filter((r): r is string => typeof r === "string") : [];
  const served = new Set(ctx.clientScopes(clientId));
  for (const r of resources) {
    const wanted = requested.filter((s) => served.has(s));
    const yes = wanted.filter((s) => user.scopes.includes(s));
    const no = wanted.filter((s) => !user.scopes.includes(s));
    if (yes.length > 0) grant.addResourceScope(r, yes.join(" "));
    if (no.length > 0) grant.rejectResourceScope(r, no.join(" "));
  }
  return grant.save();
}

/**
 * Serves `GET` and `POST /interaction/<uid>`: the login form, and its submission. A wrong username or password gets the
 * form again with 401; Cancel (`action=cancel`) ends the request with `access_denied` at the redirect URI; an unknown or expired interaction (no interaction cookie, or one for another uid) gets 400; a
 * consent-only interaction for a user already signed in (a session) is finished at once (303) with the same grant
 * rules. Every page carries a strict Content-Security-Policy. Never throws: a failure becomes a 500 page without detail.
 */
export async function serveLoginPage(ctx: LoginPageContext, uid: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  try {
    if (req.method !== "GET" && req.method !== "POST") {
      res.setHeader("allow", "GET, POST");
      sendPage(res, 405, messagePage("Method not allowed."));
      return;
    }
    const provider = ctx.provider();
    let details: InteractionDetails;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      sendPage(res, 400, messagePage("This sign-in request is unknown or has expired. Start again from the application."));
      return;
    }
    if (details.uid !== uid) {
      sendPage(res, 400, messagePage("This sign-in request is unknown or has expired. Start again from the application."));
      return;
    }
    const clientId = String(details.params["client_id"] ?? "");
    const formAction = redirectSource(details.params["redirect_uri"]);
    if (req.method === "GET") {
      const signedIn = details.session?.accountId !== undefined ? ctx.users.get(details.session.accountId) : undefined;
      if (details.prompt.name === "consent" && signedIn) {
        const grantId = await saveGrant(ctx, details, signedIn);
        await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
        return;
      }
      const hint = details.params["login_hint"];
      sendPage(res, 200, loginForm(uid, clientId, typeof hint === "string" ? hint : ""), formAction);
      return;
    }
    let form: URLSearchParams;
    try {
      form = await readForm(req);
    } catch (e) {
      if (!(e instanceof FormError)) throw e;
      sendPage(res, e.status, loginForm(uid, clientId, "", e.message), formAction);
      return;
    }
    if (form.get("action") === "cancel") {
      // RFC 6749 §4.1.2.1: the resource owner denied the request
      await provider.interactionFinished(req, res, { error: "access_denied", error_description: "the user cancelled the sign-in" }, { mergeWithLastSubmission: false });
      return;
    }
    const username = form.get("username") ?? "";
    const password = form.get("password") ?? "";
    const user = ctx.users.get(username);
    // compare against something even for an unknown user, so the reply takes as long
    const ok = sameSecret(password, user?.password ?? "\u0000unknown user") && user !== undefined;
    if (!ok) {
      sendPage(res, 401, loginForm(uid, clientId, username, "Wrong username or password."), formAction);
      return;
    }
    await endOtherAccountSession(provider, details, user.username);
    const grantId = await saveGrant(ctx, details, user);
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: user.username, amr: ["pwd"] }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
  } catch {
    if (!res.headersSent) sendPage(res, 500, messagePage("The sign-in failed. Start again from the application."));
    else res.end();
  }
}

/**
 * Someone else signs in at a browser where another user has a session (a refused user handing over, `prompt=login`):
 * the other user's session ends here. oidc-provider would otherwise send the browser through its own logout form,
 * which submits itself with an inline script and then loses the interaction.
 */
async function endOtherAccountSession(provider: ProviderLike, details: InteractionDetails, accountId: string): Promise<void> {
  const previous = details.session;
  if (previous?.accountId === undefined || previous.accountId === accountId || previous.uid === undefined) return;
  const models = provider as unknown as {
    Session: { findByUid(uid: string): Promise<{ destroy(): Promise<void> } | undefined> };
    Interaction: { find(uid: string): Promise<{ session?: unknown; exp: number; save(ttlSec: number): Promise<unknown> } | undefined> };
  };
  await (await models.Session.findByUid(previous.uid))?.destroy();
  const interaction = await models.Interaction.find(details.uid);
  if (interaction?.session !== undefined) {
    delete interaction.session;
    await interaction.save(Math.max(1, interaction.exp - Math.floor(Date.now() / 1000)));
  }
}
