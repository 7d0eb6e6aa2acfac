/**
 * The two kinds of trail the console reads (./trail.ts): audit files (one chain per file-name prefix, as
 * `verifyAuditFiles` groups them) and the PostgreSQL sink's table (one chain per instance id). Each is indexed in one
 * streaming pass into a {@link TrailIndex}, reads records back by record number, and verifies one chain with the
 * existing verifier.
 */
import { open, stat, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { expandAuditPaths } from "../audit/query.js";
import { listAuditChains, verifyAuditTable, type AuditQueryable } from "../audit/postgres-sink.js";
import { verifyAuditFiles, type VerifyOptions, type VerifyResult } from "../audit/verify.js";
import { scanLines } from "./line-scan.js";
import type { TrailIndex } from "./trail-index.js";

/** How far the index on open has come: records indexed, and for files the bytes read of all. */
export interface TrailProgress {
  records: number;
  bytes?: number;
  totalBytes?: number;
}

/** One chain of the trail as the index pass found it. */
export interface ChainSource {
  /** File-name prefix ("(other)" for files not named by a sink) or the table's instance id. */
  name: string;
  /** File paths in chain order, or `<table>:<instance>`. */
  sources: string[];
  /** The chain id the checkpoints name (for a table: the instance id); undefined when no checkpoint was seen. */
  id?: string;
  /** The last checkpoint entry seen. */
  lastCheckpoint?: { seq: number; time: string };
}

/** A record read back: its entry's seq and its record object. */
export interface ReadBack {
  seq: number;
  record: Record<string, unknown>;
}

/** A trail the view reads. */
export interface TrailSource {
  readonly chains: ChainSource[];
  /** Lines (or rows) that were not audit records or checkpoints. */
  skipped: number;
  /** The chain number of a record (from its `src` column). */
  chainOf(src: number): number;
  /** Reads back records by record number, in the order asked; undefined where the line no longer parses. */
  read(index: TrailIndex, recs: ArrayLike<number>): Promise<Array<ReadBack | undefined>>;
  /** Verifies chain `c` with the existing verifier. */
  verify(c: number, opts: VerifyOptions): Promise<VerifyResult>;
  close(): Promise<void>;
}

/** Sink file names: `<prefix>-<YYYYMMDD>-<NNNNNN>.jsonl` (as ../audit/verify.ts groups them). */
const FILE_RE = /^(.+)-\d{8}-(\d{6})\.jsonl$/;
const TABLE_RE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;
/** Rows per query of the table pass (as verifyAuditTable pages). */
const PAGE = 5000;

/** Parses one chain line and indexes it; returns false when it is neither an audit record nor a checkpoint. */
function indexLine(index: TrailIndex, chain: ChainSource, text: string, src: number, pos: number, len: number): boolean {
  let e: { seq?: unknown; record?: unknown };
  try {
    e = JSON.parse(text) as typeof e;
  } catch {
    return false;
  }
  const r = e?.record as Record<string, unknown> | undefined;
  if (typeof r !== "object" || r === null || typeof e.seq !== "number") return false;
  if (r["type"] === "checkpoint") {
    if (typeof r["chain"] === "string") chain.id = r["chain"];
    if (typeof r["time"] === "string") chain.lastCheckpoint = { seq: e.seq, time: r["time"] };
    return true;
  }
  return index.add(r, src, pos, len);
}

/**
 * Indexes audit files: directories expand to their `*.jsonl` (as `expandAuditPaths`), files are grouped into chains by
 * prefix in counter order (files not named by a sink form one chain, "(other)", in the order given).
 * @throws Error (ENOENT, ...) when a path does not exist or a file cannot be read.
 */
export async function indexFiles(paths: string[], index: TrailIndex, onProgress?: (p: TrailProgress) => void): Promise<TrailSource> {
  const files = await expandAuditPaths(paths);
  const sizes = new Map<string, number>();
  for (const f of files) sizes.set(f, (await stat(f)).size);
  const totalBytes = [...sizes.values()].reduce((a, b) => a + b, 0);
  let bytes = 0;
  const groups = new Map<string, string[]>();
  for (const f of files) {
    const name = FILE_RE.exec(path.basename(f))?.[1] ?? "";
    groups.set(name, [...(groups.get(name) ?? []), f]);
  }
  const chains: ChainSource[] = [];
  const ordered: string[] = [];
  const fileChain: number[] = [];
  for (const [name, list] of groups) {
    if (name !== "") list.sort((a, b) => counterOf(a) - counterOf(b));
    chains.push({ name: name || "(other)", sources: list });
    for (const f of list) {
      ordered.push(f);
      fileChain.push(chains.length - 1);
    }
  }
  let skipped = 0;
  for (let f = 0; f < ordered.length; f++) {
    const chain = chains[fileChain[f]!]!;
    const { torn } = await scanLines(ordered[f]!, (buf, start, end, offset) => {
      if (!indexLine(index, chain, buf.toString("utf8", start, end), f, offset, end - start)) skipped++;
    });
    if (torn) skipped++;
    bytes += sizes.get(ordered[f]!) ?? 0;
    onProgress?.({ records: index.size, bytes: Math.min(bytes, totalBytes), totalBytes });
  }
  const handles = new Map<number, Promise<FileHandle>>();
  const handle = (f: number): Promise<FileHandle> => {
    let h = handles.get(f);
    if (h === undefined) handles.set(f, (h = open(ordered[f]!, "r")));
    return h;
  };
  return {
    chains,
    skipped,
    chainOf: (src) => fileChain[src]!,
    async read(ix, recs) {
      return Promise.all(
        Array.from(recs, async (i) => {
          const len = ix.len[i]!;
          const buf = Buffer.allocUnsafe(len);
          const { bytesRead } = await (await handle(ix.src[i]!)).read(buf, 0, len, ix.pos[i]!);
          return parseEntry(buf.toString("utf8", 0, bytesRead));
        }),
      );
    },
    verify: (c, opts) => verifyAuditFiles(chains[c]!.sources, opts),
    async close() {
      const open = [...handles.values()];
      handles.clear();
      await Promise.all(open.map(async (h) => (await h.catch(() => undefined))?.close()));
    },
  };
}

/**
 * Indexes the PostgreSQL sink's table: one chain per instance id (sorted), rows in seq order, 5,000 per query.
 * @throws Error when `table` is not a valid name or a query fails.
 */
export async function indexTable(db: AuditQueryable, table: string, index: TrailIndex, onProgress?: (p: TrailProgress) => void): Promise<TrailSource> {
  if (!TABLE_RE.test(table)) throw new Error("openAuditTrail: 'table' may hold letters, digits and '_' (optionally schema.table)");
  const instances = await listAuditChains(db, table);
  const chains: ChainSource[] = instances.map((id) => ({ name: id, sources: [`${table}:${id}`], id }));
  let skipped = 0;
  for (let c = 0; c < instances.length; c++) {
    let after = -1;
    for (;;) {
      const { rows } = await db.query(`SELECT seq, line FROM ${table} WHERE instance_id = $1 AND seq > $2 ORDER BY seq LIMIT ${PAGE}`, [instances[c], after]);
      for (const r of rows as Array<{ seq: string | number; line: string }>) {
        after = Number(r.seq);
        if (!indexLine(index, chains[c]!, r.line, c, after, 0)) skipped++;
      }
      onProgress?.({ records: index.size });
      if (rows.length < PAGE) break;
    }
    // the instance id is the chain id verifyAuditTable holds the checkpoints to
    chains[c]!.id = instances[c]!;
  }
  return {
    chains,
    skipped,
    chainOf: (src) => src,
    async read(ix, recs) {
      const bySrc = new Map<number, number[]>();
      for (const i of Array.from(recs)) bySrc.set(ix.src[i]!, [...(bySrc.get(ix.src[i]!) ?? []), ix.pos[i]!]);
      const found = new Map<string, ReadBack | undefined>();
      for (const [c, seqs] of bySrc) {
        const { rows } = await db.query(`SELECT seq, line FROM ${table} WHERE instance_id = $1 AND seq = ANY($2::bigint[])`, [instances[c], seqs]);
        for (const r of rows as Array<{ seq: string | number; line: string }>) found.set(`${c}:${Number(r.seq)}`, parseEntry(r.line));
      }
      return Array.from(recs, (i) => found.get(`${ix.src[i]!}:${ix.pos[i]!}`));
    },
    verify: (c, opts) => verifyAuditTable(db, { ...opts, instanceId: instances[c]!, table }),
    async close() {
      // the database client is the caller's
    },
  };
}

function parseEntry(text: string): ReadBack | undefined {
  try {
    const e = JSON.parse(text) as { seq?: unknown; record?: unknown };
    if (typeof e.seq !== "number" || typeof e.record !== "object" || e.record === null) return undefined;
    return { seq: e.seq, record: e.record as Record<string, unknown> };
  } catch {
    return undefined;
  }
}

function counterOf(file: string): number {
  return Number(FILE_RE.exec(path.basename(file))?.[2] ?? 0);
}
