/**
 * Scans the lines of a JSON Lines file with their byte offsets, so that a line can be read back later with one
 * positioned read (the trail index of ./trail.ts keeps offsets, never lines). `../audit/lines.ts` gives text only.
 */
import { open } from "node:fs/promises";

/** Bytes read per call; a longer line grows the buffer (doubling) until it fits. */
const CHUNK = 1024 * 1024;

/**
 * Calls `onLine(buf, start, end, offset)` for every newline-terminated line of `file`, in order: the line is
 * `buf[start, end)` (without its "\n") and starts at byte `offset` of the file. `buf` is reused after the call returns:
 * decode what you need inside it. Memory: one buffer of 1 MiB, or of the longest line (rounded up to a power of two).
 * @returns `torn`: the file ends with bytes after its last newline (an incomplete write), not passed to `onLine`.
 * @throws Error (ENOENT, EACCES, ...) when the file cannot be opened or read.
 */
export async function scanLines(file: string, onLine: (buf: Buffer, start: number, end: number, offset: number) => void): Promise<{ lines: number; torn: boolean }> {
  const fh = await open(file, "r");
  let lines = 0;
  try {
    let buf = Buffer.allocUnsafe(CHUNK);
    let filled = 0; // bytes of buf holding file content, from file offset `base`
    let base = 0;
    for (;;) {
      if (filled === buf.length) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, filled);
        buf = bigger;
      }
      const { bytesRead } = await fh.read(buf, filled, buf.length - filled, base + filled);
      if (bytesRead === 0) break;
      const end = filled + bytesRead;
      const view = buf.subarray(0, end);
      let start = 0;
      // search only the new bytes: the carried-over part has no newline
      let nl = view.indexOf(10, filled);
      while (nl !== -1) {
        onLine(buf, start, nl, base + start);
        lines++;
        start = nl + 1;
        nl = view.indexOf(10, start);
      }
      if (start > 0) buf.copy(buf, 0, start, end);
      base += start;
      filled = end - start;
    }
    return { lines, torn: filled > 0 };
  } finally {
    await fh.close();
  }
}
