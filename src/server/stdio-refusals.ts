/**
 * What the SDK refuses itself on a stdio connection, before any HMCP handler runs, gets its audit record here.
 *
 * Over HTTP the HTTP layer records such refusals (src/http/modern-era.ts, legacy-era.ts). Over stdio nothing is in
 * front of the SDK: its stdio entry (`serveStdio`: a malformed envelope or an unsupported revision on the opening
 * message, a 2025-era `initialize` on a 2026-07-28 connection, a bad `subscriptions/listen`) and its request dispatch
 * (a method of an earlier revision that 2026-07-28 lacks, such as `tasks/list`, `tasks/result`, `resources/subscribe`
 * or a client → server `sampling/createMessage`; an era mismatch; a malformed per-request envelope) answer with a
 * JSON-RPC error, and no pipeline sees the request. So the connection's transport is watched: an error answer to a
 * request the pipeline did not take ({@link RequestPipeline.watchRequestIds}) gets one record (`type: "request"`,
 * `outcome: "failed"`, `status` the JSON-RPC code, a reason derived from the code), written before the answer goes
 * out; the answer itself is unchanged. Records carry the method and id, never the request's content.
 * @internal
 */
import type { Transport } from "@modelcontextprotocol/server";
import type { RequestPipeline } from "./pipeline.js";

/** The most unanswered requests whose method is remembered (the oldest go first: a cancelled request gets no answer). */
const MAX_PENDING = 10_000;

const WATCHED = new WeakSet<object>();

/** The audit reason of an error the SDK answered itself, from its JSON-RPC code (SECURITY.md, the refusal table). */
export function sdkRefusalReason(code: number, message: unknown): string {
  switch (code) {
    case -32601:
      return "method_not_found";
    case -32022:
      return "unsupported_protocol_version";
    case -32602:
      return typeof message === "string" && message.includes("_meta envelope") ? "invalid_envelope" : "invalid_params";
    case -32600:
      return "invalid_request";
    case -32700:
      return "parse_error";
    case -32021:
      return "missing_client_capability";
    case -32603:
      return "internal_error";
    default:
      return `error_${code}`;
  }
}

type Id = string | number;

/**
 * Watches `transport`'s answers for `pipeline` (once per transport). Call the returned `watchInbound` once
 * the transport's `onmessage` is set, so that a refusal's record names the refused method.
 */
export function recordStdioRefusals(transport: Transport, pipeline: RequestPipeline): { watchInbound(): void } {
  const methods = new Map<Id, string>();
  if (WATCHED.has(transport)) return { watchInbound: () => undefined };
  WATCHED.add(transport);
  const entered = pipeline.watchRequestIds();
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const m = message as { id?: unknown; method?: unknown; error?: { code?: unknown; message?: unknown } };
    if (m.method === undefined && "id" in m && ("result" in m || "error" in m)) {
      const id = m.id as Id | null;
      const method = id === null ? undefined : methods.get(id);
      if (id !== null) methods.delete(id);
      const handled = id !== null && entered.delete(id);
      if (!handled && m.error !== undefined && typeof m.error.code === "number") {
        try {
          pipeline.recordRefused({ method, requestId: id, code: m.error.code, reason: sdkRefusalReason(m.error.code, m.error.message), transport: "stdio" });
        } catch {
          // the sink reports its own failures; the answer goes out regardless
        }
      }
    }
    return send(message, options);
  };
  return {
    watchInbound() {
      const onmessage = transport.onmessage;
      if (onmessage === undefined) return;
      transport.onmessage = (message, extra) => {
        const m = message as { id?: unknown; method?: unknown };
        if (typeof m.method === "string" && (typeof m.id === "string" || typeof m.id === "number")) {
          methods.delete(m.id);
          methods.set(m.id, m.method);
          if (methods.size > MAX_PENDING) methods.delete(methods.keys().next().value as Id);
        }
        onmessage(message, extra);
      };
    },
  };
}
