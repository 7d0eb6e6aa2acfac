/**
 * A development authorization server for your own agents (`hmcp/dev-auth`; `hmcp dev-auth-server` on the command
 * line): a real OAuth 2.0 / OpenID provider (`oidc-provider`, an optional peer dependency: `npm install -D
 * oidc-provider`) started in-process on loopback. It issues RFC 9068 JWT access tokens (`typ: at+jwt`, ES256, one
 * signing key per start) through the client credentials grant with private_key_jwt client authentication (SMART
 * Backend Services) or client_secret_basic, for the resources named at start (RFC 8707 resource indicators), with
 * SMART scopes and an optional `patient` launch context per client. No token is minted by hand. The demo runs on it.
 *
 * Development and tests only, never production: keys live in memory and die with the process, clients come from a
 * config list, and the issuer is plain http on 127.0.0.1.
 */
import { createServer } from "node:http";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair } from "jose";
import type { JWK } from "jose";
import Provider, { errors } from "oidc-provider";
import { createMemoryAdapter } from "./memory-adapter.js";

export { createMemoryAdapter, MemoryStoreFullError } from "./memory-adapter.js";

/** A client the development authorization server registers. */
export interface DevClientConfig {
  /** OAuth client id. */
  clientId: string;
  /** Scopes this client may be granted (requests for others are silently narrowed, RFC 6749 §3.3). */
  scopes: string[];
  /** SMART launch context: tokens carry this `patient` claim (a FHIR Patient id). */
  patient?: string;
  /** SMART `fhirUser` claim. */
  fhirUser?: string;
  /** `tenant` claim. */
  tenant?: string;
  /** Client assertion algorithm for private_key_jwt. Default ES384 (SMART Backend Services). */
  alg?: "ES384" | "RS384";
  /** When set, the client authenticates with client_secret_basic instead of private_key_jwt. */
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
  /** Registered clients. Default {@link defaultDevClients}(). */
  clients?: DevClientConfig[];
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
}

/** A registered client with the keys it authenticates with. */
export interface DevClient {
  clientId: string;
  scopes: string[];
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
  /** Clients by client id. */
  clients: Record<string, DevClient>;
  /** Number of access tokens issued since start. */
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

/**
 * Starts the development authorization server on 127.0.0.1 (its issuer is `http://127.0.0.1:<port>`).
 * @throws Error when the port is in use, no client is given, or a client id repeats
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
    byId.set(c.clientId, c);
  }

  // every scope some client may be granted: advertised in the discovery documents (scopes_supported)
  const scopesSupported = [...new Set(["openid", ...configs.flatMap((c) => c.scopes)])].sort();
  const ref: { handler?: (req: IncomingMessage, res: ServerResponse) => void; smart?: string } = {};
  const server = createServer((req, res) => {
    if (req.method === "GET" && req.url === "/.well-known/smart-configuration" && ref.smart !== undefined) {
      res.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" });
      res.end(ref.smart);
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
    const reg: Record<string, unknown> = {
      client_id: c.clientId,
      grant_types: ["client_credentials"],
      response_types: [],
      redirect_uris: [],
    };
    const out: DevClient = { clientId: c.clientId, scopes: [...c.scopes] };
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
    const provider = new Provider(issuer, {
      clients: registrations,
      adapter,
      clientDefaults: { id_token_signed_response_alg: "ES256", grant_types: ["client_credentials"], response_types: [] },
      jwks: { keys: signingKeys },
      cookies: { keys: cookieKeys },
      clientAuthMethods: ["private_key_jwt", "client_secret_basic"],
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
      ttl: {
        ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) => token.resourceServer?.accessTokenTTL ?? 300,
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
          // A single configured resource is the default; with several, the client must name one.
          defaultResource: () => (resources.size === 1 ? [...resources.keys()][0] : undefined),
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
      extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => {
        const cfg = token.clientId ? byId.get(token.clientId) : undefined;
        if (!cfg) return undefined;
        const extra: Record<string, string> = {};
        if (cfg.patient !== undefined) extra["patient"] = cfg.patient;
        if (cfg.fhirUser !== undefined) extra["fhirUser"] = cfg.fhirUser;
        if (cfg.tenant !== undefined) extra["tenant"] = cfg.tenant;
        return extra;
      },
    });
    provider.on("client_credentials.saved", () => {
      issued++;
    });
    provider.on("client_credentials.issued", () => {
      issued++;
    });
    return provider;
  };
  ref.handler = build().callback();
  // SMART App Launch 2.x discovery (§ "Conformance / SMART on FHIR discovery", Backend Services): what a SMART client
  // reads before asking for a token
  ref.smart = JSON.stringify({
    issuer,
    jwks_uri: `${issuer}/jwks`,
    token_endpoint: `${issuer}/token`,
    introspection_endpoint: `${issuer}/token/introspection`,
    revocation_endpoint: `${issuer}/token/revocation`,
    grant_types_supported: ["client_credentials"],
    token_endpoint_auth_methods_supported: ["private_key_jwt", "client_secret_basic"],
    token_endpoint_auth_signing_alg_values_supported: ["ES384", "RS384"],
    scopes_supported: scopesSupported,
    capabilities: ["client-confidential-asymmetric", "client-confidential-symmetric", "permission-v1", "permission-v2"],
  });

  return {
    issuer,
    jwksUri: `${issuer}/jwks`,
    tokenEndpoint: `${issuer}/token`,
    introspectionEndpoint: `${issuer}/token/introspection`,
    clients,
    issuedTokens: () => issued,
    addResource(r) {
      const cfg = typeof r === "string" ? { identifier: r } : r;
      if (!URL.canParse(cfg.identifier)) throw new Error(`addResource: '${cfg.identifier}' is not an absolute URL`);
      resources.set(cfg.identifier, cfg);
    },
    async rotateSigningKey(options = {}) {
      const next = await newSigningKey();
      signingKeys = options.keepPrevious === false ? [next] : [next, signingKeys[0]!];
      ref.handler = build().callback();
      return next.kid!;
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
