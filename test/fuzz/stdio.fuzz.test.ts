/**
 * Property-based fuzzing of the stdio transport (serveStdio, both eras on one stdin/stdout), in process so the heap and
 * the process's rejections can be watched: each case opens a connection with an opening message (a 2025-11-25
 * `initialize`, a 2026-07-28 `server/discover` or enveloped request, or garbage, any of them mutated), sends random
 * and mutated JSON-RPC lines of both eras (input-round retries with mutated `requestState` / `inputResponses`
 * included), then a marker request, and closes stdin. Properties:
 * - every line the server writes is a well-formed JSON-RPC message (an error has an integer code), and every reply's
 *   id is one the client sent (or null);
 * - the marker request is answered, once, after whatever came before it (the connection still serves);
 * - closing stdin closes the connection (no hang), and no unhandled rejection or uncaught exception occurs;
 * - a fresh connection still serves a known-good exchange on each era afterwards, and the heap after a full GC at the
 *   end is within a bound of the heap at the start.
 * `HMCP_FUZZ_RUNS` sets the number of cases (default 200; `.ci/run` runs many more), `HMCP_FUZZ_SEED` the seed.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { defaultGuardrails, serveStdio, type GuardrailRunner } from "hmcp";
import {
  applyTextEdit, CountingSink, envelope, findGc, fuzzRuns, fuzzSeed, idArb, LEGACY, legacyMessage, MB, METHODS, modernMessage, mutate, mutationArb, serialise, settledHeap,
  textEditArb, watchProcess, wellFormedReply, type Json, type Mutation, type TextEdit,
} from "./fuzz-kit.js";
import { CountingLogger, fuzzAgent } from "./fuzz-agent.js";

const RUNS = fuzzRuns(200);
const SEED = fuzzSeed();

/** One stdio connection to a fresh fuzz agent, over in-memory pipes. */
async function connect(sink: CountingSink, logger: CountingLogger, guardrails: GuardrailRunner) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const lines: string[] = [];
  let buffered = "";
  stdout.setEncoding("utf8");
  stdout.on("data", (chunk: string) => {
    buffered += chunk;
    let i: number;
    while ((i = buffered.indexOf("\n")) >= 0) {
      lines.push(buffered.slice(0, i).replace(/\r$/, ""));
      buffered = buffered.slice(i + 1);
    }
  });
  const close = await serveStdio(fuzzAgent(sink, logger, guardrails, true), { stdin, stdout });
  const waitFor = async (pred: () => boolean, what: string, ms = 10_000) => {
    const end = Date.now() + ms;
    while (!pred()) {
      if (Date.now() > end) throw new Error(`timeout waiting for ${what}; lines so far: ${lines.join("\n").slice(0, 1_000)}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  /** The replies (not server requests or notifications) whose id is `id`. */
  const repliesTo = (id: Json) => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((m) => !("method" in m) && JSON.stringify(m["id"]) === JSON.stringify(id));
  return { stdin, lines, send: (text: string) => stdin.write(`${text}\n`), close, waitFor, repliesTo };
}

type Line =
  | { kind: "legacy" | "modern"; id: Json; method: string; mutations: Mutation[]; edit: TextEdit }
  | { kind: "retry"; id: Json; state: number; stateEdit: number; answer: Json; mutations: Mutation[]; edit: TextEdit }
  | { kind: "garbage"; text: string };

const mutationsArb = fc.oneof({ weight: 3, arbitrary: fc.constant<Mutation[]>([]) }, fc.array(mutationArb, { minLength: 1, maxLength: 3 }));
const lineArb: fc.Arbitrary<Line> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constantFrom("legacy" as const, "modern" as const), id: idArb, method: fc.constantFrom(...METHODS), mutations: mutationsArb, edit: textEditArb }) },
  fc.record({
    kind: fc.constant("retry" as const),
    id: idArb,
    state: fc.nat(),
    stateEdit: fc.nat(),
    answer: fc.oneof(fc.constant<Json>({ action: "accept", content: {} }), fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>),
    mutations: mutationsArb,
    edit: textEditArb,
  }),
  fc.record({ kind: fc.constant("garbage" as const), text: fc.oneof(fc.string({ maxLength: 200 }), fc.json({ maxDepth: 3 }), fc.constantFrom("", " ", "\r", "[]", "[{}]", "null", '{"jsonrpc":"2.0"}', "x".repeat(100_000))) }),
);

const openerArb = fc.record({
  kind: fc.constantFrom("initialize", "initialize", "discover", "discover", "modern-request", "none"),
  mutations: fc.oneof({ weight: 4, arbitrary: fc.constant<Mutation[]>([]) }, fc.array(mutationArb, { minLength: 1, maxLength: 2 })),
});

interface Round {
  requestState: string;
  key: string;
}

function render(line: Line, rounds: Round[]): string {
  if (line.kind === "garbage") return line.text;
  let msg: Json;
  if (line.kind === "retry") {
    const r = rounds[line.state % rounds.length]!;
    const state = line.stateEdit % 4 === 0 ? r.requestState : line.stateEdit % 4 === 1 ? r.requestState.slice(0, -3) + "AAA" : line.stateEdit % 4 === 2 ? r.requestState.split(".").reverse().join(".") : String(line.stateEdit);
    msg = modernMessage(line.id, "tools/call", { name: "ask", arguments: { what: "order" }, requestState: state, inputResponses: { [r.key]: line.answer } });
  } else if (line.kind === "legacy") msg = legacyMessage(line.id, line.method);
  else msg = modernMessage(line.id, line.method, line.method === "tools/call" ? { name: "add", arguments: { a: 1, b: 2 } } : {});
  for (const m of line.mutations) msg = mutate(msg, m);
  return applyTextEdit(serialise(msg), line.edit);
}

describe("fuzzing the stdio transport (both eras)", () => {
  it(`keeps every line well-formed, answers after any input, closes cleanly, heap flat (${RUNS} cases, seed ${SEED})`, { timeout: 30_000 + RUNS * 500 }, async () => {
    const started = performance.now();
    const sink = new CountingSink();
    const logger = new CountingLogger();
    const guardrails = defaultGuardrails();
    const watch = watchProcess();
    const { gc, how } = findGc();
    let markers = 0;

    /** A known-good exchange on each era over a fresh connection; returns input rounds for the retries. */
    async function knownGood(): Promise<Round[]> {
      const legacy = await connect(sink, logger, guardrails);
      legacy.send(JSON.stringify(legacyMessage(1, "initialize")));
      legacy.send(JSON.stringify(legacyMessage(null, "notifications/initialized")));
      legacy.send(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "add", arguments: { a: 2, b: 3 } } }));
      await legacy.waitFor(() => legacy.repliesTo(2).length === 1, "the 2025-era tools/call");
      expect(JSON.stringify(legacy.repliesTo(2)[0])).toContain('"text":"5"');
      expect(legacy.repliesTo(1)[0]).toMatchObject({ result: { protocolVersion: LEGACY } });
      legacy.stdin.end();
      await legacy.close();

      const modern = await connect(sink, logger, guardrails);
      modern.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: envelope() } }));
      modern.send(JSON.stringify(modernMessage(2, "tools/call", { name: "add", arguments: { a: 2, b: 3 } })));
      const rounds: Round[] = [];
      for (let i = 0; i < 3; i++) modern.send(JSON.stringify(modernMessage(10 + i, "tools/call", { name: "ask", arguments: { what: "order" } })));
      await modern.waitFor(() => [2, 10, 11, 12].every((id) => modern.repliesTo(id).length === 1), "the 2026-07-28 requests");
      expect(JSON.stringify(modern.repliesTo(2)[0])).toContain('"text":"5"');
      for (let i = 0; i < 3; i++) {
        const result = (modern.repliesTo(10 + i)[0] as { result?: { resultType?: string; requestState?: string; inputRequests?: Record<string, unknown> } }).result;
        expect(result?.resultType).toBe("input_required");
        rounds.push({ requestState: result!.requestState!, key: Object.keys(result!.inputRequests!)[0]! });
      }
      modern.stdin.end();
      await modern.close();
      return rounds;
    }

    try {
      const rounds = await knownGood();
      const heapBefore = await settledHeap(gc);
      await fc.assert(
        fc.asyncProperty(openerArb, fc.array(lineArb, { maxLength: 6 }), async (opener, body) => {
          const conn = await connect(sink, logger, guardrails);
          const sent: string[] = [];
          const send = (t: string) => {
            sent.push(t);
            conn.send(t);
          };
          if (opener.kind !== "none") {
            let first: Json =
              opener.kind === "initialize" ? legacyMessage("open", "initialize") : opener.kind === "discover" ? { jsonrpc: "2.0", id: "open", method: "server/discover", params: { _meta: envelope() } } : modernMessage("open", "tools/list");
            for (const m of opener.mutations) first = mutate(first, m);
            send(serialise(first));
            if (opener.kind === "initialize") send(JSON.stringify(legacyMessage(null, "notifications/initialized")));
          }
          for (const line of body) send(render(line, rounds));
          const marker = `marker-${++markers}`;
          send(JSON.stringify({ jsonrpc: "2.0", id: marker, method: "ping", params: { _meta: envelope() } }));
          await conn.waitFor(() => conn.lines.some((l) => l.includes(`"${marker}"`)), `the marker ${marker} after ${JSON.stringify(sent).slice(0, 800)}`);
          conn.stdin.end();
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([conn.close(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("close() did not resolve in 10 s")), 10_000)))]);
          clearTimeout(timer);
          const sentIds = new Set(["null"]);
          for (const t of sent) {
            try {
              const v = JSON.parse(t) as unknown;
              for (const o of Array.isArray(v) ? v : [v]) if (o && typeof o === "object" && "id" in o) sentIds.add(JSON.stringify((o as { id: unknown }).id));
            } catch {
              // not JSON: a reply to it has id null
            }
          }
          for (const l of conn.lines) {
            let m: unknown;
            try {
              m = JSON.parse(l);
            } catch {
              throw new Error(`not JSON on stdout: ${l.slice(0, 300)}`);
            }
            const why = wellFormedReply(m);
            if (why) throw new Error(`${why}: ${l.slice(0, 300)}\nafter: ${JSON.stringify(sent).slice(0, 800)}`);
            const o = m as Record<string, unknown>;
            if (!("method" in o) && !sentIds.has(JSON.stringify(o["id"]))) throw new Error(`a reply to an id never sent: ${l.slice(0, 300)}`);
          }
          expect(conn.repliesTo(marker)).toHaveLength(1);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
      await knownGood();
      const heapAfter = await settledHeap(gc);
      if (process.env["HMCP_FUZZ_SNAPSHOT"]) (await import("node:v8")).writeHeapSnapshot(process.env["HMCP_FUZZ_SNAPSHOT"]);
      const bound = gc ? 16 : 96;
      console.log(
        `[fuzz stdio] ${RUNS} cases, seed ${SEED}, ${((performance.now() - started) / 1000).toFixed(1)} s; audit records ${sink.count}; logged errors ${logger.errors} ${JSON.stringify(logger.firstErrors)}; ` +
          `heap ${(heapBefore / MB).toFixed(1)} → ${(heapAfter / MB).toFixed(1)} MiB (${how}, bound +${bound} MiB)`,
      );
      expect((heapAfter - heapBefore) / MB).toBeLessThan(bound);
      expect(watch.problems).toEqual([]);
    } finally {
      watch.stop();
    }
  });
});
