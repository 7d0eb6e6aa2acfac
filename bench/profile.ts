/**
 * CPU profile of one benchmark server under load: where the per-request time goes.
 *
 * Usage: `npx tsx bench/profile.ts [full|full-distinct|full-modern|bare|baseline|baseline-modern|ceiling|bare+auth|...] [--seconds 10] [--connections 10] [--top 30]`
 *        `npx tsx bench/profile.ts guardrails [--n 2000]`   the default policy's both stages on 4 KB texts, in-process
 *        `npx tsx bench/profile.ts audit [--n 20000]`       FileAuditSink appends with the default durability, in-process
 *
 * Starts the server, warms it up, then drives it with autocannon from another process while the server's inspector
 * profiles it (only that window: no start-up, no module loading), and prints self time by file and by function and the
 * inclusive time of the project's own src/ functions. Under tsx, V8 reports positions in the generated code, so the
 * file and function names are exact but line numbers are not; find the lines with grep.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import os from "node:os";
import path from "node:path";
import { FileAuditSink, defaultGuardrails, generateAuditSigningKey, newAuditRecord } from "../src/index.js";
import { isModern, isSdkBaseline, needsToken, requestText, type ServerConfig } from "./lib/configs.js";
import { benchKeys, clinicalText, modernHeaders, modernToolsCallBody, phiText, requestAuditDraft, samplingBody, signAccessToken, toolsCallBody, PATIENT, REPO_ROOT } from "./lib/fixtures.js";
import { mapProfileToSource } from "./lib/sourcemap.js";
import { ensureBuilt } from "./lib/hmcp.js";
import { openSession } from "./lib/mcp-http.js";
import { ServerProc, runLoadProcess, stopLoadProcess } from "./lib/procs.js";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface HotSpot {
  fn: string;
  where: string;
  selfMs: number;
  selfPct: number;
}

function shortUrl(url: string): string {
  if (!url) return "(native)";
  const p = url.replace(/^file:\/\//, "");
  const i = p.indexOf("/node_modules/");
  if (i >= 0) return p.slice(i + 1);
  return p.startsWith(REPO_ROOT) ? path.relative(REPO_ROOT, p) : p;
}

/** Self time by function and by file from a .cpuprofile. */
export function summarize(profile: CpuProfile, top: number): { total: number; byFunction: HotSpot[]; byFile: HotSpot[]; inclusiveBySrc: HotSpot[] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  let total = 0;
  const fnAgg = new Map<string, { fn: string; where: string; us: number }>();
  const fileAgg = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const cf = n.callFrame;
    if (cf.functionName === "(idle)" || cf.functionName === "(program)") continue;
    total += us;
    const where = `${shortUrl(cf.url)}:${cf.lineNumber + 1}`;
    const key = `${cf.functionName}@${where}`;
    const a = fnAgg.get(key) ?? { fn: cf.functionName || "(anonymous)", where, us: 0 };
    a.us += us;
    fnAgg.set(key, a);
    const file = cf.url ? shortUrl(cf.url) : cf.functionName;
    fileAgg.set(file, (fileAgg.get(file) ?? 0) + us);
  }
  // Inclusive time of functions in the project's own src/ (deduplicated per stack: a recursive frame counts once).
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const incl = new Map<string, { fn: string; where: string; us: number }>();
  for (const [id, us] of self) {
    const leaf = byId.get(id)!.callFrame.functionName;
    if (leaf === "(idle)" || leaf === "(program)") continue;
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      // the project's own code: src/ (in-process profiles under tsx) or its build dist/src/ (the benchmark servers)
      if (!cf.url.includes(`${REPO_ROOT}/src/`) && !cf.url.includes(`${REPO_ROOT}/dist/src/`)) continue;
      const where = `${shortUrl(cf.url)}:${cf.lineNumber + 1}`;
      const key = `${cf.functionName}@${where}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const a = incl.get(key) ?? { fn: cf.functionName || "(anonymous)", where, us: 0 };
      a.us += us;
      incl.set(key, a);
    }
  }
  const toSpots = (xs: Array<{ fn: string; where: string; us: number }>) =>
    xs
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((x) => ({ fn: x.fn, where: x.where, selfMs: Math.round(x.us / 100) / 10, selfPct: Math.round((x.us / total) * 1000) / 10 }));
  return {
    total,
    byFunction: toSpots([...fnAgg.values()]),
    byFile: toSpots([...fileAgg.entries()].map(([file, us]) => ({ fn: "", where: file, us }))),
    inclusiveBySrc: toSpots([...incl.values()]),
  };
}

/** Profiles `work` in this process (inspector), with source-mapped positions. */
async function profileHere(work: () => Promise<void>): Promise<CpuProfile> {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  await work();
  const { profile } = await session.post("Profiler.stop");
  await mapProfileToSource(session, profile, REPO_ROOT);
  session.disconnect();
  return profile as unknown as CpuProfile;
}

async function guardrailWork(n: number): Promise<() => Promise<void>> {
  const runner = defaultGuardrails();
  const cases = [clinicalText(4096).text, phiText(4096).text].flatMap((text) => [
    { stage: "input" as const, payload: { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256 } },
    { stage: "output" as const, payload: { role: "assistant", model: "bench", content: { type: "text", text }, stopReason: "endTurn" } },
  ]);
  const once = async () => {
    for (const c of cases) await runner.evaluate(c.stage, c.payload, { stage: c.stage, side: "server", method: "sampling/createMessage" });
  };
  for (let i = 0; i < 100; i++) await once();
  return async () => {
    for (let i = 0; i < n; i++) await once();
  };
}

async function auditWork(n: number, dir: string): Promise<() => Promise<void>> {
  const keys = await generateAuditSigningKey();
  const sink = await FileAuditSink.open({ dir, signing: { privateKey: keys.privateJwk } });
  const record = (i: number) => newAuditRecord(requestAuditDraft(i));
  return async () => {
    for (let i = 0; i < n; i += 100) {
      for (let k = i; k < Math.min(n, i + 100); k++) sink.append(record(k));
      await new Promise<void>((r) => setImmediate(r));
    }
    await sink.flush();
    await sink.close();
  };
}

function print(s: ReturnType<typeof summarize>, file: string): void {
  console.log(`\nbusy (non-idle) CPU ${Math.round(s.total / 1000)} ms; profile ${file}\n`);
  console.log("Self time by file:");
  for (const x of s.byFile.slice(0, 20)) console.log(`  ${x.selfPct.toFixed(1).padStart(5)} %  ${x.selfMs.toFixed(0).padStart(7)} ms  ${x.where}`);
  console.log("\nSelf time by function:");
  for (const x of s.byFunction) console.log(`  ${x.selfPct.toFixed(1).padStart(5)} %  ${x.selfMs.toFixed(0).padStart(7)} ms  ${x.fn}  ${x.where}`);
  console.log("\nInclusive time, project src/ functions:");
  for (const x of s.inclusiveBySrc) console.log(`  ${x.selfPct.toFixed(1).padStart(5)} %  ${x.selfMs.toFixed(0).padStart(7)} ms  ${x.fn}  ${x.where}`);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opt = (name: string, def: string) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1]! : def;
  };
  const target = argv.find((a) => !a.startsWith("--") && !/^\d+$/.test(a)) ?? "full";
  const top = Number(opt("top", "30"));
  const dir = mkdtempSync(path.join(os.tmpdir(), "hmcp-bench-prof-"));
  if (target === "guardrails" || target === "audit") {
    const n = Number(opt("n", target === "audit" ? "20000" : "500"));
    const work = target === "audit" ? await auditWork(n, path.join(dir, "audit")) : await guardrailWork(n);
    const t0 = performance.now();
    const profile = await profileHere(work);
    const ms = performance.now() - t0;
    console.log(target === "audit" ? `audit: ${n} records in ${ms.toFixed(0)} ms (${Math.round((n / ms) * 1000)} records/s)` : `guardrails: ${n} x 4 evaluations in ${ms.toFixed(0)} ms`);
    const file = path.join(dir, `${target}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    print(summarize(profile, top), file);
    if (!argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
    return;
  }
  const config = target as ServerConfig;
  ensureBuilt();
  const seconds = Number(opt("seconds", "10"));
  const connections = Number(opt("connections", "10"));
  const keys = await benchKeys();
  const token = await signAccessToken(keys.privateKey);
  const text = clinicalText(1024).text;
  const server = await ServerProc.start({ config, publicJwk: keys.publicJwk });
  const withToken = needsToken(config);
  const file = path.join(dir, `${config}.cpuprofile`);
  try {
    let headers: Record<string, string> = { "content-type": "application/json" };
    let body: string;
    if (isModern(config)) {
      // MCP 2026-07-28: no session; the envelope and headers on every request (as bench/run.ts sends them)
      const tool = config === "baseline-modern" ? "echo" : "sampling_createMessage";
      headers = modernHeaders(tool, withToken ? { authorization: `Bearer ${token}` } : {});
      const args = config === "baseline-modern" ? { text } : { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256, _meta: { "hmcp/patient": PATIENT } };
      body = JSON.stringify(modernToolsCallBody(tool, args, "[<id>]"));
    } else {
      if (config !== "ceiling") headers = (await openSession(server.url, withToken ? { authorization: `Bearer ${token}` } : {})).headers;
      body = JSON.stringify(
        config === "ceiling" || isSdkBaseline(config) ? toolsCallBody(text, "[<id>]") : samplingBody(requestText(config, text), "[<id>]", withToken ? PATIENT : undefined),
      );
    }
    await runLoadProcess({ url: server.url, headers, body, connections, durationSec: 2 });
    await server.profileStart();
    const r = await runLoadProcess({ url: server.url, headers, body, connections, durationSec: seconds });
    await server.profileStop(file);
    console.log(`${config}: ${Math.round(r.rps)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms over ${seconds} s at ${connections} connections`);
  } finally {
    stopLoadProcess();
    await server.stop();
  }
  print(summarize(JSON.parse(readFileSync(file, "utf8")) as CpuProfile, top), file);
  if (!argv.includes("--keep")) rmSync(dir, { recursive: true, force: true });
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(REPO_ROOT, "bench/profile.ts");
if (isMain) {
  main().catch((error: unknown) => {
    console.error((error as Error).stack ?? String(error));
    process.exit(1);
  });
}
