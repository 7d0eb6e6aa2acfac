/**
 * The `Guardrail` interface: what one check is, how it is configured from a policy file, and the
 * two kinds of input it may look at (one text item, or the structure of the whole exchange).
 */
import type { Decision, GuardrailContext, GuardrailStage } from "./types.js";

/** Where a text item sits in the payload, for guardrails that treat parts differently. */
export interface TextLocation {
  /** Dotted path into the payload, e.g. `messages[2].content[0].text`, `systemPrompt`, `arguments.note`. */
  path: string;
  /** Role of the message the text belongs to (`user`, `assistant`), when the text is in a message. */
  role?: string;
  /** What kind of field the text is. */
  kind: "message" | "systemPrompt" | "result" | "elicitation" | "toolArguments" | "resource" | "other";
}

/** Context of one text check: the request context plus where the text sits. */
export interface TextCheckContext extends GuardrailContext {
  location: TextLocation;
}

/** A structural view of an exchange, for guardrails that check counts, types and parameters. */
export interface ExchangeView {
  /** The payload as given (read it, never mutate it). */
  payload: unknown;
  /** Number of messages (`messages.length`), 0 when the payload has none. */
  messageCount: number;
  /** Content block types in order of appearance (`text`, `image`, `audio`, `resource`, `resource_link`, ...). */
  contentTypes: string[];
  /** Total characters over every text item. */
  totalChars: number;
  /** `maxTokens` of a CreateMessageRequest, if present. */
  maxTokens?: number;
  /** `modelPreferences.hints[].name` of a CreateMessageRequest. */
  modelHints: string[];
}

/**
 * What a structural check decides. `modify` returns a changed payload of the same shape
 * (e.g. `maxTokens` clamped) and names the changes (parameter names, never values).
 */
export type ExchangeDecision =
  | { action: "allow" }
  | { action: "block"; reason: string; patients?: string[] }
  | { action: "modify"; payload: unknown; changes: string[] };

/**
 * One guardrail. Implement `check` (per text item: every message, the system prompt, results,
 * elicitation text, tool arguments, resource text) and/or `checkExchange` (the whole payload's structure).
 * Either may be sync or async; async checks receive `context.signal`, aborted on timeout.
 * Decisions name entity types and offsets, never the matched values.
 */
export interface Guardrail {
  /** Name as used in policy files and in `data.guardrail` of a block. */
  readonly name: string;
  /** Stages this guardrail may run at; the policy places it, this only restricts. Default both. */
  readonly stages?: readonly GuardrailStage[];
  /**
   * Opt-in to the pipeline's per-session decision cache. Set it to `true` only if `check`'s decision is a pure
   * function of the text, the stage, the side and `location.kind` / `location.role`: the same for every patient,
   * principal, method and path, at any time, with no outside state (a model call, a clock, a counter). The pipeline
   * may then answer an identical text item of the same session from the cache instead of calling `check` (see
   * `PipelineConfig.decisionCache`). Default false: `check` runs on every item.
   */
  readonly cacheable?: boolean;
  /**
   * The pipeline refuses `failMode: "open"` for this guardrail: set it on a guardrail whose failure or timeout would let
   * through what it exists to remove (a PHI redactor). Default false.
   */
  readonly requiresFailClosed?: boolean;
  check?(text: string, context: TextCheckContext): Decision | Promise<Decision>;
  checkExchange?(view: ExchangeView, context: GuardrailContext): ExchangeDecision | Promise<ExchangeDecision>;
}

/** What a guardrail factory receives besides its parameters. */
export interface GuardrailFactoryEnv {
  /** The guardrail's name as written in the policy. */
  name: string;
  /** Directory holding the policy file (for data files named relative to it), or the package's guardrails/ folder. */
  baseDir: string;
}

/**
 * Builds a guardrail from its policy parameters (`params`, `unknown`: validate them, e.g. with zod,
 * and throw an Error naming the bad key; the loader prefixes the file and key path).
 */
export type GuardrailFactory = (params: unknown, env: GuardrailFactoryEnv) => Guardrail;
