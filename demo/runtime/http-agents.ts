/**
 * Starts the two demo agents in this process, each on its own loopback port over Streamable HTTP.
 * One HMCPServer per MCP session (the SDK's model); the EMR store, the patient index, the guardrails and the
 * audit sink are shared by all sessions.
 */
import { createHttpApp, listen, type AuditSink, type GuardrailRunner, type HMCPServerOptions, type HttpAppOptions, type Listening } from "hmcp";
import { EmrStore } from "../emr-store/store.js";
import type { StoreLocation } from "../emr-store/sql.js";
import { createEmrWritebackServer } from "../emr-writeback/agent.js";
import { createPatientDataServer } from "../patient-data/agent.js";
import { PatientIndex } from "../patient-data/patient-index.js";
import type { FhirResource } from "../fhir/resource.js";

/** The HTTP layer's bearer check (the library's BearerAuthenticator, taken from the public HttpAppOptions type). */
export type BearerAuthenticator = Exclude<HttpAppOptions["bearer"], false>;


export interface HttpAgentsOptions {
  store: StoreLocation;
  /** Patient resources for the patient-data agent's index. */
  patients: readonly FhirResource[];
  /**
   * true: bearer tokens are required; the checks are set with {@link RunningAgents.setBearers} once the URLs (the
   * resource identifiers) are known, and every request is refused until then. false: no authentication
   * (development only).
   */
  auth: boolean;
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
  /** Sets the agents' bearer checks (when started with `auth: true`). */
  setBearers(emr: BearerAuthenticator, patientData: BearerAuthenticator): void;
  /** The shared EMR store (opened on first use). */
  store(): Promise<EmrStore>;
  /** Closes sessions, listeners, the store. Idempotent. */
  close(): Promise<void>;
}

const METADATA_PATH = "/.well-known/oauth-protected-resource/mcp";

/** A bearer check that is set once the listener's URL (the resource identifier) is known. */
class DeferredBearer implements BearerAuthenticator {
  inner: BearerAuthenticator | undefined;
  readonly resourceMetadataPath = METADATA_PATH;
  async check(request: Parameters<BearerAuthenticator["check"]>[0]) {
    if (!this.inner) throw new Error("bearer check used before it was configured");
    return this.inner.check(request);
  }
  resourceMetadata() {
    return this.inner?.resourceMetadata() ?? {};
  }
}

export async function startHttpAgents(options: HttpAgentsOptions): Promise<RunningAgents> {
  let storePromise: Promise<EmrStore> | undefined;
  const store = () => (storePromise ??= EmrStore.open(options.store));
  // Open (and on first use, initialise) the store while the rest starts; errors surface at first use.
  store().catch(() => undefined);
  const index = new PatientIndex(options.patients);
  const authOn = options.auth;
  const serverOptions: HMCPServerOptions = {
    auth: authOn ? {} : false,
    ...(options.guardrails && { guardrails: options.guardrails }),
    ...(options.audit && { audit: options.audit }),
  };
  const emrBearer = new DeferredBearer();
  const pdBearer = new DeferredBearer();
  const emrApp = createHttpApp({
    createServer: () => createEmrWritebackServer({ store, server: serverOptions, ...(options.requireApproval === false && { requireApproval: false }) }),
    bearer: authOn ? emrBearer : false,
    agentName: "emr-writeback",
    bodyLimitBytes: 4 * 1024 * 1024,
    ...(options.audit && { audit: options.audit }),
  });
  const pdApp = createHttpApp({
    createServer: () => createPatientDataServer({ index, server: serverOptions }),
    bearer: authOn ? pdBearer : false,
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
    const setBearers = (emr: BearerAuthenticator, pd: BearerAuthenticator) => {
      emrBearer.inner = emr;
      pdBearer.inner = pd;
    };
    return { emrUrl, patientDataUrl, setBearers, store, close };
  } catch (e) {
    await close();
    throw e;
  }
}
