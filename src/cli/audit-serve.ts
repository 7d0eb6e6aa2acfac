/**
 * `hmcp audit serve`: the read-only compliance console (src/console/app.ts) over a file trail or the PostgreSQL sink,
 * on loopback by default, until Ctrl-C (SIGINT) or SIGTERM. It listens at once and indexes the trail in the background
 * (its pages say how far it has come). Prints the console's URL and the redirect URI to register
 * at the OpenID provider. Its own trail (every view, sign-in and sign-out) goes to `--view-audit` (default
 * `.hmcp/console-audit`), signed with a key made at each start whose public half is added to
 * `<view-audit>/checkpoint-keys.jwks.json` (verify with `hmcp audit verify <view-audit> --key <that file>`), or with a
 * kept key (`--view-key <private JWK file>`, whose public half the operator keeps elsewhere); `--view-anchors <file>`
 * appends each checkpoint's anchor to a file outside the folder (`hmcp audit verify --anchors`).
 *
 * The client secret of a confidential client is read from `--client-secret-file` or the environment variable
 * `HMCP_CONSOLE_CLIENT_SECRET`, never from the command line (it would show in `ps`).
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { FileAuditSink } from "../audit/file-sink.js";
import type { JWK } from "jose";
import { generateAuditSigningKey } from "../audit/chain.js";
import { appendAnchorFile } from "../audit/anchor-file.js";
import { startAuditConsole, type AuditConsole } from "../console/app.js";
import { openAuditTrail } from "../console/trail.js";
import type { TrailProgress } from "../console/trail-sources.js";
import type { AuditTrailView } from "../console/trail-types.js";
import { files, readAnchors, readPrivateKey, readPublicKey, UsageError } from "./audit-command.js";
import { isLoopbackHost } from "../util/loopback.js";

type IO = { out: (s: string) => void; err: (s: string) => void };

/** Runs `hmcp audit serve ...` until `signal` aborts (default: SIGINT or SIGTERM); resolves to the exit code. */
export async function serve(argv: string[], io: IO, signal?: AbortSignal): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      "database-url": { type: "string" },
      table: { type: "string" },
      issuer: { type: "string" },
      "client-id": { type: "string" },
      "client-secret-file": { type: "string" },
      scope: { type: "string" },
      "required-scope": { type: "string" },
      key: { type: "string" },
      anchors: { type: "string" },
      host: { type: "string" },
      port: { type: "string" },
      "public-url": { type: "string" },
      "tls-cert": { type: "string" },
      "tls-key": { type: "string" },
      "view-audit": { type: "string" },
      "view-key": { type: "string" },
      "view-anchors": { type: "string" },
    },
  });
  const dbUrl = values["database-url"] ?? undefined;
  if (dbUrl === undefined && positionals.length === 0) throw new UsageError("no trail given: name audit files or folders, or --database-url (to try it on the demo's trail: npm run demo -- --serve)");
  if (dbUrl !== undefined && positionals.length > 0) throw new UsageError("give either audit files or folders, or --database-url, not both");
  if (values.issuer === undefined || values["client-id"] === undefined) throw new UsageError("--issuer and --client-id are required: the console is never open (sign-in through your OpenID provider; to try the console without one, in a checkout of HMCP: npm run demo -- --serve opens it on the demo's trail and prints a compliance-officer login)");
  if ((values["tls-cert"] === undefined) !== (values["tls-key"] === undefined)) throw new UsageError("--tls-cert and --tls-key go together");
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError("--port must be a TCP port (0-65535)");
  const secret = values["client-secret-file"] !== undefined ? (await readFile(values["client-secret-file"], "utf8")).trim() : process.env["HMCP_CONSOLE_CLIENT_SECRET"];
  const publicKey = values.key !== undefined ? await readPublicKey(values.key) : undefined;
  const anchors = values.anchors !== undefined ? await readAnchors(values.anchors) : undefined;
  const list = dbUrl === undefined ? await files(positionals) : [];

  let pool: import("pg").Pool | undefined;
  if (dbUrl !== undefined) {
    const pg = await import("pg");
    pool = new pg.default.Pool({ connectionString: dbUrl, max: 4 });
  }
  const open = (onProgress?: (p: TrailProgress) => void): Promise<AuditTrailView> =>
    openAuditTrail({
      ...(onProgress && { onProgress }),
      ...(pool ? { db: pool, ...(values.table !== undefined && { table: values.table }) } : { paths: list }),
      ...(publicKey !== undefined && { publicKey }),
      ...(anchors !== undefined && { anchors }),
    });

  const viewDir = path.resolve(values["view-audit"] ?? ".hmcp/console-audit");
  await mkdir(viewDir, { recursive: true, mode: 0o700 });
  // the view trail's signing key: a kept one (--view-key; its public half is the operator's to keep elsewhere), or one
  // made at this start whose public half is added to the folder's checkpoint-keys.jwks.json
  let privateKey: JWK;
  if (values["view-key"] !== undefined) {
    privateKey = await readPrivateKey(values["view-key"]);
  } else {
    const key = await generateAuditSigningKey();
    privateKey = key.privateJwk;
    const keysFile = path.join(viewDir, "checkpoint-keys.jwks.json");
    const known = await readFile(keysFile, "utf8").then((t) => (JSON.parse(t) as { keys: unknown[] }).keys, () => [] as unknown[]);
    await writeFile(keysFile, `${JSON.stringify({ keys: [...known, key.publicJwk] }, null, 2)}\n`, { mode: 0o600 });
  }
  // each checkpoint's anchor (chain, seq, entry hash; no PHI) to a file outside the folder (--view-anchors), for
  // `hmcp audit verify --anchors`: what catches the view trail cut back or rewritten, even with the key
  const anchorsFile = values["view-anchors"] !== undefined ? path.resolve(values["view-anchors"]) : undefined;
  const audit = await FileAuditSink.open({
    dir: viewDir,
    prefix: "console",
    signing: { privateKey },
    ...(anchorsFile !== undefined && { onCheckpoint: appendAnchorFile(anchorsFile) }),
  });

  let console_: AuditConsole | undefined;
  try {
    console_ = await startAuditConsole({
      trail: open,
      // listen at once: a large trail takes seconds per million records to index, and the pages say how far it is
      openInBackground: true,
      audit,
      signIn: {
        issuer: values.issuer,
        clientId: values["client-id"],
        ...(secret !== undefined && secret !== "" && { clientSecret: secret }),
        ...(values.scope !== undefined && { scope: values.scope }),
        ...(values["required-scope"] !== undefined && { requiredScope: values["required-scope"] }),
      },
      ...(values.host !== undefined && { host: values.host }),
      port,
      ...(values["public-url"] !== undefined && { publicUrl: values["public-url"] }),
      ...(values["tls-cert"] !== undefined && values["tls-key"] !== undefined && { tls: { cert: await readFile(values["tls-cert"]), key: await readFile(values["tls-key"]) } }),
    });
    const host = values.host ?? "127.0.0.1";
    if (!isLoopbackHost(host) && !console_.url.startsWith("https:")) {
      io.err(`hmcp audit serve: WARNING: listening on ${host} over plain http: cookies are not Secure and sign-in codes cross the network in clear; use --tls-cert/--tls-key or a TLS-terminating proxy with --public-url https://...`);
    }
    io.out(`HMCP audit console: ${console_.url}\n  register this redirect URI at your OpenID provider: ${console_.redirectUri}\n  its own audit trail (every view): ${viewDir}\n  Ctrl-C stops it`);
    await new Promise<void>((resolve) => {
      if (signal) {
        if (signal.aborted) return resolve();
        signal.addEventListener("abort", () => resolve(), { once: true });
      } else {
        process.once("SIGINT", () => resolve());
        process.once("SIGTERM", () => resolve());
      }
    });
    return 0;
  } finally {
    await console_?.close();
    await audit.close();
    await pool?.end();
  }
}
