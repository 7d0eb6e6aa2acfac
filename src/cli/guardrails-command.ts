/**
 * `hmcp guardrails eval --policy <file> --data <file.jsonl> [--format text|json] [--stage input|output]
 *   [--text-field NAME] [--ignore-types T1,T2] [--limit N] [--show-errors N]`
 *
 * Scores a guardrail policy on labelled data and prints precision, recall, false-positive rate and
 * per-message latency (p50/p99, µs).
 * - Labelled rows `{text, label}` (label 1 or true = should be blocked, 0 or false = benign; any other label is an
 *   input error) are sent as one user message of a `sampling/createMessage` request through the `input` stage
 *   (default); a block is a positive. Rows with neither `label` nor spans count as benign (label 0). A file with no
 *   row is an input error.
 * - Span rows `{text, spans: [{start, end, type}]}` (or PhysioNet-style `phi`) go through the `output`
 *   stage (default); precision and recall are token-level (tokens = runs of letters/digits): a token is
 *   gold when it overlaps an annotated span, predicted when it overlaps a redacted region. Tokens of
 *   span types listed in `--ignore-types` count neither way (default: `DateYear` — a year alone is not a
 *   Safe Harbor identifier — and Presidio's non-identifier types `GPE`, `ORGANIZATION`, `TITLE`, `AGE`, `NRP`).
 * - The text field is `text`, else `question`, else `transcription`, unless `--text-field` names one.
 * `--format json` prints one object `{ "n", "precision", "recall", "falsePositiveRate", "latencyUs": { "p50", "p99" } }`
 * (a figure with no denominator is null); span rows add `byType` (per gold span type: tokens and recall) and
 * `byEntity` (per redaction type: tokens and precision).
 * `--show-errors N` adds up to N misclassified rows (`errors`: line, id, what was expected and decided, the blocking
 * guardrail with its score, threshold and reason class, and for span rows the missed and spurious tokens). It prints
 * the rows' text (or, when none was misclassified, `errors: []` and in text "misclassified rows: none"): a developer's tool for their own data, not for a shared log. `--help` / `-h` prints the usage. Exit codes: 0 done (or help), 2 usage or input error.
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { loadGuardrailPolicy } from "../guardrails/policy.js";
import type { GuardrailPipeline } from "../guardrails/pipeline.js";
import type { GuardrailStage } from "../guardrails/types.js";

type IO = { out: (s: string) => void; err: (s: string) => void };

const USAGE =
  "usage: hmcp guardrails eval --policy <file> --data <file.jsonl> [--format text|json] [--stage input|output] [--text-field NAME] [--ignore-types T1,T2] [--limit N] [--show-errors N]";

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
  /** 1-based line of the row in the data file. */
  line?: number;
  /** The row's `id`, when it has one. */
  id?: string;
}

/** One misclassified row (`--show-errors`). */
export interface EvalError {
  /** 1-based line in the data file. */
  line: number;
  id?: string;
  /** Labelled rows: `false_positive` (benign, blocked) or `false_negative` (should be blocked, passed); span rows: `spans`. */
  error: "false_positive" | "false_negative" | "spans";
  /** The blocking guardrail, its reason, and its score / threshold / reason class when it gave them. */
  blocked?: { guardrail: string; reason: string; score?: number; threshold?: number; reasonClass?: string };
  /** Span rows: gold tokens not redacted, and redacted tokens outside any gold span (with their gold type, if any). */
  missed?: Array<{ token: string; type: string }>;
  spurious?: Array<{ token: string; as: string }>;
  /** The row's text, cut to 300 characters. */
  text: string;
}

/** Evaluation figures (the JSON output). */
export interface EvalReport {
  n: number;
  precision: number | null;
  recall: number | null;
  falsePositiveRate: number | null;
  latencyUs: { p50: number; p99: number };
  /** Span rows: per gold span type, its tokens and the share of them redacted. */
  byType?: Record<string, { tokens: number; recall: number | null }>;
  /** Span rows: per redaction type (`NAME`, `DATE` ...), its tokens and the share of them inside a gold span. */
  byEntity?: Record<string, { tokens: number; precision: number | null }>;
  /** Misclassified rows, with `--show-errors N` (at most N). */
  errors?: EvalError[];
}

const KNOWN_OPTIONS = new Set(["policy", "data", "format", "stage", "text-field", "ignore-types", "limit", "show-errors"]);

function parseArgs(argv: string[]): Record<string, string> | string {
  const opts: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("--")) return `unexpected argument '${a}'`;
    // an unknown option is named as such wherever it stands, not as one missing its value
    if (!KNOWN_OPTIONS.has(a.slice(2))) return `unknown option ${a}`;
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
    if (typeof o !== "object" || o === null || Array.isArray(o)) throw new Error(`${file}:${i + 1}: not a JSON object ({"text", "label"} or {"text", "spans"})`);
    const text = textField ? o[textField] : (o["text"] ?? o["question"] ?? o["transcription"]);
    if (typeof text !== "string") throw new Error(`${file}:${i + 1}: no text field${textField ? ` '${textField}'` : " (text, question or transcription)"}`);
    const spans = (o["spans"] ?? o["phi"]) as Span[] | undefined;
    const row: Row = { text, line: i + 1 };
    if (typeof o["id"] === "string" || typeof o["id"] === "number") row.id = String(o["id"]);
    if (Array.isArray(spans)) row.spans = spans;
    if (o["label"] !== undefined) {
      const label = o["label"];
      if (label !== 0 && label !== 1 && label !== true && label !== false) throw new Error(`${file}:${i + 1}: label ${JSON.stringify(label)} is not 0, 1, true or false`);
      row.label = label === 1 || label === true ? 1 : 0;
    }
    rows.push(row);
  }
  if (rows.length === 0) throw new Error(`${file} holds no row: give one JSON object per line ({"text", "label"} or {"text", "spans"})`);
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
export async function evaluateGuardrails(
  pipeline: GuardrailPipeline,
  rows: Row[],
  opts: { stage?: GuardrailStage; ignoreTypes?: string[]; showErrors?: number } = {},
): Promise<EvalReport> {
  const spanMode = rows.some((r) => r.spans !== undefined);
  const stage: GuardrailStage = opts.stage ?? (spanMode ? "output" : "input");
  const ignored = new Set(opts.ignoreTypes ?? DEFAULT_IGNORED);
  const lat: number[] = [];
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  const byType = new Map<string, { tokens: number; hit: number }>();
  const byEntity = new Map<string, { tokens: number; gold: number }>();
  const maxErrors = opts.showErrors ?? 0;
  const errors: EvalError[] = [];
  const errorOf = (r: Row, error: EvalError["error"], blocked?: BlockInfo): EvalError => ({
    line: r.line ?? 0,
    ...(r.id !== undefined && { id: r.id }),
    error,
    ...(blocked && { blocked: blockedInfo(blocked) }),
    text: r.text.length > 300 ? `${r.text.slice(0, 300)}…` : r.text,
  });
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
      const missed: Array<{ token: string; type: string }> = [];
      const spurious: Array<{ token: string; as: string }> = [];
      for (const m of r.text.matchAll(/[\p{L}\p{N}]+/gu)) {
        const s = m.index;
        const e = s + m[0].length;
        const over = (x: { start: number; end: number }) => x.start < e && x.end > s;
        const goldSpan = gold.find(over);
        const isGold = goldSpan !== undefined;
        if (!isGold && ign.some(over)) continue;
        const predEntity = res.entities.find(over);
        const isPred = blocked || predEntity !== undefined;
        if (isGold) {
          const t = byType.get(goldSpan.type ?? "?") ?? { tokens: 0, hit: 0 };
          t.tokens++;
          if (isPred) t.hit++;
          byType.set(goldSpan.type ?? "?", t);
        }
        if (predEntity !== undefined) {
          const t = byEntity.get(predEntity.type) ?? { tokens: 0, gold: 0 };
          t.tokens++;
          if (isGold) t.gold++;
          byEntity.set(predEntity.type, t);
        }
        if (isGold && isPred) tp++;
        else if (isGold) {
          fn++;
          missed.push({ token: m[0], type: goldSpan.type ?? "?" });
        } else if (isPred) {
          fp++;
          spurious.push({ token: m[0], as: predEntity?.type ?? "BLOCK" });
        } else tn++;
      }
      if (errors.length < maxErrors && (missed.length > 0 || spurious.length > 0)) {
        errors.push({ ...errorOf(r, "spans", res.blocked), ...(missed.length > 0 && { missed }), ...(spurious.length > 0 && { spurious }) });
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
      if (gold !== pred && errors.length < maxErrors) errors.push(errorOf(r, gold ? "false_negative" : "false_positive", res.blocked));
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
    ...(spanMode && {
      byType: Object.fromEntries([...byType].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, { tokens: v.tokens, recall: round(ratio(v.hit, v.tokens)) }])),
      byEntity: Object.fromEntries([...byEntity].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, { tokens: v.tokens, precision: round(ratio(v.gold, v.tokens)) }])),
    }),
    ...(maxErrors > 0 && { errors }),
  };
}

type BlockInfo = { guardrail: string; reason: string; evidence?: { score: number; threshold: number; class: string } };

function blockedInfo(b: BlockInfo): NonNullable<EvalError["blocked"]> {
  const e = b.evidence;
  return { guardrail: b.guardrail, reason: b.reason, ...(e && { score: e.score, threshold: e.threshold, reasonClass: e.class }) };
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
  let showErrors: number | undefined;
  if (opts["show-errors"] !== undefined) {
    showErrors = Number(opts["show-errors"]);
    if (!Number.isInteger(showErrors) || showErrors <= 0) {
      io.err(`hmcp guardrails eval: --show-errors must be a positive integer (the most misclassified rows to print)`);
      return 2;
    }
  }
  const ignoreTypes = opts["ignore-types"] !== undefined ? opts["ignore-types"].split(",").filter(Boolean) : undefined;
  const report = await evaluateGuardrails(pipeline, rows, { ...(stage ? { stage } : {}), ...(ignoreTypes ? { ignoreTypes } : {}), ...(showErrors ? { showErrors } : {}) });
  if (format === "json") {
    io.out(JSON.stringify(report));
  } else {
    const f = (x: number | null) => (x === null ? "n/a" : x.toFixed(4));
    io.out(`rows                 ${report.n}`);
    io.out(`precision            ${f(report.precision)}`);
    io.out(`recall               ${f(report.recall)}`);
    io.out(`false-positive rate  ${f(report.falsePositiveRate)}`);
    io.out(`latency µs/message   p50 ${report.latencyUs.p50}  p99 ${report.latencyUs.p99}`);
    for (const [type, v] of Object.entries(report.byType ?? {})) io.out(`  gold ${type.padEnd(18)} tokens ${String(v.tokens).padStart(6)}  recall ${f(v.recall)}`);
    for (const [type, v] of Object.entries(report.byEntity ?? {})) io.out(`  redacted ${type.padEnd(14)} tokens ${String(v.tokens).padStart(6)}  precision ${f(v.precision)}`);
    if (report.errors?.length === 0) io.out("misclassified rows: none");
    else if (report.errors) {
      io.out(`misclassified rows (first ${report.errors.length})`);
      for (const e of report.errors) io.out(formatError(e));
    }
  }
  return 0;
}

/** One misclassified row as terminal lines: where, what went wrong and why, then the text on one line. */
function formatError(e: EvalError): string {
  const where = `line ${e.line}${e.id !== undefined ? ` (${e.id})` : ""}`;
  const b = e.blocked;
  const why = b ? ` blocked by ${b.guardrail}/${b.reason}${b.reasonClass ? ` class ${b.reasonClass}` : ""}${b.score !== undefined ? ` score ${b.score} >= ${b.threshold}` : ""}` : "";
  const lines = [`- ${where}: ${e.error.replace("_", " ")}${why}`];
  if (e.missed) lines.push(`    missed: ${e.missed.map((m) => `${m.token} (${m.type})`).join(", ")}`);
  if (e.spurious) lines.push(`    spurious: ${e.spurious.map((m) => `${m.token} (as ${m.as})`).join(", ")}`);
  lines.push(`    ${JSON.stringify(e.text)}`);
  return lines.join("\n");
}
