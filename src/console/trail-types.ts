/**
 * What the compliance console (`hmcp audit serve`, issue 26) reads from an audit trail: the shapes of the trail view
 * that `openAuditTrail` (./trail.ts) returns. The console's pages render these; they never hold message content (an
 * audit record has none: identifiers, codes and digests only).
 */
import type { AuditOutcome, AuditRecordInput } from "../audit/record.js";
import type { VerifyFailureReason, VerifyResult } from "../audit/verify.js";

/** Filters of the activity timeline; every given filter must match (AND). Times are ms since the epoch. */
export interface ActivityFilter {
  /** A FHIR Patient id among the record's `patients`. */
  patient?: string;
  /** The actor: matches `actor.sub` or `actor.fhirUser` exactly. */
  actor?: string;
  /** The OAuth client: `actor.clientId`, exact. */
  client?: string;
  /** The agent (server name, `record.agent`), exact. */
  agent?: string;
  /** MCP method (or "<HTTP method> <path>" for type "http"), exact. */
  method?: string;
  outcome?: AuditOutcome;
  /** Stable reason code, exact (e.g. "insufficient_scope"). */
  reason?: string;
  /** Inclusive lower bound on the record's time, ms since the epoch. */
  since?: number;
  /** Exclusive upper bound on the record's time, ms since the epoch. */
  until?: number;
}

/** One row of the activity timeline: the record's summary fields (no digests, no guardrail detail). */
export interface ActivityRow {
  id: string;
  /** The record's time as written (RFC 3339). */
  time: string;
  /** The chain (file-name prefix or table instance id) the record is in. */
  chain: string;
  /** The record's seq in its chain. */
  seq: number;
  type: AuditRecordInput["type"];
  agent: string;
  method?: string;
  /** `actor.sub`, else `actor.fhirUser`. */
  actor?: string;
  client?: string;
  patients: string[];
  outcome: AuditOutcome;
  reason?: string;
  status?: number;
}

/** A page of the activity timeline, newest first. */
export interface ActivityPage {
  rows: ActivityRow[];
  /** Records matching the filter in the whole trail. */
  total: number;
  /** 0-based offset of the first row among the matches (newest first). */
  offset: number;
}

/** A record with where it is in the trail. */
export type LocatedRecord = AuditRecordInput & { chain: string; seq: number };

/** Integrity of one chain, in words a compliance officer can read. */
export interface ChainIntegrity {
  /** Chain name: the file-name prefix (e.g. "demo", "emr-writeback") or the table's instance id. */
  name: string;
  /** Files of the chain in order, or `<table>:<instance>` for the PostgreSQL sink. */
  sources: string[];
  /** `pending` while the chain is being verified. */
  status: "pending" | "verified" | "broken";
  /** What was checked: hashes and links always; signatures only with a key; anchors only when given. */
  checked: { links: boolean; signatures: boolean; anchors: boolean };
  /** Audit records verified (up to the break). */
  records: number;
  /**
   * Where and why the chain breaks, when it does: `source` is the file's base name or `<table>:<instance>` (`line` is
   * then the seq), or "" for a chain only anchors name (`anchor_missing`: none of the trail's chains has its id).
   * A chain that could not be read at all (a file removed, the database gone) reads `unreadable_file`, line 0.
   */
  failure?: { source: string; line: number; seq?: number; reason: VerifyFailureReason; message: string };
  /**
   * The last checkpoint seen: its seq, time, whether its signature was checked and verified (with a key, the chain
   * verified through it), and its age in seconds at the time of the check (while `pending`: `signed` false, age at open).
   */
  lastCheckpoint?: { seq: number; time: string; signed: boolean; ageSeconds: number };
  /** The verifier's own result, for the JSON view. */
  result?: VerifyResult;
}

/** Counts for the console's pictures, over the records matching a filter. */
export interface TrailStats {
  /** Records per hour (UTC, "YYYY-MM-DDTHH:00Z") by outcome, in time order; hours with no record are left out. */
  perHour: Array<{ hour: string } & Record<AuditOutcome, number>>;
  /** Refused records (outcome denied, blocked or failed) by reason code ("(none)" when absent), most first. */
  refusalsByReason: Array<{ reason: string; count: number }>;
  /** Guardrail decisions with action "block", by guardrail name, most first. */
  guardrailBlocks: Array<{ guardrail: string; count: number }>;
  /** With a patient filter: the actors (sub, fhirUser or client id) that touched the patient, most first (at most 10). */
  topActors: Array<{ actor: string; count: number }>;
}

/** A read-only view of one trail (files or a PostgreSQL table), indexed once when opened. */
export interface AuditTrailView {
  /** Audit records indexed (checkpoints excluded). */
  readonly size: number;
  /** Lines (or rows) skipped when indexing: not JSON, not a chain entry, not an audit record, or a torn last line. */
  readonly skipped: number;
  /** Bytes held by the index's typed arrays (the interned strings are not counted). */
  readonly indexBytes: number;
  /** Integrity per chain, as known now (`pending` until {@link AuditTrailView.verified} resolves). */
  integrity(): ChainIntegrity[];
  /** Resolves when every chain has been verified (never rejects: a failure is a `broken` chain). */
  readonly verified: Promise<void>;
  /**
   * A page of matching records, newest first (by time, ties in reverse trail order); only the page's rows are read back.
   * Rejects with RangeError when `offset` is not an integer >= 0 or `limit` not an integer from 1 to 500, TypeError for
   * an unknown filter member or a `since`/`until` that is not a finite number.
   */
  activity(filter: ActivityFilter, page: { offset: number; limit: number }): Promise<ActivityPage>;
  /** One record by its id, read back from the trail; undefined when absent. */
  record(id: string): Promise<LocatedRecord | undefined>;
  /** Counts for the pictures over the records matching `filter` (from the index alone). Throws TypeError as `activity`. */
  stats(filter: ActivityFilter): TrailStats;
  /**
   * Every record matching `filter`, oldest first (by time, ties in trail order), read back 500 at a time (for the
   * accounting of disclosures and its downloads). Throws TypeError as `activity`.
   */
  records(filter: ActivityFilter): AsyncIterable<LocatedRecord>;
  /** Distinct values seen, for the filter form's choices (sorted). */
  facets(): { agents: string[]; methods: string[]; reasons: string[]; clients: string[] };
  /**
   * Releases the files the view holds (a database client is the caller's, left open) and stops the background
   * verification after the chain in progress (chains not verified yet stay `pending`). `activity`, `record` and
   * `records` then reject; `stats`, `facets` and `integrity` still answer from memory.
   */
  close(): Promise<void>;
}
