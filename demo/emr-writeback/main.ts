/**
 * The EMR-writeback agent as a process over stdio (started by `npm run demo -- --transport stdio`).
 * Configuration: see demo/runtime/agent-config.ts.
 */
import { EmrStore } from "../emr-store/store.js";
import { openAgentAudit, principalOf, readAgentConfig } from "../runtime/agent-config.js";
import { demoGuardrails } from "../runtime/guardrails.js";
import { runStdioAgent } from "../runtime/stdio-agent.js";
import { emrTaskStore } from "../emr-store/task-store.js";
import { createEmrWritebackServer, TASK_POLL_INTERVAL_MS } from "./agent.js";

const cfg = readAgentConfig();
if (!cfg.store) throw new Error("emr-writeback: no store configured");
const location = cfg.store;
const audit = await openAgentAudit(cfg);
const guardrails = demoGuardrails();
let store: Promise<EmrStore> | undefined;
const open = () => (store ??= EmrStore.open(location));
const server = createEmrWritebackServer({
  store: open,
  server: { auth: { localPrincipal: principalOf(cfg) }, ...(audit && { audit }), guardrails },
  tasks: { store: emrTaskStore(open), pollIntervalMs: TASK_POLL_INTERVAL_MS },
  ...(cfg.requireApproval === false && { requireApproval: false }),
});
await runStdioAgent(server, [async () => (store ? (await store).close() : undefined), () => audit?.close()]);
