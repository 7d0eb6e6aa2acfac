/**
 * The console's sign-in: OpenID Connect authorization code flow with PKCE (RFC 6749 §4.1, RFC 7636 S256, OIDC Core
 * §3.1), the console as a public or confidential client of the organisation's provider, through oauth4webapi. The
 * authorization response's `iss` is checked when the provider advertises it (RFC 9207), the ID token's nonce always.
 *
 * Access is decided by scope: the token response's granted `scope` must hold the audit-read scope (default SMART's
 * `user/AuditEvent.rs`, SMART App Launch v2 §"Scopes for requesting FHIR resources"). The provider decides who gets
 * it (a role, a group); the console only reads the grant.
 */
import * as oauth from "oauth4webapi";
import { EncryptJWT, jwtDecrypt } from "jose";
import { isLoopbackHost } from "../util/loopback.js";

/** How the console reaches the organisation's OpenID provider. */
export interface ConsoleSignInOptions {
  /** The provider's issuer identifier (discovery at `<issuer>/.well-known/openid-configuration`). */
  issuer: string;
  /** The console's client id at the provider. */
  clientId: string;
  /** A confidential client's secret (client_secret_basic); without it the console is a public client (PKCE only). */
  clientSecret?: string;
  /** Scopes asked for. Default `openid profile <requiredScope>`. */
  scope?: string;
  /** The scope that grants audit read. Default `user/AuditEvent.rs`. */
  requiredScope?: string;
  /**
   * Allow an `http:` issuer. Default: only a loopback issuer (127.0.0.1, ::1, localhost) may be plain http, for the
   * development authorization server; anything else must be https.
   */
  allowInsecureIssuer?: boolean;
  /** Timeout of each request to the provider, ms. Default 10,000. */
  timeoutMs?: number;
  /**
   * Ask the provider to authenticate the user at every sign-in (`prompt=login`, OIDC Core §3.1.2.1), not to reuse its
   * own session. Default true: signing out of the console then really ends access on a shared workstation, and someone
   * refused can sign in as someone else. False keeps single sign-on.
   */
  forceLogin?: boolean;
}

/** A signed-in user, as the session cookie holds them. */
export interface ConsoleUser {
  /** The ID token's `sub`. */
  sub: string;
  /** The ID token's `name`, when the provider sends one. */
  name?: string;
  /** The granted scopes. */
  scopes: string[];
  /** Session id (random), which also binds the CSRF token. */
  sid: string;
}

/** The result of a callback: a user with the audit scope, or a refusal the page can explain. */
export type SignInResult =
  | { ok: true; user: ConsoleUser }
  | { ok: false; status: 400 | 403 | 502; reason: "insufficient_scope" | "invalid_callback" | "provider_error"; sub?: string; scopes?: string[]; message: string };

/** The console's OpenID client: builds the authorization request and completes the callback. @internal */
export class ConsoleSignIn {
  readonly requiredScope: string;
  private readonly scope: string;
  private readonly client: oauth.Client;
  private readonly auth: oauth.ClientAuth;
  private readonly insecure: boolean;
  private as: oauth.AuthorizationServer | undefined;

  constructor(private readonly opts: ConsoleSignInOptions) {
    const issuer = new URL(opts.issuer);
    this.requiredScope = opts.requiredScope ?? "user/AuditEvent.rs";
    this.scope = opts.scope ?? `openid profile ${this.requiredScope}`;
    this.insecure = issuer.protocol === "http:";
    if (this.insecure && !opts.allowInsecureIssuer && !isLoopbackHost(issuer.hostname)) {
      throw new Error(`audit console: the issuer ${opts.issuer} is plain http; use https (only a loopback issuer may be http)`);
    }
    this.client = { client_id: opts.clientId };
    this.auth = opts.clientSecret !== undefined ? oauth.ClientSecretBasic(opts.clientSecret) : oauth.None();
  }

  private http(): { signal: AbortSignal; [oauth.allowInsecureRequests]?: boolean } {
    return { signal: AbortSignal.timeout(this.opts.timeoutMs ?? 10_000), ...(this.insecure && { [oauth.allowInsecureRequests]: true }) };
  }

  /** The provider's metadata (RFC 8414 / OIDC Discovery), fetched once. @throws Error when discovery fails */
  async metadata(): Promise<oauth.AuthorizationServer> {
    if (this.as) return this.as;
    const issuer = new URL(this.opts.issuer);
    const res = await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...this.http() });
    this.as = await oauth.processDiscoveryResponse(issuer, res);
    return this.as;
  }

  /**
   * Starts a sign-in: the authorization URL to redirect to, and what the callback must be checked against (kept by the
   * caller in a short-lived sealed cookie).
   */
  async start(redirectUri: string): Promise<{ url: URL; pending: PendingSignIn }> {
    const as = await this.metadata();
    if (as.authorization_endpoint === undefined) throw new Error("audit console: the provider has no authorization endpoint");
    const pending: PendingSignIn = {
      verifier: oauth.generateRandomCodeVerifier(),
      state: oauth.generateRandomState(),
      nonce: oauth.generateRandomNonce(),
    };
    const url = new URL(as.authorization_endpoint);
    url.searchParams.set("client_id", this.opts.clientId);
    url.searchParams.set("redirect_uri", redirectUri);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("scope", this.scope);
    url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(pending.verifier));
    url.searchParams.set("code_challenge_method", "S256");
    url.searchParams.set("state", pending.state);
    url.searchParams.set("nonce", pending.nonce);
    if (this.opts.forceLogin !== false) url.searchParams.set("prompt", "login");
    return { url, pending };
  }

  /** Completes a sign-in from the callback URL. Never throws for what the provider or the browser sent. */
  async finish(callbackUrl: URL, redirectUri: string, pending: PendingSignIn, newSid: () => string): Promise<SignInResult> {
    let as: oauth.AuthorizationServer;
    try {
      as = await this.metadata();
    } catch {
      return { ok: false, status: 502, reason: "provider_error", message: "The sign-in provider could not be reached." };
    }
    let params: URLSearchParams;
    try {
      params = oauth.validateAuthResponse(as, this.client, callbackUrl, pending.state);
    } catch (e) {
      const denied = e instanceof oauth.AuthorizationResponseError;
      return { ok: false, status: denied ? 403 : 400, reason: "invalid_callback", message: denied ? "The sign-in provider refused the sign-in." : "The sign-in response was not valid (state, issuer or code missing)." };
    }
    try {
      const res = await oauth.authorizationCodeGrantRequest(as, this.client, this.auth, params, redirectUri, pending.verifier, this.http());
      const tokens = await oauth.processAuthorizationCodeResponse(as, this.client, res, { expectedNonce: pending.nonce, requireIdToken: true });
      const claims = oauth.getValidatedIdTokenClaims(tokens);
      const sub = claims?.sub;
      if (typeof sub !== "string") return { ok: false, status: 400, reason: "invalid_callback", message: "The sign-in provider sent no subject." };
      const scopes = (tokens.scope ?? "").split(" ").filter(Boolean);
      if (!scopes.includes(this.requiredScope)) {
        return { ok: false, status: 403, reason: "insufficient_scope", sub, scopes, message: `Your account was not granted the scope ${this.requiredScope}, which the audit console requires.` };
      }
      const name = typeof claims?.["name"] === "string" ? (claims["name"] as string) : undefined;
      return { ok: true, user: { sub, scopes, sid: newSid(), ...(name !== undefined && { name }) } };
    } catch (e) {
      const refused = e instanceof oauth.ResponseBodyError;
      return { ok: false, status: refused ? 400 : 502, reason: refused ? "invalid_callback" : "provider_error", message: refused ? "The sign-in provider refused the code." : "The sign-in could not be completed with the provider." };
    }
  }
}

/** What a sign-in in progress keeps until its callback. */
export interface PendingSignIn {
  verifier: string;
  state: string;
  nonce: string;
}

/**
 * Sealed values in cookies: a JWE (dir, A256GCM) under a key that lives with the console process, with an expiry.
 * Restarting the console signs everyone out. @internal
 */
export class CookieSeal {
  constructor(private readonly key: Uint8Array) {}

  async seal(value: object, ttlSec: number, purpose: string): Promise<string> {
    return new EncryptJWT({ ...value, p: purpose }).setProtectedHeader({ alg: "dir", enc: "A256GCM" }).setIssuedAt().setExpirationTime(`${ttlSec}s`).encrypt(this.key);
  }

  /** The sealed value, or undefined when the cookie is missing, forged, expired or sealed for another purpose. */
  async open<T>(cookie: string | undefined, purpose: string): Promise<T | undefined> {
    if (typeof cookie !== "string" || cookie === "") return undefined;
    try {
      const { payload } = await jwtDecrypt(cookie, this.key, { keyManagementAlgorithms: ["dir"], contentEncryptionAlgorithms: ["A256GCM"] });
      if (payload["p"] !== purpose) return undefined;
      return payload as T;
    } catch {
      return undefined;
    }
  }
}
