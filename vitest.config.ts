import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Every log and audit file the suite writes goes under one folder, which the PHI scan checks after the run.
const logDir = (process.env["HMCP_LOG_DIR"] ??= mkdtempSync(path.join(tmpdir(), "hmcp-test-logs-")));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^hmcp\/console$/, replacement: fileURLToPath(new URL("./src/console/index.ts", import.meta.url)) },
      { find: /^hmcp\/dev-auth$/, replacement: fileURLToPath(new URL("./src/dev-auth/index.ts", import.meta.url)) },
      { find: /^hmcp$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
    ],
  },
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    env: { HMCP_LOG_DIR: logDir },
    globalSetup: ["test/unit/audit/log-dir.global.ts"],
  },
});
