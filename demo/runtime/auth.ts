/**
 * Real OAuth for the demo: starts the demo authorization server (oidc-provider, in-process) for the agents' URLs,
 * builds each agent's JWT bearer check against its JWKS, and gives every client a client-credentials token
 * provider (private_key_jwt, SMART Backend Services). No token is minted by hand.
 */
import { createClientCredentialsTokenProvider, createJwtBearerAuthenticator, type BearerAuthenticator, type TokenProvider } from "hmcp";
import type { DevUserConfig } from "hmcp/dev-auth";
import { startDemoAuthorizationServer, type DemoAuthorizationServer } from "../auth-server/index.js";
import { demoClients } from "./clients.js";

/** The audit console's client id at the demo authorization server (`--serve`). */
export const CONSOLE_CLIENT_ID = "hmcp-audit-console";
/** The scope that grants audit read in the console (SMART App Launch v2). */
export const AUDIT_READ_SCOPE = "user/AuditEvent.rs";

export interface DemoAuth {
  issuer: string;
  server: DemoAuthorizationServer;
  /** The bearer check of the agent at `resourceUrl`. */
  bearerFor(resourceUrl: string): BearerAuthenticator;
  /** A token provider for `clientId`, for the agent at `resourceUrl` (RFC 8707 resource indicator). */
  tokenProvider(clientId: string, resourceUrl: string): TokenProvider;
  stop(): Promise<void>;
}

/**
 * Starts the authorization server; resources are registered as their agents bind (`bearerFor`), or up front.
 */
export async function startDemoAuth(options: { resources?: string[]; boundPatient: string; port?: number; consoleUsers?: DevUserConfig[] }): Promise<DemoAuth> {
  const clients = demoClients(options.boundPatient);
  // with console users: the audit console's client (authorization code + PKCE, a public client) and their logins
  const consoleClient = options.consoleUsers ? [{ clientId: CONSOLE_CLIENT_ID, scopes: ["openid", "profile", AUDIT_READ_SCOPE], grantType: "authorization_code" as const }] : [];
  const server = await startDemoAuthorizationServer({
    resources: options.resources ?? [],
    clients: [...clients, ...consoleClient],
    ...(options.consoleUsers && { users: options.consoleUsers }),
    ...(options.port !== undefined && { port: options.port }),
  });
  return {
    issuer: server.issuer,
    server,
    bearerFor(resourceUrl) {
      // the agent's URL becomes a resource this server issues tokens for (RFC 8707), and its bearer check's audience
      server.addResource(resourceUrl);
      return createJwtBearerAuthenticator({
        issuer: server.issuer,
        audience: resourceUrl,
        jwks: { uri: server.jwksUri },
        // Method-level scopes are left to each agent's pipeline, so refusals arrive as JSON-RPC errors with data.
        methodScopes: false,
      });
    },
    tokenProvider(clientId, resourceUrl) {
      const c = server.clients[clientId];
      const cfg = clients.find((x) => x.clientId === clientId);
      if (!c?.privateJwk || !cfg) throw new Error(`demo client ${clientId} has no private key`);
      return createClientCredentialsTokenProvider({
        issuer: server.issuer,
        clientId,
        auth: { type: "private_key_jwt", privateKey: c.privateJwk },
        scope: cfg.scopes,
        resource: resourceUrl,
        allowInsecureRequests: true,
      });
    },
    stop: () => server.stop(),
  };
}
