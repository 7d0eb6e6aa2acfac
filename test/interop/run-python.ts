/**
 * Interop with the official MCP Python SDK (issue #23): starts an HMCP agent on loopback (createHttpApp, a JWT bearer),
 * runs test/interop/python/{modern,legacy}.py with the Python given by HMCP_PYTHON (a virtual environment with `mcp`
 * installed), checks the JSON summary each prints and the agent's audit records. Exits non-zero on any mismatch.
 *
 *   HMCP_PYTHON=/path/to/venv/bin/python npx tsx test/interop/run-python.ts
 *   npx tsx test/interop/run-python.ts --serve   # only serve the agent: prints the scripts' settings, until Ctrl-C
 *
 * HMCP_INTEROP_WIRE=1 makes the Python scripts log each HTTP exchange to stderr (passed through).
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createHttpApp, HMCP_EXTENSION_ID, HMCPErrorCode, HMCPServer, INFO_NEEDED, listen, SAMPLING_TOOL_NAME, type AuditRecordInput } from "hmcp";
import { bearerFor, makeKeys, mint } from "../fixtures/bearer.js";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const PATIENT = "p1"; // the tokens' launch context
const OTHER_PATIENT = "p2";
const SCRIPT_TIMEOUT_MS = 30_000;

/**
 * The agent the Python client calls: HMCP sampling that answers infoNeeded until the request names a patient_id, and
 * asks its caller for approval when the request says "approve" (`ctx.elicit`: an elicitation request back on the same
 * request on 2025-11-25, an input-required round on 2026-07-28).
 */
function agent(audit: AuditRecordInput[]): HMCPServer {
  const s = new HMCPServer({ name: "py-interop-agent", version: "1.0.0" }, { guardrails: false, hooks: { audit: (r) => audit.push(r) } });
  s.sampling(async (params, ctx) => {
    const text = JSON.stringify(params.messages);
    if (!text.includes("patient_id")) return { content: { type: "text", text: "need patient_id" }, stopReason: INFO_NEEDED };
    if (text.includes("approve")) {
      const answer = await ctx.elicit({ message: "Approve writing the encounter?", requestedSchema: { type: "object", properties: { ok: { type: "boolean" } } } });
      if (answer.action !== "accept") return { content: { type: "text", text: "not approved" }, stopReason: INFO_NEEDED };
      return { content: { type: "text", text: "written after approval" }, stopReason: "endTurn" };
    }
    return { content: { type: "text", text: "written" }, stopReason: "endTurn" };
  });
  return s;
}

function fail(message: string): never {
  console.error(`interop:python: FAIL: ${message}`);
  process.exit(1);
}

/** Runs a Python script with `env` added; resolves its parsed JSON summary (the last line of stdout). */
function runPython(python: string, script: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [`${HERE}python/${script}`], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), SCRIPT_TIMEOUT_MS);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const last = out.trim().split("\n").at(-1) ?? "";
      let summary: Record<string, unknown> | undefined;
      try {
        summary = JSON.parse(last) as Record<string, unknown>;
      } catch {
        /* reported below */
      }
      if (code !== 0 || summary === undefined) {
        reject(new Error(`${script} exited with ${signal ?? code}${summary === undefined ? " and no JSON summary" : ""}; stdout:\n${out}`));
        return;
      }
      resolve(summary);
    });
  });
}

/** Takes the records so far, after waiting (up to 2 s) for `n` of them: a record may be appended after its reply left. */
async function takeRecords(audit: AuditRecordInput[], n: number): Promise<AuditRecordInput[]> {
  for (let waited = 0; audit.length < n && waited < 2_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
  return audit.splice(0);
}

/** Checks the summary a script printed: no mismatches it found itself, and the main facts it reports. */
function expectSummary(script: string, summary: Record<string, unknown>, expected: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(expected)) expectEqual(`${script} summary "${key}"`, summary[key], value);
}

/**
 * Checks the records of one era: `expected` is one [method, "outcome" or "outcome:reason"] per request, in order; each
 * request's actor is the token's subject and its JSON-RPC id is its own.
 */
function expectAudit(era: string, records: AuditRecordInput[], expected: Array<[string, string]>): void {
  const seen = records.map((r) => [r.method, r.reason ? `${r.outcome}:${r.reason}` : r.outcome]);
  expectEqual(`${era}: audit records [method, outcome]`, seen, expected);
  if (!records.every((r) => r.actor.sub === "python-sdk" && r.actor.clientId === "python-sdk")) fail(`${era}: an audit record's actor is not python-sdk`);
  const ids = records.map((r) => r.requestId);
  if (new Set(ids).size !== ids.length || ids.includes(undefined)) fail(`${era}: audit request ids are not one per request: ${JSON.stringify(ids)}`);
}

function expectEqual(what: string, actual: unknown, expected: unknown): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) fail(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

async function main(): Promise<void> {
  const started = Date.now();
  const serveOnly = process.argv.includes("--serve");
  const python = process.env["HMCP_PYTHON"] ?? "";
  if (!serveOnly && python === "") fail("HMCP_PYTHON is not set: the path of a Python with the MCP SDK installed (python3 -m venv v && v/bin/pip install mcp)");
  const keys = await makeKeys();
  const audit: AuditRecordInput[] = [];
  const http = await listen(createHttpApp({ createServer: () => agent(audit), bearer: bearerFor(keys) }));
  const url = new URL("/mcp", http.url).href;
  const token = await mint(keys, { client_id: "python-sdk", sub: "python-sdk", scope: "hmcp:sample hmcp:access", patient: PATIENT });
  const env = {
    HMCP_URL: url,
    HMCP_TOKEN: token,
    HMCP_PATIENT: PATIENT,
    HMCP_OTHER_PATIENT: OTHER_PATIENT,
    HMCP_EXTENSION_ID,
    HMCP_SAMPLING_TOOL: SAMPLING_TOOL_NAME,
    HMCP_INFO_NEEDED: INFO_NEEDED,
    HMCP_PATIENT_CONTEXT_VIOLATION: String(HMCPErrorCode.PatientContextViolation),
    PYTHONDONTWRITEBYTECODE: "1", // no __pycache__ in the worktree
  };

  if (serveOnly) {
    // the settings the scripts read, as shell lines: paste them, then run a script by hand
    for (const [k, v] of Object.entries(env)) console.log(`export ${k}='${v}'`);
    console.log("# then: $HMCP_PYTHON test/interop/python/modern.py (or legacy.py); Ctrl-C stops the agent");
    process.on("SIGINT", () => void http.close().then(() => process.exit(0)));
    return;
  }

  let recorded = 0;
  try {
    // modern era (2026-07-28): one record per request, each on its own (no session); none for server/discover
    const modern = await runPython(python, "modern.py", env).catch((e: Error) => fail(e.message));
    console.log(`modern: ${JSON.stringify(modern)}`);
    expectSummary("modern.py", modern, {
      era: "modern",
      mismatches: [],
      protocolVersion: "2026-07-28",
      extension: true,
      "written.stopReason": "endTurn",
      "otherPatient.code": HMCPErrorCode.PatientContextViolation,
      "askBack.stopReason": "endTurn",
      elicitations: ["Approve writing the encounter?"],
    });
    const modernAudit = await takeRecords(audit, 6);
    expectAudit("modern era", modernAudit, [
      ["tools/list", "allowed"],
      ["tools/call", "allowed"], // infoNeeded
      ["tools/call", "allowed"], // written
      ["tools/call", "denied:patient_context_mismatch"],
      ["tools/call", "allowed"], // the agent elicits: round 1 ends with an input-required result
      ["tools/call", "allowed"], // round 2: the Client's retry with the answer; written after approval
    ]);
    // the approval's two rounds: one flow, rounds 1 and 2, the question asked then answered
    const [round1, round2] = modernAudit.slice(4);
    expectEqual("modern era: input rounds of the approval request", [round1?.inputRound?.round, round2?.inputRound?.round], [1, 2]);
    if (typeof round1?.inputRound?.flow !== "string" || round1.inputRound.flow !== round2?.inputRound?.flow) {
      fail(`modern era: the approval's rounds are not one flow: ${JSON.stringify([round1?.inputRound, round2?.inputRound])}`);
    }
    expectEqual("modern era: interactions of the approval's round 1", round1?.interactions, [{ kind: "elicitation", outcome: "input_required" }]);
    expectEqual("modern era: interactions of the approval's round 2", round2?.interactions, [{ kind: "elicitation", outcome: "accept" }]);
    if (modernAudit.slice(0, 4).some((r) => r.inputRound !== undefined)) fail("modern era: a request that asked nothing has an inputRound");
    if (!modernAudit.every((r) => r.sessionId === undefined)) fail("modern era: an audit record has a session id");

    // legacy era (2025-11-25): one record per sampling/createMessage, all in the one session
    const legacy = await runPython(python, "legacy.py", env).catch((e: Error) => fail(e.message));
    console.log(`legacy: ${JSON.stringify(legacy)}`);
    expectSummary("legacy.py", legacy, { era: "legacy", mismatches: [], protocolVersion: "2025-11-25", "experimental.hmcp.sampling": true, elicitationsAnswered: 1, "otherPatient.code": HMCPErrorCode.PatientContextViolation });
    const legacyAudit = await takeRecords(audit, 4);
    expectAudit("legacy era", legacyAudit, [
      ["sampling/createMessage", "allowed"], // infoNeeded
      ["sampling/createMessage", "allowed"], // written
      ["sampling/createMessage", "allowed"], // written after the elicitation the Python client accepted
      ["sampling/createMessage", "denied:patient_context_mismatch"],
    ]);
    expectEqual("legacy era: interactions of the approval request", legacyAudit[2]?.interactions, [{ kind: "elicitation", outcome: "accept" }]);
    const sessions = new Set(legacyAudit.map((r) => r.sessionId));
    if (sessions.size !== 1 || sessions.has(undefined)) fail(`legacy era: expected every audit record in one session, got ${JSON.stringify([...sessions])}`);
    recorded = modernAudit.length + legacyAudit.length;
  } finally {
    await http.close();
  }
  console.log(`interop:python: OK (${Date.now() - started} ms; ${recorded} audit records)`);
}

await main();
