// One audit record per outcome on the stdio transport too (issue 4): requests run under the
// server's local principal, and records say transport "stdio".
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HMCPClient, HMCPErrorCode, queryAudit, verifyAuditFiles, expandAuditPaths } from "hmcp";
import { tempLogDir } from "../unit/audit/helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const agent = path.resolve(here, "../unit/audit/fixtures/stdio-audited-agent.ts");
const repoRoot = path.resolve(here, "../..");

describe("audit over stdio", () => {
  it("records allowed, patient-context, scope and handler-failure outcomes with the local principal", async () => {
    const dir = await tempLogDir("audit-stdio");
    const client = new HMCPClient({ name: "stdio-test", version: "1" });
    await client.connect({ type: "stdio", command: process.execPath, args: ["--import", "tsx", agent, dir], cwd: repoRoot, stderr: "pipe" });
    const params = (text: string) => ({ messages: [{ role: "user" as const, content: { type: "text" as const, text } }], maxTokens: 5 });
    await client.createMessage(params("hello"), { patient: "pat-1" });
    await expect(client.createMessage(params("hello"), { patient: "pat-2" })).rejects.toMatchObject({ code: HMCPErrorCode.PatientContextViolation });
    await expect(client.createMessage(params("boom"))).rejects.toMatchObject({ code: -32603 });
    await expect(client.sdk.callTool({ name: "write-note", arguments: { note: "x" } })).rejects.toMatchObject({ code: HMCPErrorCode.InsufficientScope });
    await client.close();

    // the agent closes its sink when stdin ends; wait until the chain is closed on disk
    let records = await queryAudit([dir]);
    for (let i = 0; i < 100 && records.length < 4; i++) {
      await new Promise((r) => setTimeout(r, 50));
      records = await queryAudit([dir]);
    }
    const requests = records.filter((r) => r.type === "request");
    expect(requests.map((r) => [r.method, r.outcome, r.reason ?? null])).toEqual([
      ["sampling/createMessage", "allowed", null],
      ["sampling/createMessage", "denied", "patient_context_mismatch"],
      ["sampling/createMessage", "failed", "internal_error"],
      ["tools/call", "denied", "insufficient_scope"],
    ]);
    for (const r of requests) {
      expect(r).toMatchObject({ transport: "stdio", agent: "stdio-audited", actor: { clientId: "local-orchestrator", sub: "local-orchestrator" }, scopes: ["hmcp:sample"] });
      expect(r.digests.request).toMatch(/^[0-9a-f]{64}$/);
    }
    expect(requests[0]!.patients).toEqual(["pat-1"]);
    expect(requests[1]!.patients).toEqual(["pat-2"]);
    expect((await verifyAuditFiles(await expandAuditPaths([dir]))).ok).toBe(true);
  });
});
