/**
 * Shared set-up for the demo integration tests: the agents over Streamable HTTP on loopback with real OAuth
 * (the demo authorization server, private_key_jwt client credentials), an EMR store in a temp dir.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { HMCPClient, type ClientElicitationHandler } from "hmcp";
import { canonicalJson, EmrStore, storedIdFor } from "../../demo/emr-store/store.js";
import { loadPatientBundles, type PatientInput } from "../../demo/fhir/synthea.js";
import { isClinicalType, mapReferences, patientElement, type ClinicalType, type FhirResource } from "../../demo/fhir/resource.js";
import { RuleBasedModelProvider } from "../../demo/model/rule-based-provider.js";
import { startDemoAuth, type DemoAuth } from "../../demo/runtime/auth.js";
import { startHttpAgents, type RunningAgents } from "../../demo/runtime/http-agents.js";
import { demoGuardrails } from "../../demo/runtime/guardrails.js";
import type { FhirResource as Resource } from "../../demo/fhir/resource.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const shippedData = path.join(repoRoot, "demo/data/bundles");
export const syntheaData = path.resolve(repoRoot, "../shared/data/synthea/bundles");

export async function tempDir(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export const approveAll: ClientElicitationHandler = () => ({ action: "accept", content: { approve: true } });

export interface DemoStack {
  patients: PatientInput[];
  /** The running agents (replaced by {@link restartAgents}). */
  agents: RunningAgents;
  auth: DemoAuth;
  /** A connected client of `clientId` to the EMR agent; `era` "modern": MCP 2026-07-28, which takes tasks (default legacy). */
  emrClient(clientId: string, approve?: ClientElicitationHandler, options?: { era?: "modern" | "legacy" }): Promise<HMCPClient>;
  /** A client of the patient-data agent (default `orchestrator`; `patient-app` is bound to the first patient). */
  patientDataClient(clientId?: string): Promise<HMCPClient>;
  /** Stops the agents and starts them again on the same EMR store (new ports; the same authorization server). */
  restartAgents(): Promise<void>;
  close(): Promise<void>;
}

export async function startStack(options: { extraPatients?: Resource[] } = {}): Promise<DemoStack> {
  const patients = await loadPatientBundles(shippedData);
  const store = await tempDir("hmcp-demo-flow-");
  const auth = await startDemoAuth({ boundPatient: patients[0]!.patient.id! });
  const start = () =>
    startHttpAgents({
      store: { dataDir: store.dir },
      patients: [...patients.map((p) => p.patient), ...(options.extraPatients ?? [])],
      bearerFor: auth.bearerFor,
      guardrails: demoGuardrails(),
    });
  const clients: HMCPClient[] = [];
  const model = new RuleBasedModelProvider();
  const stack: DemoStack = {
    patients,
    agents: await start(),
    auth,
    async emrClient(clientId, approve = approveAll, opts = {}) {
      const url = stack.agents.emrUrl;
      const c = new HMCPClient(
        { name: clientId, version: "1" },
        { tokenProvider: auth.tokenProvider(clientId, url), guardrails: demoGuardrails(), onElicitation: approve, onSampling: (p) => model.createMessage(p), ...(opts.era === "modern" && { protocolEra: "modern" as const }) },
      );
      await c.connect({ type: "http", url });
      clients.push(c);
      return c;
    },
    async patientDataClient(clientId = "orchestrator") {
      const url = stack.agents.patientDataUrl;
      const c = new HMCPClient({ name: clientId, version: "1" }, { tokenProvider: auth.tokenProvider(clientId, url), guardrails: demoGuardrails() });
      await c.connect({ type: "http", url });
      clients.push(c);
      return c;
    },
    async restartAgents() {
      await stack.agents.close();
      stack.agents = await start();
    },
    async close() {
      for (const c of clients) await c.close().catch(() => undefined);
      await stack.agents.close();
      await auth.stop();
      await store.remove();
    },
  };
  return stack;
}

/**
 * Compares a stored resource with the input resource it came from: equal except for the stored `id`, the patient
 * reference (input: to the bundle's Patient; stored: "Patient/<id>"), and references to other input resources,
 * which may be rewritten to the stored id of their target.
 * @returns a list of differences (empty when equal).
 */
export function diffStored(input: FhirResource, stored: FhirResource, patientId: string, patientRefs: Set<string>): string[] {
  const t = input.resourceType as ClinicalType;
  if (!isClinicalType(t)) return [`not clinical: ${t}`];
  const problems: string[] = [];
  const el = patientElement(t);
  if ((stored[el] as { reference?: string } | undefined)?.reference !== `Patient/${patientId}`) problems.push(`${el} is not Patient/${patientId}`);
  const norm = (r: FhirResource, isStored: boolean) => {
    const { id: _id, [el]: _p, ...rest } = r;
    return mapReferences(rest, (ref) => {
      if (!isStored) return patientRefs.has(ref) ? "PATIENT" : ref.startsWith("urn:uuid:") ? `TARGET:${storedIdFor(ref)}` : ref;
      const m = /^[A-Za-z]+\/(.+)$/.exec(ref);
      if (ref.startsWith("urn:uuid:")) return `TARGET:${storedIdFor(ref)}`;
      return m ? `TARGET:${m[1]}` : ref;
    });
  };
  const a = canonicalJson(norm(input, false));
  const b = canonicalJson(norm(stored, true));
  if (a !== b) problems.push(`content differs for ${t}`);
  return problems;
}

export { EmrStore };
