import { describe, expect, it } from "vitest";
import { HMCPConfigError, HMCPServer } from "hmcp";

describe("HMCPServer options", () => {
  it("rejects an unknown key, naming it", () => {
    expect(() => new HMCPServer({ name: "a", version: "1" }, { guardrail: false } as never)).toThrowError(/unknown key 'guardrail'/);
  });
  it("rejects an unknown nested key, naming its path", () => {
    try {
      new HMCPServer({ name: "a", version: "1" }, { auth: { localPrincipl: {} } } as never);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(HMCPConfigError);
      expect((e as HMCPConfigError).key).toBe("auth.localPrincipl");
    }
  });
  it("rejects a value of the wrong type, naming the key", () => {
    expect(() => new HMCPServer({ name: "a", version: "1" }, { guardrails: { evaluate: 1 } } as never)).toThrowError(/'guardrails'/);
  });
  it("refuses a second sampling handler", () => {
    const s = new HMCPServer({ name: "a", version: "1" }, { auth: false });
    s.sampling(() => ({ content: { type: "text", text: "" } }));
    expect(() => s.sampling(() => ({ content: { type: "text", text: "" } }))).toThrowError(/already registered/);
  });
});
