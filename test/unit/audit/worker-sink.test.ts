import { readFile, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { AuditSinkError, FileAuditSink, WorkerFileAuditSink, generateAuditSigningKey, verifyAuditFiles, type AuditRecordInput } from "hmcp";
import type { JWK } from "jose";
import { sampleRecord, tempLogDir } from "./helpers.js";

let keys: { privateJwk: JWK; publicJwk: JWK };
beforeAll(async () => {
  keys = await generateAuditSigningKey();
});

async function listFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).sort().map((f) => path.join(dir, f));
}

async function lines(file: string): Promise<string[]> {
  return (await readFile(file, "utf8")).split("\n").slice(0, -1);
}

async function allBytes(dir: string): Promise<string> {
  let out = "";
  for (const f of await listFiles(dir)) out += `${path.basename(f)}\n${await readFile(f, "utf8")}`;
  return out;
}

describe("WorkerFileAuditSink", () => {
  it("writes byte for byte what FileAuditSink writes, across rotations and in several windows", async () => {
    const [a, b] = [await tempLogDir("audit-main"), await tempLogDir("audit-worker")];
    const onMain = await FileAuditSink.open({ dir: a, signing: false, rotate: { maxBytes: 16_384 } });
    const onWorker = await WorkerFileAuditSink.open({ dir: b, signing: false, rotate: { maxBytes: 16_384 } });
    for (let i = 0; i < 300; i++) {
      // one record object for both (its id is random); neither sink mutates what it is given
      const r = sampleRecord(i);
      onMain.append(r);
      onWorker.append(r);
      // several group-commit windows, some full (256 records) and some closed by the timer
      if (i % 97 === 0) await new Promise((r) => setTimeout(r, 8));
    }
    await Promise.all([onMain.close(), onWorker.close()]);
    const files = await listFiles(b);
    expect(files.length).toBeGreaterThan(3);
    expect(await allBytes(b)).toBe(await allBytes(a));
    expect(await verifyAuditFiles(files)).toMatchObject({ ok: true, records: 300 });
  });

  it("signs checkpoints, continues a chain another sink started, and the whole verifies with the public key", async () => {
    const dir = await tempLogDir("audit-worker-chain");
    const first = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, checkpointEvery: 4 });
    for (let i = 0; i < 6; i++) first.append(sampleRecord(i));
    await first.close();
    const sink = await WorkerFileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, checkpointEvery: 4 });
    expect(sink.publicJwk).toEqual(keys.publicJwk);
    // 6 records + checkpoints after 4 and at close
    expect(sink.position.seq).toBe(8);
    for (let i = 6; i < 16; i++) sink.append(sampleRecord(i));
    await sink.close();
    const files = await listFiles(dir);
    const ls = await lines(files[0]!);
    const why = ls.map((l) => JSON.parse(l) as { record: { type: string; why?: string } }).filter((e) => e.record.type === "checkpoint").map((e) => e.record.why);
    expect(why).toEqual(["interval", "close", "interval", "interval", "close"]);
    expect(sink.position.seq).toBe(ls.length);
    expect(await verifyAuditFiles(files, { publicKey: keys.publicJwk })).toMatchObject({ ok: true, records: 16, signaturesChecked: true, closed: true });
  });

  it("flush resolves only once the worker has the records on disk; onDurable reports their seq", async () => {
    const dir = await tempLogDir("audit-worker-flush");
    const acks: number[] = [];
    const sink = await WorkerFileAuditSink.open({ dir, signing: false, durability: { mode: "group", intervalMs: 60_000 }, onDurable: (s) => acks.push(s) });
    for (let i = 0; i < 7; i++) sink.append(sampleRecord(i));
    // the 60 s window is open: nothing has been sent to the worker yet
    expect(await lines((await listFiles(dir))[0]!).catch(() => [])).toHaveLength(0);
    await sink.flush();
    expect(await lines((await listFiles(dir))[0]!)).toHaveLength(7);
    expect(acks.at(-1)).toBe(7);
    expect(sink.position.seq).toBe(7);
    await sink.close();
    expect(() => sink.append(sampleRecord(8))).toThrow(AuditSinkError);
  });

  it("fsync mode persists and acknowledges each record on its own", async () => {
    const dir = await tempLogDir("audit-worker-fsync");
    const acks: number[] = [];
    const sink = await WorkerFileAuditSink.open({ dir, signing: false, durability: { mode: "fsync" }, onDurable: (s) => acks.push(s) });
    for (let i = 0; i < 5; i++) sink.append(sampleRecord(i));
    await sink.flush();
    expect(acks).toEqual([1, 2, 3, 4, 5]);
    await sink.close();
  });

  it("fails closed when the worker cannot write: flush rejects, append throws write_failed, nothing later is accepted", async () => {
    const dir = await tempLogDir("audit-worker-fail");
    const notices: string[] = [];
    const sink = await WorkerFileAuditSink.open({ dir, signing: false, rotate: { maxBytes: 4096 }, onNotice: (m) => notices.push(m) });
    for (let i = 0; i < 3; i++) sink.append(sampleRecord(i));
    await sink.flush();
    // the next rotation has to create a file in a directory that is gone
    await rm(dir, { recursive: true });
    for (let i = 3; i < 40; i++) sink.append(sampleRecord(i));
    const err = await sink.flush().then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(AuditSinkError);
    expect((err as AuditSinkError).code).toBe("write_failed");
    expect(() => sink.append(sampleRecord(41))).toThrow(expect.objectContaining({ code: "write_failed" }) as Error);
    await expect(sink.close()).rejects.toThrow(AuditSinkError);
    expect(notices).toContain("audit write failed");
  });

  it("refuses bad options before starting a worker, and a second writer on the same chain", async () => {
    const dir = await tempLogDir("audit-worker-opts");
    await expect(WorkerFileAuditSink.open({ dir } as never)).rejects.toThrow(/signing/);
    await expect(WorkerFileAuditSink.open({ dir, signing: false, now: () => 0 } as never)).rejects.toThrow(/'now' is not supported/);
    await expect(WorkerFileAuditSink.open({ dir, signing: false, checkpointEvry: 3 } as never)).rejects.toThrow(/unknown option 'checkpointEvry'/);
    const sink = await WorkerFileAuditSink.open({ dir, signing: false });
    await expect(FileAuditSink.open({ dir, signing: false })).rejects.toThrow(/already has a sink open/);
    await expect(WorkerFileAuditSink.open({ dir, signing: false })).rejects.toThrow(/already has a sink open/);
    expect(() => sink.append({ type: "request" } as never)).toThrow(/newAuditRecord/);
    await sink.close();
    expect((await readdir(dir)).filter((f) => f.endsWith(".lock"))).toEqual([]);
    // a torn last line left by a crash is cut off on open, and reported
    const notices: string[] = [];
    await writeFile((await listFiles(dir))[0]!, '{"seq":1,"pr', { flag: "a" });
    const again = await WorkerFileAuditSink.open({ dir, signing: false, onNotice: (m) => notices.push(m) });
    again.append(sampleRecord(1));
    await again.close();
    expect(notices.some((m) => m.includes("torn last line"))).toBe(true);
    expect(await verifyAuditFiles(await listFiles(dir))).toMatchObject({ ok: true, records: 1 });
  });

  it("writes records JSON cannot carry as they are as FileAuditSink writes them (toJSON honoured, a function omitted, a bigint as the placeholder)", async () => {
    const [a, b] = [await tempLogDir("audit-main-odd"), await tempLogDir("audit-worker-odd")];
    const odd = (i: number): AuditRecordInput[] => [
      { ...sampleRecord(i), reason: { toJSON: () => "from_toJSON" } } as unknown as AuditRecordInput,
      { ...sampleRecord(i + 1), extra: () => "a function" } as unknown as AuditRecordInput,
      { ...sampleRecord(i + 2), latencyMs: 10n } as unknown as AuditRecordInput,
      sampleRecord(i + 3),
    ];
    const onMain = await FileAuditSink.open({ dir: a, signing: false });
    const onWorker = await WorkerFileAuditSink.open({ dir: b, signing: false });
    const records = odd(0);
    for (const r of records) onMain.append(r);
    for (const r of records) onWorker.append(r);
    await Promise.all([onMain.close(), onWorker.close()]);
    expect(await allBytes(b)).toBe(await allBytes(a));
    const written = (await lines((await listFiles(b))[0]!)).map((l) => (JSON.parse(l) as { record: Record<string, unknown> }).record);
    expect(written[0]!["reason"]).toBe("from_toJSON");
    expect(written[2]!["error"]).toBe("unserialisable_record");
  });
});
