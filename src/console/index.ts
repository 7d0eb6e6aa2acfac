/**
 * `hmcp/console`: the compliance officer's console over an audit trail (issue 26), the library behind
 * `hmcp audit serve`. A separate entry point so that `hmcp` itself does not load the console's web stack.
 *
 * - {@link openAuditTrail} indexes a file trail or the PostgreSQL sink once, then answers the console's pages;
 * - {@link startAuditConsole} serves the pages behind OpenID Connect sign-in (see docs/audit-console.md).
 */
export { startAuditConsole, parseFilter } from "./app.js";
export type { AuditConsole, AuditConsoleOptions } from "./app.js";
export type { ConsoleSignInOptions, ConsoleUser } from "./sign-in.js";
export { openAuditTrail } from "./trail.js";
export type { AuditTrailOptions } from "./trail.js";
export type { TrailProgress } from "./trail-sources.js";
export type { ActivityFilter, ActivityPage, ActivityRow, AuditTrailView, ChainIntegrity, LocatedRecord, TrailStats } from "./trail-types.js";
