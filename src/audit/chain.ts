/**
 * The hash chain shared by every sink and by the verifier.
 *
 * One JSON Lines line per entry: `{"seq":N,"prev":"<hex>","hash":"<hex>","record":{...}}` where
 * - `seq` counts entries of one chain from 1, with no gaps, across rotated files;
 * - `prev` is the `hash` of entry `seq - 1` ({@link GENESIS_HASH}, 64 zeros, for `seq` 1);
 * - `hash` is the lowercase hex SHA-256 of the RFC 8785 (JCS) canonical JSON of
 *   `{ prev, record, seq }`, i.e. the UTF-8 bytes of `{"prev":"…","record":<JCS(record)>,"seq":N}`.
 * `record` is an {@link AuditRecordInput} or a checkpoint body ({@link CheckpointBody}).
 *
 * A checkpoint is a chain entry whose record carries a JWS (RFC 7515 compact, EdDSA/Ed25519 or
 * ES256) over the JCS JSON of `{ chain, seq, head, time }`, where `head` equals the entry's `prev`
 * (the hash of the last entry before it). The chain up to `head` is then fixed by a key only the
 * writer holds: recomputing every hash after an edit no longer matches the signed head.
 */
import { CompactSign, calculateJwkThumbprint, compactVerify, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK, type KeyObject } from "jose";
import { canonicalJson, sha256Hex } from "./canonical-json.js";

/** `prev` of the first entry of a chain: 64 hex zeros. */
export const GENESIS_HASH = "0".repeat(64);

/** JWS algorithms allowed for checkpoints. */
export type CheckpointAlg = "EdDSA" | "ES256";
const CHECKPOINT_ALGS: CheckpointAlg[] = ["EdDSA", "ES256"];

/** The record of a checkpoint entry. */
export interface CheckpointBody {
  type: "checkpoint";
  /** RFC 3339 UTC time with ms. */
  time: string;
  /** Chain (instance) id. */
  chain: string;
  /** Key id (RFC 7638 JWK thumbprint of the public key unless configured). */
  kid: string;
  /**
   * Why the checkpoint was written: every N records, at rotation, at close, or when a sink reopened a chain whose last
   * entry was not a close checkpoint (`recover`: the writer crashed or was killed, or the trail was cut back).
   */
  why: "interval" | "rotate" | "close" | "recover";
  /**
   * JWS compact serialisation over the JCS JSON of `{ chain, seq, head, time, why }`. `why` is signed so that a trail
   * cut back to an interval checkpoint cannot be relabelled as closed.
   */
  jws: string;
}

/**
 * What a store outside the audit trail keeps of one checkpoint, to detect later that the trail was cut back past it or
 * rewritten (also by someone holding the signing key): its chain, seq and entry hash. No PHI. Sinks hand these out
 * through `onCheckpoint`; `verifyAuditFiles`/`verifyAuditTable` check them with `anchors`.
 */
export interface CheckpointAnchor {
  /** Chain (instance) id, as in the checkpoint. */
  chain: string;
  /** The checkpoint entry's seq. */
  seq: number;
  /** The checkpoint entry's hash (hex SHA-256): it fixes every entry before it. */
  hash: string;
  /** Why the checkpoint was written. */
  why: CheckpointBody["why"];
  /** The checkpoint's time, RFC 3339. */
  time: string;
}

/** A parsed chain line. */
export interface ChainEntry {
  seq: number;
  prev: string;
  hash: string;
  record: Record<string, unknown>;
}

/**
 * Seals one entry. `canonicalRecord` is `canonicalJson(record)` (passed in so callers serialise once).
 * @returns the line (without newline) and its hash.
 */
export function sealEntry(seq: number, prev: string, canonicalRecord: string): { line: string; hash: string } {
  const hash = entryHash(seq, prev, canonicalRecord);
  return { line: entryLine(seq, prev, hash, canonicalRecord), hash };
}

/** The JSON Lines line (without newline) of an entry whose hash is known: exactly what {@link sealEntry} writes. */
export function entryLine(seq: number, prev: string, hash: string, canonicalRecord: string): string {
  return `{"seq":${seq},"prev":"${prev}","hash":"${hash}","record":${canonicalRecord}}`;
}

/** The hash of an entry: SHA-256 over JCS `{ prev, record, seq }` (keys in JCS order). */
export function entryHash(seq: number, prev: string, canonicalRecord: string): string {
  return sha256Hex(`{"prev":${JSON.stringify(prev)},"record":${canonicalRecord},"seq":${seq}}`);
}

/** A checkpoint signing key as the sinks take it. */
export interface AuditSigningKey {
  /** Private key: a JWK (with `d`), a WebCrypto CryptoKey or a Node KeyObject. */
  privateKey: JWK | CryptoKey | KeyObject;
  /** JWS algorithm; default: "EdDSA" for OKP keys, "ES256" for EC P-256 keys. */
  alg?: CheckpointAlg;
  /** Key id written in checkpoints; default: the RFC 7638 thumbprint of the public key. */
  kid?: string;
}

/** A signer prepared from an {@link AuditSigningKey}. */
export interface CheckpointSigner {
  kid: string;
  alg: CheckpointAlg;
  publicJwk: JWK;
  sign(chain: string, seq: number, head: string, time: string, why: CheckpointBody["why"]): Promise<string>;
}

/**
 * Prepares a checkpoint signer.
 * @throws Error when the key is not an Ed25519 or P-256 private key.
 */
export async function createCheckpointSigner(key: AuditSigningKey): Promise<CheckpointSigner> {
  let jwk: JWK;
  let cryptoKey: CryptoKey | KeyObject | JWK;
  if (isJwk(key.privateKey)) {
    jwk = key.privateKey;
    cryptoKey = key.privateKey;
  } else {
    cryptoKey = key.privateKey;
    jwk = await exportJWK(key.privateKey);
  }
  if (typeof jwk.d !== "string") throw new Error("audit signing key: a private key is required (JWK without 'd')");
  const alg: CheckpointAlg = key.alg ?? (jwk.kty === "OKP" && jwk.crv === "Ed25519" ? "EdDSA" : jwk.kty === "EC" && jwk.crv === "P-256" ? "ES256" : invalidKey(jwk));
  if (!CHECKPOINT_ALGS.includes(alg)) throw new Error(`audit signing key: alg must be one of ${CHECKPOINT_ALGS.join(", ")}`);
  const publicJwk = publicPart(jwk);
  const kid = key.kid ?? (await calculateJwkThumbprint(publicJwk));
  const signingKey = isJwk(cryptoKey) ? await importJWK(cryptoKey, alg) : cryptoKey;
  return {
    kid,
    alg,
    publicJwk: { ...publicJwk, kid, alg },
    async sign(chain, seq, head, time, why) {
      const payload = new TextEncoder().encode(canonicalJson({ chain, seq, head, time, why }));
      return new CompactSign(payload).setProtectedHeader({ alg, kid, typ: "hmcp-audit-checkpoint" }).sign(signingKey);
    },
  };
}

/**
 * What verifies checkpoints: a public JWK, CryptoKey or KeyObject, or a JWK Set (`{ keys: [...] }`,
 * RFC 7517 §5) when the signing key was rotated; a checkpoint is checked with the key whose `kid`
 * it names.
 */
export type AuditVerifyKey = JWK | CryptoKey | KeyObject | { keys: JWK[] };

/** Imported verification keys: by kid, plus keys without a kid. */
export interface VerifyKeyring {
  byKid: Map<string, CryptoKey | KeyObject | Uint8Array>;
  anonymous: Array<CryptoKey | KeyObject | Uint8Array>;
}

/** Imports a key or JWK Set for {@link verifyCheckpoint}. @throws Error for private or unusable keys. */
export async function importKeyring(key: AuditVerifyKey): Promise<VerifyKeyring> {
  const ring: VerifyKeyring = { byKid: new Map(), anonymous: [] };
  const list: Array<JWK | CryptoKey | KeyObject> = isJwkSet(key) ? key.keys : [key as JWK | CryptoKey | KeyObject];
  if (list.length === 0) throw new Error("audit verify: the JWK Set has no keys");
  for (const k of list) {
    const imported = await importVerifyKey(k);
    const kid = isJwk(k) ? (k.kid ?? (await calculateJwkThumbprint(publicPart(k)))) : undefined;
    if (kid !== undefined) ring.byKid.set(kid, imported);
    else ring.anonymous.push(imported);
  }
  return ring;
}

/** The keys to try for a checkpoint naming `kid`: the matching one, else the keys without a kid. */
export function keysFor(ring: VerifyKeyring, kid: string | undefined): Array<CryptoKey | KeyObject | Uint8Array> {
  const k = kid !== undefined ? ring.byKid.get(kid) : undefined;
  if (k) return [k];
  return ring.anonymous.length > 0 ? ring.anonymous : ring.byKid.size === 1 ? [...ring.byKid.values()] : [];
}

function isJwkSet(k: unknown): k is { keys: JWK[] } {
  return typeof k === "object" && k !== null && Array.isArray((k as { keys?: unknown }).keys);
}

/** Outcome of checking one checkpoint's signature. */
export type CheckpointCheck = { ok: true } | { ok: false; reason: "bad_signature" | "checkpoint_mismatch"; message: string };

/**
 * Verifies a checkpoint entry's JWS with the public key and that its signed payload names this
 * entry: same chain, seq, time and reason (`why`), and `head` equal to the entry's `prev`.
 */
export async function verifyCheckpoint(entry: ChainEntry, body: CheckpointBody, ring: VerifyKeyring): Promise<CheckpointCheck> {
  let payload: unknown;
  for (const key of keysFor(ring, typeof body.kid === "string" ? body.kid : undefined)) {
    try {
      const res = await compactVerify(body.jws, key, { algorithms: CHECKPOINT_ALGS });
      payload = JSON.parse(new TextDecoder().decode(res.payload));
      break;
    } catch {
      // try the next key
    }
  }
  if (payload === undefined) {
    return { ok: false, reason: "bad_signature", message: `checkpoint signature (kid ${String(body.kid)}) does not verify with the given public key(s)` };
  }
  const p = payload as { chain?: unknown; seq?: unknown; head?: unknown; time?: unknown; why?: unknown };
  if (p.head !== entry.prev || p.seq !== entry.seq || p.chain !== body.chain || p.time !== body.time || p.why !== body.why) {
    return { ok: false, reason: "checkpoint_mismatch", message: "signed checkpoint does not match the chain (records before it were rewritten)" };
  }
  return { ok: true };
}

/** Imports a verification key for {@link verifyCheckpoint}. */
export async function importVerifyKey(key: JWK | CryptoKey | KeyObject): Promise<CryptoKey | KeyObject | Uint8Array> {
  if (!isJwk(key)) return key;
  if (typeof key.d === "string") throw new Error("audit verify: pass the PUBLIC key (the JWK has a private 'd' member)");
  const alg = key.alg ?? (key.kty === "OKP" ? "EdDSA" : "ES256");
  return importJWK(key, alg);
}

/**
 * Generates a checkpoint key pair (Ed25519 by default).
 * @returns `privateJwk` for the sink's `signing.privateKey`, `publicJwk` for `verify --key`.
 */
export async function generateAuditSigningKey(alg: CheckpointAlg = "EdDSA"): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, crv: alg === "EdDSA" ? "Ed25519" : undefined });
  const privateJwk = await exportJWK(privateKey);
  const kid = await calculateJwkThumbprint(publicPart(privateJwk));
  return { privateJwk: { ...privateJwk, alg, kid }, publicJwk: { ...publicPart(privateJwk), alg, kid } };
}

function publicPart(jwk: JWK): JWK {
  const { kty, crv, x, y } = jwk;
  const out: JWK = { kty, crv, x };
  if (y !== undefined) out.y = y;
  return out;
}

function isJwk(k: unknown): k is JWK {
  return typeof k === "object" && k !== null && typeof (k as { kty?: unknown }).kty === "string";
}

function invalidKey(jwk: JWK): never {
  throw new Error(`audit signing key: expected an Ed25519 (OKP) or P-256 (EC) key, got kty=${String(jwk.kty)} crv=${String(jwk.crv)}`);
}
