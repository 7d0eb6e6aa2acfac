/**
 * The orchestrator's flow for one patient (issue 5): send the clinical data to the EMR agent without a patient id
 * (it answers `infoNeeded`), look the patient up at the patient-data agent by name and birth date, resend each
 * encounter with the id (the EMR agent asks for approval, writes with progress, and asks our model for a
 * summary), then read one written resource back through its `resource_link`. On MCP 2026-07-28 the resend is a call
 * of the agent's write tool, which the agent runs as an MCP task: the orchestrator keeps the task id, waits the task
 * out (answering the approval and the summary through `tasks/update`) and reports the task's life. On the legacy era
 * it is the HMCP sampling request it has always been. The two HMCPClients come connected; their sampling / elicitation
 * handlers are the caller's.
 */
import { HMCPErrorCode, isInfoNeeded, PATIENT_META_KEY, type HMCPClient, type TaskState } from "hmcp";
import { ProtocolError } from "@modelcontextprotocol/server";
import type { CallToolResult, CreateMessageResult, ResourceLink } from "@modelcontextprotocol/server";
import { RESOURCE_LINKS_META_KEY, WRITE_TOOL_NAME, WRITEBACK_META_KEY, type WritebackOutcome } from "../emr-writeback/agent.js";
import { LOOKUP_META_KEY, type LookupAnswer } from "../patient-data/agent.js";
import type { EncounterBatch, PatientInput } from "../fhir/synthea.js";

/** Events for the progress display. */
export type OrchestratorEvent =
  | { type: "patient-start"; patient: PatientInput; resources: number; batches: number }
  | { type: "info-needed"; patient: PatientInput; fields: string[] }
  | { type: "lookup"; patient: PatientInput; answer: LookupAnswer }
  /**
   * `done` of `total` resources of this patient. `notification` is set when the event is a `notifications/progress`
   * the EMR agent sent (its own figures for the current encounter); without it, the orchestrator moved past an encounter.
   */
  | { type: "progress"; patient: PatientInput; done: number; total: number; notification?: { progress: number; total: number } }
  | { type: "batch-done"; patient: PatientInput; batch: EncounterBatch; summary: string; outcome?: WritebackOutcome }
  /** MCP 2026-07-28: the EMR agent answered the write with a `CreateTaskResult` (the task is stored, its run started). */
  | { type: "task-created"; patient: PatientInput; taskId: string; status: TaskState["status"] }
  /** The task ended (`completed`, `failed`, `cancelled`); `life`: its statuses as the orchestrator saw them (see {@link TaskRun}). */
  | { type: "task-done"; patient: PatientInput; task: TaskRun }
  /** One written resource read back through its `resource_link` (`resources/read`): its URI and what came back. */
  | { type: "read-back"; patient: PatientInput; uri: string; resourceType: string | undefined; links: number }
  | { type: "patient-done"; patient: PatientInput; report: PatientRun };

/**
 * One MCP task of a write: its id, its last status, and `life`, its statuses in order without the polls in between:
 * `working` (created), one `input_required (<method>)` per question it asked (the approval: `elicitation/create`, the
 * summary: `sampling/createMessage`), then the final status. Ids and statuses only: no PHI.
 */
export interface TaskRun {
  taskId: string;
  status: TaskState["status"];
  life: string[];
}

/** What one resend of an encounter came back with, on either era. */
interface WriteAnswer {
  summary: string;
  outcome?: WritebackOutcome;
  /** `resource_link`s to what was written: content blocks of the tool's result (2026-07-28), `_meta` of a sampling result (legacy). */
  links: ResourceLink[];
  task?: TaskRun;
}

/** What happened to one patient (the report's per-patient entry, before counting the store). */
export interface PatientRun {
  name: string;
  birthDate: string;
  patientId?: string;
  sent: Record<string, number>;
  /** Resources the EMR agent acknowledged (created or already present), by type. */
  acknowledged: Record<string, number>;
  /** Of `acknowledged`, those this run added to the store, by type (the rest were already there: writes are idempotent). */
  created: Record<string, number>;
  refused: Array<{ resourceType: string; reason: string; count: number }>;
  /** Source keys (`fullUrl`s) of the resources sent, for counting what reached the store. */
  sourceKeys: string[];
  summaries: string[];
  /** The MCP tasks of this patient's writes (MCP 2026-07-28; none on the legacy era). */
  tasks: TaskRun[];
  /** A resource this run wrote, read back through its `resource_link` with `resources/read`. */
  readBack?: { uri: string; resourceType: string };
  /** Set when the patient could not be processed (lookup failed, approval declined …). */
  problem?: string;
}

export interface OrchestratorOptions {
  emr: HMCPClient;
  patients: HMCPClient;
  onEvent?: (e: OrchestratorEvent) => void;
  /** Time without progress before a request fails, ms. Default 60,000 (raise it for interactive approval). */
  timeoutMs?: number;
}

export function bundleOf(batch: EncounterBatch): { resourceType: "Bundle"; type: "collection"; entry: Array<{ fullUrl: string; resource: unknown }> } {
  return { resourceType: "Bundle", type: "collection", entry: batch.entries.map((e) => ({ fullUrl: e.fullUrl, resource: e.resource })) };
}

const textOf = (r: CreateMessageResult): string => (r.content.type === "text" ? r.content.text : "");
const firstText = (r: CallToolResult): string => (r.content.find((c) => c.type === "text") as { text: string } | undefined)?.text ?? "";

function addRefusal(list: PatientRun["refused"], resourceType: string, reason: string, n = 1): void {
  const hit = list.find((x) => x.resourceType === resourceType && x.reason === reason);
  if (hit) hit.count += n;
  else list.push({ resourceType, reason, count: n });
}

export class Orchestrator {
  constructor(private readonly options: OrchestratorOptions) {}

  /** Looks the patient up at the patient-data agent by name and birth date only. */
  async lookup(name: string, birthDate: string): Promise<LookupAnswer> {
    const r = await this.options.patients.ask(`patient identifier for ${name} born ${birthDate}`, { maxTokens: 200 });
    const meta = r._meta?.[LOOKUP_META_KEY] as LookupAnswer | undefined;
    if (meta) return meta;
    if (isInfoNeeded(r)) return { status: "infoNeeded", fields: [] };
    try {
      const id = (JSON.parse(textOf(r)) as { patient_id?: unknown }).patient_id;
      if (typeof id === "string") return { status: "found", patientId: id };
    } catch {
      // plain text answer: not found
    }
    return { status: "notFound" };
  }

  /** Sends one batch for `patientId` (or without one) to the EMR agent. */
  async send(batch: EncounterBatch, patientId: string | undefined, onProgress?: (done: number, total: number) => void): Promise<CreateMessageResult> {
    const body = patientId === undefined ? bundleOf(batch) : { patient_id: patientId, clinical_data: bundleOf(batch) };
    return this.options.emr.ask(JSON.stringify(body), {
      maxTokens: 200,
      timeoutMs: this.options.timeoutMs ?? 60_000,
      ...(patientId !== undefined && { patient: patientId }),
      // the EMR agent's write progress carries a total; on MCP 2026-07-28 the client SDK also reports each input round
      // it fulfils (progress = the round number, no total), which is not write progress
      ...(onProgress && { onProgress: (p: { progress: number; total?: number }) => p.total !== undefined && onProgress(p.progress, p.total) }),
    });
  }

  /**
   * Resends one encounter with the patient's id: on MCP 2026-07-28 a call of the EMR agent's write tool, which the agent
   * makes a task (kept, waited out, its questions answered through `tasks/update`); on the legacy era a sampling request.
   */
  async write(batch: EncounterBatch, patient: PatientInput, patientId: string, onProgress?: (done: number, total: number) => void): Promise<WriteAnswer> {
    const emr = this.options.emr;
    if (emr.protocolEra !== "modern") {
      const r = await this.send(batch, patientId, onProgress);
      const outcome = r._meta?.[WRITEBACK_META_KEY] as WritebackOutcome | undefined;
      return { summary: textOf(r), ...(outcome && { outcome }), links: (r._meta?.[RESOURCE_LINKS_META_KEY] as ResourceLink[] | undefined) ?? [] };
    }
    const emit = this.options.onEvent ?? (() => undefined);
    const started = await emr.startToolCall(
      { name: WRITE_TOOL_NAME, arguments: { patient_id: patientId, clinical_data: bundleOf(batch) }, _meta: { [PATIENT_META_KEY]: patientId } },
      { timeoutMs: this.options.timeoutMs ?? 60_000 },
    );
    // the agent makes every call of its write tool a task for a client that takes tasks, as this one does on 2026-07-28;
    // a result without one would have skipped this client's guardrails (waitForTask runs them)
    if (!("task" in started)) throw new Error(`the EMR agent answered ${WRITE_TOOL_NAME} without a task`);
    const task: TaskRun = { taskId: started.task.taskId, status: started.task.status, life: [started.task.status] };
    emit({ type: "task-created", patient, taskId: task.taskId, status: task.status });
    const asked = new Set<string>();
    let result: CallToolResult;
    try {
      result = await emr.waitForTask(task.taskId, {
        onStatus: (t) => {
          task.status = t.status;
          if (t.status !== "input_required") return;
          // each question is asked once over the task's life: polled again before it is answered, it is the same one
          for (const [key, q] of Object.entries(t.inputRequests ?? {})) {
            if (asked.has(key)) continue;
            asked.add(key);
            task.life.push(`input_required (${q.method})`);
          }
        },
      });
    } finally {
      if (task.status !== "working" && task.status !== "input_required") task.life.push(task.status);
      emit({ type: "task-done", patient, task });
    }
    const outcome = result._meta?.[WRITEBACK_META_KEY] as WritebackOutcome | undefined;
    const links = result.content.filter((c): c is ResourceLink => c.type === "resource_link");
    return { summary: firstText(result), ...(outcome && { outcome }), links, task };
  }

  /** Reads a written resource back through its `resource_link` (`resources/read` on the EMR agent, behind its scopes). */
  async readBack(link: ResourceLink): Promise<{ uri: string; resourceType: string | undefined }> {
    const read = await this.options.emr.readResource({ uri: link.uri });
    const first = read.contents[0] as { text?: string } | undefined;
    let resourceType: string | undefined;
    try {
      const t = (JSON.parse(first?.text ?? "null") as { resourceType?: unknown } | null)?.resourceType;
      if (typeof t === "string") resourceType = t;
    } catch {
      // not FHIR JSON: reported as unreadable
    }
    return { uri: link.uri, resourceType };
  }

  /** Runs the whole flow for one patient over `batches` (chronological). */
  async runPatient(patient: PatientInput, batches: EncounterBatch[]): Promise<PatientRun> {
    const emit = this.options.onEvent ?? (() => undefined);
    const run: PatientRun = { name: patient.name, birthDate: patient.birthDate, sent: {}, acknowledged: {}, created: {}, refused: [], sourceKeys: [], summaries: [], tasks: [] };
    const total = batches.reduce((n, b) => n + b.entries.length, 0);
    emit({ type: "patient-start", patient, resources: total, batches: batches.length });
    for (const b of batches)
      for (const e of b.entries) {
        run.sent[e.resource.resourceType] = (run.sent[e.resource.resourceType] ?? 0) + 1;
        run.sourceKeys.push(e.fullUrl);
      }
    if (batches.length === 0) {
      emit({ type: "patient-done", patient, report: run });
      return run;
    }

    // 1. The EMR agent does not know who this is: it must answer infoNeeded.
    const first = await this.send(batches[0]!, undefined);
    if (isInfoNeeded(first)) {
      const fields = ((first._meta?.["hmcp/infoNeeded"] as { fields?: string[] } | undefined)?.fields ?? []).slice();
      emit({ type: "info-needed", patient, fields });
    }

    // 2. Who is it? Name and birth date are all the orchestrator knows.
    const answer = await this.lookup(patient.name, patient.birthDate);
    emit({ type: "lookup", patient, answer });
    if (answer.status !== "found") {
      run.problem = answer.status === "infoNeeded" ? `patient lookup needs more details (${answer.fields.join(", ")})` : "patient not found in the patient index";
      for (const [t, n] of Object.entries(run.sent)) addRefusal(run.refused, t, answer.status === "infoNeeded" ? "patient_ambiguous" : "patient_not_found", n);
      emit({ type: "patient-done", patient, report: run });
      return run;
    }
    run.patientId = answer.patientId;

    // 3. Resend each encounter with the id.
    let done = 0;
    let lastLinks: ResourceLink[] = [];
    for (const batch of batches) {
      let r: WriteAnswer;
      try {
        r = await this.write(batch, patient, answer.patientId, (d, t) => emit({ type: "progress", patient, done: done + d, total, notification: { progress: d, total: t } }));
      } catch (e) {
        // A guardrail refused this encounter: report it and go on with the next one. Anything else stops the run.
        if (!(e instanceof ProtocolError) || e.code !== HMCPErrorCode.GuardrailBlocked) throw e;
        const guardrail = (e.data as { guardrail?: string } | undefined)?.guardrail ?? "unknown";
        for (const x of batch.entries) addRefusal(run.refused, x.resource.resourceType, `blocked_by_guardrail:${guardrail}`);
        run.problem = "some encounters were blocked by a guardrail";
        done += batch.entries.length;
        emit({ type: "progress", patient, done, total });
        continue;
      }
      if (r.task) run.tasks.push(r.task);
      if (r.links.length > 0) lastLinks = r.links;
      const outcome = r.outcome;
      if (outcome) {
        for (const w of outcome.written) {
          run.acknowledged[w.resourceType] = (run.acknowledged[w.resourceType] ?? 0) + 1;
          if (w.created) run.created[w.resourceType] = (run.created[w.resourceType] ?? 0) + 1;
        }
        for (const x of outcome.refused) addRefusal(run.refused, x.resourceType, x.reason);
        if (outcome.approval === "decline" || outcome.approval === "cancel") {
          run.problem = `approval ${outcome.approval === "decline" ? "declined" : "cancelled"} for some encounters`;
          const refusedIdx = new Set(outcome.refused.map((x) => x.index));
          batch.entries.forEach((e, i) => {
            if (!refusedIdx.has(i)) addRefusal(run.refused, e.resource.resourceType, `approval_${outcome.approval}`);
          });
        }
      }
      const summary = r.summary.split("\n")[0] ?? "";
      run.summaries.push(summary);
      done += batch.entries.length;
      emit({ type: "progress", patient, done, total });
      emit({ type: "batch-done", patient, batch, summary, ...(outcome && { outcome }) });
    }

    // 4. What was written is an MCP resource of the EMR agent: read one back through its link.
    if (lastLinks.length > 0) {
      const back = await this.readBack(lastLinks[0]!);
      if (back.resourceType !== undefined) run.readBack = { uri: back.uri, resourceType: back.resourceType };
      emit({ type: "read-back", patient, uri: back.uri, resourceType: back.resourceType, links: lastLinks.length });
    }
    emit({ type: "patient-done", patient, report: run });
    return run;
  }
}
