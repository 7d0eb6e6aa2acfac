/**
 * The demo EMR store: FHIR resources in Postgres (embedded PGlite by default, PostgreSQL via DATABASE_URL).
 *
 * Guarantees:
 * - durable on acknowledgement: {@link EmrStore.importResources} reports a chunk only after the chunk's
 *   transaction committed. Tested against a SIGKILL of the agent process mid-import (nothing acknowledged is
 *   lost, nothing half-written is visible). Power-loss durability of the embedded back end depends on PGlite's
 *   Node filesystem layer issuing fsync, which is not verified here: use PostgreSQL (DATABASE_URL) where that matters;
 * - idempotent: every row carries its source identity (`source_key`: the sender's bundle entry `fullUrl`,
 *   else "Type/id", else a content hash) under a UNIQUE constraint, and its stored id is derived from that
 *   identity, so a retried write of the same resource never creates a second row;
 * - references between resources are rewritten to the stored ids ("Type/id") when the target is in the same
 *   write or already stored for the same patient; other references (e.g. to an Encounter the EMR does not hold)
 *   are kept as sent.
 * Not guaranteed: updates. A resource whose source identity is already stored with different content is
 * refused (`version_conflict`), not overwritten.
 */
import { createHash } from "node:crypto";
import { PostgresTaskStore } from "hmcp";
import { type ClinicalType, type FhirResource, mapReferences, patientElement } from "../fhir/resource.js";
import { openSql, type Query, type SqlClient, type StoreLocation } from "./sql.js";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS emr_resource (
  id            text PRIMARY KEY,
  resource_type text NOT NULL,
  patient_id    text NOT NULL,
  source_key    text NOT NULL UNIQUE,
  source_hash   text NOT NULL,
  resource      jsonb NOT NULL,
  written_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS emr_resource_patient ON emr_resource (patient_id, resource_type);
`;

/** JSON with object keys sorted (stable input to hashing). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

const sha256 = (s: string): string => createHash("sha256").update(s).digest("hex");

/** The stored id for a source identity: an RFC 9562 version-8 (custom) UUID from SHA-256 of the key. */
export function storedIdFor(sourceKey: string): string {
  const h = sha256(`hmcp-demo-emr\u0000${sourceKey}`);
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** One resource to import, as the sender identified it. */
export interface ImportItem {
  /** Source identity (see module doc). */
  sourceKey: string;
  resourceType: ClinicalType;
  /** The resource as received, with no patient reference (the store adds it). */
  resource: FhirResource;
}

export type ImportStatus =
  | { status: "created" | "existing"; id: string }
  | { status: "refused"; reason: "source_patient_conflict" | "version_conflict"; message: string };

export interface StoredRow {
  id: string;
  resourceType: string;
  patientId: string;
  sourceKey: string;
  resource: FhirResource;
}

/** The source identity of a sent entry: `fullUrl`, else "Type/id", else "sha256:<content hash>". */
export function sourceKeyOf(entry: { fullUrl?: string | undefined; resource: FhirResource }): string {
  if (entry.fullUrl) return entry.fullUrl;
  if (entry.resource.id) return `${entry.resource.resourceType}/${entry.resource.id}`;
  return `sha256:${sha256(canonicalJson(entry.resource))}`;
}

export class EmrStore {
  private constructor(private readonly sql: SqlClient) {}

  /** Opens (and migrates) the store. */
  static async open(location: StoreLocation): Promise<EmrStore> {
    const sql = await openSql(location);
    for (const stmt of SCHEMA.split(";").map((s) => s.trim()).filter(Boolean)) await sql.query(stmt);
    return new EmrStore(sql);
  }

  get location(): StoreLocation {
    return this.sql.location;
  }

  close(): Promise<void> {
    return this.sql.close();
  }

  /**
   * The EMR-writeback agent's MCP tasks, in this store's own database (table `hmcp_tasks`, created if missing): the
   * same data directory (PGlite) or PostgreSQL database, so a task (a write waiting for the clinician's approval) lives
   * as long as the EMR it writes to, and survives a restart of the agent. Opened once per store.
   */
  tasks(): Promise<PostgresTaskStore> {
    this.taskStore ??= PostgresTaskStore.open({ db: { query: async (text, params) => ({ rows: await this.sql.query(text, params) }) } });
    return this.taskStore;
  }
  private taskStore: Promise<PostgresTaskStore> | undefined;

  /**
   * Writes `items` for `patientId` in chunks of `chunkSize` (default 50), one transaction per chunk,
   * calling `onChunk(done, total)` after each commit. Returns one status per item, in order.
   */
  async importResources(
    patientId: string,
    items: ImportItem[],
    options: { chunkSize?: number; onChunk?: (done: number, total: number) => Promise<void> | void; signal?: AbortSignal } = {},
  ): Promise<ImportStatus[]> {
    const chunkSize = options.chunkSize ?? 50;
    // Targets inside this write, keyed by every form a sender may use to point at them.
    const inBatch = new Map<string, string>();
    for (const it of items) {
      const ref = `${it.resourceType}/${storedIdFor(it.sourceKey)}`;
      inBatch.set(it.sourceKey, ref);
      if (it.resource.id) inBatch.set(`${it.resourceType}/${it.resource.id}`, ref);
    }
    const outside = new Set<string>();
    for (const it of items)
      mapReferences(it.resource, (r) => {
        if (!inBatch.has(r)) outside.add(r);
        return undefined;
      });
    const known = await this.resolveSources([...outside], patientId);
    const results: ImportStatus[] = [];
    for (let i = 0; i < items.length; i += chunkSize) {
      options.signal?.throwIfAborted();
      const chunk = items.slice(i, i + chunkSize);
      const rows = chunk.map((it) => {
        const id = storedIdFor(it.sourceKey);
        const rewritten = mapReferences(it.resource, (r) => inBatch.get(r) ?? known.get(r));
        const resource: FhirResource = { ...rewritten, resourceType: it.resourceType, id, [patientElement(it.resourceType)]: { reference: `Patient/${patientId}` } };
        return { id, it, hash: sha256(canonicalJson(it.resource)), resource };
      });
      const statuses = await this.sql.transaction((q) => insertChunk(q, patientId, rows));
      results.push(...statuses);
      await options.onChunk?.(Math.min(i + chunkSize, items.length), items.length);
    }
    return results;
  }

  /** Maps source keys (and "Type/sourceId" forms) already stored for `patientId` to their stored "Type/id". */
  private async resolveSources(refs: string[], patientId: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (refs.length === 0) return out;
    const rows = await this.sql.query<{ id: string; resource_type: string; source_key: string }>(
      "SELECT id, resource_type, source_key FROM emr_resource WHERE patient_id = $1 AND source_key = ANY($2::text[])",
      [patientId, refs],
    );
    for (const r of rows) out.set(r.source_key, `${r.resource_type}/${r.id}`);
    return out;
  }

  /** Reads one stored resource, or undefined. */
  async read(resourceType: string, id: string): Promise<StoredRow | undefined> {
    const rows = await this.sql.query<RowShape>("SELECT id, resource_type, patient_id, source_key, resource FROM emr_resource WHERE resource_type = $1 AND id = $2", [resourceType, id]);
    return rows[0] ? toRow(rows[0]) : undefined;
  }

  /** Every stored row whose source key is in `sourceKeys`. */
  async findBySourceKeys(sourceKeys: string[]): Promise<StoredRow[]> {
    if (sourceKeys.length === 0) return [];
    const rows = await this.sql.query<RowShape>("SELECT id, resource_type, patient_id, source_key, resource FROM emr_resource WHERE source_key = ANY($1::text[])", [sourceKeys]);
    return rows.map(toRow);
  }

  /** Rows stored for one patient, optionally one type (ordered by id for determinism). */
  async listByPatient(patientId: string, resourceType?: string): Promise<StoredRow[]> {
    const rows = resourceType
      ? await this.sql.query<RowShape>("SELECT id, resource_type, patient_id, source_key, resource FROM emr_resource WHERE patient_id = $1 AND resource_type = $2 ORDER BY id", [patientId, resourceType])
      : await this.sql.query<RowShape>("SELECT id, resource_type, patient_id, source_key, resource FROM emr_resource WHERE patient_id = $1 ORDER BY id", [patientId]);
    return rows.map(toRow);
  }

  /** At most `limit` stored rows, newest ids last (ordered by type and id, for a stable listing). */
  async listSome(limit: number): Promise<StoredRow[]> {
    const rows = await this.sql.query<RowShape>("SELECT id, resource_type, patient_id, source_key, resource FROM emr_resource ORDER BY resource_type, id LIMIT $1", [limit]);
    return rows.map(toRow);
  }

  /** Total number of stored rows. */
  async count(): Promise<number> {
    const rows = await this.sql.query<{ n: number | string }>("SELECT count(*)::int AS n FROM emr_resource");
    return Number(rows[0]?.n ?? 0);
  }
}

interface RowShape {
  id: string;
  resource_type: string;
  patient_id: string;
  source_key: string;
  resource: FhirResource | string;
}
const toRow = (r: RowShape): StoredRow => ({
  id: r.id,
  resourceType: r.resource_type,
  patientId: r.patient_id,
  sourceKey: r.source_key,
  resource: typeof r.resource === "string" ? (JSON.parse(r.resource) as FhirResource) : r.resource,
});

/** One multi-row INSERT for the chunk; rows that already existed are then classified against what is stored. */
async function insertChunk(
  q: Query,
  patientId: string,
  rows: Array<{ id: string; it: ImportItem; hash: string; resource: FhirResource }>,
): Promise<ImportStatus[]> {
  const inserted = await q<{ id: string }>(
    `INSERT INTO emr_resource (id, resource_type, patient_id, source_key, source_hash, resource)
     SELECT u.id, u.resource_type, $3, u.source_key, u.source_hash, u.resource::jsonb
     FROM unnest($1::text[], $2::text[], $4::text[], $5::text[], $6::text[]) AS u(id, resource_type, source_key, source_hash, resource)
     ON CONFLICT DO NOTHING RETURNING id`,
    [
      rows.map((r) => r.id),
      rows.map((r) => r.it.resourceType),
      patientId,
      rows.map((r) => r.it.sourceKey),
      rows.map((r) => r.hash),
      rows.map((r) => JSON.stringify(r.resource)),
    ],
  );
  const created = new Set(inserted.map((r) => r.id));
  const others = rows.filter((r) => !created.has(r.id));
  const existing = new Map<string, { id: string; patient_id: string; source_hash: string }>();
  if (others.length > 0) {
    const found = await q<{ id: string; patient_id: string; source_hash: string; source_key: string }>(
      "SELECT id, patient_id, source_hash, source_key FROM emr_resource WHERE source_key = ANY($1::text[])",
      [others.map((r) => r.it.sourceKey)],
    );
    for (const f of found) existing.set(f.source_key, f);
  }
  return rows.map((row): ImportStatus => {
    if (created.has(row.id)) return { status: "created", id: row.id };
    const e = existing.get(row.it.sourceKey);
    if (!e) throw new Error("EMR store: insert conflicted but no existing row was found");
    if (e.patient_id !== patientId)
      return { status: "refused", reason: "source_patient_conflict", message: "this source resource is already stored for a different patient" };
    if (e.source_hash !== row.hash)
      return { status: "refused", reason: "version_conflict", message: "a different version of this source resource is already stored; updates are not supported" };
    return { status: "existing", id: e.id };
  });
}
