/**
 * What someone running `npm run demo` reads on stdout: each step of a patient's write is labelled with what it is and
 * the MCP message that carried it (infoNeeded, lookup, elicitation approval, progress notifications, the model summary),
 * and a rerun on the same store says it wrote nothing new rather than repeating "N written".
 */
import { copyFile, mkdir, readdir } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { runDemo, type DemoOptions } from "../../demo/run-demo.js";
import type { DemoReport } from "../../demo/orchestrator/report.js";
import { shippedData, tempDir } from "./demo-helpers.js";

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
  it("labels the infoNeeded, lookup, approval, progress and model-summary steps, in order; a rerun says it wrote nothing new", { timeout: 120_000 }, async () => {
    const tmp = await tempDir("hmcp-demo-output-");
    cleanup.push(tmp.remove);
    const bundles = path.join(tmp.dir, "bundles");
    await mkdir(bundles);
    for (const f of (await readdir(shippedData)).filter((x) => x.startsWith("Claudie_"))) await copyFile(path.join(shippedData, f), path.join(bundles, f));
    const common = { dataDir: bundles, store: { dataDir: path.join(tmp.dir, "emr") }, auditRoot: path.join(tmp.dir, "audit") };

    const first = await demoOutput(common);
    expect(first.ok).toBe(true);
    const lines = section(first.text, "Claudie Walsh");
    const labels = lines.slice(1, -1).map((l) => l.slice(2, 16).trim());
    expect(labels).toEqual(["infoNeeded", "lookup", "approval", "progress", "model summary"]);
    const at = (label: string) => lines.find((l) => l.slice(2, 16).trim() === label)!;
    expect(at("infoNeeded")).toMatch(/EMR agent needs patient_id \(stopReason "infoNeeded"\)$/);
    expect(at("approval")).toMatch(/EMR agent asks \(elicitation\/create\): "Approve writing 7 clinical resource\(s\) .*\?" → approved automatically/);
    expect(at("progress")).toMatch(/EMR agent writes \(notifications\/progress\): 0\/7 · 7\/7$/);
    expect(at("model summary")).toMatch(/orchestrator's model \(sampling\/createMessage from the EMR agent\): Encounter 2020-10-28: 5 Observation/);

    expect(lines.at(-1)).toBe("✔ Claudie Walsh: 7 newly written, 0 already in the EMR, 2 refused");
    expect(first.text).toMatch(/^Written: 7 new this run, 0 already in the EMR \(writes are idempotent; the table counts what the EMR holds from this input\)$/m);
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
});
