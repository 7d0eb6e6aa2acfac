/**
 * HMCP's `stopReason` extension: an agent that needs more data ends its turn with
 * `stopReason: "infoNeeded"` and says what it needs (innovaccer/Healthcare-MCP specification).
 * MCP's `CreateMessageResult.stopReason` is an open string, so this is wire-compatible.
 */
export const INFO_NEEDED = "infoNeeded" as const;

/** Key in a result's `_meta` that lists, machine-readably, the fields the agent needs. */
export const INFO_NEEDED_META_KEY = "hmcp/infoNeeded" as const;

/** Machine-readable description of what an `infoNeeded` turn asks for. */
export interface InfoNeeded {
  /** Field names needed, e.g. `["patient_id"]`. */
  fields: string[];
}

/** True when a sampling result ends its turn asking for more information. */
export function isInfoNeeded(result: { stopReason?: string }): boolean {
  return result.stopReason === INFO_NEEDED;
}
