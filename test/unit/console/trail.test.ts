import { cp, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileAuditSink, PostgresAuditSink, generateAuditSigningKey, newAuditRecord, queryAudit, type AuditRecordInput, type AuditSink, type CheckpointAnchor } from "hmcp";
import type { JWK } from "jose";
import { openAuditTrail } from "../../../src/console/trail.js";
import type { ActivityFilter, AuditTrailView, LocatedRecord } from "../../../src/console/trail-types.js";
import { tempLogDir } from "../audit/helpers.js";

// Two chains, as two agents write them: "emr" (rotated into several files) and "intake".
const CHAINS = [
  { prefix: "emr", agent: "emr-writeback", n: 60 },
  { prefix: "intake", agent: "patient-intake", n: 40 },
] as const;
const BASE = Date.UTC(2026, 10, 22, 6, 0, 0);
const OUTCOMES = ["allowed", "allowed", "denied", "blocked", "failed", "allowed"] as const;

/** A deterministic record of one chain: several patients, actors, outcomes, reasons and guardrail blocks. */
function record(chain: number, i: number): AuditRecordInput {
  const outcome = OUTCOMES[(i + chain) % OUTCOMES.length]!;
  const reason = outcome === "denied" ? (i % 2 ? "insufficient_scope" : "patient_mismatch") : outcome === "blocked" ? "guardrail_blocked" : outcome === "failed" && i % 2 ? "handler_error" : undefined;
  const http = i % 11 === 5;
  const guardrails: AuditRecordInput["guardrails"] =
    outcome === "blocked"
      ? [
          { guardrail: i % 2 ? "prompt-injection" : "phi-output", stage: "input", action: "block" },
          ...(i % 3 === 0 ? [{ guardrail: "phi-output", stage: "output" as const, action: "block" as const }] : []),
        ]
      : [{ guardrail: "phi-redactor", stage: "output", action: "redact", entityTypes: ["NAME"] }];
  return newAuditRecord({
    // the same ids in the file trail and the table: one oracle for both
    id: `00000000-0000-4000-8000-${String(chain * 1000 + i).padStart(12, "0")}`,
    type: http ? "http" : "request",
    agent: CHAINS[chain]!.agent,
    outcome,
    ...(reason !== undefined && { reason }),
    // 7 minutes apart, some written late (out of time order), and the same times in both chains (ties)
    time: new Date(BASE + i * 7 * 60_000 - (i % 5 === 3 ? 20 * 60_000 : 0)),
    actor: { ...(i % 5 === 0 ? {} : { sub: `user-${i % 3}` }), clientId: `client-${(i + chain) % 2}`, ...(i % 4 === 0 && { fhirUser: "Practitioner/pr-1" }) },
    source: { address: "127.0.0.1" },
    transport: "http",
    method: http ? "POST /mcp" : i % 3 ? "tools/call" : "sampling/createMessage",
    ...(http && { status: 401 }),
    requestId: i,
    patients: http ? [] : [`pat-${i % 4}`, ...(i % 9 === 0 ? ["pat-9"] : [])],
    scopes: ["system/Patient.rs"],
    guardrails,
    latencyMs: 2 + i,
    digests: { request: "a".repeat(64) },
  });
}

async function fill(sink: AuditSink, chain: number): Promise<void> {
  for (let i = 0; i < CHAINS[chain]!.n; i++) sink.append(record(chain, i));
  await sink.close();
}

let keys: { privateJwk: JWK; publicJwk: JWK };
let dir: string;
const anchors: CheckpointAnchor[] = [];
/** every record, as the existing query reads them (chain order) */
let all: AuditRecordInput[];
/** id -> where the record is, read from the files */
let where: Map<string, { chain: string; seq: number; file: string; line: number }>;

beforeAll(async () => {
  keys = await generateAuditSigningKey();
  dir = await tempLogDir("console-trail");
  for (let c = 0; c < CHAINS.length; c++) {
    const { prefix } = CHAINS[c]!;
    const sink = await FileAuditSink.open({ dir, prefix, signing: { privateKey: keys.privateJwk }, checkpointEvery: 7, rotate: { maxBytes: 4096 }, onCheckpoint: (a) => void anchors.push(a) });
    await fill(sink, c);
  }
  all = await queryAudit([dir]);
  where = new Map();
  for (const f of (await readdir(dir)).filter((x) => x.endsWith(".jsonl"))) {
    const lines = (await readFile(path.join(dir, f), "utf8")).split("\n");
    lines.forEach((l, k) => {
      if (l === "") return;
      const e = JSON.parse(l) as { seq: number; record: { id?: string; type: string } };
      if (e.record.type !== "checkpoint") where.set(e.record.id!, { chain: f.split("-")[0]!, seq: e.seq, file: f, line: k + 1 });
    });
  }
});

/** What the view must answer for `f`: the existing query's records (patient, outcome, method, time), then the filters it lacks. */
async function oracle(f: ActivityFilter): Promise<AuditRecordInput[]> {
  const q = await queryAudit([dir], {
    ...(f.patient !== undefined && { patient: f.patient }),
    ...(f.outcome !== undefined && { outcome: f.outcome }),
    ...(f.method !== undefined && { method: f.method }),
    ...(f.since !== undefined && { since: new Date(f.since) }),
    ...(f.until !== undefined && { until: new Date(f.until) }),
  });
  const rest = q.filter(
    (r) =>
      (f.agent === undefined || r.agent === f.agent) &&
      (f.client === undefined || r.actor.clientId === f.client) &&
      (f.reason === undefined || r.reason === f.reason) &&
      (f.actor === undefined || r.actor.sub === f.actor || r.actor.fhirUser === f.actor),
  );
  // oldest first; the sort is stable, so ties stay in chain order
  return rest.sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
}

const FILTERS: ActivityFilter[] = [
  {},
  { patient: "pat-1" },
  { patient: "pat-9", outcome: "allowed" },
  { patient: "pat-2", since: BASE + 60 * 60_000, until: BASE + 4 * 60 * 60_000 },
  { since: BASE + 2 * 60 * 60_000 },
  { until: BASE + 90 * 60_000 },
  { outcome: "blocked" },
  { actor: "Practitioner/pr-1" },
  { actor: "user-2", outcome: "denied" },
  { client: "client-1", agent: "patient-intake" },
  { method: "POST /mcp" },
  { reason: "insufficient_scope" },
  { patient: "pat-404" },
  { agent: "nobody" },
];

/** The assertions every kind of trail must pass against the oracle; `locate` says where a record is in this trail. */
async function checkAgainstOracle(t: AuditTrailView, locate: (id: string) => { chain: string; seq: number }): Promise<void> {
  expect(t.size).toBe(all.length);
  expect(t.skipped).toBe(0);
  expect(t.indexBytes).toBeGreaterThan(0);
  for (const f of FILTERS) {
    const want = (await oracle(f)).reverse();
    const got: string[] = [];
    for (let offset = 0; ; offset += 7) {
      const page = await t.activity(f, { offset, limit: 7 });
      expect(page.total, JSON.stringify(f)).toBe(want.length);
      expect(page.offset).toBe(offset);
      if (page.rows.length === 0) break;
      got.push(...page.rows.map((r) => r.id));
    }
    expect(got, JSON.stringify(f)).toEqual(want.map((r) => r.id));
  }
  // the rows carry the record's summary and where it is
  const page = await t.activity({ patient: "pat-9" }, { offset: 0, limit: 500 });
  expect(page.rows.length).toBeGreaterThan(2);
  for (const row of page.rows) {
    const r = all.find((x) => x.id === row.id)!;
    expect(row).toEqual({
      id: r.id,
      time: r.time,
      ...locate(r.id),
      type: r.type,
      agent: r.agent,
      method: r.method,
      ...(r.actor.sub ?? r.actor.fhirUser ? { actor: r.actor.sub ?? r.actor.fhirUser } : {}),
      client: r.actor.clientId,
      patients: r.patients,
      outcome: r.outcome,
      ...(r.reason !== undefined && { reason: r.reason }),
      ...(r.status !== undefined && { status: r.status }),
    });
  }
  // record(id): the full record, read back
  for (const r of [all[0]!, all[37]!, all.at(-1)!]) expect(await t.record(r.id)).toEqual({ ...r, ...locate(r.id) });
  expect(await t.record("ffffffff-0000-4000-8000-000000000000")).toBeUndefined();
  // records(filter): every match, oldest first, in full
  for (const f of [{}, { patient: "pat-3", outcome: "denied" as const }]) {
    const got: LocatedRecord[] = [];
    for await (const r of t.records(f)) got.push(r);
    expect(got).toEqual((await oracle(f)).map((r) => ({ ...r, ...locate(r.id) })));
  }
  // stats against counts computed from the oracle
  for (const f of [{}, { patient: "pat-1" }, { agent: "emr-writeback", since: BASE + 60 * 60_000 }]) {
    const rs = await oracle(f);
    const s = t.stats(f);
    const hours = new Map<string, Record<string, number>>();
    for (const r of rs) {
      const h = `${r.time.slice(0, 13)}:00Z`;
      const row = hours.get(h) ?? { allowed: 0, denied: 0, blocked: 0, failed: 0 };
      row[r.outcome]!++;
      hours.set(h, row);
    }
    expect(s.perHour).toEqual([...hours].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([hour, c]) => ({ hour, ...c })));
    const count = (labels: string[]) => {
      const m = new Map<string, number>();
      for (const l of labels) m.set(l, (m.get(l) ?? 0) + 1);
      return [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    };
    expect(s.refusalsByReason).toEqual(count(rs.filter((r) => r.outcome !== "allowed").map((r) => r.reason ?? "(none)")).map(([reason, n]) => ({ reason, count: n })));
    expect(s.guardrailBlocks).toEqual(count(rs.flatMap((r) => r.guardrails.filter((g) => g.action === "block").map((g) => g.guardrail))).map(([guardrail, n]) => ({ guardrail, count: n })));
    expect(s.guardrailBlocks.length).toBeGreaterThan(0);
    const actors = count(rs.map((r) => r.actor.sub ?? r.actor.fhirUser ?? r.actor.clientId!)).slice(0, 10);
    expect(s.topActors).toEqual("patient" in f ? actors.map(([actor, n]) => ({ actor, count: n })) : []);
  }
  expect(t.facets()).toEqual({
    agents: ["emr-writeback", "patient-intake"],
    methods: ["POST /mcp", "sampling/createMessage", "tools/call"],
    reasons: ["guardrail_blocked", "handler_error", "insufficient_scope", "patient_mismatch"],
    clients: ["client-0", "client-1"],
  });
  await expect(t.activity({}, { offset: 0, limit: 501 })).rejects.toThrow(RangeError);
  await expect(t.activity({}, { offset: -1, limit: 5 })).rejects.toThrow(RangeError);
  expect(() => t.stats({ since: Number.NaN })).toThrow(TypeError);
  await expect(t.activity({ patinet: "pat-1" } as ActivityFilter, { offset: 0, limit: 5 })).rejects.toThrow(/unknown member 'patinet'/);
}

describe("openAuditTrail over audit files", () => {
  it("answers activity, record, records, stats and facets as the existing query does", async () => {
    const t = await openAuditTrail({ paths: [dir] });
    try {
      // several chains, several files: the oracle must see both
      expect(new Set(all.map((r) => r.agent)).size).toBe(2);
      expect((await readdir(dir)).filter((f) => f.startsWith("emr-")).length).toBeGreaterThan(2);
      await checkAgainstOracle(t, (id) => ({ chain: where.get(id)!.chain, seq: where.get(id)!.seq }));
    } finally {
      await t.close();
    }
  });

  it("verifies each chain in the background with the key: pending, then verified and signed", async () => {
    const now = Date.parse("2026-11-23T06:00:00Z");
    const t = await openAuditTrail({ paths: [dir], publicKey: keys.publicJwk, now: () => now });
    try {
      const before = t.integrity();
      expect(before.map((c) => [c.name, c.status])).toEqual([
        ["emr", "pending"],
        ["intake", "pending"],
      ]);
      expect(before[0]!.lastCheckpoint?.signed).toBe(false);
      await t.verified;
      const after = t.integrity();
      const files = (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).sort();
      for (const [k, c] of after.entries()) {
        const { prefix, n } = CHAINS[k]!;
        expect(c).toMatchObject({ name: prefix, status: "verified", checked: { links: true, signatures: true, anchors: false }, records: n, result: { ok: true, closed: true } });
        expect(c.sources.map((s) => path.basename(s))).toEqual(files.filter((f) => f.startsWith(`${prefix}-`)));
        expect(c.failure).toBeUndefined();
        // the close checkpoint is the chain's last entry; its age counts from its own time
        const last = JSON.parse((await readFile(c.sources.at(-1)!, "utf8")).trimEnd().split("\n").at(-1)!) as { seq: number; record: { why: string; time: string } };
        expect(last.record.why).toBe("close");
        expect(c.lastCheckpoint).toEqual({ seq: last.seq, time: last.record.time, signed: true, ageSeconds: Math.floor((now - Date.parse(last.record.time)) / 1000) });
      }
    } finally {
      await t.close();
    }
  });

  it("without a key: verified links only, the checkpoint not signed", async () => {
    const t = await openAuditTrail({ paths: [dir] });
    await t.verified;
    for (const c of t.integrity()) {
      expect(c).toMatchObject({ status: "verified", checked: { links: true, signatures: false, anchors: false }, result: { signaturesChecked: false } });
      expect(c.lastCheckpoint?.signed).toBe(false);
    }
    await t.close();
  });

  it("a tampered copy: the edited chain is broken at the edited file and line, the other verified", async () => {
    const copy = await tempLogDir("console-trail-tampered");
    await cp(dir, copy, { recursive: true, filter: (src) => !src.endsWith(".lock") });
    const victim = all.filter((r) => r.agent === "emr-writeback" && r.outcome === "denied")[4]!;
    const at = where.get(victim.id)!;
    expect(at.file).not.toBe((await readdir(copy)).filter((f) => f.startsWith("emr-")).sort()[0]); // not in the first file
    const text = await readFile(path.join(copy, at.file), "utf8");
    const lines = text.split("\n");
    expect(lines[at.line - 1]).toContain('"outcome":"denied"');
    lines[at.line - 1] = lines[at.line - 1]!.replace('"outcome":"denied"', '"outcome":"allowed"');
    await writeFile(path.join(copy, at.file), lines.join("\n"));
    const t = await openAuditTrail({ paths: [copy], publicKey: keys.publicJwk });
    // the index reads the trail as it is now
    expect((await t.record(victim.id))?.outcome).toBe("allowed");
    await t.verified;
    const [emr, intake] = t.integrity();
    expect(emr).toMatchObject({ name: "emr", status: "broken", failure: { source: at.file, line: at.line, seq: at.seq, reason: "hash_mismatch" } });
    expect(emr!.failure!.message).toMatch(/edited/);
    expect(emr!.records).toBeLessThan(CHAINS[0].n);
    expect(intake).toMatchObject({ name: "intake", status: "verified", records: CHAINS[1].n });
    await t.close();
  });

  it("a chain cut before its close checkpoint: unsigned tail with the key, unless allowed", async () => {
    const copy = await tempLogDir("console-trail-cut");
    await cp(dir, copy, { recursive: true, filter: (src) => !src.endsWith(".lock") });
    const last = (await readdir(copy)).filter((f) => f.startsWith("intake-")).sort().at(-1)!;
    const lines = (await readFile(path.join(copy, last), "utf8")).trimEnd().split("\n");
    // drop the close checkpoint: the records after the last checkpoint left are covered by no signature
    expect(lines.at(-2)).toContain('"type":"request"');
    await writeFile(path.join(copy, last), lines.slice(0, -1).join("\n") + "\n");
    const strict = await openAuditTrail({ paths: [copy], publicKey: keys.publicJwk });
    await strict.verified;
    const intake = strict.integrity()[1]!;
    expect(intake).toMatchObject({ status: "broken", failure: { reason: "unsigned_tail" } });
    expect(intake.lastCheckpoint?.signed).toBe(true); // the last checkpoint left (an interval one) verified
    expect(intake.lastCheckpoint?.seq).toBeLessThan(intake.failure!.seq!);
    await strict.close();
    const lenient = await openAuditTrail({ paths: [copy], publicKey: keys.publicJwk, allowUnsignedTail: true });
    await lenient.verified;
    expect(lenient.integrity()[1]).toMatchObject({ status: "verified", records: CHAINS[1].n, result: { closed: false } });
    await lenient.close();
  });

  it("checks anchors: each chain against its own, and an anchor of a chain absent from the trail", async () => {
    const gone: CheckpointAnchor = { ...anchors[0]!, chain: "gone" };
    const t = await openAuditTrail({ paths: [dir], publicKey: keys.publicJwk, anchors: [...anchors, gone] });
    await t.verified;
    const list = t.integrity();
    expect(list.map((c) => [c.name, c.status, c.checked.anchors])).toEqual([
      ["emr", "verified", true],
      ["intake", "verified", true],
      ["gone", "broken", true],
    ]);
    expect(list[2]!.failure).toMatchObject({ reason: "anchor_missing", seq: gone.seq });
    await t.close();
  });

  it("an anchor of a chain whose checkpoints are all gone is that chain's failure", async () => {
    const d = await tempLogDir("console-trail-unsigned");
    const sink = await FileAuditSink.open({ dir: d, prefix: "intake", signing: false });
    await fill(sink, 1);
    const anchor = anchors.find((a) => a.chain === "intake")!;
    const t = await openAuditTrail({ paths: [d], anchors: [anchor] });
    expect(t.integrity().map((c) => c.lastCheckpoint)).toEqual([undefined]);
    await t.verified;
    expect(t.integrity()).toEqual([
      expect.objectContaining({ name: "intake", status: "broken", checked: { links: true, signatures: false, anchors: true }, failure: expect.objectContaining({ reason: "anchor_missing", seq: anchor.seq }) }),
    ]);
    await t.close();
  });

  it("skips and counts lines that are not records; files outside a sink's naming form one chain", async () => {
    const d = await tempLogDir("console-trail-skip");
    const first = (await readdir(dir)).filter((f) => f.startsWith("intake-")).sort()[0]!;
    const text = await readFile(path.join(dir, first), "utf8");
    const records = text.split("\n").filter((l) => l.includes('"type":"request"')).length;
    await writeFile(path.join(d, "loose.jsonl"), `not json\n{"seq":1}\n${text}{"seq":99,"record":{"type":"re`);
    const t = await openAuditTrail({ paths: [path.join(d, "loose.jsonl")] });
    expect(t.size).toBe(records);
    expect(t.skipped).toBe(3);
    expect(t.integrity().map((c) => c.name)).toEqual(["(other)"]);
    await t.verified;
    expect(t.integrity()[0]).toMatchObject({ status: "broken", failure: { source: "loose.jsonl", line: 1, reason: "malformed_line" } });
    await t.close();
  });

  it("refuses neither or both sources, a missing path, an unknown option, an unusable key, and reading after close", async () => {
    await expect(openAuditTrail({})).rejects.toThrow(/exactly one of 'paths'/);
    await expect(openAuditTrail({ paths: [dir], db: new PGlite() })).rejects.toThrow(TypeError);
    await expect(openAuditTrail({ paths: [] })).rejects.toThrow(/at least one/);
    await expect(openAuditTrail({ paths: [path.join(dir, "missing.jsonl")] })).rejects.toMatchObject({ code: "ENOENT" });
    await expect(openAuditTrail({ paths: [dir], publicKy: keys.publicJwk } as never)).rejects.toThrow(/publicKy/);
    await expect(openAuditTrail({ paths: [dir], publicKey: keys.privateJwk })).rejects.toThrow(/PUBLIC key/);
    const t = await openAuditTrail({ paths: [dir] });
    await t.close();
    await expect(t.activity({}, { offset: 0, limit: 5 })).rejects.toThrow(/closed/);
    await expect(t.record(all[0]!.id)).rejects.toThrow(/closed/);
    expect(t.stats({}).perHour.length).toBeGreaterThan(0);
  });
});

describe("openAuditTrail over the PostgreSQL sink's table (PGlite)", () => {
  let db: PGlite;
  const seqs = new Map<string, { chain: string; seq: number }>();

  beforeAll(async () => {
    db = new PGlite();
    for (let c = 0; c < CHAINS.length; c++) {
      const sink = await PostgresAuditSink.open({ db, instanceId: CHAINS[c]!.prefix, signing: { privateKey: keys.privateJwk }, checkpointEvery: 7 });
      await fill(sink, c);
    }
    const { rows } = await db.query<{ instance_id: string; seq: number; line: string }>("SELECT instance_id, seq, line FROM hmcp_audit");
    for (const r of rows) {
      const e = JSON.parse(r.line) as { record: { id?: string; type: string } };
      if (e.record.type !== "checkpoint") seqs.set(e.record.id!, { chain: r.instance_id, seq: Number(r.seq) });
    }
  });
  afterAll(async () => {
    await db.close();
  });

  it("answers as the existing query does over the same records in files", async () => {
    const t = await openAuditTrail({ db });
    try {
      expect(seqs.size).toBe(all.length);
      await checkAgainstOracle(t, (id) => seqs.get(id)!);
    } finally {
      await t.close();
    }
  });

  it("verifies each instance's chain, and names the table, instance and seq of an edited row", async () => {
    const t = await openAuditTrail({ db, publicKey: keys.publicJwk });
    expect(t.integrity().every((c) => c.status === "pending")).toBe(true);
    await t.verified;
    expect(t.integrity().map((c) => [c.name, c.sources, c.status, c.records, c.lastCheckpoint?.signed])).toEqual([
      ["emr", ["hmcp_audit:emr"], "verified", 60, true],
      ["intake", ["hmcp_audit:intake"], "verified", 40, true],
    ]);
    await t.close();
    const { rows } = await db.query<{ seq: number; line: string }>("SELECT seq, line FROM hmcp_audit WHERE instance_id = 'intake' AND line LIKE '%\"outcome\":\"denied\"%' ORDER BY seq LIMIT 1");
    const row = rows[0]!;
    await db.query("UPDATE hmcp_audit SET line = $1 WHERE instance_id = 'intake' AND seq = $2", [row.line.replace('"outcome":"denied"', '"outcome":"allowed"'), row.seq]);
    try {
      const broken = await openAuditTrail({ db, publicKey: keys.publicJwk });
      await broken.verified;
      expect(broken.integrity()[1]).toMatchObject({ name: "intake", status: "broken", failure: { source: "hmcp_audit:intake", line: Number(row.seq), seq: Number(row.seq), reason: "hash_mismatch" } });
      expect(broken.integrity()[0]).toMatchObject({ status: "verified" });
      await broken.close();
    } finally {
      await db.query("UPDATE hmcp_audit SET line = $1 WHERE instance_id = 'intake' AND seq = $2", [row.line, row.seq]);
    }
  });

  it("refuses an invalid table name", async () => {
    await expect(openAuditTrail({ db, table: "x; drop table y" })).rejects.toThrow(/'table'/);
  });
});
