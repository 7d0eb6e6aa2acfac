/**
 * HMCPServer: an MCP server (the SDK's McpServer) whose every request runs through the HMCP pipeline, and which
 * answers client → server `sampling/createMessage` (HMCP's extension of MCP; see DESIGN.md §1).
 */
import { z } from "zod";
import { CreateMessageRequestParamsSchema, CreateMessageResultSchema } from "@modelcontextprotocol/core";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { InMemoryTransport as ClientInMemoryTransport } from "@modelcontextprotocol/client";
import { McpServer, InMemoryTransport, ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { Transport, CallToolResult, Icon, Implementation, JSONObject, JSONRPCRequest, RegisteredTool, ScopeChallengeHandler, ServerContext, InputRequiredResult, StandardSchemaWithJSON, ToolAnnotations, ToolCallback, ToolExecution } from "@modelcontextprotocol/server";
import { HMCPConfigError, HMCPError, HMCPErrorCode, HMCP_EXTENSION_ID, HMCP_VERSION, refuseUnknownOptions, SAMPLING_TOOL_NAME, type HMCPCapability, type TransportKind } from "../protocol/index.js";
import { parseServerOptions, type HMCPServerOptions } from "./options.js";
import { specParamsError } from "./spec-params.js";
import { PATIENT_META_KEY, RequestPipeline, type HandlerExtra, type InnerHandler } from "./pipeline.js";
import { hmcpContext, hmcpContextOrUndefined, type SamplingHandler } from "./context.js";
import { isInputRoundError, type InputRounds } from "./input-rounds.js";
import { declaresTasks, detailedTask, taskNotFound, taskOwner, taskRuntimeFor, tasksRequired, TASKS_EXTENSION_ID, RUN_ORIGIN, type RunOutcome, type TaskRun, type TaskRuntime } from "./tasks.js";
import type { StoredTask } from "./task-store.js";
import { legacyTasksCapability, registerLegacyTaskMethods } from "./tasks-legacy.js";
import { recordStdioRefusals } from "./stdio-refusals.js";

/** The key of HMCPServer's stdio mark (used by serveStdio only; not exported from the package entry). @internal */
export const STDIO_ENTRY: unique symbol = Symbol("hmcp.stdioEntry");
/** Internal: the HTTP app's shutdown of this server's agent's task runs (see {@link HMCPServer}'s `[STOP_TASK_RUNS]`). */
export const STOP_TASK_RUNS: unique symbol = Symbol("hmcp.stopTaskRuns");

/** Options of {@link HMCPServer.sampling}. */
export interface SamplingHandlerOptions {
  /** Scopes allowing a caller to use this handler (any-of). Default: `["hmcp:sample", "hmcp:access"]`. */
  requiredScopes?: string[];
  /**
   * Also expose the handler as the tool `sampling_createMessage` (`SAMPLING_TOOL_NAME`), for hosts that cannot send
   * `sampling/createMessage` (the MCP Inspector, most MCP hosts). Its input schema is `CreateMessageRequest` params, its
   * `structuredContent` the `CreateMessageResult` (and `content` the result's content), `isError` never set by HMCP: the
   * handler's exception is a JSON-RPC error, as on `sampling/createMessage` (internal error -32603, its message kept off
   * the wire; an `HMCPError` or protocol error as itself). It
   * runs the same handler with the same scopes (`requiredScopes`, checked instead of `tools/call`'s, over HTTP too),
   * guardrails (the arguments on input, the result on output) and one audit record (method `tools/call`); an
   * `infoNeeded` answer keeps its `stopReason` in `structuredContent`. `true` with the defaults, or the tool's
   * `title` / `description`. Default false: the server lists no tool of its own.
   */
  tool?: boolean | { title?: string; description?: string };
  /**
   * The sampling tool's task support on MCP 2026-07-28 (extension `io.modelcontextprotocol/tasks`): `"optional"` runs a
   * sampling call through the tool as a task for a client declaring the extension; `"required"` only so (-32021 to
   * others). Default: none (the tool answers synchronously). `sampling/createMessage` itself is never a task.
   */
  taskSupport?: "optional" | "required";
}

/**
 * The sampling tool's listed schemas: `CreateMessageRequest` params and `CreateMessageResult` in outline (the SDK's
 * own schemas hold parts JSON Schema cannot express; the arguments are checked against them in full when called).
 */
const SAMPLING_TOOL_INPUT = z.looseObject({
  messages: z.array(z.looseObject({ role: z.enum(["user", "assistant"]), content: z.union([z.looseObject({ type: z.string() }), z.array(z.looseObject({ type: z.string() }))]) })),
  maxTokens: z.number().int().positive(),
  systemPrompt: z.string().optional(),
  temperature: z.number().optional(),
  stopSequences: z.array(z.string()).optional(),
  includeContext: z.enum(["none", "thisServer", "allServers"]).optional(),
  modelPreferences: z.looseObject({}).optional(),
  metadata: z.looseObject({}).optional(),
});
const SAMPLING_TOOL_OUTPUT = z.looseObject({
  role: z.enum(["user", "assistant"]),
  model: z.string(),
  content: z.union([z.looseObject({ type: z.string() }), z.array(z.looseObject({ type: z.string() }))]),
  stopReason: z.string().optional(),
});

/**
 * `schema` with its JSON Schema conversions computed once and kept: the SDK converts a registered tool's schemas per
 * server instance (for `tools/list`, the result projection and the 2026-07-28 header checks), and on MCP 2026-07-28
 * createHttpApp builds a server per request, where zod's conversion of the sampling tool's two schemas cost about a
 * tenth of the request's CPU (bench/profile.ts full-modern). Validation is the schema's own.
 */
function withKeptJsonSchema<S extends StandardSchemaWithJSON>(schema: S): S {
  const std = schema["~standard"];
  const kept = new Map<string, Record<string, unknown>>();
  const convert = (io: "input" | "output") => (options: Parameters<typeof std.jsonSchema.input>[0]) => {
    const key = `${io}\0${JSON.stringify(options)}`;
    let json = kept.get(key);
    if (json === undefined) kept.set(key, (json = std.jsonSchema[io](options)));
    return json;
  };
  return { "~standard": { ...std, validate: std.validate.bind(std), jsonSchema: { input: convert("input"), output: convert("output") } } } as unknown as S;
}
/**
 * The sampling tool's arguments as CreateMessageRequest params in full, by the arguments object the SDK validated: the
 * full check runs once, in the input schema's validate (below), and the tool callback reads its result here instead of
 * parsing the same arguments again (a miss, e.g. a task run handed other arguments, parses them as before).
 */
const SAMPLING_ARGS_PARSED = new WeakMap<object, z.infer<typeof CreateMessageRequestParamsSchema>>();
/** Results of the sampling handler that passed CreateMessageResultSchema in full (#runSampling), not changed since. */
const SAMPLING_RESULTS_CHECKED = new WeakSet<object>();

/**
 * The input outline's schema, validated as one pass where it can be: the arguments are parsed as CreateMessageRequest
 * params in full first (the check the tool callback needs), and when that passes with a positive maxTokens they pass
 * the outline too (everything the full schema accepts, the outline accepts but maxTokens <= 0), so the outline's own
 * parse is skipped and the arguments go to the callback as sent, with the full parse kept for it. Otherwise the
 * outline's validate decides, as before: its issues (the SDK's error text) or its value (the callback then refuses
 * what the full check does not accept).
 */
function samplingInputSchema(): typeof SAMPLING_TOOL_INPUT {
  const kept = withKeptJsonSchema(SAMPLING_TOOL_INPUT);
  const std = kept["~standard"];
  const outline = std.validate;
  const validate = (value: unknown) => {
    if (typeof value === "object" && value !== null) {
      const full = CreateMessageRequestParamsSchema.safeParse(value);
      if (full.success && full.data.maxTokens > 0) {
        SAMPLING_ARGS_PARSED.set(value, full.data);
        return { value };
      }
    }
    return outline(value);
  };
  return { "~standard": { ...std, validate } } as unknown as typeof SAMPLING_TOOL_INPUT;
}

/**
 * The output outline's schema: a result #runSampling has just parsed with CreateMessageResultSchema in full passes
 * without a second parse (the full schema accepts only what the outline accepts); anything else is validated as before.
 */
function samplingOutputSchema(): typeof SAMPLING_TOOL_OUTPUT {
  const kept = withKeptJsonSchema(SAMPLING_TOOL_OUTPUT);
  const std = kept["~standard"];
  const outline = std.validate;
  const validate = (value: unknown) => (typeof value === "object" && value !== null && SAMPLING_RESULTS_CHECKED.has(value) ? { value } : outline(value));
  return { "~standard": { ...std, validate } } as unknown as typeof SAMPLING_TOOL_OUTPUT;
}
const SAMPLING_TOOL_INPUT_SCHEMA = samplingInputSchema();
const SAMPLING_TOOL_OUTPUT_SCHEMA = samplingOutputSchema();
/** What the SDK's `x-mcp-header` scan gets for the sampling tool: its schema declares no header (see toolInputSchemaJson). */
const NO_HEADER_DECLARATIONS: Readonly<Record<string, unknown>> = Object.freeze({ type: "object" });

const SAMPLING_OPTIONS: ReadonlySet<string> = new Set<keyof SamplingHandlerOptions>(["requiredScopes", "tool", "taskSupport"]);

/** `tasks/get` and `tasks/cancel` params (SEP-2663), and `tasks/update`'s. */
const TASK_ID_PARAMS = z.looseObject({ taskId: z.string().min(1).max(256) });
// the SDK lifts `inputResponses` out of params (extra.mcpReq.inputResponses) before any handler
const TASK_UPDATE_PARAMS = z.looseObject({ taskId: z.string().min(1).max(256) });

/** What HMCPServer reads of the SDK's registered tools (McpServer `_registeredTools`, SDK 2.x). */
interface SdkRegisteredTool {
  enabled: boolean;
  execution?: { taskSupport?: string };
  annotations?: { idempotentHint?: boolean };
}
/** McpServer's tools/call steps (SDK 2.x), which a task's run takes without a JSON-RPC request around it. */
interface SdkToolCall {
  _registeredTools: Record<string, SdkRegisteredTool>;
  validateToolInput(tool: SdkRegisteredTool, args: unknown, name: string): Promise<unknown>;
  executeToolHandler(tool: SdkRegisteredTool, args: unknown, ctx: unknown): Promise<CallToolResult>;
  validateToolOutput(tool: SdkRegisteredTool, result: unknown, name: string): Promise<void>;
  createToolError(message: string): CallToolResult;
}
const SAMPLING_TOOL_OPTIONS: ReadonlySet<string> = new Set(["title", "description"]);

type RequestHandlerMap = Map<string, InnerHandler>;

/** `registerTool`'s config as HMCPServer takes it: the SDK's, and the tool's `execution` (MCP `Tool.execution`). */
export type HMCPToolConfig<I, O> = {
  title?: string;
  description?: string;
  inputSchema?: I;
  outputSchema?: O;
  annotations?: ToolAnnotations;
  icons?: Icon[];
  scopeChallenge?: ScopeChallengeHandler;
  _meta?: Record<string, unknown>;
  /**
   * `taskSupport`: `"optional"` runs the tool as an MCP task for a 2026-07-28 client that declares the extension
   * `io.modelcontextprotocol/tasks` and for a 2025-11-25 `tools/call` with the `task` param; `"required"` only so
   * (-32021 on 2026-07-28, -32601 on 2025-11-25), `"forbidden"` (the default) never. The SDK v2 leaves this out of
   * `registerTool`; HMCP keeps it (and lists it on 2025-11-25). Register such tools before `connect`: the 2025-11-25
   * `tasks` capability is decided there.
   */
  execution?: ToolExecution;
};

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- retypes registerTool only (see below)
export interface HMCPServer {
  /**
   * Registers a tool (McpServer's `registerTool`), with its `execution.taskSupport` kept: see {@link HMCPToolConfig}.
   * Its callback's exception reaches the client as "Tool execution failed", never its message (ProtocolErrors excepted).
   */
  registerTool<OutputArgs extends StandardSchemaWithJSON, InputArgs extends StandardSchemaWithJSON | undefined = undefined>(
    name: string,
    config: HMCPToolConfig<InputArgs, OutputArgs>,
    cb: ToolCallback<InputArgs>,
  ): RegisteredTool;
  /** @deprecated McpServer's raw-shape form (wrap the shape with `z.object({...})`). */
  registerTool<InputArgs extends Record<string, z.ZodType>, OutputArgs extends Record<string, z.ZodType> | StandardSchemaWithJSON | undefined = undefined>(
    name: string,
    config: HMCPToolConfig<InputArgs, OutputArgs>,
    cb: (args: z.infer<z.ZodObject<InputArgs>>, ctx: ServerContext) => CallToolResult | InputRequiredResult | Promise<CallToolResult | InputRequiredResult>,
  ): RegisteredTool;
}

/**
 * An HMCP agent server.
 *
 * ```ts
 * const server = new HMCPServer({ name: "emr-writeback", version: "1.0.0" }, { guardrails: defaultGuardrails() });
 * server.sampling(async (params, ctx) => ({ content: { type: "text", text: "done" }, stopReason: "endTurn" }));
 * ```
 *
 * Every request except `initialize` and `ping` runs through one request pipeline: scope and patient-context
 * checks, the guardrail input stage, the handler, the output stage, and one audit record per outcome. Errors leave
 * as JSON-RPC errors with the codes of {@link HMCPErrorCode}; unexpected exceptions become `-32603 Internal error`
 * without their message.
 *
 * @throws HMCPConfigError at construction when an option is invalid or unknown (naming the key).
 */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the interface above only retypes registerTool, which the class re-implements (#sanitizeToolErrors)
export class HMCPServer extends McpServer {
  /** @internal The request pipeline (the HTTP app and stdio serving read its checks and audit through it). */
  readonly pipeline: RequestPipeline;
  readonly #info: Implementation;
  /** Who this server's task runs are started for (set by the HTTP app that built it; see [STOP_TASK_RUNS]). */
  #runOrigin: object | undefined;
  /** This server's task run, naming its origin (TaskRuntime.stopRuns). */
  readonly #run: TaskRun = Object.assign((task: StoredTask, signal: AbortSignal) => this.#runTask(task, signal), { [RUN_ORIGIN]: () => this.#runOrigin });
  #samplingHandler: SamplingHandler | undefined;
  #samplingScopes: string[] | undefined;
  #samplingTool = false;
  #samplingTaskSupport: "optional" | "required" | undefined;
  /** The tasks extension's options (`false`: off). */
  readonly #taskOptions: HMCPServerOptions["tasks"];
  /** Serves MCP 2026-07-28 requests (set by createHttpApp for the modern era): see {@link serveModernEra}. */
  #modern = false;
  /** Advertises MCP 2025-11-25 tasks on the legacy era (set on connect): see tasks-legacy.ts. */
  #legacyTasks = false;
  /** The tasks extension's methods are registered (on the first connect that advertises the extension). */
  #taskMethods = false;
  /** The next connect comes from `serveStdio` (the SDK's per-connection stdio channel): a local caller. */
  #stdioEntry = false;
  #transportKind: TransportKind = "memory";
  /** Connected to a transport with no remote caller (stdio, the SDK's in-memory pair): `auth.localPrincipal` applies. */
  #localCaller = false;

  constructor(serverInfo: Implementation, options: HMCPServerOptions = {}) {
    const opts = parseServerOptions(options);
    super(serverInfo, {
      capabilities: { ...(opts.capabilities ?? {}) },
      ...(opts.instructions !== undefined && { instructions: opts.instructions }),
    });
    this.#info = serverInfo;
    this.#taskOptions = opts.tasks;
    this.pipeline = new RequestPipeline(opts, {
      agentName: serverInfo.name,
      transport: () => this.#transportKind,
      localCaller: () => this.#localCaller,
      clientCapabilities: () => this.server.getClientCapabilities(),
      methodScopes: (method) => (method === "sampling/createMessage" ? this.#samplingScopes : undefined),
      samplingTool: () => this.#samplingTool,
      tasks: () => {
        if (this.#taskOptions === false || !(this.#modern || this.#legacyTasks)) return undefined;
        return { era: this.#modern ? "modern" : "legacy", runtime: this.#tasks(), support: (name) => this.#taskSupport(name) };
      },
      runTask: this.#run,
    });
    this.#interceptRequestHandlers();
    this.#sanitizeToolErrors();
  }

  /**
   * Registers the client → server sampling handler. Call once, before `connect`.
   * @throws Error when a handler is already registered or the server is connected; HMCPConfigError when `handler`
   *   is not a function, or `options` holds an unknown key (naming the closest known one) or `requiredScopes` is not a
   *   non-empty list of scope strings.
   */
  sampling(handler: SamplingHandler, options: SamplingHandlerOptions = {}): this {
    if (typeof handler !== "function") throw new HMCPConfigError("HMCPServer.sampling: the handler must be a function", "handler");
    refuseUnknownOptions("HMCPServer.sampling options", options, SAMPLING_OPTIONS);
    const scopes = options.requiredScopes as unknown;
    if (scopes !== undefined && !(Array.isArray(scopes) && scopes.length > 0 && scopes.every((x) => typeof x === "string" && x !== ""))) {
      throw new HMCPConfigError("HMCPServer.sampling options: invalid 'requiredScopes': expected a non-empty list of scopes (any-of)", "requiredScopes");
    }
    const tool = options.tool as unknown;
    if (tool !== undefined && typeof tool !== "boolean") {
      if (typeof tool !== "object" || tool === null) throw new HMCPConfigError("HMCPServer.sampling options: invalid 'tool': expected true, false or { title, description }", "tool");
      refuseUnknownOptions("HMCPServer.sampling options", tool, SAMPLING_TOOL_OPTIONS, "tool");
    }
    if (this.#samplingHandler) throw new Error("HMCPServer.sampling: a sampling handler is already registered");
    if (this.isConnected()) throw new Error("HMCPServer.sampling: register the handler before connect()");
    if (options.taskSupport !== undefined && options.taskSupport !== "optional" && options.taskSupport !== "required") {
      throw new HMCPConfigError('HMCPServer.sampling options: invalid \'taskSupport\': expected "optional" or "required"', "taskSupport");
    }
    this.#samplingHandler = handler;
    this.#samplingScopes = options.requiredScopes;
    this.#samplingTaskSupport = options.taskSupport;
    if (options.tool) this.#registerSamplingTool(options.tool === true ? {} : options.tool);
    return this;
  }

  /**
   * Prepares this instance to serve MCP 2026-07-28 requests (per request, no session; createHttpApp calls it on the
   * instance it builds for a modern-era request, before connecting it). There, servers send no requests of their own
   * and `sampling/createMessage` from the client is refused with -32601, so a sampling handler is reached as the
   * sampling tool (`sampling_createMessage`, registered here when `sampling(handler)` did not ask for it), and the HMCP
   * capability is advertised in `capabilities.extensions["dev.hmcp/hmcp"]` (as well as `experimental.hmcp`).
   * @internal
   */
  serveModernEra(): this {
    if (this.isConnected()) throw new Error("HMCPServer.serveModernEra: call it before connect()");
    this.#modern = true;
    if (this.#samplingHandler && !this.#samplingTool) this.#registerSamplingTool({});
    // over HTTP an unknown method is the SDK's to refuse: MCP 2026-07-28 (transports, Streamable HTTP) answers it with
    // HTTP 404 and -32601, which the SDK's handler does only when no handler (the pipeline's fallback) took it, and
    // createHttpApp records it. Over stdio (no status to set, no HTTP layer to record it) the pipeline's fallback
    // keeps it: -32601 with one audit record (method_not_found), tasks/* on a server without tasks included.
    if (!this.#stdioEntry) (this.server as unknown as { fallbackRequestHandler?: unknown }).fallbackRequestHandler = undefined;
    return this;
  }

  /**
   * Marks the next connect of this instance as `serveStdio`'s (which connects it through the SDK's per-connection stdio
   * channel rather than a StdioServerTransport): stdio has no remote caller, so `auth.localPrincipal` applies. Keyed by
   * a symbol the package entry does not export, so only serveStdio can call it.
   */
  /**
   * Internal (HttpApp): marks the task runs this server starts as started by `origin` (the app), and returns its task
   * runtime and a function that waits up to `drainMs` for the runs `origin` started in this process, then aborts the
   * rest (TaskRuntime.stopRuns) and resolves with the number aborted; undefined without tasks.
   */
  [STOP_TASK_RUNS](origin: object): { runtime: object; stop: (drainMs: number) => Promise<number> } | undefined {
    if (this.#taskOptions === false) return undefined;
    this.#runOrigin = origin;
    const runtime = this.#tasks();
    return { runtime, stop: (drainMs) => runtime.stopRuns(origin, drainMs) };
  }

  [STDIO_ENTRY](): this {
    if (this.isConnected()) throw new Error("HMCPServer: serveStdio marks an instance before it connects");
    this.#stdioEntry = true;
    return this;
  }

  /** Registers the sampling tool: the sampling handler behind `tools/call` (see {@link SamplingHandlerOptions.tool}). */
  #registerSamplingTool(meta: { title?: string; description?: string }): void {
    this.registerTool(
      SAMPLING_TOOL_NAME,
      {
        title: meta.title ?? `Ask ${this.#info.name} (HMCP sampling)`,
        description:
          meta.description ??
          "HMCP sampling as a tool: the arguments are sampling/createMessage params (messages, maxTokens, systemPrompt ...), the result's structuredContent is the agent's CreateMessageResult.",
        inputSchema: SAMPLING_TOOL_INPUT_SCHEMA,
        outputSchema: SAMPLING_TOOL_OUTPUT_SCHEMA,
        ...(this.#samplingTaskSupport !== undefined && { execution: { taskSupport: this.#samplingTaskSupport } }),
      },
      async (args: unknown, ctx: object) => {
        // the listed schema is the outline a host can render; the full CreateMessageRequest params check is here
        const known = typeof args === "object" && args !== null ? SAMPLING_ARGS_PARSED.get(args) : undefined;
        const parsed = known !== undefined ? { success: true as const, data: known } : CreateMessageRequestParamsSchema.safeParse(args);
        if (!parsed.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Invalid arguments: expected sampling/createMessage params (messages, maxTokens)", { reason: "invalid_sampling_params" });
        // a patient declared inside the arguments is checked like one on sampling/createMessage's own _meta
        const declared = (parsed.data._meta as Record<string, unknown> | undefined)?.[PATIENT_META_KEY];
        if (declared !== undefined) hmcpContext(ctx).assertPatient(declared as string);
        const result = await this.#runSampling(parsed.data as Parameters<SamplingHandler>[0], ctx);
        const blocks = (Array.isArray(result.content) ? result.content : [result.content]) as CallToolResult["content"];
        // a tool result carries text, image and audio blocks; anything else (tool_use ...) is in structuredContent only
        const content = blocks.filter((b) => b.type === "text" || b.type === "image" || b.type === "audio");
        const out: CallToolResult = { content: content.length > 0 ? content : [{ type: "text", text: JSON.stringify(result.content) }], structuredContent: result };
        return out;
      },
    );
    // only once registered: a name already taken throws above, and must not get sampling's scopes
    this.#samplingTool = true;
  }

  /**
   * The SDK's 2026-07-28 entry reads a called tool's input JSON Schema only to scan it for `x-mcp-header` declarations
   * (SEP-2243, `Mcp-Param-*` headers), on every `tools/call` and for each per-request server (McpServer
   * `toolInputSchemaJson`, SDK 2.x, used for nothing else). The sampling tool's schema is HMCP's and declares no header,
   * so while the tool keeps it the scan gets an object schema with nothing to scan: the same outcome (no declaration, no
   * header check) without walking the outline's ~1 KB schema per request. Other tools get the SDK's answer.
   * @internal
   */
  override toolInputSchemaJson(name: string): Record<string, unknown> | undefined {
    if (name === SAMPLING_TOOL_NAME && this.#samplingTool) {
      const tool = this.#sdkTools()._registeredTools[name] as (SdkRegisteredTool & { inputSchema?: unknown }) | undefined;
      if (tool?.enabled && tool.inputSchema === SAMPLING_TOOL_INPUT_SCHEMA) return NO_HEADER_DECLARATIONS as Record<string, unknown>;
    }
    return super.toolInputSchemaJson(name);
  }

  /** The HMCP capability this server advertises (`capabilities.experimental.hmcp`). */
  get hmcpCapability(): HMCPCapability {
    const g = this.pipeline.guardrails;
    return {
      version: HMCP_VERSION,
      sampling: this.#samplingHandler !== undefined,
      ...(this.#samplingTool && { samplingTool: SAMPLING_TOOL_NAME }),
      ...(g && { guardrails: { input: g.names("input"), output: g.names("output") } }),
      audit: this.pipeline.auditing,
      ...(this.pipeline.authEnabled && { scopes: { sampling: [...this.pipeline.requiredScopes("sampling/createMessage")] } }),
    };
  }

  /** Connects to a transport; advertises the HMCP capability first. */
  override async connect(transport: Transport): Promise<void> {
    // An allowlist: stdio and the in-memory pair have no remote caller (`auth.localPrincipal` applies); any other
    // transport (Streamable HTTP, the deprecated SSE, a custom one) may carry one, and must then not run as the
    // server's local principal. (SDK v2's client and server packages each ship their own in-memory pair.)
    // servesStdio() marks the next connect only (the SDK's stdio channel): a later connect of the same instance to another
    // transport is judged by that transport
    const stdio = this.#stdioEntry || transport instanceof StdioServerTransport;
    // a StdioServerTransport connected directly (serveStdio watches its own, underneath the SDK's stdio entry)
    const refusals = !this.#stdioEntry && transport instanceof StdioServerTransport ? recordStdioRefusals(transport, this.pipeline) : undefined;
    this.#stdioEntry = false;
    const memory = transport instanceof InMemoryTransport || transport instanceof ClientInMemoryTransport;
    this.#transportKind = stdio ? "stdio" : memory ? "memory" : "http";
    this.#localCaller = stdio || memory;
    // registerCapabilities merges `experimental` one level deep, so other experimental capabilities are kept.
    const hmcp = this.hmcpCapability as JSONObject;
    // the tasks extension is advertised where tasks can be made: on 2026-07-28, by a server configured for them or with a
    // tool that declares task support
    const tasks = this.#modern && this.#taskOptions !== false && (this.#taskOptions !== undefined || this.#anyTaskTool());
    // on 2025-11-25, the revision's own tasks (capability `tasks`), for tools/call, when a tool declares task support
    this.#legacyTasks = !this.#modern && this.#taskOptions !== false && this.#anyTaskTool();
    const listable = this.pipeline.authEnabled;
    this.server.registerCapabilities({
      experimental: { hmcp },
      ...(this.#modern && { extensions: { [HMCP_EXTENSION_ID]: hmcp, ...(tasks && { [TASKS_EXTENSION_ID]: {} }) } }),
      // tasks/list only where callers can be told apart (2025-11-25, "Task Isolation and Access Control")
      ...(this.#legacyTasks && { tasks: legacyTasksCapability(listable) }),
    });
    if (this.#legacyTasks) {
      registerLegacyTaskMethods(
        (method, schemas, handler) => this.server.setRequestHandler(method as "tasks/get", schemas as never, handler as never),
        {
          agent: this.#info.name,
          runtime: () => this.#tasks(),
          run: this.#run,
          listable,
          guardAnswer: (extra, key, answer) => this.pipeline.guardAnswer(extra, key, answer),
        },
        hmcpContext,
      );
    }
    // tasks/get, tasks/update, tasks/cancel only where the extension is advertised: a per-request server without task
    // support registers none of them (no handlers to build per request); there they are unknown methods (-32601, HTTP
    // 404), save for a client not declaring the extension, which createHttpApp refuses with -32021 before any server
    // is built (modern-era.ts)
    if (tasks && !this.#taskMethods) this.#registerTaskMethods();
    // over stdio what the SDK refuses before any handler is recorded as it is answered (stdio-refusals.ts); tasks/get
    // and tasks/cancel, methods of an earlier revision that the tasks extension reuses, would be refused there as
    // unknown (-32601) unless a handler takes them; here the pipeline's unknown-method handler does, so each is
    // authenticated and gets the pipeline's audit record (method_not_found).
    // (tasks/update reaches the pipeline's fallback, kept on stdio: see serveModernEra.)
    else if (!tasks && this.#modern && stdio) this.#refuseTaskMethods();
    // the embedded store (PGlite) takes seconds to start: begun now, not on the first task
    if (tasks || this.#legacyTasks) void this.#tasks().store().catch(() => undefined);
    // sampling/createMessage always has a handler, so a server without one answers with a clear HMCP error
    // (and the request is audited) instead of "Method not found".
    this.server.setRequestHandler('sampling/createMessage', (request, ctx) => this.#onSampling(request.params, ctx));
    await super.connect(transport);
    refusals?.watchInbound();
  }

  async #onSampling(params: JSONRPCRequest["params"] & object, extra: HandlerExtra) {
    const handler = this.#samplingHandler;
    if (!handler) {
      throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "This server does not accept sampling requests", {
        reason: "sampling_not_supported",
      });
    }
    // MCP 2025-11-25 defines no task-augmented client → server sampling (its tasks are for tools/call, and for requests
    // a server sends): a `task` param here is ignored and the request served as a plain one ("Receivers that do not
    // declare the task capability for a request type MUST process requests of that type normally")
    const { task: _task, ...plain } = params as Record<string, unknown>;
    return this.#runSampling(plain as Parameters<SamplingHandler>[0], extra);
  }

  /** Runs the sampling handler (from `sampling/createMessage` or the sampling tool) and checks its result. */
  async #runSampling(params: Parameters<SamplingHandler>[0], extra: object) {
    const ctx = hmcpContext(extra);
    const out = await this.#samplingHandler!(params, ctx);
    const result = { role: "assistant" as const, model: this.#info.name, ...out };
    // A handler bug (malformed result) is an internal error (-32603), not the caller's fault: a plain Error (a zod error
    // would map to invalid params), whose message is not echoed
    const checked = CreateMessageResultSchema.safeParse(result);
    if (!checked.success) throw new Error(`sampling handler returned a malformed CreateMessageResult (at ${checked.error.issues[0]?.path.join(".") || "(root)"})`);
    const parsed = checked.data;
    // the sampling tool's output schema (its outline) then takes it without a second parse
    SAMPLING_RESULTS_CHECKED.add(parsed);
    return parsed;
  }

  /** The task runtime of this server's task store. */
  #tasks(): TaskRuntime {
    return taskRuntimeFor(this.#taskOptions === false ? undefined : this.#taskOptions);
  }

  #sdkTools(): SdkToolCall {
    return this as unknown as SdkToolCall;
  }

  /** A registered tool's declared task support and idempotence (undefined for an unknown or disabled tool). */
  #taskSupport(name: string): { taskSupport?: string; idempotent: boolean; validate: (args: unknown) => Promise<unknown> } | undefined {
    const tools = this.#sdkTools();
    const tool = Object.prototype.hasOwnProperty.call(tools._registeredTools, name) ? tools._registeredTools[name] : undefined;
    if (tool === undefined || !tool.enabled) return undefined;
    return {
      ...(tool.execution?.taskSupport !== undefined && { taskSupport: tool.execution.taskSupport }),
      idempotent: tool.annotations?.idempotentHint === true,
      validate: (args) => tools.validateToolInput(tool, args, name),
    };
  }

  #anyTaskTool(): boolean {
    return Object.values(this.#sdkTools()._registeredTools).some((t) => t.execution?.taskSupport === "optional" || t.execution?.taskSupport === "required");
  }

  /**
   * A `tools/call` without a JSON-RPC request around it (a task's run): McpServer's own steps (argument check, the
   * callback, the output check), a callback's exception an `isError` result as the SDK makes it, a protocol error left
   * to fail the task.
   */
  async #callTool(request: JSONRPCRequest, extra: object): Promise<CallToolResult> {
    const tools = this.#sdkTools();
    const name = String((request.params as { name?: unknown }).name);
    const tool = Object.prototype.hasOwnProperty.call(tools._registeredTools, name) ? tools._registeredTools[name] : undefined;
    if (tool === undefined || !tool.enabled) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
    try {
      const args = await tools.validateToolInput(tool, (request.params as { arguments?: unknown }).arguments, name);
      const result = await tools.executeToolHandler(tool, args, extra);
      await tools.validateToolOutput(tool, result, name);
      return result;
    } catch (error) {
      if (error instanceof ProtocolError) throw error;
      return tools.createToolError(error instanceof Error ? error.message : String(error));
    }
  }

  /** Runs a stored task once: its `tools/call` through the pipeline, as the principal that created it. */
  async #runTask(task: StoredTask, signal: AbortSignal): Promise<RunOutcome> {
    const runtime = this.#tasks();
    const p = task.principal ?? undefined;
    const request = { jsonrpc: "2.0" as const, id: task.requestId, method: "tools/call", params: task.params } as JSONRPCRequest;
    // the SDK context a tool callback gets in a task: the run's signal and the call's _meta; nothing to send on
    const extra = {
      sessionId: undefined,
      mcpReq: {
        id: task.requestId,
        method: "tools/call",
        _meta: task.params["_meta"],
        signal,
        inputResponses: undefined,
        requestState: () => undefined,
        notify: async () => undefined,
        send: async () => {
          throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "A task asks its client through ctx.elicit / ctx.sample (answered with tasks/update)", { reason: "not_supported_in_task" });
        },
      },
      ...(p !== undefined && { http: { authInfo: { token: "", clientId: p.clientId, scopes: p.scopes, extra: { principal: p } } } }),
    } as unknown as Parameters<InnerHandler>[1];
    const ctxOf = () => hmcpContextOrUndefined(extra) as (ReturnType<typeof hmcpContextOrUndefined> & { rounds?: InputRounds; onProgress?: (m: string) => void; patientsTouched: ReadonlySet<string> }) | undefined;
    let result: unknown;
    try {
      result = await this.pipeline.handle(request, extra, (req, ex) => {
        const ctx = ctxOf();
        if (ctx) ctx.onProgress = (message) => runtime.progress(task.taskId, message);
        return this.#callTool(req, ex);
      }, { taskRun: { task, runtime } });
    } catch (error) {
      if (signal.aborted) return { kind: "cancelled" };
      const e = error instanceof ProtocolError ? error : new ProtocolError(ProtocolErrorCode.InternalError, "Internal error");
      const journal = ctxOf()?.rounds?.entries ?? task.journal;
      return { kind: "failed", error: { code: e.code, message: e.message, ...(e.data !== undefined && { data: e.data }) }, journal };
    }
    if (signal.aborted) return { kind: "cancelled" };
    const rounds = ctxOf()?.rounds;
    const r = result as Record<string, unknown>;
    if (r["resultType"] === "input_required" && rounds !== undefined && rounds.questions.length > 0) {
      return { kind: "input_required", inputRequests: r["inputRequests"] as Record<string, unknown>, questions: rounds.questions, journal: rounds.entries, patients: [...(ctxOf()?.patientsTouched ?? [])] };
    }
    return { kind: "completed", result: r, journal: rounds?.entries ?? task.journal, patients: [...(ctxOf()?.patientsTouched ?? [])] };
  }

  /**
   * The tasks extension's methods (SEP-2663): `tasks/get`, `tasks/update`, `tasks/cancel`, each through the pipeline
   * (bearer, scopes, one audit record naming the task). A task is seen only by the principal and patient context that
   * created it: any other caller gets the answer an unknown id gets (-32602), recorded as denied.
   */
  #registerTaskMethods(): void {
    this.#taskMethods = true;
    const agent = this.#info.name;
    const lookup = async (taskId: string, extra: object, rerun: boolean) => {
      const ctx = hmcpContext(extra) as ReturnType<typeof hmcpContext> & { task?: { id: string; status?: string }; auditAs?: { outcome: "denied"; reason: string } };
      if (!declaresTasks((extra as { mcpReq: { envelope?: Record<string, unknown> } }).mcpReq.envelope)) throw tasksRequired();
      const found = await this.#tasks().read(taskId, taskOwner(agent, ctx.principal), rerun ? this.#run : undefined);
      if (found.denied) ctx.auditAs = { outcome: "denied", reason: "task_owner_mismatch" };
      if (found.task === undefined) throw taskNotFound(found.expired);
      ctx.task = { id: found.task.taskId, status: found.task.status };
      // the patients the task is about: a read of its result is a disclosure about them
      for (const patient of found.task.patients ?? []) (ctx.patientsTouched as Set<string>).add(patient);
      return { task: found.task, ctx };
    };
    this.server.setRequestHandler("tasks/get", { params: TASK_ID_PARAMS }, async (params, extra) => detailedTask((await lookup(params.taskId, extra, true)).task));
    this.server.setRequestHandler("tasks/update", { params: TASK_UPDATE_PARAMS }, async (params, extra) => {
      // SEP-2663: `inputResponses` is a required member of tasks/update (the SDK lifts it out of params: absent, it is
      // undefined here; a non-object arrives as {}, and is acknowledged as an update that answers nothing)
      const responses = (extra as { mcpReq: { inputResponses?: Record<string, unknown> } }).mcpReq.inputResponses;
      if (responses === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, "Invalid params for tasks/update: inputResponses is required");
      const { task, ctx } = await lookup(params.taskId, extra, false);
      const took = await this.#tasks().answer(task, responses, this.#run);
      (ctx as unknown as { interactions: Array<{ kind: string; outcome: string }> }).interactions.push(...took);
      return {};
    });
    this.server.setRequestHandler("tasks/cancel", { params: TASK_ID_PARAMS }, async (params, extra) => {
      const { task } = await lookup(params.taskId, extra, false);
      await this.#tasks().cancel(task);
      return {};
    });
  }

  /**
   * The SDK reports a tool callback's exception to the client as an `isError` result carrying the exception's
   * message, which may hold PHI. Callbacks registered with `registerTool` are wrapped: the exception is kept on the
   * request context (the pipeline audits it, and re-raises HMCP refusals as JSON-RPC errors) and the client sees
   * "Tool execution failed". ProtocolErrors keep their message (they are protocol errors, written for the caller).
   */
  #sanitizeToolErrors(): void {
    const register = this.registerTool.bind(this) as (...args: unknown[]) => unknown;
    (this as unknown as { registerTool: (...args: unknown[]) => unknown }).registerTool = (name, config, callback) => {
      const registered = register(name, config, async (...args: unknown[]) => {
        const extra = args[args.length - 1] as object;
        try {
          const result = await (callback as (...a: unknown[]) => unknown)(...args);
          // a question asked (MCP 2026-07-28 input round) ends the call with its input request, even if swallowed
          const rounds = (hmcpContextOrUndefined(extra) as { rounds?: InputRounds } | undefined)?.rounds;
          return rounds?.pending ? await rounds.inputRequiredResult() : result;
        } catch (error) {
          const ctx = hmcpContextOrUndefined(extra);
          const rounds = (ctx as { rounds?: InputRounds } | undefined)?.rounds;
          if (rounds?.pending && !isInputRoundError(error)) return rounds.inputRequiredResult();
          if (ctx) (ctx as unknown as { toolError: unknown }).toolError = error;
          if (error instanceof ProtocolError) throw error;
          throw new Error("Tool execution failed");
        }
      }) as { execution?: unknown };
      // SDK 2.x's registerTool drops `execution`; kept on the registered tool, which tools/list (2025-11-25) lists
      const execution = (config as { execution?: unknown } | undefined)?.execution;
      if (execution !== undefined) registered.execution = execution;
      // a task-capable tool registered after a 2026-07-28 connect (the extension was not advertised then): its tasks
      // can still be polled, updated and cancelled
      const support = (execution as { taskSupport?: unknown } | undefined)?.taskSupport;
      if (this.#modern && this.isConnected() && this.#taskOptions !== false && !this.#taskMethods && (support === "optional" || support === "required")) this.#registerTaskMethods();
      return registered;
    };
  }

  /**
   * Routes every registered request handler through the pipeline. The SDK keeps handlers in a per-instance map
   * (`Protocol._requestHandlers`, SDK 1.x and 2.x); wrapping the map's entries, rather than the handlers passed to
   * `setRequestHandler`, puts the pipeline before the SDK's own params parsing, so malformed requests are refused
   * by the pipeline (as `-32602`) and audited like any other outcome.
   */
  #interceptRequestHandlers(): void {
    const inner = this.server as unknown as {
      _requestHandlers?: RequestHandlerMap;
      setRequestHandler: (...args: unknown[]) => void;
      fallbackRequestHandler?: (request: JSONRPCRequest, extra: HandlerExtra) => Promise<unknown>;
    };
    const map = inner._requestHandlers;
    if (!(map instanceof Map)) {
      throw new Error("HMCPServer: unsupported @modelcontextprotocol/server version (no request handler map)");
    }
    const wrapped = new WeakSet<InnerHandler>();
    const wrap = (method: string) => {
      const h = map.get(method);
      if (!h || wrapped.has(h)) return;
      // SDK 2.x reports malformed params as a plain Error: tell them from a server fault (see spec-params.ts)
      const checked: InnerHandler = async (request, extra) => {
        try {
          return await h(request, extra);
        } catch (error) {
          if (error instanceof ProtocolError) throw error;
          throw specParamsError(request) ?? error;
        }
      };
      const w: InnerHandler = (request, extra) => this.pipeline.handle(request, extra, checked);
      wrapped.add(w);
      map.set(method, w);
    };
    for (const method of [...map.keys()]) wrap(method);
    const original = inner.setRequestHandler.bind(inner);
    inner.setRequestHandler = (...args: unknown[]) => {
      // Re-registering a method (e.g. sampling on reconnect) replaces the previous handler.
      const method = args[0];
      if (typeof method === "string") map.delete(method);
      original(...args);
      if (typeof method === "string") wrap(method);
    };
    // Unknown methods also pass the pipeline (authenticated, audited), then get JSON-RPC "Method not found".
    inner.fallbackRequestHandler = this.#unknownMethod;
  }

  /** The pipeline's handler of a method this server does not serve: authenticated, audited, then "Method not found". */
  readonly #unknownMethod = (request: JSONRPCRequest, extra: HandlerExtra): Promise<unknown> =>
    this.pipeline.handle(
      request,
      extra,
      async () => {
        throw new ProtocolError(ProtocolErrorCode.MethodNotFound, "Method not found");
      },
      { unknownMethod: true },
    );

  /**
   * tasks/get and tasks/cancel on a 2026-07-28 stdio connection of a server without tasks: answered by the pipeline's
   * unknown-method handler (-32601, one audit record), which the SDK reaches for these two only when a handler with
   * its own params schema is registered. A task-capable tool registered later replaces them ({@link #registerTaskMethods}).
   */
  #refuseTaskMethods(): void {
    const map = (this.server as unknown as { _requestHandlers: RequestHandlerMap })._requestHandlers;
    for (const method of ["tasks/get", "tasks/cancel"] as const) {
      this.server.setRequestHandler(method, { params: TASK_ID_PARAMS }, () => {
        throw new ProtocolError(ProtocolErrorCode.MethodNotFound, "Method not found");
      });
      map.set(method, this.#unknownMethod);
    }
  }
}
