/**
 * Asking the caller mid-request on MCP 2026-07-28 (specification 2026-07-28, "Multi Round-Trip Requests"): a handler's
 * `ctx.elicit` / `ctx.sample` become input-required rounds, behind the same API the legacy era serves with real
 * server → client requests.
 *
 * How: the handler is run again from the start on every retry (the protocol keeps no server-side state between rounds).
 * Each question it asks, and each {@link RequestContext.step} it runs, takes the next place in a journal. A question
 * whose answer the journal holds gets that answer at once; the first question without one ends the run with an
 * `InputRequiredResult` (`resultType: "input_required"`): the question as an embedded request, and the journal sealed
 * in `requestState` (see request-state.ts). The retry's `inputResponses` answer it, and the handler runs again.
 *
 * What keeps a replay honest: a question must be asked again exactly as before (same kind, same params digest), and a
 * step under the same name, or the retry is refused (`input_round_diverged`): an approval given to one question never
 * answers another. A step's result is replayed from the journal, never re-run (a write to the EMR happens once per
 * flow); a state is single-use, so a replayed retry runs nothing.
 *
 * @internal
 */
import { randomUUID } from "node:crypto";
import { CreateMessageResultSchema, ElicitResultSchema } from "@modelcontextprotocol/core";
import { CLIENT_CAPABILITIES_META_KEY, MissingRequiredClientCapabilityError, ProtocolError } from "@modelcontextprotocol/server";
import type { CreateMessageResult, ElicitResult, JSONRPCRequest } from "@modelcontextprotocol/server";
import { contentDigest } from "../audit/canonical-json.js";
import { INTERNAL_ERROR, INVALID_PARAMS, type Principal } from "../protocol/index.js";
import { LIMIT_REACHED } from "../protocol/errors.js";
import { RequestStateError, RequestStateStoreFull, type OpenedRequestState, type RequestStateSealer } from "./request-state.js";
import { principalIdentity } from "../auth/principal.js";

/** Methods whose result may be `input_required` (2026-07-28, "Supported Requests"). */
export const INPUT_ROUND_METHODS: ReadonlySet<string> = new Set(["tools/call", "prompts/get", "resources/read"]);

type AskKind = "elicitation" | "sampling";
type ClientCaps = { elicitation?: { form?: unknown; url?: unknown } | null; sampling?: unknown };

/** Most rounds one flow may take, and most bytes its sealed journal may hold (a cap on what a client carries back). */
const MAX_ROUNDS = 64;
const MAX_JOURNAL_BYTES = 512 * 1024;
type JournalEntry = { t: "ask"; kind: AskKind; ask: string; answer: unknown } | { t: "step"; name: string; value?: unknown };
type Pending = { kind: AskKind; ask: string; key: string; method: string; params: unknown };
interface Journal {
  v: 1;
  flow: string;
  /** Rounds this state ends (1 for the state of a flow's first request). */
  round: number;
  entries: JournalEntry[];
  pending: { kind: AskKind; ask: string; key: string };
}

/**
 * An answer to a question as the journal keeps it, after checking it is the asked kind's result (an `ElicitResult`, a
 * `CreateMessageResult`). @returns the journal entry and the interaction to record; undefined when malformed
 */
export function journalAnswer(q: { kind: AskKind; ask: string }, raw: unknown): { entry: unknown; outcome: "accept" | "decline" | "cancel" | "answered" } | undefined {
  const parsed = (q.kind === "elicitation" ? ElicitResultSchema : CreateMessageResultSchema).safeParse(raw);
  if (!parsed.success) return undefined;
  return { entry: { t: "ask", kind: q.kind, ask: q.ask, answer: parsed.data }, outcome: q.kind === "elicitation" ? (parsed.data as ElicitResult).action : "answered" };
}

/** Thrown by `ctx.elicit` / `ctx.sample` / `ctx.step` when the run must end with an input-required result. */
export class InputRequiredSignal extends Error {
  constructor() {
    super("input required: the handler's question goes back to the caller as an MCP 2026-07-28 input request");
    this.name = "InputRequiredSignal";
  }
}

function refusal(reason: string): ProtocolError {
  return new ProtocolError(INVALID_PARAMS, "Invalid, expired or already used requestState", { reason });
}

/** Errors of the rounds themselves, which leave as JSON-RPC errors even from inside a tool (not as `isError` results). */
const ROUND_ERRORS = new WeakSet<object>();
function roundError(e: ProtocolError): ProtocolError {
  ROUND_ERRORS.add(e);
  return e;
}
/** Whether `e` was raised by the input rounds (a diverged replay, a step's non-JSON result). */
export function isInputRoundError(e: unknown): boolean {
  return typeof e === "object" && e !== null && ROUND_ERRORS.has(e);
}

function diverged(): ProtocolError {
  return roundError(new ProtocolError(INTERNAL_ERROR, "The handler did not repeat its earlier questions and steps on the retry", { reason: "input_round_diverged" }));
}

/**
 * The binding a state is sealed for: the agent, method, the params that name the target and carry its arguments
 * (without `_meta`, save the declared patient), the principal and the patient launch context.
 */
export function roundBinding(agent: string, request: JSONRPCRequest, principal: Principal | undefined, patientMetaKey: string): string {
  const params = { ...((request.params ?? {}) as Record<string, unknown>) };
  const meta = params["_meta"] as Record<string, unknown> | undefined;
  delete params["_meta"];
  delete params["inputResponses"];
  delete params["requestState"];
  const declared = meta?.[patientMetaKey];
  const who = principal === undefined ? [] : principalIdentity(principal).who;
  return JSON.stringify([agent, request.method, contentDigest({ params, declared: declared ?? null }), who, principal?.patient ?? null]);
}

/** The rounds of one modern-era request: the journal read back from `requestState`, and this run's place in it. */
export class InputRounds {
  readonly #sealer: RequestStateSealer;
  /** The binding, computed on first use: most requests ask nothing and bring no state, and need none. */
  readonly #bindingOf: () => string;
  #binding: string | undefined;
  readonly #capabilities: ClientCaps | undefined;
  #flow: string | undefined;
  #round = 0;
  #entries: JournalEntry[] = [];
  #cursor = 0;
  #previous: Journal["pending"] | undefined;
  #pending: Pending | undefined;
  /**
   * A task's run: the questions asked beside the pending one, before its answer (`Promise.all` of `ctx.elicit` calls),
   * each at its own journal place after it; all of them wait for their answers at once (see {@link questions}).
   */
  #beside: Pending[] = [];
  /** A task's run: a step was reached while a question waits, so no later question may join it (its place would move). */
  #besideClosed = false;
  #result: Promise<Record<string, unknown>> | undefined;
  /** The opened state, claimed by {@link claim} right before the handler runs. */
  #opened: OpenedRequestState | undefined;
  /** Steps now running: no question may be asked meanwhile (its journal place would be ambiguous). */
  #stepsRunning = 0;

  /** A task's run (tasks.ts): the journal lives in the task store, not in a sealed `requestState`. */
  #task: { onStep: (entries: readonly unknown[]) => Promise<void> } | undefined;

  /** The caller's principal key (`principalKeyOf`, src/auth/principal.ts), for the ledger's per-principal bound. */
  readonly #principalOf: () => string | undefined;

  constructor(sealer: RequestStateSealer | undefined, binding: () => string, envelope: Record<string, unknown> | undefined, principal: () => string | undefined = () => undefined) {
    this.#sealer = sealer!;
    this.#bindingOf = binding;
    this.#principalOf = principal;
    this.#capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as ClientCaps | undefined;
  }

  /**
   * The rounds of a task's run (extension `io.modelcontextprotocol/tasks`): the handler replays `entries` (the task's
   * journal: answers given through `tasks/update`, step results), a new question ends the run with its input request
   * (surfaced by `tasks/get`), and `onStep` is awaited with the journal each time a step ends (so a step's result is
   * durable before the handler goes on).
   * @param capabilities - the client capabilities declared on the `tools/call` that created the task
   */
  static forTask(entries: readonly unknown[], capabilities: unknown, onStep: (entries: readonly unknown[]) => Promise<void>): InputRounds {
    const rounds = new InputRounds(undefined, () => "", { [CLIENT_CAPABILITIES_META_KEY]: capabilities });
    rounds.#entries = [...(entries as JournalEntry[])];
    rounds.#task = { onStep };
    return rounds;
  }

  /**
   * The questions this run ends with (kind, params digest and input-request key), in journal order: one, or in a task's
   * run several asked at once (each answer joins the journal at its question's place, once all are answered).
   */
  get questions(): Array<{ kind: AskKind; ask: string; key: string }> {
    const p = this.#pending;
    return p === undefined ? [] : [p, ...this.#beside].map((q) => ({ kind: q.kind, ask: q.ask, key: q.key }));
  }

  /** A task's journal after this run (answers and step results, in order). */
  get entries(): readonly unknown[] {
    return this.#entries;
  }

  /** The flow id and this request's round (1 = the flow's first request), once the request is part of a flow. */
  get round(): { flow: string; round: number } | undefined {
    return this.#flow === undefined ? undefined : { flow: this.#flow, round: this.#round + 1 };
  }

  /** Whether this run ends with an input request. */
  get pending(): boolean {
    return this.#pending !== undefined;
  }

  /** Whether this flow has journalled anything (answers, steps): then it cannot go on through the SDK's own rounds. */
  get journalled(): boolean {
    return this.#entries.length > 0 || this.#cursor > 0;
  }

  /**
   * Opens the retry's `requestState` (not claimed yet: {@link claim}). @throws ProtocolError -32602 (`data.reason`, see
   * {@link RequestStateError}) when refused; the flow is then known for the audit record when the state was authentic
   */
  async open(state: string): Promise<void> {
    let opened: OpenedRequestState;
    try {
      opened = await this.#sealer.open(state, this.#bound());
    } catch (e) {
      if (e instanceof RequestStateError) {
        this.#adopt(e.journal);
        throw refusal(e.reason);
      }
      throw e;
    }
    const journal = opened.journal as Journal;
    if (journal?.v !== 1 || !Array.isArray(journal.entries) || typeof journal.flow !== "string") throw refusal("request_state_invalid");
    this.#adopt(journal);
    this.#entries = journal.entries;
    this.#previous = journal.pending;
    this.#opened = opened;
  }

  /**
   * Claims the opened state (single use), once the retry's answer passed the guardrails and its schema check: a retry
   * refused before that leaves the state usable. @throws ProtocolError -32602 `request_state_replayed`; -32000
   * `too_many_input_rounds` when the store is at its bound, its own or the caller's ({@link RequestStateStoreFull}: the
   * state stays usable)
   */
  async claim(): Promise<void> {
    if (this.#opened === undefined) return;
    try {
      await this.#sealer.claim(this.#opened, this.#principalOf());
    } catch (e) {
      if (e instanceof RequestStateError) throw refusal(e.reason);
      if (e instanceof RequestStateStoreFull) {
        const where = e.scope === "principal" ? "for this caller" : "on this agent";
        throw new ProtocolError(LIMIT_REACHED, `Too many input rounds in progress ${where}: retry later (the requestState stays valid until it expires)`, { reason: "too_many_input_rounds" });
      }
      throw e;
    }
  }

  #bound(): string {
    return (this.#binding ??= this.#bindingOf());
  }

  /** Takes the flow id and round of an authentic journal (for the audit record). */
  #adopt(journal: unknown): void {
    const j = journal as Partial<Journal> | undefined;
    if (typeof j?.flow === "string" && typeof j.round === "number") {
      this.#flow = j.flow;
      this.#round = j.round;
    }
  }

  /**
   * Takes the answer to the question the previous round asked, from the retry's `inputResponses` (after the input
   * guardrail stage). Without one, the handler asks again.
   * @returns the interaction to record (kind and outcome), if answered
   * @throws ProtocolError -32602 (`invalid_input_response`) when the answer is not the asked kind's result
   */
  takeAnswer(responses: Record<string, unknown> | undefined): { kind: AskKind; outcome: "accept" | "decline" | "cancel" | "answered" } | undefined {
    const p = this.#previous;
    const raw = p === undefined ? undefined : responses?.[p.key];
    if (p === undefined || raw === undefined) return undefined;
    const parsed = (p.kind === "elicitation" ? ElicitResultSchema : CreateMessageResultSchema).safeParse(raw);
    if (!parsed.success) {
      throw new ProtocolError(INVALID_PARAMS, `Invalid inputResponses entry '${p.key}': expected ${p.kind === "elicitation" ? "an ElicitResult" : "a CreateMessageResult"}`, { reason: "invalid_input_response" });
    }
    this.#entries.push({ t: "ask", kind: p.kind, ask: p.ask, answer: parsed.data });
    this.#previous = undefined;
    return { kind: p.kind, outcome: p.kind === "elicitation" ? (parsed.data as ElicitResult).action : "answered" };
  }

  /** A question of the handler: its journalled answer, or the end of this run ({@link InputRequiredSignal}). */
  ask(kind: "elicitation", params: unknown): ElicitResult;
  ask(kind: "sampling", params: unknown): CreateMessageResult;
  ask(kind: AskKind, params: unknown): unknown {
    if (this.#pending) {
      // a task's run: a question asked while another waits, before its answer, does not depend on it: it waits beside
      // it (both keys in inputRequests at once). Elsewhere (a round's requestState carries one question) it is asked
      // on the next round.
      if (this.#task && !this.#besideClosed && this.#stepsRunning === 0 && this.#declares(kind, params)) {
        const ask = contentDigest(params) ?? "";
        const i = this.#cursor++;
        this.#beside.push({ kind, ask, key: `${kind}-${i}`, method: kind === "elicitation" ? "elicitation/create" : "sampling/createMessage", params });
      } else this.#besideClosed = true;
      throw new InputRequiredSignal();
    }
    // a question while a step runs (beside it, or inside it) has no single place in the journal
    if (this.#stepsRunning > 0) throw roundError(new ProtocolError(INTERNAL_ERROR, "A question was asked while a ctx.step was running (await the step first; ask outside it)", { reason: "input_round_concurrent" }));
    const ask = contentDigest(params) ?? "";
    const i = this.#cursor++;
    const e = this.#entries[i];
    if (e !== undefined) {
      if (e.t !== "ask" || e.kind !== kind || e.ask !== ask) throw diverged();
      return e.answer;
    }
    if (!this.#declares(kind, params)) {
      // MCP 2026-07-28 (Multi Round-Trip Requests; basic/index, "Client capabilities"): an input request the request's
      // envelope does not declare support for is -32021 with the missing capability (HTTP 400), as the SDK answers it
      throw roundError(new MissingRequiredClientCapabilityError({ requiredCapabilities: { [kind]: {} } }, `The client did not declare the ${kind} capability this request needs`));
    }
    this.#flow ??= randomUUID();
    this.#pending = { kind, ask, key: `${kind}-${i}`, method: kind === "elicitation" ? "elicitation/create" : "sampling/createMessage", params };
    throw new InputRequiredSignal();
  }

  /**
   * Whether the request's envelope declares the capability `params` needs: `sampling`; elicitation in form mode
   * (`elicitation.form`, or a bare `elicitation: {}`, which 2025-11-25 made mean form) or in URL mode (`elicitation.url`).
   */
  #declares(kind: AskKind, params: unknown): boolean {
    const declared = this.#capabilities?.[kind];
    if (declared === undefined || declared === null) return false;
    if (kind === "sampling") return true;
    const e = declared as { form?: unknown; url?: unknown };
    if ((params as { mode?: unknown }).mode === "url") return e.url !== undefined;
    return e.form !== undefined || Object.keys(e).length === 0;
  }

  /** A step of the handler: its journalled result, or `run()`'s (journalled at its own place, whenever it ends). */
  async step<T>(name: string, run: () => T | Promise<T>): Promise<T> {
    if (this.#pending) {
      this.#besideClosed = true;
      throw new InputRequiredSignal();
    }
    const i = this.#cursor++;
    const e = this.#entries[i];
    if (e !== undefined) {
      if (e.t !== "step" || e.name !== name) throw diverged();
      return e.value as T;
    }
    this.#stepsRunning++;
    let value: T;
    try {
      value = await run();
    } finally {
      this.#stepsRunning--;
    }
    let copy: unknown;
    try {
      copy = value === undefined ? undefined : JSON.parse(JSON.stringify(value));
    } catch {
      throw roundError(new ProtocolError(INTERNAL_ERROR, "A step's result must be JSON", { reason: "step_not_json" }));
    }
    this.#entries[i] = copy === undefined ? { t: "step", name } : { t: "step", name, value: copy };
    if (this.#task) await this.#task.onStep(this.#entries);
    return value;
  }

  /**
   * Refuses a handler's own `InputRequiredResult` (the SDK's `inputRequired()`) in a flow that journalled answers or
   * steps: its retry would carry the handler's state, not HMCP's, so the journal (and each step's once-only result)
   * would be lost and the steps run again. @throws ProtocolError -32603 (`input_round_mixed`)
   */
  refuseMixedRounds(result: unknown): void {
    if (this.#pending || !this.journalled) return;
    if ((result as { resultType?: unknown } | null)?.resultType !== "input_required") return;
    throw roundError(new ProtocolError(INTERNAL_ERROR, "A handler returned its own input-required result after ctx.step or an HMCP question: use one or the other in one request", { reason: "input_round_mixed" }));
  }

  /** This run's `InputRequiredResult` (sealed once, however often asked for). */
  inputRequiredResult(): Promise<Record<string, unknown>> {
    const p = this.#pending;
    if (p === undefined) throw new Error("InputRounds: no question is pending");
    this.#result ??= (async () => {
      const journal: Journal = { v: 1, flow: this.#flow!, round: this.#round + 1, entries: this.#entries, pending: { kind: p.kind, ask: p.ask, key: p.key } };
      // a hole is a step that never ended (a question asked beside it): its result would be lost, so the step re-run
      let holes = journal.entries.length !== this.#cursor - 1 - this.#beside.length;
      for (let k = 0; k < journal.entries.length && !holes; k++) holes = !(k in journal.entries);
      if (holes) throw roundError(new ProtocolError(INTERNAL_ERROR, "A question was asked while a ctx.step was running (await the step first)", { reason: "input_round_concurrent" }));
      if (journal.round > MAX_ROUNDS || JSON.stringify(journal).length > MAX_JOURNAL_BYTES) {
        throw roundError(new ProtocolError(INTERNAL_ERROR, `This request asked too often or carries too much (at most ${MAX_ROUNDS} rounds and ${MAX_JOURNAL_BYTES} bytes of answers and step results)`, { reason: "input_round_limit" }));
      }
      // a task keeps its journal in the task store; the questions go out through tasks/get
      if (this.#task) return { resultType: "input_required", inputRequests: Object.fromEntries([p, ...this.#beside].map((q) => [q.key, { method: q.method, params: q.params }])) };
      const requestState = await this.#sealer.seal(journal, this.#bound());
      return { resultType: "input_required", inputRequests: { [p.key]: { method: p.method, params: p.params } }, requestState };
    })();
    return this.#result;
  }
}
