/**
 * The HMCP package as the benchmarks load it: the compiled build (`dist/`, `npm run build`), which is what an embedder
 * deploys, not the TypeScript sources through tsx. tsx's transform (esbuild `keepNames`: a `defineProperty` call for
 * every closure it creates) costs HMCP's own per-request code 15–25 % more CPU and the SDK nothing (it ships compiled
 * JavaScript), so measuring the sources would charge HMCP for the benchmark's tooling.
 *
 * The runner and the profiler call {@link ensureBuilt} once before they start servers; the server processes and the
 * component scripts call {@link loadHmcp}, which refuses a build older than the sources.
 *
 * `HMCP_DIST` (an absolute path to another build's `dist/src/index.js`, e.g. of an older commit checked out in a
 * second worktree) makes {@link loadHmcp} import that build instead, unchecked: for `bench/ab.ts --env HMCP_DIST`,
 * which compares two commits with the same bench servers.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type * as Hmcp from "../../src/index.js";
import { REPO_ROOT } from "./fixtures.js";

/** The built package entry point. */
export const DIST_ENTRY = path.join(REPO_ROOT, "dist/src/index.js");

/** Newest modification time (ms) of a file under `dir`. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Whether dist/ is missing or older than a file under src/. */
export function buildIsStale(): boolean {
  let built: number;
  try {
    built = statSync(DIST_ENTRY).mtimeMs;
  } catch {
    return true;
  }
  return newest(path.join(REPO_ROOT, "src")) > built;
}

/** Runs the package's own build (`npm run build`, ~6 s) when dist/ is missing or stale. @throws Error when it fails */
export function ensureBuilt(): void {
  if (!buildIsStale()) return;
  console.error("bench: building the package (dist/ is missing or older than src/) ...");
  // stdout to stderr: the component scripts print their JSON result on stdout
  execFileSync("npm", ["run", "--silent", "build"], { cwd: REPO_ROOT, stdio: ["ignore", process.stderr, "inherit"] });
}

/**
 * Imports the built package. @throws Error when dist/ is missing or older than src/ (call {@link ensureBuilt} first,
 * or run `npm run build`)
 */
export async function loadHmcp(): Promise<typeof Hmcp> {
  const other = process.env["HMCP_DIST"];
  if (other) {
    if (!path.isAbsolute(other)) throw new Error("bench: HMCP_DIST must be an absolute path to a build's dist/src/index.js");
    return (await import(pathToFileURL(other).href)) as typeof Hmcp;
  }
  if (buildIsStale()) throw new Error("bench: dist/ is missing or older than src/; run `npm run build` (the bench runner does it for you)");
  return (await import(pathToFileURL(DIST_ENTRY).href)) as typeof Hmcp;
}
