#!/usr/bin/env node
// The `hmcp` command. Runs the compiled CLI (built by `npm run build`, which `npm ci` runs via `prepare`).
await import("../dist/src/cli/run.js");
