// "No PHI in any log" (issue 4): the names, SSNs, MRNs (and phones, licence and passport numbers) of
// the Synthea patients used must not appear in any audit or operational log the suite or the demo
// writes. Logs of the suite live under HMCP_LOG_DIR (vitest.config.ts); a global teardown
// (test/unit/audit/log-dir.global.ts) scans that folder again after the whole run.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createOperationalLogger, redactPhiText } from "hmcp";
import { runDemo } from "../../demo/run-demo.js";
import { tempLogDir } from "../unit/audit/helpers.js";
import { allNeedles, filesUnder, isLogFile, scanForPhi } from "../unit/audit/phi-scan.js";
import { demoSynthea, loadSyntheaPatients, sharedSynthea } from "../unit/audit/synthea.js";

const logDir = process.env["HMCP_LOG_DIR"]!;
const needles = allNeedles();
const cleanup: string[] = [];
afterAll(async () => {
  for (const d of cleanup) await rm(d, { recursive: true, force: true });
});

describe("no PHI in any log", () => {
  it("the suite writes its logs under HMCP_LOG_DIR, and the scanner knows the patients", () => {
    expect(logDir).toBeTruthy();
    expect(path.isAbsolute(logDir)).toBe(true);
    // 30 shared + 6 demo patients, several identifiers each
    expect(needles.length).toBeGreaterThan(36 * 4);
  });

  it("the scanner finds a planted identifier (so a clean scan means something)", async () => {
    const [p] = loadSyntheaPatients(sharedSynthea);
    const dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-phi-control-"));
    cleanup.push(dir);
    const f = path.join(dir, "control.log");
    await writeFile(f, `{"ok":true}\n{"msg":"patient ${p!.family} called"}\n{"ssn":"${p!.ssn}"}\n`);
    const hits = await scanForPhi([f], needles);
    expect(hits.map((h) => h.line)).toEqual([2, 3]);
    expect(hits.every((h) => !h.what.includes(p!.family))).toBe(true);
  });

  it("the operational logger (with the guardrails' redactor) keeps Synthea identifiers out of what careless code logs", async () => {
    // Written outside HMCP_LOG_DIR: if this test fails, the end-of-run scan should not fail twice.
    const dir = await mkdtemp(path.join(os.tmpdir(), "hmcp-phi-oplog-"));
    cleanup.push(dir);
    const file = path.join(dir, "operational.log");
    const logger = createOperationalLogger({ file, redact: redactPhiText, level: "debug" });
    const done = new Promise<void>((resolve) => logger.transports[0]!.once("finish", () => resolve()));
    const patients = [...loadSyntheaPatients(sharedSynthea), ...loadSyntheaPatients(demoSynthea)];
    for (const p of patients) {
      // identifiers in free text, and a whole patient record passed as metadata
      logger.info(`lookup failed: SSN ${p.ssn}, MRN ${p.mrn}, phone ${p.phone}, licence ${p.driversLicence}, passport ${p.passport}`);
      logger.debug("retrying", { patient: { name: `${p.given.join(" ")} ${p.family}`, given: p.given, family: p.family, ssn: p.ssn, mrn: p.mrn, phone: p.phone } });
      logger.warn("upstream said", { content: `Patient ${p.given[0]} ${p.family} is ready` });
    }
    logger.end();
    await done;
    const hits = await scanForPhi([file], needles);
    expect(hits.map((h) => `${path.basename(h.file)}:${h.line}: ${h.what}`)).toEqual([]);
    expect((await readFile(file, "utf8")).split("\n").filter(Boolean)).toHaveLength(patients.length * 3);
  });

  it("the demo's audit trail (shipped Synthea sample) verifies and holds no PHI", { timeout: 120_000 }, async () => {
    const store = await mkdtemp(path.join(os.tmpdir(), "hmcp-phi-demo-emr-"));
    cleanup.push(store);
    const auditRoot = await tempLogDir("demo-audit");
    const { report } = await runDemo({ store: { dataDir: store }, auditRoot, out: null });
    const all = (await filesUnder(auditRoot)).filter(isLogFile);
    expect(all.length).toBeGreaterThan(0);
    expect(report.audit.records).toBeGreaterThan(0);
    expect(report.audit.verified).toBe(true);
    const hits = await scanForPhi(all, needles);
    expect(hits.map((h) => `${path.relative(auditRoot, h.file)}:${h.line}: ${h.what}`)).toEqual([]);
  });

  it("no log written so far under HMCP_LOG_DIR holds PHI", async () => {
    const files = (await filesUnder(logDir)).filter(isLogFile);
    expect(files.length).toBeGreaterThan(0);
    const hits = await scanForPhi(files, needles);
    expect(hits.map((h) => `${path.relative(logDir, h.file)}:${h.line}: ${h.what}`)).toEqual([]);
  });
});
