/**
 * What the person running the demo sees: progress bars (one overall, one for the current patient) on a terminal,
 * plain lines otherwise, and the final summary table. Output goes to the given stream (stdout by default), never
 * to a log file: it may show synthetic patients' names, which log and audit files never contain.
 */
import path from "node:path";
import cliProgress from "cli-progress";
import Table from "cli-table3";
import { WRITE_TOOL_NAME } from "../emr-writeback/agent.js";
import type { OrchestratorEvent } from "./orchestrator.js";
import type { DemoReport } from "./report.js";

/**
 * What the display shows: the orchestrator's events, plus the two requests the EMR agent sends back to the
 * orchestrator's side while it handles a write (run-demo reports them from the clients' handlers): the clinician's
 * approval (`elicitation/create`) and the one-line summary the orchestrator's model wrote (`sampling/createMessage`).
 */
export type DisplayEvent =
  | OrchestratorEvent
  | { type: "approval"; message: string; action: "accept" | "decline" | "cancel"; automatic: boolean }
  | { type: "model-summary"; model: string; text: string };

export interface Display {
  onEvent(e: DisplayEvent): void;
  line(text: string): void;
  stop(): void;
}

/**
 * @param options.bars - progress bars (default: when `out` is a terminal); off for `--interactive`, whose prompts
 *   would fight with the redrawn bars
 */
export function createDisplay(options: { totalResources: number; verbose: boolean; out?: NodeJS.WriteStream; bars?: boolean }): Display {
  const out = options.out ?? process.stdout;
  const tty = options.bars ?? out.isTTY === true;
  let done = 0;
  let current = 0;
  const multi = tty
    ? new cliProgress.MultiBar(
        { stream: out, format: " {bar} {value}/{total} {label}", hideCursor: true, clearOnComplete: true, autopadding: true },
        cliProgress.Presets.shades_classic,
      )
    : undefined;
  const overall = multi?.create(options.totalResources, 0, { label: "resources, all patients" });
  let patientBar: cliProgress.SingleBar | undefined;
  let stopped = false;
  const print = (t: string) => (multi && !stopped ? multi.log(`${t}\n`) : out.write(`${t}\n`));
  // One step a line, labelled in a column: what happened, and which MCP message carried it.
  // on a terminal a long step wraps under its text column (a pipe or a file gets whole lines)
  const columns = out.isTTY === true && out.columns > 40 ? out.columns : undefined;
  const step = (label: string, text: string) => {
    if (!options.verbose) return;
    const line = `  ${label.padEnd(14)} ${text}`;
    print(columns === undefined ? line : wrapLine(line, columns, 17));
  };
  let progressSteps: string[] = [];
  let summarised = false;
  // Progress notifications of one write are gathered into one line, printed when the write is over.
  const flushProgress = () => {
    if (progressSteps.length) step("progress", `EMR agent writes (notifications/progress): ${progressSteps.join(" · ")}`);
    progressSteps = [];
  };
  return {
    onEvent(e) {
      switch (e.type) {
        case "patient-start":
          current = 0;
          progressSteps = [];
          summarised = false;
          if (multi) patientBar = multi.create(e.resources, 0, { label: e.patient.name });
          else print(`▶ ${e.patient.name} (${e.patient.birthDate}): ${e.resources} resources in ${e.batches} encounter(s)`);
          break;
        case "info-needed":
          step("infoNeeded", `EMR agent needs ${e.fields.join(", ") || "more details"} (stopReason "infoNeeded")`);
          break;
        case "lookup":
          step("lookup", `patient-data agent: ${e.answer.status === "found" ? `patient id ${e.answer.patientId}` : e.answer.status}`);
          break;
        case "approval": {
          const answer = e.action === "accept" ? "approved" : e.action === "decline" ? "declined" : "cancelled";
          step("approval", e.automatic ? `EMR agent asks (elicitation/create): "${e.message}" → ${answer} automatically (--interactive to decide)` : `EMR agent asked (elicitation/create) → ${answer} by you`);
          break;
        }
        case "model-summary":
          flushProgress();
          summarised = true;
          step("model summary", `orchestrator's model (sampling/createMessage from the EMR agent): ${e.text}`);
          break;
        case "progress": {
          if (e.notification) progressSteps.push(`${e.notification.progress}/${e.notification.total}`);
          const delta = Math.max(0, e.done - current);
          current = Math.max(current, e.done);
          done += delta;
          patientBar?.update(current);
          overall?.update(done);
          break;
        }
        case "task-created":
          step("task", `EMR agent runs the write as task ${e.taskId} (tools/call ${WRITE_TOOL_NAME} → CreateTaskResult, ${e.status}; polled with tasks/get)`);
          break;
        case "task-done":
          flushProgress();
          step("task", `task ${e.task.taskId}: ${e.task.life.join(" → ")} (answers sent with tasks/update)`);
          break;
        case "read-back":
          step("read back", e.resourceType !== undefined ? `resources/read ${e.uri} (1 of the ${e.links} resource_link(s) returned) → ${e.resourceType}` : `resources/read ${e.uri} → unreadable`);
          break;
        case "batch-done":
          flushProgress();
          // Without a model summary (the model failed), the agent's answer starts with its own tally.
          if (!summarised) step("EMR agent", e.summary);
          summarised = false;
          break;
        case "patient-done": {
          if (patientBar) {
            multi?.remove(patientBar);
            patientBar = undefined;
          }
          const ack = sum(e.report.acknowledged);
          const created = sum(e.report.created);
          const ref = e.report.refused.reduce((a, b) => a + b.count, 0);
          // ✔ when the EMR holds something of this patient's input after the run, ✖ when nothing was written or held
          print(`${ack > 0 ? "✔" : "✖"} ${e.patient.name}: ${created} newly written, ${ack - created} already in the EMR, ${ref} refused${e.report.problem ? ` (${e.report.problem})` : ""}`);
          break;
        }
      }
    },
    line: print,
    stop() {
      if (stopped) return;
      stopped = true;
      multi?.stop();
    },
  };
}

const sum = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

/**
 * The final summary: a table of what the EMR holds from this input (patients, resources by type, refusals), how much
 * of it this run newly wrote, refusals, defences, audit, time. `columns` (default 80): the terminal's width; a table
 * wider than that gets short resource type heads and a legend.
 */
export function renderSummary(report: DemoReport, columns = 80): string {
  const types = [...new Set(report.patients.flatMap((p) => Object.keys(p.written)))].sort();
  const table = (heads: string[], compact = false) => {
    // compact: no borders, one space between columns (what fits 80 columns with every resource type)
    const t = new Table({
      head: ["Patient", "Born", ...heads, "Refused"],
      style: { head: [], border: [], ...(compact && { "padding-left": 0, "padding-right": 1 }) },
      ...(compact && { chars: COMPACT_CHARS }),
    });
    for (const p of report.patients) {
      t.push([p.name, p.birthDate, ...types.map((x) => String(p.written[x] ?? 0)), String(p.refused.reduce((a, r) => a + (r.count ?? 1), 0))]);
    }
    const totals = types.map((x) => String(report.patients.reduce((a, p) => a + (p.written[x] ?? 0), 0)));
    t.push(["Total", "", ...totals, String(report.patients.reduce((a, p) => a + p.refused.reduce((b, r) => b + (r.count ?? 1), 0), 0))]);
    return t.toString();
  };
  // resource types as column heads, shortened (with a legend) when the table would not fit the terminal
  let rendered = table(types);
  let legend: string | undefined;
  if (Math.max(...rendered.split("\n").map((l) => l.length)) > columns) {
    rendered = table(
      types.map((x) => SHORT_TYPE[x] ?? x),
      true,
    )
      .split("\n")
      .map((l) => l.trimEnd())
      .filter((l) => l !== "")
      .join("\n");
    legend = types.filter((x) => SHORT_TYPE[x] !== undefined).map((x) => `${SHORT_TYPE[x]} = ${x}`).join(", ");
  }
  const reasons = new Map<string, number>();
  for (const p of report.patients) for (const r of p.refused) reasons.set(`${r.resourceType}: ${r.reason}`, (reasons.get(`${r.resourceType}: ${r.reason}`) ?? 0) + (r.count ?? 1));
  const held = report.patients.reduce((a, p) => a + sum(p.written), 0);
  const created = report.patients.reduce((a, p) => a + sum(p.created), 0);
  const d = report.defences;
  // prose lines wrap at the terminal's width (continuation lines indented by two spaces); commands never do
  const wrap = (line: string) => wrapLine(line, columns);
  return [
    rendered,
    ...(legend ? [wrap(legend)] : []),
    wrap(`Written: ${created} new this run, ${held - created} already in the EMR (writes are idempotent; the table counts what the EMR holds from this input)`),
    wrap(reasons.size ? `Refusals: ${[...reasons].map(([k, n]) => `${k} ×${n}`).join("; ")}` : "Refusals: none"),
    wrap(
      `Defences: prompt injection blocked: ${mark(d.injectionBlocked)} · read-only client refused (insufficient_scope): ${mark(d.insufficientScopeRefused)} · patient-bound client refused another patient: ${mark(d.crossPatientRefused)} · record read for an outside model de-identified: ${mark(d.deidentified)}${d.redactions && Object.keys(d.redactions).length > 0 ? ` (${Object.entries(d.redactions).map(([t, n]) => `${t} ×${n}`).join(", ")})` : ""}`,
    ),
    ...(report.instances ? instanceLines(report.instances, report.audit, report.era).map(wrap) : auditFileLines(report.audit)),
    `EMR: ${"dataDir" in report.emr ? report.emr.dataDir : report.emr.databaseUrl} · MCP ${report.era === "legacy" ? "2025-11-25 (legacy era)" : "2026-07-28"} · time ${(report.durationMs / 1000).toFixed(1)} s`,
  ].join("\n");
}

/**
 * `line` broken at spaces into lines of at most `columns` characters (a longer word stays whole); continuations start
 * with `indent` spaces (default 2).
 */
export function wrapLine(line: string, columns: number, indent = 2): string {
  if (line.length <= columns) return line;
  const out: string[] = [];
  const lead = /^ */.exec(line)![0];
  let cur = lead;
  for (const word of line.slice(lead.length).split(" ")) {
    const next = cur === lead && out.length === 0 ? `${lead}${word}` : cur === "" ? word : `${cur} ${word}`;
    const limit = out.length === 0 ? columns : columns - indent;
    if (next.length > limit && cur.trim() !== "") {
      out.push(cur);
      cur = word;
    } else cur = next;
  }
  out.push(cur);
  return out.map((l, i) => (i === 0 ? l : `${" ".repeat(indent)}${l}`)).join("\n");
}

/** cli-table3 characters of a table without borders. */
const COMPACT_CHARS = Object.fromEntries(
  ["top", "top-mid", "top-left", "top-right", "bottom", "bottom-mid", "bottom-left", "bottom-right", "left", "left-mid", "mid", "mid-mid", "right", "right-mid", "middle"].map((k) => [k, ""]),
);

/** Short column heads for the summary table when the full resource type names do not fit. */
const SHORT_TYPE: Record<string, string> = {
  AllergyIntolerance: "Allrg",
  CarePlan: "Plan",
  Condition: "Cond",
  DiagnosticReport: "DxRpt",
  Immunization: "Imm",
  MedicationRequest: "MedRq",
  Observation: "Obs",
  Procedure: "Proc",
};

function auditFileLines(audit: DemoReport["audit"]): string[] {
  return [
    audit.files.length > 1
      ? `Audit: ${audit.records} records in ${audit.files.length} files (${chainCount(audit.files)} chains: one per agent process) in ${audit.dir}, every chain verified: ${mark(audit.verified)}`
      : `Audit: ${audit.records} records in ${audit.file}, chain verified: ${mark(audit.verified)}`,
    `       re-verify: npx --no hmcp audit verify ${audit.dir} --key ${audit.publicKey} --anchors ${audit.anchors}`,
  ];
}

/** `--instances`: how the agents ran, what each instance served (from its audit chain) and each chain's verification. */
function instanceLines(instances: NonNullable<DemoReport["instances"]>, audit: DemoReport["audit"], era: DemoReport["era"]): string[] {
  const served = (s: Record<string, number>) => Object.entries(s).map(([m, n]) => `${n} ${m}`).join(", ") || "nothing";
  return [
    `Instances: ${instances.count} processes per agent behind ${instances.proxy}, one shared database (${instances.database === "PGlite bridge" ? "no PostgreSQL here: one PGlite in the demo's process, reached through a loopback bridge" : `PostgreSQL, ${instances.database}`}) for the EMR store, tasks, requestState ledger, event store and audit table`,
    ...instances.agents.map((a) =>
      a.chain
        ? `  ${a.id} (${a.url}): ${a.records} audit records, chain verified: ${mark(a.verified)}${a.error ? ` (${a.error})` : ""}; served ${served(a.served)}${a.tasksCompleted > 0 ? `; ${a.tasksCompleted} write task(s) finished here` : ""}`
        : `  ${a.id} (${a.url}): served nothing, no audit chain${era === "legacy" ? " (the orchestrator's session stuck to its sibling: a 2025-era session stays on the instance that opened it)" : ""}`,
    ),
    `Audit: ${audit.records} records in ${instances.agents.filter((a) => a.chain).length} chains (one per instance that served) in the hmcp_audit table, every chain verified: ${mark(audit.verified)}; checkpoint keys ${audit.publicKey}, anchors ${audit.anchors}`,
  ];
}

const mark = (b: boolean) => (b ? "yes" : "NO");

/** Chains among audit files: files are `<chain prefix>-<YYYYMMDD>-<NNNNNN>.jsonl`. */
function chainCount(files: string[]): number {
  return new Set(files.map((f) => path.basename(f).replace(/-\d{8}-\d+\.jsonl$/, ""))).size;
}
