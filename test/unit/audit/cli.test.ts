import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile, readdir } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { FileAuditSink, generateAuditSigningKey } from "hmcp";
import { main } from "../../../src/cli/main.js";
import { sampleRecord, tempLogDir } from "./helpers.js";

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, { out: (s) => (out += s + "\n"), err: (s) => (err += s + "\n") });
  return { code, out, err };
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
let dir: string;
let file: string;
let keyFile: string;
let otherKeyFile: string;

beforeAll(async () => {
  const keys = await generateAuditSigningKey();
  dir = await tempLogDir("audit-cli");
  const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk }, checkpointEvery: 5 });
  for (let i = 0; i < 12; i++) sink.append(sampleRecord(i));
  sink.append(sampleRecord(12, { type: "http", method: "POST /mcp", outcome: "denied", reason: "invalid_token", status: 401, patients: [], actor: {} }));
  await sink.close();
  file = path.join(dir, (await readdir(dir)).find((f) => f.endsWith(".jsonl"))!);
  keyFile = path.join(dir, "audit.pub.jwk");
  await writeFile(keyFile, JSON.stringify(keys.publicJwk));
  otherKeyFile = path.join(dir, "other.pub.jwk");
  await writeFile(otherKeyFile, JSON.stringify((await generateAuditSigningKey()).publicJwk));
});

describe("hmcp audit verify", () => {
  it("names each unclean end a later writer marked (crash, kill, or entries cut off), and the chain still verifies", async () => {
    const keys = await generateAuditSigningKey();
    const crashDir = await tempLogDir("audit-crash");
    const first = await FileAuditSink.open({ dir: crashDir, signing: { privateKey: keys.privateJwk } });
    for (let i = 0; i < 3; i++) first.append(sampleRecord(i));
    await first.flush();
    // the writer dies without closing (no close checkpoint; its lock stays): a new process takes over the chain
    await writeFile(path.join(crashDir, "audit.lock"), "999999999");
    const second = await FileAuditSink.open({ dir: crashDir, signing: { privateKey: keys.privateJwk } });
    second.append(sampleRecord(3));
    await second.close();
    const key = path.join(crashDir, "..", `${path.basename(crashDir)}.pub.jwk`);
    await writeFile(key, JSON.stringify(keys.publicJwk));
    const r = await run("audit", "verify", crashDir, "--key", key);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/closed cleanly; 1 unclean end before a restart \(recover checkpoint at seq 4 \d{4}-\d{2}-\d{2}T[\d:.]+Z: /);
    const json = JSON.parse((await run("audit", "verify", crashDir, "--key", key, "--format", "json")).out) as { ok: boolean; records: number; recoveries: unknown[] };
    expect(json).toMatchObject({ ok: true, records: 4, recoveries: [{ seq: 4 }] });
  });

  it("exits 0 with a one-line summary when the chain and signatures are intact", async () => {
    const r = await run("audit", "verify", file, "--key", keyFile);
    expect(r.code).toBe(0);
    expect(r.out.trim().split("\n")).toHaveLength(1);
    // 13 records and 3 checkpoints (every 5 entries, and at close) are 16 entries: the head is seq 16
    expect(r.out).toMatch(/^OK: 13 records \+ 3 signed checkpoints = 16 entries in 1 file\(s\); checkpoint signatures verified; chain \S+ head seq 16 /);
    // the JSON keeps its fields
    const json = JSON.parse((await run("audit", "verify", file, "--key", keyFile, "--format", "json")).out) as Record<string, unknown>;
    expect(json).toMatchObject({ ok: true, records: 13, checkpoints: 3, signaturesChecked: true, lastSeq: 16, closed: true });
  });

  it("accepts a directory and says when signatures were not checked", async () => {
    const r = await run("audit", "verify", dir);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^OK: 13 records \+ 3 checkpoints = 16 entries in 1 file\(s\); checkpoint signatures NOT checked \(no --key\)/);
  });

  it("exits 1 naming file, line and reason of the first bad record", async () => {
    const copyDir = await tempLogDir("audit-cli-bad");
    const lines = (await readFile(file, "utf8")).split("\n");
    lines[3] = lines[3]!.replace('"requestId":3', '"requestId":33');
    const bad = path.join(copyDir, path.basename(file));
    await writeFile(bad, lines.join("\n"));
    const r = await run("audit", "verify", bad, "--key", keyFile);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`FAILED: ${path.basename(file)} line 4 (seq 4): hash_mismatch`);
    expect(r.out).toMatch(/; 3 records and 0 checkpoints verified before it$/m);
    const json = await run("audit", "verify", bad, "--format", "json");
    expect(JSON.parse(json.out)).toMatchObject({ ok: false, firstError: { line: 4, reason: "hash_mismatch" } });
  });

  it("verifies each chain of a directory holding several (one per agent prefix)", async () => {
    const keys = await generateAuditSigningKey();
    const multi = await tempLogDir("audit-cli-multi");
    for (const [prefix, n] of [["emr", 3], ["patient_data", 5]] as const) {
      const s = await FileAuditSink.open({ dir: multi, prefix, signing: { privateKey: keys.privateJwk }, rotate: { maxBytes: 4096 } });
      for (let i = 0; i < n; i++) s.append(sampleRecord(i));
      await s.close();
    }
    const pub = path.join(multi, "pub.jwk");
    await writeFile(pub, JSON.stringify(keys.publicJwk));
    const ok = await run("audit", "verify", multi, "--key", pub);
    expect(ok.code).toBe(0);
    expect(ok.out).toMatch(/OK: 8 records \+ (\d+) signed checkpoints = \d+ entries in \d+ file\(s\), 2 chains \(emr: 3 records \+ \d+ checkpoints? = \d+ entries, patient_data: 5 records \+ \d+ checkpoints? = \d+ entries\)/);
    // break the second chain: only it is reported
    const victim = (await readdir(multi)).filter((f) => f.startsWith("patient_data-")).sort()[0]!;
    const text = await readFile(path.join(multi, victim), "utf8");
    await writeFile(path.join(multi, victim), text.replace('"requestId":1', '"requestId":7'));
    const bad = await run("audit", "verify", multi, "--key", pub, "--format", "json");
    expect(bad.code).toBe(1);
    const result = JSON.parse(bad.out) as { ok: boolean; firstError: { file: string; reason: string }; chains: { name: string; ok: boolean }[] };
    expect(result.chains.map((c) => [c.name, c.ok])).toEqual([["emr", true], ["patient_data", false]]);
    expect(result.firstError).toMatchObject({ file: victim, reason: "hash_mismatch" });
  });

  it("exits 1 when the key is not the signer's", async () => {
    const r = await run("audit", "verify", file, "--key", otherKeyFile);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/bad_signature/);
  });

  it("--anchors: a chain cut back to a checkpoint passes without them and fails against them", async () => {
    const keys = await generateAuditSigningKey();
    const d = await tempLogDir("audit-cli-anchors");
    const anchors: string[] = [];
    const sink = await FileAuditSink.open({ dir: d, signing: { privateKey: keys.privateJwk }, checkpointEvery: 5, onCheckpoint: (a) => void anchors.push(JSON.stringify(a)) });
    for (let i = 0; i < 7; i++) sink.append(sampleRecord(i));
    await sink.close();
    const anchorFile = path.join(await tempLogDir("audit-cli-anchor-store"), "anchors.jsonl");
    await writeFile(anchorFile, anchors.join("\n") + "\n");
    const f = path.join(d, (await readdir(d)).find((x) => x.endsWith(".jsonl"))!);
    const intact = await run("audit", "verify", d, "--anchors", anchorFile);
    expect(intact.code).toBe(0);
    expect(intact.out).toMatch(/checked against 2 checkpoint anchors/);
    // cut back to the interval checkpoint (seq 6): the close checkpoint (seq 9) is gone
    const ls = (await readFile(f, "utf8")).split("\n");
    await writeFile(f, ls.slice(0, 6).join("\n") + "\n");
    expect((await run("audit", "verify", d)).code).toBe(0);
    const cut = await run("audit", "verify", d, "--anchors", anchorFile);
    expect(cut.code).toBe(1);
    expect(cut.out).toMatch(/FAILED: .* line 6 \(seq 9\): anchor_missing/);
    await writeFile(anchorFile, "not json\n");
    expect((await run("audit", "verify", d, "--anchors", anchorFile)).code).toBe(2);
  });

  it("a trail whose only checkpoint (the close) was removed: the anchor names the end that was cut, at the last entry; without key or anchors OK says the end is not proven", async () => {
    const keys = await generateAuditSigningKey();
    const d = await tempLogDir("audit-cli-cut-close");
    const anchors: string[] = [];
    const sink = await FileAuditSink.open({ dir: d, signing: { privateKey: keys.privateJwk }, onCheckpoint: (a) => void anchors.push(JSON.stringify(a)) });
    for (let i = 0; i < 5; i++) sink.append(sampleRecord(i));
    await sink.close(); // seq 1-5 records, seq 6 the close checkpoint: the one anchor
    const anchorFile = path.join(d, "..", `${path.basename(d)}.anchors.jsonl`);
    await writeFile(anchorFile, anchors.join("\n") + "\n");
    const key = path.join(d, "..", `${path.basename(d)}.pub.jwk`);
    await writeFile(key, JSON.stringify(keys.publicJwk));
    const name = (await readdir(d)).find((x) => x.endsWith(".jsonl"))!;
    const f = path.join(d, name);
    const ls = (await readFile(f, "utf8")).split("\n");
    await writeFile(f, ls.slice(0, 5).join("\n") + "\n");
    for (const args of [["--key", key, "--anchors", anchorFile], ["--anchors", anchorFile], ["--anchors", anchorFile, "--allow-unsigned-tail"]]) {
      const r = await run("audit", "verify", d, ...args);
      expect(r.code).toBe(1);
      expect(r.out).toContain(`FAILED: ${name} line 5 (seq 6): anchor_missing: this chain ends at seq 5 with no checkpoint`);
      expect(r.out).toMatch(/entries were removed from its end/);
      expect(r.out).toMatch(/the hash chain of all 5 records and 0 checkpoints read is intact, but its end is not proven$/m);
    }
    // with the key alone: the unsigned entries, from the first to the end
    const signed = await run("audit", "verify", d, "--key", key);
    expect(signed.code).toBe(1);
    expect(signed.out).toContain(`FAILED: ${name} line 1 (seq 1): unsigned_tail: entries from here to the chain's end (seq 5) are not covered by a signed checkpoint`);
    // with neither: the links hold, and the line says what that does not prove
    const bare = await run("audit", "verify", d);
    expect(bare.code).toBe(0);
    expect(bare.out).toMatch(/not closed \(writer still running or crashed; without --key or --anchors, a trail with entries removed from its end looks the same\)/);
    // another chain's anchor, and a trail whose chain has checkpoints: that chain's files are missing
    const other = await tempLogDir("audit-cli-other-chain");
    const s2 = await FileAuditSink.open({ dir: other, signing: { privateKey: keys.privateJwk }, chainId: "another-chain" });
    s2.append(sampleRecord(0));
    await s2.close();
    const orphan = await run("audit", "verify", other, "--anchors", anchorFile);
    expect(orphan.code).toBe(1);
    expect(orphan.out).toMatch(/^FAILED: anchored checkpoint at seq 6: anchor_missing: no chain in these files has the id .* of a checkpoint anchored elsewhere \(seq 6\): that chain's files are missing, or were replaced/);
  });

  it("with several chains failing, it says how many and why, and claims an intact hash chain only when every failure is at an end", async () => {
    const keys = await generateAuditSigningKey();
    const d = await tempLogDir("audit-cli-two-chains");
    const crashed = await FileAuditSink.open({ dir: d, prefix: "a", signing: { privateKey: keys.privateJwk } });
    crashed.append(sampleRecord(1));
    await crashed.flush(); // never closed: an unsigned tail
    const edited = await FileAuditSink.open({ dir: d, prefix: "b", signing: { privateKey: keys.privateJwk } });
    edited.append(sampleRecord(2));
    await edited.close();
    const b = path.join(d, (await readdir(d)).find((x) => x.startsWith("b-") && x.endsWith(".jsonl"))!);
    await writeFile(b, (await readFile(b, "utf8")).replace('"outcome":"', '"outcome":"x'));
    const key = path.join(d, "..", `${path.basename(d)}.pub.jwk`);
    await writeFile(key, JSON.stringify(keys.publicJwk));
    const r = await run("audit", "verify", d, "--key", key);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/; 2 chains fail \(a: unsigned_tail, b: (hash_mismatch|malformed_line|invalid_record)/);
    expect(r.out).not.toMatch(/is intact/);
    await crashed.close();
  });

  it("an emptied trail fails loudly (exit 1) unless --allow-empty; an anchor proves what it held", async () => {
    const keys = await generateAuditSigningKey();
    const d = await tempLogDir("audit-empty");
    const anchors: unknown[] = [];
    const sink = await FileAuditSink.open({ dir: d, signing: { privateKey: keys.privateJwk }, onCheckpoint: (a) => void anchors.push(a) });
    for (let i = 0; i < 3; i++) sink.append(sampleRecord(i));
    await sink.close();
    const f = path.join(d, (await readdir(d)).find((x) => x.endsWith(".jsonl"))!);
    await writeFile(f, ""); // truncated to nothing
    const key = path.join(d, "..", `${path.basename(d)}.pub.jwk`);
    await writeFile(key, JSON.stringify(keys.publicJwk));
    const r = await run("audit", "verify", d, "--key", key);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/^FAILED: EMPTY TRAIL: 1 file\(s\) hold no entry although a checkpoint key was given/);
    const json = JSON.parse((await run("audit", "verify", d, "--format", "json")).out) as { ok: boolean; empty: boolean };
    expect(json).toMatchObject({ ok: false, empty: true });
    expect((await run("audit", "verify", d, "--allow-empty")).code).toBe(0);
    const anchorFile = path.join(d, "..", `${path.basename(d)}.anchors.jsonl`);
    await writeFile(anchorFile, anchors.map((a) => JSON.stringify(a)).join("\n") + "\n");
    const anchored = await run("audit", "verify", d, "--allow-empty", "--anchors", anchorFile);
    expect(anchored.code).toBe(1);
    expect(anchored.out).toMatch(/anchor_missing/);
  });

  it("exits 2 on usage errors", async () => {
    expect((await run("audit", "verify")).code).toBe(2);
    expect((await run("audit", "verify", path.join(dir, "missing.jsonl"))).code).toBe(2);
    expect((await run("audit", "verify", file, "--bogus")).code).toBe(2);
    expect((await run("audit", "frobnicate")).code).toBe(2);
    expect((await run("audit")).code).toBe(2);
    const priv = path.join(dir, "priv.jwk");
    await writeFile(priv, JSON.stringify((await generateAuditSigningKey()).privateJwk));
    const r = await run("audit", "verify", file, "--key", priv);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/PUBLIC key/);
    // --anchors naming a folder: a usage error, not a stack trace
    const folder = await run("audit", "verify", file, "--anchors", dir);
    expect(folder.code).toBe(2);
    expect(folder.err).toContain(`--anchors ${dir}: is a folder, not a file of anchors`);
  });

  it("a usage error prints the error and one line pointing to hmcp audit --help, not the whole usage", async () => {
    const hint = "run 'hmcp audit --help' for the usage";
    for (const argv of [["verify"], ["verify", file, "--bogus"], ["query", "--limit"], ["export", "--format", "csv", file], ["frobnicate"]]) {
      const r = await run("audit", ...argv);
      expect(r.code).toBe(2);
      const lines = r.err.trimEnd().split("\n");
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/^hmcp audit: /);
      expect(lines[1]).toBe(hint);
    }
    // no subcommand at all: the usage of every subcommand (exit 2)
    const bare = await run("audit");
    expect(bare.code).toBe(2);
    expect(bare.err).toMatch(/hmcp audit verify .*\n[\s\S]*hmcp audit serve /);
  });
});

describe("hmcp audit query", () => {
  it("filters by patient, outcome, actor, method, reason and time, as JSON Lines", async () => {
    const r = await run("audit", "query", "--patient", "pat-1", "--format", "json", file);
    expect(r.code).toBe(0);
    const recs = r.out.trim().split("\n").map((l) => JSON.parse(l) as { patients: string[]; requestId: number });
    expect(recs.map((x) => x.requestId)).toEqual([1, 6, 11]);
    const denied = await run("audit", "query", "--outcome", "denied", "--actor", "client-1", "--format", "json", file);
    expect(denied.out.trim().split("\n").map((l) => (JSON.parse(l) as { requestId: number }).requestId)).toEqual([1]);
    const timed = await run("audit", "query", "--since", "2026-11-22T06:00:00.003Z", "--until", "2026-11-22T06:00:00.005Z", "--format", "json", file);
    expect(timed.out.trim().split("\n").map((l) => (JSON.parse(l) as { requestId: number }).requestId)).toEqual([3, 4]);
    const http = await run("audit", "query", "--method", "POST /mcp", "--format", "json", dir);
    expect(JSON.parse(http.out.trim())).toMatchObject({ type: "http", status: 401, reason: "invalid_token" });
    const byReason = await run("audit", "query", "--reason", "invalid_token", "--format", "json", dir);
    expect(byReason.out.trim().split("\n").map((l) => (JSON.parse(l) as { reason: string }).reason)).toEqual(["invalid_token"]);
    expect((await run("audit", "query", "--reason", "no_such_reason", "--format", "json", dir)).out.trim()).toBe("");
  });

  it("stops quietly, exit 141 (SIGPIPE's status), when the reader closes the pipe early (`| head`)", async () => {
    // ~3 MB of records, more than a pipe holds: the writes outlive the reader
    const record = (await readFile(file, "utf8")).split("\n").find((l) => l.includes('"requestId"'))!;
    const big = path.join(dir, "..", `big-${process.pid}.jsonl`);
    await writeFile(big, `${record}\n`.repeat(6000));
    const child = spawn(process.execPath, ["--import", "tsx", path.join(repoRoot, "src/cli/run.ts"), "audit", "query", "--format", "json", big], { stdio: ["ignore", "pipe", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(err).not.toMatch(/EPIPE|Error|at /);
    expect(code).toBe(141);
  });

  it("prints a table by default and refuses bad filter values", async () => {
    const r = await run("audit", "query", "--limit", "2", file);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split("\n");
    expect(lines[0]).toMatch(/^time\s+type\s+outcome/);
    expect(lines).toHaveLength(3);
    expect(r.err).toMatch(/2 record\(s\) matched/);
    expect((await run("audit", "query", "--outcome", "maybe", file)).code).toBe(2);
    expect((await run("audit", "query", "--since", "yesterday", file)).code).toBe(2);
    expect((await run("audit", "query", "--format", "xml", file)).code).toBe(2);
  });
});

describe("hmcp audit query --format table, long cells", () => {
  it("cuts cells longer than their column with '…', keeps the columns aligned, and says where the full values are", async () => {
    const keys = await generateAuditSigningKey();
    const d = await tempLogDir("audit-cli-wide");
    const sink = await FileAuditSink.open({ dir: d, signing: { privateKey: keys.privateJwk } });
    const patient = "0d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";
    sink.append(sampleRecord(1, { outcome: "denied", reason: "multiple_authorization_headers", method: "POST /mcp", type: "http", patients: [patient] }));
    sink.append(sampleRecord(2, { outcome: "denied", reason: "insufficient_scope", patients: ["pat-2"] }));
    sink.append(sampleRecord(3, { patients: ["pat-7", patient, "pat-9"] }));
    await sink.close();
    const r = await run("audit", "query", d);
    expect(r.code).toBe(0);
    const [header, wide, short, several] = r.out.trimEnd().split("\n") as [string, string, string, string];
    expect(wide).toContain(" multiple_authorization_…");
    expect(wide).not.toContain("multiple_authorization_headers");
    // a whole patient id (one to paste into --patient), and a count of the others
    expect(wide).toContain(` ${patient} `);
    expect(several).toContain(" pat-7 +2 ");
    const queried = (await run("audit", "query", "--patient", patient, d)).out.trimEnd().split("\n");
    expect(queried.slice(1).map((l) => / (\S+(?: \+\d+)?) +emr-writeback/.exec(l)?.[1])).toEqual([patient, `${patient} +2`]);
    // every column starts where its header does
    for (const col of ["reason", "method", "actor", "patients", "agent", "ms"]) {
      const at = header.search(new RegExp(`\\b${col}\\b`));
      expect(wide[at - 1]).toBe(" ");
      expect(short[at - 1]).toBe(" ");
      expect(wide[at]).not.toBe(" ");
    }
    expect(wide.indexOf("POST /mcp")).toBe(header.indexOf("method"));
    expect(short.indexOf("sampling/createMessage")).toBe(header.indexOf("method"));
    expect(r.err).toMatch(/3 record\(s\) matched; long cells cut short with '…' \(--format json prints every field in full\)/);
    const json = await run("audit", "query", "--format", "json", d);
    expect(JSON.parse(json.out.split("\n")[0]!)).toMatchObject({ reason: "multiple_authorization_headers", patients: [patient] });
    expect(json.err).not.toMatch(/cut short/);
  });
});

describe("hmcp audit export --format fhir", () => {
  it("prints a FHIR R4 Bundle of AuditEvents", async () => {
    const r = await run("audit", "export", "--format", "fhir", "--patient", "pat-2", file);
    expect(r.code).toBe(0);
    const bundle = JSON.parse(r.out) as { resourceType: string; type: string; entry: { resource: { resourceType: string; entity: { what: { reference?: string } }[] } }[] };
    expect(bundle.resourceType).toBe("Bundle");
    expect(bundle.type).toBe("collection");
    expect(bundle.entry).toHaveLength(2);
    for (const e of bundle.entry) {
      expect(e.resource.resourceType).toBe("AuditEvent");
      expect(e.resource.entity[0]!.what.reference).toBe("Patient/pat-2");
    }
    expect((await run("audit", "export", file)).code).toBe(2);
    expect(r.err).toMatch(/^2 AuditEvent\(s\) exported \(the chain is not verified by export/);
  });

  it("exports what it can read of a damaged file, says how many lines it skipped, and exits 1", async () => {
    const copyDir = await tempLogDir("audit-cli-torn");
    const lines = (await readFile(file, "utf8")).split("\n");
    lines[2] = lines[2]!.slice(0, 40); // a torn line
    await writeFile(path.join(copyDir, path.basename(file)), lines.join("\n"));
    const r = await run("audit", "export", "--format", "fhir", copyDir);
    expect(r.code).toBe(1);
    expect((JSON.parse(r.out) as { entry: unknown[] }).entry).toHaveLength(12);
    expect(r.err).toMatch(/^12 AuditEvent\(s\) exported; INCOMPLETE: 1 unreadable line\(s\) skipped/);
  });
});

describe("hmcp audit: a folder of run folders", () => {
  it("names the sub-folders that hold audit files when the given folder holds none", async () => {
    const parent = await tempLogDir("audit-cli-parent");
    await mkdir(path.join(parent, "run-1"));
    await writeFile(path.join(parent, "run-1", path.basename(file)), await readFile(file));
    await mkdir(path.join(parent, "empty"));
    const r = await run("audit", "verify", parent);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`no *.jsonl audit files found in the given directories; these folders hold some (give one chain's folder): ${path.join(parent, "run-1")}\n`);
  });
});
