/**
 * What someone running `npm run demo` reads on stdout: each step of a patient's write is labelled with what it is and
 * the MCP message that carried it (infoNeeded, lookup, elicitation approval, progress notifications, the model summary),
 * and a rerun on the same store says it wrote nothing new rather than repeating "N written". The re-verify command it
 * prints checks the trail against the checkpoint anchors the run kept outside the trail's folder.
 */
import { copyFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { main as hmcpCli } from "../../src/cli/main.js";
import { runDemo, type DemoOptions } from "../../demo/run-demo.js";
import type { DemoReport } from "../../demo/orchestrator/report.js";
import { repoRoot, shippedData, tempDir } from "./demo-helpers.js";

const cleanup: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanup) await c();
});

/** Runs the demo on `dataDir`, returning what it printed. */
async function demoOutput(options: DemoOptions): Promise<{ text: string; ok: boolean; report: DemoReport }> {
  let text = "";
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString("utf8");
      done();
    },
  });
  const { ok, report } = await runDemo({ ...options, out: out as unknown as NodeJS.WriteStream, bars: false });
  return { text, ok, report };
}

/** Demo options for the shipped sample's first patient alone, with the store and audit trail in a fresh temp folder. */
async function onePatient(prefix: string): Promise<DemoOptions> {
  const tmp = await tempDir(prefix);
  cleanup.push(tmp.remove);
  const bundles = path.join(tmp.dir, "bundles");
  await mkdir(bundles);
  for (const f of (await readdir(shippedData)).filter((x) => x.startsWith("Claudie_"))) await copyFile(path.join(shippedData, f), path.join(bundles, f));
  return { dataDir: bundles, store: { dataDir: path.join(tmp.dir, "emr") }, auditRoot: path.join(tmp.dir, "audit") };
}

/** The printed lines of one patient's section (from its ▶ line to its ✔ or ✖ line). */
function section(text: string, name: string): string[] {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.startsWith(`▶ ${name} `));
  const end = lines.findIndex((l, i) => i > start && (l.startsWith(`✔ ${name}:`) || l.startsWith(`✖ ${name}:`)));
  expect(start).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(start);
  return lines.slice(start, end + 1);
}

describe("demo console output", () => {
  it("labels the infoNeeded, lookup, task, approval, model-summary and read-back steps, in order; a rerun says it wrote nothing new", { timeout: 120_000 }, async () => {
    const common = await onePatient("hmcp-demo-output-");

    const first = await demoOutput(common);
    expect(first.ok).toBe(true);
    const lines = section(first.text, "Claudie Walsh");
    const labels = lines.slice(1, -1).map((l) => l.slice(2, 16).trim());
    expect(labels).toEqual(["infoNeeded", "lookup", "task", "approval", "model summary", "task", "read back"]);
    const at = (label: string, n = 0) => lines.filter((l) => l.slice(2, 16).trim() === label)[n]!;
    expect(at("infoNeeded")).toMatch(/EMR agent needs patient_id \(stopReason "infoNeeded"\)$/);
    // the write is an MCP task: created, waiting for the approval and then the summary, completed
    const [task] = first.report.patients[0]!.tasks;
    expect(task).toEqual({ taskId: expect.stringMatching(/^[0-9a-f-]{36}$/), status: "completed", life: ["working", "input_required (elicitation/create)", "input_required (sampling/createMessage)", "completed"] });
    expect(at("task")).toBe(`  task           EMR agent runs the write as task ${task!.taskId} (tools/call write_clinical_resources → CreateTaskResult, working; polled with tasks/get)`);
    expect(at("approval")).toMatch(/EMR agent asks \(elicitation\/create\): "Approve writing 7 clinical resource\(s\) .*\?" → approved automatically/);
    expect(at("model summary")).toMatch(/orchestrator's model \(sampling\/createMessage from the EMR agent\): Encounter 2020-10-28: 5 Observation/);
    expect(at("task", 1)).toBe(
      `  task           task ${task!.taskId}: working → input_required (elicitation/create) → input_required (sampling/createMessage) → completed (answers sent with tasks/update)`,
    );
    // one of the resource_links the task's result carried, read back with resources/read
    const back = first.report.patients[0]!.readBack!;
    expect(back.uri).toMatch(/^emr:\/\/fhir\/(Observation|Procedure|Immunization)\/[0-9a-f-]{36}$/);
    expect(back.uri.split("/")[3]).toBe(back.resourceType);
    expect(at("read back")).toBe(`  read back      resources/read ${back.uri} (1 of the 7 resource_link(s) returned) → ${back.resourceType}`);

    expect(lines.at(-1)).toBe("✔ Claudie Walsh: 7 newly written, 0 already in the EMR, 2 refused");
    // prose lines wrap at 80 columns with a two-space continuation indent; every line fits
    const summary = first.text.slice(first.text.lastIndexOf("┌"));
    expect(Math.max(...summary.split("\n").filter((l) => !l.includes("re-verify:") && !l.startsWith("EMR:")).map((l) => l.length))).toBeLessThanOrEqual(80);
    const unwrapped = (t: string) => t.replace(/\n {2}(?=\S)/g, " ");
    expect(unwrapped(first.text)).toMatch(/^Written: 7 new this run, 0 already in the EMR \(writes are idempotent; the table counts what the EMR holds from this input\)$/m);
    expect(first.report.patients[0]).toMatchObject({ written: { Observation: 5, Procedure: 1, Immunization: 1 }, created: { Observation: 5, Procedure: 1, Immunization: 1 } });

    // A rerun on the same store writes nothing new, and says so; an approval given by a person (--interactive) says so.
    const second = await demoOutput({ ...common, approve: () => ({ action: "accept", content: { approve: true } }) });
    expect(second.ok).toBe(true);
    const again = section(second.text, "Claudie Walsh");
    expect(again.find((l) => l.includes("approval"))).toMatch(/EMR agent asked \(elicitation\/create\) → approved by you$/);
    expect(again.at(-1)).toBe("✔ Claudie Walsh: 0 newly written, 7 already in the EMR, 2 refused");
    expect(second.text).toMatch(/^Written: 0 new this run, 7 already in the EMR /m);
    expect(second.report.patients[0]).toMatchObject({ written: first.report.patients[0]!.written, created: {} });
  });

  it("runs on MCP 2026-07-28 by default, the write a task whose approval and summary are answered with tasks/update; --era legacy takes the 2025 path", { timeout: 120_000 }, async () => {
    type Rec = { agent: string; method?: string; outcome: string; reason?: string; task?: { id: string; status?: string }; inputRound?: { flow: string; round: number }; interactions?: Array<{ kind: string; outcome: string }> };
    const recordsOf = async (report: DemoReport) => {
      const lines = (await Promise.all(report.audit.files.map((f) => readFile(f, "utf8")))).join("\n").split("\n").filter((l) => l.trim() !== "");
      return lines.map((l) => JSON.parse(l) as { record?: Rec } & Rec).map((e) => e.record ?? e);
    };
    const modern = await demoOutput(await onePatient("hmcp-demo-era-"));
    expect(modern.ok).toBe(true);
    expect(modern.report.era).toBe("modern");
    expect(modern.text).toMatch(/· MCP 2026-07-28 ·/);
    // a task's progress is its statusMessage, polled: no progress notifications, so no progress line
    expect(section(modern.text, "Claudie Walsh").some((l) => l.includes("notifications/progress"))).toBe(false);
    const [task] = modern.report.patients[0]!.tasks;
    expect(task?.status).toBe("completed");
    // the task's records: its creation, each run of the tool (the approval asked, the summary asked, completed), the
    // answers given with tasks/update, and the polls; none of another task
    const records = (await recordsOf(modern.report)).filter((r) => r.agent === "emr-writeback" && r.task !== undefined);
    expect(new Set(records.map((r) => r.task!.id))).toEqual(new Set([task!.taskId]));
    expect(records.filter((r) => r.method === "tools/call").map((r) => [r.task!.status, r.reason, r.interactions])).toEqual([
      ["working", "task_created", undefined],
      ["input_required", undefined, [{ kind: "elicitation", outcome: "input_required" }]],
      ["input_required", undefined, [{ kind: "sampling", outcome: "input_required" }]],
      ["completed", undefined, undefined],
    ]);
    expect(records.filter((r) => r.method === "tasks/update").map((r) => r.interactions)).toEqual([[{ kind: "elicitation", outcome: "accept" }], [{ kind: "sampling", outcome: "answered" }]]);
    expect(records.filter((r) => r.method === "tasks/get").at(-1)?.task?.status).toBe("completed");
    expect(records.every((r) => r.outcome === "allowed")).toBe(true);
    expect(modern.report.patients[0]).toMatchObject({ created: { Observation: 5, Procedure: 1, Immunization: 1 } });

    const legacy = await demoOutput({ ...(await onePatient("hmcp-demo-era-legacy-")), era: "legacy" });
    expect(legacy.ok).toBe(true);
    expect(legacy.text).toMatch(/· MCP 2025-11-25 \(legacy era\) ·/);
    // the 2025 path as before: one sampling request, the approval and the summary sent back on it, progress notified
    expect((await recordsOf(legacy.report)).filter((r) => r.agent === "emr-writeback" && r.interactions !== undefined).map((r) => [r.method, r.inputRound, r.interactions])).toEqual([
      ["sampling/createMessage", undefined, [{ kind: "elicitation", outcome: "accept" }, { kind: "sampling", outcome: "answered" }]],
    ]);
    const lines = section(legacy.text, "Claudie Walsh");
    expect(lines.slice(1, -1).map((l) => l.slice(2, 16).trim())).toEqual(["infoNeeded", "lookup", "approval", "progress", "model summary", "read back"]);
    expect(lines.find((l) => l.slice(2, 16).trim() === "progress")).toMatch(/EMR agent writes \(notifications\/progress\): 0\/7 · 7\/7$/);
    expect(legacy.report.patients[0]!.tasks).toEqual([]);
    // the links of a sampling result travel in its _meta; read back the same way
    expect(legacy.report.patients[0]!.readBack).toEqual(modern.report.patients[0]!.readBack);
    expect(legacy.report.patients[0]!.created).toEqual(modern.report.patients[0]!.created);
  });

  it("prints a re-verify command that checks the anchors kept outside the trail: it passes, and fails once the trail is cut back", { timeout: 120_000 }, async () => {
    const { text, ok, report } = await demoOutput(await onePatient("hmcp-demo-anchors-"));
    expect(ok).toBe(true);
    // one chain over HTTP, checkpointed at close: its anchor is in a file beside the run folder, not in it
    expect(report.audit.anchored).toBe(1);
    expect(path.dirname(report.audit.anchors)).not.toBe(report.audit.dir);
    const [anchor] = (await readFile(report.audit.anchors, "utf8")).trim().split("\n").map((l) => JSON.parse(l) as { chain: string; seq: number; why: string });
    expect(anchor).toMatchObject({ chain: "demo", why: "close" });

    const command = text.split("\n").find((l) => l.includes("re-verify: "))!.split("re-verify: npx --no hmcp ")[1]!.split(" ");
    expect(command).toEqual(["audit", "verify", report.audit.dir, "--key", report.audit.publicKey, "--anchors", report.audit.anchors]);
    const cli = async (argv: string[]) => {
      let out = "";
      const code = await hmcpCli(argv, { out: (s) => (out += s + "\n"), err: (s) => (out += s + "\n") });
      return { code, out };
    };
    expect((await cli(command)).code).toBe(0);

    // Cut the trail back to before its close checkpoint (as someone hiding the last records would): with
    // --allow-unsigned-tail the files alone pass, the anchor does not.
    const [file] = report.audit.files;
    const lines = (await readFile(file!, "utf8")).trim().split("\n");
    expect(lines.length).toBe(anchor!.seq);
    await writeFile(file!, lines.slice(0, -3).join("\n") + "\n");
    expect((await cli([...command.slice(0, 5), "--allow-unsigned-tail"])).code).toBe(0);
    const cut = await cli([...command, "--allow-unsigned-tail", "--format", "json"]);
    expect(cut.code).not.toBe(0);
    expect(cut.out).toContain("anchor_missing");
  });

  it("--json prints the report alone on stdout; what a person reads goes to stderr", { timeout: 120_000 }, async () => {
    const opts = await onePatient("hmcp-demo-json-");
    const { spawn } = await import("node:child_process");
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(repoRoot, "demo/main.ts"), "--json", "--data", opts.dataDir!, "--store", (opts.store as { dataDir: string }).dataDir, "--audit-dir", opts.auditRoot!],
      { cwd: repoRoot, env: { ...process.env, NODE_OPTIONS: "" }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as DemoReport;
    expect(report.patients.map((p) => p.name)).toEqual(["Claudie Walsh"]);
    expect(report.patients[0]!.tasks.map((t) => t.status)).toEqual(["completed"]);
    // the fourth defence: a record read for an outside model came back de-identified, and says what was replaced
    expect(report.defences).toMatchObject({ injectionBlocked: true, insufficientScopeRefused: true, crossPatientRefused: true, deidentified: true });
    expect(report.defences.redactions?.["DATE"]).toBeGreaterThan(0);
    expect(stderr.replace(/\n {2}(?=\S)/g, " ")).toMatch(/record read for an outside model de-identified: yes \(.*DATE ×\d+/);
    expect(stderr).toMatch(/^Defences: prompt injection blocked: yes/m);
  });

  it("over stdio (one process per agent; the SDK's stdio start may continue a chain in a second process): every chain verifies against the keys the run collected", { timeout: 240_000 }, async () => {
    const options = await onePatient("hmcp-demo-stdio-");
    const run = await demoOutput({ ...options, transport: "stdio" });
    expect(run.ok).toBe(true);
    expect(run.text).toMatch(/every chain verified: yes/);
    expect(run.report.audit.verified).toBe(true);
  });
});
