export { createHttpApp, listen } from "./app.js";
export type { HttpAppOptions, HttpApp, Listening, ListenOptions, Readiness, ReadinessProblem } from "./app.js";
export { BoundedEventStore, EventNotFoundError, EventStoreBudget } from "./event-store.js";
export type { EventStoreLimits } from "./event-store.js";
export { PostgresEventStore } from "./event-store-postgres.js";
export type { PostgresEventStoreOptions, SessionEventStore, EventStoreQueryable } from "./event-store-postgres.js";
