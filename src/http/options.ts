/** The validation of {@link HttpAppOptions}: known names only, and values of the right kind. */
import { HMCPConfigError, refuseUnknownOptions } from "../protocol/index.js";
import type { HttpAppOptions } from "./app.js";
import { PostgresEventStore } from "./event-store-postgres.js";

const EVENT_STORE_LIMITS = new Set(["maxEvents", "maxBytes", "ttlMs", "totalBytes"]);

const HTTP_APP_OPTIONS = new Set([
  "createServer", "bearer", "path", "allowedHosts", "bodyLimitBytes", "eventStore", "maxSessions", "maxSessionsPerPrincipal", "maxConcurrentRequests", "sessionIdleTimeoutMs",
  "audit", "logger", "agentName", "sseRetryMs", "enableJsonResponse",
]);

/** @throws HMCPConfigError (a TypeError) naming the first unknown option (and the closest known one) or bad value. */
export function validateHttpAppOptions(options: HttpAppOptions): void {
  if (typeof options !== "object" || options === null) throw new HMCPConfigError("createHttpApp: options must be an object", "");
  refuseUnknownOptions("createHttpApp", options, HTTP_APP_OPTIONS);
  if (typeof options.createServer !== "function") throw new HMCPConfigError("createHttpApp: 'createServer' must be a function returning an HMCPServer", "createServer");
  const positive = (name: "bodyLimitBytes" | "maxSessions" | "maxSessionsPerPrincipal" | "maxConcurrentRequests" | "sessionIdleTimeoutMs" | "sseRetryMs") => {
    const v = options[name];
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0)) throw new HMCPConfigError(`createHttpApp: '${name}' must be a positive integer`, name);
  };
  positive("bodyLimitBytes");
  positive("maxSessions");
  positive("maxSessionsPerPrincipal");
  positive("maxConcurrentRequests");
  positive("sessionIdleTimeoutMs");
  positive("sseRetryMs");
  const events = options.eventStore;
  if (events !== undefined && events !== false && !(events instanceof PostgresEventStore)) {
    if (typeof events !== "object" || events === null) throw new HMCPConfigError("createHttpApp: 'eventStore' must be limits (EventStoreLimits), a PostgresEventStore or false", "eventStore");
    refuseUnknownOptions("createHttpApp eventStore", events, EVENT_STORE_LIMITS);
    for (const name of EVENT_STORE_LIMITS) {
      const v = (events as Record<string, unknown>)[name];
      if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) > 0)) throw new HMCPConfigError(`createHttpApp: 'eventStore.${name}' must be a positive integer`, "eventStore");
    }
  }
  if (options.path !== undefined && !(typeof options.path === "string" && options.path.startsWith("/"))) throw new HMCPConfigError("createHttpApp: 'path' must start with '/'", "path");
  if (options.allowedHosts !== undefined && !(Array.isArray(options.allowedHosts) && options.allowedHosts.length > 0)) {
    throw new HMCPConfigError("createHttpApp: 'allowedHosts' must be a non-empty list of host names", "allowedHosts");
  }
}
