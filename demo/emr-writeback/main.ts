/**
 * The EMR-writeback agent as a process over stdio (started by `npm run demo -- --transport stdio`).
 * Configuration: see demo/runtime/agent-config.ts.
 */
import { EmrStore } from "../emr-store/store.js";
import { openAgentAudit, principalOf, readAgentConfig } from "../runtime/agent-config.js";
import { demoGuardrails } from "../runtime/guardrails.js";
import { runStdioAgent } from "../runtime/stdio-agent.js";
import { createEmrWritebackServer } from "./agent.js";

const cfg = readAgentConfig();
if (!cfg.store) throw new Error("emr-writeback: no store configured");
const location = cfg.store;
const audit = await openAgentAudit(cfg);
const guardrails = demoGuardrails();
let store: Promise<EmrStore> | undefined;
const server = createEmrWritebackServer({
  store: () => (store ??= EmrStore.open(location)),
  server: { auth: { localPrincipal: principalOf(cfg) }, ...(audit && { audit }), guardrails },
  ...(cfg.requireApproval === false && { requireApproval: false }),
});
await runStdioAgent(server, [async () => (store ? (await store).close() : undefined), () => audit?.close()]);
