/**
 * `hmcp guardrails eval --policy <file> --data <file.jsonl> [--format text|json] [--stage input|output]
 *   [--text-field NAME] [--ignore-types T1,T2] [--limit N]`
 *
 * Scores a guardrail policy on labelled data and prints precision, recall, false-positive rate and
 * per-message latency (p50/p99, µs).
 * - Labelled rows `{text, label}` (label 1 = should be blocked, 0 = benign) are sent as one user message
 *   of a `sampling/createMessage` request through the `input` stage (default); a block is a positive.
 *   Rows with neither `label` nor spans count as benign (label 0).
 * - Span rows `{text, spans: [{start, end, type}]}` (or PhysioNet-style `phi`) go through the `output`
 *   stage (default); precision and recall are token-level (tokens = runs of letters/digits): a token is
 *   gold when it overlaps an annotated span, predicted when it overlaps a redacted region. Tokens of
 *   span types listed in `--ignore-types` count neither way (default: `DateYear` — a year alone is not a
 *   Safe Harbor identifier — and Presidio's non-identifier types `GPE`, `ORGANIZATION`, `TITLE`, `AGE`, `NRP`).
 * - The text field is `text`, else `question`, else `transcription`, unless `--text-field` names one.
 * `--format json` prints one object `{ "n", "precision", "recall", "falsePositiveRate", "latencyUs": { "p50", "p99" } }`
 * (a figure with no denominator is null). `--help` / `-h` prints the usage. Exit codes: 0 done (or help), 2 usage or input error.
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { loadGuardrailPolicy } from "../guardrails/policy.js";
import type { GuardrailPipeline } from "../guardrails/pipeline.js";
import type { GuardrailStage } from "../guardrails/types.js";

type IO = { out: (s: string) => void; err: (s: string) => void };

const USAGE =
  "usage: hmcp guardrails eval --policy <file> --data <file.jsonl> [--format text|json] [--stage input|output] [--text-field NAME] [--ignore-types T1,T2] [--limit N]";

const DEFAULT_IGNORED = ["DateYear", "GPE", "ORGANIZATION", "TITLE", "AGE", "NRP"];

interface Span {
  start: number;
  end: number;
  type?: string;
}

interface Row {
  text: string;
  label?: 0 | 1;
  spans?: Span[];
}

/** Evaluation figures (the JSON output). */
export interface EvalReport {
  n: number;
  precision: number | null;
  recall: number | null;
  falsePositiveRate: number | null;
  latencyUs: { p50: number; p99: number };
}

function parseArgs(argv: string[]): Record<string, string> | string {
  const opts: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("--")) return `unexpected argument '${a}'`;
    const v = argv[i + 1];
    if (v === undefined || v.startsWith("--")) return `option ${a} needs a value`;
    opts[a.slice(2)] = v;
    i++;
  }
  return opts;
}

function readRows(file: string, textField: string | undefined): Row[] {
  const rows: Row[] = [];
  let content: string;
  try {
    content = readFileSync(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === "EISDIR" ? "is a folder" : code === "ENOENT" ? "does not exist" : "cannot be read";
    throw new Error(`--data ${file} ${why}: give one JSON Lines file (one {"text", "spans"|"label"} object per line)`);
  }
  const lines = content.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(`${file}:${i + 1}: not valid JSON`);
    }
    const text = textField ? o[textField] : (o["text"] ?? o["question"] ?? o["transcription"]);
    if (typeof text !== "string") throw new Error(`${file}:${i + 1}: no text field${textField ? ` '${textField}'` : " (text, question or transcription)"}`);
    const spans = (o["spans"] ?? o["phi"]) as Span[] | undefined;
    const row: Row = { text };
    if (Array.isArray(spans)) row.spans = spans;
    if (o["label"] !== undefined) row.label = Number(o["label"]) === 1 ? 1 : 0;
    rows.push(row);
  }
  return rows;
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
  return sorted[Math.max(0, i)]!;
}

const ratio = (a: number, b: number): number | null => (b === 0 ? null : a / b);

/**
 * Runs the evaluation (exported for tests and the benchmark).
 * @throws Error on unreadable data
 */
export async function evaluateGuardrails(pipeline: GuardrailPipeline, rows: Row[], opts: { stage?: GuardrailStage; ignoreTypes?: string[] } = {}): Promise<EvalReport> {
  const spanMode = rows.some((r) => r.spans !== undefined);
  const stage: GuardrailStage = opts.stage ?? (spanMode ? "output" : "input");
  const ignored = new Set(opts.ignoreTypes ?? DEFAULT_IGNORED);
  const lat: number[] = [];
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  // warm-up (JIT), not timed
  for (const r of rows.slice(0, 5)) await pipeline.inspectText(stage, r.text);
  for (const r of rows) {
    if (spanMode) {
      const t0 = performance.now();
      const res = await pipeline.inspectText(stage, r.text);
      lat.push((performance.now() - t0) * 1000);
      const gold = (r.spans ?? []).filter((s) => !ignored.has(s.type ?? ""));
      const ign = (r.spans ?? []).filter((s) => ignored.has(s.type ?? ""));
      const blocked = res.action === "block";
      for (const m of r.text.matchAll(/[\p{L}\p{N}]+/gu)) {
        const s = m.index;
        const e = s + m[0].length;
        const over = (x: { start: number; end: number }) => x.start < e && x.end > s;
        const isGold = gold.some(over);
        if (!isGold && ign.some(over)) continue;
        const isPred = blocked || res.entities.some(over);
        if (isGold && isPred) tp++;
        else if (isGold) fn++;
        else if (isPred) fp++;
        else tn++;
      }
    } else {
      const payload = { messages: [{ role: "user", content: { type: "text", text: r.text } }], maxTokens: 1024 };
      const t0 = performance.now();
      const res = await pipeline.evaluate(stage, payload, { stage, side: "server", method: "sampling/createMessage" });
      lat.push((performance.now() - t0) * 1000);
      const pred = res.action === "block";
      const gold = r.label === 1;
      if (gold && pred) tp++;
      else if (gold) fn++;
      else if (pred) fp++;
      else tn++;
    }
  }
  lat.sort((a, b) => a - b);
  const round = (x: number | null) => (x === null ? null : Math.round(x * 10000) / 10000);
  return {
    n: rows.length,
    precision: round(ratio(tp, tp + fp)),
    recall: round(ratio(tp, tp + fn)),
    falsePositiveRate: round(ratio(fp, fp + tn)),
    latencyUs: { p50: Math.round(percentile(lat, 0.5) * 10) / 10, p99: Math.round(percentile(lat, 0.99) * 10) / 10 },
  };
}

/** `hmcp guardrails ...` entry; resolves to the exit code. */
export async function runGuardrailsCommand(argv: string[], io: IO): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === "--help" || sub === "-h" || sub === "help") {
    io.out(USAGE);
    return 0;
  }
  if (sub !== "eval") {
    io.err(sub === undefined ? USAGE : `hmcp guardrails: unknown subcommand '${sub}'\n${USAGE}`);
    return 2;
  }
  // `--help` / `-h` anywhere among eval's options prints the usage (exit 0), as for every other command.
  if (rest.some((a) => a === "--help" || a === "-h")) {
    io.out(USAGE);
    return 0;
  }
  const opts = parseArgs(rest);
  if (typeof opts === "string") {
    io.err(`hmcp guardrails eval: ${opts}\n${USAGE}`);
    return 2;
  }
  const known = new Set(["policy", "data", "format", "stage", "text-field", "ignore-types", "limit"]);
  for (const k of Object.keys(opts)) {
    if (!known.has(k)) {
      io.err(`hmcp guardrails eval: unknown option --${k}\n${USAGE}`);
      return 2;
    }
  }
  if (!opts["policy"] || !opts["data"]) {
    io.err(`hmcp guardrails eval: --policy and --data are required\n${USAGE}`);
    return 2;
  }
  const format = opts["format"] ?? "text";
  if (format !== "text" && format !== "json") {
    io.err(`hmcp guardrails eval: --format must be text or json`);
    return 2;
  }
  const stage = opts["stage"];
  if (stage !== undefined && stage !== "input" && stage !== "output") {
    io.err(`hmcp guardrails eval: --stage must be input or output`);
    return 2;
  }
  let pipeline: GuardrailPipeline;
  let rows: Row[];
  try {
    pipeline = loadGuardrailPolicy(opts["policy"]);
    rows = readRows(opts["data"], opts["text-field"]);
  } catch (e) {
    io.err(`hmcp guardrails eval: ${(e as Error).message}`);
    return 2;
  }
  if (opts["limit"] !== undefined) {
    const n = Number(opts["limit"]);
    if (!Number.isInteger(n) || n <= 0) {
      io.err(`hmcp guardrails eval: --limit must be a positive integer`);
      return 2;
    }
    rows = rows.slice(0, n);
  }
  const ignoreTypes = opts["ignore-types"] !== undefined ? opts["ignore-types"].split(",").filter(Boolean) : undefined;
  const report = await evaluateGuardrails(pipeline, rows, { ...(stage ? { stage } : {}), ...(ignoreTypes ? { ignoreTypes } : {}) });
  if (format === "json") {
    io.out(JSON.stringify(report));
  } else {
    const f = (x: number | null) => (x === null ? "n/a" : x.toFixed(4));
    io.out(`rows                 ${report.n}`);
    io.out(`precision            ${f(report.precision)}`);
    io.out(`recall               ${f(report.recall)}`);
    io.out(`false-positive rate  ${f(report.falsePositiveRate)}`);
    io.out(`latency µs/message   p50 ${report.latencyUs.p50}  p99 ${report.latencyUs.p99}`);
  }
  return 0;
}
