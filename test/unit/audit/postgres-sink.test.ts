import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditSinkError, PostgresAuditSink, generateAuditSigningKey, listAuditChains, verifyAuditTable, canonicalJson, sha256Hex } from "hmcp";
import type { JWK } from "jose";
import type pg from "pg";
import type { AuditQueryable, CheckpointAnchor } from "hmcp";

// Compile-time check (tsc --noEmit runs over test/): node-postgres pools and clients fit the sink's db interface.
const _poolFits: AuditQueryable = null as unknown as pg.Pool;
const _clientFits: AuditQueryable = null as unknown as pg.Client;
void _poolFits;
void _clientFits;
import { sampleRecord } from "./helpers.js";

let db: PGlite;
let keys: { privateJwk: JWK; publicJwk: JWK };

beforeAll(async () => {
  db = new PGlite();
  keys = await generateAuditSigningKey("ES256");
});
afterAll(async () => {
  await db.close();
});

async function writeChain(instanceId: string, n: number, table = "hmcp_audit"): Promise<void> {
  const sink = await PostgresAuditSink.open({ db, instanceId, table, signing: { privateKey: keys.privateJwk }, checkpointEvery: 4 });
  for (let i = 0; i < n; i++) sink.append(sampleRecord(i));
  await sink.close();
}

describe("PostgresAuditSink (on PGlite)", () => {
  it("keeps one verifiable chain per instance, continued across reopen", async () => {
    await Promise.all([writeChain("node-a", 10), writeChain("node-b", 7)]);
    await writeChain("node-a", 3);
    expect(await listAuditChains(db)).toEqual(["node-a", "node-b"]);
    const a = await verifyAuditTable(db, { instanceId: "node-a", publicKey: keys.publicJwk });
    expect(a).toMatchObject({ ok: true, records: 13, chain: "node-a", closed: true, signaturesChecked: true });
    const b = await verifyAuditTable(db, { instanceId: "node-b", publicKey: keys.publicJwk });
    expect(b).toMatchObject({ ok: true, records: 7, chain: "node-b" });
  });

  it("detects an edited row, a deleted row and a recomputed chain", async () => {
    await writeChain("edit", 10, "audit_t");
    const { rows } = await db.query<{ line: string }>("SELECT line FROM audit_t WHERE instance_id = 'edit' AND seq = 3");
    await db.query("UPDATE audit_t SET line = $1 WHERE instance_id = 'edit' AND seq = 3", [rows[0]!.line.replace('"outcome":"blocked"', '"outcome":"allowed"')]);
    expect((await verifyAuditTable(db, { instanceId: "edit", table: "audit_t" })).firstError).toMatchObject({ line: 3, reason: "hash_mismatch" });

    await writeChain("del", 10, "audit_t");
    await db.query("DELETE FROM audit_t WHERE instance_id = 'del' AND seq = 7");
    expect((await verifyAuditTable(db, { instanceId: "del", table: "audit_t" })).firstError).toMatchObject({ line: 8, reason: "seq_gap" });

    // A database administrator rewrites record 1 and recomputes every hash: only the signature catches it.
    await writeChain("dba", 10, "audit_t");
    const all = (await db.query<{ seq: number; line: string }>("SELECT seq, line FROM audit_t WHERE instance_id = 'dba' ORDER BY seq")).rows;
    let prev = "0".repeat(64);
    for (const r of all) {
      const e = JSON.parse(r.line) as { seq: number; record: Record<string, unknown> };
      if (e.seq === 1) e.record["outcome"] = "denied";
      const hash = sha256Hex(canonicalJson({ prev, record: e.record, seq: e.seq }));
      await db.query("UPDATE audit_t SET line = $1, prev = $2, hash = $3 WHERE instance_id = 'dba' AND seq = $4", [JSON.stringify({ seq: e.seq, prev, hash, record: e.record }), prev, hash, e.seq]);
      prev = hash;
    }
    expect((await verifyAuditTable(db, { instanceId: "dba", table: "audit_t" })).ok).toBe(true);
    expect((await verifyAuditTable(db, { instanceId: "dba", table: "audit_t", publicKey: keys.publicJwk })).firstError).toMatchObject({ line: 5, reason: "checkpoint_mismatch" });
  });

  it("a trail cut back to an interval checkpoint cannot pass as closed, a reopen after it is marked, and another chain's rows are refused", async () => {
    await writeChain("cut", 10, "audit_c"); // checkpoints after records 4 and 8 (seq 5, 10) and at close (seq 13)
    const rows = async (id: string) => (await db.query<{ seq: number; line: string }>("SELECT seq, line FROM audit_c WHERE instance_id = $1 ORDER BY seq", [id])).rows;
    // the forger deletes everything after the second interval checkpoint and relabels it "close", recomputing its hash
    await db.query("DELETE FROM audit_c WHERE instance_id = 'cut' AND seq > 10");
    const cp = (await rows("cut")).at(-1)!;
    const e = JSON.parse(cp.line) as { seq: number; prev: string; record: Record<string, unknown> };
    expect(e.record["why"]).toBe("interval");
    const relabelled = { ...e.record, why: "close" };
    const line = JSON.stringify({ seq: e.seq, prev: e.prev, hash: sha256Hex(canonicalJson({ prev: e.prev, record: relabelled, seq: e.seq })), record: relabelled });
    await db.query("UPDATE audit_c SET line = $1 WHERE instance_id = 'cut' AND seq = 10", [line]);
    expect(await verifyAuditTable(db, { instanceId: "cut", table: "audit_c", publicKey: keys.publicJwk })).toMatchObject({
      ok: false,
      firstError: { line: 10, reason: "checkpoint_mismatch" },
    });
    // put the label back: the cut trail verifies but does not claim a clean close; a writer reopening it marks the gap
    await db.query("UPDATE audit_c SET line = $1 WHERE instance_id = 'cut' AND seq = 10", [cp.line]);
    expect(await verifyAuditTable(db, { instanceId: "cut", table: "audit_c", publicKey: keys.publicJwk })).toMatchObject({ ok: true, closed: false, recoveries: [] });
    await writeChain("cut", 2, "audit_c");
    const resumed = await verifyAuditTable(db, { instanceId: "cut", table: "audit_c", publicKey: keys.publicJwk });
    expect(resumed).toMatchObject({ ok: true, closed: true, records: 10 });
    expect(resumed.recoveries).toEqual([{ seq: 11, time: expect.stringMatching(/^\d{4}-/) as unknown }]);
    // a chain that ended with its close checkpoint reopens without a recover checkpoint
    await writeChain("cut", 1, "audit_c");
    expect((await verifyAuditTable(db, { instanceId: "cut", table: "audit_c", publicKey: keys.publicJwk })).recoveries).toHaveLength(1);
    // node-b's rows copied in as node-a's: every hash holds, but the signed checkpoints name node-b
    await writeChain("node-b2", 3, "audit_c");
    for (const r of await rows("node-b2")) await db.query("INSERT INTO audit_c (instance_id, seq, prev, hash, time, type, line) SELECT 'node-a2', seq, prev, hash, time, type, line FROM audit_c WHERE instance_id = 'node-b2' AND seq = $1", [r.seq]);
    expect(await verifyAuditTable(db, { instanceId: "node-a2", table: "audit_c", publicKey: keys.publicJwk })).toMatchObject({
      ok: false,
      firstError: { reason: "chain_mismatch" },
    });
  });

  it("anchors handed out by onCheckpoint catch rows deleted back to a checkpoint, which the table alone cannot show", async () => {
    const anchors: CheckpointAnchor[] = [];
    const sink = await PostgresAuditSink.open({ db, instanceId: "anchored", table: "audit_a", signing: { privateKey: keys.privateJwk }, checkpointEvery: 4, onCheckpoint: (a) => void anchors.push(a) });
    for (let i = 0; i < 10; i++) sink.append(sampleRecord(i));
    await sink.close();
    expect(anchors.map((a) => [a.chain, a.seq, a.why])).toEqual([["anchored", 5, "interval"], ["anchored", 10, "interval"], ["anchored", 13, "close"]]);
    const opts = { instanceId: "anchored", table: "audit_a", publicKey: keys.publicJwk };
    // another instance's anchors are not this chain's business
    const foreign = { chain: "elsewhere", seq: 2, hash: "0".repeat(64) };
    expect(await verifyAuditTable(db, { ...opts, anchors: [...anchors, foreign] })).toMatchObject({ ok: true, closed: true });
    await db.query("DELETE FROM audit_a WHERE instance_id = 'anchored' AND seq > 10");
    expect(await verifyAuditTable(db, opts)).toMatchObject({ ok: true, closed: false });
    expect(await verifyAuditTable(db, { ...opts, anchors })).toMatchObject({ ok: false, firstError: { reason: "anchor_missing", seq: 13 } });
  });

  it("a second writer with the same instance id fails closed instead of forking the chain", async () => {
    const s1 = await PostgresAuditSink.open({ db, instanceId: "dup", signing: false });
    const s2 = await PostgresAuditSink.open({ db, instanceId: "dup", signing: false });
    s1.append(sampleRecord(1));
    await s1.flush();
    s2.append(sampleRecord(2));
    await expect(s2.flush()).rejects.toBeInstanceOf(AuditSinkError);
    expect(() => s2.append(sampleRecord(3))).toThrow(/write failed/);
    await s1.close();
    expect((await verifyAuditTable(db, { instanceId: "dup" })).records).toBe(1);
  });

  it("refuses bad options", async () => {
    await expect(PostgresAuditSink.open({ db, instanceId: "x", signing: false, table: "a; drop table b" })).rejects.toThrow(/table/);
    await expect(PostgresAuditSink.open({ db, instanceId: "", signing: false })).rejects.toThrow(/instanceId/);
    await expect(PostgresAuditSink.open({ db: {} as never, instanceId: "x", signing: false })).rejects.toThrow(/query/);
  });
});
