import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditSinkError, PostgresAuditSink, generateAuditSigningKey, listAuditChains, verifyAuditTable, canonicalJson, sha256Hex } from "hmcp";
import type { JWK } from "jose";
import type pg from "pg";
import type { AuditQueryable } from "hmcp";

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
