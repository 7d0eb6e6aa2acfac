/**
 * A file of checkpoint anchors kept outside the audit trail (JSON Lines, one {@link CheckpointAnchor} per line, no
 * PHI): what `hmcp audit verify --anchors` and `anchors` of {@link verifyAuditFiles} read to prove what a trail held,
 * even against someone holding the signing key. Keep it where the trail's writers cannot rewrite it (another machine,
 * a write-once bucket); a local file is the simplest start.
 */
import { appendFileSync, readFileSync } from "node:fs";
import type { CheckpointAnchor } from "./chain.js";
import { HMCPConfigError } from "../protocol/config-error.js";

/**
 * An `onCheckpoint` hook (FileAuditSink, PostgresAuditSink) that appends each anchor as one JSON line to `file`
 * (created owner-only, mode 0600). Synchronous on purpose: sinks do not await the hook, and the anchor of the
 * checkpoint written at close must be on disk before the process exits (or a verifier reads the file right after
 * `close()` resolves). It runs once per `checkpointEvery` records, at rotation and at close, never per request.
 * Several processes may append to one file: each anchor is one `write` of a few hundred bytes with O_APPEND.
 * @throws HMCPConfigError when `file` is not a non-empty string or more arguments are given (the hook takes the anchor,
 *   this function does not); the hook throws Error (from node:fs) when the file cannot be written, which the sink
 *   reports as a notice and goes on.
 */
export function appendAnchorFile(file: string): (anchor: CheckpointAnchor) => void {
  // `onCheckpoint: (a) => appendAnchorFile(file, a)` would build a hook per anchor and write nothing (the public
  // signature stays `(file)`: the extra argument is read from `arguments`, as a rest parameter would show in the types)
  if (typeof file !== "string" || file === "" || arguments.length > 1) {
    throw new HMCPConfigError("appendAnchorFile(file) takes the file alone and returns the hook: onCheckpoint: appendAnchorFile(file)", "file");
  }
  return (anchor) => appendFileSync(file, `${JSON.stringify(anchor)}\n`, { mode: 0o600 });
}

/** The anchors a verifier needs: chain, seq and entry hash (`why` and `time` are kept when present). */
export type AnchorFileEntry = Pick<CheckpointAnchor, "chain" | "seq" | "hash"> & Partial<Pick<CheckpointAnchor, "why" | "time">>;

/**
 * Reads an anchors file: JSON Lines (as {@link appendAnchorFile} writes) or one JSON array of `{ chain, seq, hash }`
 * (hash: 64 lower-case hex digits). `missingOk`: a file that does not exist reads as no anchors (no checkpoint was
 * written yet); default false.
 * @throws Error `<file>: not JSON Lines (or a JSON array) of checkpoint anchors` / `<file>: entry N is not a checkpoint
 *   anchor { chain, seq, hash }`; the node:fs error (ENOENT ...) when it cannot be read.
 */
export function readAnchorFile(file: string, options: { missingOk?: boolean } = {}): AnchorFileEntry[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    if (options.missingOk === true && (e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  let items: unknown;
  try {
    items = text.trimStart().startsWith("[")
      ? JSON.parse(text)
      : text
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l) => JSON.parse(l) as unknown);
  } catch {
    throw new Error(`${file}: not JSON Lines (or a JSON array) of checkpoint anchors`);
  }
  if (!Array.isArray(items)) throw new Error(`${file}: not JSON Lines (or a JSON array) of checkpoint anchors`);
  const out: AnchorFileEntry[] = [];
  items.forEach((a, i) => {
    const x = a as { chain?: unknown; seq?: unknown; hash?: unknown; why?: unknown; time?: unknown } | null;
    if (typeof x?.chain !== "string" || !Number.isSafeInteger(x.seq) || typeof x.hash !== "string" || !/^[0-9a-f]{64}$/.test(x.hash)) {
      throw new Error(`${file}: entry ${i + 1} is not a checkpoint anchor { chain, seq, hash }`);
    }
    out.push({
      chain: x.chain,
      seq: x.seq as number,
      hash: x.hash,
      ...(typeof x.why === "string" && { why: x.why as CheckpointAnchor["why"] }),
      ...(typeof x.time === "string" && { time: x.time }),
    });
  });
  return out;
}
