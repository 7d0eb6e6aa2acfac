import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createDisplay, renderSummary, wrapLine } from "../../../demo/orchestrator/display.js";
import type { DemoReport } from "../../../demo/orchestrator/report.js";
import type { PatientRun } from "../../../demo/orchestrator/orchestrator.js";
import { shippedPatients } from "./fixtures.js";

describe("the demo's per-patient line", () => {
  it("marks ✔ when the EMR holds some of the patient's input, ✖ when nothing was written or held", async () => {
    const patient = (await shippedPatients())[0]!;
    const out = new PassThrough();
    let text = "";
    out.on("data", (d: Buffer) => (text += d.toString()));
    const display = createDisplay({ totalResources: 10, verbose: false, out: out as unknown as NodeJS.WriteStream, bars: false });
    const run = (acknowledged: Record<string, number>, created: Record<string, number>, refused: number): PatientRun => ({
      name: patient.name,
      birthDate: patient.birthDate,
      sent: {},
      acknowledged,
      created,
      refused: refused > 0 ? [{ resourceType: "Observation", reason: "approval_decline", count: refused }] : [],
      sourceKeys: [],
      summaries: [],
      tasks: [],
    });
    display.onEvent({ type: "patient-done", patient, report: run({ Observation: 3 }, { Observation: 1 }, 2) });
    display.onEvent({ type: "patient-done", patient, report: { ...run({}, {}, 5), problem: "approval declined for some encounters" } });
    display.stop();
    expect(text.trim().split("\n")).toEqual([
      `✔ ${patient.name}: 1 newly written, 2 already in the EMR, 2 refused`,
      `✖ ${patient.name}: 0 newly written, 0 already in the EMR, 5 refused (approval declined for some encounters)`,
    ]);
  });
});

describe("the demo's audit summary line", () => {
  const report = (files: string[]): DemoReport => ({
    patients: [],
    defences: { injectionBlocked: true, insufficientScopeRefused: true, crossPatientRefused: true, deidentified: true },
    audit: { file: files[0]!, files, records: 29, verified: true, dir: "/a/run-1", publicKey: "/a/run-1/checkpoint-keys.jwks.json", anchors: "/a/anchors/run-1.jsonl", anchored: 1 },
    emr: { dataDir: "/e" },
    era: "modern",
    durationMs: 1000,
  });
  const auditLine = (r: DemoReport) => renderSummary(r).split("\n").find((l) => l.startsWith("Audit:"));

  it("names the file of a single chain, and counts files and chains over stdio (one chain per agent process)", () => {
    expect(auditLine(report(["/a/run-1/demo-20261122-000001.jsonl"]))).toBe("Audit: 29 records in /a/run-1/demo-20261122-000001.jsonl, chain verified: yes");
    const stdio = ["emr_writeback-20261122-000001.jsonl", "emr_writeback-20261122-000002.jsonl", "patient_data-20261122-000001.jsonl"].map((f) => `/a/run-1/${f}`);
    expect(auditLine(report(stdio))).toBe("Audit: 29 records in 3 files (2 chains: one per agent process) in /a/run-1, every chain verified: yes");
  });

  it("fits the summary table to the terminal: short resource type heads and a legend when the full names do not fit", () => {
    const written = { AllergyIntolerance: 1, CarePlan: 2, Condition: 3, DiagnosticReport: 4, Immunization: 5, MedicationRequest: 6, Observation: 70, Procedure: 8 };
    const patient = { name: "Claudie Walsh", birthDate: "1970-01-01", sent: {}, acknowledged: {}, written, created: written, refused: [], sourceKeys: [], summaries: [] };
    const r = { ...report(["/a/run-1/demo-20261122-000001.jsonl"]), patients: [patient] } as unknown as DemoReport;
    const narrow = renderSummary(r, 80).split("\n");
    const tableLines = narrow.slice(0, narrow.findIndex((l) => l.startsWith("Allrg = ")));
    expect(Math.max(...tableLines.map((l) => l.length))).toBeLessThanOrEqual(80);
    // the legend wraps at 80 columns like every prose line
    expect(narrow.every((l) => l.length <= 80 || l.includes("re-verify:"))).toBe(true);
    expect(narrow.join("\n").replace(/\n {2}(?=\S)/g, " ")).toContain(
      "Allrg = AllergyIntolerance, Plan = CarePlan, Cond = Condition, DxRpt = DiagnosticReport, Imm = Immunization, MedRq = MedicationRequest, Obs = Observation, Proc = Procedure",
    );
    // a wide terminal keeps the full names and needs no legend
    const wide = renderSummary(r, 200);
    expect(wide).toContain("AllergyIntolerance");
    expect(wide).not.toContain("Allrg = ");
  });

  it("wraps a long line at spaces under its indent, keeps a longer word whole, leaves a short line alone", () => {
    expect(wrapLine("short", 80)).toBe("short");
    expect(wrapLine("  approval       EMR agent asks: Approve writing 7 resources? → approved automatically", 40, 17)).toBe(
      ["  approval       EMR agent asks: Approve", "                 writing 7 resources? →", "                 approved automatically"].join("\n"),
    );
    expect(wrapLine(`a ${"x".repeat(50)} b`, 20)).toBe(`a\n  ${"x".repeat(50)}\n  b`);
  });
});
