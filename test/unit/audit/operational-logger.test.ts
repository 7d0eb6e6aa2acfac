import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import winston from "winston";
import { basicRedactPhi, createOperationalLogger, type LogTransport } from "hmcp";
import { tempLogDir } from "./helpers.js";

// winston's typings name the base class `transport`; at runtime it is `winston.Transport`.
const Transport = (winston as unknown as { Transport: new (opts?: object) => LogTransport }).Transport;

class Memory extends Transport {
  lines: string[] = [];
  override log(info: any, next: () => void): void {
    this.lines.push(String(info[Symbol.for("message")]));
    next();
  }
}

describe("createOperationalLogger", () => {
  it("redacts every string, nested, including error messages, and keeps structure", () => {
    const mem = new Memory();
    const logger = createOperationalLogger({ transports: [mem], redact: (t) => basicRedactPhi(t).replace(/\bAdolfo Marquardt\b/g, "[NAME]") });
    logger.warn("lookup for Adolfo Marquardt (SSN 999-65-9492) failed", {
      patient: { phone: "555-826-5697", email: "adolfo@example.org", born: "1949-08-02", tags: ["MRN: 50635536-8051"] },
      err: new Error("no record for 999-65-9492"),
      count: 3,
    });
    expect(mem.lines).toHaveLength(1);
    const line = mem.lines[0]!;
    for (const phi of ["Adolfo", "Marquardt", "999-65-9492", "555-826-5697", "adolfo@example.org", "1949-08-02", "50635536"]) expect(line).not.toContain(phi);
    const e = JSON.parse(line) as Record<string, any>;
    expect(e).toMatchObject({ level: "warn", service: "hmcp", count: 3, message: "lookup for [NAME] (SSN [SSN]) failed" });
    // keys that hold PHI by nature are replaced whole; other strings go through the redactor
    expect(e["patient"]).toEqual({ phone: "[REDACTED]", email: "[REDACTED]", born: "[DATE]", tags: ["[MRN]"] });
    expect(e["err"]).toEqual({ name: "Error", message: "no record for [SSN]" });
    expect(e["timestamp"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("keeps machine codes and the server's own loopback addresses, and still redacts what could be PHI around them", async () => {
    const { redactPhiText } = await import("hmcp");
    const mem = new Memory();
    const logger = createOperationalLogger({ transports: [mem], redact: redactPhiText });
    const err = Object.assign(new Error("duplicate key value (SQLSTATE 23505) for Jane Doe, phone 617-555-0123"), { code: "23505" });
    logger.error("store write failed at 127.0.0.1:5432 from 10.1.2.3 via [::1]:3001", { error: err, listen: "http://127.0.0.1:41234/mcp", refused: Object.assign(new Error("connect"), { code: "ECONNREFUSED" }), zip: "02139" });
    const e = JSON.parse(mem.lines[0]!) as Record<string, any>;
    expect(e["message"]).toBe("store write failed at 127.0.0.1:5432 from [IP] via [::1]:3001");
    expect(e["error"]).toEqual({ name: "Error", code: "23505", message: "duplicate key value (SQLSTATE 23505) for [NAME], phone [PHONE]" });
    expect(e["refused"]).toMatchObject({ code: "ECONNREFUSED" });
    expect(e["listen"]).toBe("http://127.0.0.1:41234/mcp");
    // only an origin or HMCP's own endpoints are kept: any other loopback path, or a look-alike host, is redacted whole
    logger.warn("GET http://127.0.0.1:8080/Patient/john.smith/02134 then http://localhost.johnsmith-02134.net/x");
    expect((JSON.parse(mem.lines[1]!) as { message: string }).message).toBe("GET [URL] then [URL]");
    expect(e["zip"]).toBe("[ZIP]");
  });

  it("keeps a server-generated session id (it correlates with the audit trail) and redacts anything else under that key", async () => {
    const { redactPhiText } = await import("hmcp");
    const mem = new Memory();
    const logger = createOperationalLogger({ transports: [mem], redact: redactPhiText });
    logger.info("request failed", { sessionId: "3f2b8c1e-9a4d-4e6b-8f0a-2c5d7e9b1a34", requestId: "3f2b8c1e-9a4d-4e6b-8f0a-2c5d7e9b1a34" });
    logger.info("request failed", { sessionId: "Adolfo Marquardt 999-65-9492" });
    const [kept, scrubbed] = mem.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(kept!["sessionId"]).toBe("3f2b8c1e-9a4d-4e6b-8f0a-2c5d7e9b1a34");
    // only the session id is exempt: a client-chosen request id still goes through the redactor
    expect(kept!["requestId"]).toBe("[ID]");
    expect(scrubbed!["sessionId"]).not.toContain("999-65-9492");
  });

  it("redacts top-level metadata keys as it redacts nested ones", async () => {
    const { redactPhiText } = await import("hmcp");
    const mem = new Memory();
    const logger = createOperationalLogger({ transports: [mem], redact: redactPhiText });
    logger.warn("x", { "Marcos Delagarza 123-45-6789": 2, ssn: "123-45-6789", nested: { "Marcos Delagarza 123-45-6789": 3 } });
    const line = mem.lines[0]!;
    for (const phi of ["Marcos", "Delagarza", "123-45-6789"]) expect(line).not.toContain(phi);
    const e = JSON.parse(line) as Record<string, unknown>;
    expect(e).toMatchObject({ "[NAME] [SSN]": 2, ssn: "[REDACTED]", nested: { "[NAME] [SSN]": 3 }, message: "x", level: "warn", service: "hmcp" });
  });

  it("writes bytes and other non-plain objects as placeholders, never byte by byte", () => {
    const mem = new Memory();
    const logger = createOperationalLogger({ transports: [mem] });
    const bytes = Buffer.from("Patient Marcos Delagarza SSN 123-45-6789");
    class Visit {
      patient = "Marcos Delagarza";
    }
    logger.warn("nested", {
      buffer: bytes,
      u8: new Uint8Array(bytes),
      u16: new Uint16Array(bytes.buffer, bytes.byteOffset, 4),
      arrayBuffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
      view: new DataView(new Uint8Array(bytes).buffer),
      list: [bytes, { inner: new Uint8Array(bytes) }],
      map: new Map([["patient", "Marcos Delagarza"]]),
      visit: new Visit(),
      when: new Date(Date.UTC(1949, 7, 2)),
      bare: Object.assign(Object.create(null) as object, { note: "ok" }),
    });
    logger.warn("metadata argument is a buffer", bytes);
    logger.warn("metadata argument is a typed array", new Uint8Array(bytes));
    logger.warn(bytes as never);
    expect(mem.lines).toHaveLength(4);
    for (const line of mem.lines) {
      for (const phi of ["Marcos", "Delagarza", "123-45-6789"]) expect(line).not.toContain(phi);
      // "Patient" is 80,97,116,105 in bytes
      expect(line).not.toMatch(/80,97,116|"0":80/);
    }
    const [nested, metaBuffer, metaTyped, message] = mem.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(nested).toMatchObject({
      buffer: "[binary]",
      u8: "[binary]",
      u16: "[binary]",
      arrayBuffer: "[binary]",
      view: "[binary]",
      list: ["[binary]", { inner: "[binary]" }],
      map: "[object]",
      visit: "[object]",
      when: "[DATE]",
      bare: { note: "ok" },
    });
    for (const e of [metaBuffer!, metaTyped!]) expect(Object.keys(e).sort()).toEqual(["level", "message", "service", "timestamp"]);
    expect(message!["message"]).toBe("[binary]");
  });

  it("writes an Error as its redacted message, name and code, never its stack, however it is logged", () => {
    const mem = new Memory();
    const logger = createOperationalLogger({ transports: [mem] });
    const err = Object.assign(new Error("no record for SSN 999-65-9492"), { code: "E_LOOKUP" });
    err.stack = "Error: no record for SSN 999-65-9492\n    at lookup (/srv/patient-999-65-9492.js:1:1)";
    logger.error("lookup failed", err); // the Error as the metadata: winston copies its message and stack into the entry
    logger.error(err); // the Error as the entry itself
    logger.child({ requestId: "r-1" }).error(err); // a child logger clones the Error's message and stack
    logger.error("lookup failed", { cause: err });
    expect(mem.lines).toHaveLength(4);
    for (const line of mem.lines) {
      expect(line).not.toContain("999-65-9492");
      expect(line).not.toContain("/srv/");
      expect(line).not.toMatch(/"stack"/);
    }
    const [asMeta, asEntry, fromChild, asCause] = mem.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(asMeta).toMatchObject({ level: "error", message: "lookup failed no record for SSN [SSN]", code: "E_LOOKUP" });
    expect(asEntry).toMatchObject({ level: "error", message: "no record for SSN [SSN]", error: { name: "Error", code: "E_LOOKUP", message: "no record for SSN [SSN]" } });
    expect(fromChild).toMatchObject({ level: "error", message: "no record for SSN [SSN]", requestId: "r-1" });
    expect(asCause!["cause"]).toEqual({ name: "Error", code: "E_LOOKUP", message: "no record for SSN [SSN]" });
  });

  it("redacts an Error's name and code too, a caller's timestamp and service, and an uncaught exception's stack and trace", () => {
    // a transport that takes the exception handlers' entries (winston registers its process listeners for it)
    const mem = new (Memory as unknown as new (o: object) => Memory)({ handleExceptions: true, handleRejections: true });
    const logger = createOperationalLogger({ transports: [mem] });
    logger.exceptions.unhandle();
    logger.rejections.unhandle();
    class LookupError extends Error {}
    const err = Object.assign(new LookupError("no record"), { code: "E 999-65-9492" });
    err.name = "LookupError(999-65-9492)";
    err.stack = "LookupError: no record\n    at lookup (/srv/patients/smith-999-65-9492.js:1:1)";
    logger.error(err);
    logger.error("failed", { cause: err });
    logger.info("x", { timestamp: "SSN 999-65-9492", service: { ssn: "999-65-9492", note: "born 1949-08-02" } });
    // what winston's uncaughtException / unhandledRejection handlers log
    logger.log(logger.exceptions.getAllInfo(err) as winston.LogEntry);
    expect(mem.lines).toHaveLength(4);
    for (const line of mem.lines) {
      expect(line).not.toMatch(/999-65-9492|1949-08-02|\/srv\//);
      expect(line).not.toMatch(/"stack"|"trace"/);
    }
    const [asEntry, asCause, stamped, uncaught] = mem.lines.map((l) => JSON.parse(l) as Record<string, any>);
    expect(asEntry!["error"]).toEqual({ name: "LookupError([SSN])", code: "E [SSN]", message: "no record" });
    expect(asCause!["cause"]).toEqual({ name: "LookupError([SSN])", code: "E [SSN]", message: "no record" });
    expect(stamped!["timestamp"]).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    expect(stamped!["service"]).toEqual({ ssn: "[REDACTED]", note: "born [DATE]" });
    expect(uncaught).toMatchObject({ level: "error", exception: true, message: "uncaughtException: no record" });
    expect(uncaught!["process"]).toBeTypeOf("object");
    expect(uncaught!["process"]).not.toHaveProperty("argv");
  });

  it("redacts on a copy at the logger's entrance: the caller's objects stay as they were, and write(), a replaced format and the raw metadata see no PHI", () => {
    const mem = new Memory();
    const seen: unknown[] = [];
    class Raw extends Transport {
      override log(info: any, next: () => void): void {
        seen.push(info[Symbol.for("splat")], JSON.stringify(info));
        next();
      }
    }
    const logger = createOperationalLogger({ transports: [mem, new Raw()] });
    const meta = { patient: { ssn: "999-65-9492", note: "called 555-826-5697" } };
    logger.info("x", meta);
    expect(meta).toEqual({ patient: { ssn: "999-65-9492", note: "called 555-826-5697" } });
    const entry = { level: "info", message: "SSN 999-65-9492" };
    logger.info(entry);
    // winston itself adds the level and default metadata to an entry object; the redaction leaves it as it was
    expect(entry.message).toBe("SSN 999-65-9492");
    logger.write({ level: "warn", [Symbol.for("level")]: "warn", message: "written directly, SSN 999-65-9492" });
    // a format set later has no redaction step of its own; the entries reaching it are already redacted
    logger.format = winston.format.json();
    logger.warn("after the format changed, SSN 999-65-9492");
    expect(mem.lines).toHaveLength(4);
    expect(seen.filter((x) => x !== undefined && typeof x !== "string")).toEqual([]);
    const raw = seen.filter((x): x is string => typeof x === "string");
    expect(raw).toHaveLength(4);
    for (const line of [...mem.lines, ...raw]) expect(line).not.toMatch(/999-65-9492|555-826-5697/);
    expect(JSON.parse(mem.lines[2]!)).toMatchObject({ level: "warn", message: "written directly, SSN [SSN]" });
  });

  it("with no transport at all, winston's warning prints the entry redacted", () => {
    const printed: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
      printed.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
    });
    try {
      createOperationalLogger({ transports: [], console: false }).warn("SSN 999-65-9492", { phone: "555-826-5697", note: "born 1949-08-02" });
    } finally {
      spy.mockRestore();
    }
    expect(printed.join("\n")).toContain("no transports");
    expect(printed.join("\n")).not.toMatch(/999-65-9492|555-826-5697|1949-08-02/);
  });

  it("always runs the pattern pass before the configured redactor", () => {
    const mem = new Memory();
    createOperationalLogger({ transports: [mem], redact: (t) => t }).info("licence S99991568 passport X43747560X phone 555-826-5697 mrn=50635536-8051-4085-bfd4-511a05062ac2", {
      meta: { content: "anything at all", note: "ok" },
    });
    const e = JSON.parse(mem.lines[0]!) as { message: string; meta: unknown };
    expect(e.message).toBe("licence [ID] passport [ID] phone [PHONE] [MRN]");
    expect(e.meta).toEqual({ content: "[REDACTED]", note: "ok" });
  });

  it("honours the level and refuses bad options", () => {
    const mem = new Memory();
    const logger = createOperationalLogger({ level: "warn", transports: [mem] });
    logger.info("not written");
    logger.error("written");
    expect(mem.lines).toHaveLength(1);
    expect(() => createOperationalLogger({ level: "loud" })).toThrow(/unknown level 'loud'/);
    expect(() => createOperationalLogger({ redact: "yes" as never })).toThrow(/redact/);
  });

  it("a redactor that throws does not leak the text", () => {
    const mem = new Memory();
    createOperationalLogger({ transports: [mem], redact: () => { throw new Error("boom"); } }).info("Adolfo Marquardt");
    expect(mem.lines[0]).not.toContain("Adolfo");
  });

  it("a file transport that cannot write (its folder is not a folder) is dropped: the process goes on and the other transports keep logging", async () => {
    const mem = new Memory();
    const notAFolder = path.join(await tempLogDir("not-a-folder"), "file");
    await writeFile(notAFolder, "");
    const logger = createOperationalLogger({ transports: [mem], file: path.join(notAFolder, "hmcp.log") });
    logger.warn("first");
    // the file transport's open fails (ENOTDIR) and is reported on the logger: without a listener Node would throw it
    await vi.waitFor(() => expect(logger.transports.some((t) => t instanceof winston.transports.File)).toBe(false));
    logger.warn("second");
    expect(mem.lines.map((l) => (JSON.parse(l) as { message: string }).message)).toEqual(["first", "second"]);
  });

  it("a transport that fails is closed once when it is dropped (a file transport's stream is not left open), and reported once by code", async () => {
    class Failing extends Memory {
      closes = 0;
      override log(_info: any, next: () => void): void {
        this.emit("error", Object.assign(new Error("disk full at /var/log/hmcp"), { code: "ENOSPC" }));
        next();
      }
      override close(): void {
        this.closes++;
      }
    }
    const mem = new Memory();
    const failing = new Failing();
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      const logger = createOperationalLogger({ transports: [mem, failing] });
      logger.warn("first");
      await vi.waitFor(() => expect(logger.transports).not.toContain(failing));
      // winston-transport closes a transport when the logger unpipes it
      expect(failing.closes).toBe(1);
      logger.warn("second");
      expect(mem.lines).toHaveLength(2);
      const lines = stderr.mock.calls.map((c) => String(c[0])).filter((l) => l.includes("transport failed"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('"code":"ENOSPC"');
      expect(lines[0]).not.toContain("/var/log");
    } finally {
      stderr.mockRestore();
    }
  });

  it("an error of the logger's own stream (no transport) is reported once on stderr, by code only", async () => {
    const mem = new Memory();
    const logger = createOperationalLogger({ transports: [mem] });
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      logger.end();
      // written after end(): the logger's stream fails with ERR_STREAM_WRITE_AFTER_END, with no transport to drop
      logger.warn("after the end: Adolfo Marquardt");
      logger.warn("again");
      await vi.waitFor(() => expect(stderr.mock.calls.some((c) => String(c[0]).includes("operational logger failed"))).toBe(true));
      await new Promise((resolve) => setImmediate(resolve));
      const lines = stderr.mock.calls.map((c) => String(c[0])).filter((l) => l.includes("operational logger failed"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('"code":"ERR_STREAM_WRITE_AFTER_END"');
      expect(lines[0]).not.toContain("Adolfo");
    } finally {
      stderr.mockRestore();
    }
  });

  it("writes redacted JSON Lines to a file", async () => {
    const dir = await tempLogDir("oplog");
    const file = path.join(dir, "operational.log");
    const logger = createOperationalLogger({ file });
    const transport = logger.transports[0]!;
    // the File transport emits "finish" once its file stream has flushed
    const done = new Promise<void>((resolve) => transport.once("finish", () => resolve()));
    logger.info("called back 555-826-5697", { session: "s-1" });
    logger.end();
    await done;
    const text = await readFile(file, "utf8");
    expect(text).toContain('"message":"called back [PHONE]"');
    expect(text).not.toContain("555-826-5697");
  });
});
