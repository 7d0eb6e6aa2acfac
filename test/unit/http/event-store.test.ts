import { describe, expect, it } from "vitest";
import type { JSONRPCMessage } from "@modelcontextprotocol/server";
import { BoundedEventStore, EventNotFoundError, EventStoreBudget } from "hmcp";

const note = (n: number): JSONRPCMessage => ({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: "t", progress: n } });

async function replay(store: BoundedEventStore, id: string) {
  const got: Array<[string, number]> = [];
  const stream = await store.replayEventsAfter(id, {
    send: async (eventId, m) => {
      got.push([eventId, (m as unknown as { params: { progress: number } }).params.progress]);
    },
  });
  return { stream, got };
}

describe("BoundedEventStore", () => {
  it("replays only the events of the Last-Event-ID's stream, after it, in order", async () => {
    const s = new BoundedEventStore();
    const a1 = await s.storeEvent("A", note(1));
    await s.storeEvent("B", note(100));
    const a2 = await s.storeEvent("A", note(2));
    await s.storeEvent("B", note(101));
    const a3 = await s.storeEvent("A", note(3));
    const { stream, got } = await replay(s, a1);
    expect(stream).toBe("A");
    expect(got).toEqual([
      [a2, 2],
      [a3, 3],
    ]);
    expect(await s.getStreamIdForEventId(a1)).toBe("A");
  });

  it("evicts the oldest events beyond maxEvents, and an evicted id can no longer be resumed", async () => {
    const s = new BoundedEventStore({ maxEvents: 3 });
    const ids = [];
    for (let i = 1; i <= 5; i++) ids.push(await s.storeEvent("A", note(i)));
    expect(s.size).toBe(3);
    await expect(replay(s, ids[0]!)).rejects.toBeInstanceOf(EventNotFoundError);
    expect((await replay(s, ids[2]!)).got.map(([, n]) => n)).toEqual([4, 5]);
  });

  it("bounds bytes and age", async () => {
    let now = 0;
    const s = new BoundedEventStore({ maxBytes: 400, ttlMs: 1000 }, () => now);
    for (let i = 0; i < 20; i++) await s.storeEvent("A", note(i));
    expect(s.bytes).toBeLessThanOrEqual(400);
    expect(s.size).toBeGreaterThan(0);
    now = 5000;
    await s.storeEvent("B", note(1));
    expect(s.size).toBe(1);
  });
});

describe("EventStoreBudget: one byte ceiling for the stores of all sessions", () => {
  it("a store over the shared budget drops its own oldest events; an event that still does not fit is not kept; a cleared store returns its bytes", async () => {
    const size = Buffer.byteLength(JSON.stringify(note(1)));
    const budget = new EventStoreBudget(size * 3);
    const a = new BoundedEventStore({}, Date.now, budget);
    const b = new BoundedEventStore({}, Date.now, budget);
    const a1 = await a.storeEvent("A", note(1));
    await a.storeEvent("A", note(2));
    await b.storeEvent("B", note(3));
    expect(budget.used).toBe(size * 3);
    // b is at the ceiling: it evicts its own oldest event (3), never a's
    const b4 = await b.storeEvent("B", note(4));
    expect([a.size, b.size, budget.used]).toEqual([2, 1, size * 3]);
    expect((await replay(a, a1)).got.map(([, p]) => p)).toEqual([2]);
    // a new store with nothing of its own to give up: the event is sent, not kept
    const c = new BoundedEventStore({}, Date.now, budget);
    const c1 = await c.storeEvent("C", note(5));
    expect(c.size).toBe(0);
    await expect(replay(c, c1)).rejects.toBeInstanceOf(EventNotFoundError);
    // a session ends: its bytes go back to the budget, and it keeps nothing more
    a.clear();
    expect(budget.used).toBe(size);
    await a.storeEvent("A", note(6));
    expect(a.size).toBe(0);
    await c.storeEvent("C", note(7));
    expect(c.size).toBe(1);
    expect((await replay(b, b4)).got).toEqual([]);
    // an event that would not fit even if b gave up everything is not kept, and b keeps what it has
    const big = { jsonrpc: "2.0" as const, method: "notifications/message", params: { data: "x".repeat(size * 4) } };
    await b.storeEvent("B", big);
    expect(b.size).toBe(1);
    expect((await replay(b, b4)).got).toEqual([]);
  });
});
