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
  createPhiDetector,
  createPhiGuardrail,
  defaultGuardrails,
  GuardrailPipeline,
  type GuardrailRunner,
} from "../src/index.js";
import { clinicalText, mtsamplesText, phiText } from "./lib/fixtures.js";

const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const N = arg("n", 2000);
const CHARS = arg("chars", 4096);

function pct(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** A message (input) or an answer (output) carrying `text`. */
const payloadOf = (stage: "input" | "output", text: string) =>
  stage === "input"
    ? { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256 }
    : { role: "assistant", model: "bench", content: { type: "text", text }, stopReason: "endTurn" };

/**
 * µs per message of `runner` at `stage`: `texts` one text (scored N times) or N different texts (new text each call,
 * what a server meets). No session or principal in the context: no decision-cache hit.
 */
async function time(runner: GuardrailRunner, stage: "input" | "output", texts: string | string[]): Promise<{ p50: number; p99: number; cpuMean: number; action: string }> {
  const payloads = typeof texts === "string" ? [payloadOf(stage, texts)] : texts.map((t) => payloadOf(stage, t));
  const ctx = { stage, side: "server" as const, method: "sampling/createMessage", patient: "bench-patient" };
  let action = "";
  for (let i = 0; i < 200; i++) action = (await runner.evaluate(stage, payloads[i % payloads.length]!, ctx)).action;
  const us: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    await runner.evaluate(stage, payloads[i % payloads.length]!, ctx);
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

// The default policy on new text: every message a different CHARS-long slice of MTSamples or of PhysioNet notes (as
// a server meets them; the table above scores one text N times, whose work stays in cache)
const sources = { mtsamples: mtsamplesText(400_000), physionet: phiText(400_000).text };
const fresh: Array<Record<string, unknown>> = [];
console.log(`\nthe default policy on new text, µs per message (${CHARS} chars, n=${N} different slices)`);
console.log("case                  text        p50      p99   cpu-mean");
for (const [name, stage] of [["default.yaml input", "input"], ["default.yaml output", "output"]] as const) {
  const runner = defaultGuardrails();
  for (const [kind, src] of Object.entries(sources)) {
    const span = Math.max(1, src.length - CHARS);
    const slices = Array.from({ length: N }, (_, i) => src.slice((i * 7919) % span, ((i * 7919) % span) + CHARS));
    const r = await time(runner, stage, slices);
    fresh.push({ case: name, text: kind, chars: CHARS, p50: r.p50, p99: r.p99, cpuMean: r.cpuMean });
    console.log(`${name.padEnd(22)}${kind.padEnd(10)}${String(r.p50).padStart(7)}  ${String(r.p99).padStart(7)}  ${String(r.cpuMean).padStart(7)}`);
  }
}

// Worst cases of the PHI detector: its scans are synchronous (in place, a guardrail timeout cannot interrupt them; phi-redaction with workers > 0 stops them), so the cost per
// KB of text made only of what its scanners try hardest on is the bound on how long one message holds the event loop.
// The patterns are the slowest of a random search over short repeated fragments (house numbers, street and unit words,
// month names, "yo", "MRN"); the detector is called directly (no decision cache).
const detector = createPhiDetector();
const WORST_CHARS = 100_000;
const worst: Array<{ pattern: string; chars: number; msPerKB: number }> = [];
console.log(`\nPHI detector worst cases, ms per KB (${WORST_CHARS / 1000} K chars of one repeated fragment, median of 3)`);
for (const p of ["1 via ", "12 Main ", "Apt 1 ", "yo ", "MRN ", "Jan ", "a "]) {
  const text = p.repeat(Math.ceil(WORST_CHARS / p.length)).slice(0, WORST_CHARS);
  detector.detect(text.slice(0, 4096));
  const ms: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    detector.detect(text);
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  const msPerKB = Math.round((ms[1]! / (WORST_CHARS / 1024)) * 1000) / 1000;
  worst.push({ pattern: p, chars: WORST_CHARS, msPerKB });
  console.log(`${JSON.stringify(p).padEnd(14)}${String(msPerKB).padStart(8)}`);
}
console.log(JSON.stringify({ guardrails: results, newText: fresh, phiWorstCase: worst }));
