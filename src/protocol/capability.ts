/**
 * The HMCP capability, advertised in the server's `initialize` result as
 * `capabilities.experimental.hmcp` (MCP spec 2025-06-18, "Lifecycle": experimental capabilities).
 */
import { z } from "zod";

/** Current HMCP protocol version advertised by this library. */
export const HMCP_VERSION = "0.2.0";

/**
 * Schema of `capabilities.experimental.hmcp`. Only `version` and `sampling` are required, so the
 * Python reference's `{ sampling: true, version: "0.1.0" }` parses; unknown keys are kept
 * (forward compatibility with later HMCP versions).
 */
export const HMCPCapabilitySchema = z
  .object({
    /** HMCP version string, e.g. "0.2.0". */
    version: z.string().min(1),
    /** True when the server accepts client → server `sampling/createMessage`. */
    sampling: z.boolean(),
    /** The name of the tool that runs the same sampling handler (`sampling_createMessage`), when the server exposes it. */
    samplingTool: z.string().optional(),
    /** Guardrail stages in force: names of the guardrails per stage. */
    guardrails: z
      .object({ input: z.array(z.string()), output: z.array(z.string()) })
      .partial()
      .optional(),
    /** True when every request outcome is written to an audit trail. */
    audit: z.boolean().optional(),
    /** Scopes this server checks (what a client should request). */
    scopes: z
      .object({ sampling: z.array(z.string()).optional(), supported: z.array(z.string()).optional() })
      .optional(),
  })
  .passthrough();
export type HMCPCapability = z.infer<typeof HMCPCapabilitySchema>;

/**
 * The id under which HMCP advertises itself in `capabilities.extensions` on MCP 2026-07-28 (basic/versioning,
 * "Extension Negotiation": a `_meta`-style key with a mandatory reverse-DNS prefix). Its settings object is the same
 * {@link HMCPCapability} as `experimental.hmcp` on the 2025 era.
 */
export const HMCP_EXTENSION_ID = "dev.hmcp/hmcp";

/**
 * Reads the HMCP capability from a server's capabilities object: `extensions["dev.hmcp/hmcp"]` (MCP 2026-07-28), else
 * `experimental.hmcp` (the 2025 era).
 * @returns the parsed capability, or `undefined` when absent or malformed (a plain MCP server).
 */
export function readHMCPCapability(capabilities: { experimental?: Record<string, unknown>; extensions?: Record<string, unknown> } | undefined): HMCPCapability | undefined {
  const raw = capabilities?.extensions?.[HMCP_EXTENSION_ID] ?? capabilities?.experimental?.["hmcp"];
  const parsed = HMCPCapabilitySchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
