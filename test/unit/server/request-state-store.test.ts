/**
 * The in-memory `requestState` single-use ledger at its bound (issue #25 item 4, pending input rounds): at
 * `maxEntries` unexpired ids a new claim is refused with a typed error, a replay is still told apart, nothing grows
 * past the bound, and room comes back as ids expire. The HTTP answer and its audit record: test/integration/
 * input-round-limits.test.ts.
 */
import { describe, expect, it } from "vitest";
import { HMCPConfigError, MemoryRequestStateStore, RequestStateStoreFull } from "hmcp";

describe("MemoryRequestStateStore bound", () => {
  it("holds at most maxEntries unexpired ids: a new claim at the bound throws RequestStateStoreFull, a replay is still refused as one, and nothing grows", () => {
    const store = new MemoryRequestStateStore({ maxEntries: 3 });
    const until = Date.now() + 600_000;
    expect([store.claim("a", until), store.claim("b", until), store.claim("c", until)]).toEqual([true, true, true]);
    expect(store.size).toBe(3);
    for (let i = 0; i < 100; i++) {
      const refused = (() => {
        try {
          store.claim(`x${i}`, until);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(refused).toBeInstanceOf(RequestStateStoreFull);
      expect(refused).toMatchObject({ name: "RequestStateStoreFull", maxEntries: 3 });
    }
    // a replay of a held id is a replay, full or not: never made room for, never claimed twice
    expect(store.claim("b", until)).toBe(false);
    expect(store.size).toBe(3);
  });

  it("takes claims again once held ids expire, dropping only expired ones (an unexpired id is never evicted: its state could be replayed)", async () => {
    const store = new MemoryRequestStateStore({ maxEntries: 2 });
    const soon = Date.now() + 300;
    const later = Date.now() + 600_000;
    expect(store.claim("short", soon)).toBe(true);
    expect(store.claim("long", later)).toBe(true);
    expect(() => store.claim("next", later)).toThrow(RequestStateStoreFull);
    while (Date.now() <= soon) await new Promise((r) => setTimeout(r, 50));
    expect(store.claim("next", later)).toBe(true);
    expect(store.size).toBe(2);
    // "long" is still held: a replay of it is refused, and the store is full again
    expect(store.claim("long", later)).toBe(false);
    expect(() => store.claim("another", later)).toThrow(RequestStateStoreFull);
  });

  it("refuses a bound that is not a positive integer", () => {
    for (const maxEntries of [0, -1, 1.5, Number.NaN, "10" as unknown as number]) {
      expect(() => new MemoryRequestStateStore({ maxEntries })).toThrow(HMCPConfigError);
    }
  });
});
