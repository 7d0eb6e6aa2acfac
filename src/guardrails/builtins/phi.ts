/**
 * `phi-redaction`: replaces PHI in every text item with `[TYPE]` (HIPAA Safe Harbor identifiers;
 * see ../phi/detector.ts). Use on the output stage (minimum necessary) and on everything a client
 * sends to an external model. With `action: block`, content with PHI is refused instead (reason `phi_detected`).
 *
 * With `workers` > 0, text items of `workerMinChars` or more are scanned on a worker thread (../phi/pool.ts), shared by every phi-redaction
 * guardrail with the same entity types and worker count in the process, started when the guardrail is built: the scan
 * (~0.3 ms per KB) does not hold the event loop, and one that outlives the guardrail's timeout is stopped. Shorter
 * items, and items that would queue behind {@link MAX_BACKLOG_CHARS} or more of scans (a burst), are scanned in
 * place. `workers: 0` (the default) scans everything in place. The guardrail refuses `failMode: open`: a timed-out scan would let PHI
 * through.
 */
import { z } from "zod";
import type { Guardrail, GuardrailFactory } from "../guardrail.js";
import type { Decision } from "../types.js";
import { createPhiDetector, PHI_ENTITY_TYPES, type PhiEntityType, type PhiRedaction } from "../phi/detector.js";
import { createPhiDetectorPool, type PhiDetectorPool } from "../phi/pool.js";

const ParamsSchema = z.strictObject({
  /** Entity types to redact; default all. */
  entities: z.array(z.enum(PHI_ENTITY_TYPES)).min(1).optional(),
  /** "redact" (default) or "block". */
  action: z.enum(["redact", "block"]).optional(),
  /** Skip the system prompt (it is the agent's own text). Default false. */
  skipSystemPrompt: z.boolean().optional(),
  /**
   * Worker threads for scans of long text items, 0–16; default 0 (every scan runs on the event loop). See
   * docs/guardrails.md for when to turn it on: it frees the event loop and bounds a scan by the timeout, but under a
   * burst of more scanning than fits in the timeout, items waiting for a worker are blocked (`guardrail_timeout`).
   */
  workers: z.number().int().min(0).max(16).optional(),
  /** Text items shorter than this many characters (UTF-16 code units) are scanned in place; default 512. */
  workerMinChars: z.number().int().min(0).optional(),
});

/**
 * Scans already waiting for or running on the workers beyond which an item is scanned in place: ~256 K characters is
 * ~80 ms of work at 0.3 ms per KB, so time spent queueing stays well inside a guardrail's timeout (default 1,000 ms)
 * and a burst is shared between the workers and the event loop.
 */
const MAX_BACKLOG_CHARS = 256 * 1024;

/** Worker pools shared by the phi-redaction guardrails of this process, by entity types and size (never closed: idle pools hold no thread). */
const pools = new Map<string, PhiDetectorPool>();

function sharedPool(entities: readonly PhiEntityType[] | undefined, size: number): PhiDetectorPool {
  const key = JSON.stringify([entities ? [...entities].sort() : null, size]);
  let pool = pools.get(key);
  if (!pool) {
    pools.set(key, (pool = createPhiDetectorPool({ size, ...(entities && { detector: { entities } }) })));
    pool.start();
  }
  return pool;
}

/** Options of {@link createPhiGuardrail} (same as the policy parameters). */
export type PhiGuardrailOptions = z.input<typeof ParamsSchema> & { name?: string };

/** Builds the PHI guardrail. @throws ZodError on bad options */
export function createPhiGuardrail(options: PhiGuardrailOptions = {}): Guardrail {
  const { name = "phi-redaction", ...params } = options;
  const p = ParamsSchema.parse(params);
  const detector = createPhiDetector(p.entities ? { entities: p.entities } : {});
  const workers = p.workers ?? 0;
  const pool = workers > 0 ? sharedPool(p.entities, workers) : undefined;
  const minChars = p.workerMinChars ?? 512;
  const block = p.action === "block";
  const decide = (r: PhiRedaction): Decision => {
    if (r.entities.length === 0) return { action: "allow" };
    if (block) return { action: "block", reason: "phi_detected" };
    return { action: "redact", content: r.text, entities: r.entities };
  };
  return {
    name,
    // the decision depends only on the text and location.kind (a fixed detector: entities, action, skipSystemPrompt)
    cacheable: true,
    requiresFailClosed: true,
    check(text, ctx) {
      if (p.skipSystemPrompt && ctx.location.kind === "systemPrompt") return { action: "allow" };
      // the pipeline aborts ctx.signal at this guardrail's timeout: the pool then stops the scan
      if (pool && text.length >= minChars && pool.backlogChars() < MAX_BACKLOG_CHARS) return pool.redact(text, ctx.signal).then(decide);
      return decide(detector.redact(text));
    },
  };
}

export const phiFactory: GuardrailFactory = (params, env) => createPhiGuardrail({ ...ParamsSchema.parse(params), name: env.name });
