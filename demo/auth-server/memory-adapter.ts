/**
 * A per-server in-memory storage adapter for oidc-provider (its adapter interface: upsert / find / consume /
 * destroy / revokeByGrantId ...). Entries expire with the model's `expiresIn`; the store is bounded.
 * Keeping one store per demo server (instead of the library's process-wide default) keeps parallel servers apart.
 */
type Payload = Record<string, unknown>;
interface Entry {
  payload: Payload;
  expiresAt: number;
}

const MAX_ENTRIES = 10_000;

/** Returns an adapter factory (a class) bound to a fresh store. */
export function createMemoryAdapter(): new (model: string) => unknown {
  const store = new Map<string, Entry>();
  const grants = new Map<string, Set<string>>();
  const live = (key: string): Entry | undefined => {
    const e = store.get(key);
    if (e && e.expiresAt <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return e;
  };
  return class MemoryAdapter {
    constructor(private readonly model: string) {}
    private key(id: string): string {
      return `${this.model}:${id}`;
    }
    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      if (store.size >= MAX_ENTRIES) {
        const oldest = store.keys().next();
        if (!oldest.done) store.delete(oldest.value);
      }
      const key = this.key(id);
      store.set(key, { payload, expiresAt: typeof expiresIn === "number" ? Date.now() + expiresIn * 1000 : Infinity });
      const grantId = payload["grantId"];
      if (typeof grantId === "string") {
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
      store.delete(this.key(id));
    }
    async revokeByGrantId(grantId: string): Promise<void> {
      for (const k of grants.get(grantId) ?? []) store.delete(k);
      grants.delete(grantId);
    }
  };
}
