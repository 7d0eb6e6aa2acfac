/**
 * `hmcp token --issuer <url> --client-id <id> (--client-secret <s> | --private-key <jwk file>) [--resource <url>]
 *   [--scope "<scopes>"] [--timeout-ms N] [--insecure]`
 *
 * Gets an access token with the OAuth 2.0 client credentials grant (RFC 6749 §4.4, through
 * `createClientCredentialsTokenProvider`: authorization server metadata discovery, RFC 8707 `resource`) and prints it
 * alone on stdout, so `TOKEN=$(hmcp token ...)` works. `--client-secret` may instead come from the environment
 * variable `HMCP_CLIENT_SECRET` (keeps it out of the shell history); `--private-key` names a file holding the client's
 * private JWK (private_key_jwt, as SMART Backend Services profiles it). An http issuer is allowed on loopback
 * (127.0.0.1, ::1, localhost) only, unless `--insecure`. `--timeout-ms`: per HTTP request (discovery, token), default
 * 30,000 ms. Errors name the cause (the authorization server's OAuth
 * error code) and never print the secret. Exit codes: 0 printed, 1 no token (refused or unreachable), 2 usage.
 */
import { readFileSync } from "node:fs";
import { decodeJwt, type JWK, type JWTPayload } from "jose";
import { createClientCredentialsTokenProvider, TokenRequestError, type ClientAuthOptions } from "../auth/token-provider.js";
import { isLoopbackHost } from "../util/loopback.js";
import { scopesOfClaims } from "../auth/principal.js";

type IO = { out: (s: string) => void; err: (s: string) => void };

export const TOKEN_USAGE =
  'usage: hmcp token --issuer <url> --client-id <id> (--client-secret <secret> | --private-key <private JWK file>) [--resource <url>] [--scope "<scopes>"] [--timeout-ms N] [--insecure]';


/** Runs `hmcp token`; resolves to the exit code. */
export async function runTokenCommand(argv: string[], io: IO, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  if (argv.some((a) => a === "--help" || a === "-h")) {
    io.out(TOKEN_USAGE);
    return 0;
  }
  const opts: Record<string, string> = {};
  let insecure = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--insecure") {
      insecure = true;
      continue;
    }
    const v = argv[i + 1];
    if (!["--issuer", "--client-id", "--client-secret", "--private-key", "--resource", "--scope", "--timeout-ms"].includes(a)) return usage(io, `unknown option ${a}`);
    if (v === undefined || v.startsWith("--")) return usage(io, `option ${a} needs a value`);
    opts[a.slice(2)] = v;
    i++;
  }
  const timeoutMs = opts["timeout-ms"] === undefined ? 30_000 : Number(opts["timeout-ms"]);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) return usage(io, "--timeout-ms must be a positive integer (milliseconds)");
  const issuer = opts["issuer"];
  const clientId = opts["client-id"];
  if (!issuer || !clientId) return usage(io, "--issuer and --client-id are required");
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    return usage(io, `--issuer '${issuer}' is not a URL`);
  }
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname) && !insecure) return usage(io, "--issuer is plain http on a non-loopback host: use https, or --insecure for a test server");
  const secret = opts["client-secret"] ?? env["HMCP_CLIENT_SECRET"];
  let auth: ClientAuthOptions;
  if (opts["private-key"] !== undefined) {
    if (opts["client-secret"] !== undefined) return usage(io, "give --client-secret or --private-key, not both");
    try {
      auth = { type: "private_key_jwt", privateKey: JSON.parse(readFileSync(opts["private-key"], "utf8")) as JWK };
    } catch (e) {
      return usage(io, `--private-key ${opts["private-key"]}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : "not a JSON private JWK"}`);
    }
  } else if (secret !== undefined && secret !== "") {
    auth = { type: "client_secret_basic", clientSecret: secret };
  } else {
    return usage(io, "give --client-secret (or HMCP_CLIENT_SECRET) or --private-key");
  }
  try {
    const provider = createClientCredentialsTokenProvider({
      // as given: the issuer identifier must match the metadata's exactly (RFC 8414 §3.3), trailing slash included
      issuer,
      clientId,
      auth,
      ...(opts["scope"] !== undefined && { scope: opts["scope"] }),
      ...(opts["resource"] !== undefined && { resource: opts["resource"] }),
      allowInsecureRequests: url.protocol === "http:",
      timeoutMs,
    });
    const token = await provider.getToken();
    io.out(token);
    const missing = scopesNotGranted(opts["scope"], token);
    if (missing !== undefined && missing.length > 0) {
      io.err(`hmcp token: warning: the token does not carry ${missing.join(" ")} (is the client registered for ${missing.length > 1 ? "them" : "it"}?); calls that need ${missing.length > 1 ? "them" : "it"} will be refused with insufficient_scope`);
    }
    return 0;
  } catch (e) {
    if (e instanceof TokenRequestError) {
      io.err(`hmcp token: ${e.code}${e.oauthError ? ` (${e.oauthError})` : ""}: ${e.message}`);
      return e.code === "invalid_configuration" ? 2 : 1;
    }
    throw e;
  }
}

/**
 * The requested scopes a JWT access token does not carry in its `scope` claim (RFC 9068 §2.2.3; space-separated; or an
 * `scp` array, as the resource server also reads), or
 * undefined when nothing was asked for or the token is not a readable JWT (an opaque token: the server knows).
 */
function scopesNotGranted(asked: string | undefined, token: string): string[] | undefined {
  const want = (asked ?? "").split(" ").filter((x) => x !== "");
  if (want.length === 0) return undefined;
  let claims: JWTPayload;
  try {
    claims = decodeJwt(token);
  } catch {
    return undefined;
  }
  // as the resource server reads them
  const granted = new Set(scopesOfClaims(claims));
  return want.filter((x) => !granted.has(x));
}

function usage(io: IO, why: string): number {
  io.err(`hmcp token: ${why}\n${TOKEN_USAGE}`);
  return 2;
}
