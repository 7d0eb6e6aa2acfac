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

/** A candidate span found by one of the passes (merged into {@link PhiEntity} by the detector). */
export interface Found {
  s: number;
  e: number;
  type: PhiEntityType;
}
