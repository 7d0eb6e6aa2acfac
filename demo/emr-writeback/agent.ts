/**
 * The EMR-writeback agent: an HMCPServer whose sampling handler, and whose tool `write_clinical_resources`, write
 * clinical FHIR resources into the EMR store.
 *
 * One request's way (issue 5):
 *   parse (Bundle / array / `clinical_data={...} patient_id=...`) → no patient id: `stopReason: "infoNeeded"`
 *   → patient-context check and a per-resource-type write-scope check (all or nothing: an unauthorised type
 *   refuses the whole request with `InsufficientScope`) → financial / unsupported types refused with a reason
 *   → shape validation (per-resource errors) → clinician approval by elicitation (accept / decline / cancel)
 *   → write in chunks with progress → one-line summary from the caller's model (sampling; skipped when the caller has
 *   no model) → summary text and `resource_link`s to what was written.
 *
 * Two ways in, one write: the sampling handler (HMCP's conversation: it answers `infoNeeded` when the patient is not
 * named; its result carries one content block, so its links travel in `_meta`), and the tool
 * {@link WRITE_TOOL_NAME} (`{ patient_id, clinical_data }`), whose result carries the links as `resource_link` content
 * blocks. The tool declares `execution.taskSupport: "optional"`: on MCP 2026-07-28, for a client that declares the
 * tasks extension (`io.modelcontextprotocol/tasks`), the approval and the write run as a task kept in the EMR's own
 * database (`hmcp_tasks`), so a task waiting for the clinician survives a restart of the agent.
 *
 * The written resources are MCP resources of this agent, `emr://fhir/{resourceType}/{id}`, readable behind the
 * same SMART scopes (read access to that type for that patient).
 */
import { ProtocolError, ResourceNotFoundError, ResourceTemplate } from "@modelcontextprotocol/server";
import type { CallToolResult, ResourceLink } from "@modelcontextprotocol/server";
import { z } from "zod";
import {
  HMCPError,
  HMCPServer,
  INFO_NEEDED,
  INFO_NEEDED_META_KEY,
  INVALID_PARAMS,
  hmcpContext,
  type CreateMessageParams,
  type HMCPServerOptions,
  type RequestContext,
  type TaskOptions,
} from "hmcp";
import type { EmrStore, ImportItem } from "../emr-store/store.js";
import { sourceKeyOf } from "../emr-store/store.js";
import { type ClinicalType, CLINICAL_TYPES, isClinicalType, isFinancialType, patientElement, resourceDate } from "../fhir/resource.js";
import { validateClinicalResource } from "../fhir/validate.js";
import type { EncounterSummaryTask } from "../model/rule-based-provider.js";
import { parseWritebackRequest, writebackRequestOf, WritebackRequestError, type WritebackRequest } from "./request.js";

/** `_meta` key of the machine-readable outcome of a writeback (see {@link WritebackOutcome}). */
export const WRITEBACK_META_KEY = "hmcp-demo/writeback";
/** `_meta` key of the `resource_link`s to what was written (sampling results carry a single content block). */
export const RESOURCE_LINKS_META_KEY = "hmcp-demo/resourceLinks";
/** URI scheme of the stored resources. */
export const EMR_URI_PREFIX = "emr://fhir/";
/**
 * The tool that writes one patient's clinical resources after the clinician's approval: arguments `{ patient_id,
 * clinical_data }` (a FHIR Bundle or an array of resources); a task on MCP 2026-07-28 for a client that takes tasks.
 */
export const WRITE_TOOL_NAME = "write_clinical_resources";

/**
 * The polling interval the agent suggests for its tasks, ms: the demo's agents and orchestrator share a loopback
 * interface, and each encounter is a task; an agent across a network keeps HMCP's default (1,000 ms).
 */
export const TASK_POLL_INTERVAL_MS = 25;

/** The write tool's arguments: checked here for shape; each resource is checked by the write itself. */
const WRITE_TOOL_INPUT = z.object({
  patient_id: z.string().regex(/^[A-Za-z0-9\-.]{1,64}$/, "a FHIR Patient id"),
  clinical_data: z.union([
    z.looseObject({ resourceType: z.literal("Bundle"), entry: z.array(z.looseObject({ fullUrl: z.string().optional(), resource: z.looseObject({ resourceType: z.string() }) })) }),
    z.array(z.looseObject({ resourceType: z.string() })),
  ]),
});

/** One refused resource: its position in the request, type, stable reason code and a readable sentence. */
export interface Refusal {
  index: number;
  resourceType: string;
  reason: "financial_resource" | "unsupported_type" | "invalid_shape" | "other_patient" | "source_patient_conflict" | "version_conflict";
  message: string;
  /** For `invalid_shape`: one "path: problem" line per issue. */
  errors?: string[];
}

/** What a writeback did, in `_meta[WRITEBACK_META_KEY]`. */
export interface WritebackOutcome {
  patientId: string;
  /** "written": created or already present (idempotent retry); "declined" / "cancelled": nothing written. */
  approval: "accept" | "decline" | "cancel" | "not_asked";
  written: Array<{ index: number; resourceType: string; id: string; created: boolean }>;
  refused: Refusal[];
}

export interface EmrAgentOptions {
  /** Opens the store on first use (so a refused caller never touches it). Called at most once. */
  store: () => Promise<EmrStore>;
  /** HMCPServer options (auth, guardrails, audit). */
  server?: HMCPServerOptions;
  /** Resources per transaction / progress step. Default 25. */
  chunkSize?: number;
  /** Ask for a clinician's approval before writing. Default true. */
  requireApproval?: boolean;
  /**
   * MCP tasks for the write tool (`HMCPServerOptions.tasks`): give every server of the agent the same options object
   * (and so the same `store`). Default: tasks off.
   */
  tasks?: TaskOptions;
}

/** What one write did: the text for the caller, the machine-readable outcome, links to what was written. */
interface Written {
  text: string;
  /** Absent when the patient is not named (`infoNeeded`). */
  outcome?: WritebackOutcome;
  links: ResourceLink[];
}

function requestText(params: CreateMessageParams): string {
  for (let i = params.messages.length - 1; i >= 0; i--) {
    const m = params.messages[i]!;
    if (m.role !== "user") continue;
    const blocks = (Array.isArray(m.content) ? m.content : [m.content]) as Array<{ type: string; text?: string }>;
    const text = blocks.filter((b) => b.type === "text").map((b) => b.text ?? "").join("\n");
    if (text.trim()) return text;
  }
  return "";
}

const text = (t: string) => ({ type: "text" as const, text: t });

function codeText(r: Record<string, unknown>): string | undefined {
  for (const k of ["code", "vaccineCode", "medicationCodeableConcept"]) {
    const c = r[k] as { text?: unknown; coding?: Array<{ display?: unknown }> } | undefined;
    if (typeof c?.text === "string") return c.text;
    if (typeof c?.coding?.[0]?.display === "string") return c.coding[0].display;
  }
  const cat = (r["category"] as Array<{ text?: unknown }> | undefined)?.[0]?.text;
  return typeof cat === "string" ? cat : undefined;
}

/** Builds one EMR-writeback agent server (one per MCP session over HTTP; share the `store` opener). */
export function createEmrWritebackServer(options: EmrAgentOptions): HMCPServer {
  let storePromise: Promise<EmrStore> | undefined;
  const store = () => (storePromise ??= options.store());
  const chunkSize = options.chunkSize ?? 25;
  const server = new HMCPServer(
    { name: "emr-writeback", version: "0.1.0" },
    {
      instructions:
        "Writes clinical FHIR R4 resources (Observation, Condition, MedicationRequest, Procedure, Immunization, AllergyIntolerance, " +
        "DiagnosticReport, CarePlan) for one patient into the EMR after a clinician's approval. Send a Bundle, an array, or " +
        "clinical_data={...} patient_id=... in a sampling request, or call the tool write_clinical_resources with { patient_id, clinical_data } " +
        "(an MCP task on 2026-07-28; its result links each resource written).",
      ...options.server,
      ...(options.tasks !== undefined && { tasks: options.tasks }),
    },
  );

  // also as the sampling tool, for hosts that cannot send sampling/createMessage (the MCP Inspector)
  server.sampling(
    async (params, ctx) => {
      const done = await write(readRequest(() => parseWritebackRequest(requestText(params))), ctx);
      if (done.outcome === undefined) return { content: text(done.text), stopReason: INFO_NEEDED, _meta: { [INFO_NEEDED_META_KEY]: { fields: ["patient_id"] } } };
      return { content: text(done.text), stopReason: "endTurn", _meta: { [WRITEBACK_META_KEY]: done.outcome, [RESOURCE_LINKS_META_KEY]: done.links } };
    },
    { tool: { title: "Write clinical resources to the EMR (after approval)" } },
  );

  server.registerTool(
    WRITE_TOOL_NAME,
    {
      title: "Write one patient's clinical resources to the EMR (after approval)",
      description:
        "Writes clinical FHIR R4 resources for the patient patient_id after a clinician approves. Returns a summary and a resource_link " +
        "to each resource written (readable with resources/read). Runs as an MCP task (io.modelcontextprotocol/tasks) for clients that take tasks.",
      inputSchema: WRITE_TOOL_INPUT,
      // a write replayed after a lost run stores nothing twice (rows keyed by source identity; the write is a ctx.step)
      annotations: { idempotentHint: true, destructiveHint: false, openWorldHint: false },
      execution: { taskSupport: "optional" },
    },
    async (args, extra): Promise<CallToolResult> => {
      const done = await write(readRequest(() => writebackRequestOf(args)), hmcpContext(extra));
      return {
        content: [text(done.text), ...done.links],
        ...(done.outcome !== undefined && { _meta: { [WRITEBACK_META_KEY]: done.outcome } }),
      };
    },
  );

  server.registerResource(
    "emr-resource",
    new ResourceTemplate(`${EMR_URI_PREFIX}{resourceType}/{id}`, {
      // what a host lists (resources/list): the resources written so far that the caller may read, its patient's alone
      // for a patient-bound token; at most 200
      list: async (extra) => {
        const ctx = hmcpContext(extra);
        const rows = ctx.patient !== undefined ? await (await store()).listByPatient(ctx.patient) : await (await store()).listSome(200);
        const readable = rows.filter((r) => isClinicalType(r.resourceType) && ctx.can({ action: "r", resourceType: r.resourceType, patient: r.patientId })).slice(0, 200);
        for (const r of new Set(readable.map((x) => x.patientId))) ctx.assertPatient(r);
        return {
          resources: readable.map((r) => ({ uri: `${EMR_URI_PREFIX}${r.resourceType}/${r.id}`, name: `${r.resourceType}/${r.id}`, mimeType: "application/fhir+json" })),
        };
      },
    }),
    { title: "A clinical resource stored in the demo EMR", mimeType: "application/fhir+json" },
    async (uri, variables, extra) => {
      const ctx = hmcpContext(extra);
      const type = String(variables["resourceType"]);
      const id = String(variables["id"]);
      if (!isClinicalType(type)) throw new ResourceNotFoundError(uri.href);
      // Type-level check before the lookup, so an unauthorised caller learns nothing about what exists.
      ctx.require({ action: "r", resourceType: type, ...(ctx.patient !== undefined && { patient: ctx.patient }) });
      const row = await (await store()).read(type, id);
      if (!row) throw new ResourceNotFoundError(uri.href);
      ctx.require({ action: "r", resourceType: type, patient: row.patientId });
      ctx.assertPatient(row.patientId);
      return { contents: [{ uri: uri.href, mimeType: "application/fhir+json", text: JSON.stringify(row.resource) }] };
    },
  );

  /** Reads a request; its errors are the caller's (invalid params), with their fixed, content-free messages. */
  function readRequest(read: () => WritebackRequest): WritebackRequest {
    try {
      return read();
    } catch (e) {
      if (e instanceof WritebackRequestError) throw new ProtocolError(INVALID_PARAMS, e.message);
      throw e;
    }
  }

  async function write(req: WritebackRequest, ctx: RequestContext): Promise<Written> {
    const patientId = req.patientId ?? ctx.patient;
    if (!patientId) {
      return {
        text: `I need the patient_id of the patient these ${req.entries.length} resources belong to. Resend them as clinical_data={...} patient_id=<FHIR Patient id>.`,
        links: [],
      };
    }
    ctx.assertPatient(patientId);

    // Authorization first, all or nothing: a caller that may not write one of the types writes none of them.
    const clinicalTypes = new Set(req.entries.map((e) => e.resource.resourceType).filter(isClinicalType));
    for (const t of clinicalTypes) ctx.require({ action: "c", resourceType: t, patient: patientId });

    const refused: Refusal[] = [];
    const items: Array<ImportItem & { index: number }> = [];
    req.entries.forEach((e, index) => {
      const t = e.resource.resourceType;
      if (isFinancialType(t)) {
        refused.push({ index, resourceType: t, reason: "financial_resource", message: `${t} is a financial resource, not clinical data; the EMR clinical writeback does not accept it` });
        return;
      }
      if (!isClinicalType(t)) {
        refused.push({ index, resourceType: t, reason: "unsupported_type", message: `${t} is not a clinical type this EMR accepts (${CLINICAL_TYPES.join(", ")})` });
        return;
      }
      const el = patientElement(t);
      const own = e.resource[el] as { reference?: unknown } | undefined;
      if (own !== undefined && own?.reference !== `Patient/${patientId}`) {
        refused.push({ index, resourceType: t, reason: "other_patient", message: `${t}.${el} points at a different patient than patient_id` });
        return;
      }
      const check = validateClinicalResource(t, e.resource);
      if (!check.ok) {
        refused.push({ index, resourceType: t, reason: "invalid_shape", message: `${t} at entry ${index} is not a valid FHIR R4 ${t}: ${check.errors.join("; ")}`, errors: check.errors });
        return;
      }
      const { [el]: _drop, ...resource } = e.resource;
      items.push({ index, sourceKey: sourceKeyOf(e), resourceType: t as ClinicalType, resource: { ...resource, resourceType: t } });
    });

    const outcome: WritebackOutcome = { patientId, approval: "not_asked", written: [], refused };
    const finish = (summary: string, links: ResourceLink[] = []): Written => ({ text: summary, outcome, links });
    if (items.length === 0) return finish(`Nothing to write: ${refused.length} resource(s) refused.`);

    const counts = new Map<string, number>();
    for (const it of items) counts.set(it.resourceType, (counts.get(it.resourceType) ?? 0) + 1);
    const countText = [...counts].map(([t, n]) => `${n} ${t}`).join(", ");
    if (options.requireApproval !== false) {
      const answer = await ctx.elicit({
        message: `Approve writing ${items.length} clinical resource(s) (${countText}) to the EMR for patient ${patientId}?`,
        requestedSchema: {
          type: "object",
          properties: { approve: { type: "boolean", title: "Approve", description: "Write these resources to the EMR" } },
          required: ["approve"],
        },
      });
      // only an explicit `approve: true` writes: an accept without it (the field is required) or with any other value
      // is a decline, so a malformed answer fails closed
      outcome.approval = answer.action === "accept" && answer.content?.["approve"] !== true ? "decline" : answer.action;
      if (outcome.approval !== "accept")
        return finish(`The clinician ${outcome.approval === "decline" ? "declined" : "cancelled"} the write: nothing was written.`);
    }

    // A step: on MCP 2026-07-28 this handler runs again for the summary's round (ctx.sample below), and a task's run
    // again after each answer; the write then returns what it wrote the first time instead of writing again (its result
    // rides in the sealed requestState, or in the task's journal in the task store)
    const statuses = await ctx.step("emr-write", async () => {
      const db = await store();
      await ctx.progress(0, items.length, "writing");
      return db.importResources(patientId, items, {
        chunkSize,
        signal: ctx.signal,
        onChunk: (done, total) => ctx.progress(done, total, `written ${done}/${total}`),
      });
    });
    const links: ResourceLink[] = [];
    statuses.forEach((s, i) => {
      const it = items[i]!;
      if (s.status === "refused") {
        refused.push({ index: it.index, resourceType: it.resourceType, reason: s.reason, message: s.message });
        return;
      }
      outcome.written.push({ index: it.index, resourceType: it.resourceType, id: s.id, created: s.status === "created" });
      links.push({ type: "resource_link", uri: `${EMR_URI_PREFIX}${it.resourceType}/${s.id}`, name: `${it.resourceType}/${s.id}`, mimeType: "application/fhir+json" });
    });
    refused.sort((a, b) => a.index - b.index);

    const created = outcome.written.filter((w) => w.created).length;
    const tally = `Wrote ${created} new, ${outcome.written.length - created} already present, ${refused.length} refused.`;
    let summary: string | undefined;
    if (outcome.written.length > 0) {
      const task: EncounterSummaryTask = {
        task: "encounter_summary",
        ...(resourceDate(items[0]!.resource) && { date: resourceDate(items[0]!.resource)! }),
        resources: items.map((it) => ({ type: it.resourceType, ...(codeText(it.resource) && { text: codeText(it.resource)! }) })),
      };
      try {
        const r = await ctx.sample(
          {
            messages: [{ role: "user", content: text(`Summarise this encounter in one line for the chart:\n${JSON.stringify(task)}`) }],
            maxTokens: 120,
            systemPrompt: "You write one-line clinical encounter summaries.",
          },
          { timeoutMs: 15_000 },
        );
        if (r.content.type === "text") summary = r.content.text.split("\n")[0];
      } catch (e) {
        // No model on the caller's side (or it failed): the write stands; the summary is just omitted.
        if (!(e instanceof HMCPError) && !(e instanceof ProtocolError)) throw e;
      }
    }
    return finish(summary ? `${summary}\n${tally}` : tally, links);
  }

  return server;
}
