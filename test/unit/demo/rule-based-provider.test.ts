import { describe, expect, it } from "vitest";
import { RuleBasedModelProvider } from "../../../demo/model/rule-based-provider.js";

describe("RuleBasedModelProvider", () => {
  it("summarises an encounter deterministically and says when it has no rule", async () => {
    const m = new RuleBasedModelProvider();
    const task = {
      task: "encounter_summary",
      date: "2019-03-02T10:00:00+00:00",
      resources: [
        { type: "Observation", text: "Body Height" },
        { type: "Observation", text: "Body Weight" },
        { type: "Condition", text: "Acute bronchitis (disorder)" },
      ],
    };
    const params = { messages: [{ role: "user" as const, content: { type: "text" as const, text: `Summarise in one line:\n${JSON.stringify(task)}` } }], maxTokens: 100 };
    const a = await m.createMessage(params);
    expect(a.content).toEqual({ type: "text", text: "Encounter 2019-03-02: 2 Observation, 1 Condition (Acute bronchitis (disorder))." });
    expect(await m.createMessage(params)).toEqual(a);
    const other = await m.createMessage({ messages: [{ role: "user", content: { type: "text", text: "hello" } }], maxTokens: 10 });
    expect(other.content).toEqual({ type: "text", text: "The rule-based demo model has no rule for this request." });
  });
});
