/**
 * The guardrail seam: what a guardrail is, what it decides, and what the pipeline returns.
 * The server (src/server) and client (src/client) call a {@link GuardrailRunner}; src/guardrails
 * implements it. Decisions name entity types and offsets, never the PHI itself.
 */
import type { Principal } from "../protocol/index.js";

/**
 * Where in an exchange content is checked. Both sides use the same two stages:
 * `input` is what arrives at this agent from its peer (on a server: a client's sampling request;
 * on a client: a sampling or elicitation request that a server sends back), `output` is what this
 * agent sends back (the server's sampling result; the client's answer to a server's request).
 */
export type GuardrailStage = "input" | "output";

/** What one guardrail found, by type and character offsets into the checked string. Never the value. */
export interface RedactedEntity {
  /** Entity type, e.g. "NAME", "DATE", "SSN". */
  type: string;
  /** Start offset (UTF-16 code units) in the checked string. */
  start: number;
  /** End offset (exclusive). */
  end: number;
  /** The text put in its place (e.g. "[NAME]"); lets the pipeline map offsets through composed redactions. */
  replacement?: string;
}

/**
 * Why a scoring guardrail blocked, for the caller and the audit trail: never the text. The pipeline keeps it only when
 * well formed (finite numbers in 0..1, a class code of 1-40 characters `[a-z0-9_]`); otherwise it is dropped.
 */
export interface DecisionEvidence {
  /** The guardrail's score for the text (0..1, e.g. the probability of prompt injection), rounded to 3 decimals. */
  score: number;
  /** The threshold the score was held to (a block means `score >= threshold`). */
  threshold: number;
  /** The reason class, a code from the guardrail's closed list (e.g. `instruction_override`, `data_exfiltration`). */
  class: string;
}

/** A guardrail's decision about one piece of content. */
export type Decision =
  | { action: "allow" }
  | { action: "redact"; content: string; entities: RedactedEntity[] }
  | { action: "block"; reason: string; evidence?: DecisionEvidence; patients?: string[] };

/** Context a guardrail may use. */
export interface GuardrailContext {
  stage: GuardrailStage;
  side: "server" | "client";
  /** MCP method of the request being checked, e.g. "sampling/createMessage". */
  method: string;
  /** The request's patient launch context, if any (FHIR Patient id). */
  patient?: string;
  principal?: Principal;
  /**
   * The transport session the request belongs to (MCP `Mcp-Session-Id` over HTTP; the server fills it from the SDK's
   * `extra.sessionId`), if any. With `principal`, it scopes the pipeline's per-session decision cache: without
   * either, nothing is cached.
   */
  sessionId?: string;
  /** Aborted when the guardrail's timeout expires or the request is cancelled. */
  signal?: AbortSignal;
}

/** One entry of the pipeline's report: what each guardrail decided (for the audit record). */
export interface GuardrailDecisionSummary {
  guardrail: string;
  action: "allow" | "redact" | "block";
  /** Entity types redacted (never values). */
  entityTypes?: string[];
  /** Reason code for a block (e.g. "prompt_injection", "guardrail_timeout"). */
  reason?: string;
  /** A block's score, threshold and reason class, when the guardrail gave them (see {@link DecisionEvidence}). */
  evidence?: DecisionEvidence;
  /**
   * Number of text items whose decision came from the pipeline's per-session decision cache instead of a fresh
   * check (absent when none did). Not part of the audit record.
   */
  cached?: number;
}

/** What running a stage over a payload yields. `payload` has the same shape as the input, redacted where needed. */
export interface GuardrailOutcome<T> {
  action: "allow" | "redact" | "block";
  payload: T;
  decisions: GuardrailDecisionSummary[];
  /**
   * When `action` is "redact": how many entities of each type were replaced over the whole payload (e.g.
   * `{ NAME: 2, DATE: 1 }`; types, never values).
   */
  redactions?: Record<string, number>;
  /**
   * Set when `action` is "block"; `evidence` when the blocking guardrail gave a well-formed one; `patients` when it
   * named the patients the blocked content refers to (FHIR ids; for the audit record, never for the caller).
   */
  blocked?: { guardrail: string; reason: string; evidence?: DecisionEvidence; patients?: string[] };
}

/**
 * What the server and client call. `payload` is an MCP params or result object
 * (CreateMessageRequest params, CreateMessageResult, ElicitRequest params, ElicitResult,
 * CallToolRequest params, CallToolResult, ReadResourceResult ...); the runner finds the content in it.
 */
export interface GuardrailRunner {
  /** Names of the guardrails that run at a stage, in order (advertised in the HMCP capability). */
  names(stage: GuardrailStage): string[];
  evaluate<T>(stage: GuardrailStage, payload: T, context: GuardrailContext): Promise<GuardrailOutcome<T>>;
}
