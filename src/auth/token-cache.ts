/**
 * A bounded LRU map from access-token string to its verified result (not exported from the package).
 */
import type { VerifiedToken } from "./types.js";

/** One cached verification. */
export interface CachedToken {
  verified: VerifiedToken;
  /** Until when the verification holds, seconds since the epoch: the token's `exp`, or `iat + maxTokenAgeSec` if sooner. */
  exp: number;
  kid: string | undefined;
  /** Identifies the key that verified the token; the entry is stale when the key set no longer yields this tag. */
  keyTag: string;
}

/** LRU on a Map's insertion order; `maxEntries` >= 1. */
export class TokenCache {
  private readonly map = new Map<string, CachedToken>();
  constructor(private readonly maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new TypeError("cache.maxEntries must be a positive integer");
  }
  get size(): number {
    return this.map.size;
  }
  get(token: string): CachedToken | undefined {
    const v = this.map.get(token);
    if (v !== undefined) {
      this.map.delete(token);
      this.map.set(token, v);
    }
    return v;
  }
  set(token: string, v: CachedToken): void {
    this.map.delete(token);
    this.map.set(token, v);
    if (this.map.size > this.maxEntries) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
  }
  delete(token: string): void {
    this.map.delete(token);
  }
}
