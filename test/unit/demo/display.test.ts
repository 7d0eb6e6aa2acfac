import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createDisplay } from "../../../demo/orchestrator/display.js";
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
