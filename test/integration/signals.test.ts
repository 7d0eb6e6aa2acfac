/**
 * What the people relying on an agent can see (issue #27, "signals"): every question a handler asks back is in the
 * request's audit record with its outcome (the clinician's accept / decline / cancel, never what was entered), and a
 * result whose text a guardrail redacted says which entity types were replaced and how many (`_meta`).
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  defaultGuardrails,
  exportFhirAuditEvents,
  GuardrailPipeline,
  HMCPServer,
  REDACTIONS_META_KEY,
  type AuditRecordInput,
  type Guardrail,
  type HMCPClientOptions,
  type SamplingHandler,
} from "hmcp";
import { TEST_PRINCIPAL, textOf } from "../fixtures/echo-agent.js";
import { connectInMemory } from "../fixtures/harness.js";

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function connect(handler: SamplingHandler, clientOptions: HMCPClientOptions, guardrails: GuardrailPipeline | false = false) {
  const audit: AuditRecordInput[] = [];
  const server = new HMCPServer({ name: "emr-writeback", version: "1.0.0" }, { auth: { localPrincipal: TEST_PRINCIPAL }, guardrails, hooks: { audit: (r) => audit.push(r) } });
  server.sampling(handler);
  const c = await connectInMemory(server, { guardrails: false, ...clientOptions });
  close = c.close;
  return { client: c.client, audit };
}

const form = (message: string) => ({ message, requestedSchema: { type: "object" as const, properties: { note: { type: "string" as const } } } });

describe("signals for the people relying on an agent", () => {
  it("records each question the handler asked back, in order, with its outcome and never its content", async () => {
    const answers = ["accept", "decline", "cancel"] as const;
    let asked = 0;
    const { client, audit } = await connect(
      async (params, ctx) => {
        if (textOf(params.messages[0]!.content) === "ping") return { content: { type: "text", text: "pong" }, stopReason: "endTurn" };
        for (let i = 0; i < 3; i++) await ctx.elicit(form(`Approve writing Observation ${i} for Jane Doe?`));
        await ctx.sample({ messages: [{ role: "user", content: { type: "text", text: "summarise for Jane Doe" } }], maxTokens: 50 });
        return { content: { type: "text", text: "done" }, stopReason: "endTurn" };
      },
      {
        onElicitation: () => {
          const action = answers[asked++]!;
          return action === "accept" ? { action, content: { note: "Jane Doe consented at 10:42" } } : { action };
        },
        onSampling: () => ({ role: "assistant", model: "m", content: { type: "text", text: "summary" }, stopReason: "endTurn" }),
      },
    );
    expect(textOf((await client.ask("write the vitals")).content)).toBe("done");
    const rec = audit.find((r) => r.method === "sampling/createMessage")!;
    expect(rec.interactions).toEqual([
      { kind: "elicitation", outcome: "accept" },
      { kind: "elicitation", outcome: "decline" },
      { kind: "elicitation", outcome: "cancel" },
      { kind: "sampling", outcome: "answered" },
    ]);
    expect(JSON.stringify(rec)).not.toMatch(/Jane|consented|summary/);
    const fhir = JSON.stringify(exportFhirAuditEvents([rec]));
    expect(fhir).toContain('"type":"interaction","valueString":"elicitation;decline"');
    // a request that asked nothing carries no field
    await client.ask("ping");
    expect(audit.filter((r) => r.method === "sampling/createMessage")[1]!.interactions).toBeUndefined();
  });

  it("records a question that failed (the client cannot be asked) as failed", async () => {
    const { client, audit } = await connect(
      async (_params, ctx) => {
        await ctx.sample({ messages: [{ role: "user", content: { type: "text", text: "x" } }], maxTokens: 5 }).catch(() => undefined);
        return { content: { type: "text", text: "done" }, stopReason: "endTurn" };
      },
      { onSampling: () => Promise.reject(new Error("model offline")) },
    );
    await client.ask("go");
    expect(audit.find((r) => r.method === "sampling/createMessage")!.interactions).toEqual([{ kind: "sampling", outcome: "failed" }]);
  });

  it("a redacted result says which entity types were replaced and how many", async () => {
    const starred: Guardrail = {
      name: "star-names",
      check(text) {
        const entities = [...text.matchAll(/\*[A-Z][a-z]+\*/g)].map((m) => ({ type: "NAME", start: m.index, end: m.index + m[0].length, replacement: "[NAME]" }));
        return entities.length === 0 ? { action: "allow" } : { action: "redact", content: text.replace(/\*[A-Z][a-z]+\*/g, "[NAME]"), entities };
      },
    };
    const guardrails = new GuardrailPipeline({ output: [{ guardrail: starred }] });
    const { client } = await connect(() => ({ content: { type: "text", text: "seen by *Alice* and *Bob*" }, stopReason: "endTurn" }), {}, guardrails);
    const r = await client.ask("who saw the patient?");
    expect(textOf(r.content)).toBe("seen by [NAME] and [NAME]");
    expect(r._meta?.[REDACTIONS_META_KEY]).toEqual({ NAME: 2 });
    // with the default policy, a clinical answer's date and clinician are replaced and counted
    await close?.();
    const real = await connect(() => ({ content: { type: "text", text: "Lisinopril started 2024-03-01 by Dr. Alice Smith." }, stopReason: "endTurn" }), {}, defaultGuardrails());
    const redacted = await real.client.ask("when was lisinopril started?");
    expect(textOf(redacted.content)).not.toMatch(/2024-03-01|Alice Smith/);
    expect(redacted._meta?.[REDACTIONS_META_KEY]).toMatchObject({ DATE: 1, NAME: expect.any(Number) });
    // an answer nothing was removed from carries no such key
    await close?.();
    const clean = await connect(() => ({ content: { type: "text", text: "Potassium is 4.1 mmol/L." }, stopReason: "endTurn" }), {}, defaultGuardrails());
    expect((await clean.client.ask("potassium?"))._meta?.[REDACTIONS_META_KEY]).toBeUndefined();
  });
});
