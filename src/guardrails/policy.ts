/**
 * Policy files (guardrails/*.yaml|json): which guardrails run at which stage, with which parameters,
 * timeout and failure mode. Validated with zod on load; unknown keys and unknown guardrail names are
 * errors naming the file and the key path.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { registerBuiltins } from "./builtins/index.js";
import { GuardrailPipeline, type PipelineEntry } from "./pipeline.js";
import { defaultRegistry, type GuardrailRegistry } from "./registry.js";
import { guardrailsDir } from "./root.js";
import type { GuardrailStage } from "./types.js";

registerBuiltins(defaultRegistry);

const FailModeSchema = z.enum(["closed", "open"]);
const TimeoutSchema = z.number().positive().max(60_000);

const EntrySchema = z.strictObject({
  /** Registered guardrail name. */
  guardrail: z.string().min(1),
  /** Parameters, validated by the guardrail's factory. */
  params: z.record(z.string(), z.unknown()).optional(),
  /** ms; default from `defaults.timeoutMs`, else 1000. */
  timeoutMs: TimeoutSchema.optional(),
  /** default from `defaults.failMode`, else "closed". */
  failMode: FailModeSchema.optional(),
  description: z.string().optional(),
});

/**
 * The pipeline's per-session decision cache (see `PipelineConfig.decisionCache`): `false` turns it off, `true` (the
 * default when absent) keeps the default limits, an object sets them.
 */
const DecisionCacheSchema = z.union([
  z.boolean(),
  z.strictObject({
    /** Most decisions kept, over all sessions; default 4096. */
    maxEntries: z.number().int().positive().optional(),
    /** Most bytes kept (UTF-16 bytes of keys and redacted texts, plus fixed overheads); default 8 MiB. */
    maxBytes: z.number().int().positive().optional(),
  }),
]);

/** Schema of a policy file (version 1). */
export const GuardrailPolicySchema = z.strictObject({
  version: z.literal(1),
  name: z.string().min(1),
  description: z.string().optional(),
  defaults: z.strictObject({ timeoutMs: TimeoutSchema.optional(), failMode: FailModeSchema.optional() }).optional(),
  decisionCache: DecisionCacheSchema.optional(),
  stages: z.strictObject({ input: z.array(EntrySchema).optional(), output: z.array(EntrySchema).optional() }),
});
export type GuardrailPolicy = z.infer<typeof GuardrailPolicySchema>;

/** A policy that failed to load: `source` is the file (or "<object>"), `keyPath` the offending key. */
export class GuardrailPolicyError extends Error {
  constructor(
    readonly source: string,
    readonly keyPath: string,
    detail: string,
  ) {
    super(`${source}: ${keyPath ? keyPath + ": " : ""}${detail}`);
    this.name = "GuardrailPolicyError";
  }
}

function keyPathOf(p: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const k of p) out += typeof k === "number" ? `[${k}]` : out ? `.${String(k)}` : String(k);
  return out;
}

function zodToPolicyError(source: string, prefix: ReadonlyArray<PropertyKey>, err: z.ZodError): GuardrailPolicyError {
  const issue = err.issues[0]!;
  let p = [...prefix, ...issue.path];
  let detail = issue.message;
  if (issue.code === "unrecognized_keys") {
    p = [...p, issue.keys[0]!];
    detail = `unknown key "${issue.keys.join('", "')}"`;
  }
  return new GuardrailPolicyError(source, keyPathOf(p), detail);
}

/** Options of {@link loadGuardrailPolicy}. */
export interface LoadPolicyOptions {
  /** Registry to resolve names; default the process-wide one (built-ins + {@link registerGuardrail}). */
  registry?: GuardrailRegistry;
  /** Directory for data files a guardrail names; default the policy file's directory, else the package's guardrails/. */
  baseDir?: string;
}

/**
 * Loads a policy and builds its pipeline.
 * @param source - a path to a `.yaml`/`.yml`/`.json` file, or an already parsed policy object
 * @throws GuardrailPolicyError naming the file and key path: unreadable or unparsable file, schema
 *   violation, unknown key, unknown guardrail name, bad guardrail parameters
 */
export function loadGuardrailPolicy(source: string | object, options: LoadPolicyOptions = {}): GuardrailPipeline {
  const registry = options.registry ?? defaultRegistry;
  let raw: unknown;
  let label = "<policy object>";
  let baseDir = options.baseDir;
  if (typeof source === "string") {
    label = source;
    baseDir ??= path.dirname(path.resolve(source));
    let text: string;
    try {
      text = readFileSync(source, "utf8");
    } catch (e) {
      throw new GuardrailPolicyError(label, "", `cannot read policy file (${(e as NodeJS.ErrnoException).code ?? "error"})`);
    }
    try {
      raw = source.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
    } catch (e) {
      throw new GuardrailPolicyError(label, "", `not valid ${source.endsWith(".json") ? "JSON" : "YAML"}: ${(e as Error).message.split("\n")[0]}`);
    }
  } else {
    raw = source;
  }
  baseDir ??= guardrailsDir();
  const parsed = GuardrailPolicySchema.safeParse(raw);
  if (!parsed.success) throw zodToPolicyError(label, [], parsed.error);
  const policy = parsed.data;
  const build = (stage: GuardrailStage): PipelineEntry[] =>
    (policy.stages[stage] ?? []).map((entry, i) => {
      const at = ["stages", stage, i];
      const factory = registry.get(entry.guardrail);
      if (!factory) {
        throw new GuardrailPolicyError(label, keyPathOf([...at, "guardrail"]), `unknown guardrail "${entry.guardrail}" (known: ${registry.names().join(", ")})`);
      }
      let guardrail;
      try {
        guardrail = factory(entry.params ?? {}, { name: entry.guardrail, baseDir: baseDir! });
      } catch (e) {
        if (e instanceof z.ZodError) throw zodToPolicyError(label, [...at, "params"], e);
        throw new GuardrailPolicyError(label, keyPathOf([...at, "params"]), (e as Error).message);
      }
      if (guardrail.stages && !guardrail.stages.includes(stage)) {
        throw new GuardrailPolicyError(label, keyPathOf([...at, "guardrail"]), `guardrail "${entry.guardrail}" does not run at stage "${stage}"`);
      }
      const failMode = entry.failMode ?? policy.defaults?.failMode;
      const timeoutMs = entry.timeoutMs ?? policy.defaults?.timeoutMs;
      return { guardrail, ...(failMode ? { failMode } : {}), ...(timeoutMs ? { timeoutMs } : {}) };
    });
  return new GuardrailPipeline({
    input: build("input"),
    output: build("output"),
    ...(policy.decisionCache !== undefined && { decisionCache: policy.decisionCache }),
  });
}

let cachedDefault: GuardrailPipeline | undefined;

/**
 * The pipeline of the package's `guardrails/default.yaml` (built once, then cached): what the server
 * and client use when no policy is configured (secure by default).
 * @throws GuardrailPolicyError if the shipped policy is broken
 */
export function defaultGuardrails(): GuardrailPipeline {
  cachedDefault ??= loadGuardrailPolicy(path.join(guardrailsDir(), "default.yaml"));
  return cachedDefault;
}

/** Path of a policy file shipped in the package's guardrails/ folder, e.g. `policyPath("external-model")`. */
export function policyPath(name: string): string {
  return path.join(guardrailsDir(), `${name}.yaml`);
}
