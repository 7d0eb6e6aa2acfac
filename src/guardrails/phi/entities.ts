/** PHI entity types, and the candidate span the detector's passes collect. */
import type { RedactedEntity } from "../types.js";

/** Entity types the detector emits (the replacement is `[TYPE]`). */
export const PHI_ENTITY_TYPES = [
  "NAME",
  "DATE",
  "AGE",
  "SSN",
  "ID",
  "ACCOUNT",
  "PHONE",
  "EMAIL",
  "URL",
  "IP",
  "ADDRESS",
  "ZIP",
  "LOCATION",
] as const;
export type PhiEntityType = (typeof PHI_ENTITY_TYPES)[number];

/** A detected entity: type and offsets (UTF-16) into the input, plus its replacement. Never the value. */
export interface PhiEntity extends RedactedEntity {
  type: PhiEntityType;
  replacement: string;
}

/** Index of each entity type in {@link PHI_ENTITY_TYPES} (how {@link FoundList} stores a type). */
export const TYPE_INDEX = Object.fromEntries(PHI_ENTITY_TYPES.map((t, k) => [t, k])) as Record<PhiEntityType, number>;

/**
 * The candidate spans the detector's passes find (merged into {@link PhiEntity} by the detector), in the order found:
 * span k is `[s[k], e[k])` (UTF-16 offsets) of type `PHI_ENTITY_TYPES[t[k]]`, for k < n. Typed arrays rather than an
 * object per span: a text of dense identifiers (a phone number every 13 characters) has tens of thousands, and
 * objects kept alive while each regex match makes garbage made the young-generation collections copy them (1 MB of
 * phone numbers: ~40-60 ms of pushes against ~8-13 ms).
 */
export class FoundList {
  n = 0;
  s: Int32Array;
  e: Int32Array;
  t: Uint8Array;
  constructor(capacity = 64) {
    this.s = new Int32Array(capacity);
    this.e = new Int32Array(capacity);
    this.t = new Uint8Array(capacity);
  }
  /** Appends the span `[s, e)` of type `type`. */
  add(s: number, e: number, type: PhiEntityType): void {
    const k = this.n;
    if (k === this.s.length) this.#grow();
    this.s[k] = s;
    this.e[k] = e;
    this.t[k] = TYPE_INDEX[type];
    this.n = k + 1;
  }
  /** The type of span k. */
  type(k: number): PhiEntityType {
    return PHI_ENTITY_TYPES[this.t[k]!]!;
  }
  #grow(): void {
    const size = this.s.length * 2;
    const s = new Int32Array(size);
    const e = new Int32Array(size);
    const t = new Uint8Array(size);
    s.set(this.s);
    e.set(this.e);
    t.set(this.t);
    this.s = s;
    this.e = e;
    this.t = t;
  }
}
