/**
 * Conformance fixture: an HMCPServer exposing exactly the tools, resources, prompts, completions and logging that the
 * official `@modelcontextprotocol/conformance` server scenarios call (names, arguments and content as the scenarios'
 * descriptions specify), served over Streamable HTTP by `createHttpApp`.
 *
 * Authentication is off on purpose: the server runs with `auth: false` and the app with `bearer: false`, because the
 * conformance suite checks the MCP surface (it does not do OAuth against a server). The auth suite (test/security,
 * test/integration/auth-demo-server.test.ts) checks authentication and scopes. Guardrails are off for the same reason
 * (test/unit/guardrails and test/integration/guardrails-*.test.ts check them). Everything else stays on: every request
 * still passes the HMCP pipeline, and the app still does host-header validation, sessions and the bounded event store.
 *
 * Usage: `node --import tsx test/conformance/fixture-server.ts [--port N]`. Prints one JSON line
 * `{"url":"http://127.0.0.1:PORT/mcp"}` on stdout when listening, and shuts down gracefully on SIGTERM / SIGINT.
 */
import { pathToFileURL } from "node:url";
import { crc32, deflateSync } from "node:zlib";
import { z } from "zod";
import { CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY, ProtocolError, ProtocolErrorCode, ResourceTemplate, completable, inputRequired, inputResponse } from "@modelcontextprotocol/server";
import type { ClientCapabilities, LoggingLevel, ServerNotification } from "@modelcontextprotocol/server";
import { PGlite } from "@electric-sql/pglite";
import { HMCPServer, PostgresTaskStore, createHttpApp, hmcpContext, listen, type TaskStore } from "hmcp";

/** A valid 1×1 PNG (one red RGBA pixel), built here so that the bytes are checked by construction (PNG spec, ISO/IEC 15948). */
function redPixelPng(): string {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), 8 + data.length);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0); // width, px
  ihdr.writeUInt32BE(1, 4); // height, px
  ihdr.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA, deflate, no filter method, no interlace
  const scanline = Buffer.from([0, 255, 0, 0, 255]); // filter type 0, then R G B A
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", ihdr), chunk("IDAT", deflateSync(scanline)), chunk("IEND", Buffer.alloc(0))]).toString("base64");
}
const PNG_1X1 = redPixelPng();

/** A valid 8 kHz mono 16-bit PCM WAV file holding 10 ms of silence. */
function silentWav(): string {
  const samples = 80;
  const data = samples * 2;
  const b = Buffer.alloc(44 + data);
  b.write("RIFF", 0, "ascii");
  b.writeUInt32LE(36 + data, 4);
  b.write("WAVE", 8, "ascii");
  b.write("fmt ", 12, "ascii");
  b.writeUInt32LE(16, 16); // fmt chunk size
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(8000, 24); // sample rate, Hz
  b.writeUInt32LE(16000, 28); // byte rate
  b.writeUInt16LE(2, 32); // block align
  b.writeUInt16LE(16, 34); // bits per sample
  b.write("data", 36, "ascii");
  b.writeUInt32LE(data, 40);
  return b.toString("base64");
}
const WAV_SILENCE = silentWav();

/** MCP log levels in increasing severity (MCP spec 2025-06-18, "Logging"; RFC 5424 severities). */
const LEVELS: readonly LoggingLevel[] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/** Input of json_schema_2020_12_tool. Built once: a zod registry id may be registered only once per process. */
const JSON_SCHEMA_2020_12_INPUT = z.strictObject({
  name: z.string().optional(),
  address: z.object({ street: z.string(), city: z.string() }).partial().meta({ id: "address" }).optional(),
});

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Sleeps `ms`, or rejects as soon as `signal` aborts (a task's run is aborted by tasks/cancel). */
const sleepUnlessAborted = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(new Error("aborted"));
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(timer), reject(new Error("aborted"))), { once: true });
  });

interface Extra {
  mcpReq: {
    notify: (notification: ServerNotification) => Promise<void>;
    /** The MCP 2026-07-28 per-request `_meta` envelope (absent on the 2025 era). */
    envelope?: Record<string, unknown>;
  };
}

/** The elicitation form of the input-required scenarios that ask one string field (`name`, `color`, `context`). */
const askString = (message: string, field: string) => ({
  message,
  requestedSchema: { type: "object" as const, properties: { [field]: { type: "string" as const } }, required: [field] },
});
/** The elicitation form of the input-required scenarios that ask a confirmation (`ok`). */
const askConfirmation = (message: string) => ({
  message,
  requestedSchema: { type: "object" as const, properties: { ok: { type: "boolean" as const } }, required: ["ok"] },
});
const textOf = (content: unknown) =>
  typeof content === "object" && content !== null && (content as { type?: unknown }).type === "text" ? String((content as { text?: unknown }).text) : JSON.stringify(content);

/**
 * One HMCPServer per MCP session (createHttpApp calls this on every initialize). `taskStore`: where tasks are kept
 * (default: HMCP's embedded store, opened on the first task-capable connect).
 */
export function createConformanceServer(taskStore?: TaskStore): HMCPServer {
  const server = new HMCPServer(
    { name: "hmcp-conformance-fixture", version: "0.1.0" },
    {
      // Conformance checks the MCP surface; authentication and scopes are the auth suite's job, guardrail decisions
      // the guardrail suites' (the default injection model flags the scenario's "Please provide your information").
      auth: false,
      guardrails: false,
      capabilities: { logging: {}, resources: { subscribe: true, listChanged: true } },
      ...(taskStore !== undefined && { tasks: { store: taskStore } }),
    },
  );

  // --- logging: the session's minimum level, set by logging/setLevel; log notifications below it are dropped.
  let minLevel: LoggingLevel = "info";
  server.server.setRequestHandler('logging/setLevel', async (request) => {
    minLevel = request.params.level;
    return {};
  });
  /**
   * Sends a log notification on the current request's stream (so it reaches the caller before the result). The
   * threshold is the session's level (logging/setLevel) on the 2025 era, and the request's own
   * `_meta["io.modelcontextprotocol/logLevel"]` on MCP 2026-07-28, where a request without one gets no log at all.
   */
  const log = async (extra: Extra, level: LoggingLevel, data: string) => {
    const threshold = extra.mcpReq.envelope === undefined ? minLevel : (extra.mcpReq.envelope[LOG_LEVEL_META_KEY] as LoggingLevel | undefined);
    if (threshold === undefined || LEVELS.indexOf(level) < LEVELS.indexOf(threshold)) return;
    await extra.mcpReq.notify({ method: "notifications/message", params: { level, logger: "conformance-fixture", data } });
  };

  // --- tools
  server.registerTool("test_simple_text", { description: "Returns simple text content" }, async () => ({
    content: [{ type: "text", text: "This is a simple text response for testing." }],
  }));

  server.registerTool("test_image_content", { description: "Returns image content (a 1x1 PNG)" }, async () => ({
    content: [{ type: "image", data: PNG_1X1, mimeType: "image/png" }],
  }));

  server.registerTool("test_audio_content", { description: "Returns audio content (a short silent WAV)" }, async () => ({
    content: [{ type: "audio", data: WAV_SILENCE, mimeType: "audio/wav" }],
  }));

  server.registerTool("test_embedded_resource", { description: "Returns an embedded resource" }, async () => ({
    content: [
      {
        type: "resource",
        resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." },
      },
    ],
  }));

  server.registerTool("test_multiple_content_types", { description: "Returns text, image and resource content" }, async () => ({
    content: [
      { type: "text", text: "Multiple content types test:" },
      { type: "image", data: PNG_1X1, mimeType: "image/png" },
      {
        type: "resource",
        resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: JSON.stringify({ test: "data", value: 123 }) },
      },
    ],
  }));

  server.registerTool("test_tool_with_logging", { description: "Sends three log notifications while it runs" }, async (extra) => {
    await log(extra, "info", "Tool execution started");
    await sleep(50);
    await log(extra, "info", "Tool processing data");
    await sleep(50);
    await log(extra, "info", "Tool execution completed");
    return { content: [{ type: "text", text: "Tool with logging executed successfully" }] };
  });

  server.registerTool("test_error_handling", { description: "Always fails" }, async () => {
    // HMCPServer reports a thrown tool error as an `isError` result with the fixed text "Tool execution failed"
    // (the exception's message is never echoed: it may hold PHI). The scenario accepts any error text.
    throw new Error("This tool intentionally returns an error for testing");
  });

  server.registerTool("test_tool_with_progress", { description: "Reports progress 0, 50, 100 of 100" }, async (extra) => {
    const ctx = hmcpContext(extra);
    for (const done of [0, 50, 100]) {
      await ctx.progress(done, 100, `Completed step ${done} of 100`);
      if (done < 100) await sleep(50);
    }
    return { content: [{ type: "text", text: "Tool with progress executed successfully" }] };
  });

  server.registerTool(
    "test_sampling",
    { description: "Asks the caller's model (sampling/createMessage back to the client)", inputSchema: z.object({ prompt: z.string() }) },
    async ({ prompt }, ctx) => {
      const result = await hmcpContext(ctx).sample({
        messages: [{ role: "user", content: { type: "text", text: prompt } }],
        maxTokens: 100,
      });
      const text = result.content && !Array.isArray(result.content) && result.content.type === "text" ? result.content.text : JSON.stringify(result.content);
      return { content: [{ type: "text", text: `LLM response: ${text}` }] };
    },
  );

  server.registerTool(
    "test_elicitation",
    { description: "Asks the caller's human (elicitation/create back to the client)", inputSchema: z.object({ message: z.string() }) },
    async ({ message }, ctx) => {
      const result = await hmcpContext(ctx).elicit({
        message,
        requestedSchema: {
          type: "object",
          properties: {
            username: { type: "string", description: "User's response" },
            email: { type: "string", description: "User's email address" },
          },
          required: ["username", "email"],
        },
      });
      return { content: [{ type: "text", text: `User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}` }] };
    },
  );

  server.registerTool("test_elicitation_sep1034_defaults", { description: "Elicitation with defaults for every primitive type (SEP-1034)" }, async (extra) => {
    const result = await hmcpContext(extra).elicit({
      message: "Please review and update the form fields with defaults",
      requestedSchema: {
        type: "object",
        properties: {
          name: { type: "string", description: "User name", default: "John Doe" },
          age: { type: "integer", description: "User age", default: 30 },
          score: { type: "number", description: "User score", default: 95.5 },
          status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
          verified: { type: "boolean", description: "Verification status", default: true },
        },
        required: [],
      },
    });
    return { content: [{ type: "text", text: `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}` }] };
  });

  server.registerTool("test_elicitation_sep1330_enums", { description: "Elicitation with the five enum schema variants (SEP-1330)" }, async (extra) => {
    const result = await hmcpContext(extra).elicit({
      message: "Please select options from the enum fields",
      requestedSchema: {
        type: "object",
        properties: {
          untitledSingle: { type: "string", description: "Untitled single-select", enum: ["option1", "option2", "option3"] },
          titledSingle: {
            type: "string",
            description: "Titled single-select",
            oneOf: [
              { const: "value1", title: "First Option" },
              { const: "value2", title: "Second Option" },
              { const: "value3", title: "Third Option" },
            ],
          },
          legacyEnum: {
            type: "string",
            description: "Legacy titled enum (deprecated enumNames)",
            enum: ["opt1", "opt2", "opt3"],
            enumNames: ["Option One", "Option Two", "Option Three"],
          },
          untitledMulti: {
            type: "array",
            description: "Untitled multi-select",
            items: { type: "string", enum: ["option1", "option2", "option3"] },
          },
          titledMulti: {
            type: "array",
            description: "Titled multi-select",
            items: {
              anyOf: [
                { const: "value1", title: "First Choice" },
                { const: "value2", title: "Second Choice" },
                { const: "value3", title: "Third Choice" },
              ],
            },
          },
        },
        required: [],
      },
    });
    return { content: [{ type: "text", text: `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}` }] };
  });

  // JSON Schema 2020-12 keyword preservation (SEP-1613): the SDK renders zod as draft 2020-12 (`$schema`), a schema
  // with a registry id as a `$defs` entry, and a strict object as `additionalProperties: false`.
  server.registerTool(
    "json_schema_2020_12_tool",
    { description: "Tool with JSON Schema 2020-12 features", inputSchema: JSON_SCHEMA_2020_12_INPUT },
    async () => ({ content: [{ type: "text", text: "JSON Schema 2020-12 tool called" }] }),
  );

  // SSE polling (SEP-1699): closes the request's SSE stream mid-call when the transport allows it (event store on,
  // client protocol version >= 2025-11-25), so the client must reconnect with Last-Event-ID to get the result.
  server.registerTool("test_reconnection", { description: "Closes its SSE stream mid-call to test resumption" }, async (extra) => {
    await sleep(50);
    (extra as { closeSSEStream?: () => void }).closeSSEStream?.();
    await sleep(100);
    return { content: [{ type: "text", text: "Reconnection test completed" }] };
  });

  // --- MCP 2026-07-28 multi round-trip requests (SEP-2322, suite scenarios input-required-result-*). Written with HMCP's
  // own API (`hmcpContext(extra).elicit / .sample`: one question per round, keyed "elicitation-<n>" / "sampling-<n>",
  // the flow sealed in requestState by HMCP) wherever a scenario fits it; with the SDK's `inputRequired()` where HMCP's
  // push API cannot express what the scenario asks (a fixed key, several requests in one round, roots/list, an answer
  // without a requestState). On the 2025 era ctx.elicit / ctx.sample are requests sent back to the client and
  // `inputRequired()` goes through the SDK's legacy shim (neither is exercised there: the 2025 suite calls none of these).

  // SDK API: the scenarios (basic-elicitation, result-type, missing-input-response, ignore-extra-params,
  // validate-input) need the input key "user_name", and ignore-extra-params sends the answer with no requestState at
  // all (HMCP's answers are bound to its sealed state, so HMCP's ctx.elicit would ask again there).
  server.registerTool("test_input_required_result_elicitation", { description: "Asks the caller's name (input key user_name)" }, async (extra) => {
    const answer = inputResponse(extra.mcpReq.inputResponses, "user_name");
    if (answer.kind === "elicit" && answer.action === "accept" && typeof answer.content?.["name"] === "string") {
      return { content: [{ type: "text", text: `Hello, ${answer.content["name"]}!` }] };
    }
    if (answer.kind === "elicit" && answer.action !== "accept") return { content: [{ type: "text", text: `No name given (${answer.action})` }] };
    // no answer, another key, or not an ElicitResult: ask (again)
    return inputRequired({ inputRequests: { user_name: inputRequired.elicit(askString("What is your name?", "name")) } });
  });

  // HMCP API: any input key is accepted.
  server.registerTool("test_input_required_result_sampling", { description: "Asks the caller's model a question" }, async (extra) => {
    const result = await hmcpContext(extra).sample({
      messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }],
      maxTokens: 100,
    });
    return { content: [{ type: "text", text: `LLM response: ${textOf(result.content)}` }] };
  });

  // SDK API: HMCP's context asks elicitation and sampling only, not roots/list (deprecated in 2026-07-28, SEP-2577).
  server.registerTool("test_input_required_result_list_roots", { description: "Asks the caller's roots (input key client_roots)" }, async (extra) => {
    const answer = inputResponse(extra.mcpReq.inputResponses, "client_roots");
    if (answer.kind === "roots") return { content: [{ type: "text", text: `Roots: ${answer.roots.map((r) => r.uri).join(", ") || "(none)"}` }] };
    return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
  });

  // HMCP API: the requestState is HMCP's sealed JWE; a retry gets here only once HMCP opened and checked it.
  server.registerTool("test_input_required_result_request_state", { description: "Asks a confirmation; the retry's requestState is verified" }, async (extra) => {
    const answer = await hmcpContext(extra).elicit(askConfirmation("Please confirm"));
    return { content: [{ type: "text", text: `state-ok: action=${answer.action}, ok=${String(answer.content?.["ok"])}` }] };
  });

  // SDK API: three input requests in one round (HMCP asks one question per round) and a requestState of the handler's
  // own. Note: HMCP's pipeline opens every requestState of a modern tools/call as its own sealed state, so the retry
  // is refused (-32602 request_state_invalid) before this handler runs (see baseline-2026-07-28.yml).
  server.registerTool("test_input_required_result_multiple_inputs", { description: "Asks a name, a greeting and the roots in one round" }, async (extra) => {
    const responses = extra.mcpReq.inputResponses;
    const name = inputResponse(responses, "user_name");
    const greeting = inputResponse(responses, "greeting");
    const roots = inputResponse(responses, "client_roots");
    if (name.kind === "elicit" && greeting.kind === "sampling" && roots.kind === "roots") {
      const who = name.action === "accept" ? String(name.content?.["name"]) : `(${name.action})`;
      return { content: [{ type: "text", text: `name=${who}, greeting=${textOf(greeting.result.content)}, roots=${roots.roots.length}` }] };
    }
    return inputRequired({
      inputRequests: {
        user_name: inputRequired.elicit(askString("What is your name?", "name")),
        greeting: inputRequired.createMessage({ messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }], maxTokens: 50 }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: "multiple-inputs-round-1",
    });
  });

  // HMCP API: two questions, two rounds, a new sealed requestState each.
  server.registerTool("test_input_required_result_multi_round", { description: "Asks a name, then a favourite colour" }, async (extra) => {
    const ctx = hmcpContext(extra);
    const name = await ctx.elicit(askString("Step 1: What is your name?", "name"));
    const color = await ctx.elicit(askString("Step 2: What is your favorite color?", "color"));
    return { content: [{ type: "text", text: `name=${String(name.content?.["name"])}, color=${String(color.content?.["color"])}` }] };
  });

  // HMCP API: a tampered requestState fails its AEAD check (-32602, reason request_state_invalid).
  server.registerTool("test_input_required_result_tampered_state", { description: "Asks a confirmation; a tampered requestState is refused" }, async (extra) => {
    const answer = await hmcpContext(extra).elicit(askConfirmation("Please confirm"));
    return { content: [{ type: "text", text: `confirmed: ${answer.action}` }] };
  });

  // HMCP API: asks only what the client declared (the request's `_meta` envelope on 2026-07-28, initialize on 2025).
  server.registerTool("test_input_required_result_capabilities", { description: "Asks by elicitation if declared, else by sampling" }, async (extra) => {
    const ctx = hmcpContext(extra);
    const envelope = extra.mcpReq.envelope as Record<string, unknown> | undefined;
    const declared = (envelope?.[CLIENT_CAPABILITIES_META_KEY] ?? server.server.getClientCapabilities()) as ClientCapabilities | undefined;
    if (declared?.elicitation) {
      const answer = await ctx.elicit(askString("What is your name?", "name"));
      return { content: [{ type: "text", text: `elicitation: ${answer.action}` }] };
    }
    const answer = await ctx.sample({ messages: [{ role: "user", content: { type: "text", text: "What is your name?" } }], maxTokens: 50 });
    return { content: [{ type: "text", text: `sampling: ${textOf(answer.content)}` }] };
  });

  // --- MCP 2026-07-28 stateless diagnostics (SEP-2575, suite scenario server-stateless)

  // HMCP API: needs the caller's model; the scenario calls it with no client capabilities and expects -32021.
  server.registerTool("test_missing_capability", { description: "Needs the sampling capability" }, async (extra) => {
    const result = await hmcpContext(extra).sample({ messages: [{ role: "user", content: { type: "text", text: "ping" } }], maxTokens: 10 });
    return { content: [{ type: "text", text: textOf(result.content) }] };
  });

  // HMCP API: on 2026-07-28 the question leaves as an input-required result, never as a request on the response stream.
  server.registerTool("test_streaming_elicitation", { description: "Asks the caller mid-request" }, async (extra) => {
    const answer = await hmcpContext(extra).elicit(askString("What is your name?", "name"));
    return { content: [{ type: "text", text: `elicitation: ${answer.action}` }] };
  });

  server.registerTool("test_logging_tool", { description: "Logs at info (only under the request's logLevel on 2026-07-28)" }, async (extra) => {
    await log(extra, "info", "test_logging_tool ran");
    return { content: [{ type: "text", text: "Logging tool executed" }] };
  });

  // List mutations: each registers and then removes an entry on this server, which the SDK announces as
  // notifications/{tools,prompts}/list_changed on the instance's own transport.
  server.registerTool("test_trigger_tool_change", { description: "Changes the tool list" }, async () => {
    server.registerTool("test_transient_tool", { description: "Registered and removed by test_trigger_tool_change" }, async () => ({ content: [] })).remove();
    return { content: [{ type: "text", text: "tool list changed" }] };
  });

  server.registerTool("test_trigger_prompt_change", { description: "Changes the prompt list" }, async () => {
    server.registerPrompt("test_transient_prompt", { description: "Registered and removed by test_trigger_prompt_change" }, () => ({ messages: [] })).remove();
    return { content: [{ type: "text", text: "prompt list changed" }] };
  });

  // --- MCP tasks (extension io.modelcontextprotocol/tasks, SEP-2663; suite scenarios tasks-*). On 2026-07-28 a tool declaring
  // `execution.taskSupport` runs as a task for a request that declares the extension (HMCP creates the task when the call
  // arrives, before the handler runs); for any other request an "optional" tool runs inline and a "required" one is -32021.
  server.registerTool("greet", { description: "Says hello (synchronous)", inputSchema: z.object({ name: z.string() }) }, async ({ name }) => ({
    content: [{ type: "text", text: `Hello, ${name}!` }],
  }));

  // Sleeps `seconds` (0: at once); tasks/cancel aborts the run's signal, and the task is stored as cancelled.
  server.registerTool(
    "slow_compute",
    { description: "Sleeps `seconds`, then answers", inputSchema: z.object({ seconds: z.number().min(0).max(600), label: z.string().optional() }), execution: { taskSupport: "optional" } },
    async ({ seconds, label }, extra) => {
      await sleepUnlessAborted(seconds * 1000, extra.mcpReq.signal);
      return { content: [{ type: "text", text: `Computed${label === undefined ? "" : ` ${label}`} after ${seconds} s` }] };
    },
  );

  // A tool execution error (`isError: true`), after about a second: the task completes with it (not failed).
  server.registerTool("failing_job", { description: "Always reports a tool error (runs only as a task)", execution: { taskSupport: "required" } }, async (extra) => {
    await sleepUnlessAborted(1000, extra.mcpReq.signal);
    return { content: [{ type: "text", text: "The job failed" }], isError: true };
  });

  // A protocol error (a JSON-RPC error, not a tool result): the task fails with it inline.
  server.registerTool("protocol_error_job", { description: "Fails with a JSON-RPC error", execution: { taskSupport: "optional" } }, async () => {
    throw new ProtocolError(ProtocolErrorCode.InternalError, "protocol_error_job: the job's backend failed");
  });

  // HMCP API: one question; in a task it parks the task in input_required until tasks/update answers it.
  server.registerTool(
    "confirm_delete",
    { description: "Asks a confirmation, then 'deletes' the file", inputSchema: z.object({ filename: z.string() }), execution: { taskSupport: "optional" } },
    async ({ filename }, extra) => {
      const answer = await hmcpContext(extra).elicit({
        message: `Delete ${filename}?`,
        requestedSchema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] },
      });
      const confirmed = answer.action === "accept" && answer.content?.["confirm"] === true;
      return { content: [{ type: "text", text: confirmed ? `Deleted ${filename}` : `Kept ${filename} (${answer.action})` }] };
    },
  );

  // HMCP API: two questions asked at once (Promise.all).
  server.registerTool("multi_input", { description: "Asks two questions at once", execution: { taskSupport: "optional" } }, async (extra) => {
    const ctx = hmcpContext(extra);
    const [first, second] = await Promise.all([ctx.elicit(askString("First: what is your name?", "name")), ctx.elicit(askString("Second: what is your name?", "name"))]);
    return { content: [{ type: "text", text: `first=${String(first.content?.["name"] ?? first.action)}, second=${String(second.content?.["name"] ?? second.action)}` }] };
  });

  // HMCP API: asks the caller's name, then runs as a task. HMCP creates a task when the call arrives, so a client
  // declaring the extension gets a CreateTaskResult on the first round and the question through tasks/get (the
  // tasks-mrtr-composition scenario wants the question as an input-required round first: see README.md).
  server.registerTool("test_tool_with_task", { description: "Asks a name, then answers as a task", execution: { taskSupport: "required" } }, async (extra) => {
    const answer = await hmcpContext(extra).elicit(askString("What is your name?", "name"));
    return { content: [{ type: "text", text: `Hello, ${String(answer.content?.["name"] ?? answer.action)}!` }] };
  });

  // --- resources
  server.registerResource(
    "static-text",
    "test://static-text",
    { description: "A static text resource", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "This is the content of the static text resource." }] }),
  );

  server.registerResource(
    "static-binary",
    "test://static-binary",
    { description: "A static binary resource (a 1x1 PNG)", mimeType: "image/png" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG_1X1 }] }),
  );

  server.registerResource(
    "template-data",
    new ResourceTemplate("test://template/{id}/data", { list: undefined }),
    { description: "A resource template with an id parameter", mimeType: "application/json" },
    async (uri, { id }) => ({
      contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }) }],
    }),
  );

  server.registerResource(
    "watched-resource",
    "test://watched-resource",
    { description: "A resource clients may subscribe to", mimeType: "text/plain" },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "Watched resource content." }] }),
  );

  // resources/subscribe and resources/unsubscribe (McpServer has no high-level API for them).
  const subscriptions = new Set<string>();
  server.server.setRequestHandler('resources/subscribe', async (request) => {
    subscriptions.add(request.params.uri);
    return {};
  });
  server.server.setRequestHandler('resources/unsubscribe', async (request) => {
    subscriptions.delete(request.params.uri);
    return {};
  });

  // --- prompts (and completion/complete, through the completable argument)
  server.registerPrompt("test_simple_prompt", { description: "A prompt without arguments" }, () => ({
    messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
  }));

  server.registerPrompt(
    "test_prompt_with_arguments",
    {
      description: "A prompt with two arguments",
      argsSchema: z.object({
              arg1: completable(z.string().describe("First test argument"), (value) =>
                ["paris", "park", "party", "test", "testValue1"].filter((v) => v.startsWith(value)),
              ),
              arg2: z.string().describe("Second test argument"),
            }),
    },
    ({ arg1, arg2 }) => ({
      messages: [{ role: "user", content: { type: "text", text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
    }),
  );

  server.registerPrompt(
    "test_prompt_with_embedded_resource",
    { description: "A prompt embedding a resource", argsSchema: z.object({ resourceUri: z.string().describe("URI of the resource to embed") }) },
    ({ resourceUri }) => ({
      messages: [
        { role: "user", content: { type: "resource", resource: { uri: resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } } },
        { role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
      ],
    }),
  );

  server.registerPrompt("test_prompt_with_image", { description: "A prompt with image content" }, () => ({
    messages: [
      { role: "user", content: { type: "image", data: PNG_1X1, mimeType: "image/png" } },
      { role: "user", content: { type: "text", text: "Please analyze the image above." } },
    ],
  }));

  // HMCP API on prompts/get (SEP-2322 scenario input-required-result-non-tool-request).
  server.registerPrompt("test_input_required_result_prompt", { description: "Asks the caller for the prompt's context" }, async (extra) => {
    const answer = await hmcpContext(extra).elicit(askString("What context should the prompt use?", "context"));
    return { messages: [{ role: "user", content: { type: "text", text: `Prompt with context: ${String(answer.content?.["context"] ?? answer.action)}` } }] };
  });

  return server;
}

async function main(): Promise<void> {
  const portArg = process.argv.indexOf("--port");
  const port = portArg >= 0 ? Number(process.argv[portArg + 1]) : 0;
  // The tasks' store, as HMCP's default (PostgresTaskStore over an in-memory PGlite), but opened before the fixture
  // listens: PGlite takes seconds to start (about 16 s on 2 cores), longer than the suite waits for a tools/call.
  const taskStore = await PostgresTaskStore.open({ db: await PGlite.create() });
  const http = createHttpApp({ createServer: () => createConformanceServer(taskStore), bearer: false, agentName: "hmcp-conformance-fixture" });
  const listening = await listen(http, { host: "127.0.0.1", port });
  process.stdout.write(`${JSON.stringify({ url: new URL("/mcp", listening.url).href })}\n`);

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    listening.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`conformance fixture failed to start: ${String(error)}\n`);
    process.exit(1);
  });
}
