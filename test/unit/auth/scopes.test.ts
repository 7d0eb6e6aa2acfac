/**
 * SMART App Launch 2.x scopes: parser and matcher, table-driven with the spec's examples
 * (hl7.org/fhir/smart-app-launch/scopes-and-launch-context.html: v1/v2 forms, wildcards, cruds subsets, query
 * restrictions) plus HMCP's own scopes.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  allows,
  assertAccess,
  checkAccess,
  HMCPError,
  HMCPErrorCode,
  parseScope,
  requiredScopesFor,
  requiredScopesForMethod,
  satisfiesAny,
  scopeImplies,
} from "hmcp";
import type { ScopeRequest } from "hmcp";

describe("parseScope", () => {
  const resourceCases: Array<[string, string, string, string, Record<string, string>, string]> = [
    // scope, level, type, letters, restrictions, syntax
    ["patient/Observation.rs", "patient", "Observation", "rs", {}, "v2"],
    ["user/*.cruds", "user", "*", "cruds", {}, "v2"],
    ["patient/*.rs", "patient", "*", "rs", {}, "v2"],
    ["system/Observation.cruds", "system", "Observation", "cruds", {}, "v2"],
    ["user/Appointment.cruds", "user", "Appointment", "cruds", {}, "v2"],
    ["patient/Condition.c", "patient", "Condition", "c", {}, "v2"],
    ["patient/Observation.ud", "patient", "Observation", "ud", {}, "v2"],
    ["patient/Observation.read", "patient", "Observation", "rs", {}, "v1"],
    ["patient/Observation.write", "patient", "Observation", "cud", {}, "v1"],
    ["user/*.read", "user", "*", "rs", {}, "v1"],
    ["user/*.*", "user", "*", "cruds", {}, "v1"],
    ["system/*.write", "system", "*", "cud", {}, "v1"],
    [
      "patient/Observation.rs?category=http://terminology.hl7.org/CodeSystem/observation-category|laboratory",
      "patient",
      "Observation",
      "rs",
      { category: "http://terminology.hl7.org/CodeSystem/observation-category|laboratory" },
      "v2",
    ],
    ["patient/Observation.rs?category=vital-signs&status=final", "patient", "Observation", "rs", { category: "vital-signs", status: "final" }, "v2"],
    ["hmcp:read", "system", "hmcp", "rs", {}, "hmcp"],
    ["hmcp:write", "system", "hmcp", "cud", {}, "hmcp"],
    ["patient/hmcp:read", "patient", "hmcp", "rs", {}, "hmcp"],
    ["patient/hmcp:write", "patient", "hmcp", "cud", {}, "hmcp"],
  ];
  it.each(resourceCases)("%s", (scope, level, resourceType, letters, restrictions, syntax) => {
    const p = parseScope(scope);
    expect(p.kind).toBe("resource");
    if (p.kind !== "resource") return;
    expect({ level: p.level, resourceType: p.resourceType, letters: ["c", "r", "u", "d", "s"].filter((l) => p.actions.has(l as never)).join(""), syntax: p.syntax }).toEqual({
      level,
      resourceType,
      letters,
      syntax,
    });
    expect({ ...p.restrictions }).toEqual(restrictions);
  });

  it.each([
    ["hmcp:access", "access"],
    ["hmcp:sample", "sample"],
  ])("%s is an HMCP scope", (scope, name) => {
    expect(parseScope(scope)).toMatchObject({ kind: "hmcp", name });
  });

  it.each(["openid", "fhirUser", "launch", "launch/patient", "offline_access", "online_access", "profile", "vendor:thing"])(
    "%s is a non-resource scope that grants nothing",
    (scope) => {
      expect(parseScope(scope).kind).toBe("other");
      expect(allows([scope], { action: "r", resourceType: "Patient" })).toBe(false);
    },
  );

  it.each([
    ["patient/Observation.sr", "letters out of order"],
    ["patient/Observation.rr", "repeated letter"],
    ["patient/Observation.x", "unknown letter"],
    ["patient/Observation.", "no interactions"],
    ["patient/.rs", "no resource type"],
    ["patient/observation.rs", "lower-case resource type"],
    ["patient/Observation.read?category=x", "query on v1 syntax"],
    ["patient/Observation.rs?", "empty query"],
    ["patient/Observation.rs?category", "parameter without value"],
    ["patient/Observation.rs?category=a&category=b", "repeated parameter"],
    ["hmcp:admin", "unknown hmcp scope"],
    ["user/hmcp:read", "hmcp scope at user level"],
    ["system/Obs\u00e9rvation.rs", "non-ASCII"],
  ])("%s is invalid (%s) and grants nothing", (scope) => {
    expect(parseScope(scope).kind).toBe("invalid");
    expect(allows([scope], { action: "r", resourceType: "Observation" }, "p1")).toBe(false);
    expect(satisfiesAny([scope], [scope])).toBe(false);
  });

  it("never throws, whatever the input", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (s) => {
        const p = parseScope(s);
        expect(["resource", "hmcp", "other", "invalid"]).toContain(p.kind);
      }),
    );
  });
});

describe("scopeImplies / satisfiesAny", () => {
  const cases: Array<[string, string, boolean]> = [
    ["patient/Observation.cruds", "patient/Observation.rs", true],
    ["patient/Observation.rs", "patient/Observation.r", true],
    ["patient/Observation.r", "patient/Observation.rs", false],
    ["patient/Observation.read", "patient/Observation.rs", true],
    ["patient/Observation.write", "patient/Observation.c", true],
    ["patient/Observation.write", "patient/Observation.r", false],
    ["patient/*.rs", "patient/Observation.rs", true],
    ["patient/Observation.rs", "patient/*.rs", false],
    ["user/*.*", "user/Appointment.cruds", true],
    ["system/Observation.rs", "patient/Observation.rs", true],
    ["patient/Observation.rs", "system/Observation.rs", false],
    ["user/Observation.rs", "patient/Observation.rs", false],
    ["patient/Observation.rs", "patient/Observation.rs?category=laboratory", true],
    ["patient/Observation.rs?category=laboratory", "patient/Observation.rs", false],
    ["patient/Observation.rs?category=laboratory", "patient/Observation.rs?category=laboratory&status=final", true],
    ["patient/Observation.rs?category=vital-signs", "patient/Observation.rs?category=laboratory", false],
    ["hmcp:read", "patient/hmcp:read", true],
    ["patient/hmcp:read", "hmcp:read", false],
    ["system/*.cruds", "hmcp:write", false],
    ["hmcp:write", "system/Observation.c", false],
    ["hmcp:access", "hmcp:sample", false],
    ["hmcp:sample", "hmcp:sample", true],
    ["openid", "openid", true],
  ];
  it.each(cases)("%s ⇒ %s : %s", (granted, required, expected) => {
    expect(scopeImplies(granted, required)).toBe(expected);
  });

  it("is any-of over the required list; an empty list is satisfied by any grant", () => {
    expect(satisfiesAny(["hmcp:sample"], ["hmcp:access", "hmcp:sample"])).toBe(true);
    expect(satisfiesAny(["hmcp:read"], ["hmcp:access", "hmcp:sample"])).toBe(false);
    expect(satisfiesAny([], [])).toBe(true);
    expect(satisfiesAny([], ["hmcp:access"])).toBe(false);
  });
});

describe("allows / checkAccess: patient context", () => {
  const obsWrite = (patient?: string): ScopeRequest => ({ action: "c", resourceType: "Observation", ...(patient !== undefined && { patient }) });

  it("system and user scopes allow any patient", () => {
    expect(allows(["system/Observation.cu"], obsWrite("p1"))).toBe(true);
    expect(allows(["user/*.cruds"], obsWrite("p2"))).toBe(true);
    expect(allows(["system/Observation.cu"], obsWrite())).toBe(true);
  });

  it("patient scopes allow only the token's own patient", () => {
    expect(allows(["patient/Observation.c"], obsWrite("p1"), "p1")).toBe(true);
    expect(checkAccess(["patient/Observation.c"], obsWrite("p2"), "p1")).toEqual({
      allowed: false,
      reason: "patient_context_mismatch",
      required: ["system/Observation.c", "patient/Observation.c"],
    });
  });

  it("a patient scope with no patient claim, or an act naming no patient, grants nothing patient-specific", () => {
    expect(checkAccess(["patient/*.cruds"], obsWrite("p1"))).toMatchObject({ allowed: false, reason: "patient_context_missing" });
    expect(checkAccess(["patient/*.cruds"], obsWrite(), "p1")).toMatchObject({ allowed: false, reason: "patient_context_missing" });
  });

  it("missing interaction or type is insufficient_scope, whatever the patient", () => {
    expect(checkAccess(["patient/Observation.rs"], obsWrite("p1"), "p1")).toMatchObject({ allowed: false, reason: "insufficient_scope" });
    expect(checkAccess(["system/Condition.c"], obsWrite("p1"))).toMatchObject({ allowed: false, reason: "insufficient_scope" });
  });

  it("query restrictions allow only acts carrying the restricted values", () => {
    const g = ["patient/Observation.rs?category=laboratory"];
    const read = (params?: Record<string, string>): ScopeRequest => ({ action: "s", resourceType: "Observation", patient: "p1", ...(params && { params }) });
    expect(allows(g, read({ category: "laboratory" }), "p1")).toBe(true);
    expect(allows(g, read({ category: "laboratory", code: "1234-5" }), "p1")).toBe(true);
    expect(allows(g, read({ category: "vital-signs" }), "p1")).toBe(false);
    expect(allows(g, read(), "p1")).toBe(false);
  });

  it("the FHIR wildcard never covers HMCP's own operations, and hmcp scopes never cover FHIR data", () => {
    expect(allows(["system/*.cruds"], { action: "c", resourceType: "hmcp" })).toBe(false);
    expect(allows(["hmcp:write"], { action: "c", resourceType: "hmcp" })).toBe(true);
    expect(allows(["hmcp:write"], { action: "c", resourceType: "Observation" })).toBe(false);
    expect(allows(["patient/hmcp:read"], { action: "r", resourceType: "hmcp", patient: "p1" }, "p1")).toBe(true);
  });

  it("requiredScopesFor names the narrowest scopes", () => {
    expect(requiredScopesFor({ action: "u", resourceType: "Condition" })).toEqual(["system/Condition.u"]);
    expect(requiredScopesFor({ action: "r", resourceType: "hmcp", patient: "p" })).toEqual(["hmcp:read", "patient/hmcp:read"]);
  });
});

describe("assertAccess", () => {
  it("throws InsufficientScope with the required scopes", () => {
    const e = (() => {
      try {
        assertAccess({ scopes: ["system/*.rs"] }, { action: "c", resourceType: "Observation" });
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(HMCPError);
    expect((e as HMCPError).code).toBe(HMCPErrorCode.InsufficientScope);
    expect((e as HMCPError).data).toMatchObject({ reason: "insufficient_scope", required: ["system/Observation.c"] });
  });

  it("throws PatientContextViolation without naming either patient", () => {
    let e: unknown;
    try {
      assertAccess({ scopes: ["patient/Observation.c"], patient: "pat-A" }, { action: "c", resourceType: "Observation", patient: "pat-B" });
    } catch (err) {
      e = err;
    }
    expect((e as HMCPError).code).toBe(HMCPErrorCode.PatientContextViolation);
    expect(JSON.stringify({ m: (e as HMCPError).message, d: (e as HMCPError).data })).not.toMatch(/pat-A|pat-B/);
  });

  it("returns the scope that allowed the act", () => {
    expect(assertAccess({ scopes: ["hmcp:read", "system/Observation.cu"] }, { action: "u", resourceType: "Observation" })).toEqual({
      allowed: true,
      via: "system/Observation.cu",
    });
  });
});

describe("DEFAULT_METHOD_SCOPES", () => {
  it("sampling needs hmcp:sample or hmcp:access; unknown methods fail closed to hmcp:access", () => {
    expect(requiredScopesForMethod("sampling/createMessage")).toEqual(["hmcp:sample", "hmcp:access"]);
    expect(satisfiesAny(["hmcp:read"], requiredScopesForMethod("tools/call"))).toBe(false);
    expect(satisfiesAny(["patient/hmcp:write"], requiredScopesForMethod("tools/call"))).toBe(true);
    expect(requiredScopesForMethod("x/unknown")).toEqual(["hmcp:access"]);
    expect(requiredScopesForMethod("tools/call", { "tools/call": ["hmcp:write"] })).toEqual(["hmcp:write"]);
  });
});

describe("properties", () => {
  const letters = fc
    .subarray(["c", "r", "u", "d", "s"], { minLength: 1 })
    .map((a) => a.join(""));
  const restriction = fc.constantFrom("", "?category=laboratory", "?category=vital-signs", "?category=laboratory&status=final");
  const resourceScope = fc
    .tuple(fc.constantFrom("patient", "user", "system"), fc.constantFrom("Observation", "Condition", "*"), letters, restriction)
    .map(([l, t, a, q]) => `${l}/${t}.${a}${q}`);
  const anyScope = fc.oneof(resourceScope, fc.constantFrom("hmcp:read", "hmcp:write", "patient/hmcp:read", "patient/hmcp:write", "hmcp:sample", "openid"));
  const request = fc.record(
    {
      action: fc.constantFrom("c", "r", "u", "d", "s"),
      resourceType: fc.constantFrom("Observation", "Condition", "hmcp"),
      patient: fc.constantFrom("p1", "p2"),
      params: fc.constantFrom({ category: "laboratory" }, { category: "vital-signs" }, { category: "laboratory", status: "final" }),
    },
    { requiredKeys: ["action", "resourceType"] },
  ) as fc.Arbitrary<ScopeRequest>;
  const ctxPatient = fc.constantFrom(undefined, "p1");

  it("scopeImplies is sound: whatever the implied scope allows, the implying scope allows too", () => {
    fc.assert(
      fc.property(anyScope, anyScope, request, ctxPatient, (g, h, r, p) => {
        if (scopeImplies(g, h) && allows([h], r, p)) expect(allows([g], r, p)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it("more scopes never take access away, and a scope always implies itself", () => {
    fc.assert(
      fc.property(fc.array(anyScope, { maxLength: 4 }), anyScope, request, ctxPatient, (granted, extra, r, p) => {
        if (allows(granted, r, p)) expect(allows([...granted, extra], r, p)).toBe(true);
        if (parseScope(extra).kind !== "invalid") expect(scopeImplies(extra, extra)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("only patient/ grants ever depend on the patient, and they allow only the context patient", () => {
    fc.assert(
      fc.property(fc.array(anyScope, { maxLength: 4 }), request, (granted, r) => {
        const patientOnly = granted.every((g) => g.startsWith("patient/"));
        if (patientOnly && r.patient !== undefined && allows(granted, r, "p1")) expect(r.patient).toBe("p1");
      }),
      { numRuns: 2000 },
    );
  });
});
