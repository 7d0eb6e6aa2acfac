/**
 * principalIdentity: one computation of the principal's identity tuple for the session registry, the sealed
 * requestState binding and the task owner, in the exact encodings each had (a stored task's owner and a state sealed
 * before the change must still match).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { principalIdentity } from "../../../src/auth/principal.js";
import { ownerOf, principalKeyOf } from "../../../src/http/legacy-sessions.js";
import { roundBinding } from "../../../src/server/input-rounds.js";
import { taskOwner } from "../../../src/server/tasks.js";
import { contentDigest } from "../../../src/audit/canonical-json.js";
import type { Principal } from "../../../src/protocol/index.js";

const full: Principal = { clientId: "c1", sub: "u1", scopes: ["hmcp:access"], patient: "p1", tenant: "t1", issuer: "https://as.example" };
const bare: Principal = { clientId: "c2", scopes: [] };

describe("principalIdentity", () => {
  it("keeps each consumer's encoding: session holder and owner (null for absent), binding and task owner (\"\" for absent)", () => {
    for (const p of [full, bare]) {
      expect(principalKeyOf(p)).toBe(JSON.stringify([p.issuer ?? null, p.tenant ?? null, p.clientId, p.sub ?? null]));
      expect(ownerOf(p)).toBe(JSON.stringify([p.issuer ?? null, p.tenant ?? null, p.clientId, p.sub ?? null, p.patient ?? null]));
      const who = [p.issuer ?? "", p.tenant ?? "", p.clientId, p.sub ?? ""];
      expect(taskOwner("agent", p)).toBe(createHash("sha256").update(JSON.stringify(["agent", [...who, p.patient ?? null]])).digest("hex"));
      const request = { jsonrpc: "2.0" as const, id: 1, method: "tools/call", params: { name: "t", arguments: { a: 1 }, _meta: { "hmcp/patient": "p1", x: 1 } } };
      expect(roundBinding("agent", request, p, "hmcp/patient")).toBe(
        JSON.stringify(["agent", "tools/call", contentDigest({ params: { name: "t", arguments: { a: 1 } }, declared: "p1" }), who, p.patient ?? null]),
      );
    }
    expect(principalKeyOf(undefined)).toBe("anonymous");
    expect(ownerOf(undefined)).toBe("anonymous");
    expect(taskOwner("agent", undefined)).toBe(createHash("sha256").update(JSON.stringify(["agent", null])).digest("hex"));
  });

  it("is computed once for a frozen principal, afresh for one that may change in place", () => {
    const frozen = Object.freeze({ ...full, scopes: Object.freeze([...full.scopes]) as string[] });
    expect(principalIdentity(frozen)).toBe(principalIdentity(frozen));
    const mutable: Principal = { ...full };
    const before = principalIdentity(mutable);
    mutable.sub = "u2";
    expect(principalIdentity(mutable)).not.toBe(before);
    expect(principalIdentity(mutable).who).toEqual(["https://as.example", "t1", "c1", "u2"]);
    expect(ownerOf(mutable)).toContain('"u2"');
  });
});
