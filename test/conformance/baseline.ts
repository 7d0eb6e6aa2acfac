/**
 * Reads test/conformance/baseline.yml: the official suite's expected-failures file (`server:` scenario names), plus
 * `reasons:`, which the suite ignores and this project requires, one per baselined scenario.
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";

/** One baselined scenario. */
export interface BaselineEntry {
  scenario: string;
  reason: string;
}

/** The parsed baseline. */
export interface Baseline {
  server: BaselineEntry[];
}

/**
 * Parses and checks the baseline: every `server` entry is a scenario name with a non-empty `reasons` entry, no
 * scenario is listed twice, and no reason names a scenario that is not baselined.
 * @throws Error naming the first problem.
 */
export function readBaseline(path: string): Baseline {
  const doc = parse(readFileSync(path, "utf8")) as unknown;
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new Error(`${path}: expected a mapping with 'server' and 'reasons'`);
  const { server = [], reasons = {}, ...rest } = doc as { server?: unknown; reasons?: unknown };
  const unknownKeys = Object.keys(rest).filter((k) => k !== "client");
  if (unknownKeys.length > 0) throw new Error(`${path}: unknown key '${unknownKeys[0]}'`);
  if (!Array.isArray(server) || !server.every((s) => typeof s === "string")) throw new Error(`${path}: 'server' must be a list of scenario names`);
  if (reasons === null || typeof reasons !== "object" || Array.isArray(reasons)) throw new Error(`${path}: 'reasons' must map scenario names to reasons`);
  const reasonOf = reasons as Record<string, unknown>;
  const seen = new Set<string>();
  const entries: BaselineEntry[] = [];
  for (const scenario of server as string[]) {
    if (seen.has(scenario)) throw new Error(`${path}: scenario '${scenario}' is listed twice`);
    seen.add(scenario);
    const reason = reasonOf[scenario];
    if (typeof reason !== "string" || reason.trim() === "") throw new Error(`${path}: scenario '${scenario}' has no reason`);
    entries.push({ scenario, reason: reason.trim() });
  }
  const orphan = Object.keys(reasonOf).find((s) => !seen.has(s));
  if (orphan !== undefined) throw new Error(`${path}: reason given for '${orphan}', which is not in 'server'`);
  return { server: entries };
}
