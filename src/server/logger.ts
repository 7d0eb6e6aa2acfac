/**
 * The operational logger the server and HTTP layer use for failures an operator must see. Entries are redacted
 * (src/audit's createOperationalLogger with the guardrails' PHI detector), never carry message content, and go to
 * stderr (stdout is the protocol channel over stdio).
 */
import path from "node:path";
import { createOperationalLogger } from "../audit/operational-logger.js";
import { redactPhiText } from "../guardrails/phi/detector.js";

/** What HMCP logs through: a subset of winston's logger, so any winston logger fits. */
export interface OperationalLogger {
  error(message: string, meta?: Record<string, unknown>): unknown;
  warn(message: string, meta?: Record<string, unknown>): unknown;
  info(message: string, meta?: Record<string, unknown>): unknown;
}

let shared: OperationalLogger | undefined;

/**
 * The default logger: level from `HMCP_LOG_LEVEL` (default "warn"), JSON Lines on stderr, and also a file
 * `hmcp-<pid>.log` in `HMCP_LOG_DIR` when that variable is set. Created once per process.
 */
export function defaultOperationalLogger(): OperationalLogger {
  if (shared) return shared;
  const dir = process.env["HMCP_LOG_DIR"];
  shared = createOperationalLogger({
    level: process.env["HMCP_LOG_LEVEL"] ?? "warn",
    redact: redactPhiText,
    console: true,
    ...(dir && { file: path.join(dir, `hmcp-${process.pid}.log`) }),
  });
  return shared;
}
