/**
 * The patient-data agent as a process over stdio (started by `npm run demo -- --transport stdio`).
 * Builds its patient index from the Patient resources of the bundles in `dataDir`.
 */
import { serveStdio } from "hmcp";
import { loadPatientBundles } from "../fhir/synthea.js";
import { openAgentAudit, principalOf, readAgentConfig } from "../runtime/agent-config.js";
import { demoGuardrails } from "../runtime/guardrails.js";
import { createPatientDataServer } from "./agent.js";
import { PatientIndex } from "./patient-index.js";

const cfg = readAgentConfig();
if (!cfg.dataDir) throw new Error("patient-data: no dataDir configured");
const patients = await loadPatientBundles(cfg.dataDir);
const audit = await openAgentAudit(cfg);
const guardrails = demoGuardrails();
const server = createPatientDataServer({
  index: new PatientIndex(patients.map((p) => p.patient)),
  server: { auth: { localPrincipal: principalOf(cfg) }, ...(audit && { audit }), guardrails },
});
let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  await server.close().catch(() => undefined);
  await audit?.close().catch(() => undefined);
  process.exit(0);
};
await serveStdio(server);
process.stdin.once("end", () => void shutdown());
process.once("SIGTERM", () => void shutdown());
process.once("SIGINT", () => void shutdown());
