// Crash durability (issue 4): a child writing records is killed with SIGKILL mid-stream; verify then
// accepts every complete record and reports a torn tail if there is one, and no acknowledged record
// is missing. Note: SIGKILL kills the process, not the machine, so the page cache survives; this
// tests the write path and recovery, while fsync is what covers a power loss.
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { FileAuditSink, generateAuditSigningKey, verifyAuditFiles } from "hmcp";
import { sampleRecord, tempLogDir } from "../unit/audit/helpers.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const writer = path.resolve(here, "../unit/audit/fixtures/crash-writer.ts");

/** Runs the writer until it has acknowledged `minAcks` records, then SIGKILLs it. Returns the acked seqs. */
function runAndKill(dir: string, mode: "fsync" | "group", jwk: string, minAcks: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", writer, dir, mode, jwk], { stdio: ["ignore", "pipe", "pipe"] });
    let maxAck = 0;
    let buf = "";
    let err = "";
    let killed = false;
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      buf += d;
      let i: number;
      while ((i = buf.indexOf("\n")) !== -1) {
        const m = /^ack (\d+)$/.exec(buf.slice(0, i));
        buf = buf.slice(i + 1);
        if (m) maxAck = Math.max(maxAck, Number(m[1]));
      }
      if (!killed && maxAck >= minAcks) {
        killed = true;
        child.kill("SIGKILL");
      }
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
    child.on("exit", (_code, signal) => (signal === "SIGKILL" ? resolve(maxAck) : reject(new Error(`writer exited without being killed: ${err}`))));
  });
}

async function files(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).sort().map((f) => path.join(dir, f));
}

describe.each(["fsync", "group"] as const)("crash durability (%s)", (mode) => {
  it("keeps every acknowledged record, flags only a torn tail, and recovers on reopen", async () => {
    const keys = await generateAuditSigningKey();
    const dir = await tempLogDir(`audit-crash-${mode}`);
    const acked = await runAndKill(dir, mode, JSON.stringify(keys.privateJwk), mode === "fsync" ? 150 : 2000);
    expect(acked).toBeGreaterThan(0);

    const r = await verifyAuditFiles(await files(dir), { publicKey: keys.publicJwk, allowUnsignedTail: true });
    if (!r.ok) expect(r.firstError?.reason).toBe("torn_line"); // only an incomplete last line may be wrong
    expect(r.lastSeq).toBeGreaterThanOrEqual(acked);
    expect(r.closed).toBe(false);
    // without allowUnsignedTail the records after the last checkpoint are flagged, as a truncation would be
    if (r.signedThrough < r.lastSeq) expect((await verifyAuditFiles(await files(dir), { publicKey: keys.publicJwk })).ok).toBe(false);

    // A restarted writer cuts off a torn tail, marks the unclean end with a signed recover checkpoint, continues the
    // chain and closes it with a checkpoint.
    const notices: string[] = [];
    const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, onNotice: (m) => notices.push(m) });
    expect(sink.position.seq).toBe(r.lastSeq + 1);
    sink.append(sampleRecord(1));
    await sink.close();
    if (!r.ok) expect(notices.join("\n")).toMatch(/torn last line/);
    const after = await verifyAuditFiles(await files(dir), { publicKey: keys.publicJwk });
    expect(after).toMatchObject({ ok: true, closed: true, lastSeq: r.lastSeq + 3, recoveries: [{ seq: r.lastSeq + 1 }] });
  });
});
