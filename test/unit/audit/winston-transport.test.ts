import { readdir } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import winston from "winston";
import { FileAuditSink, createAuditTransport, createOperationalLogger, queryAudit, verifyAuditFiles } from "hmcp";
import { sampleRecord, tempLogDir } from "./helpers.js";

describe("createAuditTransport", () => {
  it("carries audit records from a winston logger into the chained sink; other entries are ignored", async () => {
    const dir = await tempLogDir("audit-winston");
    const sink = await FileAuditSink.open({ dir, signing: false });
    const errors: Error[] = [];
    const logger = winston.createLogger({ transports: [createAuditTransport({ sink, onError: (e) => errors.push(e) })] });
    logger.info("request", { audit: sampleRecord(1) });
    logger.info("unrelated operational line");
    logger.info("request", { audit: sampleRecord(2) });
    logger.info("bad", { audit: { not: "a record" } });
    // winston delivers asynchronously; wait for the logger to drain before flushing the sink
    await new Promise<void>((resolve) => {
      logger.on("finish", () => resolve());
      logger.end();
    });
    await sink.close();
    const files = (await readdir(dir)).filter((f) => f.endsWith(".jsonl")).map((f) => path.join(dir, f));
    expect((await queryAudit(files)).map((r) => r.requestId)).toEqual([1, 2]);
    expect((await verifyAuditFiles(files)).ok).toBe(true);
    expect(errors.map((e) => e.name)).toEqual(["AuditSinkError"]);
  });

  it("is refused by the operational logger, whose redaction would rewrite the records", async () => {
    const sink = await FileAuditSink.open({ dir: await tempLogDir("audit-winston-refused"), signing: false });
    const transport = createAuditTransport({ sink });
    const refused = /audit transport.*cannot be a transport of the operational logger/;
    expect(() => createOperationalLogger({ transports: [transport] })).toThrow(TypeError);
    expect(() => createOperationalLogger({ transports: [transport], console: false })).toThrow(refused);
    const logger = createOperationalLogger({ transports: [], console: false });
    expect(() => logger.add(transport)).toThrow(refused);
    expect(() => logger.configure({ transports: [transport] })).toThrow(refused);
    expect(() => logger.configure({ transports: transport })).toThrow(refused);
    // pipe() is how add() attaches a transport; called directly it is refused as well
    expect(() => logger.pipe(transport)).toThrow(refused);
    expect(logger.transports).toEqual([]);
    await sink.close();
  });
});
