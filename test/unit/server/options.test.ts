import { describe, expect, it } from "vitest";
import { closestKey } from "../../../src/protocol/config-error.js";
import { HMCPClient, HMCPConfigError, HMCPServer } from "hmcp";

describe("HMCPServer options", () => {
  it("rejects an unknown key, naming it and the closest known one", () => {
    expect(() => new HMCPServer({ name: "a", version: "1" }, { guardrail: false } as never)).toThrowError("HMCPServer options: unknown option 'guardrail'; did you mean 'guardrails'?");
    expect(() => new HMCPServer({ name: "a", version: "1" }, { frobnicate: 1 } as never)).toThrowError("HMCPServer options: unknown option 'frobnicate'");
  });
  it("rejects an unknown nested key, naming its path", () => {
    try {
      new HMCPServer({ name: "a", version: "1" }, { auth: { localPrincipl: {} } } as never);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(HMCPConfigError);
      expect((e as HMCPConfigError).key).toBe("auth.localPrincipl");
      expect((e as Error).message).toBe("HMCPServer options: unknown option 'auth.localPrincipl'; did you mean 'localPrincipal'?");
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

describe("runtime option checks elsewhere (the same HMCPConfigError, with a hint)", () => {
  it("HMCPClient refuses a misspelt handler instead of declining every elicitation silently", () => {
    expect(() => new HMCPClient({ name: "c", version: "1" }, { onElicitaton: async () => ({ action: "accept" }) } as never)).toThrowError(
      "HMCPClient options: unknown option 'onElicitaton'; did you mean 'onElicitation'?",
    );
    expect(() => new HMCPClient({ name: "c", version: "1" }, { onSampling: "yes" } as never)).toThrowError(HMCPConfigError);
    expect(() => new HMCPClient({ name: "c", version: "1" }, { tokenProvider: {} } as never)).toThrowError(/invalid 'tokenProvider'/);
    expect(() => new HMCPClient({ name: "c", version: "1" }, { patient: "" })).toThrowError(/invalid 'patient'/);
    expect(() => new HMCPClient({ name: "c", version: "1" }, { patient: "p1", guardrails: false })).not.toThrow();
  });
  it("HMCPServer.sampling refuses a misspelt option and an empty scope list", () => {
    const server = () => new HMCPServer({ name: "a", version: "1" }, { auth: false });
    const handler = () => ({ content: { type: "text" as const, text: "ok" } });
    expect(() => server().sampling(handler, { requiredScope: ["hmcp:sample"] } as never)).toThrowError(
      "HMCPServer.sampling options: unknown option 'requiredScope'; did you mean 'requiredScopes'?",
    );
    expect(() => server().sampling(handler, { requiredScopes: [] })).toThrowError(/invalid 'requiredScopes'/);
    expect(() => server().sampling("handler" as never)).toThrowError(HMCPConfigError);
    expect(() => server().sampling(handler, { requiredScopes: ["hmcp:sample"] })).not.toThrow();
  });
  it("suggests only names close enough to be a typo", () => {
    expect(closestKey("guardrail", ["guardrails", "audit"])).toBe("guardrails");
    expect(closestKey("AUDIT", ["guardrails", "audit"])).toBe("audit");
    expect(closestKey("xyz", ["guardrails", "audit"])).toBeUndefined();
    expect(closestKey("logs", ["logger", "hooks"])).toBeUndefined();
  });
});
