/**
 * The project's operational logger (winston): what a service operator reads, as opposed to the audit
 * trail a compliance officer reads. Every string in every log entry (message and metadata, keys and
 * values, nested) passes through a `redact(text) => string` function before any transport sees it
 * (issue 4: no PHI in any log line).
 */
import winston from "winston";
import { isAuditTransport } from "./winston-transport.js";

/** A winston transport instance. */
export type LogTransport = winston.transport;

/** A PHI redactor: returns `text` with PHI replaced by placeholders. Must be pure and never throw. */
export type Redactor = (text: string) => string;

/** Options of {@link createOperationalLogger}. */
export interface OperationalLoggerOptions {
  /** Lowest level written (npm levels: error, warn, info, http, verbose, debug, silly). Default "info". */
  level?: string;
  /**
   * The redactor every string goes through, after the pattern pass {@link basicRedactPhi} (which
   * always runs first: SSNs, phones, e-mails, dates, MRN-labelled values, licence/passport-shaped
   * ids). Default: the pattern pass alone, which does NOT find names. Servers should pass the
   * guardrails' `redactPhiText`, which also finds names.
   */
  redact?: Redactor;
  /** Service name added to every entry. Default "hmcp". */
  service?: string;
  /** Also append JSON Lines to this file (winston File transport). */
  file?: string;
  /** Write to stderr (all levels, JSON Lines). Default true unless `file` or `transports` are given. */
  console?: boolean;
  /**
   * Extra winston transports (they receive entries already redacted). Not the audit transport
   * (`createAuditTransport`): it needs records unredacted and belongs on a logger of its own.
   */
  transports?: LogTransport[];
}

const SPLAT = Symbol.for("splat");
const LEVEL = Symbol.for("level");
const SESSION_ID = /^[0-9A-Fa-f]{8}(?:-?[0-9A-Fa-f]{4}){3}-?[0-9A-Fa-f]{12}$|^[0-9A-Fa-f]{16,64}$/;
/** Metadata keys whose values are PHI or message content by nature: replaced whole, whatever they hold. */
const SENSITIVE_KEY = /^(name|names|given|family|patientName|fullName|ssn|mrn|phone|telecom|email|address|birthDate|dob|content|contents|text|prompt|messages|body|params|result)$/i;

/**
 * Creates a winston logger whose entries are redacted, timestamped (RFC 3339 ms) JSON.
 * Metadata keys go through the redactor like values, at every depth.
 * Error objects in metadata are reduced to `{ name, code, message: redact(message) }` (no stacks; an Error logged
 * as the entry itself, `logger.error(err)`, is written as its redacted message and `error: { name, code, message }`);
 * a Date becomes its redacted ISO string; a Buffer, ArrayBuffer, typed array or DataView becomes
 * "[binary]" and any other object that is not a plain object or an array becomes "[object]".
 * Metadata under keys that hold PHI or content by nature (`name`, `ssn`, `mrn`, `phone`, `email`,
 * `address`, `birthDate`, `content`, `text`, `prompt`, `messages`, `body`, `params`, `result` …) is
 * replaced by "[REDACTED]" whatever it holds.
 * @throws Error when `level` is not an npm level or `redact` is not a function.
 * Redaction happens where entries enter the logger (every level method, `log`, `write` and child loggers), on a copy
 * (the redaction does not modify the caller's objects; winston itself adds `level` and the default metadata to an
 * object passed alone as the entry), and no format, transport or winston warning sees the unredacted entry
 * (winston's raw metadata, `info[Symbol.for("splat")]`, is not passed on). A caller's `timestamp` is dropped (the
 * format writes the real one) and so is a top-level `stack`; entries of winston's exception and rejection handlers keep
 * the first line of their message, without the stack and `trace`.
 * A transport that fails (the log file's folder unwritable, the disk full) is dropped and reported once on stderr; the
 * process and the other transports go on.
 * @throws TypeError when `transports` holds the audit transport (also from the logger's `add`, `configure` and `pipe`).
 */
export function createOperationalLogger(opts: OperationalLoggerOptions = {}): winston.Logger {
  const level = opts.level ?? "info";
  if (!(level in winston.config.npm.levels)) throw new Error(`createOperationalLogger: unknown level '${level}' (use ${Object.keys(winston.config.npm.levels).join(", ")})`);
  const given = opts.redact;
  if (given !== undefined && typeof given !== "function") throw new Error("createOperationalLogger: 'redact' must be a function (text) => string");
  const redact: Redactor = given === undefined || given === basicRedactPhi ? basicRedactPhi : (t) => given(basicRedactPhi(t));
  const transports: LogTransport[] = [...(opts.transports ?? [])];
  transports.forEach(refuseAuditTransport);
  if (opts.file) transports.push(new winston.transports.File({ filename: opts.file }));
  if (opts.console ?? (opts.file === undefined && opts.transports === undefined)) {
    transports.push(new winston.transports.Console({ stderrLevels: Object.keys(winston.config.npm.levels) }));
  }
  const logger = winston.createLogger({
    level,
    levels: winston.config.npm.levels,
    defaultMeta: { service: opts.service ?? "hmcp" },
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports,
  });
  // Redaction sits at the logger's entrance, not in its format chain: every entry (from the level methods, log(),
  // write(), child loggers) is rebuilt redacted before winston sees it, so neither a format replaced later
  // (logger.format, configure) nor winston's own "no transports" warning, which prints the entry as given, nor a
  // transport reading the raw metadata (info[Symbol.for("splat")]) can reach unredacted text.
  const write = logger.write.bind(logger) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const service = opts.service ?? "hmcp";
  (logger as { write: (chunk: unknown, ...rest: unknown[]) => boolean }).write = (chunk, ...rest) => write(redactEntry(chunk, redact, service), ...rest);
  // add() and configure() attach transports through pipe()
  const pipe = logger.pipe.bind(logger);
  logger.pipe = (<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }) =>
    pipe(refuseAuditTransport(destination as unknown as LogTransport) as unknown as T, options)) as typeof logger.pipe;
  const configure = logger.configure.bind(logger);
  logger.configure = (options) => {
    [options?.transports ?? []].flat().forEach(refuseAuditTransport);
    configure(options);
  };
  dropFailedTransports(logger, service);
  return logger;
}

/**
 * A transport that fails (its log file's folder unwritable or gone, the disk full) must not end the process: winston
 * re-emits a transport's error on the logger, where, with no listener, Node throws it and the agent dies (with the
 * requests it was serving). The failed transport is taken out (winston-transport closes a transport when it is
 * unpiped, so a file transport's stream is not left open), the others (the console) go on, and the failure is
 * reported once on stderr by the transport's name and the error's code (no path, no message). An error of the logger's own stream (no transport: written after `end()`, say)
 * is reported once on stderr the same way.
 */
function dropFailedTransports(logger: winston.Logger, service: string): void {
  const reported = new WeakSet<object>();
  let ownReported = false;
  const report = (message: string, err: unknown, transport?: string) => {
    const e = err as { code?: unknown; name?: unknown } | undefined;
    const code = typeof e?.code === "string" ? e.code : typeof e?.name === "string" ? e.name : "error";
    process.stderr.write(`${JSON.stringify({ level: "error", message, ...(transport !== undefined && { transport }), code, service, timestamp: new Date().toISOString() })}\n`);
  };
  logger.on("error", (err: unknown, transport?: LogTransport) => {
    if (transport === undefined) {
      if (ownReported) return;
      ownReported = true;
      report("operational logger failed; its entries may be lost", err);
      return;
    }
    logger.remove(transport);
    if (reported.has(transport)) return;
    reported.add(transport);
    report("operational log transport failed; dropped, the other transports go on", err, (transport as { name?: string }).name ?? "unnamed");
  });
}

/**
 * The audit transport must not sit behind the redaction: every record would reach the sink rewritten
 * ("[DATE]", "[ID]") and the chain would hold records that are not what happened.
 */
function refuseAuditTransport(transport: LogTransport): LogTransport {
  if (isAuditTransport(transport)) {
    throw new TypeError(
      "createOperationalLogger: the audit transport (createAuditTransport) cannot be a transport of the operational logger, whose redaction rewrites the audit records; " +
        "give it a winston logger of its own: winston.createLogger({ transports: [createAuditTransport({ sink })] })",
    );
  }
  return transport;
}

/**
 * A redacted copy of a log entry: its level (`Symbol.for("level")`) and every string key, scrubbed; winston's raw
 * metadata (`Symbol.for("splat")`) is dropped. An Error given as the entry itself (`logger.error(err)`) becomes its
 * redacted message plus `error: { name, code, message }`; a top-level `stack` (winston copies an Error's stack there
 * when it is the metadata) is left out, and so is a caller's `timestamp` (the format writes the real one). Entries of
 * winston's exception and rejection handlers keep the first line of their message (the stack follows it) and lose
 * `trace` and `process.argv` / `process.cwd`.
 */
function redactEntry(chunk: unknown, redact: Redactor, service: string): unknown {
  if (chunk === null || typeof chunk !== "object") return chunk;
  const info = chunk as Record<string | symbol, unknown>;
  // a level that is not an npm level (log("<text>", ...)) is redacted before winston's "unknown level" warning prints it
  const level = (l: unknown) => (typeof l === "string" && l in winston.config.npm.levels ? l : typeof l === "string" ? safe(redact, l) : l);
  const out: Record<string | symbol, unknown> = { [LEVEL]: level(info[LEVEL]) };
  // winston's exception and rejection handlers put the stack into the message and add `trace` (files, functions)
  const uncaught = info["exception"] === true || info["rejection"] === true;
  // winston copies the indices of a Buffer or typed array given as the metadata argument into the entry
  const meta = info[SPLAT];
  const binaryMeta = Array.isArray(meta) && ArrayBuffer.isView(meta[0]) ? new Set(Object.keys(meta[0])) : undefined;
  if (chunk instanceof Error) {
    out["message"] = safe(redact, chunk.message);
    out["error"] = scrub(chunk, redact, 0);
  }
  for (const key of Object.keys(info)) {
    let v = info[key];
    // the format adds the timestamp; the service is the configured one (a caller's value under these keys is data)
    if (key === "timestamp") continue;
    if (key === "level") {
      out[key] = level(v);
      continue;
    }
    if (key === "service" && v === service) {
      out[key] = v;
      continue;
    }
    if (key === "stack" || (binaryMeta?.has(key) && key !== "message")) continue;
    if (uncaught && key === "trace") continue;
    if (uncaught && key === "message" && typeof v === "string") v = v.split("\n", 1)[0];
    if (uncaught && key === "process" && v !== null && typeof v === "object") {
      const { argv: _argv, cwd: _cwd, ...rest } = v as Record<string, unknown>;
      v = rest;
    }
    // a transport session id the server generated (UUID or hex) correlates log lines with the audit trail; it is
    // not PHI, though the detector would call it an [ID]
    if (key === "sessionId" && typeof v === "string" && SESSION_ID.test(v)) {
      out[key] = v;
      continue;
    }
    out[key === "message" ? key : safe(redact, key)] = key !== "message" && SENSITIVE_KEY.test(key) ? "[REDACTED]" : scrub(v, redact, 0);
  }
  return out;
}

function scrub(v: unknown, redact: Redactor, depth: number): unknown {
  if (typeof v === "string") return safe(redact, v);
  if (v === null || typeof v !== "object") return v;
  if (depth > 8) return "[depth]";
  if (v instanceof Error) {
    const code: unknown = (v as NodeJS.ErrnoException).code;
    const keptCode = typeof code === "string" ? (MACHINE_CODE.test(code) ? code : safe(redact, code)) : scrub(code, redact, depth + 1);
    return { name: safe(redact, String(v.name)), ...(code !== undefined && { code: keptCode }), message: safe(redact, String(v.message)) };
  }
  if (v instanceof Date) return safe(redact, Number.isNaN(v.getTime()) ? "Invalid Date" : v.toISOString());
  if (Array.isArray(v)) return v.map((x) => scrub(x, redact, depth + 1));
  // bytes can hold any text (Buffer, ArrayBuffer, typed arrays, DataView); other objects (Map, URL, class
  // instances …) are not walked either
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer || (typeof SharedArrayBuffer === "function" && v instanceof SharedArrayBuffer)) return "[binary]";
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return "[object]";
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[safe(redact, k)] = SENSITIVE_KEY.test(k) ? "[REDACTED]" : scrub(x, redact, depth + 1);
  return out;
}

/**
 * What is kept through redaction because it is the machine's, never a person's: loopback addresses (127.0.0.0/8,
 * ::1, and a loopback URL that is an origin or one of HMCP's own endpoints: /mcp, /token, /jwks, /healthz, the
 * well-known metadata; the server's own, which the IP and URL patterns took for a patient's; any other path is
 * redacted whole, as before) and
 * SQLSTATE codes after the word SQLSTATE (five
 * characters, which the ZIP pattern took for a postcode).
 */
const KEPT = /\bhttps?:\/\/(?:127(?:\.\d{1,3}){3}|\[::1\]|localhost)(?::\d{1,5})?(?:\/(?:mcp|token|jwks|healthz|\.well-known\/[a-z-]+(?:\/mcp)?))?(?=$|[\s"'<>,;)\]])|\b127(?:\.\d{1,3}){3}(?::\d{1,5})?\b|\[::1\](?::\d{1,5})?|(?<![\w:])::1\b|\bSQLSTATE[ =:]*[0-9A-Z]{5}\b/g;
/** A machine code as an error's `code` carries it: a SQLSTATE (`23505`) or a Node / library code (`ECONNREFUSED`, `ERR_X`). */
const MACHINE_CODE = /^(?:[0-9A-Z]{5}|E[A-Z0-9]{2,31}|ERR_[A-Z0-9_]{1,60})$/;
const KEEP_MARK = "\u0000k";
/** A mark of {@link KEEP_MARK} (NUL, "k", the kept span's index, NUL): no redaction pattern matches it. */
const KEEP_BACK = new RegExp(`${KEEP_MARK}(\\d+)\u0000`, "g");

function safe(redact: Redactor, text: string): string {
  try {
    if (!KEPT.test(text)) return redact(text);
    KEPT.lastIndex = 0;
    // the kept spans become numbered marks no pattern matches, and come back after redaction
    const kept: string[] = [];
    const marked = text.replace(KEPT, (m) => `${KEEP_MARK}${kept.push(m) - 1}\u0000`);
    const out = redact(marked);
    return out.replace(KEEP_BACK, (m, i: string) => kept[Number(i)] ?? m);
  } catch {
    return "[redaction failed]";
  } finally {
    KEPT.lastIndex = 0;
  }
}

const PATTERNS: Array<[RegExp, string]> = [
  [/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, "[EMAIL]"],
  [/\b\d{3}-\d{2}-\d{4}\b/g, "[SSN]"],
  [/\b(?:MRN|mrn|Medical Record(?: Number)?)\s*[:#=]?\s*[A-Za-z0-9-]+/g, "[MRN]"],
  // licence / passport shaped: 1-2 letters and 7+ digits, optionally a trailing letter (e.g. S99991568, X43747560X)
  [/\b[A-Z]{1,2}\d{7,}[A-Z]?\b/g, "[ID]"],
  [/(?:\+?1[-. ]?)?\(?\b\d{3}\)?[-. ]\d{3}[-. ]\d{4}\b/g, "[PHONE]"],
  [/\b\d{4}-\d{2}-\d{2}(?:T[\d:.]+(?:Z|[+-]\d{2}:\d{2})?)?\b/g, "[DATE]"],
  [/\b\d{1,2}\/\d{1,2}\/\d{2,4}\b/g, "[DATE]"],
];

/**
 * The pattern-only PHI redactor: e-mail addresses, SSNs (ddd-dd-dddd), MRN-labelled values,
 * licence/passport-shaped ids, US phone numbers, ISO and m/d/y dates. It does NOT find names or
 * addresses; the operational logger runs it before the configured redactor (e.g. the guardrails'
 * `redactPhiText`).
 */
export function basicRedactPhi(text: string): string {
  let out = text;
  for (const [re, ph] of PATTERNS) out = out.replace(re, ph);
  return out;
}
