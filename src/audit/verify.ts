/**
 * Verifies audit chains (issue 4 "hmcp audit verify"): sequence, links, hashes, record schema and,
 * with the public key, the checkpoint signatures. Stops at the first bad entry and says where and why.
 */
import path from "node:path";
import { entryHash, entryLine, GENESIS_HASH, importKeyring, verifyCheckpoint, type AuditVerifyKey, type ChainEntry, type CheckpointAnchor, type CheckpointBody, type VerifyKeyring } from "./chain.js";
import { canonicalJson } from "./canonical-json.js";
import { readLines } from "./lines.js";
import { StoredAuditRecordSchema } from "./record.js";

/** Stable reason codes of a verification failure. */
export type VerifyFailureReason =
  | "torn_line" // the last line has no newline: an incomplete write (crash) or a truncation
  | "malformed_line" // not JSON, or not a chain entry
  | "seq_gap" // seq is not previous + 1: a line was removed, reordered or inserted
  | "prev_mismatch" // prev is not the previous entry's hash
  | "hash_mismatch" // the entry's content does not match its hash: the entry was edited
  | "invalid_record" // hash is fine but the record does not fit the audit record schema
  | "bad_signature" // a checkpoint's JWS does not verify with the public key
  | "checkpoint_mismatch" // a signed checkpoint does not match the chain before it
  | "chain_mismatch" // checkpoints of different chains in one sequence of files
  | "unsigned_tail" // with a key: entries after the last signed checkpoint (truncation, or crash before close)
  | "not_genesis" // the first entry is not seq 1 with the genesis prev (files missing at the start)
  | "anchor_missing" // the chain ends before a checkpoint anchored elsewhere, or no chain here has the anchor's id
  | "anchor_mismatch" // the entry at an anchored seq is not the anchored checkpoint: the chain was rewritten
  | "unreadable_file"; // a file could not be read

/** Where and why verification failed. `line` is 1-based within `file`. */
export interface VerifyFailure {
  file: string;
  line: number;
  seq?: number;
  reason: VerifyFailureReason;
  /** A fixed, PHI-free sentence. */
  message: string;
}

/** Options of {@link verifyAuditFiles}. */
export interface VerifyOptions {
  /** Public key (JWK, CryptoKey, KeyObject, or a JWK Set after key rotation) of the checkpoints. Without it signatures are NOT checked. */
  publicKey?: AuditVerifyKey;
  /**
   * With `publicKey`: accept entries after the last signed checkpoint (a crash before close). Default
   * false: such entries are reported as `unsigned_tail`, because a truncation looks the same.
   */
  allowUnsignedTail?: boolean;
  /** Accept a chain that starts after seq 1 (older files archived elsewhere). Default false. */
  partial?: boolean;
  /** The chain id every checkpoint must name. Default: any, but one per chain. `verifyAuditTable` sets the instance id. */
  chain?: string;
  /**
   * Checkpoints recorded outside the trail (the sinks' `onCheckpoint`): each must be in the trail, at its seq, with its
   * hash. Catches what the files alone cannot show: a chain cut back past an anchored checkpoint (`anchor_missing`),
   * and a chain rewritten, even with the signing key (`anchor_mismatch`). Checked with or without `publicKey`; anchors
   * of other chains are ignored by a chain, and {@link verifyAuditFiles} reports anchors whose chain none of the files
   * hold. With `partial`, anchors before the first entry read are not checked.
   */
  anchors?: ReadonlyArray<Pick<CheckpointAnchor, "chain" | "seq" | "hash">>;
}

/** Result of {@link verifyAuditFiles}. */
export interface VerifyResult {
  ok: boolean;
  /** Audit records (non-checkpoint entries) verified before any failure. */
  records: number;
  /** Checkpoint entries seen (signatures checked only when `signaturesChecked`). */
  checkpoints: number;
  /** True when a public key was given and every checkpoint seen verified. */
  signaturesChecked: boolean;
  /** Highest seq covered by a verified (or, without key, well-formed) checkpoint; 0 if none. */
  signedThrough: number;
  /** Last good seq and its hash (the chain head). */
  lastSeq: number;
  head: string;
  /** Chain id from the checkpoints, if any. */
  chain?: string;
  /** Where the chain's last good entry is (file name, 1-based line); absent when the files hold none. */
  lastEntry?: { file: string; line: number };
  /** True when the last entry is a checkpoint written at close (a clean shutdown). */
  closed: boolean;
  /**
   * `recover` checkpoints seen: each marks a reopen of the chain after it had ended without a close checkpoint (the
   * writer crashed or was killed, or the trail was cut back to a checkpoint). The seq and time of each, and with
   * several chains the chain's name.
   */
  recoveries: Array<{ seq: number; time: string; chain?: string }>;
  firstError?: VerifyFailure;
  /**
   * Set when the files hold several chains (file name prefixes, e.g. one per agent): each chain's own
   * result. The top level then sums `records` and `checkpoints`, `closed` is true when every chain is
   * closed, and `lastSeq`/`head`/`chain`/`signedThrough` are those of the first failing chain (else the last).
   */
  chains?: Array<VerifyResult & { name: string; files: number }>;
}

const CHECKPOINT_MEMBERS = ["chain", "jws", "kid", "time", "type", "why"];
const CHECKPOINT_WHY = new Set<unknown>(["interval", "rotate", "close", "recover"]);

/** A checkpoint record as the sinks write it (./chain.ts CheckpointBody): those members, strings, a known `why`. */
function isCheckpointBody(r: Record<string, unknown>): r is CheckpointBody & Record<string, unknown> {
  const keys = Object.keys(r).sort();
  return keys.length === CHECKPOINT_MEMBERS.length && keys.every((k, i) => k === CHECKPOINT_MEMBERS[i] && typeof r[k] === "string") && CHECKPOINT_WHY.has(r["why"]);
}

/** Running state of a chain verification, shared by the file and table verifiers. */
export class ChainVerifier {
  private expectedSeq = 0;
  private prev = GENESIS_HASH;
  private started = false;
  records = 0;
  checkpoints = 0;
  signedThrough = 0;
  chain: string | undefined;
  closed = false;
  readonly recoveries: Array<{ seq: number; time: string }> = [];
  firstUnsigned: { file: string; line: number; seq: number } | undefined;
  error: VerifyFailure | undefined;
  /** seqs that anchors name, and where and what the chain's entry at each seq was */
  private readonly anchoredSeqs: Set<number>;
  private readonly atAnchored = new Map<number, { file: string; line: number; hash: string }>();
  private firstSeq: number | undefined;
  private last: { file: string; line: number } | undefined;

  private constructor(
    private readonly key: VerifyKeyring | undefined,
    private readonly opts: VerifyOptions,
  ) {
    this.anchoredSeqs = new Set((opts.anchors ?? []).map((a) => a.seq));
  }

  static async create(opts: VerifyOptions): Promise<ChainVerifier> {
    return new ChainVerifier(opts.publicKey === undefined ? undefined : await importKeyring(opts.publicKey), opts);
  }

  /** Checks one line. Returns false (and sets `error`) on the first failure. */
  async line(file: string, line: number, text: string, terminated: boolean): Promise<boolean> {
    const fail = (reason: VerifyFailureReason, message: string, seq?: number): false => {
      this.error = { file, line, reason, message, ...(seq === undefined ? {} : { seq }) };
      return false;
    };
    if (!terminated) return fail("torn_line", "last line is incomplete (no newline): a write was cut off (crash) or the file was truncated");
    let entry: ChainEntry;
    try {
      const parsed = JSON.parse(text) as Partial<ChainEntry>;
      if (!Number.isSafeInteger(parsed.seq) || typeof parsed.prev !== "string" || typeof parsed.hash !== "string" || typeof parsed.record !== "object" || parsed.record === null || Array.isArray(parsed.record)) {
        return fail("malformed_line", "line is not a chain entry ({seq, prev, hash, record})");
      }
      entry = parsed as ChainEntry;
    } catch {
      // an empty line is no entry either (the sink never writes one), but say plainly what it is
      return fail("malformed_line", text.trim() === "" ? "line is empty (the sink never writes empty lines: the file was edited)" : "line is not valid JSON");
    }
    if (!this.started) {
      this.started = true;
      if (!this.opts.partial && (entry.seq !== 1 || entry.prev !== GENESIS_HASH)) return fail("not_genesis", "chain does not start at seq 1 (first entries or files missing)", entry.seq);
      this.expectedSeq = entry.seq;
      this.prev = entry.prev;
    }
    if (entry.seq !== this.expectedSeq) return fail("seq_gap", `expected seq ${this.expectedSeq}, found ${entry.seq}: an entry was removed, reordered or inserted`, entry.seq);
    if (entry.prev !== this.prev) return fail("prev_mismatch", "prev does not match the previous entry's hash: an entry was removed, reordered or inserted", entry.seq);
    let canonical: string;
    try {
      canonical = canonicalJson(entry.record);
    } catch {
      return fail("malformed_line", "record is not canonicalisable JSON", entry.seq);
    }
    if (entryHash(entry.seq, entry.prev, canonical) !== entry.hash) return fail("hash_mismatch", "entry content does not match its hash: the entry was edited", entry.seq);
    // The hash covers what JSON.parse kept; the line must also be exactly what a sink writes for it, or members the hash
    // does not cover (an added member, a duplicated "record" of which the parser kept the last) would pass unseen.
    if (text !== entryLine(entry.seq, entry.prev, entry.hash, canonical)) return fail("malformed_line", "line is not in the form the sink writes (members added, duplicated or reordered): the file was edited", entry.seq);
    this.firstSeq ??= entry.seq;
    this.last = { file, line };
    if (this.anchoredSeqs.has(entry.seq)) this.atAnchored.set(entry.seq, { file, line, hash: entry.hash });
    if (entry.record["type"] === "checkpoint") {
      const body = entry.record as unknown as CheckpointBody;
      // exactly the members a sink writes: the last checkpoint is covered by no later hash, and its signature covers
      // only chain, seq, head, time and why, so a member added to it would otherwise pass
      if (!isCheckpointBody(entry.record)) return fail("malformed_line", "checkpoint is not { type, time, chain, kid, why, jws } with a known why", entry.seq);
      if (this.opts.chain !== undefined && body.chain !== this.opts.chain) return fail("chain_mismatch", `checkpoint of chain "${body.chain}", not "${this.opts.chain}": entries of another chain`, entry.seq);
      if (this.chain !== undefined && body.chain !== this.chain) return fail("chain_mismatch", "checkpoint of another chain: files of different chains mixed", entry.seq);
      this.chain = body.chain;
      if (this.key !== undefined) {
        const check = await verifyCheckpoint(entry, body, this.key);
        if (!check.ok) return fail(check.reason, check.message, entry.seq);
      }
      this.checkpoints++;
      this.signedThrough = entry.seq;
      this.firstUnsigned = undefined;
      this.closed = body.why === "close";
      if (body.why === "recover") this.recoveries.push({ seq: entry.seq, time: body.time });
    } else {
      if (!StoredAuditRecordSchema.safeParse(entry.record).success) return fail("invalid_record", "record does not fit the audit record schema", entry.seq);
      this.records++;
      this.closed = false;
      this.firstUnsigned ??= { file, line, seq: entry.seq };
    }
    this.prev = entry.hash;
    this.expectedSeq = entry.seq + 1;
    return true;
  }

  /** Final checks after the last line. */
  finish(): void {
    if (this.error) return;
    this.checkAnchors();
    if (this.error || this.key === undefined || this.opts.allowUnsignedTail || this.firstUnsigned === undefined) return;
    const u = this.firstUnsigned;
    this.error = {
      ...u,
      reason: "unsigned_tail",
      message: `entries from here to the chain's end (seq ${this.expectedSeq - 1}) are not covered by a signed checkpoint (entries removed from its end, or the writer crashed before close)`,
    };
  }

  /** The anchors of this chain, lowest seq first: each must be the entry at its seq. */
  private checkAnchors(): void {
    const chain = this.chain ?? this.opts.chain;
    if (chain === undefined) return;
    const mine = (this.opts.anchors ?? []).filter((a) => a.chain === chain && !(this.opts.partial && this.firstSeq !== undefined && a.seq < this.firstSeq));
    for (const a of mine.sort((x, y) => x.seq - y.seq)) {
      const at = this.atAnchored.get(a.seq);
      if (at === undefined) {
        this.error = {
          file: this.last?.file ?? "",
          line: this.last?.line ?? 0,
          seq: a.seq,
          reason: "anchor_missing",
          message: `the chain ends at seq ${this.expectedSeq - 1}, before the checkpoint anchored elsewhere at seq ${a.seq}: entries were removed from its end`,
        };
        return;
      }
      if (at.hash !== a.hash) {
        this.error = { file: at.file, line: at.line, seq: a.seq, reason: "anchor_mismatch", message: "entry is not the checkpoint anchored elsewhere at this seq: the chain was rewritten" };
        return;
      }
    }
  }

  result(): VerifyResult {
    return {
      ok: this.error === undefined,
      records: this.records,
      checkpoints: this.checkpoints,
      signaturesChecked: this.key !== undefined,
      signedThrough: this.signedThrough,
      lastSeq: this.expectedSeq - 1,
      head: this.prev,
      ...(this.chain === undefined ? {} : { chain: this.chain }),
      ...(this.last !== undefined && { lastEntry: { ...this.last } }),
      closed: this.closed,
      recoveries: [...this.recoveries],
      ...(this.error === undefined ? {} : { firstError: this.error }),
    };
  }
}

const FILE_RE = /^(.+)-\d{8}-\d{6}\.jsonl$/;

/**
 * Verifies the chains in `files`. Files written by {@link FileAuditSink} (`<prefix>-<YYYYMMDD>-<NNNNNN>.jsonl`)
 * are grouped by prefix, one chain each, in counter order; other files form one chain in the order given.
 * Never throws for content problems: they are reported in `firstError` (file name, 1-based line, seq
 * where known, reason code, message).
 * @throws Error when `publicKey` is not a usable public key.
 */
export async function verifyAuditFiles(files: string[], opts: VerifyOptions = {}): Promise<VerifyResult> {
  const groups = new Map<string, string[]>();
  for (const f of files) {
    const name = FILE_RE.exec(path.basename(f))?.[1] ?? "";
    groups.set(name, [...(groups.get(name) ?? []), f]);
  }
  for (const [name, list] of groups) {
    if (name !== "") list.sort((a, b) => counterOf(a) - counterOf(b));
  }
  if (groups.size <= 1) return unknownAnchors(await verifyChain(files.length === 0 ? [] : [...groups.values()][0]!, opts), opts);
  const chains: NonNullable<VerifyResult["chains"]> = [];
  for (const [name, list] of groups) chains.push({ ...(await verifyChain(list, opts)), name: name || "(other)", files: list.length });
  const pick = chains.find((c) => !c.ok) ?? chains.at(-1)!;
  return unknownAnchors({
    ok: chains.every((c) => c.ok),
    records: chains.reduce((n, c) => n + c.records, 0),
    checkpoints: chains.reduce((n, c) => n + c.checkpoints, 0),
    signaturesChecked: chains.every((c) => c.signaturesChecked),
    signedThrough: pick.signedThrough,
    lastSeq: pick.lastSeq,
    head: pick.head,
    ...(pick.chain !== undefined && { chain: pick.chain }),
    closed: chains.every((c) => c.closed),
    recoveries: chains.flatMap((c) => c.recoveries.map((r) => ({ ...r, chain: c.name }))),
    ...(pick.firstError !== undefined && { firstError: pick.firstError }),
    chains,
  }, opts);
}

/**
 * Fails a result when anchors name a chain that none of the verified chains is. When a chain here has no checkpoint
 * (so no chain id) the anchored chain may be it, cut back before its first remaining checkpoint: that chain's last
 * entry is named, and the failure replaces an `unsigned_tail` (the anchor says more: entries existed past the end).
 * Otherwise the anchored chain's files are missing, or were replaced.
 */
function unknownAnchors(result: VerifyResult, opts: VerifyOptions): VerifyResult {
  if (!opts.anchors?.length) return result;
  if (!result.ok && result.firstError?.reason !== "unsigned_tail") return result;
  const all = result.chains ?? [result];
  const present = new Set(all.map((c) => c.chain).filter((c) => c !== undefined));
  const orphan = opts.anchors.find((a) => !present.has(a.chain));
  if (orphan === undefined) return result;
  const unnamed = all.filter((c) => c.chain === undefined && c.lastEntry !== undefined);
  const firstError: VerifyFailure =
    unnamed.length === 1
      ? {
          file: unnamed[0]!.lastEntry!.file,
          line: unnamed[0]!.lastEntry!.line,
          seq: orphan.seq,
          reason: "anchor_missing",
          message: `this chain ends at seq ${unnamed[0]!.lastSeq} with no checkpoint, while a checkpoint of chain ${orphan.chain} was anchored elsewhere at seq ${orphan.seq}: if these files are that chain, entries were removed from its end (its checkpoints included); otherwise that chain's files are missing`,
        }
      : {
          file: "",
          line: 0,
          seq: orphan.seq,
          reason: "anchor_missing",
          message: `no chain in these files has the id ${orphan.chain} of a checkpoint anchored elsewhere (seq ${orphan.seq}): that chain's files are missing, or were replaced`,
        };
  return { ...result, ok: false, firstError };
}

function counterOf(file: string): number {
  return Number(/-(\d{6})\.jsonl$/.exec(file)?.[1] ?? 0);
}

/** Verifies one chain spread over `files`, in the order given. */
async function verifyChain(files: string[], opts: VerifyOptions): Promise<VerifyResult> {
  const v = await ChainVerifier.create(opts);
  outer: for (const file of files) {
    const name = path.basename(file);
    try {
      for await (const l of readLines(file)) {
        if (!(await v.line(name, l.line, l.text, l.terminated))) break outer;
      }
    } catch (e) {
      v.error = { file: name, line: 0, reason: "unreadable_file", message: `file could not be read (${(e as NodeJS.ErrnoException).code ?? "error"})` };
      break;
    }
  }
  v.finish();
  return v.result();
}
