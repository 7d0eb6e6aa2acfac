/**
 * Auth at the HTTP layer: the bearer check in front of the endpoint (src/auth's {@link BearerAuthenticator}), the
 * anonymous caller of an app served without one, and the RFC 9728 protected resource metadata route. The check puts
 * the verified principal on the request as the SDK's `AuthInfo` (`req.auth`), where {@link principalOf} reads it.
 */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import type { AuthInfo } from "@modelcontextprotocol/server";
import { INTERNAL_ERROR, type Principal } from "../protocol/index.js";
import { TRANSPORT_ERROR } from "../protocol/errors.js";
import type { BearerAuthenticator } from "../auth/types.js";
import type { OperationalLogger } from "../server/index.js";
import type { RefusalAudit } from "./refusal-audit.js";

/** A request as the SDK's transports read it: with the caller's `AuthInfo`. */
type AuthedRequest = Request & { auth?: AuthInfo };

/** The principal the bearer check verified for `req` (none: no check, or not passed yet). */
export function principalOf(req: Request): Principal | undefined {
  return (req as AuthedRequest).auth?.extra?.["principal"] as Principal | undefined;
}

/** The JSON-RPC body a GET or DELETE on the endpoint is checked as by the bearer authenticator. */
/** Bearer refusals caused by the authorization server's side (its key set, its introspection endpoint): audited `failed`. */
const SERVER_SIDE_REASONS: ReadonlySet<string> = new Set(["key_set_unavailable", "key_set_timeout", "introspection_unavailable"]);
const AS_INITIALIZE = Object.freeze({ jsonrpc: "2.0", method: "initialize" });

/** Paths the RFC 9728 metadata may be served at (the bearer check in force says which one). */
export const RESOURCE_METADATA_ROUTE = /^\/\.well-known\/oauth-protected-resource(?:\/.*)?$/;

/**
 * RFC 9728 protected resource metadata, at the path of the bearer check in force (known once a factory is bound;
 * until then, and on any other path, the route passes: 404).
 */
export function protectedResourceMetadata(bearer: () => BearerAuthenticator | undefined): RequestHandler {
  return (req, res, next) => {
    const b = bearer();
    if (!b || req.path !== b.resourceMetadataPath) return next();
    res.set("cache-control", "public, max-age=300").json(b.resourceMetadata());
  };
}

/** What {@link bearerCheck} needs from the app. */
export interface BearerCheckOptions {
  /** The bearer check in force; undefined while a bearer factory is not yet bound (then: 503). */
  bearer: () => BearerAuthenticator | undefined;
  /** The server of the legacy session `sessionId`, whose method scopes a POST in it is checked against. */
  sessionServer: (sessionId: string) => { pipeline: { requiredScopes(method: string): readonly string[] } } | undefined;
  audit: RefusalAudit;
  logger: OperationalLogger;
  agent: string;
}

/**
 * The bearer check. Runs after the body limit: it reads the JSON-RPC method(s) to answer a missing method scope with
 * 403 insufficient_scope and the scope to request (RFC 6750 §3.1; MCP authorization, "Scope challenge"). A refused
 * request gets the authenticator's status and `WWW-Authenticate` challenge, and an audit record.
 */
export function bearerCheck(options: BearerCheckOptions): RequestHandler {
  const { audit, logger, agent } = options;
  return async (req: Request, res: Response, next: NextFunction) => {
    const sourceAddress = req.socket.remoteAddress;
    const bearerNow = options.bearer();
    if (!bearerNow) {
      // a bearer factory not yet bound to the resource identifier (listen() binds it): fail closed
      audit.refuse(req, res, { status: 503, code: TRANSPORT_ERROR, message: "Not ready: the resource identifier is not bound yet", reason: "resource_not_bound", outcome: "failed", headers: { "retry-after": "1" } });
      return;
    }
    const authorization: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      if (req.rawHeaders[i]!.toLowerCase() === "authorization") authorization.push(req.rawHeaders[i + 1]!);
    }
    let check;
    try {
      // In a session the session's server states its method scopes too (e.g. a sampling handler's requiredScopes),
      // so the HTTP 403 and the pipeline agree; the authenticator's own methodScopes entries still hold beside them. A
      // request without a session (initialize) uses the authenticator's table. GET (the session's SSE stream, replays
      // included) and DELETE carry no JSON-RPC body: they are checked as initialize, so using a session needs the
      // scopes opening it did.
      const sid = req.headers["mcp-session-id"];
      const session = typeof sid === "string" && req.method === "POST" ? options.sessionServer(sid) : undefined;
      check = await bearerNow.check({
        authorization,
        url: req.originalUrl,
        contentType: req.headers["content-type"],
        body: req.method === "GET" || req.method === "DELETE" ? AS_INITIALIZE : req.body,
        ...(session && { methodScopes: (m: string) => session.pipeline.requiredScopes(m) }),
      });
    } catch {
      check = undefined;
    }
    if (!check) {
      logger.error("bearer authenticator failed", { agent });
      audit.refuse(req, res, { status: 500, code: INTERNAL_ERROR, message: "Internal error", reason: "authenticator_error", outcome: "failed" });
      return;
    }
    if (!check.ok) {
      // the authorization server's key set or introspection endpoint failing is the server side's fault, not the caller's
      const outcome = check.reason !== undefined && SERVER_SIDE_REASONS.has(check.reason) ? "failed" : "denied";
      audit.refused(req, res, check.status, check.reason ?? check.error ?? "no_token", outcome, check.principal);
      res
        .status(check.status)
        .set("www-authenticate", check.wwwAuthenticate)
        .set("cache-control", "no-store")
        // RFC 6750 §3.1: a request without credentials gets no error code, in the body as in the challenge; the body
        // repeats the challenge's scope and resource metadata URL, so a client that sees only the body can act on it
        .json({
          ...(check.error !== undefined && { error: check.error }),
          error_description: check.description,
          ...(check.scope !== undefined && check.status === 403 && { scope: check.scope }),
          ...(check.resourceMetadata !== undefined && { resource_metadata: check.resourceMetadata }),
        });
      return;
    }
    const p = check.verified.principal;
    (req as AuthedRequest).auth = {
      token: check.verified.token,
      clientId: p.clientId,
      scopes: p.scopes,
      ...(p.expiresAt !== undefined && { expiresAt: p.expiresAt }),
      extra: { principal: p, sourceAddress },
    };
    next();
  };
}

/** Without a bearer check (`bearer: false`): every request reaches the server as an anonymous caller (no principal). */
export function anonymousCaller(req: Request, _res: Response, next: NextFunction): void {
  (req as AuthedRequest).auth = { token: "", clientId: "", scopes: [], extra: { sourceAddress: req.socket.remoteAddress } };
  next();
}
