/**
 * Coverage gate for test/conformance/requirements.yml (STYLE.md habit 9): every requirement names a spec source and
 * at least one test or conformance scenario; every named test file exists and contains the named test title; no
 * requirement claims a scenario that is baselined (expected to fail); and every baseline entry has a reason.
 */
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import { readBaseline } from "./baseline.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MANIFEST = fileURLToPath(new URL("./requirements.yml", import.meta.url));
const BASELINE = fileURLToPath(new URL("./baseline.yml", import.meta.url));
const BASELINE_2026 = fileURLToPath(new URL("./baseline-2026-07-28.yml", import.meta.url));

const TestRef = z.strictObject({
  /** Path from the repo root. */
  file: z.string().regex(/^test\/[\w./-]+\.ts$/, "a .ts path under test/"),
  /** A literal part of an it()/describe() title in that file. */
  test: z.string().min(3).optional(),
});
const Requirement = z
  .strictObject({
    id: z.string().regex(/^HMCP-[A-Z]+-\d+$/, "HMCP-<AREA>-<n>"),
    source: z.array(z.string().min(3)).min(1),
    behaviour: z.string().min(10),
    tests: z.array(TestRef).default([]),
    conformance: z.array(z.string().regex(/^[a-z0-9-]+$/)).default([]),
  })
  .refine((r) => r.tests.length + r.conformance.length > 0, { message: "needs at least one test or conformance scenario" });
const Manifest = z.strictObject({ requirements: z.array(Requirement).min(1) });

const manifest = Manifest.parse(parse(readFileSync(MANIFEST, "utf8")));

describe("requirements manifest", () => {
  it("has unique ids", () => {
    const ids = manifest.requirements.map((r) => r.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it("names only test files that exist, and test titles that occur in them", () => {
    const problems: string[] = [];
    for (const r of manifest.requirements) {
      for (const ref of r.tests) {
        const path = join(ROOT, ref.file);
        if (!existsSync(path)) {
          problems.push(`${r.id}: ${ref.file} does not exist`);
          continue;
        }
        if (ref.test !== undefined && !readFileSync(path, "utf8").includes(ref.test)) {
          problems.push(`${r.id}: no test titled "${ref.test}" in ${ref.file}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("claims no conformance scenario that is baselined (expected to fail)", () => {
    const baselined = new Set(readBaseline(BASELINE).server.map((e) => e.scenario));
    const claimed = manifest.requirements.flatMap((r) => r.conformance.filter((s) => baselined.has(s)).map((s) => `${r.id}: ${s}`));
    expect(claimed).toEqual([]);
  });
});

describe("conformance baseline", () => {
  it("gives a reason for every baselined scenario", () => {
    for (const file of [BASELINE, BASELINE_2026]) {
      for (const entry of readBaseline(file).server) expect(entry.reason.length, entry.scenario).toBeGreaterThan(20);
    }
  });
});
