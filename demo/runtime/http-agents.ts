/**
 * Starts the two demo agents in this process, each on its own loopback port over Streamable HTTP.
 * One HMCPServer per MCP session (the SDK's model); the EMR store, the patient index, the guardrails and the
 * audit sink are shared by all sessions.
 */
import { createHttpApp, listen, type AuditSink, type BearerAuthenticator, type GuardrailRunner, type HMCPServerOptions, type Listening } from "hmcp";
import { EmrStore } from "../emr-store/store.js";
import type { StoreLocation } from "../emr-store/sql.js";
import { emrTaskStore } from "../emr-store/task-store.js";
import { createEmrWritebackServer, TASK_POLL_INTERVAL_MS } from "../emr-writeback/agent.js";
import { createPatientDataServer } from "../patient-data/agent.js";
import { PatientIndex } from "../patient-data/patient-index.js";
import type { FhirResource } from "../fhir/resource.js";

/** The HTTP layer's bearer check (the library's BearerAuthenticator). */
export type { BearerAuthenticator } from "hmcp";

export interface HttpAgentsOptions {
  store: StoreLocation;
  /** Patient resources for the patient-data agent's index. */
  patients: readonly FhirResource[];
  /**
   * The bearer check of the agent at a resource identifier (its URL, known once its port is bound: `listen()` calls
   * this through `createHttpApp`'s bearer factory). Absent: no authentication (development only).
   */
  bearerFor?: (resource: string) => BearerAuthenticator;
  audit?: AuditSink;
  guardrails?: GuardrailRunner;
  /** Ask for approval before writes. Default true. */
  requireApproval?: boolean;
  /** Fixed ports (for --serve). Default 0: any free port. */
  ports?: { emr?: number; patientData?: number };
}

export interface RunningAgents {
  emrUrl: string;
  patientDataUrl: string;
  /** The shared EMR store (opened on first use). */
  store(): Promise<EmrStore>;
  /** Closes sessions, listeners, the store. Idempotent. */
  close(): Promise<void>;
}

export async function startHttpAgents(options: HttpAgentsOptions): Promise<RunningAgents> {
  let storePromise: Promise<EmrStore> | undefined;
  const store = () => (storePromise ??= EmrStore.open(options.store));
  // Open (and on first use, initialise) the store while the rest starts; errors surface at first use.
  store().catch(() => undefined);
  const index = new PatientIndex(options.patients);
  const bearerFor = options.bearerFor;
  const authOn = bearerFor !== undefined;
  const serverOptions: HMCPServerOptions = {
    auth: authOn ? {} : false,
    ...(options.guardrails && { guardrails: options.guardrails }),
    ...(options.audit && { audit: options.audit }),
  };
  // bound late: listen() hands each app the URL it got, which is its resource identifier (RFC 8707 audience)
  const bearer = bearerFor ? (resource: URL) => bearerFor(resource.href) : false;
  // the write tool's tasks, in the EMR's own database: one options object (one store object) for every server built
  const tasks = { store: emrTaskStore(store), pollIntervalMs: TASK_POLL_INTERVAL_MS };
  const emrApp = createHttpApp({
    createServer: () => createEmrWritebackServer({ store, server: serverOptions, tasks, ...(options.requireApproval === false && { requireApproval: false }) }),
    bearer,
    agentName: "emr-writeback",
    bodyLimitBytes: 4 * 1024 * 1024,
    ...(options.audit && { audit: options.audit }),
  });
  const pdApp = createHttpApp({
    createServer: () => createPatientDataServer({ index, server: serverOptions }),
    bearer,
    agentName: "patient-data",
    ...(options.audit && { audit: options.audit }),
  });
  const listening: Listening[] = [];
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const l of listening) await l.close();
    if (storePromise) await (await storePromise).close();
  };
  try {
    listening.push(await listen(emrApp, { port: options.ports?.emr ?? 0 }));
    listening.push(await listen(pdApp, { port: options.ports?.patientData ?? 0 }));
    const emrUrl = new URL("/mcp", listening[0]!.url).href;
    const patientDataUrl = new URL("/mcp", listening[1]!.url).href;
    return { emrUrl, patientDataUrl, store, close };
  } catch (e) {
    await close();
    throw e;
  }
}
