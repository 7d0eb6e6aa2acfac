/**
 * RFC 9728 OAuth 2.0 Protected Resource Metadata: the document and where it is served.
 */

/** RFC 9728 §2 metadata. `resource` and `authorization_servers` are what MCP clients need; the rest is optional. */
export interface ProtectedResourceMetadata {
  /** The resource identifier (RFC 8707), e.g. "https://agent.example/mcp". */
  resource: string;
  /** Issuer identifiers of the authorization servers that issue tokens for this resource. */
  authorization_servers: string[];
  /** Scopes a client may request for this resource. */
  scopes_supported?: string[];
  /** RFC 6750 methods; HMCP accepts only "header". */
  bearer_methods_supported?: string[];
  resource_name?: string;
  resource_documentation?: string;
  [key: string]: unknown;
}

const WELL_KNOWN = "/.well-known/oauth-protected-resource";

/**
 * The metadata path for a resource identifier, RFC 9728 §3.1: the well-known suffix inserted between the host and
 * the path (`https://h/mcp` → `/.well-known/oauth-protected-resource/mcp`).
 * @throws TypeError when `resource` is not an absolute http(s) URL or has a fragment (RFC 8707 §2)
 */
export function resourceMetadataPathFor(resource: string): string {
  const url = parseResource(resource);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/$/, "");
  return `${WELL_KNOWN}${path}`;
}

/** The absolute metadata URL for a resource identifier (the `resource_metadata` challenge parameter, RFC 9728 §5.1). */
export function resourceMetadataUrlFor(resource: string): string {
  const url = parseResource(resource);
  return `${url.origin}${resourceMetadataPathFor(resource)}`;
}

function parseResource(resource: string): URL {
  let url: URL;
  try {
    url = new URL(resource);
  } catch {
    throw new TypeError(`the resource identifier (the authenticator's audience) must be an absolute http(s) URL of the MCP endpoint (RFC 8707 §2, RFC 9728), got ${JSON.stringify(resource)}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError(`the resource identifier (the authenticator's audience) must be an http(s) URL of the MCP endpoint (RFC 9728), got ${JSON.stringify(resource)}`);
  }
  if (url.hash) throw new TypeError("resource must not contain a fragment (RFC 8707 §2)");
  return url;
}
