/**
 * Shared fixtures: clinical text read from the team's public data sets (../shared/data, read only, never copied into
 * the repository), request bodies, and a local ES256 key set with tokens signed by jose.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from "jose";
import type { AuditRecordDraft } from "../../src/index.js";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The shared data sets; override with HMCP_DATA_DIR. */
export const DATA_DIR = process.env["HMCP_DATA_DIR"] ?? path.resolve(REPO_ROOT, "../shared/data");

const FALLBACK_NOTE =
  "HISTORY OF PRESENT ILLNESS: The patient presents with intermittent substernal chest pressure on exertion for three " +
  "weeks, relieved by rest. No dyspnea at rest, no syncope. PAST MEDICAL HISTORY: Hypertension, hyperlipidemia, type 2 " +
  "diabetes mellitus. MEDICATIONS: Metformin 1000 mg twice daily, lisinopril 20 mg daily, atorvastatin 40 mg nightly. " +
  "PHYSICAL EXAMINATION: Blood pressure 148/92, pulse 78 and regular. Lungs clear. Heart regular rate and rhythm without " +
  "murmur. ASSESSMENT AND PLAN: Stable angina; exercise stress test ordered, aspirin 81 mg daily started. ";

function readJsonl(rel: string): Record<string, unknown>[] {
  const file = path.join(DATA_DIR, rel);
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Cuts or repeats `text` to exactly `chars` characters (ASCII-only input keeps bytes = chars). */
function fit(text: string, chars: number): string {
  let out = text;
  while (out.length < chars) out += " " + text;
  return out.slice(0, chars);
}

const ascii = (s: string) => s.replace(/[^\x20-\x7e\n]/g, " ");

/** Benign clinical text (MTSamples transcriptions, CC0), `chars` long; a fixed note when the data set is absent. */
export function clinicalText(chars: number): { text: string; source: string } {
  const rows = readJsonl("mtsamples/dev.jsonl");
  const long = rows.map((r) => ascii(String(r["transcription"] ?? ""))).filter((t) => t.length >= chars);
  if (long.length > 0) return { text: fit(long[0]!, chars), source: "mtsamples/dev.jsonl (first transcription >= size)" };
  return { text: fit(FALLBACK_NOTE, chars), source: "built-in note (../shared/data/mtsamples absent)" };
}

/**
 * Clinical text WITH PHI, `chars` long: PhysioNet deid nursing notes that carry annotated (surrogate) PHI, joined.
 * Falls back to the benign note with synthetic identifiers inserted when the data set is absent.
 */
export function phiText(chars: number): { text: string; source: string; phiSpans: number } {
  const rows = readJsonl("phi-deid-physionet/dev.jsonl").filter((r) => Array.isArray(r["phi"]) && (r["phi"] as unknown[]).length > 0);
  if (rows.length > 0) {
    let text = "";
    let spans = 0;
    for (const r of rows) {
      if (text.length >= chars) break;
      text += ascii(String(r["text"])) + "\n";
      spans += (r["phi"] as unknown[]).length;
    }
    return { text: fit(text, chars), source: "phi-deid-physionet/dev.jsonl (notes with PHI spans, joined)", phiSpans: spans };
  }
  const phi = "Patient John Smith (MRN 4829173), born 04/12/1961, phone 555-201-7734, seen on 03/02/2024. ";
  return { text: fit(phi + FALLBACK_NOTE, chars), source: "built-in note with synthetic identifiers", phiSpans: 4 };
}

/** JSON-RPC `tools/call` body of the plain-SDK baseline (`id` is a placeholder replaced per request). */
export function toolsCallBody(text: string, id: string | number): Record<string, unknown> {
  return { jsonrpc: "2.0", id, method: "tools/call", params: { name: "echo", arguments: { text } } };
}

/** The MCP 2026-07-28 revision the modern configurations speak. */
export const MODERN_REVISION = "2026-07-28";

/**
 * A 2026-07-28 `tools/call` body: the tool's arguments and the per-request `_meta` envelope (protocol version, client
 * info, client capabilities; MCP 2026-07-28 basic/index, "_meta").
 */
export function modernToolsCallBody(name: string, args: Record<string, unknown>, id: string | number): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: {
      name,
      arguments: args,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": MODERN_REVISION,
        "io.modelcontextprotocol/clientInfo": { name: "bench-load", version: "1.0.0" },
        "io.modelcontextprotocol/clientCapabilities": {},
      },
    },
  };
}

/** The headers of a 2026-07-28 `tools/call` of `name` (Streamable HTTP, 2026-07-28: `Mcp-Method`, `Mcp-Name`). */
export function modernHeaders(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MODERN_REVISION, "mcp-method": "tools/call", "mcp-name": name, ...extra };
}

/** JSON-RPC client → server `sampling/createMessage` body of the HMCP configurations. */
export function samplingBody(text: string, id: string | number, patient?: string): Record<string, unknown> {
  return {
    jsonrpc: "2.0",
    id,
    method: "sampling/createMessage",
    params: {
      messages: [{ role: "user", content: { type: "text", text } }],
      maxTokens: 256,
      ...(patient !== undefined && { _meta: { "hmcp/patient": patient } }),
    },
  };
}

/** The identity of the bench's token issuer and resource. */
export const ISSUER = "https://auth.bench.hmcp.invalid";
export const AUDIENCE = "https://agent.bench.hmcp.invalid/mcp";
export const PATIENT = "bench-patient-0001";

/** A local ES256 key pair; the public JWK goes to the server's local key set. */
export async function benchKeys(): Promise<{ privateKey: CryptoKey; publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: "bench-1", alg: "ES256", use: "sig" };
  return { privateKey: privateKey as CryptoKey, publicJwk };
}

/** An RFC 9068 access token (ES256) with SMART patient context, valid for `ttlSec`. */
export async function signAccessToken(privateKey: CryptoKey, opts: { ttlSec?: number; jti?: string } = {}): Promise<string> {
  const jwt = new SignJWT({
    client_id: "bench-orchestrator",
    scope: "hmcp:sample patient/Patient.rs patient/Observation.rs",
    patient: PATIENT,
    ...(opts.jti !== undefined && { jti: opts.jti }),
  })
    .setProtectedHeader({ alg: "ES256", kid: "bench-1", typ: "at+jwt" })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject("svc-bench")
    .setIssuedAt()
    .setExpirationTime(`${opts.ttlSec ?? 3600}s`);
  return jwt.sign(privateKey);
}

/**
 * The audit record the request pipeline writes for one allowed `sampling/createMessage` under guardrails/default.yaml
 * (five guardrail summaries, both content digests), as a draft for `newAuditRecord`; `i` is the JSON-RPC id.
 */
export function requestAuditDraft(i: number): AuditRecordDraft {
  return {
    type: "request",
    agent: "emr-writeback",
    outcome: "allowed",
    actor: { clientId: "orchestrator", sub: "svc-orchestrator" },
    source: { address: "127.0.0.1" },
    transport: "http",
    sessionId: "6c1f5a8e-0d7b-4a52-9a43-2f1b7e1c9d10",
    method: "sampling/createMessage",
    requestId: i,
    patients: ["8f1c2d3e-1111-2222-3333-444455556666"],
    scopes: ["system/Patient.rs", "system/Observation.rs"],
    guardrails: [
      { action: "allow", guardrail: "limits", stage: "input" },
      { action: "allow", guardrail: "patient-context", stage: "input" },
      { action: "allow", guardrail: "prompt-injection", stage: "input" },
      { action: "allow", guardrail: "patient-context", stage: "output" },
      { action: "redact", entityTypes: ["DATE"], guardrail: "phi-redaction", stage: "output" },
    ],
    latencyMs: 1.234,
    digests: { request: "a".repeat(64), response: "b".repeat(64) },
  };
}

/**
 * The PHI detector's adversarial inputs (bench/phi.ts, bench/phi-ab.ts): each builds about `n` characters (UTF-16 code
 * units) of one repeated fragment; the issue's target is linear and under 50 ms per MB.
 */
export const PHI_ADVERSARIAL: Readonly<Record<string, (n: number) => string>> = {
  "repeated word": (n) => "Smith ".repeat(n / 6),
  "repeated number+street": (n) => "12 Main ".repeat(n / 8),
  "repeated 1 via": (n) => "1 via ".repeat(n / 6),
  "repeated date-ish": (n) => "5/10/40% ".repeat(n / 9),
  "repeated Dr.": (n) => "Dr. ".repeat(n / 4),
  "deep nesting": (n) => "(".repeat(n / 2) + ")".repeat(n / 2),
  "astral chars": (n) => "𝒜𝒷 ".repeat(n / 5),
  "one long word": (n) => "a".repeat(n),
  digits: (n) => "1".repeat(n),
  "emails@": (n) => "a@b.".repeat(n / 4),
};

/**
 * `chars` characters of MTSamples transcriptions joined (many notes, not one repeated; printable ASCII and newlines),
 * from ../shared/data/mtsamples/dev.jsonl; the built-in clinical note ({@link clinicalText}) when the set is absent.
 */
export function mtsamplesText(chars: number): string {
  const file = path.join(DATA_DIR, "mtsamples/dev.jsonl");
  if (!existsSync(file)) return clinicalText(chars).text;
  const notes = readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => String((JSON.parse(l) as { transcription?: string }).transcription ?? "").replace(/[^\x20-\x7e\n]/g, " "));
  return notes.join("\n").slice(0, chars);
}
