import { describe, expect, it } from "vitest";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { BoundedEventStore, EventNotFoundError } from "hmcp";

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
