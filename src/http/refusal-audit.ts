/**
 * The HTTP layer's own audit records: requests refused before they reached a server (Host, body, bearer, limits,
 * sessions, shutdown, the SDK's own refusals on the modern era), the end of a subscription stream, and session
 * start/end. A refusal is recorded where it is decided, next to the response it sends: the {@link timing} middleware,
 * first in the app, starts the clock each record's `latencyMs` is measured from.
 *
 * None of these records had room reserved in the audit sink: they go in only beside the records of requests already
 * admitted (src/audit/admission.ts, `appendUnreserved`).
 */
import { randomUUID } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type { Principal } from "../protocol/index.js";
import { AUDIT_RECORD_VERSION, markInternalRecord, type AuditRecordInput, type AuditSink } from "../audit/record.js";
import { appendUnreserved } from "../audit/admission.js";
import { principalOf } from "./bearer-check.js";
import { jsonRpcError } from "./json-rpc.js";

/** A refusal the HTTP layer answers itself: its status, typed JSON-RPC error and the audit record's reason. */
export interface Refusal {
  status: number;
  /** The JSON-RPC error code, by name from src/protocol/errors.ts. */
  code: number;
  /** A fixed, PHI-free sentence. */
  message: string;
  /** The audit record's `reason`, also sent as the error's `data.reason` (stable, machine-readable). */
  reason: string;
  /** Default "denied"; "failed" when the server, not the caller, is the cause (limits reached, shutdown, faults). */
  outcome?: "denied" | "failed";
  /** Extra response headers (`Retry-After`, `Allow`). */
  headers?: Record<string, string>;
  /** The JSON-RPC id to answer with, when the refused request's is known; default null (JSON-RPC 2.0 §5). */
  id?: string | number | null;
  /** More members of the error's `data` (beside `reason`), e.g. `requiredCapabilities` of a -32021. */
  data?: Record<string, unknown>;
}

/** A record's fields the HTTP layer states itself; the rest take the defaults of {@link RefusalAudit.write}. */
export type HttpRecordFields = Omit<AuditRecordInput, "v" | "id" | "time" | "agent" | "patients" | "scopes" | "guardrails" | "digests"> & Partial<AuditRecordInput>;

/** Starts the clock of the request's `http` audit records (`latencyMs`: since the request arrived). First middleware. */
export function timing(_req: Request, res: Response, next: NextFunction): void {
  res.locals["t0"] = performance.now();
  next();
}

/** Writes the HTTP layer's audit records to the app's sink (none: records nothing). */
export class RefusalAudit {
  constructor(
    readonly sink: AuditSink | undefined,
    readonly agent: string,
    /** The endpoint's path: a refusal's `method` is `"<HTTP method> <path>"`. */
    readonly path: string,
  ) {}

  /** Appends one record (a refusal or session event: unreserved); a sink's failure is its own to report. */
  write(r: HttpRecordFields): void {
    if (!this.sink) return;
    try {
      appendUnreserved(this.sink, markInternalRecord({
        v: AUDIT_RECORD_VERSION,
        id: randomUUID(),
        time: new Date().toISOString(),
        agent: this.agent,
        patients: [],
        scopes: [],
        guardrails: [],
        digests: {},
        ...r,
      } as AuditRecordInput));
    } catch {
      // the sink reports its own failures
    }
  }

  /**
   * The one refusal path: one audit record (an `http` record, `reason`) and the answer, HTTP `status` with the typed
   * JSON-RPC error `{ code, message, data: { reason } }`. Every refusal the HTTP layer decides itself goes through here.
   */
  refuse(req: Request, res: Response, r: Refusal): void {
    this.refused(req, res, r.status, r.reason, r.outcome ?? "denied");
    if (r.headers) res.set(r.headers);
    const body = jsonRpcError(r.code, r.message, r.reason);
    if (r.data !== undefined) body.error.data = { ...r.data, reason: r.reason };
    res.status(r.status).json({ ...body, id: r.id ?? null });
  }

  /**
   * One audit record for a request refused before it reached a server (bearer, host, limits, sessions). `principal`:
   * who was refused when the request's own auth is not set (a verified token refused for a missing scope).
   */
  refused(req: Request, res: Response, status: number, reason: string, outcome: "denied" | "failed" = "denied", principal = principalOf(req)): void {
    this.httpRecord(req, res, { method: `${req.method} ${this.path}`, outcome, reason, status, principal });
  }

  /** One `http` audit record about `req` (latency: since the request arrived). */
  httpRecord(req: Request, res: Response, r: { method: string; outcome: AuditRecordInput["outcome"]; reason: string; status: number; principal: Principal | undefined }): void {
    this.write({
      type: "http",
      actor: actorOf(r.principal),
      scopes: r.principal?.scopes ? [...r.principal.scopes] : [],
      source: sourceOf(req.socket.remoteAddress),
      transport: "http",
      method: r.method,
      outcome: r.outcome,
      reason: r.reason,
      status: r.status,
      latencyMs: Math.round((performance.now() - ((res.locals["t0"] as number | undefined) ?? performance.now())) * 1000) / 1000,
    });
  }
}

/** A record's `actor`: the principal's subject, client, FHIR user and tenant (those it has); `{}` for none. */
export function actorOf(p: Principal | undefined) {
  return p ? Object.fromEntries(Object.entries({ sub: p.sub, clientId: p.clientId, fhirUser: p.fhirUser, tenant: p.tenant }).filter(([, v]) => v !== undefined)) : {};
}

/** A record's `source`: the peer's address when known, else `{}`. */
export function sourceOf(address: string | undefined): { address?: string } {
  return address === undefined ? {} : { address };
}
