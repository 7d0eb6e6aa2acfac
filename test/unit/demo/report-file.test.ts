import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeReport } from "../../../demo/run-demo.js";
import type { DemoReport } from "../../../demo/orchestrator/report.js";

// The --report file names patients: like the audit files, it is readable by its owner only.
const report: DemoReport = {
  patients: [{ name: "Test Patient", birthDate: "2000-01-01", patientId: "p-1", sent: { Observation: 1 }, written: { Observation: 1 }, created: { Observation: 1 }, refused: [], tasks: [] }],
  defences: { injectionBlocked: true, insufficientScopeRefused: true, crossPatientRefused: true, deidentified: true },
  audit: { file: "a.jsonl", files: ["a.jsonl"], records: 1, verified: true, dir: "audit", publicKey: "keys.jwks.json", anchors: "anchors.jsonl", anchored: 1 },
  emr: { dataDir: "emr" },
  era: "modern",
    durationMs: 1,
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-report-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.skipIf(process.platform === "win32")("demo --report file", () => {
  it("is created with mode 0600 (in a new sub-folder too)", async () => {
    const file = path.join(dir, "out", "report.json");
    await writeReport(file, report);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(report);
  });

  it("narrows an existing world-readable file to 0600 and replaces its content", async () => {
    const file = path.join(dir, "existing.json");
    await writeFile(file, "x".repeat(10_000), { mode: 0o644 });
    await writeReport(file, report);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, "utf8"))).toEqual(report);
  });
});
