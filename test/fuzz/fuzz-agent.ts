/** The agent the fuzz suites attack: sampling, tools (one asks its caller, one throws), a resource and a prompt. */
import { z } from "zod";
import { HMCPServer, hmcpContext, INFO_NEEDED, type AuditSink, type GuardrailRunner, type OperationalLogger } from "hmcp";

export const REQUEST_STATE_KEY = "a requestState key of at least 32 bytes, for the fuzz suite only";

/** A logger that counts and keeps nothing (fuzzing makes many failures worth a log line; none need printing). */
export class CountingLogger implements OperationalLogger {
  errors = 0;
  warnings = 0;
  /** The first few error messages (for the report of a run). */
  readonly firstErrors: string[] = [];
  error(message: string, meta?: Record<string, unknown>): void {
    this.errors++;
    if (this.firstErrors.length < 5) this.firstErrors.push(`${message} ${JSON.stringify(meta ?? {}).slice(0, 300)}`);
  }
  warn(): void {
    this.warnings++;
  }
  info(): void {}
}

export function fuzzAgent(audit: AuditSink, logger: OperationalLogger, guardrails: GuardrailRunner | false, localPrincipal?: boolean): HMCPServer {
  const s = new HMCPServer(
    { name: "fuzz-agent", version: "1.0.0" },
    {
      guardrails,
      audit,
      logger,
      requestState: { keys: [REQUEST_STATE_KEY] },
      ...(localPrincipal && { auth: { localPrincipal: { clientId: "local", sub: "local", scopes: ["hmcp:access", "hmcp:sample", "hmcp:read", "hmcp:write"] } } }),
    },
  );
  s.sampling(
    async (params, ctx) => {
      const text = JSON.stringify(params.messages);
      if (text.includes("boom")) throw new Error("handler failure");
      if (!text.includes("patient_id")) return { content: { type: "text", text: "need patient_id" }, stopReason: INFO_NEEDED };
      const answer = await ctx.elicit({ message: "Approve?", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } });
      return { content: { type: "text", text: `done: ${answer.action}` }, stopReason: "endTurn" };
    },
    { tool: true },
  );
  s.registerTool("add", { description: "adds two numbers", inputSchema: z.object({ a: z.number(), b: z.number() }) }, async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }));
  s.registerTool("ask", { description: "asks its caller, then applies once", inputSchema: z.object({ what: z.string() }) }, async ({ what }, extra) => {
    const ctx = hmcpContext(extra);
    const answer = await ctx.elicit({ message: `Approve ${what}?`, requestedSchema: { type: "object", properties: {} } });
    const n = await ctx.step("apply", () => what.length);
    return { content: [{ type: "text", text: `${answer.action} ${n}` }] };
  });
  s.registerTool("boom", { description: "throws" }, async () => {
    throw new Error("tool failure");
  });
  s.registerResource("greeting", "test://greeting", { mimeType: "text/plain" }, async (uri) => ({ contents: [{ uri: uri.href, text: "hello" }] }));
  s.registerPrompt("triage", { description: "a prompt", argsSchema: { topic: z.string() } }, ({ topic }) => ({
    messages: [{ role: "user", content: { type: "text", text: `Triage ${topic}` } }],
  }));
  return s;
}
