/**
 * A bounded in-memory event store for Streamable HTTP resumability (MCP spec 2025-06-18, "Transports:
 * Resumability and Redelivery"). Unlike the SDK example store it is bounded (events, bytes, age) and replays only
 * the events of the stream that the `Last-Event-ID` belongs to.
 */
import type { EventStore, JSONRPCMessage } from "@modelcontextprotocol/server";

/** Limits of a {@link BoundedEventStore}. */
export interface EventStoreLimits {
  /**
   * Most events kept per session (`createHttpApp` gives each 2025-era session its own store; all its streams
   * together), a count. Default 1,000. The oldest go first; resuming from one that went is refused (HTTP 400,
   * `last_event_id_unknown`, audited) and the client starts over.
   */
  maxEvents?: number;
  /**
   * Most bytes of serialised messages (JSON, UTF-8) kept per session. Default 1,048,576 (1 MiB). The oldest go first,
   * as at `maxEvents`; one event larger than this on its own is sent but not kept.
   */
  maxBytes?: number;
  /** Age after which an event is dropped, ms. Default 300,000 (5 minutes). */
  ttlMs?: number;
  /**
   * Most bytes kept by the stores of all sessions of one HTTP app together (`createHttpApp` shares one budget among
   * them). Default 67,108,864 (64 MiB). A store over it drops its own oldest events first; an event that still does
   * not fit is sent but not kept (resuming past it fails, and the client starts over).
   */
  totalBytes?: number;
}

/**
 * Bytes held by several stores together, and their ceiling; also the source of their event ids, so an id of one
 * store (session) names no event of another.
 */
export class EventStoreBudget {
  used = 0;
  /** The last event id issued by the stores sharing this budget. */
  seq = 0;
  constructor(readonly maxBytes: number) {}
}

interface Entry {
  seq: number;
  streamId: string;
  message: JSONRPCMessage;
  bytes: number;
  at: number;
}

/** Error raised when a `Last-Event-ID` is unknown or was evicted; the client must start over. */
export class EventNotFoundError extends Error {
  constructor() {
    super("Unknown or expired Last-Event-ID");
    this.name = "EventNotFoundError";
  }
}

/**
 * Oldest events are evicted first once any limit is exceeded. Event ids are `<seq>` decimal strings, unique among the
 * stores sharing a budget (`createHttpApp`: all sessions of the app, so a `Last-Event-ID` of one session is unknown in
 * every other), else per store.
 */
export class BoundedEventStore implements EventStore {
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #events = new Map<number, Entry>(); // insertion (= seq) order
  readonly #streams = new Map<string, number[]>();
  #seq = 0;
  #bytes = 0;
  readonly #budget: EventStoreBudget | undefined;
  #cleared = false;

  /** `budget`: bytes shared with other stores (see {@link EventStoreLimits.totalBytes}); none by default. */
  constructor(limits: EventStoreLimits = {}, now: () => number = Date.now, budget?: EventStoreBudget) {
    this.#maxEvents = limits.maxEvents ?? 1000;
    this.#maxBytes = limits.maxBytes ?? 1024 * 1024;
    this.#ttlMs = limits.ttlMs ?? 300_000;
    this.#now = now;
    this.#budget = budget;
  }

  /** Drops every event and returns its bytes to the shared budget (the session ended); later events are not kept. */
  clear(): void {
    this.#cleared = true;
    if (this.#budget) this.#budget.used -= this.#bytes;
    this.#events.clear();
    this.#streams.clear();
    this.#bytes = 0;
  }

  /** Drops events past their age (also done on every store and replay). */
  evictExpired(): void {
    this.#evict();
  }

  /** Number of events held. */
  get size(): number {
    return this.#events.size;
  }
  /** Bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  async storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const seq = this.#budget ? ++this.#budget.seq : ++this.#seq;
    const bytes = Buffer.byteLength(JSON.stringify(message));
    if (this.#cleared) return String(seq);
    const budget = this.#budget;
    if (budget) {
      // sent, not kept (resuming past it fails) when even giving up all of this store's events would not make room
      if (budget.used - this.#bytes + bytes > budget.maxBytes) return String(seq);
      // over the shared budget: this store gives up its own oldest events first
      for (const [old, e] of this.#events) {
        if (budget.used + bytes <= budget.maxBytes) break;
        this.#drop(old, e);
      }
    }
    const entry: Entry = { seq, streamId, message, bytes, at: this.#now() };
    this.#events.set(seq, entry);
    let list = this.#streams.get(streamId);
    if (!list) this.#streams.set(streamId, (list = []));
    list.push(seq);
    this.#bytes += bytes;
    if (budget) budget.used += bytes;
    this.#evict();
    return String(seq);
  }

  /** Whether event `eventId` is still stored (a resumption from it can be served); expired events are dropped first. */
  holds(eventId: string): boolean {
    this.#evict();
    return this.#events.has(Number(eventId));
  }

  async getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return this.#events.get(Number(eventId))?.streamId;
  }

  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    this.#evict();
    const last = this.#events.get(Number(lastEventId));
    if (!last) throw new EventNotFoundError();
    const list = this.#streams.get(last.streamId) ?? [];
    for (const seq of list) {
      if (seq <= last.seq) continue;
      const e = this.#events.get(seq);
      if (e) await send(String(seq), e.message);
    }
    return last.streamId;
  }

  #evict(): void {
    const cutoff = this.#now() - this.#ttlMs;
    for (const [seq, e] of this.#events) {
      if (this.#events.size <= this.#maxEvents && this.#bytes <= this.#maxBytes && e.at >= cutoff) break;
      this.#drop(seq, e);
    }
  }

  #drop(seq: number, e: Entry): void {
    this.#events.delete(seq);
    this.#bytes -= e.bytes;
    if (this.#budget) this.#budget.used -= e.bytes;
    const list = this.#streams.get(e.streamId);
    if (list) {
      if (list[0] === seq) list.shift();
      else list.splice(list.indexOf(seq), 1);
      if (list.length === 0) this.#streams.delete(e.streamId);
    }
  }
}
