/**
 * The in-memory `requestState` single-use ledger at its bound (issue #25 item 4, pending input rounds): at
 * `maxEntries` unexpired ids a new claim is refused with a typed error, a replay is still told apart, nothing grows
 * past the bound, and room comes back as ids expire; likewise for one principal at `maxEntriesPerPrincipal`. The HTTP answer and its audit record: test/integration/
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

  it("holds at most maxEntriesPerPrincipal unexpired ids of one principal (scope 'principal'), others and claims without a principal still taken; its room comes back as its ids expire", async () => {
    const store = new MemoryRequestStateStore({ maxEntries: 10, maxEntriesPerPrincipal: 2 });
    const soon = Date.now() + 300;
    const later = Date.now() + 600_000;
    expect([store.claim("p1", soon, "P"), store.claim("p2", later, "P")]).toEqual([true, true]);
    expect(() => store.claim("p3", later, "P")).toThrow(expect.objectContaining({ name: "RequestStateStoreFull", scope: "principal", maxEntries: 2 }));
    expect(store.claim("p2", later, "P")).toBe(false); // a replay is still a replay
    expect([store.claim("q1", later, "Q"), store.claim("q2", later, "Q"), store.claim("n1", later), store.claim("n2", later), store.claim("n3", later)]).toEqual([true, true, true, true, true]);
    while (Date.now() <= soon) await new Promise((r) => setTimeout(r, 50));
    expect(store.claim("p3", later, "P")).toBe(true);
    expect(() => store.claim("p4", later, "P")).toThrow(expect.objectContaining({ scope: "principal" }));
    expect(store.size).toBe(7);
  });

  it("at maxEntries drops an expired id held behind a newer unexpired one before refusing (a state sealed early and claimed late expires first), so a new claim is taken", () => {
    const store = new MemoryRequestStateStore({ maxEntries: 2 });
    const later = Date.now() + 600_000;
    expect(store.claim("claimed-first", later)).toBe(true);
    // claimed second but already expired: sealed ttlSeconds ago and answered just now (its expiresAt is its seal time + TTL)
    expect(store.claim("sealed-early", Date.now() - 1)).toBe(true);
    expect(store.size).toBe(2);
    expect(store.claim("next", later)).toBe(true);
    expect(store.size).toBe(2);
    // the unexpired one is kept (a replay of it is still refused), and the store is full again
    expect(store.claim("claimed-first", later)).toBe(false);
    expect(() => store.claim("another", later)).toThrow(RequestStateStoreFull);
  });

  it("at maxEntriesPerPrincipal likewise drops that principal's expired id held behind its newer unexpired one before refusing", () => {
    const store = new MemoryRequestStateStore({ maxEntries: 10, maxEntriesPerPrincipal: 2 });
    const later = Date.now() + 600_000;
    expect([store.claim("p1", later, "P"), store.claim("q1", later, "Q"), store.claim("p-sealed-early", Date.now() - 1, "P")]).toEqual([true, true, true]);
    expect(store.claim("p2", later, "P")).toBe(true);
    expect(() => store.claim("p3", later, "P")).toThrow(expect.objectContaining({ name: "RequestStateStoreFull", scope: "principal" }));
    expect(store.size).toBe(3);
  });

  it("refuses an unknown option with HMCPConfigError naming it (a misspelt bound is not silently given the default)", () => {
    const misspelt = () => new MemoryRequestStateStore({ maxEntires: 5 } as unknown as { maxEntries: number });
    expect(misspelt).toThrow(HMCPConfigError);
    expect(misspelt).toThrow(expect.objectContaining({ key: "maxEntires", message: expect.stringMatching(/unknown option 'maxEntires'; did you mean 'maxEntries'\?/) }));
    expect(() => new MemoryRequestStateStore({ maxEntriesPerPrincipal: 5, ttl: 1 } as unknown as { maxEntries: number })).toThrow(expect.objectContaining({ name: "HMCPConfigError", key: "ttl" }));
    expect(new MemoryRequestStateStore({ maxEntries: 5, maxEntriesPerPrincipal: 2 }).size).toBe(0);
  });

  it("refuses a bound that is not a positive integer", () => {
    for (const maxEntries of [0, -1, 1.5, Number.NaN, "10" as unknown as number]) {
      expect(() => new MemoryRequestStateStore({ maxEntries })).toThrow(HMCPConfigError);
      expect(() => new MemoryRequestStateStore({ maxEntriesPerPrincipal: maxEntries })).toThrow(HMCPConfigError);
    }
  });
});
