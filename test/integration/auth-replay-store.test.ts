/**
 * Client assertion replay protection at the demo authorization server survives a full store: oidc-provider keeps
 * each assertion's jti in the ReplayDetection model until the assertion expires, and the in-memory store never
 * evicts an unexpired entry to make room (a flood of fresh requests must not re-open a captured assertion).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { SignJWT, importJWK } from "jose";
import { defaultDemoClients, startDemoAuthorizationServer } from "../../demo/auth-server/index.js";
import type { DemoAuthorizationServer } from "../../demo/auth-server/index.js";
import { createMemoryAdapter, MemoryStoreFullError } from "../../src/dev-auth/memory-adapter.js";

const RESOURCE = "http://127.0.0.1:9/mcp";
const CAP = 20;
let small: DemoAuthorizationServer;
let normal: DemoAuthorizationServer;

beforeAll(async () => {
  small = await startDemoAuthorizationServer({ resources: [RESOURCE], clients: defaultDemoClients("p-1"), maxStoredEntries: CAP });
  normal = await startDemoAuthorizationServer({ resources: [RESOURCE], clients: defaultDemoClients("p-1") });
});
afterAll(async () => {
  await small?.stop();
  await normal?.stop();
});

/** A private_key_jwt client assertion for the token endpoint (SMART Backend Services). */
async function assertion(as: DemoAuthorizationServer, clientId: string, lifetimeSec = 60): Promise<string> {
  const jwk = as.clients[clientId]!.privateJwk!;
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ jti: randomUUID() })
    .setProtectedHeader({ alg: jwk.alg!, kid: jwk.kid!, typ: "JWT" })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(as.tokenEndpoint)
    .setIssuedAt(now)
    .setExpirationTime(now + lifetimeSec)
    .sign(await importJWK(jwk, jwk.alg!));
}

async function tokenRequest(as: DemoAuthorizationServer, clientAssertion: string, scope: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(as.tokenEndpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
      client_assertion: clientAssertion,
      scope,
      resource: RESOURCE,
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("demo authorization server: client assertion replay vs. a full store", () => {
  it("a captured orchestrator assertion stays refused after the reader floods the store", async () => {
    const captured = await assertion(small, "orchestrator");
    const first = await tokenRequest(small, captured, "hmcp:sample");
    expect(first.status).toBe(200);
    expect(first.body["access_token"]).toEqual(expect.any(String));
    const replay = await tokenRequest(small, captured, "hmcp:sample");
    expect(replay).toMatchObject({ status: 401, body: { error: "invalid_client" } });

    // The low-privilege reader sends more fresh requests than the store holds.
    const flood: number[] = [];
    for (let i = 0; i < CAP + 5; i++) flood.push((await tokenRequest(small, await assertion(small, "reader"), "hmcp:read")).status);
    const replayAfter = await tokenRequest(small, captured, "hmcp:sample");
    expect(replayAfter.body["access_token"]).toBeUndefined();
    expect(replayAfter).toMatchObject({ status: 401, body: { error: "invalid_client" } });

    expect(flood.slice(0, CAP - 1)).toEqual(Array(CAP - 1).fill(200));
    // Once the store is full of unexpired jtis, new requests are refused (no token), not served by evicting one.
    expect(flood.slice(CAP - 1)).toEqual(Array(flood.length - CAP + 1).fill(500));
  });

  it("refuses a client assertion whose exp is more than five minutes ahead (its jti would pin the store)", async () => {
    const long = await tokenRequest(normal, await assertion(normal, "reader", 3600), "hmcp:read");
    expect(long).toMatchObject({ status: 401, body: { error: "invalid_client" } });
    const fiveMinutes = await tokenRequest(normal, await assertion(normal, "reader", 300), "hmcp:read");
    expect(fiveMinutes.status).toBe(200);
  });
});

describe("demo memory adapter bound", () => {
  it("evicts only expired entries; refuses a new write while every entry is live; updates in place are allowed", async () => {
    const start = Date.now();
    const clock = { now: start };
    const realNow = Date.now;
    Date.now = () => clock.now;
    try {
      const Adapter = createMemoryAdapter({ maxEntries: 2 }) as new (model: string) => {
        upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void>;
        find(id: string): Promise<Record<string, unknown> | undefined>;
      };
      const replay = new Adapter("ReplayDetection");
      await replay.upsert("a", { iss: "orchestrator" }, 60);
      await replay.upsert("b", { iss: "reader" }, 10);
      await expect(replay.upsert("c", { iss: "reader" }, 60)).rejects.toBeInstanceOf(MemoryStoreFullError);
      await replay.upsert("b", { iss: "reader", again: true }, 10); // an existing key is not a new entry
      expect(await replay.find("a")).toEqual({ iss: "orchestrator" });

      clock.now = start + 11_000; // "b" has expired, "a" has not
      await replay.upsert("c", { iss: "reader" }, 60);
      expect(await replay.find("a")).toEqual({ iss: "orchestrator" });
      expect(await replay.find("b")).toBeUndefined();
      expect(await replay.find("c")).toEqual({ iss: "reader" });
      await expect(new Adapter("ClientCredentials").upsert("d", {}, 300)).rejects.toBeInstanceOf(MemoryStoreFullError);
    } finally {
      Date.now = realNow;
    }
  });

  it("rejects a bound that is not a positive integer", () => {
    expect(() => createMemoryAdapter({ maxEntries: 0 })).toThrow(RangeError);
  });
});
