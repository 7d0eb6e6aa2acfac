/**
 * A per-server in-memory storage adapter for oidc-provider (its adapter interface: upsert / find / consume /
 * destroy / revokeByGrantId ...). Entries expire with the model's `expiresIn`; the store is bounded.
 * Keeping one store per development authorization server (instead of the library's process-wide default) keeps parallel servers apart.
 */
type Payload = Record<string, unknown>;
interface Entry {
  payload: Payload;
  expiresAt: number;
  grantId?: string;
}

/** Default bound on stored entries (all models together). */
export const DEFAULT_MAX_ENTRIES = 10_000;

/** Options of {@link createMemoryAdapter}. */
export interface MemoryAdapterOptions {
  /** Most entries the store holds at once, all models together. Default 10,000. */
  maxEntries?: number;
}

/** Thrown by `upsert` when the store is full of unexpired entries; oidc-provider answers 500 server_error. */
export class MemoryStoreFullError extends Error {
  constructor(model: string, maxEntries: number) {
    super(`development authorization server store is full (${maxEntries} unexpired entries); refusing to store ${model}`);
    this.name = "MemoryStoreFullError";
  }
}

/**
 * Returns an adapter factory (a class) bound to a fresh store.
 * @throws RangeError when `maxEntries` is not a positive integer
 */
export function createMemoryAdapter(options: MemoryAdapterOptions = {}): new (model: string) => unknown {
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
  if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError("createMemoryAdapter: maxEntries must be a positive integer");
  const store = new Map<string, Entry>();
  const grants = new Map<string, Set<string>>();
  const drop = (key: string): void => {
    const e = store.get(key);
    if (!e) return;
    store.delete(key);
    if (e.grantId === undefined) return;
    const set = grants.get(e.grantId);
    set?.delete(key);
    if (set?.size === 0) grants.delete(e.grantId);
  };
  const live = (key: string): Entry | undefined => {
    const e = store.get(key);
    if (e && e.expiresAt <= Date.now()) {
      drop(key);
      return undefined;
    }
    return e;
  };
  const sweepExpired = (): void => {
    const now = Date.now();
    for (const [k, e] of store) if (e.expiresAt <= now) drop(k);
  };
  return class MemoryAdapter {
    constructor(private readonly model: string) {}
    private key(id: string): string {
      return `${this.model}:${id}`;
    }
    /** @throws MemoryStoreFullError when a new entry would exceed the bound and no stored entry has expired */
    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      const key = this.key(id);
      if (!store.has(key) && store.size >= maxEntries) {
        // Only expired entries are ever evicted. An unexpired entry is still in force: dropping a ReplayDetection
        // entry (a client assertion's jti) would let that assertion be replayed, so a flood of fresh requests from
        // any client could re-open every captured assertion. When the store is full of live entries the write is
        // refused instead (the adapter contract lets upsert reject); oidc-provider then answers with an error and
        // issues no token. Fail closed, memory stays bounded, and the refusal lasts at most as long as the live
        // entries (client assertions may live at most 5 minutes, see index.ts).
        sweepExpired();
        if (store.size >= maxEntries) throw new MemoryStoreFullError(this.model, maxEntries);
      }
      drop(key);
      const grantId = typeof payload["grantId"] === "string" ? payload["grantId"] : undefined;
      const expiresAt = typeof expiresIn === "number" ? Date.now() + expiresIn * 1000 : Infinity;
      store.set(key, { payload, expiresAt, ...(grantId !== undefined && { grantId }) });
      if (grantId !== undefined) {
        const set = grants.get(grantId) ?? new Set<string>();
        set.add(key);
        grants.set(grantId, set);
      }
    }
    async find(id: string): Promise<Payload | undefined> {
      return live(this.key(id))?.payload;
    }
    async findByUserCode(userCode: string): Promise<Payload | undefined> {
      for (const [k, e] of store) if (k.startsWith(`${this.model}:`) && e.payload["userCode"] === userCode) return live(k)?.payload;
      return undefined;
    }
    async findByUid(uid: string): Promise<Payload | undefined> {
      for (const [k, e] of store) if (k.startsWith(`${this.model}:`) && e.payload["uid"] === uid) return live(k)?.payload;
      return undefined;
    }
    async consume(id: string): Promise<void> {
      const e = live(this.key(id));
      if (e) e.payload["consumed"] = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      drop(this.key(id));
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      for (const k of [...(grants.get(grantId) ?? [])]) drop(k);
      grants.delete(grantId);
    }
  };
}
