// vitest globalSetup: after the whole run, scans every log the suite wrote under HMCP_LOG_DIR for the
// names, SSNs and MRNs of the Synthea patients used, and fails the run on any hit (issue 4).
import { rm } from "node:fs/promises";
import { filesUnder, isLogFile, scanForPhi } from "./phi-scan.js";

export default function setup(): () => Promise<void> {
  const dir = process.env["HMCP_LOG_DIR"];
  return async () => {
    if (!dir) return;
    const files = (await filesUnder(dir)).filter(isLogFile);
    const hits = await scanForPhi(files);
    if (hits.length > 0) {
      const where = hits.slice(0, 20).map((h) => `  ${h.file}:${h.line}: ${h.what}`).join("\n");
      // A throw in a global teardown is reported but does not change vitest's exit code: set it.
      process.exitCode = 1;
      throw new Error(`PHI found in ${hits.length} log line(s) written by the test suite (kept in ${dir}):\n${where}`);
    }
    if (process.env["HMCP_KEEP_LOGS"] !== "1") await rm(dir, { recursive: true, force: true });
  };
}
