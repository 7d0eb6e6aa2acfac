/**
 * The development authorization server's user sign-in (`hmcp/dev-auth`, issue #26: the audit console's login), through
 * its public API only and without a browser: oauth4webapi as the relying party (discovery, PKCE, the code exchange)
 * and plain fetch for the browser's part (the redirects, the login form, its cookies). The callback is read from the
 * `Location` header, never followed.
 */
import { createRemoteJWKSet, jwtVerify } from "jose";
import * as oauth from "oauth4webapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevAuthorizationServer } from "hmcp/dev-auth";
import type { DevAuthorizationServer } from "hmcp/dev-auth";

const AUDIT_SCOPE = "user/AuditEvent.rs";
// Never connected to: the tests read the authorization response from the Location header.
const REDIRECT = "http://127.0.0.1:9/callback";
const SECOND_REDIRECT = "http://127.0.0.1:9/other-callback";
const CONFIDENTIAL_REDIRECT = "http://127.0.0.1:9/confidential";
const SECRET = "a-confidential-console-secret-0123456789";
const USERS = {
  officer: { username: "officer", password: "correct horse battery", scopes: [AUDIT_SCOPE], name: "Olive Officer", fhirUser: "Practitioner/po-1" },
  clerk: { username: "clerk", password: "staple clerk", scopes: [] as string[], name: "Carl Clerk" },
};

let as: DevAuthorizationServer;
let server: oauth.AuthorizationServer;
const insecure = { [oauth.allowInsecureRequests]: true };

/** The browser's cookie store, reduced to what these flows need: one value per name, removed when expired. */
class CookieJar {
  readonly #values = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = value === "" || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || /^\s*expires=.*1970/i.test(a));
      if (expired) this.#values.delete(name);
      else this.#values.set(name, value);
    }
  }
  header(): string {
    return [...this.#values].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

interface Started {
  jar: CookieJar;
  verifier: string;
  state: string;
  nonce: string;
  /** The login page, as fetched from the authorization endpoint's redirect. */
  page: Response;
  html: string;
}

/** Sends the browser (its cookie jar) to the authorization endpoint (RFC 6749 §4.1.1, RFC 7636 §4.3). */
async function authorize(jar: CookieJar, clientId: string, scope: string, redirectUri: string, extra: Record<string, string> = {}) {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const nonce = oauth.generateRandomNonce();
  const url = new URL(server.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: "code",
    scope,
    state,
    nonce,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    ...extra,
  }).toString();
  const response = await fetch(url, { headers: { cookie: jar.header() }, redirect: "manual" });
  jar.take(response);
  expect(response.status).toBe(303);
  return { verifier, state, nonce, interaction: new URL(response.headers.get("location")!, as.issuer) };
}

/** A new browser: the authorization request, then the login page it is sent to. */
async function startSignIn(clientId: string, scope: string, redirectUri = REDIRECT, extra: Record<string, string> = {}): Promise<Started> {
  const jar = new CookieJar();
  const { verifier, state, nonce, interaction } = await authorize(jar, clientId, scope, redirectUri, extra);
  expect(interaction.pathname).toMatch(/^\/interaction\/[\w-]+$/);
  const page = await fetch(interaction, { headers: { cookie: jar.header() }, redirect: "manual" });
  jar.take(page);
  return { jar, verifier, state, nonce, page, html: await page.text() };
}

/** The form's action (resolved against the issuer) and its fields, hidden ones with their values. */
function parseForm(html: string): { action: URL; method: string; fields: Map<string, string> } {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  expect(form).not.toBeNull();
  const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`, "i").exec(tag)?.[1];
  const fields = new Map<string, string>();
  for (const [input] of form![2]!.matchAll(/<input\b[^>]*>/gi)) fields.set(attr(input, "name")!, attr(input, "value") ?? "");
  return { action: new URL(attr(form![1]!, "action")!.replace(/&amp;/g, "&"), as.issuer), method: (attr(form![1]!, "method") ?? "get").toLowerCase(), fields };
}

/** Fills the login form in and posts it, like a browser would. */
async function submitLogin(started: Started, username: string, password: string): Promise<Response> {
  const { action, fields } = parseForm(started.html);
  const body = new URLSearchParams([...fields]);
  body.set("username", username);
  body.set("password", password);
  const res = await fetch(action, {
    method: "POST",
    headers: { cookie: started.jar.header(), "content-type": "application/x-www-form-urlencoded" },
    body,
    redirect: "manual",
  });
  started.jar.take(res);
  return res;
}

/** Follows the authorization server's own redirects; returns the first Location that leaves the issuer (the callback). */
async function followToCallback(started: Started, res: Response): Promise<URL> {
  let location = new URL(res.headers.get("location")!, as.issuer);
  for (let hops = 0; location.origin === as.issuer && hops < 5; hops++) {
    const next = await fetch(location, { headers: { cookie: started.jar.header() }, redirect: "manual" });
    started.jar.take(next);
    expect([302, 303]).toContain(next.status);
    location = new URL(next.headers.get("location")!, as.issuer);
  }
  return location;
}

/** The whole sign-in: authorization request, login, the callback URL with the code. */
async function signIn(clientId: string, username: string, password: string, scope = `openid profile fhirUser ${AUDIT_SCOPE}`, redirectUri = REDIRECT) {
  const started = await startSignIn(clientId, scope, redirectUri);
  expect(started.page.status).toBe(200);
  const posted = await submitLogin(started, username, password);
  expect(posted.status).toBe(303);
  return { started, callback: await followToCallback(started, posted) };
}

function exchange(client: oauth.Client, auth: oauth.ClientAuth, callback: URL, started: Started, verifier = started.verifier, redirectUri = REDIRECT) {
  const params = oauth.validateAuthResponse(server, client, callback, started.state);
  return oauth.authorizationCodeGrantRequest(server, client, auth, params, redirectUri, verifier, insecure);
}

const publicClient: oauth.Client = { client_id: "audit-console" };

beforeAll(async () => {
  as = await startDevAuthorizationServer({
    resources: [],
    clients: [
      { clientId: "audit-console", grantType: "authorization_code", scopes: [AUDIT_SCOPE] },
      { clientId: "console-confidential", grantType: "authorization_code", scopes: [AUDIT_SCOPE], clientSecret: SECRET, redirectUris: [CONFIDENTIAL_REDIRECT] },
      { clientId: "backend", scopes: ["system/*.rs"] },
    ],
    users: [USERS.officer, USERS.clerk],
  });
  as.addRedirectUri("audit-console", REDIRECT);
  server = await oauth.processDiscoveryResponse(new URL(as.issuer), await oauth.discoveryRequest(new URL(as.issuer), insecure));
});

afterAll(async () => {
  await as?.stop();
});

describe("dev authorization server: user sign-in with the authorization code flow", () => {
  it("discovery names the authorization endpoint, the code grant and S256 only (OIDC and SMART documents)", async () => {
    expect(server.authorization_endpoint).toBe(as.authorizationEndpoint);
    expect(server.code_challenge_methods_supported).toEqual(["S256"]);
    expect(server.response_types_supported).toEqual(["code"]);
    const smart = (await (await fetch(`${as.issuer}/.well-known/smart-configuration`)).json()) as Record<string, unknown>;
    expect(smart).toMatchObject({ authorization_endpoint: as.authorizationEndpoint, code_challenge_methods_supported: ["S256"], response_types_supported: ["code"] });
    expect(smart["grant_types_supported"]).toEqual(["authorization_code", "client_credentials"]);
    expect(smart["capabilities"]).toEqual(expect.arrayContaining(["launch-standalone", "client-public", "sso-openid-connect"]));
    expect(smart["scopes_supported"]).toEqual(expect.arrayContaining(["openid", "profile", "fhirUser", AUDIT_SCOPE]));
    expect(smart["token_endpoint_auth_methods_supported"]).toContain("none");
  });

  it("authorization code clients get no generated keys; client credentials clients keep theirs", () => {
    expect(as.clients["audit-console"]).toEqual({ clientId: "audit-console", scopes: [AUDIT_SCOPE], grantType: "authorization_code", redirectUris: [REDIRECT] });
    expect(as.clients["console-confidential"]).toMatchObject({ clientSecret: SECRET, grantType: "authorization_code" });
    expect(as.clients["console-confidential"]!.privateJwk).toBeUndefined();
    expect(as.clients["backend"]).toMatchObject({ grantType: "client_credentials", privateJwk: expect.objectContaining({ kid: "backend-key-1" }) });
  });

  it("the compliance officer signs in and the token response grants user/AuditEvent.rs; the ID token names the user", async () => {
    const before = as.issuedTokens();
    const { started, callback } = await signIn("audit-console", "officer", USERS.officer.password);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT);
    expect(callback.searchParams.get("iss")).toBe(as.issuer);
    const result = await oauth.processAuthorizationCodeResponse(server, publicClient, await exchange(publicClient, oauth.None(), callback, started), {
      expectedNonce: started.nonce,
      requireIdToken: true,
    });
    expect(result.scope?.split(" ").sort()).toEqual(["fhirUser", "openid", "profile", AUDIT_SCOPE].sort());
    const claims = oauth.getValidatedIdTokenClaims(result)!;
    expect(claims).toMatchObject({ sub: "officer", iss: as.issuer, aud: "audit-console", name: "Olive Officer", fhirUser: "Practitioner/po-1" });
    // signed with a key the server publishes
    const verified = await jwtVerify(result.id_token!, createRemoteJWKSet(new URL(as.jwksUri)), { issuer: as.issuer, audience: "audit-console" });
    expect(verified.protectedHeader.alg).toBe("ES256");
    // the opaque access token is good at the userinfo endpoint
    const info = await fetch(`${as.issuer}/me`, { headers: { authorization: `Bearer ${result.access_token}` } });
    expect(await info.json()).toMatchObject({ sub: "officer" });
    expect(as.issuedTokens()).toBe(before + 1);
  });

  it("a user without user/AuditEvent.rs signs in too but is granted openid only", async () => {
    const { started, callback } = await signIn("audit-console", "clerk", USERS.clerk.password, `openid ${AUDIT_SCOPE}`);
    const result = await oauth.processAuthorizationCodeResponse(server, publicClient, await exchange(publicClient, oauth.None(), callback, started), {
      expectedNonce: started.nonce,
      requireIdToken: true,
    });
    expect(result.scope).toBe("openid");
    expect(oauth.getValidatedIdTokenClaims(result)!.sub).toBe("clerk");
  });

  it("a confidential console (client_secret_basic) signs the officer in the same way", async () => {
    const client: oauth.Client = { client_id: "console-confidential" };
    const { started, callback } = await signIn("console-confidential", "officer", USERS.officer.password, `openid ${AUDIT_SCOPE}`, CONFIDENTIAL_REDIRECT);
    const wrongSecret = await exchange(client, oauth.ClientSecretBasic("nope"), callback, started, started.verifier, CONFIDENTIAL_REDIRECT);
    expect(wrongSecret.status).toBe(401);
    expect(((await wrongSecret.json()) as { error: string }).error).toBe("invalid_client");
    const result = await oauth.processAuthorizationCodeResponse(
      server,
      client,
      await exchange(client, oauth.ClientSecretBasic(SECRET), callback, started, started.verifier, CONFIDENTIAL_REDIRECT),
      { expectedNonce: started.nonce, requireIdToken: true },
    );
    expect(result.scope?.split(" ").sort()).toEqual(["openid", AUDIT_SCOPE].sort());
  });

  it("the login page: a labelled form posting to itself, no script, a strict CSP, everything printed escaped", async () => {
    const started = await startSignIn("audit-console", "openid", REDIRECT, { login_hint: `"><script>alert(1)</script>` });
    expect(started.page.status).toBe(200);
    expect(started.page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = started.page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("form-action 'self' http://127.0.0.1:9");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(started.page.headers.get("x-frame-options")).toBe("DENY");
    expect(started.page.headers.get("cache-control")).toBe("no-store");
    expect(started.html).not.toMatch(/<script/i);
    expect(started.html).toContain("&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(started.html).toMatch(/<label for="username">/);
    expect(started.html).toMatch(/<label for="password">/);
    const form = parseForm(started.html);
    expect(form.method).toBe("post");
    expect(form.action.origin).toBe(as.issuer);
    expect([...form.fields.keys()].sort()).toEqual(["password", "username"]);
  });

  it("Cancel ends the request with access_denied at the redirect URI, and no code", async () => {
    const started = await startSignIn("audit-console", `openid ${AUDIT_SCOPE}`);
    expect(started.html).toMatch(/<button type="submit" name="action" value="cancel" formnovalidate>Cancel<\/button>/);
    const { action } = parseForm(started.html);
    const res = await fetch(action, {
      method: "POST",
      headers: { cookie: started.jar.header(), "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ action: "cancel" }),
      redirect: "manual",
    });
    started.jar.take(res);
    expect(res.status).toBe(303);
    const callback = await followToCallback(started, res);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT);
    expect(callback.searchParams.get("error")).toBe("access_denied");
    expect(callback.searchParams.get("state")).toBe(started.state);
    expect(callback.searchParams.get("code")).toBeNull();
  });

  it("a wrong password or an unknown user gets the form again with 401 and no code; the right one then signs in", async () => {
    const started = await startSignIn("audit-console", `openid ${AUDIT_SCOPE}`);
    const wrong = await submitLogin(started, "officer", "not the password");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("location")).toBeNull();
    expect(wrong.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await wrong.text();
    expect(html).toContain("Wrong username or password.");
    expect(html).not.toMatch(/<script/i);
    const unknown = await submitLogin(started, "nobody", USERS.officer.password);
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get("location")).toBeNull();
    await unknown.body?.cancel();
    const right = await submitLogin(started, "officer", USERS.officer.password);
    expect(right.status).toBe(303);
    const callback = await followToCallback(started, right);
    expect(callback.searchParams.get("code")).toBeTruthy();
  });

  it("a POST without the interaction cookie is refused (400), and no code is issued", async () => {
    const started = await startSignIn("audit-console", "openid");
    const { action } = parseForm(started.html);
    const res = await fetch(action, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ username: "officer", password: USERS.officer.password }),
      redirect: "manual",
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    await res.body?.cancel();
  });

  it("the code exchange is refused with a wrong code_verifier and without one (RFC 7636 §4.6)", async () => {
    const { started, callback } = await signIn("audit-console", "officer", USERS.officer.password);
    const wrong = await oauth
      .processAuthorizationCodeResponse(server, publicClient, await exchange(publicClient, oauth.None(), callback, started, oauth.generateRandomCodeVerifier()))
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(oauth.ResponseBodyError);
    expect((wrong as oauth.ResponseBodyError).error).toBe("invalid_grant");
    const missing = await fetch(as.tokenEndpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", client_id: "audit-console", code: callback.searchParams.get("code")!, redirect_uri: REDIRECT }),
    });
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: string }).error).toBe("invalid_grant");
    // the right verifier still redeems the code: the refusals were about the verifier
    const ok = await exchange(publicClient, oauth.None(), callback, started);
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
  });

  it("an authorization request without a PKCE challenge is refused, for the confidential client too", async () => {
    for (const [clientId, redirectUri] of [["audit-console", REDIRECT], ["console-confidential", CONFIDENTIAL_REDIRECT]] as const) {
      const url = new URL(as.authorizationEndpoint);
      url.search = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, response_type: "code", scope: "openid", state: "s1" }).toString();
      const res = await fetch(url, { redirect: "manual" });
      expect(res.status).toBe(303);
      const location = new URL(res.headers.get("location")!);
      expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
      expect(location.searchParams.get("error")).toBe("invalid_request");
      expect(location.searchParams.get("error_description")).toMatch(/requires PKCE/);
      expect(location.searchParams.get("code")).toBeNull();
    }
  });

  it("a redirect_uri that is not registered is refused without redirecting", async () => {
    const url = new URL(as.authorizationEndpoint);
    url.search = new URLSearchParams({
      client_id: "audit-console",
      redirect_uri: "http://127.0.0.1:9/elsewhere",
      response_type: "code",
      scope: "openid",
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: "S256",
    }).toString();
    const res = await fetch(url, { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).toContain("invalid_redirect_uri");
    expect(html).not.toMatch(/<script|https:\/\//i);
  });

  it("addRedirectUri registers a URI for the next request, keeps the others and a sign-in under way", async () => {
    const started = await startSignIn("audit-console", `openid ${AUDIT_SCOPE}`);
    const before = await fetch(
      `${as.authorizationEndpoint}?${new URLSearchParams({ client_id: "audit-console", redirect_uri: SECOND_REDIRECT, response_type: "code", scope: "openid", code_challenge: "x".repeat(43), code_challenge_method: "S256" })}`,
      { redirect: "manual" },
    );
    expect(before.status).toBe(400);
    await before.body?.cancel();
    as.addRedirectUri("audit-console", SECOND_REDIRECT);
    expect(as.clients["audit-console"]!.redirectUris).toEqual([REDIRECT, SECOND_REDIRECT]);
    // the sign-in started before the provider was rebuilt finishes
    const posted = await submitLogin(started, "officer", USERS.officer.password);
    const callback = await followToCallback(started, posted);
    expect(`${callback.origin}${callback.pathname}`).toBe(REDIRECT);
    // and the new URI works end to end
    const second = await signIn("audit-console", "officer", USERS.officer.password, `openid ${AUDIT_SCOPE}`, SECOND_REDIRECT);
    expect(`${second.callback.origin}${second.callback.pathname}`).toBe(SECOND_REDIRECT);
    const result = await oauth.processAuthorizationCodeResponse(
      server,
      publicClient,
      await exchange(publicClient, oauth.None(), second.callback, second.started, second.started.verifier, SECOND_REDIRECT),
      { expectedNonce: second.started.nonce },
    );
    expect(result.scope?.split(" ")).toContain(AUDIT_SCOPE);
  });

  it("signed in already (a session), a request for more scopes is granted without a second login, by the user's rules", async () => {
    const first = await signIn("audit-console", "clerk", USERS.clerk.password, "openid");
    expect(first.callback.searchParams.get("code")).toBeTruthy();
    // same browser, now asking for the audit scope: oidc-provider asks for consent, which the server gives at once
    const jar = first.started.jar;
    const again = await authorize(jar, "audit-console", `openid ${AUDIT_SCOPE}`, REDIRECT);
    expect(again.interaction.pathname).toMatch(/^\/interaction\//);
    const interaction = await fetch(again.interaction, { headers: { cookie: jar.header() }, redirect: "manual" });
    jar.take(interaction);
    expect(interaction.status).toBe(303);
    const started: Started = { ...first.started, ...again };
    const callback = await followToCallback(started, interaction);
    const result = await oauth.processAuthorizationCodeResponse(server, publicClient, await exchange(publicClient, oauth.None(), callback, started), {
      expectedNonce: started.nonce,
      requireIdToken: true,
    });
    expect(oauth.getValidatedIdTokenClaims(result)!.sub).toBe("clerk");
    expect(result.scope).toBe("openid");
  });

  it("a request naming a resource (RFC 8707) gets a JWT access token for it, with the user's subject and scope", async () => {
    const resource = "http://127.0.0.1:9/audit";
    as.addResource(resource);
    const started = await startSignIn("audit-console", `openid ${AUDIT_SCOPE}`, REDIRECT, { resource });
    const posted = await submitLogin(started, "officer", USERS.officer.password);
    const callback = await followToCallback(started, posted);
    const result = await oauth.processAuthorizationCodeResponse(server, publicClient, await exchange(publicClient, oauth.None(), callback, started), { expectedNonce: started.nonce });
    expect(result.scope).toBe(AUDIT_SCOPE);
    const claims = JSON.parse(Buffer.from(result.access_token.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ iss: as.issuer, aud: resource, sub: "officer", client_id: "audit-console", scope: AUDIT_SCOPE, fhirUser: "Practitioner/po-1" });
  });

  it("addRedirectUri throws on an unknown client, a client credentials client, a relative URL or a fragment", () => {
    expect(() => as.addRedirectUri("nobody", REDIRECT)).toThrow(/unknown client "nobody"/);
    expect(() => as.addRedirectUri("backend", REDIRECT)).toThrow(/does not use the authorization code flow/);
    expect(() => as.addRedirectUri("audit-console", "/callback")).toThrow(/not an absolute URL/);
    expect(() => as.addRedirectUri("audit-console", "http://127.0.0.1:9/cb#x")).toThrow(/has a fragment/);
    expect(as.clients["audit-console"]!.redirectUris).not.toContain("/callback");
  });

  it("options that do not fit the grant type or the users are refused at start", async () => {
    const start = (clients: Parameters<typeof startDevAuthorizationServer>[0]["clients"], users?: Parameters<typeof startDevAuthorizationServer>[0]["users"]) =>
      startDevAuthorizationServer({ resources: [], clients, ...(users && { users }) });
    await expect(start([{ clientId: "c", grantType: "authorization_code", scopes: [], alg: "ES384" }])).rejects.toThrow(/alg is not used by authorization code clients/);
    await expect(start([{ clientId: "c", grantType: "authorization_code", scopes: [], introspect: true }])).rejects.toThrow(/public client cannot introspect/);
    await expect(start([{ clientId: "c", scopes: [], redirectUris: [REDIRECT] }])).rejects.toThrow(/redirectUris needs grantType "authorization_code"/);
    await expect(start([{ clientId: "c", grantType: "authorization_code", scopes: [], redirectUris: ["callback"] }])).rejects.toThrow(/not an absolute URL/);
    await expect(start([{ clientId: "c", scopes: [] }], [USERS.clerk, USERS.clerk])).rejects.toThrow(/duplicate username "clerk"/);
    await expect(start([{ clientId: "c", scopes: [] }], [{ username: "u", password: "", scopes: [] }])).rejects.toThrow(/user "u" has no password/);
    // `clients` is required: no default set of clients
    await expect(start([])).rejects.toThrow(/at least one client is required/);
    // @ts-expect-error clients is a required option
    await expect(startDevAuthorizationServer({ resources: [] })).rejects.toThrow(/at least one client is required/);
  });
});
