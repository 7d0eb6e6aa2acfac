/**
 * The clinician's approval on a terminal (`npm run demo -- --interactive`): each `elicitation/create` from the EMR
 * agent is asked on `output` and answered from `input` with y (approve), n (decline) or c (cancel). Any other answer
 * asks again; end of input cancels. Lines are queued, so answers typed (or piped) ahead of the question are not lost.
 */
import { createInterface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import type { ClientElicitationHandler } from "hmcp";

/** A terminal approver and the way to release its input. */
export interface TerminalApprover {
  approve: ClientElicitationHandler;
  close(): void;
}

/**
 * @param echo - write each answer after reading it: true when `input` is not a terminal (a terminal has echoed what was
 *   typed already, and echoing again showed every answer twice)
 */
export function createTerminalApprover(input: Readable, output: Writable, echo: boolean): TerminalApprover {
  const rl = createInterface({ input });
  const lines: string[] = [];
  const waiting: Array<(line: string | undefined) => void> = [];
  let ended = false;
  rl.on("line", (l) => (waiting.length ? waiting.shift()!(l) : lines.push(l)));
  rl.on("close", () => {
    ended = true;
    for (const w of waiting.splice(0)) w(undefined);
  });
  const nextLine = () => (lines.length ? Promise.resolve(lines.shift()) : ended ? Promise.resolve(undefined) : new Promise<string | undefined>((r) => waiting.push(r)));
  const approve: ClientElicitationHandler = async (params) => {
    output.write(`\napproval asked by the EMR agent (elicitation/create): ${params.message} [y = approve / n = decline / c = cancel] `);
    for (;;) {
      const line = await nextLine();
      if (echo) output.write(`${line ?? "(end of input)"}\n`);
      const a = (line ?? "c").trim().toLowerCase();
      if (a === "y" || a === "yes") return { action: "accept", content: { approve: true } };
      if (a === "n" || a === "no") return { action: "decline" };
      if (a === "c" || a === "cancel") return { action: "cancel" };
      output.write("please answer y (approve), n (decline) or c (cancel): ");
    }
  };
  return { approve, close: () => rl.close() };
}
