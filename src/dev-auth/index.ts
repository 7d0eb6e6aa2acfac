/**
 * A development authorization server for your own agents (`hmcp/dev-auth`; `hmcp dev-auth-server` on the command
 * line): a real OAuth 2.0 / OpenID provider (`oidc-provider`, an optional peer dependency: `npm install -D
 * oidc-provider`) started in-process on loopback. It issues RFC 9068 JWT access tokens (`typ: at+jwt`, ES256, one
 * signing key per start) through the client credentials grant with private_key_jwt client authentication (SMART
 * Backend Services) or client_secret_basic, for the resources named at start (RFC 8707 resource indicators), with
 * SMART scopes and an optional `patient` launch context per client. No token is minted by hand. The demo runs on it.
 *
 * It also signs users in (`users`, clients with `grantType: "authorization_code"`): the authorization code flow
 * (RFC 6749 §4.1) with PKCE S256 required (RFC 7636) and OpenID Connect ID tokens (Core §3.1), SMART App Launch
 * standalone launch without launch context, through its own login page (login.ts). The audit console's sign-in
 * runs on it.
 *
 * Development and tests only, never production: keys live in memory and die with the process, clients and users
 * (their passwords in clear) come from a config list, and the issuer is plain http on 127.0.0.1.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair } from "jose";
import type { JWK } from "jose";
import Provider, { errors } from "oidc-provider";
import type { ProviderLike } from "./provider-types.js";
import { createMemoryAdapter } from "./memory-adapter.js";
import { IDENTITY_SCOPES, interactionUid, renderErrorPage, serveLoginPage } from "./login.js";
import type { DevUserConfig } from "./login.js";

export { createMemoryAdapter, MemoryStoreFullError } from "./memory-adapter.js";
export type { MemoryAdapterOptions } from "./memory-adapter.js";
export type { DevUserConfig } from "./login.js";

/** A client the development authorization server registers. */
export interface DevClientConfig {
  /** OAuth client id. */
  clientId: string;
  /**
   * Scopes this client may be granted (requests for others are silently narrowed, RFC 6749 §3.3). An
   * authorization code client may also request `openid`, `profile` and `fhirUser`; asking for a scope outside these
   * is refused (invalid_scope), and a user is granted only those of them the user may have ({@link DevUserConfig}).
   */
  scopes: string[];
  /**
   * How the client gets tokens. Default `"client_credentials"` (SMART Backend Services: private_key_jwt with a key
   * pair generated at start, or client_secret_basic with `clientSecret`).
   *
   * `"authorization_code"`: a user signs in on the server's login page (RFC 6749 §4.1; OpenID Connect Core §3.1;
   * SMART App Launch standalone launch, without launch context). PKCE with S256 is required (RFC 7636), the response
   * type is `code`, response mode `query` by default. The client is public (token endpoint auth method `none`, SMART
   * `client-public`) unless `clientSecret` is set (client_secret_basic, `client-confidential-symmetric`); it gets no
   * generated keys. Its access token is opaque and good at the userinfo endpoint only, unless the request names a
   * resource (RFC 8707), which gets a JWT access token for that resource; either way the token response's `scope`
   * (RFC 6749 §5.1) says what was granted, and the ID token carries `sub` (the username), `name` (scope `profile`)
   * and `fhirUser` (scope `fhirUser`). `alg`, `patient` and `fhirUser` (set it on the user) are refused for it, and
   * `introspect` for a public one.
   */
  grantType?: "client_credentials" | "authorization_code";
  /**
   * Authorization code clients: the redirect URIs, matched exactly (absolute, no fragment, RFC 6749 §3.1.2). Default
   * none: add them with {@link DevAuthorizationServer.addRedirectUri}; until one is registered, the provider does not
   * know the client (invalid_client).
   */
  redirectUris?: string[];
  /** SMART launch context: tokens carry this `patient` claim (a FHIR Patient id). Client credentials clients only. */
  patient?: string;
  /** SMART `fhirUser` claim. Client credentials clients only (a user's is {@link DevUserConfig.fhirUser}). */
  fhirUser?: string;
  /** `tenant` claim. */
  tenant?: string;
  /** Client assertion algorithm for private_key_jwt. Default ES384 (SMART Backend Services). */
  alg?: "ES384" | "RS384";
  /**
   * When set, the client authenticates with client_secret_basic: instead of private_key_jwt (client credentials), or
   * instead of being a public client (authorization code).
   */
  clientSecret?: string;
  /** A resource server allowed to call the introspection endpoint (RFC 7662 §2.1). Default false. */
  introspect?: boolean;
}

/** A protected resource (an HMCP server) the development authorization server issues tokens for. */
export interface DevResourceConfig {
  /** Resource identifier (RFC 8707), e.g. "http://127.0.0.1:3001/mcp"; becomes the token's `aud`. */
  identifier: string;
  /** Token format: signed JWT (default) or opaque (for RFC 7662 introspection). */
  format?: "jwt" | "opaque";
  /** Access token lifetime, seconds. Default 300. */
  accessTokenTTLSec?: number;
}

/** Options of {@link startDevAuthorizationServer}. */
export interface DevAuthorizationServerOptions {
  /** TCP port on 127.0.0.1. Default 0 (any free port). */
  port?: number;
  /**
   * Registered clients; required, at least one (there is no default set: an empty or missing list rejects with
   * `Error("startDevAuthorizationServer: at least one client is required")`). Each entry is a {@link DevClientConfig}:
   * at least `clientId` and the `scopes` it may be granted, e.g. `{ clientId: "agent", scopes: ["hmcp:sample"] }` for a
   * client credentials client with a generated key pair, or
   * `{ clientId: "console", grantType: "authorization_code", scopes: ["openid", "profile", "user/AuditEvent.rs"] }` for
   * users signing in ({@link DevAuthorizationServerOptions.users}; redirect URIs in `redirectUris` or later with
   * {@link DevAuthorizationServer.addRedirectUri}). Client ids must be unique.
   */
  clients: DevClientConfig[];
  /**
   * Resources tokens may be issued for (identifiers or configs). May be empty when they are added later with
   * {@link DevAuthorizationServer.addResource} (an agent whose port is chosen after the server starts).
   */
  resources: Array<string | DevResourceConfig>;
  /**
   * Most entries (stored tokens, client assertion `jti`s, ...) the in-memory store holds at once. Default 10,000.
   * When it is full of unexpired entries, requests that must store something fail (500 server_error).
   */
  maxStoredEntries?: number;
  /**
   * Users who can sign in on the login page (authorization code clients). Default none. Usernames must be unique and
   * passwords non-empty. Development only: passwords are kept in clear, in memory.
   */
  users?: DevUserConfig[];
}

/** A registered client with the keys it authenticates with. */
export interface DevClient {
  clientId: string;
  scopes: string[];
  /** How the client gets tokens ({@link DevClientConfig.grantType}). */
  grantType: "client_credentials" | "authorization_code";
  /** Authorization code clients: the redirect URIs registered now (including those added since start). */
  redirectUris?: string[];
  patient?: string;
  /** private_key_jwt clients: the private JWK (with `kid` and `alg`) to sign client assertions. */
  privateJwk?: JWK;
  /** private_key_jwt clients: the registered public JWK. */
  publicJwk?: JWK;
  /** client_secret_basic clients: the secret. */
  clientSecret?: string;
}

/** A running development authorization server. */
export interface DevAuthorizationServer {
  /** Issuer identifier, e.g. "http://127.0.0.1:41234". */
  issuer: string;
  /** The JWKS URI resource servers verify access tokens with. */
  jwksUri: string;
  tokenEndpoint: string;
  introspectionEndpoint: string;
  /** The authorization endpoint (RFC 6749 §3.1), e.g. "http://127.0.0.1:41234/auth"; its login page is `/interaction/<uid>`. */
  authorizationEndpoint: string;
  /** Clients by client id. */
  clients: Record<string, DevClient>;
  /** Number of access tokens issued since start (client credentials and authorization code). */
  issuedTokens(): number;
  /**
   * Rotates the access-token signing key: a new ES256 key signs from now on; the previous one stays published in the
   * JWKS (so tokens it signed still verify) unless `keepPrevious: false`, which also withdraws every older key.
   * Opaque tokens and other stored state survive; the HTTP listener and issuer stay the same.
   * @returns the new key's `kid`
   */
  rotateSigningKey(options?: { keepPrevious?: boolean }): Promise<string>;
  /**
   * Registers another resource tokens may be issued for (e.g. an agent's `http://127.0.0.1:<port>/mcp` once bound).
   * @throws Error when the identifier is not an absolute URL
   */
  addResource(resource: string | DevResourceConfig): void;
  /**
   * Registers another redirect URI for an authorization code client (e.g. the audit console's
   * `http://127.0.0.1:<port>/callback` once bound); it takes effect for the next request (the provider is rebuilt on
   * the same listener, stored state kept). Adding a URI already registered does nothing.
   * @throws Error when the client is unknown or not an authorization code client, or the URI is not an absolute URL or
   * has a fragment (RFC 6749 §3.1.2)
   */
  addRedirectUri(clientId: string, uri: string): void;
  /** Stops the HTTP server. */
  stop(): Promise<void>;
}

async function clientKeys(alg: "ES384" | "RS384", kid: string): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg, use: "sig" };
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { privateJwk, publicJwk };
}

/** Longest client assertion lifetime accepted (SMART Backend Services), seconds. */
const MAX_ASSERTION_LIFETIME_SEC = 300;
/** oidc-provider's default clock tolerance, seconds; also allowed for the assertion's exp. */
const CLOCK_TOLERANCE_SEC = 15;

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** A redirect URI error, or undefined when `uri` may be registered (absolute, no fragment: RFC 6749 §3.1.2). */
function redirectUriProblem(uri: string): string | undefined {
  const u = URL.parse(uri);
  if (!u) return `'${uri}' is not an absolute URL`;
  if (u.href.includes("#")) return `'${uri}' has a fragment`;
  return undefined;
}

/** @throws Error naming the option a client config may not combine with its grant type */
function checkClient(c: DevClientConfig): void {
  const where = `startDevAuthorizationServer: client "${c.clientId}"`;
  if (c.grantType !== undefined && c.grantType !== "client_credentials" && c.grantType !== "authorization_code") {
    throw new Error(`${where}: grantType must be "client_credentials" or "authorization_code"`);
  }
  if (c.grantType !== "authorization_code") {
    if (c.redirectUris !== undefined) throw new Error(`${where}: redirectUris needs grantType "authorization_code"`);
    return;
  }
  for (const option of ["alg", "patient", "fhirUser"] as const) {
    if (c[option] !== undefined) throw new Error(`${where}: ${option} is not used by authorization code clients`);
  }
  if (c.introspect === true && c.clientSecret === undefined) throw new Error(`${where}: a public client cannot introspect (set clientSecret)`);
  for (const uri of c.redirectUris ?? []) {
    const problem = redirectUriProblem(uri);
    if (problem !== undefined) throw new Error(`${where}: redirect URI ${problem}`);
  }
}

/**
 * Starts the development authorization server on 127.0.0.1 (its issuer is `http://127.0.0.1:<port>`).
 * @throws Error when the port is in use, no client is given, a client id or username repeats, a password is empty, or
 * a client combines options its grant type does not use
 */
export async function startDevAuthorizationServer(options: DevAuthorizationServerOptions): Promise<DevAuthorizationServer> {
  const resources = new Map<string, DevResourceConfig>();
  for (const r of options.resources ?? []) {
    const cfg = typeof r === "string" ? { identifier: r } : r;
    resources.set(cfg.identifier, cfg);
  }

  const configs = options.clients ?? [];
  if (configs.length === 0) throw new Error("startDevAuthorizationServer: at least one client is required");
  const byId = new Map<string, DevClientConfig>();
  for (const c of configs) {
    if (byId.has(c.clientId)) throw new Error(`startDevAuthorizationServer: duplicate client id "${c.clientId}"`);
    checkClient(c);
    byId.set(c.clientId, c);
  }
  const users = new Map<string, DevUserConfig>();
  for (const u of options.users ?? []) {
    if (u.username === "") throw new Error("startDevAuthorizationServer: a username is empty");
    if (users.has(u.username)) throw new Error(`startDevAuthorizationServer: duplicate username "${u.username}"`);
    if (typeof u.password !== "string" || u.password === "") throw new Error(`startDevAuthorizationServer: user "${u.username}" has no password`);
    users.set(u.username, { ...u, scopes: [...u.scopes] });
  }
  const isCode = (c: DevClientConfig | undefined): boolean => c?.grantType === "authorization_code";
  const codeClients = configs.filter(isCode);
  const anyCode = codeClients.length > 0;
  const anyPublic = codeClients.some((c) => c.clientSecret === undefined);

  // every scope some client may be granted: advertised in the discovery documents (scopes_supported)
  const scopesSupported = [...new Set(["openid", ...(anyCode ? IDENTITY_SCOPES : []), ...configs.flatMap((c) => c.scopes)])].sort();
  const ref: { handler?: (req: IncomingMessage, res: ServerResponse) => void; provider?: ProviderLike; smart?: string } = {};
  const login = {
    provider: () => ref.provider!,
    users,
    clientScopes: (clientId: string) => byId.get(clientId)?.scopes ?? [],
  };
  const server = createServer((req, res) => {
    const uid = interactionUid(req.url?.split("?")[0]);
    if (req.method === "GET" && req.url === "/.well-known/smart-configuration" && ref.smart !== undefined) {
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(ref.smart);
    } else if (uid !== undefined && ref.provider) {
      void serveLoginPage(login, uid, req, res);
    } else if (ref.handler) ref.handler(req, res);
    else {
      res.statusCode = 503;
      res.end();
    }
  });
  const port = await listen(server, options.port ?? 0);
  const issuer = `http://127.0.0.1:${port}`;

  const clients: Record<string, DevClient> = {};
  const registrations: Record<string, unknown>[] = [];
  for (const c of configs) {
    const out: DevClient = { clientId: c.clientId, scopes: [...c.scopes], grantType: c.grantType ?? "client_credentials" };
    let reg: Record<string, unknown>;
    if (isCode(c)) {
      const redirectUris = [...new Set(c.redirectUris ?? [])];
      reg = {
        client_id: c.clientId,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        redirect_uris: redirectUris,
        scope: [...new Set([...IDENTITY_SCOPES, ...c.scopes])].join(" "),
        token_endpoint_auth_method: c.clientSecret !== undefined ? "client_secret_basic" : "none",
      };
      if (c.clientSecret !== undefined) {
        reg["client_secret"] = c.clientSecret;
        out.clientSecret = c.clientSecret;
      }
      out.redirectUris = [...redirectUris];
    } else {
      reg = { client_id: c.clientId, grant_types: ["client_credentials"], response_types: [], redirect_uris: [] };
      if (c.patient !== undefined) out.patient = c.patient;
      if (c.clientSecret !== undefined) {
        reg["client_secret"] = c.clientSecret;
        reg["token_endpoint_auth_method"] = "client_secret_basic";
        out.clientSecret = c.clientSecret;
      } else {
        const alg = c.alg ?? "ES384";
        const { privateJwk, publicJwk } = await clientKeys(alg, `${c.clientId}-key-1`);
        reg["token_endpoint_auth_method"] = "private_key_jwt";
        reg["token_endpoint_auth_signing_alg"] = alg;
        reg["jwks"] = { keys: [publicJwk] };
        out.privateJwk = privateJwk;
        out.publicJwk = publicJwk;
      }
    }
    registrations.push(reg);
    clients[c.clientId] = out;
  }

  const newSigningKey = async (): Promise<JWK> => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    return { ...(await exportJWK(privateKey)), kid: `as-es256-${randomBytes(4).toString("hex")}`, alg: "ES256", use: "sig" };
  };
  // Published signing keys, newest first; the newest signs. Rotation rebuilds the provider on the same listener.
  let signingKeys: JWK[] = [await newSigningKey()];
  const adapter = createMemoryAdapter(options.maxStoredEntries !== undefined ? { maxEntries: options.maxStoredEntries } : {});
  const cookieKeys = [randomBytes(32).toString("base64url")];

  let issued = 0;
  const build = () => {
    const signKid = signingKeys[0]!.kid;
    // oidc-provider copies static clients when it is built: a client added a redirect URI means a new provider. An
    // authorization code client without a redirect URI would be invalid metadata, so it is left out until it has one.
    const registered = registrations.filter((r) => !(Array.isArray(r["response_types"]) && r["response_types"].length > 0 && (r["redirect_uris"] as string[]).length === 0));
    const provider = new Provider(issuer, {
      clients: structuredClone(registered),
      adapter,
      clientDefaults: { id_token_signed_response_alg: "ES256", grant_types: ["client_credentials"], response_types: [] },
      jwks: { keys: signingKeys },
      cookies: { keys: cookieKeys },
      clientAuthMethods: ["private_key_jwt", "client_secret_basic", ...(anyPublic ? ["none"] : [])],
      // SMART Backend Services: a client assertion's exp is at most five minutes ahead. This also bounds how long its
      // jti stays in the replay store, so a full store (see memory-adapter.ts) frees itself within minutes.
      assertJwtClientAuthClaimsAndHeader: (_ctx: unknown, claims: { exp?: unknown }) => {
        const now = Math.floor(Date.now() / 1000);
        if (typeof claims.exp === "number" && claims.exp > now + MAX_ASSERTION_LIFETIME_SEC + CLOCK_TOLERANCE_SEC) {
          throw new errors.InvalidClientAuth(`client assertion exp must be at most ${MAX_ASSERTION_LIFETIME_SEC} s ahead`);
        }
      },
      enabledJWA: { clientAuthSigningAlgValues: ["ES384", "RS384", "ES256", "RS256", "PS256", "EdDSA"] },
      scopes: scopesSupported,
      // Authorization code flow (RFC 6749 §4.1): only response type `code`, PKCE (RFC 7636, S256 only in oidc-provider
      // 9) required of every client, confidential ones too (OAuth 2.0 Security BCP, RFC 9700 §2.1.1).
      responseTypes: ["code"],
      pkce: { required: () => true },
      ...(anyCode && { claims: { profile: ["name"], fhirUser: ["fhirUser"] } }),
      // SMART App Launch: `fhirUser` (and `name`) in the ID token itself, not only at the userinfo endpoint.
      conformIdTokenClaims: false,
      findAccount: (_ctx: unknown, sub: string) => {
        const user = users.get(sub);
        if (!user) return undefined;
        return {
          accountId: sub,
          claims: () => ({
            sub,
            ...(user.name !== undefined && { name: user.name }),
            ...(user.fhirUser !== undefined && { fhirUser: user.fhirUser }),
          }),
        };
      },
      renderError: renderErrorPage,
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      ttl: {
        ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 300,
        AccessToken: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 300,
        AuthorizationCode: 60,
        IdToken: 300,
        Interaction: 600,
        Session: 3600,
        Grant: 3600,
      },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        // Only clients registered as resource servers may introspect; a client may revoke only its own tokens.
        introspection: {
          enabled: true,
          allowedPolicy: (_ctx: unknown, client: { clientId: string }) => byId.get(client.clientId)?.introspect === true,
        },
        revocation: {
          enabled: true,
          allowedPolicy: (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) => token.clientId === client.clientId,
        },
        resourceIndicators: {
          enabled: true,
          // A single configured resource is the default; with several, the client must name one. An authorization
          // code client gets a resource only when it names one (its default token is for the userinfo endpoint).
          defaultResource: (_ctx: unknown, client: { clientId: string }) =>
            resources.size === 1 && !isCode(byId.get(client.clientId)) ? [...resources.keys()][0] : undefined,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resourceIndicator: string, client: { clientId: string }) => {
            const resource = resources.get(resourceIndicator);
            const cfg = byId.get(client.clientId);
            if (!resource || !cfg) throw new errors.InvalidTarget();
            const info: Record<string, unknown> = {
              scope: cfg.scopes.join(" "),
              audience: resource.identifier,
              accessTokenTTL: resource.accessTokenTTLSec ?? 300,
              accessTokenFormat: resource.format ?? "jwt",
            };
            if ((resource.format ?? "jwt") === "jwt") info["jwt"] = { sign: { alg: "ES256", kid: signKid } };
            return info;
          },
        },
      },
      extraTokenClaims: (_ctx: unknown, token: { clientId?: string; accountId?: string }) => {
        const cfg = token.clientId ? byId.get(token.clientId) : undefined;
        if (!cfg) return undefined;
        const extra: Record<string, string> = {};
        if (cfg.patient !== undefined) extra["patient"] = cfg.patient;
        if (cfg.fhirUser !== undefined) extra["fhirUser"] = cfg.fhirUser;
        if (cfg.tenant !== undefined) extra["tenant"] = cfg.tenant;
        const user = token.accountId !== undefined ? users.get(token.accountId) : undefined;
        if (user?.fhirUser !== undefined) extra["fhirUser"] = user.fhirUser;
        return extra;
      },
    });
    const count = () => {
      issued++;
    };
    provider.on("client_credentials.saved", count);
    provider.on("client_credentials.issued", count);
    provider.on("access_token.saved", count);
    provider.on("access_token.issued", count);
    return provider;
  };
  const install = () => {
    const provider = build();
    ref.provider = provider;
    ref.handler = provider.callback();
  };
  install();
  // SMART App Launch 2.x discovery (§ "Conformance / SMART on FHIR discovery"): what a SMART client reads before
  // asking for a token. The authorization code parts (and their capabilities) only when such a client is registered.
  const capabilities = ["client-confidential-asymmetric", "client-confidential-symmetric", "permission-v1", "permission-v2"];
  if (anyCode) capabilities.push("launch-standalone", "sso-openid-connect");
  if (anyPublic) capabilities.push("client-public");
  ref.smart = JSON.stringify({
    issuer,
    jwks_uri: `${issuer}/jwks`,
    ...(anyCode && { authorization_endpoint: `${issuer}/auth`, userinfo_endpoint: `${issuer}/me` }),
    token_endpoint: `${issuer}/token`,
    introspection_endpoint: `${issuer}/token/introspection`,
    revocation_endpoint: `${issuer}/token/revocation`,
    grant_types_supported: anyCode ? ["authorization_code", "client_credentials"] : ["client_credentials"],
    ...(anyCode && { response_types_supported: ["code"], code_challenge_methods_supported: ["S256"] }),
    token_endpoint_auth_methods_supported: ["private_key_jwt", "client_secret_basic", ...(anyPublic ? ["none"] : [])],
    token_endpoint_auth_signing_alg_values_supported: ["ES384", "RS384"],
    scopes_supported: scopesSupported,
    capabilities,
  });

  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    tokenEndpoint: `${issuer}/token`,
    introspectionEndpoint: `${issuer}/token/introspection`,
    authorizationEndpoint: `${issuer}/auth`,
    clients,
    issuedTokens: () => issued,
    addResource(r) {
      const cfg = typeof r === "string" ? { identifier: r } : r;
      if (!URL.canParse(cfg.identifier)) throw new Error(`addResource: '${cfg.identifier}' is not an absolute URL`);
      resources.set(cfg.identifier, cfg);
    },
    addRedirectUri(clientId, uri) {
      const cfg = byId.get(clientId);
      if (!cfg) throw new Error(`addRedirectUri: unknown client "${clientId}"`);
      if (!isCode(cfg)) throw new Error(`addRedirectUri: client "${clientId}" does not use the authorization code flow`);
      const problem = redirectUriProblem(uri);
      if (problem !== undefined) throw new Error(`addRedirectUri: ${problem}`);
      const reg = registrations.find((r) => r["client_id"] === clientId)!;
      const uris = reg["redirect_uris"] as string[];
      if (uris.includes(uri)) return;
      uris.push(uri);
      clients[clientId]!.redirectUris = [...uris];
      install();
    },
    async rotateSigningKey(options = {}) {
      const next = await newSigningKey();
      signingKeys = options.keepPrevious === false ? [next] : [next, signingKeys[0]!];
      install();
      return next.kid!;
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
