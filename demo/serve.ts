/**
 * `npm run demo -- --serve`: the authorization server and both agents, kept running until SIGINT / SIGTERM, with one
 * JSON line on stdout naming their URLs, so other MCP clients (MCP Inspector, your own) can connect, then a readable
 * banner: the URLs, which client has which scopes, and a token command and a `curl` that work as printed.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { appendAnchorFile, FileAuditSink, generateAuditSigningKey, readAnchorFile, resourceMetadataUrlFor } from "hmcp";
import type { StoreLocation } from "./emr-store/sql.js";
import { WRITE_TOOL_NAME } from "./emr-writeback/agent.js";
import { loadPatientBundles } from "./fhir/synthea.js";
import { AUDIT_READ_SCOPE, CONSOLE_CLIENT_ID, startDemoAuth } from "./runtime/auth.js";
import { openAuditTrail, startAuditConsole } from "hmcp/console";
import { demoClients } from "./runtime/clients.js";
import { demoGuardrails } from "./runtime/guardrails.js";
import { startHttpAgents } from "./runtime/http-agents.js";

export async function serveDemo(options: { dataDir: string; store: StoreLocation; auditRoot?: string }): Promise<number> {
  const patients = await loadPatientBundles(options.dataDir);
  const key = await generateAuditSigningKey();
  const runName = `serve-${new Date().toISOString().replace(/[:.]/g, "-")}`;
  const auditDir = path.resolve(options.auditRoot ?? ".hmcp/audit", runName);
  // checkpoint anchors outside the trail's folder, as `npm run demo` keeps them (see run-demo.ts)
  const anchorsFile = path.join(path.dirname(auditDir), "anchors", `${runName}.jsonl`);
  await mkdir(path.dirname(anchorsFile), { recursive: true, mode: 0o700 });
  const audit = await FileAuditSink.open({ dir: auditDir, prefix: "demo", signing: { privateKey: key.privateJwk }, onCheckpoint: appendAnchorFile(anchorsFile) });
  const guardrails = demoGuardrails();
  const boundPatient = patients[0]?.patient.id ?? "none";
  // the compliance officer's login for the audit console (a password made for this run), and a clinician without the
  // audit scope, whom the console refuses
  const officer = { username: "compliance-officer", password: randomBytes(9).toString("base64url"), scopes: [AUDIT_READ_SCOPE], name: "Compliance Officer (demo)" };
  const clinician = { username: "clinician", password: randomBytes(9).toString("base64url"), scopes: [], name: "Clinician (demo)" };
  const auth = await startDemoAuth({ boundPatient, consoleUsers: [officer, clinician] });
  const agents = await startHttpAgents({ store: options.store, patients: patients.map((p) => p.patient), bearerFor: auth.bearerFor, audit, guardrails });
  // the audit console over this run's trail (read again from its Integrity page as the agents write), its own views
  // recorded in <trail>/console
  const consoleAnchorsFile = path.join(path.dirname(anchorsFile), `${runName}-console.jsonl`);
  const consoleViews = await FileAuditSink.open({ dir: path.join(auditDir, "console"), prefix: "console", signing: { privateKey: key.privateJwk }, onCheckpoint: appendAnchorFile(consoleAnchorsFile) });
  const auditConsole = await startAuditConsole({
    trail: async () => {
      await audit.flush();
      // the live trail: records after the last checkpoint are not signed yet (allowUnsignedTail), and the anchors kept
      // outside it so far are checked too
      const anchors = readAnchorFile(anchorsFile, { missingOk: true });
      return openAuditTrail({ paths: [auditDir], publicKey: key.publicJwk, allowUnsignedTail: true, anchors });
    },
    audit: consoleViews,
    signIn: { issuer: auth.issuer, clientId: CONSOLE_CLIENT_ID },
  });
  auth.server.addRedirectUri(CONSOLE_CLIENT_ID, auditConsole.redirectUri);
  // What an outside client needs, next to the trail: the checkpoint public key (to verify it) and the demo clients'
  // private keys for private_key_jwt (readable by the owner only; they exist for this run only).
  const publicKeyFile = path.join(auditDir, "checkpoint-keys.jwks.json");
  await writeFile(publicKeyFile, `${JSON.stringify({ keys: [key.publicJwk] }, null, 2)}\n`, { mode: 0o600 });
  const clientsFile = path.join(auditDir, "demo-clients.json");
  const clients = demoClients(boundPatient).map((c) => ({
    clientId: c.clientId,
    scopes: c.scopes,
    tokenEndpointAuthMethod: "private_key_jwt",
    privateJwk: auth.server.clients[c.clientId]?.privateJwk,
  }));
  await writeFile(clientsFile, `${JSON.stringify({ tokenEndpoint: auth.server.tokenEndpoint, clients }, null, 2)}\n`, { mode: 0o600 });
  // one private JWK per client, for `hmcp token --private-key` (owner-only, this run only)
  const keysDir = path.join(auditDir, "client-keys");
  await mkdir(keysDir, { recursive: true, mode: 0o700 });
  for (const c of clients) if (c.privateJwk) await writeFile(path.join(keysDir, `${c.clientId}.jwk`), `${JSON.stringify(c.privateJwk)}\n`, { mode: 0o600 });
  process.stdout.write(
    `${JSON.stringify({
      issuer: auth.issuer,
      jwksUri: auth.server.jwksUri,
      tokenEndpoint: auth.server.tokenEndpoint,
      agents: {
        emrWriteback: { mcp: agents.emrUrl, protectedResourceMetadata: resourceMetadataUrlFor(agents.emrUrl) },
        patientData: { mcp: agents.patientDataUrl, protectedResourceMetadata: resourceMetadataUrlFor(agents.patientDataUrl) },
      },
      audit: auditDir,
      checkpointKeys: publicKeyFile,
      anchors: anchorsFile,
      clients: clientsFile,
      console: { url: auditConsole.url, username: officer.username, password: officer.password },
    })}\n`,
  );
  process.stdout.write(
    serveBanner({
      issuer: auth.issuer,
      emrUrl: agents.emrUrl,
      patientDataUrl: agents.patientDataUrl,
      clients: demoClients(boundPatient),
      keysDir,
      auditDir,
      publicKeyFile,
      anchorsFile,
      console: { url: auditConsole.url, officer, clinician, viewsDir: path.join(auditDir, "console"), anchorsFile: consoleAnchorsFile },
    }),
  );
  await new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  await auditConsole.close();
  await agents.close();
  await auth.stop();
  await consoleViews.close();
  await audit.close();
  // A signed trail gets its checkpoints (and their anchors) only once something was recorded: with no request (or no
  // one signed in to the console), the banner's verify line would fail on an empty trail and a missing anchors file,
  // so say what to run instead.
  const empty = [
    ...(existsSync(anchorsFile) ? [] : [{ what: "No request reached the agents, so their audit trail", dir: auditDir }]),
    ...(existsSync(consoleAnchorsFile) ? [] : [{ what: "No one signed in to the audit console, so its trail", dir: path.join(auditDir, "console") }]),
  ];
  for (const e of empty) {
    process.stdout.write(`\n${e.what} is empty (no records, no checkpoint, no anchors). Check it with:\n  npx --no hmcp audit verify ${shq(e.dir)} --key ${shq(publicKeyFile)} --allow-empty\n`);
  }
  return 0;
}

const shq = (v: string) => (/^[\w./:@=-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);

/** The readable part of `--serve`'s output (after its JSON line): what a person needs to make a first call. */
export function serveBanner(o: {
  issuer: string;
  emrUrl: string;
  patientDataUrl: string;
  clients: Array<{ clientId: string; scopes: string[]; patient?: string }>;
  keysDir: string;
  auditDir: string;
  publicKeyFile: string;
  anchorsFile: string;
  console?: { url: string; officer: { username: string; password: string }; clinician: { username: string; password: string }; viewsDir: string; anchorsFile: string };
}): string {
  const orchestrator = o.clients.find((c) => c.clientId === "orchestrator") ?? o.clients[0]!;
  const width = Math.max(...o.clients.map((c) => c.clientId.length));
  const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } } });
  return [
    "",
    "HMCP demo agents are serving (Ctrl-C stops them):",
    `  EMR-writeback agent   ${o.emrUrl}   (tools sampling_createMessage for hosts without sampling, ${WRITE_TOOL_NAME}: an MCP task on 2026-07-28)`,
    `  patient-data agent    ${o.patientDataUrl}`,
    `  authorization server  ${o.issuer}   (SMART discovery: ${o.issuer}/.well-known/smart-configuration)`,
    "clients (private_key_jwt; their keys: " + o.keysDir + "):",
    ...o.clients.map((c) => `  ${c.clientId.padEnd(width)}  ${c.scopes.join(" ")}${c.patient !== undefined ? `  (bound to patient ${c.patient})` : ""}`),
    "a token and a first call, as printed:",
    `  TOKEN=$(npx --no hmcp token --issuer ${o.issuer} --client-id ${orchestrator.clientId} --private-key ${shq(path.join(o.keysDir, `${orchestrator.clientId}.jwk`))} --resource ${o.emrUrl} --scope ${shq(orchestrator.scopes.join(" "))})`,
    `  curl -s -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' -d ${shq(initialize)} ${o.emrUrl}`,
    ...(o.console
      ? [
          "audit console (read-only; every view is recorded):",
          `  ${o.console.url}   sign in as ${o.console.officer.username} / ${o.console.officer.password}   (${o.console.clinician.username} / ${o.console.clinician.password} lacks the audit scope: refused)`,
        ]
      : []),
    "audit trail:",
    `  npx --no hmcp audit verify ${shq(o.auditDir)} --key ${shq(o.publicKeyFile)} --anchors ${shq(o.anchorsFile)}   (after Ctrl-C)`,
    ...(o.console ? [`  npx --no hmcp audit verify ${shq(o.console.viewsDir)} --key ${shq(o.publicKeyFile)} --anchors ${shq(o.console.anchorsFile)}   (the console's own trail: who viewed what)`] : []),
    "",
  ].join("\n");
}

