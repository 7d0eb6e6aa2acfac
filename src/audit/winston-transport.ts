/**
 * A winston transport that hands audit records to an {@link AuditSink}: for services that emit
 * everything through one winston logger. The sink keeps the chain, durability and checkpoints;
 * winston only carries the record (`logger.log({ level: "info", message: "audit", audit: record })`).
 * Entries without an `audit` member are ignored. Give the transport a winston logger of its own
 * (`winston.createLogger({ transports: [createAuditTransport({ sink })] })`): {@link createOperationalLogger}
 * refuses it (TypeError), because its redaction rewrites every string of an entry, the `audit` member
 * included, before any transport sees it. Durability is the sink's: `await sink.flush()` to know records are on disk (winston's own
 * callbacks only mean "handed over").
 */
import winston from "winston";
import type { AuditRecordInput, AuditSink } from "./record.js";

/** Brand of the transports {@link createAuditTransport} makes (a registry symbol, so two copies of the module agree). */
const AUDIT_TRANSPORT = Symbol.for("hmcp.auditTransport");

/** True when `t` was made by {@link createAuditTransport}. Internal: not exported from the package. */
export function isAuditTransport(t: unknown): boolean {
  return typeof t === "object" && t !== null && (t as Record<symbol, unknown>)[AUDIT_TRANSPORT] === true;
}

// winston's typings name the base class `transport`; at runtime it is `winston.Transport`.
const TransportBase = (winston as unknown as { Transport: new (opts?: { level?: string }) => winston.transport }).Transport;

/** Options of {@link createAuditTransport}. */
export interface AuditTransportOptions {
  sink: AuditSink;
  /** Lowest winston level forwarded. Default "info". */
  level?: string;
  /** Called when the sink refuses a record (closed, failed, invalid); never with the record's content. */
  onError?: (error: Error) => void;
}

/**
 * Creates the transport. Each entry's `audit` member must be an {@link AuditRecordInput}
 * (build it with `newAuditRecord`). Put it on its own winston logger, not on the operational logger's
 * (which refuses it).
 */
export function createAuditTransport(opts: AuditTransportOptions): winston.transport {
  const { sink, onError } = opts;
  class AuditTransport extends TransportBase {
    readonly [AUDIT_TRANSPORT] = true;
    override log(info: { audit?: AuditRecordInput }, next: () => void): void {
      if (info.audit !== undefined) {
        try {
          sink.append(info.audit);
        } catch (e) {
          onError?.(e as Error);
        }
      }
      next();
    }
  }
  return new AuditTransport({ level: opts.level ?? "info" });
}
