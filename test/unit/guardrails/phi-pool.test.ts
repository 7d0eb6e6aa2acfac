/**
 * PHI scans on worker threads: the pool answers exactly what the in-thread detector answers (on real notes), the
 * phi-redaction guardrail uses it for long text items, a scan that outlives its guardrail timeout is stopped while the
 * event loop keeps running, and abort, close and an unreadable lexicon end in errors a caller can act on.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createPhiDetector, createPhiDetectorPool, createPhiGuardrail, GuardrailPipeline, loadGuardrailPolicy, PhiPoolError } from "../../../src/guardrails/index.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const data = path.resolve(repo, "../shared/data");

function texts(set: string, field: string): string[] {
  const file = path.join(data, set, "dev.jsonl");
  expect(existsSync(file), `${file} (the shared data sets must sit beside the repository)`).toBe(true);
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => String((JSON.parse(l) as Record<string, unknown>)[field] ?? ""));
}

const outputPayload = (text: string) => ({ role: "assistant", model: "m", content: { type: "text", text }, stopReason: "endTurn" });
const ctx = { stage: "output" as const, side: "server" as const, method: "sampling/createMessage" };
/** Text the detector is slowest on (bench/guardrails.ts worst cases, ~0.8 ms per KB): about a second for 1.2 MB. */
const slowText = "Apt 1 ".repeat(200_000);

describe("PHI detector pool", () => {
  const pool = createPhiDetectorPool({ size: 2 });
  afterAll(() => pool.close());

  it("answers exactly what the in-thread detector answers, on every PhysioNet note and Presidio sentence", async () => {
    const all = [...texts("phi-deid-physionet", "text"), ...texts("pii-presidio-synth", "text")];
    const detector = createPhiDetector();
    const [redacted, detected] = await Promise.all([Promise.all(all.map((t) => pool.redact(t))), Promise.all(all.slice(0, 200).map((t) => pool.detect(t)))]);
    const differ = all.filter((t, i) => JSON.stringify(redacted[i]) !== JSON.stringify(detector.redact(t)));
    expect(differ.length).toBe(0);
    expect(detected).toEqual(all.slice(0, 200).map((t) => detector.detect(t)));
    expect(redacted.some((r) => r.entities.length > 0)).toBe(true);
    expect(pool.stats()).toMatchObject({ workerScans: all.length + 200, started: 2, inlineScans: 0, restarts: 0, queued: 0, fallback: false });
  });

  it("stops a running scan on abort (the worker is replaced) and drops a queued one", async () => {
    const before = pool.stats();
    const ac1 = new AbortController();
    const ac2 = new AbortController();
    const ac3 = new AbortController();
    // two workers: two running scans and one queued behind them
    const running = [pool.redact(slowText, ac1.signal), pool.redact(slowText, ac2.signal)];
    const queued = pool.redact(slowText, ac3.signal);
    ac3.abort();
    await expect(queued).rejects.toMatchObject({ name: "PhiPoolError", code: "aborted" });
    const t0 = performance.now();
    setTimeout(() => {
      ac1.abort();
      ac2.abort();
    }, 30);
    for (const p of running) await expect(p).rejects.toBeInstanceOf(PhiPoolError);
    // far sooner than the scans would have taken
    expect(performance.now() - t0).toBeLessThan(500);
    // each worker is stopped at the end of the abort grace (100 ms from the scan's start)
    await new Promise((r) => setTimeout(r, 200));
    expect(pool.stats().restarts - before.restarts).toBe(2);
    await expect(pool.redact("x", AbortSignal.abort())).rejects.toMatchObject({ code: "aborted" });
    // new workers answer the next scans
    expect((await pool.redact("Seen by Dr. Sullivan on 03/14/2024.")).text).toBe("Seen by Dr. [NAME] on [DATE].");
  });

  it("does not run a scan aborted while it waited in a worker behind another", async () => {
    const p = createPhiDetectorPool({ size: 1 });
    await p.redact("warm"); // scans are sent ahead only to a started worker
    const ac = new AbortController();
    const first = p.redact("Apt 1 ".repeat(60_000));
    const second = p.redact(slowText, ac.signal);
    const third = p.redact("Seen by Dr. Sullivan.");
    ac.abort();
    await expect(second).rejects.toMatchObject({ code: "aborted" });
    expect((await first).entities.length).toBeGreaterThan(0);
    expect((await third).text).toBe("Seen by Dr. [NAME].");
    // the worker was stopped when the aborted scan came up, and a new one answered the third
    expect(p.stats()).toMatchObject({ workerScans: 3, started: 2, restarts: 1 });
    await p.close();
  });

  it("counts an aborted scan in its backlog until its worker is done with it or stopped", async () => {
    const p = createPhiDetectorPool({ size: 1 });
    await p.redact("warm"); // scans are sent ahead only to a started worker
    expect(p.backlogChars()).toBe(0);
    const note = "Seen by Dr. Sullivan.";
    const ac = new AbortController();
    const aborted = p.redact(slowText, ac.signal);
    const behind = p.redact(note);
    expect(p.backlogChars()).toBe(slowText.length + note.length);
    ac.abort();
    await expect(aborted).rejects.toMatchObject({ code: "aborted" });
    // the worker is still scanning it (until the end of the abort grace): the scan behind it waits that long
    expect(p.backlogChars()).toBe(slowText.length + note.length);
    expect((await behind).text).toBe("Seen by Dr. [NAME].");
    expect(p.backlogChars()).toBe(0);
    expect(p.stats()).toMatchObject({ restarts: 1 });
    await p.close();
  });

  it("rejects queued and later scans once closed", async () => {
    const p = createPhiDetectorPool();
    const scans = [p.redact(slowText), p.redact("Dr. Sullivan")].map((s) => s.then(() => "resolved", (e: unknown) => e));
    await p.close();
    for (const s of scans) expect(await s).toMatchObject({ name: "PhiPoolError", code: "closed" });
    expect(p.backlogChars()).toBe(0);
    await expect(p.redact("Dr. Sullivan")).rejects.toMatchObject({ code: "closed" });
  });

  it("fails every scan with worker_failed when the detector cannot be built (an unreadable lexicon), without hanging", async () => {
    const p = createPhiDetectorPool({ detector: { lexiconFile: path.join(repo, "no-such-lexicon.json") } });
    await expect(p.redact("Dr. Sullivan")).rejects.toMatchObject({ code: "worker_failed" });
    await expect(p.redact("Dr. Sullivan")).rejects.toMatchObject({ code: "worker_failed" });
    expect(p.stats()).toMatchObject({ workerScans: 0, started: 3, restarts: 3 });
    await p.close();
  });

  it("stops an idle worker and starts another for the next scan", async () => {
    const p = createPhiDetectorPool({ idleTimeoutMs: 50 });
    expect((await p.redact("Seen by Dr. Sullivan.")).text).toBe("Seen by Dr. [NAME].");
    expect((await p.redact("Seen by Dr. Sullivan.")).text).toBe("Seen by Dr. [NAME].");
    expect(p.stats().started).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect((await p.redact("Call 617-555-0123.")).text).toBe("Call [PHONE].");
    expect(p.stats()).toMatchObject({ started: 2, workerScans: 3, restarts: 0 });
    await p.close();
  });

  it("refuses a bad size", () => {
    expect(() => createPhiDetectorPool({ size: 0 })).toThrow(TypeError);
    expect(() => createPhiDetectorPool({ size: 17 })).toThrow(TypeError);
  });
});

describe("phi-redaction guardrail on worker threads", () => {
  it("redacts long text items as the in-place guardrail does", async () => {
    const notes = texts("phi-deid-physionet", "text");
    let long = "";
    for (const n of notes) if ((long += n).length > 4000) break;
    // (a timeout far above the scan: this compares outputs, and at the default 1 s a worker's cold start plus the scan on
    // a machine running other test processes has timed out and blocked, fail closed, instead of redacting)
    const onWorker = new GuardrailPipeline({ output: [{ guardrail: createPhiGuardrail({ workers: 1, workerMinChars: 100 }), timeoutMs: 20_000 }] });
    const inPlace = new GuardrailPipeline({ output: [{ guardrail: createPhiGuardrail({ workers: 0 }), timeoutMs: 20_000 }] });
    const a = await onWorker.evaluate("output", outputPayload(long), ctx);
    const b = await inPlace.evaluate("output", outputPayload(long), ctx);
    expect(a.action).toBe("redact");
    expect(a).toEqual(b);
  });

  it("stops a scan that outlives its timeout and blocks (fail closed) while the event loop keeps running", async () => {
    const pipeline = new GuardrailPipeline({ output: [{ guardrail: createPhiGuardrail({ workers: 1 }), timeoutMs: 150 }] });
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t0 = performance.now();
    const d = await pipeline.evaluate("output", outputPayload(slowText), ctx);
    const elapsed = performance.now() - t0;
    clearInterval(timer);
    expect(d).toMatchObject({ action: "block", blocked: { guardrail: "phi-redaction", reason: "guardrail_timeout" } });
    // answered at the timeout, not when the scan would have ended; a scan on the event loop would allow no tick
    expect(elapsed).toBeLessThan(600);
    expect(ticks).toBeGreaterThanOrEqual(5);
  });

  it("refuses failMode: open (a timed-out scan would pass PHI through)", () => {
    expect(() => new GuardrailPipeline({ output: [{ guardrail: createPhiGuardrail(), failMode: "open" }] })).toThrow(/failMode must be "closed"/);
    const policy = { version: 1, name: "t", stages: { output: [{ guardrail: "phi-redaction", failMode: "open" }] } };
    expect(() => loadGuardrailPolicy(policy)).toThrow(/failMode/);
  });

  it("answers scans whose timeout is shorter than a worker's start once the worker is up (the start is not aborted)", async () => {
    const p = createPhiDetectorPool();
    const outcomes: string[] = [];
    // until one is answered (a loaded machine may time out a few scans after the worker is up; the start never is)
    for (let i = 0; i < 200 && outcomes.at(-1) !== "NAME+DATE"; i++) {
      outcomes.push(await p.redact(`Seen by Dr. Sullivan on 03/14/2024. ${"Doing well. ".repeat(50)}`, AbortSignal.timeout(80)).then((r) => r.entities.map((e) => e.type).join("+"), (e: { code?: string }) => String(e.code)));
    }
    await p.close();
    expect(outcomes.at(-1)).toBe("NAME+DATE");
    // one start; any other is a restart of a worker whose aborted scan outlived its grace (a loaded machine), never a
    // start given up on
    const { started, restarts } = p.stats();
    expect(started).toBe(1 + restarts);
  });

  it("under a burst beyond its timeout, blocks what waited too long and passes nothing unredacted: 500 responses of 12 PhysioNet notes each", async () => {
    const notes = texts("phi-deid-physionet", "text");
    const responses = Array.from({ length: 500 }, (_, r) => ({
      role: "assistant",
      model: "m",
      stopReason: "endTurn",
      content: Array.from({ length: 12 }, (_, k) => ({ type: "text", text: notes[(r * 12 + k) % notes.length]! })),
    }));
    const guardrail = (workers: number) => createPhiGuardrail({ workers, entities: ["NAME", "DATE", "PHONE"] });
    const pipeline = new GuardrailPipeline({ output: [{ guardrail: guardrail(1) }] });
    await pipeline.evaluate("output", outputPayload(slowText.slice(0, 1000)), ctx); // the worker is up
    const outcomes = await Promise.all(responses.map((r) => pipeline.evaluate("output", r, ctx)));
    const inPlace = new GuardrailPipeline({ output: [{ guardrail: guardrail(0) }] });
    const expected = await Promise.all(responses.map((r) => inPlace.evaluate("output", r, ctx)));
    for (let i = 0; i < outcomes.length; i++) {
      const o = outcomes[i]!;
      if (o.action === "block") expect(o.blocked).toEqual({ guardrail: "phi-redaction", reason: "guardrail_timeout" });
      else expect(o.payload).toEqual(expected[i]!.payload);
    }
    expect(expected.filter((o) => o.action === "redact").length).toBeGreaterThan(400);
  }, 60_000);

  it("takes workers and workerMinChars from a policy file and refuses out-of-range values", () => {
    const policy = (params: Record<string, unknown>) => ({ version: 1, name: "t", stages: { output: [{ guardrail: "phi-redaction", params }] } });
    expect(() => loadGuardrailPolicy(policy({ workers: 0, workerMinChars: 1024 }))).not.toThrow();
    expect(() => loadGuardrailPolicy(policy({ workers: 17 }))).toThrow(/workers/);
    expect(() => loadGuardrailPolicy(policy({ workerMinChars: -1 }))).toThrow(/workerMinChars/);
  });
});
