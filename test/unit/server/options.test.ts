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
  it("rejects an auth.requiredScopes entry for initialize or ping (they bypass the pipeline), naming the key", () => {
    for (const method of ["initialize", "ping"]) {
      try {
        new HMCPServer({ name: "a", version: "1" }, { auth: { requiredScopes: { "tools/call": ["hmcp:write"], [method]: ["hmcp:sample"] } } });
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(HMCPConfigError);
        expect((e as HMCPConfigError).key).toBe(`auth.requiredScopes.${method}`);
        expect((e as Error).message).toMatch(/cannot be enforced/);
      }
    }
    expect(() => new HMCPServer({ name: "a", version: "1" }, { auth: { requiredScopes: { "tools/call": ["hmcp:write"] } } })).not.toThrow();
  });
  it("refuses a second sampling handler", () => {
    const s = new HMCPServer({ name: "a", version: "1" }, { auth: false });
    s.sampling(() => ({ content: { type: "text", text: "" } }));
    expect(() => s.sampling(() => ({ content: { type: "text", text: "" } }))).toThrowError(/already registered/);
  });
});
