/** The load generator's request bodies: a unique JSON-RPC id per request and, for `full-distinct`, a unique text. */
import { describe, expect, it } from "vitest";
import { requestBodies } from "../../../bench/load.js";
import { requestText } from "../../../bench/lib/configs.js";
import { samplingBody } from "../../../bench/lib/fixtures.js";

describe("bench load bodies", () => {
  it.each(["full-distinct", "full-distinct-workers"] as const)("%s: the counter goes into the id and the text, so no two requests carry the same text", (config) => {
    const bodyOf = requestBodies(JSON.stringify(samplingBody(requestText(config, "Chest pain."), "[<id>]", "p1")));
    const texts = new Set<string>();
    for (const n of [1, 2, 10, 12345]) {
      const msg = JSON.parse(bodyOf(n)) as { id: number; params: { messages: Array<{ content: { text: string } }> } };
      expect(msg.id).toBe(n);
      expect(msg.params.messages[0]!.content.text).toBe(`Request ${n}. Chest pain.`);
      texts.add(msg.params.messages[0]!.content.text);
    }
    expect(texts.size).toBe(4);
  });

  it("full: only the id changes", () => {
    const bodyOf = requestBodies(JSON.stringify(samplingBody(requestText("full", "Chest pain."), "[<id>]")));
    const [a, b] = [1, 2].map((n) => JSON.parse(bodyOf(n)) as { id: number; params: unknown });
    expect([a!.id, b!.id]).toEqual([1, 2]);
    expect(a!.params).toEqual(b!.params);
  });

  it("refuses a body without exactly one id placeholder", () => {
    expect(() => requestBodies('{"id":1}')).toThrow(/exactly one/);
    expect(() => requestBodies('["[<id>]","[<id>]"]')).toThrow(/exactly one/);
  });
});
