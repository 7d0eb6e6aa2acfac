/**
 * One instance of a demo agent (EMR-writeback or patient-data) as its own process over Streamable HTTP, started by
 * `npm run demo -- --instances <n>` (demo/runtime/instances.ts) behind the reverse proxy. Configuration: the JSON in
 * `HMCP_DEMO_INSTANCE_CONFIG` (demo/runtime/agent-config.ts, `InstanceConfigSchema`).
 *
 * Shared with its siblings through one PostgreSQL: the EMR store and its `hmcp_tasks` (MCP tasks: any instance reads,
 * answers and resumes any task), the requestState key and its single-use ledger, the event store of 2025-era sessions.
 * Its own: its audit chain in the `hmcp_audit` table (named by its instance id, checkpoints signed with a key generated
 * here, public half appended to `<audit dir>/<instance id>.pub.jwk`, anchors to the run's anchors file), and the MCP
 * sessions of the 2025 era (the proxy keeps a session on the instance that opened it).
 *
 * Its bearer check trusts the demo authorization server's JWKS for the audience the clients ask tokens for: the
 * proxy's URL, not this process's own port. Prints `{"ready": "<base url>"}` once it listens; SIGTERM: graceful
 * shutdown (drains requests, closes its audit chain with a signed checkpoint), then exit 0.
 */
import pg from "pg";
import {
  appendAnchorFile,
  createHttpApp,
  createJwtBearerAuthenticator,
  generateAuditSigningKey,
  listen,
  PostgresAuditSink,
  PostgresEventStore,
  PostgresRequestStateStore,
  type HMCPServerOptions,
} from "hmcp";
import { appendFile } from "node:fs/promises";
import { EmrStore } from "../emr-store/store.js";
import { emrTaskStore } from "../emr-store/task-store.js";
import { createEmrWritebackServer, TASK_POLL_INTERVAL_MS } from "../emr-writeback/agent.js";
import { loadPatientBundles } from "../fhir/synthea.js";
import { createPatientDataServer } from "../patient-data/agent.js";
import { PatientIndex } from "../patient-data/patient-index.js";
import { INSTANCE_CONFIG_ENV, InstanceConfigSchema, publicKeyFileFor } from "./agent-config.js";
import { demoGuardrails } from "./guardrails.js";
import { connectBridge, isBridgeUrl } from "./pglite-bridge.js";

async function main(): Promise<void> {
  const raw = process.env[INSTANCE_CONFIG_ENV];
  if (!raw) throw new Error(`${INSTANCE_CONFIG_ENV} is not set: this agent is started by the demo (npm run demo -- --instances 2)`);
  const cfg = InstanceConfigSchema.parse(JSON.parse(raw));
  // the shared PostgreSQL, or the demo process's PGlite through its bridge (no PostgreSQL on this machine)
  let pool: { query(text: string, params?: unknown[]): Promise<{ rows: unknown[] }> };
  let endPool: () => Promise<void> = async () => undefined;
  if (isBridgeUrl(cfg.databaseUrl)) pool = connectBridge(cfg.databaseUrl);
  else {
    const p = (pool = new pg.Pool({ connectionString: cfg.databaseUrl, max: 4 }));
    p.on("error", (e: Error & { code?: string }) => process.stderr.write(`${cfg.instanceId}: an idle PostgreSQL connection failed (${e.code ?? "no code"})\n`));
    endPool = () => p.end();
  }
  const key = await generateAuditSigningKey();
  await appendFile(publicKeyFileFor(cfg.audit.dir, cfg.instanceId), `${JSON.stringify(key.publicJwk)}\n`, { mode: 0o600 });
  const audit = await PostgresAuditSink.open({ db: pool, instanceId: cfg.instanceId, signing: { privateKey: key.privateJwk }, onCheckpoint: appendAnchorFile(cfg.audit.anchors) });
  const requestStateStore = await PostgresRequestStateStore.open({ db: pool });
  const eventStore = await PostgresEventStore.open({ db: pool });
  const serverOptions: HMCPServerOptions = { auth: {}, guardrails: demoGuardrails(), audit, requestState: { keys: [cfg.requestStateKey], store: requestStateStore } };
  const bearer = createJwtBearerAuthenticator({ issuer: cfg.issuer, audience: cfg.resource, jwks: { uri: cfg.jwksUri }, methodScopes: false });

  let storePromise: Promise<EmrStore> | undefined;
  const store = () => (storePromise ??= EmrStore.open({ databaseUrl: cfg.databaseUrl }));
  let createServer: () => ReturnType<typeof createEmrWritebackServer>;
  if (cfg.agent === "emr-writeback") {
    // open the store (and create its tables) before saying ready: the siblings start one after the other
    await (await store()).tasks();
    const tasks = { store: emrTaskStore(store), pollIntervalMs: TASK_POLL_INTERVAL_MS };
    createServer = () => createEmrWritebackServer({ store, server: serverOptions, tasks });
  } else {
    const index = new PatientIndex((await loadPatientBundles(cfg.dataDir)).map((p) => p.patient));
    createServer = () => createPatientDataServer({ index, server: serverOptions });
  }
  const app = createHttpApp({ createServer, bearer, agentName: cfg.instanceId, audit, eventStore, ...(cfg.agent === "emr-writeback" && { bodyLimitBytes: 4 * 1024 * 1024 }) });
  const http = await listen(app);
  process.stdout.write(`${JSON.stringify({ ready: http.url.href })}\n`);

  process.once("SIGTERM", () => {
    void (async () => {
      await http.close({ drainTimeoutMs: 5_000 });
      if (storePromise) await (await storePromise).close();
      await audit.close();
      await endPool();
      process.exit(0);
    })();
  });
}

main().catch((e: unknown) => {
  process.stderr.write(`demo instance failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
