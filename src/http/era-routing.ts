/** Era routing: a request goes to the MCP 2026-07-28 handler or to the 2025-era sessions. */
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server";

/** Serves one request of an era (answers it, or throws to the error boundary). */
export type EraHandler = (req: Request, res: Response) => Promise<void>;

/**
 * A POST that carries the 2026-07-28 `_meta` envelope, or claims that revision or a later one in its
 * `MCP-Protocol-Version` header, goes to `modern`; everything else (initialize, a session's requests, its GET stream
 * and DELETE) to `legacy`. What either throws goes to the error boundary.
 */
export function eraRouting(eras: { modern: EraHandler; legacy: EraHandler }): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      if (req.method === "POST" && (carriesModernEnvelope(req.body) || claimsModernRevision(req.headers["mcp-protocol-version"]))) {
        await eras.modern(req, res);
        return;
      }
      await eras.legacy(req, res);
    } catch (error) {
      next(error);
    }
  };
}

/**
 * Whether a JSON-RPC body is an MCP 2026-07-28 message: it carries the per-request `_meta` envelope's protocol version
 * (`io.modelcontextprotocol/protocolVersion`; MCP 2026-07-28 basic/index, "_meta"). The 2025 era never sends it.
 */
function carriesModernEnvelope(body: unknown): boolean {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const meta = (body as { params?: { _meta?: Record<string, unknown> } }).params?._meta;
  return typeof meta === "object" && meta !== null && meta[PROTOCOL_VERSION_META_KEY] !== undefined;
}

/**
 * Whether an `MCP-Protocol-Version` header names the 2026-07-28 revision or a later one: such a request belongs to the
 * modern era even when its body lacks the envelope (the SDK's handler then answers -32602, naming what is missing).
 */
function claimsModernRevision(header: string | string[] | undefined): boolean {
  return typeof header === "string" && /^\d{4}-\d{2}-\d{2}$/.test(header) && header >= "2026-07-28";
}
