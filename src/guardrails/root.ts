/**
 * Locates the package's guardrails/ data folder at run time: walks up from this module to the
 * directory holding package.json (works from src/ under tsx/vitest and from dist/src/ after a build).
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

/**
 * @returns absolute path of the package's `guardrails/` folder
 * @throws Error when no package.json is found above this module
 */
export function guardrailsDir(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "package.json")) && existsSync(path.join(dir, "guardrails"))) {
      cached = path.join(dir, "guardrails");
      return cached;
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error("hmcp: cannot find the package's guardrails/ folder above " + fileURLToPath(import.meta.url));
    dir = up;
  }
}
