/**
 * PHI redaction quality on rows NO rule was tuned on: the held-out split of each PHI development set, built here from
 * ../shared/data with the rule of scripts/eval-phi.ts (the evaluation protocol, docs/guardrails-quality.md):
 * - phi-deid-physionet, by patient: held out iff `parseInt(sha256("holdout:" + patient_id).hex.slice(0, 8), 16) % 100 < 30`;
 * - pii-presidio-synth, by template: the same rule on `template_id` (rows of one template share their wording).
 * Scored through the public command `hmcp guardrails eval --policy guardrails/default.yaml --format json` (output
 * stage, token scoring, default ignored types). The rows are copied to a temporary file only (PhysioNet is GPL test
 * data and is never copied into the repository).
 *
 * Floors sit just under the figures reached (held-out split measured 5 times in all, the last after session 28's
 * precision rules, which were written on the tuning split alone).
 * Targets of issue #19: recall >= 0.95 and precision >= 0.80 on both sets; PhysioNet recall is short of it (0.933).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const data = path.resolve(repo, "../shared/data");
const policy = path.join(repo, "guardrails/default.yaml");
const tmp = mkdtempSync(path.join(tmpdir(), "hmcp-phi-heldout-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const isHoldout = (group: string) => parseInt(createHash("sha256").update("holdout:" + group).digest("hex").slice(0, 8), 16) % 100 < 30;

interface Report {
  n: number;
  precision: number | null;
  recall: number | null;
}

/** Writes the held-out rows of a set to a temporary JSON Lines file and scores them with `hmcp guardrails eval`. */
async function evaluateHoldout(set: string, groupField: string): Promise<Report> {
  const file = path.join(data, set, "dev.jsonl");
  expect(existsSync(file), `${file} (the shared data sets must sit beside the repository)`).toBe(true);
  const rows = readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .filter((l) => isHoldout(String((JSON.parse(l) as Record<string, unknown>)[groupField])));
  const out = path.join(tmp, `${set}.jsonl`);
  writeFileSync(out, rows.join("\n") + "\n");
  let json = "";
  const code = await main(["guardrails", "eval", "--policy", policy, "--data", out, "--format", "json"], { out: (s) => (json += s), err: () => {} });
  expect(code).toBe(0);
  return JSON.parse(json) as Report;
}

describe("PHI redaction on the held-out split (rows no rule was tuned on)", () => {
  it("phi-deid-physionet, 30 % of patients", async () => {
    const r = await evaluateHoldout("phi-deid-physionet", "patient_id");
    expect(r.n).toBe(437);
    // reached 0.933 / 0.884 (session 28; 0.933 / 0.810 before its precision rules; before this work: 0.938 / 0.768)
    expect(r.recall).toBeGreaterThanOrEqual(0.93);
    expect(r.precision).toBeGreaterThanOrEqual(0.87);
  });

  it("pii-presidio-synth, 30 % of templates", async () => {
    const r = await evaluateHoldout("pii-presidio-synth", "template_id");
    expect(r.n).toBe(306);
    // reached 0.969 / 0.941 (session 28; 0.969 / 0.930 before; before this work: 0.949 / 0.894)
    expect(r.recall).toBeGreaterThanOrEqual(0.96);
    expect(r.precision).toBeGreaterThanOrEqual(0.93);
  });
});
