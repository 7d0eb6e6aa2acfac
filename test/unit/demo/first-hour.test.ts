/**
 * The demo's first-hour edges: `--interactive` asks again on an answer it does not know (it took it for a cancel) and
 * shows each answer once; a DATABASE_URL that is no PostgreSQL URL, or names a server that does not answer, fails at
 * start naming DATABASE_URL (it failed after the approval step with a bare network error), never the password.
 */
import { PassThrough } from "node:stream";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { createTerminalApprover } from "../../../demo/runtime/approver.js";
import { checkDatabaseUrl } from "../../../demo/emr-store/sql.js";

const ask = { message: "Approve writing 7 clinical resource(s)?", requestedSchema: { type: "object" as const, properties: {} } };
const ctx = { signal: new AbortController().signal, server: "emr-writeback" };

describe("demo --interactive", () => {
  it("asks again on an unknown answer, then takes y / n / c; end of input cancels", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (d: Buffer) => (shown += d.toString()));
    const t = createTerminalApprover(input, output, true);
    input.write("maybe\nyes\nn\nc\n");
    expect(await t.approve(ask, ctx)).toEqual({ action: "accept", content: { approve: true } });
    expect(await t.approve(ask, ctx)).toEqual({ action: "decline" });
    expect(await t.approve(ask, ctx)).toEqual({ action: "cancel" });
    input.end();
    expect(await t.approve(ask, ctx)).toEqual({ action: "cancel" });
    t.close();
    expect(shown).toContain("please answer y (approve), n (decline) or c (cancel)");
    // each answer shown once (piped input is echoed once by the demo; a terminal echoes it itself)
    expect(shown.match(/maybe/g)).toHaveLength(1);
    expect(shown.match(/yes/g)).toHaveLength(1);
  });

  it("does not echo what a terminal already shows", async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let shown = "";
    output.on("data", (d: Buffer) => (shown += d.toString()));
    const t = createTerminalApprover(input, output, false);
    input.write("y\n");
    expect(await t.approve(ask, ctx)).toMatchObject({ action: "accept" });
    t.close();
    expect(shown).not.toMatch(/cancel\] y/);
  });
});

describe("DATABASE_URL is checked at start", () => {
  it("names DATABASE_URL for a value that is no PostgreSQL URL", async () => {
    await expect(checkDatabaseUrl("not-a-url")).rejects.toThrow(/^DATABASE_URL is not a URL/);
    await expect(checkDatabaseUrl("mysql://u:p@h/db")).rejects.toThrow(/^DATABASE_URL must start with postgres:\/\//);
  });

  it("names DATABASE_URL, host and port when the server does not answer, never the password", async () => {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
    const port = (s.address() as { port: number }).port;
    await new Promise<void>((r) => s.close(() => r()));
    const err = await checkDatabaseUrl(`postgres://demo:s3cretpw@127.0.0.1:${port}/emr`).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(new RegExp(`^DATABASE_URL: cannot use PostgreSQL at 127\\.0\\.0\\.1:${port}/emr: `));
    expect((err as Error).message).not.toContain("s3cretpw");
  });
});
