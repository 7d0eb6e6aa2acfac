// The "no PHI in any log" scanner (issue 4): looks for the identifiers of the Synthea patients the
// tests and the demo use in every file under a folder of logs. Reports where, never the value.
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { demoSynthea, loadSyntheaPatients, phiNeedles, sharedSynthea } from "./synthea.js";

export interface PhiHit {
  file: string;
  line: number;
  what: string;
}

/** Needles for every Synthea patient in the shared data set and the demo sample. */
export function allNeedles(): { label: string; re: RegExp }[] {
  return phiNeedles([...loadSyntheaPatients(sharedSynthea), ...loadSyntheaPatients(demoSynthea)]);
}

/** Every regular file under `dir` (recursively); a missing dir has none. */
export async function filesUnder(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const n of names) {
    const p = path.join(dir, n);
    const s = await stat(p).catch(() => undefined);
    if (s?.isDirectory()) out.push(...(await filesUnder(p)));
    else if (s?.isFile()) out.push(p);
  }
  return out;
}

/** Log-like files: JSON Lines, .log and .txt (not databases or keys). */
export function isLogFile(file: string): boolean {
  return /\.(jsonl|log|txt)$/.test(file);
}

/** Scans `files` line by line for `needles`; returns every hit (file, 1-based line, which needle). */
export async function scanForPhi(files: string[], needles = allNeedles()): Promise<PhiHit[]> {
  const hits: PhiHit[] = [];
  for (const file of files) {
    const text = await readFile(file, "utf8").catch(() => "");
    const lines = text.split("\n");
    lines.forEach((l, i) => {
      for (const n of needles) if (n.re.test(l)) hits.push({ file, line: i + 1, what: n.label });
    });
  }
  return hits;
}
