import { chmod, readFile, readdir, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { FileAuditSink, AuditSinkError, defaultOperationalLogger, generateAuditSigningKey, newAuditRecord, queryAudit, verifyAuditFiles, canonicalJson, sha256Hex, type CheckpointAnchor, type VerifyResult } from "hmcp";
import type { JWK } from "jose";
import { sampleRecord, tempLogDir } from "./helpers.js";

let keys: { privateJwk: JWK; publicJwk: JWK };
beforeAll(async () => {
  keys = await generateAuditSigningKey();
});

async function writeChain(n: number, opts: { checkpointEvery?: number; dir?: string } = {}): Promise<{ dir: string; files: string[] }> {
  const dir = opts.dir ?? (await tempLogDir("audit-sink"));
  const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, checkpointEvery: opts.checkpointEvery ?? 4 });
  for (let i = 0; i < n; i++) sink.append(sampleRecord(i));
  await sink.close();
  return { dir, files: await listFiles(dir) };
}

async function listFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).sort().map((f) => path.join(dir, f));
}

async function lines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8")).split("\n").slice(0, -1);
}

function expectFailure(r: VerifyResult, line: number, reason: string) {
  expect(r.ok).toBe(false);
  expect(r.firstError).toMatchObject({ line, reason });
  expect(r.firstError?.file).toMatch(/^audit-\d{8}-\d{6}\.jsonl$/);
}

/** A chain line in the form the sink writes, as a forger who knows the format would write it. */
function forgedLine(seq: number, prev: string, record: unknown): { line: string; hash: string } {
  const hash = sha256Hex(canonicalJson({ prev, record, seq }));
  return { line: `{"seq":${seq},"prev":"${prev}","hash":"${hash}","record":${canonicalJson(record)}}`, hash };
}

/** Recomputes seq/prev/hash for every line as a forger without the key would. */
function rehash(ls: string[]): string[] {
  let prev = "0".repeat(64);
  return ls.map((l, i) => {
    const e = JSON.parse(l) as { record: unknown };
    const { line, hash } = forgedLine(i + 1, prev, e.record);
    prev = hash;
    return line;
  });
}

describe("FileAuditSink + verifyAuditFiles", () => {
  it("writes a chain that verifies with the public key, with checkpoints every N and at close", async () => {
    const { files } = await writeChain(10);
    expect(files).toHaveLength(1);
    const ls = await lines(files[0]!);
    // 10 records + checkpoints after 4, 8 and at close.
    expect(ls).toHaveLength(13);
    const entries = ls.map((l) => JSON.parse(l) as { seq: number; record: { type: string; why?: string } });
    expect(entries.map((e) => e.seq)).toEqual([...Array(13).keys()].map((i) => i + 1));
    expect(entries.filter((e) => e.record.type === "checkpoint").map((e) => e.record.why)).toEqual(["interval", "interval", "close"]);
    const r = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(r).toMatchObject({ ok: true, records: 10, checkpoints: 3, signaturesChecked: true, signedThrough: 13, lastSeq: 13, closed: true, chain: "audit" });
  });

  it("a record canonical JSON cannot represent becomes a valid placeholder record, and the chain still verifies", async () => {
    const dir = await tempLogDir("audit-sink");
    const notices: Array<Record<string, unknown>> = [];
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, onNotice: (_m, meta) => void notices.push(meta) });
    sink.append(sampleRecord(0));
    const bad = sampleRecord(1);
    sink.append({ ...bad, agent: "agent \ud800", requestId: "id \udfff" });
    sink.append(sampleRecord(2));
    await sink.close();
    const files = await listFiles(dir);
    const r = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(r.ok).toBe(true);
    expect(r.records).toBe(3);
    const records = (await lines(files[0]!)).map((l) => (JSON.parse(l) as { record: Record<string, unknown> }).record).filter((x) => x["type"] !== "checkpoint");
    expect(records[1]).toMatchObject({ id: bad.id, type: bad.type, time: bad.time, agent: "unknown", outcome: "failed", reason: "unserialisable_record" });
    expect(notices).toEqual([{ id: bad.id, error: "TypeError" }]);
  });

  it("refuses a record that does not fit the schema (an extra member, a wrong type), naming the member, never its value", async () => {
    const dir = await tempLogDir("audit-schema");
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk } });
    try {
      const extra = { ...sampleRecord(0), note: "Marcos Delagarza SSN 123-45-6789" };
      const e1 = (() => {
        try {
          sink.append(extra);
        } catch (e) {
          return e;
        }
      })();
      expect(e1).toBeInstanceOf(AuditSinkError);
      expect(e1).toMatchObject({ code: "invalid_record" });
      expect((e1 as Error).message).toMatch(/at note \(unrecognized_keys\)/);
      expect((e1 as Error).message).not.toMatch(/Delagarza|123-45/);
      expect(() => sink.append({ ...sampleRecord(1), patients: [42 as unknown as string] })).toThrow(/at patients\.0/);
      sink.append(sampleRecord(2));
    } finally {
      await sink.close();
    }
    const r = await verifyAuditFiles(await listFiles(dir), { publicKey: keys.publicJwk });
    expect(r).toMatchObject({ ok: true, records: 1 });
  });

  it("a clean close always ends the chain with a close checkpoint, so reopening it marks no unclean end; one crash is marked once", async () => {
    const dir = await tempLogDir("audit-close");
    const open = () => FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, checkpointEvery: 2 });
    const verify = async () => verifyAuditFiles(await listFiles(dir), { publicKey: keys.publicJwk });
    let sink = await open();
    sink.append(sampleRecord(0));
    sink.append(sampleRecord(1)); // an interval checkpoint follows: the chain's last entry before close
    await sink.close();
    expect(await verify()).toMatchObject({ ok: true, closed: true, recoveries: [] });
    sink = await open(); // reopened and closed with no records: nothing to mark, nothing added
    await sink.close();
    expect(await verify()).toMatchObject({ ok: true, closed: true, recoveries: [], lastSeq: 4 });
    // a writer dies (no close); the next one marks it once, and restarts after that are clean
    sink = await open();
    sink.append(sampleRecord(2));
    await sink.flush();
    await writeFile(path.join(dir, "audit.lock"), "999999999");
    for (let i = 0; i < 3; i++) await (await open()).close();
    const r = await verify();
    expect(r).toMatchObject({ ok: true, closed: true });
    expect(r.recoveries.map((x) => x.seq)).toEqual([6]);
  });

  it("reports an audit folder or file other users can read when it opens them, keeps their modes, and says nothing of private ones", async () => {
    const dir = await tempLogDir("audit-modes");
    const notices: Array<[string, Record<string, unknown>]> = [];
    const onNotice = (m: string, meta: Record<string, unknown>) => void notices.push([m, meta]);
    let sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, onNotice });
    sink.append(sampleRecord(0));
    await sink.close();
    expect(notices).toEqual([]);
    const [file] = await listFiles(dir);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(file!)).mode & 0o777).toBe(0o600);
    await chmod(dir, 0o755);
    await chmod(file!, 0o644);
    sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, onNotice });
    await sink.close();
    expect(notices.map(([m, meta]) => [m.split(" (")[0], meta])).toEqual([
      ["audit folder is open to other users", { mode: "0755" }],
      ["audit file is open to other users", { mode: "0644" }],
    ]);
    expect((await stat(dir)).mode & 0o777).toBe(0o755);
  });

  it("without onNotice, notices are warnings on the default operational logger", async () => {
    const dir = await tempLogDir("audit-modes");
    await chmod(dir, 0o750);
    const warn = vi.spyOn(defaultOperationalLogger(), "warn").mockImplementation(() => undefined);
    try {
      const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk } });
      await sink.close();
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/^audit folder is open to other users/), { component: "audit", mode: "0750" });
    } finally {
      warn.mockRestore();
    }
  });

  it("continues the chain when reopened, and rotates by size across files", async () => {
    const dir = await tempLogDir("audit-rotate");
    let sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, rotate: { maxBytes: 4096 } });
    for (let i = 0; i < 20; i++) sink.append(sampleRecord(i));
    await sink.close();
    sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, rotate: { maxBytes: 4096 } });
    for (let i = 20; i < 30; i++) sink.append(sampleRecord(i));
    await sink.close();
    const files = await listFiles(dir);
    expect(files.length).toBeGreaterThan(3);
    const r = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(r).toMatchObject({ ok: true, records: 30, closed: true });
    // each file ends with a checkpoint
    for (const f of files) expect((JSON.parse((await lines(f)).at(-1)!) as { record: { type: string } }).record.type).toBe("checkpoint");
    // dropping a middle file breaks the chain at the next file's first line
    const r2 = await verifyAuditFiles([files[0]!, ...files.slice(2)], { publicKey: keys.publicJwk });
    expect(r2.ok).toBe(false);
    expect(r2.firstError).toMatchObject({ file: path.basename(files[2]!), line: 1, reason: "seq_gap" });
  });

  it("a crash right after rotation created the next file (left empty) does not restart the chain: reopening continues it and marks the unclean end", async () => {
    const dir = await tempLogDir("audit-rotate-crash");
    const open = () => FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, onNotice: () => undefined });
    let sink = await open();
    for (let i = 0; i < 5; i++) sink.append(sampleRecord(i));
    await sink.flush(); // no close: the writer dies in rotate(), after it created the next file, before writing into it
    const [first] = await listFiles(dir);
    await writeFile(first!.replace(/-000001\.jsonl$/, "-000002.jsonl"), "", { mode: 0o600 });
    await writeFile(path.join(dir, "audit.lock"), "2147483646");
    sink = await open();
    expect(sink.position).toMatchObject({ seq: 6, file: first!.replace(/-000001\.jsonl$/, "-000002.jsonl") }); // 5 records + recover
    for (let i = 5; i < 8; i++) sink.append(sampleRecord(i));
    await sink.close();
    const r = await verifyAuditFiles(await listFiles(dir), { publicKey: keys.publicJwk });
    expect(r.firstError).toBeUndefined(); // the old sink restarted at seq 1 here: seq_gap, and the trail never verified again
    expect(r).toMatchObject({ ok: true, records: 8, closed: true, lastSeq: 10 });
    expect(r.recoveries.map((x) => x.seq)).toEqual([6]);
  });

  it("walks back over several trailing files with no entry (one empty, one holding only a torn line); an empty file between files verifies as no entries", async () => {
    const dir = await tempLogDir("audit-rotate-torn");
    const notices: string[] = [];
    const open = () => FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, onNotice: (m) => void notices.push(m) });
    let sink = await open();
    for (let i = 0; i < 3; i++) sink.append(sampleRecord(i));
    await sink.close();
    const [first] = await listFiles(dir);
    await writeFile(first!.replace(/-000001\.jsonl$/, "-000002.jsonl"), "", { mode: 0o600 });
    await writeFile(first!.replace(/-000001\.jsonl$/, "-000003.jsonl"), '{"seq":5,"prev":"ab', { mode: 0o600 });
    sink = await open();
    expect(notices).toEqual([expect.stringMatching(/^audit file had a torn last line/)]);
    sink.append(sampleRecord(3));
    await sink.close();
    const files = await listFiles(dir);
    expect(await Promise.all(files.map(async (f) => (await lines(f)).length))).toEqual([4, 0, 2]); // 3 + close | empty | record + close
    // the chain ended with its close checkpoint, so no recover checkpoint: seq 5 and 6 follow seq 4 across the empty file
    expect(await verifyAuditFiles(files, { publicKey: keys.publicJwk })).toMatchObject({ ok: true, records: 4, lastSeq: 6, closed: true, recoveries: [] });
  });

  it("verifies across a signing-key rotation with a JWK Set", async () => {
    const dir = await tempLogDir("audit-keyrot");
    const next = await generateAuditSigningKey("ES256");
    let sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk } });
    for (let i = 0; i < 3; i++) sink.append(sampleRecord(i));
    await sink.close();
    sink = await FileAuditSink.open({ dir, signing: { privateKey: next.privateJwk } });
    for (let i = 3; i < 6; i++) sink.append(sampleRecord(i));
    await sink.close();
    const files = await listFiles(dir);
    expect(await verifyAuditFiles(files, { publicKey: { keys: [keys.publicJwk, next.publicJwk] } })).toMatchObject({ ok: true, records: 6, checkpoints: 2 });
    const oldOnly = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expect(oldOnly.firstError).toMatchObject({ line: 8, reason: "bad_signature" });
    await expect(verifyAuditFiles(files, { publicKey: { keys: [keys.privateJwk] } })).rejects.toThrow(/PUBLIC key/);
  });

  it("rotates when the UTC day changes", async () => {
    const dir = await tempLogDir("audit-daily");
    let t = Date.UTC(2026, 10, 22, 23, 59, 59, 990);
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, now: () => t });
    sink.append(sampleRecord(0));
    await sink.flush();
    t += 60_000;
    sink.append(sampleRecord(1));
    await sink.close();
    const files = (await listFiles(dir)).map((f) => path.basename(f));
    expect(files).toEqual(["audit-20261122-000001.jsonl", "audit-20261123-000002.jsonl"]);
    expect((await verifyAuditFiles(await listFiles(dir), { publicKey: keys.publicJwk })).ok).toBe(true);
  });

  it("flush resolves only after the records are on disk; fsync mode acknowledges each record", async () => {
    const dir = await tempLogDir("audit-fsync");
    const acks: number[] = [];
    const sink = await FileAuditSink.open({ dir, signing: false, durability: { mode: "fsync" }, onDurable: (s) => acks.push(s) });
    for (let i = 0; i < 5; i++) sink.append(sampleRecord(i));
    await sink.flush();
    expect(acks).toEqual([1, 2, 3, 4, 5]);
    expect(await lines((await listFiles(dir))[0]!)).toHaveLength(5);
    await sink.close();
    expect(() => sink.append(sampleRecord(6))).toThrow(AuditSinkError);
  });

  it("allows one writer per chain: a live holder is refused, a dead one's lock is taken over", async () => {
    const dir = await tempLogDir("audit-lock");
    const first = await FileAuditSink.open({ dir, signing: false });
    await expect(FileAuditSink.open({ dir, signing: false })).rejects.toThrow(/already has a sink open/);
    // another prefix is another chain
    const other = await FileAuditSink.open({ dir, prefix: "other", signing: false });
    await other.close();
    await first.close();
    // a lock left by a process that no longer exists (a crash) does not block the restart
    await writeFile(path.join(dir, "audit.lock"), "2147483646");
    const again = await FileAuditSink.open({ dir, signing: false });
    again.append(sampleRecord(1));
    await again.close();
    expect((await readdir(dir)).filter((f) => f.endsWith(".lock"))).toEqual([]);
    // also, each written before this process started: an empty lock (an older writer killed between creating it and
    // writing its pid), a lock naming this process's pid (a restarted container's pid 1), and a takeover lock whose
    // holder died while taking over a stale lock; nothing is left behind but the chain's files
    const past = new Date(Date.now() - process.uptime() * 1000 - 60_000);
    const stale = "2147483646";
    const left = [{ "audit.lock": "" }, { "audit.lock": String(process.pid) }, { "audit.lock": stale, [`audit.lock.${stale}.takeover`]: "2147483645" }];
    for (const files of left) {
      for (const [name, text] of Object.entries(files)) {
        await writeFile(path.join(dir, name), text);
        await utimes(path.join(dir, name), past, past);
      }
      await (await FileAuditSink.open({ dir, signing: false })).close();
    }
    expect((await readdir(dir)).filter((f) => !f.endsWith(".jsonl"))).toEqual([]);
    // this process's pid in a lock written since it started is another open in this process (a worker thread, another
    // copy of the module) even if this module did not take it; and the same folder reached through a symlink is one chain
    await writeFile(path.join(dir, "audit.lock"), String(process.pid));
    await expect(FileAuditSink.open({ dir, signing: false })).rejects.toThrow(/already has a sink open/);
    await rm(path.join(dir, "audit.lock"));
    const alias = `${dir}-alias`;
    await symlink(dir, alias);
    const held = await FileAuditSink.open({ dir, signing: false });
    await expect(FileAuditSink.open({ dir: alias, signing: false })).rejects.toThrow(/already has a sink open/);
    await held.close();
    await rm(alias);
  });

  it("refuses bad options and records, naming the problem", async () => {
    const dir = await tempLogDir("audit-opts");
    await expect(FileAuditSink.open({ dir } as never)).rejects.toThrow(/signing/);
    await expect(FileAuditSink.open({ dir, signing: false, checkpointEvry: 3 } as never)).rejects.toThrow("FileAuditSink: unknown option 'checkpointEvry'; did you mean 'checkpointEvery'?");
    await expect(FileAuditSink.open({ dir, signing: { privateKey: keys.publicJwk } })).rejects.toThrow(/private key/);
    const sink = await FileAuditSink.open({ dir, signing: false });
    expect(() => sink.append({ type: "request" } as never)).toThrow(/newAuditRecord/);
    await sink.close();
  });
});

describe("FileAuditSink: what callers can get wrong does not break the trail", () => {
  it("refuses a record of type checkpoint (only the sink writes checkpoints) and one whose time is not a real RFC 3339 date-time", async () => {
    const dir = await tempLogDir("audit-refuse");
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk } });
    sink.append(sampleRecord(0));
    const refused = (r: unknown) => {
      try {
        sink.append(r as never);
      } catch (e) {
        return e instanceof AuditSinkError ? `${e.code}: ${e.message}` : String(e);
      }
      return "accepted";
    };
    expect(refused({ ...sampleRecord(1), type: "checkpoint" })).toMatch(/^invalid_record: .* at type /);
    // 30 February (which Date.parse rolls over to 2 March), and a bare number
    expect(refused(newAuditRecord({ type: "request", agent: "a", outcome: "allowed", time: "2026-02-30T00:00:00Z" }))).toMatch(/^invalid_record: .* at time /);
    expect(refused(newAuditRecord({ type: "request", agent: "a", outcome: "allowed", time: "1" }))).toMatch(/^invalid_record: .* at time /);
    expect(refused(newAuditRecord({ type: "request", agent: "a", outcome: "allowed", time: "2026-11-22T10:00:00.000+05:00" }))).toBe("accepted");
    sink.append(sampleRecord(2));
    await sink.close();
    expect(await verifyAuditFiles(await listFiles(dir), { publicKey: keys.publicJwk })).toMatchObject({ ok: true, records: 3, closed: true });
  });

  it("a trail written before the time check (a record time that is no RFC 3339 date-time) still verifies and is still read", async () => {
    const dir = await tempLogDir("audit-old-time");
    const sink = await FileAuditSink.open({ dir, signing: false });
    for (let i = 0; i < 3; i++) sink.append(sampleRecord(i));
    await sink.close();
    const [file] = await listFiles(dir);
    // what an earlier version wrote for a caller's record with time "2026-11-22 10:00:00Z", hashes and all
    const ls = (await lines(file!)).map((l) => JSON.parse(l) as { record: Record<string, unknown> });
    ls[1]!.record["time"] = "2026-11-22 10:00:00Z";
    await writeFile(file!, rehash(ls.map((e) => JSON.stringify(e))).join("\n") + "\n");
    expect(await verifyAuditFiles([file!])).toMatchObject({ ok: true, records: 3 });
    expect((await queryAudit([dir])).map((r) => r.time)).toContain("2026-11-22 10:00:00Z");
  });

  it("a second close() resolves only when the first has written every record and the close checkpoint", async () => {
    const dir = await tempLogDir("audit-close-twice");
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk } });
    for (let i = 0; i < 2000; i++) sink.append(sampleRecord(i));
    const first = sink.close();
    await sink.close(); // e.g. a shutdown hook and the embedding service both close it; the process may exit now
    expect(await lines((await listFiles(dir))[0]!)).toHaveLength(2000 + 2 + 1); // records, 2 interval checkpoints, close
    await first;
  });

  it("an onDurable callback that throws is a notice; the records are on disk and the sink keeps taking records", async () => {
    const dir = await tempLogDir("audit-ondurable");
    const notices: string[] = [];
    let calls = 0;
    const sink = await FileAuditSink.open({
      dir,
      signing: false,
      onNotice: (m) => notices.push(m),
      onDurable: () => {
        if (calls++ === 0) throw new Error("metrics exporter down");
      },
    });
    sink.append(sampleRecord(0));
    await sink.flush();
    expect(notices).toEqual(["audit onDurable failed"]);
    sink.append(sampleRecord(1));
    await sink.close();
    expect(await verifyAuditFiles(await listFiles(dir))).toMatchObject({ ok: true, records: 2 });
  });
});

describe("tampering is detected by verify", () => {
  it("an edited field", async () => {
    const { files } = await writeChain(10);
    const ls = await lines(files[0]!);
    const edited = ls[2]!.replace('"outcome":"blocked"', '"outcome":"allowed"');
    expect(edited).not.toBe(ls[2]);
    ls[2] = edited;
    await writeFile(files[0]!, ls.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files), 3, "hash_mismatch");
  });

  it("a deleted line", async () => {
    const { files } = await writeChain(10);
    const ls = await lines(files[0]!);
    ls.splice(6, 1);
    await writeFile(files[0]!, ls.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files), 7, "seq_gap");
  });

  it("two swapped lines", async () => {
    const { files } = await writeChain(10);
    const ls = await lines(files[0]!);
    [ls[1], ls[2]] = [ls[2]!, ls[1]!];
    await writeFile(files[0]!, ls.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files), 2, "seq_gap");
  });

  it("an inserted forged line with a correct hash", async () => {
    const { files } = await writeChain(10);
    const ls = await lines(files[0]!);
    const before = JSON.parse(ls[4]!) as { seq: number; hash: string };
    ls.splice(5, 0, forgedLine(before.seq + 1, before.hash, sampleRecord(99)).line);
    await writeFile(files[0]!, ls.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files), 7, "seq_gap");
  });

  it("a member added to an entry line, or a second \"record\" member (hashes intact): the line is not what the sink writes", async () => {
    const { files } = await writeChain(3);
    const original = await lines(files[0]!);
    // free text smuggled in beside the hashed members
    const added = [...original];
    added[1] = added[1]!.replace(/}$/, ',"note":"called about her result"}');
    await writeFile(files[0]!, added.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files, { publicKey: keys.publicJwk }), 2, "malformed_line");
    // a forged record first, the real one last: JSON.parse keeps the last (the hash holds), a first-wins reader sees the forgery
    const e = JSON.parse(original[0]!) as { seq: number; prev: string; hash: string; record: Record<string, unknown> };
    const twice = [...original];
    twice[0] = `{"seq":${e.seq},"prev":"${e.prev}","hash":"${e.hash}","record":${canonicalJson({ ...e.record, outcome: "denied" })},"record":${canonicalJson(e.record)}}`;
    await writeFile(files[0]!, twice.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files, { publicKey: keys.publicJwk }), 1, "malformed_line");
    await writeFile(files[0]!, original.join("\n") + "\n");
    expect((await verifyAuditFiles(files, { publicKey: keys.publicJwk })).ok).toBe(true);
  });

  it("a member added to the last checkpoint, its hash recomputed (no later entry covers it, the signature does not cover it)", async () => {
    const { files } = await writeChain(3);
    const ls = await lines(files[0]!);
    const last = JSON.parse(ls.at(-1)!) as { seq: number; prev: string; record: Record<string, unknown> };
    ls[ls.length - 1] = forgedLine(last.seq, last.prev, { ...last.record, patients: ["pat-9"] }).line;
    await writeFile(files[0]!, ls.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files, { publicKey: keys.publicJwk }), ls.length, "malformed_line");
  });

  it("an empty line (e.g. added by an editor) is named as such", async () => {
    const { files } = await writeChain(3);
    await writeFile(files[0]!, (await readFile(files[0]!, "utf8")) + "\n");
    const r = await verifyAuditFiles(files);
    expectFailure(r, 5, "malformed_line");
    expect(r.firstError?.message).toMatch(/^line is empty/);
  });

  it("a truncated file: cut mid-line, and cut at a line boundary", async () => {
    const { files } = await writeChain(10);
    const text = await readFile(files[0]!, "utf8");
    await writeFile(files[0]!, text.slice(0, text.length - 40));
    const r = await verifyAuditFiles(files);
    expectFailure(r, 13, "torn_line");
    expect(r.records).toBe(10);
    // whole lines removed after a checkpoint: only the signed close checkpoint shows it
    const ls = text.split("\n").slice(0, 11);
    await writeFile(files[0]!, ls.join("\n") + "\n");
    expect((await verifyAuditFiles(files)).ok).toBe(true);
    const signed = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
    expectFailure(signed, 11, "unsigned_tail");
  });

  it("the whole file rewritten with recomputed hashes (caught by the checkpoint signature)", async () => {
    const { files } = await writeChain(10);
    const ls = await lines(files[0]!);
    const edited = ls[0]!.replace('"outcome":"allowed"', '"outcome":"denied"');
    expect(edited).not.toBe(ls[0]);
    ls[0] = edited;
    await writeFile(files[0]!, rehash(ls).join("\n") + "\n");
    // the chain alone looks intact...
    expect((await verifyAuditFiles(files)).ok).toBe(true);
    // ...but the first checkpoint signed a different head
    expectFailure(await verifyAuditFiles(files, { publicKey: keys.publicJwk }), 5, "checkpoint_mismatch");
    // removing the checkpoints too leaves nothing signed
    const stripped = rehash(ls.filter((l) => !l.includes('"type":"checkpoint"')));
    await writeFile(files[0]!, stripped.join("\n") + "\n");
    expectFailure(await verifyAuditFiles(files, { publicKey: keys.publicJwk }), 1, "unsigned_tail");
  });

  it("a checkpoint signed by another key", async () => {
    const { files } = await writeChain(10);
    const other = await generateAuditSigningKey("ES256");
    expectFailure(await verifyAuditFiles(files, { publicKey: other.publicJwk }), 5, "bad_signature");
  });
});

describe("checkpoint anchors: onCheckpoint hands them out, verify checks them", () => {
  async function anchoredChain(n: number, dir?: string): Promise<{ dir: string; files: string[]; anchors: CheckpointAnchor[] }> {
    const anchors: CheckpointAnchor[] = [];
    const d = dir ?? (await tempLogDir("audit-anchors"));
    const sink = await FileAuditSink.open({ dir: d, signing: { privateKey: keys.privateJwk }, checkpointEvery: 4, onCheckpoint: (a) => void anchors.push(a) });
    for (let i = 0; i < n; i++) sink.append(sampleRecord(i));
    await sink.close();
    return { dir: d, files: await listFiles(d), anchors };
  }

  it("hands out each checkpoint's chain, seq and entry hash once it is on disk, and an intact chain verifies against them", async () => {
    const { files, anchors } = await anchoredChain(10);
    // records 1-4, checkpoint 5, records 6-9, checkpoint 10, records 11-12, close checkpoint 13
    expect(anchors.map((a) => [a.seq, a.why])).toEqual([[5, "interval"], [10, "interval"], [13, "close"]]);
    const entries = (await lines(files[0]!)).map((l) => JSON.parse(l) as { seq: number; hash: string; record: { chain?: string } });
    for (const a of anchors) {
      const e = entries.find((x) => x.seq === a.seq)!;
      expect(a).toMatchObject({ hash: e.hash, chain: e.record.chain });
      expect(Date.parse(a.time)).not.toBeNaN();
    }
    expect(await verifyAuditFiles(files, { publicKey: keys.publicJwk, anchors })).toMatchObject({ ok: true });
    expect(await verifyAuditFiles(files, { anchors })).toMatchObject({ ok: true });
  });

  it("a chain cut back to an interval checkpoint passes on the files alone, and fails against its anchors (anchor_missing)", async () => {
    const { files, anchors } = await anchoredChain(10);
    const ls = await lines(files[0]!);
    await writeFile(files[0]!, ls.slice(0, 10).join("\n") + "\n");
    // what the files alone show: a chain whose writer did not close it (it could have crashed)
    expect(await verifyAuditFiles(files, { publicKey: keys.publicJwk })).toMatchObject({ ok: true, closed: false, lastSeq: 10 });
    const r = await verifyAuditFiles(files, { publicKey: keys.publicJwk, anchors });
    expectFailure(r, 10, "anchor_missing");
    expect(r.firstError).toMatchObject({ seq: 13 });
    expect(r.firstError!.message).toMatch(/ends at seq 10, before the checkpoint anchored elsewhere at seq 13/);
  });

  it("a chain rewritten by someone holding the signing key fails against the anchors (anchor_mismatch); anchors of a chain not in the files fail too", async () => {
    const { anchors } = await anchoredChain(10);
    // the forger writes a history of their own with the real key and the same chain id (records differ)
    const forged = await tempLogDir("audit-anchors-forged");
    const sink = await FileAuditSink.open({ dir: forged, signing: { privateKey: keys.privateJwk }, checkpointEvery: 4 });
    for (let i = 0; i < 10; i++) sink.append(sampleRecord(i));
    await sink.close();
    const files = await listFiles(forged);
    expect(await verifyAuditFiles(files, { publicKey: keys.publicJwk })).toMatchObject({ ok: true, closed: true });
    const r = await verifyAuditFiles(files, { publicKey: keys.publicJwk, anchors });
    expectFailure(r, 5, "anchor_mismatch");
    // a trail whose chain id none of the anchors' matches: the anchored chain's files are gone
    const other = await tempLogDir("audit-anchors-other");
    const s2 = await FileAuditSink.open({ dir: other, signing: { privateKey: keys.privateJwk }, checkpointEvery: 4, chainId: "another-chain" });
    s2.append(sampleRecord(0));
    await s2.close();
    const orphan = await verifyAuditFiles(await listFiles(other), { anchors });
    expect(orphan).toMatchObject({ ok: false, firstError: { reason: "anchor_missing", seq: 5 } });
  });

  it("a failing onCheckpoint is a notice and never fails the sink", async () => {
    const dir = await tempLogDir("audit-anchors-hook");
    const notices: string[] = [];
    const sink = await FileAuditSink.open({
      dir,
      signing: { privateKey: keys.privateJwk },
      checkpointEvery: 2,
      onNotice: (m) => void notices.push(m),
      onCheckpoint: (a) => (a.seq === 3 ? Promise.reject(new Error("bucket down")) : (() => { throw new Error("bucket down"); })()),
    });
    for (let i = 0; i < 4; i++) sink.append(sampleRecord(i));
    await sink.flush();
    await sink.close();
    await new Promise((r) => setImmediate(r));
    expect(notices.filter((m) => m === "audit onCheckpoint failed")).toHaveLength(3);
    expect(await verifyAuditFiles(await listFiles(dir), { publicKey: keys.publicJwk })).toMatchObject({ ok: true, records: 4, closed: true });
    await expect(FileAuditSink.open({ dir, signing: false, onCheckpoint: "yes" as never })).rejects.toThrow(/onCheckpoint must be a function/);
  });
});

describe("any single-character edit is detected", () => {
  it("with the key, verify fails for every edit that changes the file (property)", async () => {
    const fc = (await import("fast-check")).default;
    const { files } = await writeChain(12);
    const original = await readFile(files[0]!, "utf8");
    const body = original.slice(0, -1); // keep the final newline in place
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: body.length - 1 }), fc.constantFrom("0", "1", "a", "f", "x", "\"", " ", "}", "9"), async (pos, ch) => {
        const edited = body.slice(0, pos) + ch + body.slice(pos + 1) + "\n";
        if (edited === original) return;
        await writeFile(files[0]!, edited);
        const r = await verifyAuditFiles(files, { publicKey: keys.publicJwk });
        expect(r.ok).toBe(false);
      }),
      { numRuns: 150, seed: 7 },
    );
    await writeFile(files[0]!, original);
    expect((await verifyAuditFiles(files, { publicKey: keys.publicJwk })).ok).toBe(true);
  });
});
