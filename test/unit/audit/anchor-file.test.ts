import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { appendAnchorFile, expandAuditPaths, FileAuditSink, generateAuditSigningKey, newAuditRecord, readAnchorFile, verifyAuditFiles } from "hmcp";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
const tempDir = async () => {
  const d = await mkdtemp(path.join(os.tmpdir(), "hmcp-anchor-file-"));
  dirs.push(d);
  return d;
};

describe("appendAnchorFile / readAnchorFile (checkpoint anchors kept outside the trail)", () => {
  it("a signing sink's anchors, appended as it checkpoints, are on disk when close resolves and verify its trail", async () => {
    const dir = await tempDir();
    const file = path.join(dir, "anchors.jsonl");
    const key = await generateAuditSigningKey();
    const sink = await FileAuditSink.open({ dir: path.join(dir, "trail"), signing: { privateKey: key.privateJwk }, checkpointEvery: 3, onCheckpoint: appendAnchorFile(file) });
    for (let i = 0; i < 7; i++) await sink.append(newAuditRecord({ type: "request", agent: "a", outcome: "allowed", method: "tools/call" }));
    await sink.close();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const anchors = readAnchorFile(file);
    // a checkpoint after every 3 records, and the one written at close
    expect(anchors.map((a) => a.why)).toEqual(["interval", "interval", "close"]);
    const files = await expandAuditPaths([path.join(dir, "trail")]);
    expect((await verifyAuditFiles(files, { publicKey: key.publicJwk, anchors })).ok).toBe(true);
    // an anchor that the trail no longer matches (a rewritten close checkpoint) fails verification
    const forged = anchors.map((a, i) => (i === anchors.length - 1 ? { ...a, hash: "0".repeat(64) } : a));
    expect((await verifyAuditFiles(files, { publicKey: key.publicJwk, anchors: forged })).ok).toBe(false);
  });

  it("refuses being called as the hook (with the anchor) or without a file: it takes the file and returns the hook", () => {
    const call = appendAnchorFile as unknown as (...a: unknown[]) => unknown;
    const anchor = { chain: "c", seq: 1, hash: "0".repeat(64) };
    expect(() => call("/tmp/anchors.jsonl", anchor)).toThrow("appendAnchorFile(file) takes the file alone and returns the hook");
    expect(() => call(anchor)).toThrow("appendAnchorFile(file) takes the file alone");
    expect(() => call("")).toThrow("appendAnchorFile(file) takes the file alone");
    expect(typeof appendAnchorFile("/tmp/anchors.jsonl")).toBe("function");
  });

  it("reads a JSON array too; refuses what is not anchors, naming the entry; a missing file throws unless missingOk", async () => {
    const dir = await tempDir();
    const arr = path.join(dir, "anchors.json");
    await writeFile(arr, JSON.stringify([{ chain: "c", seq: 4, hash: "a".repeat(64) }]));
    expect(readAnchorFile(arr)).toEqual([{ chain: "c", seq: 4, hash: "a".repeat(64) }]);
    const bad = path.join(dir, "bad.jsonl");
    await writeFile(bad, `${JSON.stringify({ chain: "c", seq: 1, hash: "b".repeat(64) })}\n${JSON.stringify({ chain: "c", seq: "2", hash: "b".repeat(64) })}\n`);
    expect(() => readAnchorFile(bad)).toThrow(`${bad}: entry 2 is not a checkpoint anchor { chain, seq, hash }`);
    const notJson = path.join(dir, "nope.txt");
    await writeFile(notJson, "chain seq hash\n");
    expect(() => readAnchorFile(notJson)).toThrow("not JSON Lines (or a JSON array) of checkpoint anchors");
    const missing = path.join(dir, "missing.jsonl");
    expect(() => readAnchorFile(missing)).toThrow(/ENOENT/);
    expect(readAnchorFile(missing, { missingOk: true })).toEqual([]);
  });
});
