/**
 * HMCPServer: an MCP server (the SDK's McpServer) whose every request runs through the HMCP pipeline, and which
 * answers client → server `sampling/createMessage` (HMCP's extension of MCP; see DESIGN.md §1).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CreateMessageRequestSchema,
  CreateMessageResultSchema,
  ErrorCode,
  McpError,
  type Implementation,
  type JSONRPCRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { HMCPConfigError, HMCPError, HMCPErrorCode, HMCP_VERSION, refuseUnknownOptions, type HMCPCapability, type TransportKind } from "../protocol/index.js";
import { parseServerOptions, type HMCPServerOptions } from "./options.js";
import { RequestPipeline, type HandlerExtra, type InnerHandler } from "./pipeline.js";
import { hmcpContext, hmcpContextOrUndefined, type SamplingHandler } from "./context.js";

/** Options of {@link HMCPServer.sampling}. */
export interface SamplingHandlerOptions {
  /** Scopes allowing a caller to use this handler (any-of). Default: `["hmcp:sample", "hmcp:access"]`. */
  requiredScopes?: string[];
}

const SAMPLING_OPTIONS: ReadonlySet<string> = new Set<keyof SamplingHandlerOptions>(["requiredScopes"]);

type RequestHandlerMap = Map<string, InnerHandler>;

/**
 * An HMCP agent server.
 *
 * ```ts
 * const server = new HMCPServer({ name: "emr-writeback", version: "1.0.0" }, { guardrails: defaultGuardrails() });
 * server.sampling(async (params, ctx) => ({ content: { type: "text", text: "done" }, stopReason: "endTurn" }));
 * ```
 *
 * Every request except `initialize` and `ping` runs through one {@link RequestPipeline}: scope and patient-context
 * checks, the guardrail input stage, the handler, the output stage, and one audit record per outcome. Errors leave
 * as JSON-RPC errors with the codes of {@link HMCPErrorCode}; unexpected exceptions become `-32603 Internal error`
 * without their message.
 *
 * @throws HMCPConfigError at construction when an option is invalid or unknown (naming the key).
 */
export class HMCPServer extends McpServer {
  readonly pipeline: RequestPipeline;
  readonly #info: Implementation;
  #samplingHandler: SamplingHandler | undefined;
  #samplingScopes: string[] | undefined;
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
    this.pipeline = new RequestPipeline(opts, {
      agentName: serverInfo.name,
      transport: () => this.#transportKind,
      localCaller: () => this.#localCaller,
      clientCapabilities: () => this.server.getClientCapabilities(),
      methodScopes: (method) => (method === "sampling/createMessage" ? this.#samplingScopes : undefined),
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
    if (this.#samplingHandler) throw new Error("HMCPServer.sampling: a sampling handler is already registered");
    if (this.isConnected()) throw new Error("HMCPServer.sampling: register the handler before connect()");
    this.#samplingHandler = handler;
    this.#samplingScopes = options.requiredScopes;
    return this;
  }

  /** The HMCP capability this server advertises (`capabilities.experimental.hmcp`). */
  get hmcpCapability(): HMCPCapability {
    const g = this.pipeline.guardrails;
    return {
      version: HMCP_VERSION,
      sampling: this.#samplingHandler !== undefined,
      ...(g && { guardrails: { input: g.names("input"), output: g.names("output") } }),
      audit: this.pipeline.auditing,
      ...(this.pipeline.authEnabled && { scopes: { sampling: [...this.pipeline.requiredScopes("sampling/createMessage")] } }),
    };
  }

  /** Connects to a transport; advertises the HMCP capability first. */
  override async connect(transport: Transport): Promise<void> {
    const http = transport instanceof StreamableHTTPServerTransport || transport instanceof WebStandardStreamableHTTPServerTransport || transport instanceof SSEServerTransport;
    this.#transportKind = http ? "http" : transport instanceof StdioServerTransport ? "stdio" : "memory";
    // An allowlist: any other transport (HTTP served some other way, a custom one) may carry a remote caller, who must
    // then not run as the server's local principal.
    this.#localCaller = transport instanceof StdioServerTransport || transport instanceof InMemoryTransport;
    // registerCapabilities merges `experimental` one level deep, so other experimental capabilities are kept.
    this.server.registerCapabilities({ experimental: { hmcp: this.hmcpCapability } });
    // sampling/createMessage always has a handler, so a server without one answers with a clear HMCP error
    // (and the request is audited) instead of "Method not found".
    this.server.setRequestHandler(CreateMessageRequestSchema, (request, extra) => this.#onSampling(request.params, extra));
    return super.connect(transport);
  }

  async #onSampling(params: JSONRPCRequest["params"] & object, extra: HandlerExtra) {
    const handler = this.#samplingHandler;
    if (!handler) {
      throw new HMCPError(HMCPErrorCode.SamplingNotSupported, "This server does not accept sampling requests", {
        reason: "sampling_not_supported",
      });
    }
    const ctx = hmcpContext(extra);
    const out = await handler(params as Parameters<SamplingHandler>[0], ctx);
    const result = { role: "assistant" as const, model: this.#info.name, ...out };
    // A handler bug (malformed result) is an internal error, not the caller's fault; the message is not echoed.
    return CreateMessageResultSchema.parse(result);
  }

  /**
   * The SDK reports a tool callback's exception to the client as an `isError` result carrying the exception's
   * message, which may hold PHI. Callbacks registered with `registerTool` are wrapped: the exception is kept on the
   * request context (the pipeline audits it, and re-raises HMCP refusals as JSON-RPC errors) and the client sees
   * "Tool execution failed". McpErrors keep their message (they are protocol errors, written for the caller).
   */
  #sanitizeToolErrors(): void {
    const register = this.registerTool.bind(this) as (...args: unknown[]) => unknown;
    (this as unknown as { registerTool: (...args: unknown[]) => unknown }).registerTool = (name, config, callback) =>
      register(name, config, async (...args: unknown[]) => {
        try {
          return await (callback as (...a: unknown[]) => unknown)(...args);
        } catch (error) {
          const extra = args[args.length - 1] as object;
          const ctx = hmcpContextOrUndefined(extra);
          if (ctx) (ctx as unknown as { toolError: unknown }).toolError = error;
          if (error instanceof McpError) throw error;
          throw new Error("Tool execution failed");
        }
      });
  }

  /**
   * Routes every registered request handler through the pipeline. The SDK keeps handlers in a per-instance map
   * (`Protocol._requestHandlers`, SDK 1.x); wrapping the map's entries, rather than the handlers passed to
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
      throw new Error("HMCPServer: unsupported @modelcontextprotocol/sdk version (no request handler map)");
    }
    const wrapped = new WeakSet<InnerHandler>();
    const wrap = (method: string) => {
      const h = map.get(method);
      if (!h || wrapped.has(h)) return;
      const w: InnerHandler = (request, extra) => this.pipeline.handle(request, extra, h);
      wrapped.add(w);
      map.set(method, w);
    };
    for (const method of [...map.keys()]) wrap(method);
    const original = inner.setRequestHandler.bind(inner);
    inner.setRequestHandler = (...args: unknown[]) => {
      // Re-registering a method (e.g. sampling on reconnect) replaces the previous handler.
      const schema = args[0] as { shape?: { method?: { value?: unknown } } };
      const method = schema?.shape?.method?.value;
      if (typeof method === "string") map.delete(method);
      original(...args);
      if (typeof method === "string") wrap(method);
    };
    // Unknown methods also pass the pipeline (authenticated, audited), then get JSON-RPC "Method not found".
    inner.fallbackRequestHandler = (request, extra) =>
      this.pipeline.handle(
        request,
        extra,
        async () => {
          throw new McpError(ErrorCode.MethodNotFound, "Method not found");
        },
        { unknownMethod: true },
      );
  }
}
