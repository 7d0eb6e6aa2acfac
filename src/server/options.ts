/**
 * HMCPServer options: validated with zod at construction (STYLE.md habit 8). Unknown keys are an error naming the key.
 */
import type { TaskOptions } from "./tasks.js";
import type { TaskStore } from "./task-store.js";
import { z } from "zod";
import type { ServerCapabilities } from "@modelcontextprotocol/server";
import { HMCPConfigError, unknownOptionMessage, type Principal } from "../protocol/index.js";
import type { GuardrailRunner } from "../guardrails/types.js";
import type { AuditRecordInput, AuditSink } from "../audit/record.js";
import type { RequestContext } from "./context.js";
import type { OperationalLogger } from "./logger.js";
import type { RequestStateOptions, RequestStateStore } from "./request-state.js";

/** Hooks that run in addition to the built-in stages, e.g. an extra authorization rule or an audit tap. */
export interface PipelineHooks {
  /** Runs after the built-in scope and patient checks; throw an HMCPError to refuse. */
  authorize?: (context: RequestContext) => void | Promise<void>;
  /** Receives every audit record (in addition to the audit sink). Must not throw or block. */
  audit?: (record: AuditRecordInput) => void;
}

/** Options of {@link HMCPServer}. */
export interface HMCPServerOptions {
  /** MCP `instructions` sent in the initialize result. */
  instructions?: string;
  /** Extra MCP server capabilities (tools, resources, prompts, logging ... are added as you register them). */
  capabilities?: ServerCapabilities;
  /**
   * Authorization. Default `{}`: on. Over HTTP the principal comes from the bearer check only (an app created with
   * `bearer: false` gives none); over stdio and the SDK's in-memory pair from `localPrincipal`; over any other
   * transport (the web-standard or SSE HTTP transports, a custom one) from its `authInfo` only. Requests without a
   * principal are refused with `Unauthenticated`. `false` turns every check off (tests and local development only).
   */
  auth?:
    | false
    | {
        /** Principal for transports without a remote caller (stdio, the SDK's InMemoryTransport); never used on others. Default: none. */
        localPrincipal?: Principal;
        /**
         * Per-method scope requirements (any-of), merged over src/auth's `DEFAULT_METHOD_SCOPES`. Not for `initialize`
         * or `ping`: they run outside the pipeline, so such an entry would not be applied and is refused
         * (HMCPConfigError); over HTTP, require scopes for opening a session with the bearer authenticator's
         * `requiredScopes` or `methodScopes.initialize`.
         */
        requiredScopes?: Record<string, string[]>;
      };
  /**
   * Guardrail pipeline for the input and output stages. Default: `defaultGuardrails()`, the shipped
   * `guardrails/default.yaml` (injection, limits and patient context on input; PHI redaction on output).
   * `false` turns guardrails off.
   */
  guardrails?: GuardrailRunner | false;
  /** Audit sink that receives one record per request outcome. Default: none. */
  audit?: AuditSink | false;
  /** Extra pipeline hooks. */
  hooks?: PipelineHooks;
  /**
   * Operational logger for failures (unexpected handler errors, audit failures). Entries never carry message
   * content. Default: a redacting winston logger on stderr (see `defaultOperationalLogger`).
   */
  logger?: OperationalLogger;
  /**
   * The sealed `requestState` of MCP 2026-07-28 input rounds (a handler's `ctx.elicit` / `ctx.sample` during
   * `tools/call`, `prompts/get` or `resources/read`; see SECURITY.md, "requestState"): `keys` (each >= 32 bytes; the
   * first seals, all open), `ttlSeconds` (default 600) and the single-use `store` (default: this process's memory).
   * Default: a random key per process, so every round of a flow must reach the same process; configure `keys` (and a
   * shared `store`) when several instances serve one endpoint.
   * @throws HMCPConfigError at construction for a key shorter than 32 bytes or a ttl outside 1..86400 s
   */
  requestState?: RequestStateOptions;
  /**
   * MCP tasks (see "Tasks" in README.md): a tool registered with `execution: { taskSupport: "optional" | "required" }`
   * runs as a task for a 2026-07-28 client that declares the extension `io.modelcontextprotocol/tasks`, and for a
   * 2025-11-25 `tools/call` carrying the `task` param (that revision's tasks, advertised in `capabilities.tasks`).
   * `store` (default: an embedded in-memory PGlite, one per process), `ttlMs` (default 3,600,000; null for unlimited),
   * `pollIntervalMs` (default 1,000), `leaseMs` (default 30,000), `maxActivePerOwner` (default 100: further
   * task-creating calls are refused with -32000 `too_many_tasks`). `false` turns tasks off (tools run synchronously).
   */
  tasks?: TaskOptions | false;
  /**
   * Reply only once the request's audit record is durable in the `audit` sink (its `flush`: a group commit, default
   * window 5 ms, shared by the requests waiting): a process killed (`kill -9`, power loss) right after answering then
   * never leaves an answered request without its record. Costs each request up to one commit window of latency; a
   * sink that cannot persist holds replies until it recovers. Default false (the record is appended before the reply
   * and persisted within the sink's window).
   */
  replyAfterAuditDurable?: boolean;
}

const PrincipalSchema = z
  .object({
    clientId: z.string().min(1),
    sub: z.string().optional(),
    scopes: z.array(z.string()),
    ignoredScopes: z.array(z.string()).optional(),
    patient: z.string().optional(),
    fhirUser: z.string().optional(),
    tenant: z.string().optional(),
    expiresAt: z.number().optional(),
    issuer: z.string().optional(),
  })
  .strict();

const OptionsSchema = z
  .object({
    instructions: z.string().optional(),
    capabilities: z.record(z.string(), z.unknown()).optional(),
    auth: z
      .union([
        z.literal(false),
        z
          .object({
            localPrincipal: PrincipalSchema.optional(),
            requiredScopes: z.record(z.string(), z.array(z.string())).optional(),
          })
          .strict(),
      ])
      .optional(),
    guardrails: z
      .union([
        z.literal(false),
        z.custom<GuardrailRunner>(
          (v) => typeof (v as GuardrailRunner)?.evaluate === "function" && typeof (v as GuardrailRunner)?.names === "function",
          { message: "expected a GuardrailRunner (evaluate, names)" },
        ),
      ])
      .optional(),
    audit: z
      .union([
        z.literal(false),
        z.custom<AuditSink>((v) => typeof (v as AuditSink)?.append === "function", { message: "expected an AuditSink (append, flush, close)" }),
      ])
      .optional(),
    logger: z
      .custom<OperationalLogger>((v) => typeof (v as OperationalLogger)?.error === "function" && typeof (v as OperationalLogger)?.warn === "function", {
        message: "expected a logger (error, warn, info)",
      })
      .optional(),
    requestState: z
      .object({
        keys: z.array(z.union([z.string(), z.instanceof(Uint8Array)])).min(1).optional(),
        ttlSeconds: z.number().int().min(1).max(86_400).optional(),
        store: z.custom<RequestStateStore>((v) => typeof (v as RequestStateStore)?.claim === "function", { message: "expected a RequestStateStore (claim)" }).optional(),
      })
      .strict()
      .optional(),
    tasks: z
      .union([
        z.literal(false),
        z
          .object({
            store: z.custom<TaskStore>((v) => typeof (v as TaskStore)?.get === "function" && typeof (v as TaskStore)?.put === "function", { message: "expected a TaskStore (e.g. PostgresTaskStore.open({ db }))" }).optional(),
            ttlMs: z.number().int().positive().nullable().optional(),
            pollIntervalMs: z.number().int().positive().optional(),
            leaseMs: z.number().int().min(30).optional(),
            maxActivePerOwner: z.number().int().positive().optional(),
          })
          .strict(),
      ])
      .optional(),
    replyAfterAuditDurable: z.boolean().optional(),
    hooks: z
      .object({
        authorize: z.custom<PipelineHooks["authorize"]>((v) => typeof v === "function").optional(),
        audit: z.custom<PipelineHooks["audit"]>((v) => typeof v === "function").optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

export { HMCPConfigError };

/** Methods the pipeline does not see (connection lifecycle): a scope requirement for them could not be applied. */
const UNCHECKED_METHODS = ["initialize", "ping"] as const;

/**
 * Validates options. @throws HMCPConfigError naming the first bad or unknown key, or an `auth.requiredScopes` entry
 * for `initialize` or `ping`.
 * @internal
 */
export function parseServerOptions(options: unknown, where = "HMCPServer"): HMCPServerOptions {
  const parsed = OptionsSchema.safeParse(options ?? {});
  if (parsed.success) {
    const required = parsed.data.auth ? parsed.data.auth.requiredScopes : undefined;
    for (const method of UNCHECKED_METHODS) {
      if (required !== undefined && Object.prototype.hasOwnProperty.call(required, method)) {
        const key = `auth.requiredScopes.${method}`;
        throw new HMCPConfigError(
          `${where} options: '${key}' cannot be enforced (initialize and ping run outside the pipeline); require scopes for opening a session with the bearer authenticator's requiredScopes or methodScopes`,
          key,
        );
      }
    }
    return parsed.data as HMCPServerOptions;
  }
  const issue = parsed.error.issues[0]!;
  const base = issue.path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    const key = [base, issue.keys[0]].filter(Boolean).join(".");
    throw new HMCPConfigError(unknownOptionMessage(`${where} options`, key, knownKeysAt(issue.path.map(String))), key);
  }
  throw new HMCPConfigError(`${where} options: invalid '${base || "(root)"}': ${issue.message}`, base);
}

/** The option names valid at `path` of {@link OptionsSchema} (for the "did you mean" hint). */
function knownKeysAt(path: string[]): string[] {
  let schema: unknown = OptionsSchema;
  for (const part of path) {
    schema = objectShape(schema)?.[part];
    if (schema === undefined) return [];
  }
  return Object.keys(objectShape(schema) ?? {});
}

/** The shape of a zod object, looking through optional wrappers and unions (the first object member). */
function objectShape(schema: unknown): Record<string, unknown> | undefined {
  if (schema instanceof z.ZodObject) return schema.shape as Record<string, unknown>;
  if (schema instanceof z.ZodOptional) return objectShape(schema.unwrap());
  if (schema instanceof z.ZodUnion) {
    for (const o of schema.options as unknown[]) {
      const shape = objectShape(o);
      if (shape) return shape;
    }
  }
  return undefined;
}
