/**
 * The patient-data agent as a process over stdio (started by `npm run demo -- --transport stdio`).
 * Builds its patient index from the Patient resources of the bundles in `dataDir`.
 */
import { loadPatientBundles } from "../fhir/synthea.js";
import { openAgentAudit, principalOf, readAgentConfig } from "../runtime/agent-config.js";
import { demoGuardrails } from "../runtime/guardrails.js";
import { runStdioAgent } from "../runtime/stdio-agent.js";
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
await runStdioAgent(server, [() => audit?.close()]);
