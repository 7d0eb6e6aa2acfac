/**
 * SMART on FHIR scopes (SMART App Launch 2.x, "Scopes and Launch Context") and HMCP's own scopes:
 * a parser, an implication check between scopes, and the access matcher the request pipeline calls.
 *
 * Grammar accepted (SMART App Launch 2.2 §"Scopes for requesting FHIR resources"):
 * - v2: `( patient | user | system ) "/" ( ResourceType | "*" ) "." cruds [ "?" param=value *( "&" param=value ) ]`
 *   where `cruds` is a non-empty subsequence of the letters c, r, u, d, s **in that order**;
 * - v1: the same with `read` (= `rs`), `write` (= `cud`) or `*` (= `cruds`) in place of the letters;
 * - HMCP: `hmcp:access` (may use the agent), `hmcp:read`, `hmcp:write`, `hmcp:sample` (may send
 *   `sampling/createMessage`), and the patient-level `patient/hmcp:read`, `patient/hmcp:write`.
 *
 * HMCP's `read` / `write` scopes apply to the pseudo resource type `"hmcp"` (the agent's own operations), not to FHIR
 * data: a FHIR wildcard (`system/*.cruds`) does not grant `hmcp`, and `hmcp:write` does not grant a FHIR write.
 * Anything else (`openid`, `fhirUser`, `launch/patient`, vendor scopes) parses as `kind: "other"` and grants nothing.
 */

/** An act on FHIR data: SMART v2 interaction letters (c create, r read, u update, d delete, s search). */
export interface ScopeRequest {
  action: "c" | "r" | "u" | "d" | "s";
  /** FHIR resource type, e.g. "Observation", or "hmcp" for HMCP's own scopes. */
  resourceType: string;
  /** The FHIR Patient id the act touches, if any. */
  patient?: string;
  /**
   * Search parameters the act is constrained by (e.g. `{ category: "laboratory" }`). A scope with a query
   * restriction (`?category=laboratory`) grants the act only when every restricted parameter is present here
   * with the same value.
   */
  params?: Readonly<Record<string, string>>;
}

/** SMART interaction letter. */
export type ScopeAction = ScopeRequest["action"];
/** SMART context level of a resource scope. */
export type ScopeLevel = "patient" | "user" | "system";

/** The pseudo resource type that HMCP's own `read`/`write` scopes apply to. */
export const HMCP_RESOURCE_TYPE = "hmcp";

/** The HMCP sampling scope: allows `sampling/createMessage`. */
export const HMCP_SAMPLE_SCOPE = "hmcp:sample";
/** The HMCP access scope: allows using the agent's MCP methods. */
export const HMCP_ACCESS_SCOPE = "hmcp:access";

/** A parsed scope string. `raw` is always the input. */
export type ParsedScope =
  | {
      kind: "resource";
      raw: string;
      level: ScopeLevel;
      /** FHIR resource type, `"*"` for every FHIR type, or `"hmcp"` for HMCP's own read/write scopes. */
      resourceType: string;
      /** Granted interactions, as a set of SMART v2 letters. */
      actions: ReadonlySet<ScopeAction>;
      /** Query restrictions (`?param=value`); empty when unrestricted. */
      restrictions: Readonly<Record<string, string>>;
      /** Which syntax the string used. */
      syntax: "v1" | "v2" | "hmcp";
    }
  | { kind: "hmcp"; raw: string; name: "access" | "sample" }
  | { kind: "other"; raw: string }
  | { kind: "invalid"; raw: string; reason: string };

const ORDER: readonly ScopeAction[] = ["c", "r", "u", "d", "s"];
const V1: Record<string, readonly ScopeAction[]> = { read: ["r", "s"], write: ["c", "u", "d"], "*": ORDER };
const RESOURCE_TYPE = /^[A-Z][A-Za-z0-9]{0,63}$/;
const LEVELS: ReadonlySet<string> = new Set(["patient", "user", "system"]);
// SMART v2 letters in order, each at most once, at least one.
const CRUDS = /^c?r?u?d?s?$/;
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_\-.:]*$/;
const MAX_SCOPE_LENGTH = 1024;

const parseCache = new Map<string, ParsedScope>();
const PARSE_CACHE_MAX = 4096;

/**
 * Parses one scope string. Never throws: a string that claims the SMART shape (`level/...`) but breaks its grammar
 * is `kind: "invalid"` with a PHI-free `reason`, and grants nothing.
 *
 * @example parseScope("patient/Observation.rs?category=laboratory")
 *   // { kind: "resource", level: "patient", resourceType: "Observation", actions: {r, s}, restrictions: { category: "laboratory" } }
 */
export function parseScope(scope: string): ParsedScope {
  const hit = parseCache.get(scope);
  if (hit) return hit;
  const parsed = parseUncached(scope);
  if (parseCache.size >= PARSE_CACHE_MAX) parseCache.clear();
  parseCache.set(scope, parsed);
  return parsed;
}

function invalid(raw: string, reason: string): ParsedScope {
  return { kind: "invalid", raw, reason };
}

function parseUncached(raw: string): ParsedScope {
  if (typeof raw !== "string" || raw.length === 0) return invalid(String(raw), "empty scope");
  if (raw.length > MAX_SCOPE_LENGTH) return invalid(raw.slice(0, 32), "scope too long");
  // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
  if (!/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(raw)) return invalid(raw, "characters outside RFC 6749 scope-token");

  switch (raw) {
    case "hmcp:access":
      return { kind: "hmcp", raw, name: "access" };
    case "hmcp:sample":
      return { kind: "hmcp", raw, name: "sample" };
    case "hmcp:read":
    case "hmcp:write":
      return hmcpResource(raw, "system", raw === "hmcp:read" ? "read" : "write");
    case "patient/hmcp:read":
    case "patient/hmcp:write":
      return hmcpResource(raw, "patient", raw.endsWith("read") ? "read" : "write");
  }
  if (raw.startsWith("hmcp:")) return invalid(raw, "unknown hmcp scope");

  const slash = raw.indexOf("/");
  const level = slash > 0 ? raw.slice(0, slash) : "";
  if (!LEVELS.has(level)) return { kind: "other", raw };
  const rest = raw.slice(slash + 1);
  if (rest.startsWith("hmcp:")) return invalid(raw, "unknown hmcp scope");

  const q = rest.indexOf("?");
  const body = q === -1 ? rest : rest.slice(0, q);
  const query = q === -1 ? undefined : rest.slice(q + 1);
  const dot = body.lastIndexOf(".");
  if (dot <= 0) return invalid(raw, "missing resource type or interactions");
  const resourceType = body.slice(0, dot);
  const perm = body.slice(dot + 1);
  if (resourceType !== "*" && !RESOURCE_TYPE.test(resourceType)) return invalid(raw, "malformed resource type");

  let actions: readonly ScopeAction[];
  let syntax: "v1" | "v2";
  const v1 = V1[perm];
  if (v1) {
    actions = v1;
    syntax = "v1";
  } else if (perm.length > 0 && CRUDS.test(perm)) {
    actions = [...perm] as ScopeAction[];
    syntax = "v2";
  } else {
    return invalid(raw, "interactions must be read, write, * or cruds letters in order");
  }

  let restrictions: Record<string, string> = {};
  if (query !== undefined) {
    if (syntax === "v1") return invalid(raw, "query restrictions need v2 syntax");
    const r = parseRestrictions(query);
    if (!r) return invalid(raw, "malformed query restriction");
    restrictions = r;
  }
  return { kind: "resource", raw, level: level as ScopeLevel, resourceType, actions: new Set(actions), restrictions, syntax };
}

function hmcpResource(raw: string, level: ScopeLevel, perm: "read" | "write"): ParsedScope {
  return {
    kind: "resource",
    raw,
    level,
    resourceType: HMCP_RESOURCE_TYPE,
    actions: new Set(V1[perm]),
    restrictions: {},
    syntax: "hmcp",
  };
}

function parseRestrictions(query: string): Record<string, string> | undefined {
  if (query.length === 0) return undefined;
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const pair of query.split("&")) {
    const eq = pair.indexOf("=");
    if (eq <= 0) return undefined;
    let name: string;
    let value: string;
    try {
      name = decodeURIComponent(pair.slice(0, eq));
      value = decodeURIComponent(pair.slice(eq + 1));
    } catch {
      return undefined;
    }
    if (!PARAM_NAME.test(name) || value.length === 0 || name in out) return undefined;
    out[name] = value;
  }
  return out;
}

/** Splits a space-separated OAuth `scope` value (RFC 6749 §3.3) into its tokens; tolerant of repeated spaces. */
export function splitScopes(scope: string | undefined): string[] {
  if (!scope) return [];
  return scope.split(" ").filter((s) => s.length > 0);
}

function coversType(granted: string, requested: string): boolean {
  if (granted === requested) return true;
  // The FHIR wildcard never covers HMCP's own pseudo type.
  return granted === "*" && requested !== HMCP_RESOURCE_TYPE && requested !== "*";
}

function levelImplies(granted: ScopeLevel, required: ScopeLevel): boolean {
  return granted === required || granted === "system";
}

function restrictionsCover(granted: Readonly<Record<string, string>>, required: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(granted)) if (required[k] !== v) return false;
  return true;
}

/**
 * True when holding scope `granted` implies holding scope `required`: same kind, the granted context level is equal
 * or `system`, the granted resource type is equal or the FHIR wildcard, the granted interactions are a superset, and
 * the granted query restrictions are not narrower. `hmcp:access` and `hmcp:sample` imply only themselves.
 * Invalid and unrecognised scopes imply only an identical unrecognised scope (e.g. `openid`), never a resource scope.
 */
export function scopeImplies(granted: string, required: string): boolean {
  const g = parseScope(granted);
  const r = parseScope(required);
  if (g.kind === "invalid" || r.kind === "invalid") return false;
  if (g.kind === "other" || r.kind === "other") return g.kind === r.kind && g.raw === r.raw;
  if (g.kind === "hmcp" || r.kind === "hmcp") return g.kind === "hmcp" && r.kind === "hmcp" && g.name === r.name;
  if (!levelImplies(g.level, r.level)) return false;
  if (r.resourceType === "*" ? g.resourceType !== "*" : !coversType(g.resourceType, r.resourceType)) return false;
  for (const a of r.actions) if (!g.actions.has(a)) return false;
  return restrictionsCover(g.restrictions, r.restrictions);
}

/**
 * True when `granted` implies at least one scope of `required` (see {@link scopeImplies}); an empty `required`
 * list is satisfied by any grant. This is the method-level check: "any one of these scopes allows the call".
 */
export function satisfiesAny(granted: readonly string[], required: readonly string[]): boolean {
  if (required.length === 0) return true;
  for (const r of required) {
    for (const g of granted) if (scopeImplies(g, r)) return true;
  }
  return false;
}

/** Why {@link checkAccess} refused. */
export type AccessDenial =
  /** No granted scope covers the action on the resource type (at any context level). */
  | "insufficient_scope"
  /** Only `patient/` scopes cover the act, and the act's patient is not the token's `patient`. */
  | "patient_context_mismatch"
  /** Only `patient/` scopes cover the act, and the token has no `patient` claim or the act names no patient. */
  | "patient_context_missing";

/** Outcome of {@link checkAccess}. `required` lists scopes (v2 syntax) any one of which would allow the act. */
export type AccessDecision =
  | { allowed: true; via: string }
  | { allowed: false; reason: AccessDenial; required: string[] };

function grantsAct(s: Extract<ParsedScope, { kind: "resource" }>, request: ScopeRequest): boolean {
  if (!coversType(s.resourceType, request.resourceType)) return false;
  if (!s.actions.has(request.action)) return false;
  const restrictions = Object.entries(s.restrictions);
  if (restrictions.length === 0) return true;
  const params = request.params;
  if (!params) return false;
  return restrictions.every(([k, v]) => Object.prototype.hasOwnProperty.call(params, k) && params[k] === v);
}

/**
 * Decides whether `granted` (with the token's patient launch context `contextPatient`) allows `request`, and why not.
 *
 * - `system/` and `user/` scopes allow the act for any patient (`user/` access is further limited by the FHIR
 *   server's own policy for that user, which HMCP does not see).
 * - A `patient/` scope allows the act only when the token carries a `patient` claim **and** the act names that same
 *   patient (`request.patient === contextPatient`). A `patient/` scope with no `patient` claim grants nothing
 *   patient-specific (SMART App Launch 2.x: the server SHALL provide the `patient` context with patient scopes).
 * - Scopes with query restrictions allow the act only when `request.params` carries each restricted value.
 */
export function checkAccess(granted: readonly string[], request: ScopeRequest, contextPatient?: string): AccessDecision {
  let patientLevelCovers = false;
  for (const g of granted) {
    const s = parseScope(g);
    if (s.kind !== "resource" || !grantsAct(s, request)) continue;
    if (s.level !== "patient") return { allowed: true, via: s.raw };
    patientLevelCovers = true;
    if (contextPatient !== undefined && contextPatient !== "" && request.patient === contextPatient) {
      return { allowed: true, via: s.raw };
    }
  }
  const required = requiredScopesFor(request);
  if (!patientLevelCovers) return { allowed: false, reason: "insufficient_scope", required };
  const missing = contextPatient === undefined || contextPatient === "" || request.patient === undefined;
  return { allowed: false, reason: missing ? "patient_context_missing" : "patient_context_mismatch", required };
}

/** True when `granted` (with the token's patient launch context `contextPatient`) allows `request`; see {@link checkAccess}. */
export function allows(granted: readonly string[], request: ScopeRequest, contextPatient?: string): boolean {
  return checkAccess(granted, request, contextPatient).allowed;
}

/**
 * The narrowest scopes (SMART v2 syntax, or HMCP's for type `"hmcp"`), any one of which would allow `request`:
 * the `system/` form and, when the act names a patient, the `patient/` form.
 * @example requiredScopesFor({ action: "c", resourceType: "Observation", patient: "p1" })
 *   // ["system/Observation.c", "patient/Observation.c"]
 */
export function requiredScopesFor(request: ScopeRequest): string[] {
  if (request.resourceType === HMCP_RESOURCE_TYPE) {
    const perm = request.action === "r" || request.action === "s" ? "read" : "write";
    return request.patient !== undefined ? [`hmcp:${perm}`, `patient/hmcp:${perm}`] : [`hmcp:${perm}`];
  }
  const suffix = `${request.resourceType}.${request.action}`;
  const out = [`system/${suffix}`];
  if (request.patient !== undefined) out.push(`patient/${suffix}`);
  return out;
}
