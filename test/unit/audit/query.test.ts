import { describe, expect, it } from "vitest";
import { FileAuditSink, generateAuditSigningKey, queryAudit } from "hmcp";
import { sampleRecord, tempLogDir } from "./helpers.js";

describe("queryAudit", () => {
  it("filters with AND semantics, Date bounds, limit, and skips checkpoints", async () => {
    const dir = await tempLogDir("audit-query");
    const keys = await generateAuditSigningKey();
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, checkpointEvery: 3 });
    for (let i = 0; i < 20; i++) sink.append(sampleRecord(i));
    await sink.close();
    const all = await queryAudit([dir]);
    expect(all).toHaveLength(20);
    expect(all.every((r) => r.type === "request")).toBe(true);
    const q = await queryAudit([dir], { patient: "pat-3", outcome: "allowed" });
    expect(q.map((r) => r.requestId)).toEqual([8]);
    const byFhirUser = await queryAudit([dir], { actor: "Practitioner/pr-1", limit: 3 });
    expect(byFhirUser.map((r) => r.requestId)).toEqual([1, 3, 5]);
    const window = await queryAudit([dir], { since: new Date(Date.UTC(2026, 10, 22, 6, 0, 0, 10)), until: "2026-11-22T06:00:00.012Z" });
    expect(window.map((r) => r.requestId)).toEqual([10, 11]);
    await expect(queryAudit([dir], { since: "last tuesday" })).rejects.toThrow(/not a valid time/);
    await expect(queryAudit([`${dir}/missing.jsonl`])).rejects.toMatchObject({ code: "ENOENT" });
  });
});
