/**
 * Bearer tokens for the HTTP fuzz suite: a good one, and forged, mutated and hostile ones (signed with another key, alg
 * "none", an unknown `crit`, expired, for another audience, claims of the wrong type, tampered bytes, oversized), each
 * built once before the run; {@link authorizationArb} picks one and mutates the `Authorization` header around it.
 */
import { webcrypto } from "node:crypto";
import fc from "fast-check";
import { mint, makeKeys, TEST_ISSUER, TEST_RESOURCE, type TestKeys } from "../fixtures/bearer.js";

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");

/** A compact JWS over exactly `header` and `payload`, ES256 with `key` (WebCrypto's ECDSA signature is JWS's r||s). */
async function rawJwt(header: Record<string, unknown>, payload: Record<string, unknown> | string, key: TestKeys["privateKey"]): Promise<string> {
  const input = `${b64(header)}.${b64(payload)}`;
  const sig = await webcrypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key as webcrypto.CryptoKey, Buffer.from(input));
  return `${input}.${Buffer.from(sig).toString("base64url")}`;
}

export const FULL_SCOPE = "hmcp:access hmcp:sample hmcp:read hmcp:write";

export interface TokenPool {
  /** Valid for every method of the fuzz agent. */
  good: string;
  /** Every other token: forged, expired, wrong claims, hostile. */
  bad: string[];
}

export async function tokenPool(keys: TestKeys): Promise<TokenPool> {
  const other = await makeKeys(keys.jwk.kid);
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: TEST_ISSUER, aud: TEST_RESOURCE, sub: "fuzzer", client_id: "fuzzer", scope: FULL_SCOPE, iat: now, exp: now + 3600 };
  const header = { alg: "ES256", kid: keys.jwk.kid, typ: "at+jwt" };
  const good = await mint(keys, { sub: "fuzzer", client_id: "fuzzer", scope: FULL_SCOPE, exp: now + 3600 });
  const [h, p, s] = good.split(".") as [string, string, string];
  const bad = [
    await mint(keys, { scope: "hmcp:read", sub: "reader", exp: now + 3600 }),
    await mint(keys, { scope: "", exp: now + 3600 }),
    await mint(keys, { scope: FULL_SCOPE, patient: "p1", exp: now + 3600 }),
    await mint(keys, { exp: now - 600, iat: now - 900 }),
    await mint(keys, { nbf: now + 3600, exp: now + 7200 }),
    await mint(keys, { aud: "https://elsewhere.example/mcp" }),
    await mint(keys, { iss: "https://evil.example" }),
    await mint(other, { scope: FULL_SCOPE }), // same kid, another key
    await rawJwt({ ...header, typ: "JWT" }, claims, keys.privateKey),
    await rawJwt({ ...header, crit: ["x-unknown"], "x-unknown": true }, claims, keys.privateKey),
    await rawJwt({ ...header, kid: "no-such-kid" }, claims, keys.privateKey),
    await rawJwt({ ...header, jku: "https://evil.example/jwks", x5u: "https://evil.example/x5" }, claims, keys.privateKey),
    await rawJwt(header, { ...claims, sub: 42, client_id: ["a", "b"], scope: ["hmcp:access"] }, keys.privateKey),
    await rawJwt(header, { ...claims, exp: "tomorrow", patient: { id: "p1" } }, keys.privateKey),
    await rawJwt(header, { ...claims, aud: [TEST_RESOURCE, "https://other.example"], azp: "someone-else" }, keys.privateKey),
    await rawJwt(header, `${JSON.stringify(claims).slice(0, -1)},"__proto__":{"admin":true},"constructor":{"prototype":{"admin":true}}}`, keys.privateKey),
    `${b64({ alg: "none", typ: "at+jwt" })}.${p}.`,
    `${b64({ alg: "HS256", kid: keys.jwk.kid, typ: "at+jwt" })}.${p}.${s}`,
    `${h}.${b64({ ...claims, scope: `${FULL_SCOPE} admin` })}.${s}`, // payload changed, signature kept
    `${h}.${p}`,
    `${h}.${p}.`,
    `${h}.${p}.${s}.${s}`,
    `${h}..${s}`,
    `${p}.${h}.${s}`,
    `${good}${"A".repeat(9_000)}`,
    good.slice(0, -1),
    `${good.slice(0, -2)}${good.at(-2) === "A" ? "B" : "A"}${good.at(-1)}`,
    "e30.e30.e30",
    "not-a-jwt",
    "",
  ];
  return { good, bad };
}

/** An `Authorization` header value (or several, or none) around a token of the pool, possibly mutated. */
export function authorizationArb(pool: TokenPool): fc.Arbitrary<string | string[] | undefined> {
  const token = fc.oneof(
    { weight: 16, arbitrary: fc.constant(pool.good) },
    { weight: 4, arbitrary: fc.constantFrom(...pool.bad) },
    // one byte of the good token changed
    fc.tuple(fc.nat(), fc.constantFrom("A", "_", "-", ".", "=", "+", "/", " ")).map(([i, c]) => {
      const at = i % pool.good.length;
      return pool.good.slice(0, at) + c + pool.good.slice(at + 1);
    }),
  );
  return fc.oneof(
    { weight: 24, arbitrary: token.map((t) => `Bearer ${t}`) },
    fc.constant(undefined),
    token.map((t) => `bearer ${t}`),
    token.map((t) => `Bearer  ${t}`),
    token.map((t) => `Bearer ${t} `),
    token.map((t) => `Bearer ${t} extra`),
    token.map((t) => `DPoP ${t}`),
    token.map((t) => t),
    fc.constantFrom("Bearer", "Bearer ", "", "Basic Zm9vOmJhcg==", "Bearer \t", "Negotiate abc"),
    fc.tuple(token, token).map(([a, b]) => [`Bearer ${a}`, `Bearer ${b}`]),
  );
}
