/**
 * A winston transport that hands audit records to an {@link AuditSink}: for services that emit
 * everything through one winston logger. The sink keeps the chain, durability and checkpoints;
 * winston only carries the record (`logger.log({ level: "info", message: "audit", audit: record })`).
 * Entries without an `audit` member are ignored, so the transport can sit on a shared logger.
 * Durability is the sink's: `await sink.flush()` to know records are on disk (winston's own
 * callbacks only mean "handed over").
 */
import winston from "winston";
import type { AuditRecordInput, AuditSink } from "./record.js";

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
 * (build it with `newAuditRecord`).
 */
export function createAuditTransport(opts: AuditTransportOptions): winston.transport {
  const { sink, onError } = opts;
  class AuditTransport extends TransportBase {
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
