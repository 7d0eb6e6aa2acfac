/**
 * `hmcp audit verify|query|export` (issue 4). Exit codes: 0 ok, 1 check failed, 2 usage error.
 *
 *   hmcp audit verify <files or dirs...> [--key <public JWK file>] [--anchors <file>] [--allow-unsigned-tail] [--allow-empty] [--partial] [--format text|json]
 *   hmcp audit query  [--patient ID] [--actor ID] [--outcome O] [--reason R] [--method M] [--type T] [--since T] [--until T]
 *                     [--limit N] [--format table|json] <files or dirs...>
 *   hmcp audit export --format fhir [same filters as query] [--site NAME] <files or dirs...>
 *
 * Directories expand to their `*.jsonl` files sorted by name (chain order).
 * `verify` prints one line, e.g. "OK: 39 records + 1 signed checkpoint = 40 entries in 1 file(s); …; head seq 40 …":
 * audit records and checkpoints are both chain entries, each with its own seq. `--format json` prints the
 * `VerifyResult` of `verifyAuditFiles` (`records` and `checkpoints` counted separately). A trail with no entry at all
 * (every file empty: truncated, or never written) fails with exit 1 ("FAILED: EMPTY TRAIL", JSON `ok: false, empty:
 * true`) unless `--allow-empty`: only anchors can prove what an emptied trail held.
 * `query --format table` (the default) cuts cells longer than their column with '…' and says so on stderr;
 * `--format json` prints each matching record whole, one JSON object per line.
 * `export` exits 1 (after printing what it could read) when a line was not a readable record.
 */
import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import type { JWK } from "jose";
import { parseArgs } from "node:util";
import {
  AuditEventTypeSchema,
  AuditOutcomeSchema,
  expandAuditPaths,
  exportFhirAuditEvents,
  iterateAudit,
  readAnchorFile,
  verifyAuditFiles,
  type AuditQuery,
  type AuditRecordInput,
  type ScanStats,
  type VerifyResult,
} from "../audit/index.js";

type IO = { out: (s: string) => void; err: (s: string) => void };

const USAGE = `usage:
  hmcp audit verify <files|dirs...> [--key <public JWK or JWK Set file>] [--anchors <JSON Lines of checkpoint anchors>] [--allow-empty]
                    [--allow-unsigned-tail] [--partial] [--format text|json]
  hmcp audit query [--patient ID] [--actor ID] [--outcome allowed|denied|blocked|failed] [--reason R] [--method M] [--type T]
                   [--since RFC3339] [--until RFC3339] [--limit N] [--format table|json] <files|dirs...>
  hmcp audit export --format fhir [query filters] [--site NAME] <files|dirs...>
  hmcp audit serve <files|dirs...> | --database-url URL [--table T]  --issuer URL --client-id ID
                   [--client-secret-file F] [--scope S] [--required-scope S] [--key F] [--anchors F] [--host 127.0.0.1] [--port N]
                   [--public-url URL] [--tls-cert F --tls-key F] [--view-audit DIR] [--view-key F] [--view-anchors F]
                   the read-only compliance console (docs/audit-console.md); runs until Ctrl-C`;

/** A command-line mistake: exit 2 with the message and a pointer to `hmcp audit --help`. */
export class UsageError extends Error {}

const FILTER_OPTIONS = {
  patient: { type: "string" },
  actor: { type: "string" },
  outcome: { type: "string" },
  reason: { type: "string" },
  method: { type: "string" },
  type: { type: "string" },
  since: { type: "string" },
  until: { type: "string" },
  limit: { type: "string" },
  format: { type: "string" },
} as const;

/** Runs `hmcp audit ...`; resolves to the exit code. */
export async function runAuditCommand(argv: string[], io: IO): Promise<number> {
  const [sub, ...rest] = argv;
  try {
    switch (sub) {
      case "verify":
        return await verify(rest, io);
      case "query":
        return await query(rest, io);
      case "export":
        return await exportCmd(rest, io);
      case "serve":
        // loaded on demand: the console's web stack is not needed by verify, query and export
        return await (await import("./audit-serve.js")).serve(rest, io);
      case "help":
      case "--help":
      case "-h":
        io.out(USAGE);
        return 0;
      default:
        throw new UsageError(sub === undefined ? "missing subcommand" : `unknown subcommand '${sub}'`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      // the error and a pointer to the usage (ten lines for four subcommands would bury it); no subcommand at all: the usage
      io.err(sub === undefined ? `hmcp audit: ${(e as Error).message}\n${USAGE}` : `hmcp audit: ${(e as Error).message}\nrun 'hmcp audit --help' for the usage`);
      return 2;
    }
    if ((e as NodeJS.ErrnoException).code === "ENOENT") {
      io.err(`hmcp audit: no such file or directory: ${(e as NodeJS.ErrnoException).path ?? ""}`);
      return 2;
    }
    throw e;
  }
}

/** The audit files of the positional arguments (directories expanded). @throws UsageError when there are none */
export async function files(positionals: string[]): Promise<string[]> {
  if (positionals.length === 0) throw new UsageError("no audit files given");
  const out = await expandAuditPaths(positionals);
  if (out.length === 0) {
    // a parent of run folders (e.g. the demo's .hmcp/audit): name the folders that do hold audit files
    const holders: string[] = [];
    for (const dir of positionals) {
      const subs = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const d of subs) {
        if (!d.isDirectory()) continue;
        const inner = await readdir(path.join(dir, d.name)).catch(() => [] as string[]);
        if (inner.some((f) => f.endsWith(".jsonl"))) holders.push(path.join(dir, d.name));
      }
    }
    const hint = holders.length > 0 ? `; these folders hold some (give one chain's folder): ${holders.slice(-5).join(", ")}${holders.length > 5 ? ", …" : ""}` : "";
    throw new UsageError(`no *.jsonl audit files found in the given directories${hint}`);
  }
  return out;
}

async function verify(argv: string[], io: IO): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      key: { type: "string" },
      anchors: { type: "string" },
      "allow-unsigned-tail": { type: "boolean" },
      "allow-empty": { type: "boolean" },
      partial: { type: "boolean" },
      format: { type: "string" },
    },
  });
  const format = values.format ?? "text";
  if (format !== "text" && format !== "json") throw new UsageError("--format must be text or json");
  const list = await files(positionals);
  const publicKey = values.key !== undefined ? await readPublicKey(values.key) : undefined;
  const anchors = values.anchors === undefined ? undefined : await readAnchors(values.anchors);
  let result;
  try {
    result = await verifyAuditFiles(list, {
      ...(publicKey !== undefined && { publicKey }),
      ...(anchors !== undefined && { anchors }),
      allowUnsignedTail: values["allow-unsigned-tail"] ?? false,
      partial: values.partial ?? false,
    });
  } catch (e) {
    throw new UsageError(`--key: ${(e as Error).message}`);
  }
  // A trail holding no entry proves nothing: every file may have been emptied (truncated, rewritten). It verifies only
  // when the caller says an empty trail is expected; anchors (--anchors) are what prove entries were removed.
  const empty = result.ok && result.records + result.checkpoints === 0;
  const emptyRefused = empty && values["allow-empty"] !== true;
  if (format === "json") {
    io.out(JSON.stringify(emptyRefused ? { ...result, ok: false, empty: true } : empty ? { ...result, empty: true } : result));
    return result.ok && !emptyRefused ? 0 : 1;
  }
  if (emptyRefused) {
    io.out(
      `FAILED: EMPTY TRAIL: ${list.length} file(s) hold no entry${publicKey !== undefined ? " although a checkpoint key was given (a signing sink writes a checkpoint at every close)" : ""}: the trail may have been emptied; verify against --anchors to prove what it held, or pass --allow-empty if no record was ever written`,
    );
    return 1;
  }
  if (result.ok) {
    // Records and checkpoints are both chain entries (each takes a seq), so the head seq counts both.
    const sig =
      (result.signaturesChecked ? "checkpoint signatures verified" : "checkpoint signatures NOT checked (no --key)") +
      (anchors !== undefined ? `; checked against ${plural(anchors.length, "checkpoint anchor")}` : "");
    // each recover checkpoint marks a reopen after an unclean end: a crash or kill, or a trail cut back to a checkpoint
    const unclean =
      result.recoveries.length === 0
        ? ""
        : `; ${plural(result.recoveries.length, "unclean end")} before a restart (recover checkpoint at ${result.recoveries
            .slice(0, 5)
            .map((r) => `${r.chain !== undefined ? `${r.chain} ` : ""}seq ${r.seq} ${r.time}`)
            .join(", ")}${result.recoveries.length > 5 ? ", …" : ""}: a crash, a kill, or entries after a checkpoint removed)`;
    // an end without a close checkpoint proves nothing about entries removed from the end unless signatures or anchors say so
    const unproven = publicKey === undefined && anchors === undefined ? "; without --key or --anchors, a trail with entries removed from its end looks the same" : "";
    if (result.chains) {
      io.out(
        `OK: ${entries(result, result.signaturesChecked)} in ${list.length} file(s), ${result.chains.length} chains (${result.chains.map((c) => `${c.name}: ${entries(c, false)}`).join(", ")}); ${sig}; ${result.closed ? "all closed cleanly" : `not all closed (writer still running or crashed${unproven})`}${unclean}`,
      );
      return 0;
    }
    io.out(
      `OK: ${entries(result, result.signaturesChecked)} in ${list.length} file(s); ${sig}; chain ${result.chain ?? "(unnamed)"} head seq ${result.lastSeq} ${result.head.slice(0, 16)}…; ${result.closed ? "closed cleanly" : `not closed (writer still running or crashed${unproven})`}${unclean}`,
    );
    return 0;
  }
  const f = result.firstError!;
  // where: a file and line, or for an anchored checkpoint no file holds, the anchor's seq alone
  const where = f.file !== "" ? `${f.file} line ${f.line}${f.seq !== undefined ? ` (seq ${f.seq})` : ""}` : `anchored checkpoint${f.seq !== undefined ? ` at seq ${f.seq}` : ""}`;
  // the checks after the last line (signed end, anchors) fail with every entry read and its hash chain intact; with
  // several chains that is said only when every failing chain failed so
  const failing: Array<VerifyResult & { name?: string }> = result.chains?.filter((c) => !c.ok) ?? [result];
  const read = failing.every((c) => c.firstError !== undefined && END_CHECKS.has(c.firstError.reason))
    ? `the hash chain of all ${plural(result.records, "record")} and ${plural(result.checkpoints, "checkpoint")} read is intact, but its end is not proven`
    : `${plural(result.records, "record")} and ${plural(result.checkpoints, "checkpoint")} verified before it`;
  const others = failing.length > 1 ? `; ${failing.length} chains fail (${failing.map((c) => `${c.name ?? "?"}: ${c.firstError?.reason ?? "?"}`).join(", ")}; --format json gives each)` : "";
  io.out(`FAILED: ${where}: ${f.reason}: ${f.message}; ${read}${others}`);
  return 1;
}

/**
 * The anchors in `file`: JSON Lines of `{ chain, seq, hash, ... }` (what the sinks' `onCheckpoint` hands out), or one
 * JSON array of them.
 * @throws UsageError when the file holds anything else
 */
/**
 * A `--key` file: a public JWK or a JWK Set of public keys.
 * @throws UsageError when it is not JSON or holds a private key; Error (ENOENT) when it does not exist
 */
export async function readPublicKey(file: string): Promise<Record<string, unknown>> {
  const publicKey = await readJwkFile("--key", file);
  const keys = Array.isArray(publicKey["keys"]) ? (publicKey["keys"] as Record<string, unknown>[]) : [publicKey];
  if (keys.some((k) => typeof k?.["d"] === "string")) throw new UsageError("--key must hold PUBLIC keys only (the file holds a private key)");
  return publicKey;
}

/** A `--view-key` file: one private JWK (Ed25519 or P-256) to sign the console's own trail. @throws UsageError, Error (ENOENT) */
export async function readPrivateKey(file: string): Promise<JWK> {
  const jwk = (await readJwkFile("--view-key", file)) as JWK;
  if (typeof jwk.d !== "string") throw new UsageError(`--view-key ${file}: must hold a PRIVATE key (the console signs its trail with it)`);
  return jwk;
}

/** The JSON of a key file named by `option`. @throws UsageError when it is not JSON; Error (ENOENT) when it does not exist */
async function readJwkFile(option: string, file: string): Promise<Record<string, unknown>> {
  try {
    return JSON.parse(await readFile(file, "utf8")) as Record<string, unknown>;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw e;
    throw new UsageError(`${option} ${file}: not a JSON Web Key file`);
  }
}

/** An `--anchors` file: JSON Lines (or a JSON array) of checkpoint anchors (readAnchorFile). @throws UsageError (not anchors, a folder, unreadable), Error (ENOENT) */
export async function readAnchors(file: string): Promise<Array<{ chain: string; seq: number; hash: string }>> {
  try {
    return readAnchorFile(file).map(({ chain, seq, hash }) => ({ chain, seq, hash }));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw e;
    if (code !== undefined) throw new UsageError(`--anchors ${file}: ${code === "EISDIR" ? "is a folder, not a file of anchors" : `cannot be read (${code})`}`);
    throw new UsageError(`--anchors ${(e as Error).message}`);
  }
}

/** Failures found after the last line: every entry was read and chained. */
const END_CHECKS = new Set(["unsigned_tail", "anchor_missing"]);

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`;

/** "39 records + 1 signed checkpoint = 40 entries": what a chain's entries (and so its seq numbers) are made of. */
function entries(r: { records: number; checkpoints: number }, signed: boolean): string {
  const n = r.records + r.checkpoints;
  return `${plural(r.records, "record")} + ${plural(r.checkpoints, signed ? "signed checkpoint" : "checkpoint")} = ${n} ${n === 1 ? "entry" : "entries"}`;
}

function parseQuery(values: Partial<Record<keyof typeof FILTER_OPTIONS, string>>): AuditQuery {
  const q: AuditQuery = {};
  if (values.patient !== undefined) q.patient = values.patient;
  if (values.actor !== undefined) q.actor = values.actor;
  if (values.method !== undefined) q.method = values.method;
  if (values.reason !== undefined) q.reason = values.reason;
  if (values.outcome !== undefined) {
    const o = AuditOutcomeSchema.safeParse(values.outcome);
    if (!o.success) throw new UsageError(`--outcome must be one of ${AuditOutcomeSchema.options.join(", ")}`);
    q.outcome = o.data;
  }
  if (values.type !== undefined) {
    const t = AuditEventTypeSchema.safeParse(values.type);
    if (!t.success) throw new UsageError(`--type must be one of ${AuditEventTypeSchema.options.join(", ")}`);
    q.type = t.data;
  }
  for (const k of ["since", "until"] as const) {
    const v = values[k];
    if (v === undefined) continue;
    if (Number.isNaN(Date.parse(v))) throw new UsageError(`--${k} must be an RFC 3339 time, e.g. 2026-11-22T06:00:00Z`);
    q[k] = v;
  }
  if (values.limit !== undefined) {
    const n = Number(values.limit);
    if (!Number.isInteger(n) || n < 1) throw new UsageError("--limit must be a positive integer");
    q.limit = n;
  }
  return q;
}

async function query(argv: string[], io: IO): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: FILTER_OPTIONS });
  const format = values.format ?? "table";
  if (format !== "table" && format !== "json") throw new UsageError("--format must be table or json");
  const q = parseQuery(values);
  const list = await files(positionals);
  const stats: ScanStats = { scanned: 0, skipped: 0 };
  let n = 0;
  let cut = false;
  if (format === "table") io.out(row(["time", "type", "outcome", "reason", "method", "actor", "patients", "agent", "ms"]).text);
  for await (const r of iterateAudit(list, q, stats)) {
    n++;
    if (format === "json") {
      io.out(JSON.stringify(r));
      continue;
    }
    const line = tableRow(r, q.patient);
    cut ||= line.cut;
    io.out(line.text);
  }
  const notes = [
    ...(stats.skipped > 0 ? [`${stats.skipped} unreadable line(s) skipped (run 'hmcp audit verify')`] : []),
    ...(cut ? ["long cells cut short with '…' (--format json prints every field in full)"] : []),
  ];
  io.err(`${n} record(s) matched${notes.map((x) => `; ${x}`).join("")}`);
  return 0;
}

/**
 * Table column widths; a longer cell is cut to its width with a trailing '…' (the last column, latency, never is). The
 * patients column holds one whole FHIR id as long as a UUID (36) and a count of the others.
 */
const WIDTHS = [24, 13, 8, 24, 24, 20, 42, 16, 8];

function row(cols: string[]): { text: string; cut: boolean } {
  let cut = false;
  const cells = cols.map((c, i) => {
    const w = WIDTHS[i] ?? 10;
    const chars = Array.from(c);
    if (i < cols.length - 1 && chars.length > w) {
      cut = true;
      return chars.slice(0, w - 1).join("") + "…";
    }
    return c.padEnd(w);
  });
  return { text: cells.join(" ").trimEnd(), cut };
}

/**
 * A record's patients in one cell: the queried patient (`--patient`) or else the first, whole (an id to paste into
 * `--patient`), and "+N" for the others (`--format json` lists them).
 */
function patientsCell(patients: string[], queried: string | undefined): string {
  if (patients.length === 0) return "-";
  const first = queried !== undefined && patients.includes(queried) ? queried : patients[0]!;
  return patients.length > 1 ? `${first} +${patients.length - 1}` : first;
}

function tableRow(r: AuditRecordInput, queried: string | undefined): { text: string; cut: boolean } {
  // a person signed in through a client (the audit console's officer) shows as "<sub> via <client>"
  const { sub, clientId } = r.actor;
  const actor = sub !== undefined && clientId !== undefined && sub !== clientId ? `${sub} via ${clientId}` : (clientId ?? sub ?? "-");
  return row([r.time, r.type, r.outcome, r.reason ?? "-", r.method ?? "-", actor, patientsCell(r.patients, queried), r.agent, String(r.latencyMs)]);
}

async function exportCmd(argv: string[], io: IO): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { ...FILTER_OPTIONS, site: { type: "string" } } });
  if (values.format !== "fhir") throw new UsageError("export needs --format fhir");
  const { format: _f, site, ...filters } = values;
  const q = parseQuery(filters);
  const list = await files(positionals);
  const records: AuditRecordInput[] = [];
  const stats: ScanStats = { scanned: 0, skipped: 0 };
  for await (const r of iterateAudit(list, q, stats)) records.push(r);
  io.out(JSON.stringify(exportFhirAuditEvents(records, site !== undefined ? { site } : {}), null, 2));
  // An export that silently missed records would misinform whoever receives it: say so, and exit 1.
  if (stats.skipped > 0) {
    io.err(`${records.length} AuditEvent(s) exported; INCOMPLETE: ${stats.skipped} unreadable line(s) skipped (run 'hmcp audit verify')`);
    return 1;
  }
  io.err(`${records.length} AuditEvent(s) exported (the chain is not verified by export: run 'hmcp audit verify')`);
  return 0;
}
