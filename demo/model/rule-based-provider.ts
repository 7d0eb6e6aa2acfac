/**
 * The orchestrator's model: answers `sampling/createMessage` requests that the agents send back to it.
 *
 * {@link RuleBasedModelProvider} is NOT a language model. It is a deterministic set of rules, named honestly,
 * so the demo runs offline and reproducibly. It understands one task, the EMR agent's
 * "encounter_summary" request (a JSON object in the last user message), and answers anything else with a
 * fixed sentence that says it has no rule for it.
 */
import type { CreateMessageRequest, CreateMessageResult } from "@modelcontextprotocol/server";

export interface ModelProvider {
  /** Model name reported in `CreateMessageResult.model`. */
  readonly model: string;
  createMessage(params: CreateMessageRequest["params"]): Promise<CreateMessageResult>;
}

/** The request body the EMR agent sends for a one-line summary (also what the provider parses). */
export interface EncounterSummaryTask {
  task: "encounter_summary";
  /** Encounter date (FHIR dateTime), if known. */
  date?: string;
  /** One entry per written resource: its type and display text (code text), no identifiers. */
  resources: Array<{ type: string; text?: string }>;
}

function lastUserText(params: CreateMessageRequest["params"]): string {
  for (let i = params.messages.length - 1; i >= 0; i--) {
    const m = params.messages[i]!;
    const c = m.content as { type?: string; text?: string } | Array<{ type?: string; text?: string }>;
    const blocks = Array.isArray(c) ? c : [c];
    const text = blocks.filter((b) => b.type === "text").map((b) => b.text ?? "").join("\n");
    if (m.role === "user" && text) return text;
  }
  return "";
}

/** "2 Observation" / "1 Condition (Acute bronchitis)" parts, types in first-seen order. */
export function summarizeEncounter(task: EncounterSummaryTask): string {
  const byType = new Map<string, { n: number; texts: string[] }>();
  for (const r of task.resources) {
    const e = byType.get(r.type) ?? { n: 0, texts: [] };
    e.n++;
    if (r.text && r.type !== "Observation" && !e.texts.includes(r.text)) e.texts.push(r.text);
    byType.set(r.type, e);
  }
  const parts = [...byType].map(([t, e]) => {
    const shown = e.texts.slice(0, 2).join("; ") + (e.texts.length > 2 ? `; +${e.texts.length - 2} more` : "");
    return `${e.n} ${t}${shown ? ` (${shown})` : ""}`;
  });
  const day = task.date?.slice(0, 10);
  return `${day ? `Encounter ${day}: ` : ""}${parts.length ? parts.join(", ") : "no resources"}.`;
}

export class RuleBasedModelProvider implements ModelProvider {
  readonly model = "hmcp-demo/rule-based-1";

  async createMessage(params: CreateMessageRequest["params"]): Promise<CreateMessageResult> {
    const text = lastUserText(params);
    let task: unknown;
    try {
      const start = text.indexOf("{");
      task = start >= 0 ? JSON.parse(text.slice(start)) : undefined;
    } catch {
      task = undefined;
    }
    const t = task as Partial<EncounterSummaryTask> | undefined;
    const answer =
      t?.task === "encounter_summary" && Array.isArray(t.resources)
        ? summarizeEncounter(t as EncounterSummaryTask)
        : "The rule-based demo model has no rule for this request.";
    return { role: "assistant", content: { type: "text", text: answer }, model: this.model, stopReason: "endTurn" };
  }
}
