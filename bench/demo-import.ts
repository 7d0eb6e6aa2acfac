/**
 * `npx tsx bench/demo-import.ts [--quick] [--data <dir>] [--transport http|stdio]`
 *
 * Resources written per second by the demo's `--all` run: every clinical resource of every patient, through the
 * whole HMCP path (OAuth bearer check, guardrails on both sides, elicitation approval, server → client sampling for
 * the summary, audit record, PGlite write with fsync per transaction). Default data: the 30 development bundles in
 * ../shared/data/synthea (4,918 clinical resources); `--quick`: the 6 shipped bundles.
 *
 * Prints one JSON object: `resourcesPerSec` is clinical resources written / wall time of the import phase (first
 * patient started → last patient done); `wallSec` includes start-up (PGlite data directory, authorization server,
 * agents) and the defences, audit verification and counting. A second run on the same store measures the
 * idempotent replay (every write already present). Not a test: figures only.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { runDemo, SHIPPED_DATA_DIR } from "../demo/run-demo.js";

const argv = process.argv.slice(2);
const opt = (n: string) => (argv.indexOf(`--${n}`) >= 0 ? argv[argv.indexOf(`--${n}`) + 1] : undefined);
const quick = argv.includes("--quick");
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dataDir = opt("data") ?? (quick ? SHIPPED_DATA_DIR : path.resolve(repoRoot, "../shared/data/synthea/bundles"));
const transport = (opt("transport") ?? "http") as "http" | "stdio";

async function once(store: string, audit: string) {
  let first = 0;
  let last = 0;
  const t0 = performance.now();
  const { report, ok } = await runDemo({
    dataDir,
    store: { dataDir: store },
    auditRoot: audit,
    all: true,
    transport,
    out: null,
    onEvent: (e) => {
      if (e.type === "patient-start" && first === 0) first = performance.now();
      if (e.type === "patient-done") last = performance.now();
    },
  });
  const wall = (performance.now() - t0) / 1000;
  const written = report.patients.reduce((n, p) => n + Object.values(p.written).reduce((a, b) => a + b, 0), 0);
  const sent = report.patients.reduce((n, p) => n + Object.values(p.sent).reduce((a, b) => a + b, 0), 0);
  const importSec = (last - first) / 1000;
  return { ok, patients: report.patients.length, resourcesSent: sent, resourcesWritten: written, importSec: +importSec.toFixed(2), wallSec: +wall.toFixed(2), resourcesPerSec: +(written / importSec).toFixed(1), auditRecords: report.audit.records };
}

const tmp = await mkdtemp(path.join(os.tmpdir(), "hmcp-bench-demo-"));
try {
  const store = path.join(tmp, "emr");
  const fresh = await once(store, path.join(tmp, "audit"));
  const replay = await once(store, path.join(tmp, "audit"));
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: "demo-import",
        data: path.relative(repoRoot, dataDir),
        transport,
        node: process.version,
        cpus: os.cpus().length,
        resourcesPerSec: fresh.resourcesPerSec,
        fresh,
        replay,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await rm(tmp, { recursive: true, force: true });
}
