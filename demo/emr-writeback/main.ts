/**
 * The EMR-writeback agent as a process over stdio (started by `npm run demo -- --transport stdio`).
 * Configuration: see demo/runtime/agent-config.ts.
 */
import { serveStdio } from "hmcp";
import { EmrStore } from "../emr-store/store.js";
import { openAgentAudit, principalOf, readAgentConfig } from "../runtime/agent-config.js";
import { demoGuardrails } from "../runtime/guardrails.js";
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
let closing = false;
const shutdown = async () => {
  if (closing) return;
  closing = true;
  await server.close().catch(() => undefined);
  if (store) await (await store).close().catch(() => undefined);
  await audit?.close().catch(() => undefined);
  process.exit(0);
};
await serveStdio(server);
process.stdin.once("end", () => void shutdown());
process.once("SIGTERM", () => void shutdown());
process.once("SIGINT", () => void shutdown());
