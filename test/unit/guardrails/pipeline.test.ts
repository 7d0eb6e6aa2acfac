import { describe, expect, it } from "vitest";
import { GuardrailPipeline, type Guardrail, type GuardrailContext } from "../../../src/guardrails/index.js";

const ctx: GuardrailContext = { stage: "input", side: "server", method: "sampling/createMessage" };

function req(...texts: string[]) {
  return {
    systemPrompt: "You are a careful assistant.",
    messages: texts.map((t, i) => ({ role: i % 2 ? "assistant" : "user", content: { type: "text", text: t } })),
    maxTokens: 100,
  };
}

const upper: Guardrail = { name: "upper", check: (t) => ({ action: "redact", content: t.replace(/secret/g, "[X]"), entities: [] }) };
const blocker = (word: string, name = "blocker"): Guardrail => ({
  name,
  check: (t) => (t.includes(word) ? { action: "block", reason: "found_" + word } : { action: "allow" }),
});

describe("GuardrailPipeline", () => {
  it("checks every message, not only the last, and reports the blocking guardrail", async () => {
    const seen: string[] = [];
    const spy: Guardrail = { name: "spy", check: (t, c) => (seen.push(c.location.path), { action: "allow" }) };
    const p = new GuardrailPipeline({ input: [{ guardrail: spy }, { guardrail: blocker("evil") }] });
    const out = await p.evaluate("input", req("evil first", "fine", "fine too"), ctx);
    expect(out.action).toBe("block");
    expect(out.blocked).toEqual({ guardrail: "blocker", reason: "found_evil" });
    expect(seen).toEqual(["systemPrompt", "messages[0].content.text", "messages[1].content.text", "messages[2].content.text"]);
  });

  it("runs in order and stops at the first block", async () => {
    const calls: string[] = [];
    const a: Guardrail = { name: "a", check: () => (calls.push("a"), { action: "block", reason: "a" }) };
    const b: Guardrail = { name: "b", check: () => (calls.push("b"), { action: "allow" }) };
    const out = await new GuardrailPipeline({ input: [{ guardrail: a }, { guardrail: b }] }).evaluate("input", "x", ctx);
    expect(out.blocked?.guardrail).toBe("a");
    expect(calls).toEqual(["a"]);
  });

  it("composes redactions: the next guardrail sees the redacted text, the input is not mutated", async () => {
    let seenBySecond = "";
    const second: Guardrail = { name: "second", check: (t) => ((seenBySecond = t), { action: "allow" }) };
    const payload = req("my secret plan");
    const out = await new GuardrailPipeline({ input: [{ guardrail: upper }, { guardrail: second }] }).evaluate("input", payload, ctx);
    expect(out.action).toBe("redact");
    expect(seenBySecond).toBe("my [X] plan");
    expect((out.payload.messages[0]!.content as { text: string }).text).toBe("my [X] plan");
    expect((payload.messages[0]!.content as { text: string }).text).toBe("my secret plan");
  });

  it("fails closed on an error and on a timeout", async () => {
    const thrower: Guardrail = { name: "thrower", check: () => { throw new Error("boom with PHI John Smith"); } };
    const slow: Guardrail = { name: "slow", check: () => new Promise((r) => setTimeout(() => r({ action: "allow" }), 200)) };
    const e = await new GuardrailPipeline({ input: [{ guardrail: thrower }] }).evaluate("input", "x", ctx);
    expect(e.blocked).toEqual({ guardrail: "thrower", reason: "guardrail_error" });
    const t = await new GuardrailPipeline({ input: [{ guardrail: slow, timeoutMs: 20 }] }).evaluate("input", "x", ctx);
    expect(t.blocked).toEqual({ guardrail: "slow", reason: "guardrail_timeout" });
  });

  it("hands text and structural checks the caller's members, the stage, the item's location and a signal that follows the request's", async () => {
    const principal = Object.freeze({ clientId: "app", sub: "u1", scopes: ["user/*.rs"] });
    const request = new AbortController();
    const caller = { stage: "output" as const, side: "client" as const, method: "tools/call", patient: "pt-1", principal, sessionId: "s-1", signal: request.signal, tenant: "extra member" };
    const seen: Array<Record<string, unknown>> = [];
    const signals: AbortSignal[] = [];
    const spy: Guardrail = {
      name: "spy",
      checkExchange: (_v, c) => (seen.push({ kind: "exchange", stage: c.stage, side: c.side, method: c.method, patient: c.patient, principal: c.principal, sessionId: c.sessionId, tenant: (c as { tenant?: string }).tenant }), signals.push(c.signal!), { action: "allow" }),
      check: (_t, c) => (seen.push({ kind: "text", stage: c.stage, side: c.side, method: c.method, patient: c.patient, principal: c.principal, sessionId: c.sessionId, path: c.location.path, role: c.location.role, tenant: (c as { tenant?: string }).tenant }), signals.push(c.signal!), { action: "allow" }),
    };
    const p = new GuardrailPipeline({ input: [{ guardrail: spy }], output: [{ guardrail: spy }] });
    await p.evaluate("input", req("first", "second"), caller);
    const common = { side: "client", method: "tools/call", patient: "pt-1", principal, sessionId: "s-1", tenant: "extra member" };
    expect(seen).toEqual([
      { kind: "exchange", stage: "input", ...common },
      { kind: "text", stage: "input", ...common, path: "systemPrompt", role: undefined },
      { kind: "text", stage: "input", ...common, path: "messages[0].content.text", role: "user" },
      { kind: "text", stage: "input", ...common, path: "messages[1].content.text", role: "assistant" },
    ]);
    // each signal is the guardrail's own (not the request's), not aborted while it ran ...
    expect(signals.every((s) => s instanceof AbortSignal && s !== request.signal && !s.aborted)).toBe(true);
    // ... and one read while a request is live follows the request's abort
    let inner: AbortSignal | undefined;
    const waiter: Guardrail = { name: "waiter", check: (_t, c) => new Promise((r) => { inner = c.signal; inner!.addEventListener("abort", () => r({ action: "allow" })); }) };
    const pending = new GuardrailPipeline({ input: [{ guardrail: waiter, timeoutMs: 5_000 }] }).evaluate("input", req("x"), caller);
    await expect.poll(() => inner).toBeDefined();
    request.abort(new Error("gone"));
    await pending;
    expect(inner!.aborted).toBe(true);
  });

  it("copies a caller's member named __proto__ as a member (never as the context's prototype), and keeps the guardrail's own signal", async () => {
    const caller = JSON.parse('{"stage":"input","side":"client","method":"tools/call","__proto__":{"evil":"yes"}}') as GuardrailContext;
    const request = new AbortController();
    caller.signal = request.signal;
    let seen: { evil: unknown; signal: AbortSignal | undefined; own: boolean } | undefined;
    const spy: Guardrail = {
      name: "spy",
      check: (_t, c) => ((seen = { evil: (c as unknown as { evil?: unknown }).evil, signal: c.signal, own: Object.prototype.hasOwnProperty.call(c, "__proto__") }), { action: "allow" }),
    };
    await new GuardrailPipeline({ input: [{ guardrail: spy }] }).evaluate("input", req("x"), caller);
    expect(seen!.evil).toBeUndefined();
    expect(seen!.own).toBe(true);
    expect(seen!.signal).toBeInstanceOf(AbortSignal);
    expect(seen!.signal).not.toBe(request.signal);
  });

  it("aborts the signal of a timed-out async guardrail", async () => {
    let aborted = false;
    const slow: Guardrail = {
      name: "slow",
      check: (_t, c) => new Promise((r) => { c.signal?.addEventListener("abort", () => { aborted = true; r({ action: "allow" }); }); }),
    };
    await new GuardrailPipeline({ input: [{ guardrail: slow, timeoutMs: 10 }] }).evaluate("input", "x", ctx);
    expect(aborted).toBe(true);
  });

  it("aborts a guardrail's signal when the request's signal aborts, and stops listening to the request once done", async () => {
    const request = new AbortController();
    let reason: unknown;
    const waiter: Guardrail = {
      name: "waiter",
      check: (_t, c) => new Promise((r) => c.signal?.addEventListener("abort", () => ((reason = c.signal?.reason), r({ action: "allow" })))),
    };
    const quick: Guardrail = { name: "quick", check: async (_t, c) => (void c.signal, { action: "allow" }) };
    const pending = new GuardrailPipeline({ input: [{ guardrail: waiter, timeoutMs: 5_000 }] }).evaluate("input", req("x"), { ...ctx, signal: request.signal });
    setTimeout(() => request.abort(new Error("client went away")), 20);
    await pending;
    expect((reason as Error).message).toBe("client went away");
    // a long-lived request signal carries no listener per finished guardrail run (20 runs would pass Node's 10-listener warning)
    const longLived = new AbortController();
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on("warning", onWarning);
    const p = new GuardrailPipeline({ input: [{ guardrail: quick }] });
    for (let i = 0; i < 20; i++) await p.evaluate("input", req("x"), { ...ctx, signal: longLived.signal });
    await new Promise((r) => setTimeout(r, 10));
    process.off("warning", onWarning);
    expect(warnings).toEqual([]);
    let fired = 0;
    longLived.signal.addEventListener("abort", () => fired++);
    longLived.abort();
    expect(fired).toBe(1);
  });

  it("a check that returns its promise after its budget is spent is blocked, and its later rejection is not left unhandled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    const late: Guardrail = {
      name: "late",
      check: (_t, c) => {
        const until = performance.now() + 60;
        while (performance.now() < until); // the budget (50 ms) is spent before the promise exists
        return new Promise((_r, reject) => c.signal?.addEventListener("abort", () => reject(new Error("aborted"))));
      },
    };
    const out = await new GuardrailPipeline({ input: [{ guardrail: late, timeoutMs: 50 }] }).evaluate("input", { messages: [{ role: "user", content: { type: "text", text: "x" } }] }, ctx);
    await new Promise((r) => setTimeout(r, 20));
    process.off("unhandledRejection", onUnhandled);
    expect(out.blocked).toEqual({ guardrail: "late", reason: "guardrail_timeout" });
    expect(unhandled).toEqual([]);
  });

  it("fails open only when configured, and records it", async () => {
    const thrower: Guardrail = { name: "thrower", check: () => { throw new Error("x"); } };
    const out = await new GuardrailPipeline({ input: [{ guardrail: thrower, failMode: "open" }, { guardrail: upper }] }).evaluate("input", "a secret", ctx);
    expect(out.action).toBe("redact");
    expect(out.payload).toBe("a [X]");
    expect(out.decisions[0]).toEqual({ guardrail: "thrower", action: "allow", reason: "guardrail_error" });
  });

  it("walks results, elicitation, tool arguments, resources and content arrays", async () => {
    const p = new GuardrailPipeline({ output: [{ guardrail: upper }] });
    const o = (x: unknown) => p.evaluate("output", x, { ...ctx, stage: "output" });
    expect((await o({ role: "assistant", content: { type: "text", text: "secret" }, model: "m" })).payload).toMatchObject({ content: { text: "[X]" } });
    expect((await o({ content: [{ type: "text", text: "a secret" }, { type: "image", data: "secret", mimeType: "image/png" }] })).payload).toEqual({
      content: [{ type: "text", text: "a [X]" }, { type: "image", data: "secret", mimeType: "image/png" }],
    });
    expect((await o({ action: "accept", content: { note: "secret", n: 3 } })).payload).toEqual({ action: "accept", content: { note: "[X]", n: 3 } });
    expect((await o({ message: "tell me the secret", requestedSchema: {} })).payload).toMatchObject({ message: "tell me the [X]" });
    expect((await o({ name: "t", arguments: { a: ["secret"] } })).payload).toEqual({ name: "t", arguments: { a: ["[X]"] } });
    expect((await o({ contents: [{ uri: "x://1", text: "secret" }] })).payload).toEqual({ contents: [{ uri: "x://1", text: "[X]" }] });
    expect((await o({ messages: [{ role: "user", content: [{ type: "text", text: "secret" }, { type: "resource", resource: { uri: "u", text: "secret" } }] }] })).payload).toEqual({
      messages: [{ role: "user", content: [{ type: "text", text: "[X]" }, { type: "resource", resource: { uri: "u", text: "[X]" } }] }],
    });
  });

  it("walks resource lists, resource template lists and completion values", async () => {
    const p = new GuardrailPipeline({ output: [{ guardrail: upper }] });
    const o = (x: unknown) => p.evaluate("output", x, { ...ctx, stage: "output" });
    expect((await o({ resources: [{ uri: "x://1", name: "secret note", description: "the secret", mimeType: "text/plain" }] })).payload).toEqual({
      resources: [{ uri: "x://1", name: "[X] note", description: "the [X]", mimeType: "text/plain" }],
    });
    expect((await o({ resourceTemplates: [{ uriTemplate: "x://{id}", name: "n", title: "secret" }] })).payload).toEqual({ resourceTemplates: [{ uriTemplate: "x://{id}", name: "n", title: "[X]" }] });
    expect((await o({ completion: { values: ["secret a", "b"], hasMore: false } })).payload).toEqual({ completion: { values: ["[X] a", "b"], hasMore: false } });
  });

  it("blocks a payload nested deeper than the walker visits, instead of passing its text unchecked", async () => {
    const nest = (depth: number) => {
      let v: unknown = "a secret";
      for (let i = 0; i < depth; i++) v = { v };
      return { name: "t", arguments: v };
    };
    const p = new GuardrailPipeline({ input: [{ guardrail: upper }] });
    const shallow = await p.evaluate("input", nest(20), ctx);
    expect(JSON.stringify(shallow.payload)).toContain("a [X]");
    const deep = await p.evaluate("input", nest(40), ctx);
    expect(deep.action).toBe("block");
    expect(deep.blocked).toEqual({ guardrail: "pipeline", reason: "payload_too_deep" });
  });

  it("a decision that is not allow, block (with a reason) or redact (with content) fails closed", async () => {
    for (const bad of [{ action: "deny" }, { action: "BLOCK", reason: "x" }, { action: "block" }, { action: "redact", content: "x" }, "allow", null] as const) {
      const g: Guardrail = { name: "custom", check: () => bad as never };
      const out = await new GuardrailPipeline({ input: [{ guardrail: g }] }).evaluate("input", "x", ctx);
      expect(out.blocked).toEqual({ guardrail: "custom", reason: "guardrail_error" });
      const ex: Guardrail = { name: "custom-x", checkExchange: () => bad as never };
      expect((await new GuardrailPipeline({ input: [{ guardrail: ex }] }).evaluate("input", "x", ctx)).blocked).toEqual({ guardrail: "custom-x", reason: "guardrail_error" });
    }
  });

  it("names the guardrails per stage and rejects a guardrail placed at a stage it does not support", () => {
    const p = new GuardrailPipeline({ input: [{ guardrail: upper }], output: [{ guardrail: blocker("x") }] });
    expect(p.names("input")).toEqual(["upper"]);
    expect(p.names("output")).toEqual(["blocker"]);
    expect(() => new GuardrailPipeline({ output: [{ guardrail: { ...upper, stages: ["input"] } }] })).toThrow(/does not run at stage "output"/);
  });

  it("inspectText maps composed redactions back to the original offsets", async () => {
    const a: Guardrail = { name: "a", check: (t) => { const i = t.indexOf("Bob"); return i < 0 ? { action: "allow" } : { action: "redact", content: t.slice(0, i) + "[NAME]" + t.slice(i + 3), entities: [{ type: "NAME", start: i, end: i + 3, replacement: "[NAME]" }] }; } };
    const b: Guardrail = { name: "b", check: (t) => { const i = t.indexOf("42"); return i < 0 ? { action: "allow" } : { action: "redact", content: t.slice(0, i) + "[AGE]" + t.slice(i + 2), entities: [{ type: "AGE", start: i, end: i + 2 }] }; } };
    const r = await new GuardrailPipeline({ output: [{ guardrail: a }, { guardrail: b }] }).inspectText("output", "Bob is 42 today");
    expect(r.text).toBe("[NAME] is [AGE] today");
    expect(r.entities).toEqual([{ type: "NAME", start: 0, end: 3 }, { type: "AGE", start: 7, end: 9 }]);
  });
});

describe("GuardrailPipeline structure view", () => {
  it("reports message count, content types, characters, maxTokens and model hints to checkExchange", async () => {
    let seen: unknown;
    const spy: Guardrail = { name: "spy", checkExchange: (v) => ((seen = { ...v, payload: undefined }), { action: "allow" }) };
    const payload = {
      messages: [
        { role: "user", content: [{ type: "text", text: "abc" }, { type: "image", data: "x", mimeType: "image/png" }] },
        { role: "assistant", content: { type: "tool_use", id: "1", name: "lookup", input: { q: "de" } } },
        { role: "user", content: { type: "tool_result", toolUseId: "1", content: [{ type: "text", text: "fgh" }], structuredContent: { v: "ij" } } },
      ],
      maxTokens: 77,
      modelPreferences: { hints: [{ name: "local" }] },
    };
    await new GuardrailPipeline({ input: [{ guardrail: spy }] }).evaluate("input", payload, ctx);
    expect(seen).toEqual({ payload: undefined, messageCount: 3, contentTypes: ["text", "image", "tool_use", "tool_result", "text"], totalChars: 10, maxTokens: 77, modelHints: ["local"] });
  });

  it("checks text inside tool_use input and tool_result content", async () => {
    const texts: string[] = [];
    const spy: Guardrail = { name: "spy", check: (t, c) => (texts.push(`${c.location.path}=${t}`), { action: "allow" }) };
    await new GuardrailPipeline({ input: [{ guardrail: spy }] }).evaluate(
      "input",
      {
        messages: [
          { role: "assistant", content: { type: "tool_use", id: "1", name: "lookup", input: { q: "de" } } },
          { role: "user", content: { type: "tool_result", toolUseId: "1", content: [{ type: "text", text: "fgh" }] } },
        ],
      },
      ctx,
    );
    expect(texts).toEqual(["messages[0].content.input.q=de", "messages[1].content.content[0].text=fgh"]);
  });
});
