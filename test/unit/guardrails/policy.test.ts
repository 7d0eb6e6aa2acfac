import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { defaultGuardrails, GuardrailPolicyError, GuardrailRegistry, loadGuardrailPolicy, policyPath, registerGuardrail } from "../../../src/guardrails/index.js";

const dir = mkdtempSync(path.join(tmpdir(), "hmcp-policy-"));
function file(name: string, text: string): string {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
}
const ctx = { stage: "input" as const, side: "server" as const, method: "sampling/createMessage" };

describe("loadGuardrailPolicy", () => {
  it("loads the shipped policies", () => {
    expect(defaultGuardrails().names("input")).toEqual(["limits", "patient-context", "prompt-injection"]);
    expect(defaultGuardrails().names("output")).toEqual(["patient-context", "phi-redaction"]);
    expect(defaultGuardrails()).toBe(defaultGuardrails());
    expect(loadGuardrailPolicy(policyPath("external-model")).names("input")).toContain("phi-redaction");
  });

  it("rejects an unknown key, naming the file and the key path", () => {
    const f = file("typo.yaml", "version: 1\nname: t\nstages:\n  input:\n    - guardrail: limits\n      failmode: open\n");
    expect(() => loadGuardrailPolicy(f)).toThrow(GuardrailPolicyError);
    expect(() => loadGuardrailPolicy(f)).toThrow(`${f}: stages.input[0].failmode: unknown key "failmode"`);
  });

  it("rejects an unknown guardrail name and bad parameters with the key path", () => {
    const f = file("unknown.yaml", "version: 1\nname: t\nstages:\n  output:\n    - guardrail: limits\n    - guardrail: no-such-guardrail\n");
    expect(() => loadGuardrailPolicy(f)).toThrow(/unknown\.yaml: stages\.output\[1\]\.guardrail: unknown guardrail "no-such-guardrail"/);
    const g = file("params.yaml", "version: 1\nname: t\nstages:\n  input:\n    - guardrail: limits\n      params: { maxMesages: 3 }\n");
    expect(() => loadGuardrailPolicy(g)).toThrow(/params\.yaml: stages\.input\[0\]\.params\.maxMesages: unknown key/);
    const h = file("bad.yaml", "version: 1\nname: t\nstages:\n  input:\n    - guardrail: limits\n      params: { maxMessages: -1 }\n");
    expect(() => loadGuardrailPolicy(h)).toThrow(/stages\.input\[0\]\.params\.maxMessages/);
    expect(() => loadGuardrailPolicy(path.join(dir, "missing.yaml"))).toThrow(/missing\.yaml: cannot read policy file/);
    expect(() => loadGuardrailPolicy({ version: 2, name: "x", stages: {} })).toThrow(/<policy object>: version/);
  });

  it("configures a custom guardrail registered by name from a policy file", async () => {
    const registry = new GuardrailRegistry();
    registry.register("banned-words", (params) => {
      const words = (params as { words: string[] }).words;
      return { name: "banned-words", check: (t) => (words.some((w) => t.includes(w)) ? { action: "block", reason: "banned_word" } : { action: "allow" }) };
    });
    const f = file("custom.json", JSON.stringify({ version: 1, name: "c", stages: { input: [{ guardrail: "banned-words", params: { words: ["frobnicate"] } }] } }));
    const p = loadGuardrailPolicy(f, { registry });
    const out = await p.evaluate("input", { messages: [{ role: "user", content: { type: "text", text: "please frobnicate" } }] }, ctx);
    expect(out.blocked).toEqual({ guardrail: "banned-words", reason: "banned_word" });
    // the private registry falls back to nothing else: built-ins are not visible in it
    expect(() => loadGuardrailPolicy({ version: 1, name: "x", stages: { input: [{ guardrail: "limits" }] } }, { registry })).toThrow(/unknown guardrail "limits"/);
  });

  it("registerGuardrail adds to the process-wide registry and refuses duplicates", async () => {
    registerGuardrail("test-shout", () => ({ name: "test-shout", check: (t) => ({ action: "redact", content: t.toUpperCase(), entities: [] }) }));
    expect(() => registerGuardrail("test-shout", () => ({ name: "x" }))).toThrow(/already registered/);
    expect(() => registerGuardrail("Bad Name", () => ({ name: "x" }))).toThrow(/not valid/);
    const p = loadGuardrailPolicy({ version: 1, name: "x", stages: { output: [{ guardrail: "test-shout" }] } });
    expect((await p.evaluate("output", "hi", { ...ctx, stage: "output" })).payload).toBe("HI");
  });
});
