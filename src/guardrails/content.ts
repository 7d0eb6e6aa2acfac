/**
 * Finds the text in an MCP params or result object (MCP spec 2025-06-18: "Sampling"
 * CreateMessageRequest/Result, "Elicitation" ElicitRequest/Result, "Tools" CallToolRequest/Result,
 * "Resources" ReadResourceResult, ListResourcesResult, ListResourceTemplatesResult, "Completion" CompleteResult) so
 * that every message, not only the last, is checked.
 * Internal: the pipeline uses it; not exported from the package.
 */
import type { ExchangeView, TextLocation } from "./guardrail.js";

/** A string field of the payload: its container and key, so a redaction can be written back. */
export interface TextSlot {
  holder: Record<string | number, unknown>;
  key: string | number;
  location: TextLocation;
}

/** Result of walking one payload. */
export interface Walk {
  slots: TextSlot[];
  view: ExchangeView;
  /** True when free-form JSON nests deeper than {@link MAX_DEPTH}: its deeper values were not visited. */
  tooDeep: boolean;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Max depth for free-form objects (tool arguments, structured content); deeper values are not visited, and the walk
 * says so (`tooDeep`): the pipeline then blocks the payload rather than pass text no guardrail has seen.
 */
export const MAX_DEPTH = 32;

class Walker {
  readonly slots: TextSlot[] = [];
  readonly contentTypes: string[] = [];
  totalChars = 0;
  tooDeep = false;

  text(holder: Record<string | number, unknown>, key: string | number, location: TextLocation): void {
    const v = holder[key];
    if (typeof v !== "string") return;
    this.totalChars += v.length;
    this.slots.push({ holder, key, location });
  }

  /** A content block or an array of them (SamplingMessage.content, CallToolResult.content ...). */
  blocks(holder: Obj, key: string, path: string, kind: TextLocation["kind"], role: string | undefined): void {
    const v = holder[key];
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const b: unknown = v[i];
        if (isObj(b)) this.block(b, `${path}[${i}]`, kind, role);
        else if (typeof b === "string") this.text(v as unknown as Obj, i, { path: `${path}[${i}]`, kind, ...(role ? { role } : {}) });
      }
    } else if (isObj(v)) {
      this.block(v, path, kind, role);
    } else if (typeof v === "string") {
      this.text(holder, key, { path, kind, ...(role ? { role } : {}) });
    }
  }

  block(b: Obj, path: string, kind: TextLocation["kind"], role: string | undefined): void {
    const type = typeof b["type"] === "string" ? (b["type"] as string) : "unknown";
    this.contentTypes.push(type);
    const loc = (p: string): TextLocation => ({ path: p, kind, ...(role ? { role } : {}) });
    switch (type) {
      case "text":
        this.text(b, "text", loc(`${path}.text`));
        break;
      case "resource": {
        const r = b["resource"];
        if (isObj(r)) this.text(r, "text", loc(`${path}.resource.text`));
        break;
      }
      case "resource_link":
        for (const k of ["name", "title", "description"]) this.text(b, k, loc(`${path}.${k}`));
        break;
      case "tool_use":
        this.free(b["input"], `${path}.input`, kind, role, 0, b, "input");
        break;
      case "tool_result":
        this.blocks(b, "content", `${path}.content`, kind, role);
        if (b["structuredContent"] !== undefined) this.free(b["structuredContent"], `${path}.structuredContent`, kind, role, 0, b, "structuredContent");
        break;
      default:
        // image, audio and unknown types carry no text; the limits guardrail decides whether they may pass.
        break;
    }
  }

  /** Free-form JSON: every string value, keys included as path only. */
  free(v: unknown, path: string, kind: TextLocation["kind"], role: string | undefined, depth: number, holder?: Obj | unknown[], key?: string | number): void {
    if (depth > MAX_DEPTH) {
      if (typeof v === "string" || (typeof v === "object" && v !== null)) this.tooDeep = true;
      return;
    }
    if (typeof v === "string" && holder !== undefined && key !== undefined) {
      this.text(holder as Obj, key, { path, kind, ...(role ? { role } : {}) });
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) this.free(v[i], `${path}[${i}]`, kind, role, depth + 1, v, i);
    } else if (isObj(v)) {
      for (const k of Object.keys(v)) this.free(v[k], `${path}.${k}`, kind, role, depth + 1, v, k);
    }
  }
}

/**
 * Walks `root.value` (a wrapper, so that a bare string payload can be replaced too) and returns the
 * text slots in document order plus the structural view.
 */
export function walkPayload(root: { value: unknown }): Walk {
  const w = new Walker();
  const p = root.value;
  let messageCount = 0;
  let maxTokens: number | undefined;
  const modelHints: string[] = [];
  if (typeof p === "string") {
    w.text(root as unknown as Obj, "value", { path: "", kind: "other" });
  } else if (isObj(p)) {
    if (typeof p["systemPrompt"] === "string") w.text(p, "systemPrompt", { path: "systemPrompt", kind: "systemPrompt" });
    const messages = p["messages"];
    if (Array.isArray(messages)) {
      messageCount = messages.length;
      for (let i = 0; i < messages.length; i++) {
        const m: unknown = messages[i];
        if (!isObj(m)) continue;
        const role = typeof m["role"] === "string" ? (m["role"] as string) : undefined;
        w.blocks(m, "content", `messages[${i}].content`, "message", role);
      }
    }
    if (typeof p["maxTokens"] === "number") maxTokens = p["maxTokens"];
    const prefs = p["modelPreferences"];
    if (isObj(prefs) && Array.isArray(prefs["hints"])) {
      for (const h of prefs["hints"]) if (isObj(h) && typeof h["name"] === "string") modelHints.push(h["name"]);
    }
    // ElicitRequest params.message
    if (typeof p["message"] === "string") w.text(p, "message", { path: "message", kind: "elicitation" });
    // CreateMessageResult.content, CallToolResult.content (blocks) or ElicitResult.content (a record of values)
    const content = p["content"];
    if (content !== undefined) {
      if (isObj(content) && typeof content["type"] !== "string") w.free(content, "content", "elicitation", undefined, 0, p, "content");
      else w.blocks(p, "content", "content", "result", typeof p["role"] === "string" ? (p["role"] as string) : undefined);
    }
    if (p["structuredContent"] !== undefined) w.free(p["structuredContent"], "structuredContent", "result", undefined, 0, p, "structuredContent");
    // CallToolRequest params.arguments
    if (p["arguments"] !== undefined) w.free(p["arguments"], "arguments", "toolArguments", undefined, 0, p, "arguments");
    // ListResourcesResult.resources[], ListResourceTemplatesResult.resourceTemplates[]: names and descriptions
    for (const listKey of ["resources", "resourceTemplates"] as const) {
      const list = p[listKey];
      if (!Array.isArray(list)) continue;
      for (let i = 0; i < list.length; i++) {
        const r: unknown = list[i];
        if (isObj(r)) for (const k of ["name", "title", "description"]) w.text(r, k, { path: `${listKey}[${i}].${k}`, kind: "result" });
      }
    }
    // CompleteResult.completion.values[]
    const completion = p["completion"];
    if (isObj(completion) && Array.isArray(completion["values"])) {
      const values = completion["values"] as unknown[];
      for (let i = 0; i < values.length; i++) w.text(values as unknown as Obj, i, { path: `completion.values[${i}]`, kind: "result" });
    }
    // ReadResourceResult.contents[]
    const contents = p["contents"];
    if (Array.isArray(contents)) {
      for (let i = 0; i < contents.length; i++) {
        const c: unknown = contents[i];
        if (isObj(c)) {
          w.contentTypes.push("resource");
          w.text(c, "text", { path: `contents[${i}].text`, kind: "resource" });
        }
      }
    }
  }
  const view: ExchangeView = {
    payload: p,
    messageCount,
    contentTypes: w.contentTypes,
    totalChars: w.totalChars,
    modelHints,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  };
  return { slots: w.slots, view, tooDeep: w.tooDeep };
}
