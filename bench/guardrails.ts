/**
 * Guardrail component timing (not a test): µs per 4 KB message, each built-in guardrail on its own and
 * the whole default input / output pipelines (guardrails/default.yaml), on benign clinical text
 * (MTSamples) and on clinical text with PHI (PhysioNet deid notes, test data only), p50/p99.
 * Prints a table (wall-clock p50/p99 and mean CPU time per message) and one JSON line. Target: default input pipeline <= 1 ms p99 per 4 KB message.
 *
 * Usage: `npx tsx bench/guardrails.ts [--n 2000] [--chars 4096]`
 */
import {
  createInjectionGuardrail,
  createLimitsGuardrail,
  createPatientContextGuardrail,
  createPhiGuardrail,
  defaultGuardrails,
  GuardrailPipeline,
  type GuardrailRunner,
} from "../src/index.js";
import { clinicalText, phiText } from "./lib/fixtures.js";

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg("n", 2000);
const CHARS = arg("chars", 4096);

function pct(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

async function time(runner: GuardrailRunner, stage: "input" | "output", text: string): Promise<{ p50: number; p99: number; cpuMean: number; action: string }> {
  const payload =
    stage === "input"
      ? { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256 }
      : { role: "assistant", model: "bench", content: { type: "text", text }, stopReason: "endTurn" };
  const ctx = { stage, side: "server" as const, method: "sampling/createMessage", patient: "bench-patient" };
  let action = "";
  for (let i = 0; i < 200; i++) action = (await runner.evaluate(stage, payload, ctx)).action;
  const us: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    await runner.evaluate(stage, payload, ctx);
    us.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  us.sort((a, b) => a - b);
  // CPU time per message (user + system, mean): independent of other load on the machine, unlike wall-clock p99
  const cpuMean = Math.round(((cpu.user + cpu.system) / N) * 10) / 10;
  return { p50: Math.round(pct(us, 0.5) * 10) / 10, p99: Math.round(pct(us, 0.99) * 10) / 10, cpuMean, action };
}

const texts = { benign: clinicalText(CHARS).text, phi: phiText(CHARS).text };
const single = (g: ReturnType<typeof createLimitsGuardrail>, stage: "input" | "output") => new GuardrailPipeline({ [stage]: [{ guardrail: g }] });
const cases: Array<[string, "input" | "output", GuardrailRunner]> = [
  ["limits", "input", single(createLimitsGuardrail(), "input")],
  ["patient-context", "input", single(createPatientContextGuardrail(), "input")],
  ["prompt-injection", "input", single(createInjectionGuardrail(), "input")],
  ["phi-redaction", "output", single(createPhiGuardrail(), "output")],
  ["default.yaml input", "input", defaultGuardrails()],
  ["default.yaml output", "output", defaultGuardrails()],
];
const results: Array<Record<string, unknown>> = [];
console.log(`guardrails, µs per message (${CHARS} chars, n=${N}, node ${process.version})`);
console.log("case                  text     p50      p99   cpu-mean  action");
for (const [name, stage, runner] of cases) {
  for (const [kind, text] of Object.entries(texts)) {
    const r = await time(runner, stage, text);
    results.push({ case: name, text: kind, chars: text.length, ...r });
    console.log(`${name.padEnd(22)}${kind.padEnd(7)}${String(r.p50).padStart(7)}  ${String(r.p99).padStart(7)}  ${String(r.cpuMean).padStart(7)}   ${r.action}`);
  }
}
console.log(JSON.stringify({ guardrails: results }));
