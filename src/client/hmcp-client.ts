/**
 * HMCPClient: wraps the SDK's MCP `Client` to talk to HMCP agents. It sends client → server
 * `sampling/createMessage`, answers the sampling and elicitation requests a server sends back mid-request, and
 * attaches an OAuth access token from a token provider to every HTTP request.
 */
import { randomUUID } from "node:crypto";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import type { StdioServerParameters } from "@modelcontextprotocol/client/stdio";
import { Client, StreamableHTTPClientTransport, SdkErrorCode, SdkError, SdkHttpError, InsufficientScopeError, ProtocolError } from "@modelcontextprotocol/client";
import type { Transport, CallToolRequest, CallToolResult, CreateMessageResult, ElicitRequest, ElicitResult, Implementation, Progress, ReadResourceRequest, ReadResourceResult } from "@modelcontextprotocol/client";
import { CreateMessageResultSchema } from "@modelcontextprotocol/core";
import { z } from "zod";
import { HMCPConfigError, HMCPError, HMCPErrorCode, INTERNAL_ERROR, readHMCPCapability, refuseUnknownOptions, withRedactionsMeta, type CreateMessageParams, type HMCPCapability } from "../protocol/index.js";
import type { GuardrailRunner } from "../guardrails/types.js";
import { TokenRequestError, type TokenProvider } from "../auth/token-provider.js";
import { defaultGuardrails } from "../guardrails/policy.js";
import { guardrailBlockData } from "../guardrails/block-data.js";
import { releasedSignalFetch, type FetchFn } from "./released-fetch.js";

export type { CreateMessageParams };

/** Where to connect. */
export type ConnectTarget =
  | { type: "http"; url: string | URL; headers?: Record<string, string> }
  | ({ type: "stdio" } & StdioServerParameters)
  | { type: "transport"; transport: Transport };

/** Context given to the application's handlers for requests a server sends back. */
export interface BackRequestContext {
  signal: AbortSignal;
  /** Name of the server that asked (from its initialize result). */
  server: string | undefined;
}

export type ClientSamplingHandler = (params: CreateMessageParams, context: BackRequestContext) => Promise<CreateMessageResult> | CreateMessageResult;
export type ClientElicitationHandler = (params: ElicitRequest["params"], context: BackRequestContext) => Promise<ElicitResult> | ElicitResult;

/** Options of {@link HMCPClient}. */
export interface HMCPClientOptions {
  /**
   * Token provider for HTTP connections (e.g. `createClientCredentialsTokenProvider`); its token is sent as
   * `Authorization: Bearer` on every request.
   */
  tokenProvider?: TokenProvider;
  /**
   * Guardrails for the client side: the `input` stage checks what servers send this client (the sampling and
   * elicitation requests they send back, before the application's handler sees them, and the results of this
   * client's own `createMessage`, `callTool` and `readResource` calls, before they are returned); the `output` stage checks what the client answers
   * to those requests. The client's own requests are not checked here (the server's input stage checks them).
   * Default: `defaultGuardrails()` (guardrails/default.yaml); `false` turns them off.
   */
  guardrails?: GuardrailRunner | false;
  /**
   * The patient this client acts for (SMART launch context), if it is patient-bound: the client-side guardrails check
   * that what servers send back stays within it, and `createMessage` declares it (`_meta["hmcp/patient"]`) unless the
   * call names another.
   */
  patient?: string;
  /** Handler for server → client `sampling/createMessage`. Without one, such requests get `SamplingNotSupported`. */
  onSampling?: ClientSamplingHandler;
  /** Handler for server → client `elicitation/create`. Without one, every elicitation is declined. */
  onElicitation?: ClientElicitationHandler;
  /**
   * Which MCP protocol era to speak (the SDK's `versionNegotiation`): `"legacy"` (default) the 2025 `initialize`
   * handshake, as before; `"auto"` probes `server/discover` and speaks 2026-07-28 where the server does, else falls
   * back to the handshake; `"modern"` speaks 2026-07-28 only (connect fails against a 2025-only server). On the modern
   * era `createMessage` reaches the agent's sampling handler through its sampling tool (`sampling_createMessage`), and
   * a server's questions arrive as input-required rounds, which the SDK answers through `onSampling` / `onElicitation`
   * (and this client's guardrails) before retrying the call, so the same callbacks serve both eras; a call's
   * `onProgress` also receives the SDK's notice of each round it fulfils (`progress` = the round number, no `total`). On stdio, `"auto"` probes on a
   * short-lived second process first.
   */
  protocolEra?: "legacy" | "auto" | "modern";
}

/** Options of {@link HMCPClient.createMessage}. */
export interface CreateMessageOptions {
  /** Time without a response or progress before the request fails, ms. Default 60,000. */
  timeoutMs?: number;
  /** Hard limit regardless of progress, ms. Default: none. */
  maxTotalTimeoutMs?: number;
  signal?: AbortSignal;
  /** Receives `notifications/progress` for this request. */
  onProgress?: (progress: Progress) => void;
  /** Patient the request is about; sent as `_meta["hmcp/patient"]` for the server's patient-context check. */
  patient?: string;
}

/** The tasks extension's identifier (SEP-2663); the server side exports it as `TASKS_EXTENSION_ID` too. */
const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";
/** Where HMCPClient carries a `CreateTaskResult` past the SDK (which refuses `resultType: "task"`; see #acceptTasks). */
const TASK_CARRIER = "dev.hmcp/task";
const LOOSE = z.looseObject({});

/** A task as `tasks/get` reports it (SEP-2663 `DetailedTask`): the Task, and by status its input requests, result or error. */
export interface TaskState {
  taskId: string;
  status: "working" | "input_required" | "completed" | "failed" | "cancelled";
  statusMessage?: string;
  /** ISO 8601. */
  createdAt: string;
  lastUpdatedAt: string;
  /** Lifetime from creation, ms; null for unlimited. */
  ttlMs: number | null;
  /** Suggested polling interval, ms. */
  pollIntervalMs?: number;
  inputRequests?: Record<string, { method: string; params?: Record<string, unknown> }>;
  result?: CallToolResult;
  error?: { code: number; message: string; data?: unknown };
}

/** Options of {@link HMCPClient.waitForTask}. */
export interface WaitForTaskOptions {
  signal?: AbortSignal;
  /** Called with each state polled (status, statusMessage: the server's progress). */
  onStatus?: (task: TaskState) => void;
  /** Polling interval when the server suggests none, ms. Default 1,000; never below 20. */
  pollIntervalMs?: number;
}

/**
 * An HMCP client.
 *
 * ```ts
 * const client = new HMCPClient({ name: "orchestrator", version: "1.0.0" }, { onSampling: myModel });
 * await client.connect({ type: "http", url: "http://127.0.0.1:3001/mcp" });
 * const result = await client.ask("patient identifier for Adan Portillo born 1961-04-12");
 * ```
 */
export class HMCPClient {
  /** The underlying SDK client, for tools, resources and prompts. */
  readonly sdk: Client;
  readonly #options: HMCPClientOptions;
  /**
   * The guardrail decision cache's caller scope on this side: one random id per connection (a new one on every
   * `connect`), so no server can time what the client received from another server or another client.
   */
  #guardScope = randomUUID();
  /** The last `connect` target and transport, to start a new session when the server no longer knows ours. */
  #target: ConnectTarget | undefined;
  #transport: Transport | undefined;
  /** Bumped on every (re)connect; a reconnect in progress, shared by the requests that hit the lost session. */
  #generation = 0;
  #reconnecting: Promise<void> | undefined;
  /** Set by `close()`: no automatic reconnect after the application closed the client. */
  #closed = false;
  /** The server's tools' `execution.taskSupport` (legacy era), from `tools/list`, for the connection it was read on. */
  #toolTaskSupport: { generation: number; tools: Map<string, string | undefined> } | undefined;

  /**
   * @throws HMCPConfigError naming an unknown option (with the closest known name) or an option of the wrong kind
   *   (`tokenProvider` without `getToken`, a handler that is not a function, a `guardrails` that is not a runner)
   */
  constructor(clientInfo: Implementation, options: HMCPClientOptions = {}) {
    checkClientOptions(options);
    this.#options = { ...options };
    const era = options.protocolEra ?? "legacy";
    this.sdk = new Client(clientInfo, {
      // on MCP 2026-07-28 the client takes tasks (extension io.modelcontextprotocol/tasks): callTool waits them out
      capabilities: { sampling: {}, elicitation: { form: {} }, ...(era !== "legacy" && { extensions: { [TASKS_EXTENSION]: {} } }) },
      ...(era !== "legacy" && { versionNegotiation: { mode: era === "auto" ? ("auto" as const) : { pin: "2026-07-28" } } }),
    });
    this.#acceptTasks();
    this.sdk.setRequestHandler('sampling/createMessage', async (request, ctx) => {
      const handler = this.#options.onSampling;
      if (!handler) {
        throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "This client has no sampling handler", { reason: "sampling_not_supported" });
      }
      const params = await this.#guard("input", request.params, "sampling/createMessage", ctx.mcpReq.signal);
      const result = await handler(params, { signal: ctx.mcpReq.signal, server: this.sdk.getServerVersion()?.name });
      return this.#guard("output", result, "sampling/createMessage", ctx.mcpReq.signal);
    });
    this.sdk.setRequestHandler('elicitation/create', async (request, ctx) => {
      const handler = this.#options.onElicitation;
      if (!handler) return { action: "decline" } satisfies ElicitResult;
      const params = await this.#guard("input", request.params, "elicitation/create", ctx.mcpReq.signal);
      const result = await handler(params, { signal: ctx.mcpReq.signal, server: this.sdk.getServerVersion()?.name });
      return this.#guard("output", result, "elicitation/create", ctx.mcpReq.signal);
    });
  }

  /** Sets (or replaces) the handler for server → client sampling. */
  onSampling(handler: ClientSamplingHandler): this {
    this.#options.onSampling = handler;
    return this;
  }

  /** Sets (or replaces) the handler for server → client elicitation. */
  onElicitation(handler: ClientElicitationHandler): this {
    this.#options.onElicitation = handler;
    return this;
  }

  /**
   * Connects and runs the MCP initialize handshake.
   * - `{ type: "http", url }`: Streamable HTTP; the token provider's token goes on every request, and a 401 with
   *   `WWW-Authenticate` makes the client drop the token and retry once with a fresh one.
   *   When the server answers 404 to the session (it restarted, or ended the session), `createMessage` starts a new
   *   session and sends the request once more (MCP 2025-06-18, Transports, "Session Management": the client MUST
   *   start a new session); a 404 means the server did not run the request.
   * - `{ type: "stdio", command, args, env }`: spawns the agent process and talks over its stdin/stdout.
   * @throws HMCPError `InsufficientScope` / `Unauthenticated` when the HTTP layer refuses the session (403 / 401, as
   *   for {@link createMessage}); the SDK's errors otherwise
   */
  async connect(target: ConnectTarget): Promise<void> {
    this.#closed = false;
    this.#target = target;
    this.#generation++;
    this.#guardScope = randomUUID();
    let transport: Transport;
    if (target.type === "http") {
      transport = new StreamableHTTPClientTransport(new URL(target.url), {
        // each request's abort link to the transport's session-long signal ends with the request (released-fetch.ts)
        fetch: releasedSignalFetch(this.#authorizedFetch()),
        ...(target.headers && { requestInit: { headers: target.headers } }),
      });
    } else if (target.type === "stdio") {
      const { type: _t, ...params } = target;
      transport = new StdioClientTransport({ stderr: "inherit", ...params });
    } else {
      transport = target.transport;
    }
    this.#transport = transport;
    await this.sdk.connect(transport).catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())));
  }

  /**
   * A new HTTP session after the server answered 404 to ours, or after a reconnect that failed. Concurrent callers
   * share one reconnect; requests pending on the old session are rejected by its close (ConnectionClosed) and sent
   * again by their callers once it is done. A reconnect that fails leaves the client disconnected, and the next call
   * tries again.
   */
  async #renewSession(seen: number): Promise<void> {
    if (this.#reconnecting === undefined && this.#generation !== seen) return; // another request renewed it already
    this.#reconnecting ??= (async () => {
      try {
        await this.sdk.close().catch(() => undefined);
        await this.connect(this.#target!);
      } finally {
        this.#reconnecting = undefined;
      }
    })();
    await this.#reconnecting;
  }

  /** Before a request over HTTP: wait for a reconnect in progress, and reconnect if a previous one failed. */
  async #ready(): Promise<void> {
    if (this.#target?.type !== "http") return;
    if (this.#reconnecting) await this.#reconnecting.catch(() => undefined);
    if (!this.#closed && this.sdk.transport === undefined) await this.#renewSession(this.#generation);
  }

  /** The protocol era this connection speaks (`"modern"`: MCP 2026-07-28), after `connect`; `undefined` before. */
  get protocolEra(): "legacy" | "modern" | undefined {
    return this.sdk.getProtocolEra();
  }

  /** The server's HMCP capability, or `undefined` for a plain MCP server. Available after `connect`. */
  get serverCapability(): HMCPCapability | undefined {
    return readHMCPCapability(this.sdk.getServerCapabilities() as { experimental?: Record<string, unknown>; extensions?: Record<string, unknown> } | undefined);
  }

  /**
   * Sends `sampling/createMessage` to the server (HMCP client → server sampling).
   * @throws HMCPError `SamplingNotSupported` (locally, nothing sent) when the server did not advertise
   *   `experimental.hmcp.sampling`; ProtocolError with the server's code (e.g. GuardrailBlocked, InsufficientScope) when
   *   the server refuses; HMCPError `GuardrailBlocked` (`data.stage` "input", `data.side` "client") when this client's
   *   guardrails block the result (e.g. it names another patient than the client's); SdkError `RequestTimeout` after `timeoutMs`
   *   without progress; over HTTP, when the HTTP layer refuses the request before any server sees it: HMCPError
   *   `InsufficientScope` for a 403 (`data.required`, `data.status`, `data.resourceMetadata`), `Unauthenticated` for
   *   a 401 (`data.reason` `invalid_token` or `unauthenticated`, `data.description`), else the SDK's
   *   `SdkHttpError` (`status` = the HTTP status: 413, 429, 503).
   */
  async createMessage(params: CreateMessageParams, options: CreateMessageOptions = {}): Promise<CreateMessageResult> {
    await this.#ready();
    if (!this.serverCapability?.sampling) {
      throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "The server does not advertise HMCP sampling", {
        reason: "sampling_not_supported",
      });
    }
    const patient = options.patient ?? this.#options.patient;
    if (this.sdk.getProtocolEra() === "modern") return this.#createMessageByTool(params, patient, options);
    const p = patient === undefined ? params : { ...params, _meta: { ...(params._meta ?? {}), "hmcp/patient": patient } };
    const send = () =>
      this.sdk.request({ method: "sampling/createMessage", params: p }, CreateMessageResultSchema, sdkRequestOptions(options));
    const generation = this.#generation;
    let result: CreateMessageResult;
    try {
      result = await send();
    } catch (error) {
      if (this.#target?.type !== "http" || this.#closed) throw error;
      if (error instanceof SdkHttpError && error.status === 404) {
        // 404 to a session id: the server does not know the session (restart, ended) and ran nothing; start a new one
        await this.#renewSession(generation);
      } else if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed && (this.#reconnecting !== undefined || this.#generation !== generation)) {
        // pending on a session another request found gone (404): closed by the renewal, never run by the server
        await this.#reconnecting?.catch(() => undefined);
        await this.#ready();
      } else {
        throw typedHttpRefusal(error, this.#endpoint());
      }
      result = await send().catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())));
    }
    // what the server sent back passes this side's input stage, as the requests servers send do
    return this.#guard("input", result, "sampling/createMessage", options.signal ?? new AbortController().signal, true);
  }

  /**
   * HMCP sampling on MCP 2026-07-28: the agent's sampling tool, whose `structuredContent` is the `CreateMessageResult`
   * (the server advertises the tool in its HMCP capability). The patient goes in the call's `_meta["hmcp/patient"]`.
   */
  async #createMessageByTool(params: CreateMessageParams, patient: string | undefined, options: CreateMessageOptions): Promise<CreateMessageResult> {
    const tool = this.serverCapability?.samplingTool;
    if (tool === undefined) {
      throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "The server does not expose HMCP sampling as a tool (needed on MCP 2026-07-28)", { reason: "sampling_not_supported" });
    }
    const { _meta, ...args } = params;
    const meta = { ...(_meta ?? {}), ...(patient !== undefined && { "hmcp/patient": patient }) };
    const callParams = { name: tool, arguments: args, ...(Object.keys(meta).length > 0 && { _meta: meta }) };
    const started = await this.sdk
      .request({ method: "tools/call", params: callParams }, LOOSE, sdkRequestOptions(options))
      .catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())));
    // an agent whose sampling tool runs as a task (MCP tasks): waited out, its questions answered on the way
    const task = (started["_meta"] as Record<string, unknown> | undefined)?.[TASK_CARRIER] as TaskState | undefined;
    const called = (task === undefined ? started : await this.#settledTask(task.taskId, { ...(options.signal && { signal: options.signal }) })) as CallToolResult;
    // (an HMCP server reports a handler's failure as a JSON-RPC error; another server may answer `isError`)
    if (called.isError === true) throw new ProtocolError(INTERNAL_ERROR, "The server's sampling tool failed (an isError result)");
    const parsed = CreateMessageResultSchema.safeParse(called.structuredContent);
    if (!parsed.success) {
      throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "The server's sampling tool did not answer with a CreateMessageResult", { reason: "sampling_tool_failed" });
    }
    return this.#guard("input", parsed.data, "sampling/createMessage", options.signal ?? new AbortController().signal, true);
  }

  /**
   * Convenience: one user text message. `maxTokens` defaults to 1,024.
   * @throws as {@link createMessage}
   */
  async ask(text: string, options: CreateMessageOptions & { maxTokens?: number; systemPrompt?: string } = {}): Promise<CreateMessageResult> {
    const { maxTokens = 1024, systemPrompt, ...rest } = options;
    return this.createMessage(
      { messages: [{ role: "user", content: { type: "text", text } }], maxTokens, ...(systemPrompt !== undefined && { systemPrompt }) },
      rest,
    );
  }

  /**
   * Calls a tool on the server (`tools/call`, MCP spec 2025-06-18 "Tools") and passes its `CallToolResult` through this
   * client's input stage before returning it: a tool result is data the caller's model will read, where an indirect
   * prompt injection hides (see docs/guardrails.md, "Where prompt-injection applies"). `timeoutMs` defaults to the SDK's
   * 60,000 ms.
   * @throws HMCPError `GuardrailBlocked` (`data.stage` "input", `data.side` "client", with `score`, `threshold` and
   *   `reasonClass` when the guardrail gave them) when this client's guardrails block the result; ProtocolError with the server's code when it
   *   refuses; over HTTP, the SDK's `SdkHttpError` as for {@link createMessage}.
   */
  async callTool(params: CallToolRequest["params"], options: { signal?: AbortSignal; timeoutMs?: number } & Omit<WaitForTaskOptions, "signal"> = {}): Promise<CallToolResult> {
    const started = await this.startToolCall(params, options);
    const result = "task" in started ? await this.#settledTask(started.task.taskId, options) : started.result;
    return this.#guard("input", result, "tools/call", options.signal ?? new AbortController().signal, true);
  }

  /**
   * Calls a tool without waiting for a task: the tool's `CallToolResult` (`{ result }`, not yet through the input
   * stage: {@link callTool} does that), or, when the call became a task, the new task (`{ task }`), whose `taskId` the
   * caller may keep to fetch the result later, from this or another process ({@link waitForTask}). On 2026-07-28 the
   * server decides (extension `io.modelcontextprotocol/tasks`, which this client declares); on 2025-11-25 this client
   * asks for a task (`task: {}`) when the server advertises `tasks.requests.tools.call` and the tool's
   * `execution.taskSupport` (read once per connection from `tools/list`) is `"optional"` or `"required"`.
   * @throws as {@link callTool}
   */
  async startToolCall(params: CallToolRequest["params"], options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<{ result: CallToolResult } | { task: TaskState }> {
    await this.#ready();
    // MCP 2025-11-25: a task is asked for with the `task` param, where the server advertises tasks for tools/call and
    // the tool declares task support (a tool that does not refuses the param, -32601)
    const legacyTask = this.sdk.getProtocolEra() !== "modern" && (params as { task?: unknown }).task === undefined && (await this.#legacyTaskSupport(params.name, options.signal));
    const sent = legacyTask ? { ...params, task: {} } : params;
    const raw = (await this.sdk
      .request({ method: "tools/call", params: sent }, LOOSE, { ...(options.timeoutMs !== undefined && { timeout: options.timeoutMs }), ...(options.signal && { signal: options.signal }) })
      .catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())))) as CallToolResult;
    const task = (raw._meta as Record<string, unknown> | undefined)?.[TASK_CARRIER] as TaskState | undefined;
    if (task !== undefined) return { task };
    const created = (raw as { task?: unknown }).task;
    if (this.sdk.getProtocolEra() !== "modern" && typeof created === "object" && created !== null && typeof (created as { taskId?: unknown }).taskId === "string") return { task: fromLegacyTask(created as Record<string, unknown>) };
    return { result: raw };
  }

  /**
   * On the legacy era, whether `tool` runs as a task: the server advertises `tasks.requests.tools.call` (MCP 2025-11-25,
   * "Capabilities") and the tool's `execution.taskSupport` (from `tools/list`, kept per connection) is `"optional"` or
   * `"required"`.
   */
  async #legacyTaskSupport(tool: string, signal: AbortSignal | undefined): Promise<boolean> {
    const caps = this.sdk.getServerCapabilities() as { tasks?: { requests?: { tools?: { call?: unknown } } } } | undefined;
    if (caps?.tasks?.requests?.tools?.call === undefined) return false;
    const generation = this.#generation;
    if (this.#toolTaskSupport?.generation !== generation || !this.#toolTaskSupport.tools.has(tool)) {
      const tools = new Map<string, string | undefined>();
      let cursor: string | undefined;
      do {
        const page = await this.sdk.listTools(cursor === undefined ? undefined : { cursor }, { ...(signal && { signal }) }).catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())));
        for (const t of page.tools) tools.set(t.name, (t as { execution?: { taskSupport?: string } }).execution?.taskSupport);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      this.#toolTaskSupport = { generation, tools };
    }
    const support = this.#toolTaskSupport.tools.get(tool);
    return support === "optional" || support === "required";
  }

  /** The task's state now (`tasks/get`). @throws ProtocolError -32602 when the task is unknown, expired or not this caller's */
  async getTask(taskId: string, options: { signal?: AbortSignal } = {}): Promise<TaskState> {
    await this.#ready();
    const raw = (await this.sdk.request({ method: "tasks/get", params: { taskId } }, LOOSE, { ...(options.signal && { signal: options.signal }) }).catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())))) as Record<string, unknown>;
    return this.sdk.getProtocolEra() === "modern" ? (raw as unknown as TaskState) : fromLegacyTask(raw);
  }

  /**
   * Asks the server to cancel the task (`tasks/cancel`; cooperative: it may still complete).
   * @throws as {@link getTask}; on MCP 2025-11-25, ProtocolError -32602 when the task already ended (that revision's
   *   "Task Cancellation"; 2026-07-28 acknowledges it)
   */
  async cancelTask(taskId: string): Promise<void> {
    await this.#ready();
    await this.sdk.request({ method: "tasks/cancel", params: { taskId } }, LOOSE).catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())));
  }

  /**
   * Waits for a task to end, answering its questions on the way: each input request (`elicitation/create`,
   * `sampling/createMessage`) goes through this client's guardrails to `onElicitation` / `onSampling`, as a server's
   * question does on either era, and the answer back with `tasks/update` (2026-07-28). On 2025-11-25 it polls `tasks/get`
   * until the task leaves `working`, then waits on `tasks/result`, on whose stream the server asks its questions
   * (`onStatus` then sees no later state). Works for a task another process started.
   * @returns the tool's `CallToolResult` (through this client's input stage, as {@link callTool})
   * @throws ProtocolError with the task's JSON-RPC error when it failed; ProtocolError -32603 `task_cancelled` when it was
   *   cancelled; as {@link getTask}
   */
  async waitForTask(taskId: string, options: WaitForTaskOptions = {}): Promise<CallToolResult> {
    const result = await this.#settledTask(taskId, options);
    return this.#guard("input", result, "tools/call", options.signal ?? new AbortController().signal, true);
  }

  async #settledTask(taskId: string, options: WaitForTaskOptions): Promise<CallToolResult> {
    const answered = new Set<string>();
    const signal = options.signal ?? new AbortController().signal;
    for (;;) {
      signal.throwIfAborted();
      const task = await this.getTask(taskId, { signal });
      options.onStatus?.(task);
      // MCP 2025-11-25: once the task ended or waits for input, tasks/result returns its result (or its error), and the
      // server sends its questions on that request's stream, answered as any question of the server's
      if (this.sdk.getProtocolEra() !== "modern" && task.status !== "working") return this.#legacyTaskResult(task, signal);
      if (task.status === "completed") return (task.result ?? { content: [] }) as CallToolResult;
      if (task.status === "failed") {
        const e = task.error ?? { code: -32603, message: "Task failed" };
        throw new ProtocolError(e.code, e.message, e.data);
      }
      if (task.status === "cancelled") throw new ProtocolError(-32603, "Task cancelled", { reason: "task_cancelled", taskId });
      if (task.status === "input_required") {
        // each key is asked once over the task's life (SEP-2663): one already answered is waiting to be taken
        const responses: Record<string, unknown> = {};
        for (const [key, request] of Object.entries(task.inputRequests ?? {})) {
          if (answered.has(key)) continue;
          responses[key] = await this.#answerInputRequest(request, signal);
          answered.add(key);
        }
        if (Object.keys(responses).length > 0) {
          await this.sdk.request({ method: "tasks/update", params: { taskId, inputResponses: responses } }, LOOSE, { signal }).catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())));
          continue;
        }
      }
      const wait = Math.max(20, task.pollIntervalMs ?? options.pollIntervalMs ?? 1_000);
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, wait);
        signal.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
      });
    }
  }

  /** `tasks/result` (MCP 2025-11-25): blocks until the task ends; the server's questions come on its stream meanwhile. */
  async #legacyTaskResult(task: TaskState, signal: AbortSignal): Promise<CallToolResult> {
    for (;;) {
      // as long as the task may live (a question may wait for a human), not the SDK's 60 s default
      const left = task.ttlMs === null ? 86_400_000 : Date.parse(task.createdAt) + task.ttlMs - Date.now();
      try {
        return (await this.sdk.request({ method: "tasks/result", params: { taskId: task.taskId } }, LOOSE, { signal, timeout: Math.max(1_000, left) })) as CallToolResult;
      } catch (error) {
        // past the task's lifetime: the next read says expired (or the task ended meanwhile)
        if (!(error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout)) throw typedHttpRefusal(error, this.#endpoint());
        task = await this.getTask(task.taskId, { signal });
      }
    }
  }

  /** A task's question answered as a server's question is on either era: guardrails, then the application's handler. */
  async #answerInputRequest(request: { method: string; params?: Record<string, unknown> }, signal: AbortSignal): Promise<unknown> {
    const server = this.sdk.getServerVersion()?.name;
    if (request.method === "elicitation/create") {
      const handler = this.#options.onElicitation;
      if (!handler) return { action: "decline" } satisfies ElicitResult;
      const params = await this.#guard("input", request.params as ElicitRequest["params"], "elicitation/create", signal);
      return this.#guard("output", await handler(params, { signal, server }), "elicitation/create", signal);
    }
    if (request.method === "sampling/createMessage") {
      const handler = this.#options.onSampling;
      if (!handler) throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "This client has no sampling handler", { reason: "sampling_not_supported" });
      const params = await this.#guard("input", request.params as CreateMessageParams, "sampling/createMessage", signal);
      return this.#guard("output", await handler(params, { signal, server }), "sampling/createMessage", signal);
    }
    throw new HMCPError(HMCPErrorCode.SamplingNotSupported, `The task asked with ${request.method}, which this client does not answer`, { reason: "input_request_not_supported" });
  }

  /**
   * SDK 2.4 does not implement the tasks extension (its repository tracks it) and refuses a result whose `resultType` is
   * `"task"` before any caller sees it. HMCPClient declares the extension on 2026-07-28, so it takes such a result at
   * the one place every response passes (the SDK's response dispatch) and hands it on as a complete result carrying the
   * task under `_meta["dev.hmcp/task"]`, which {@link startToolCall} unwraps.
   */
  #acceptTasks(): void {
    const sdk = this.sdk as unknown as { _onresponse?: (response: { result?: Record<string, unknown> }) => void };
    const original = sdk._onresponse;
    if (typeof original !== "function") throw new Error("HMCPClient: unsupported @modelcontextprotocol/client version (no response dispatch)");
    sdk._onresponse = function (this: unknown, response: { result?: Record<string, unknown> }) {
      const r = response.result;
      if (r !== undefined && r["resultType"] === "task" && typeof r["taskId"] === "string") {
        const { resultType: _t, ...task } = r;
        return original.call(this, { ...response, result: { resultType: "complete", content: [], _meta: { [TASK_CARRIER]: task } } });
      }
      return original.call(this, response);
    };
  }

  /**
   * Reads a resource (`resources/read`, MCP spec 2025-06-18 "Resources") and passes its `ReadResourceResult` through
   * this client's input stage before returning it, as {@link callTool} does.
   * @throws as {@link callTool}
   */
  async readResource(params: ReadResourceRequest["params"], options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<ReadResourceResult> {
    await this.#ready();
    const result = await this.sdk
      .readResource(params, {
        ...(options.timeoutMs !== undefined && { timeout: options.timeoutMs }),
        ...(options.signal && { signal: options.signal }),
      })
      .catch((e: unknown) => Promise.reject(typedHttpRefusal(e, this.#endpoint())));
    return this.#guard("input", result, "resources/read", options.signal ?? new AbortController().signal, true);
  }

  /**
   * Closes the connection (and the agent process, over stdio). Over HTTP it first ends the session on the server
   * (HTTP DELETE, MCP "Session Management"; at most 2,000 ms, errors ignored), so the server frees it at once instead
   * of at its idle timeout.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const t = this.#transport;
    if (t instanceof StreamableHTTPClientTransport && t.sessionId !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([t.terminateSession().catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
      clearTimeout(timer);
    }
    await this.sdk.close();
  }

  /**
   * Runs this client's guardrails on `payload`. `received`: a result this client got back (its own call's), which says
   * in its `_meta` what the input stage redacted, as an answer this client sends back does.
   */
  async #guard<T>(stage: "input" | "output", payload: T, method: string, signal: AbortSignal, received = false): Promise<T> {
    const g = this.#options.guardrails === false ? undefined : (this.#options.guardrails ??= defaultGuardrails());
    if (!g) return payload;
    let outcome;
    try {
      const patient = this.#options.patient;
      outcome = await g.evaluate(stage, payload, { stage, side: "client", method, signal, sessionId: this.#guardScope, ...(patient !== undefined && { patient }) });
    } catch (cause) {
      throw new HMCPError(HMCPErrorCode.GuardrailBlocked, received ? "The answer was blocked by this client's guardrails" : "Blocked by guardrail", { reason: "guardrail_error", guardrail: "pipeline", side: "client" }, { cause });
    }
    if (outcome.action === "block") {
      const b = outcome.blocked ?? { guardrail: "unknown", reason: "guardrail_blocked" };
      // `side: "client"`: this client's own guardrails refused (an answer it received, or a request a server sent it),
      // which a caller must tell apart from a block by the server (whose data has no `side`)
      const message = received ? `The answer was blocked by this client's guardrail '${b.guardrail}'` : `Blocked by guardrail '${b.guardrail}'`;
      throw new HMCPError(HMCPErrorCode.GuardrailBlocked, message, { ...guardrailBlockData(b, stage), side: "client" });
    }
    // an answer this client redacted says so (REDACTIONS_META_KEY), as a server's redacted result does
    return stage === "output" || received ? withRedactionsMeta(outcome.payload, outcome.redactions) : outcome.payload;
  }

  /** The HTTP endpoint this client connects to, if any (a refusal's metadata URL is kept only on its origin). */
  #endpoint(): URL | undefined {
    const t = this.#target;
    return t?.type === "http" ? new URL(t.url) : undefined;
  }

  /** fetch that adds the bearer token and retries once after a 401 carrying `WWW-Authenticate` (RFC 6750 §3). */
  #authorizedFetch(): FetchFn | undefined {
    const provider = this.#options.tokenProvider;
    if (!provider) return undefined;
    return async (input, init) => {
      const send = async () => {
        const headers = new Headers(init?.headers);
        headers.set("authorization", `Bearer ${await provider.getToken()}`);
        return fetch(input, { ...init, headers });
      };
      const first = await send();
      if (first.status === 401 && first.headers.has("www-authenticate")) {
        await first.body?.cancel();
        provider.invalidate();
        return send();
      }
      return first;
    };
  }
}

/** A 2025-11-25 `Task` (`ttl`, `pollInterval`) as {@link TaskState} (`ttlMs`, `pollIntervalMs`). */
function fromLegacyTask(t: Record<string, unknown>): TaskState {
  const { ttl, pollInterval, _meta: _m, ...rest } = t;
  return { ...(rest as Omit<TaskState, "ttlMs" | "pollIntervalMs">), ttlMs: typeof ttl === "number" ? ttl : null, ...(typeof pollInterval === "number" && { pollIntervalMs: pollInterval }) };
}

/** The SDK's request options for a sampling call, either era (progress resets the timeout). */
function sdkRequestOptions(options: CreateMessageOptions) {
  return {
    ...(options.timeoutMs !== undefined && { timeout: options.timeoutMs }),
    ...(options.maxTotalTimeoutMs !== undefined && { maxTotalTimeout: options.maxTotalTimeoutMs }),
    ...(options.signal && { signal: options.signal }),
    ...(options.onProgress && { onprogress: options.onProgress, resetTimeoutOnProgress: true }),
  };
}

const CLIENT_OPTIONS = new Set<keyof HMCPClientOptions>(["tokenProvider", "guardrails", "patient", "onSampling", "onElicitation", "protocolEra"]);

/** Checks {@link HMCPClientOptions} at construction. @throws HMCPConfigError naming the bad key */
function checkClientOptions(options: HMCPClientOptions): void {
  if (typeof options !== "object" || options === null) throw new HMCPConfigError("HMCPClient options: expected an object", "");
  refuseUnknownOptions("HMCPClient options", options, CLIENT_OPTIONS as ReadonlySet<string>);
  const bad = (key: string, what: string) => new HMCPConfigError(`HMCPClient options: invalid '${key}': expected ${what}`, key);
  const o = options as Record<string, unknown>;
  if (o["tokenProvider"] !== undefined && typeof (o["tokenProvider"] as TokenProvider | null)?.getToken !== "function") throw bad("tokenProvider", "a TokenProvider (getToken, invalidate)");
  const g = o["guardrails"];
  if (g !== undefined && g !== false && typeof (g as GuardrailRunner | null)?.evaluate !== "function") throw bad("guardrails", "a GuardrailRunner (evaluate, names) or false");
  if (o["patient"] !== undefined && (typeof o["patient"] !== "string" || o["patient"] === "")) throw bad("patient", "a non-empty FHIR Patient id");
  for (const k of ["onSampling", "onElicitation"]) if (o[k] !== undefined && typeof o[k] !== "function") throw bad(k, "a function");
  if (o["protocolEra"] !== undefined && !["legacy", "auto", "modern"].includes(o["protocolEra"] as string)) throw bad("protocolEra", '"legacy", "auto" or "modern"');
}

/**
 * An HTTP-level refusal (the SDK's `SdkHttpError` 401 or 403, whose `data.text` carries the response body, or its
 * `InsufficientScopeError` for a 403 `insufficient_scope` challenge) as the
 * typed HMCP error a caller can act on, the same as a refusal inside the MCP pipeline: 403 → `InsufficientScope`
 * (-32051, `data.required`: the scopes the challenge names, any one of which would do), 401 → `Unauthenticated`
 * (-32054, `data.reason` `invalid_token` or `unauthenticated`, `data.description`: the server's error description,
 * e.g. the audience it expects). Both carry `data.status` and, when the server named it, `data.resourceMetadata` (the
 * RFC 9728 metadata URL); the original error is the `cause`. Anything else is returned unchanged.
 */
function typedHttpRefusal(error: unknown, endpoint?: URL): unknown {
  // the SDK reports what failed its server/discover probe (auto and modern modes) as ERA_NEGOTIATION_FAILED, the failure
  // itself as the cause: a token request refused (a wrong client secret) is that, not a version mismatch
  if (error instanceof SdkError && !(error instanceof SdkHttpError) && error.code === SdkErrorCode.EraNegotiationFailed && error.cause instanceof TokenRequestError) {
    return error.cause;
  }
  let status: 401 | 403;
  let body: Record<string, unknown> = {};
  if (error instanceof InsufficientScopeError) {
    // SDK v2 raises a 403 `insufficient_scope` challenge as this typed error when no OAuth provider can step up
    status = 403;
    body = { scope: error.requiredScope, resource_metadata: error.resourceMetadataUrl?.toString(), error_description: error.errorDescription };
  } else if (error instanceof SdkHttpError && (error.status === 401 || error.status === 403)) {
    status = error.status;
    const data = error.data as { text?: unknown } | undefined;
    const text = typeof data?.text === "string" ? data.text : error.message;
    const brace = text.indexOf("{");
    if (brace >= 0) {
      try {
        const parsed: unknown = JSON.parse(text.slice(brace));
        if (typeof parsed === "object" && parsed !== null) body = parsed as Record<string, unknown>;
      } catch {
        // not our server's JSON body: the status alone is known
      }
    }
  } else {
    return error;
  }
  // the server's strings, as far as they are safe to show and to act on: printable, at most 256 characters; a scope
  // as RFC 6749 §3.3 spells one; a metadata URL only on the endpoint's own origin
  const str = (k: string) => (typeof body[k] === "string" && /^[\x20-\x7e]{1,256}$/.test(body[k] as string) ? (body[k] as string) : undefined);
  const metadataUrl = str("resource_metadata");
  const resourceMetadata = metadataUrl !== undefined && endpoint !== undefined && URL.canParse(metadataUrl) && new URL(metadataUrl).origin === endpoint.origin ? metadataUrl : undefined;
  const description = str("error_description");
  const common = { status, ...(resourceMetadata !== undefined && { resourceMetadata }) };
  if (status === 403) {
    const required = (str("scope") ?? "").split(" ").filter((x) => /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/.test(x));
    return new HMCPError(HMCPErrorCode.InsufficientScope, `Insufficient scope${required.length > 0 ? `: needs one of ${required.join(", ")}` : ""}`, { reason: "insufficient_scope", required, ...common }, { cause: error });
  }
  return new HMCPError(
    HMCPErrorCode.Unauthenticated,
    description !== undefined ? `Unauthenticated: ${description}` : "Unauthenticated",
    { reason: str("error") === "invalid_token" ? "invalid_token" : "unauthenticated", ...(description !== undefined && { description }), ...common },
    { cause: error },
  );
}
