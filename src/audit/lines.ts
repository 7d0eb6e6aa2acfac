/** Streams the lines of a JSON Lines file, telling whether the last one was terminated. */
import { createReadStream } from "node:fs";

/** One line of a file: 1-based number, text without "\n", and whether a newline ended it. */
export interface FileLine {
  line: number;
  text: string;
  terminated: boolean;
}

/** Yields the lines of `file` (UTF-8). Reads in 64 KiB chunks; memory is bounded by the longest line. */
export async function* readLines(file: string): AsyncGenerator<FileLine> {
  let rest = "";
  let n = 0;
  for await (const chunk of createReadStream(file, { encoding: "utf8", highWaterMark: 64 * 1024 })) {
    rest += chunk as string;
    let i: number;
    while ((i = rest.indexOf("\n")) !== -1) {
      yield { line: ++n, text: rest.slice(0, i), terminated: true };
      rest = rest.slice(i + 1);
    }
  }
  if (rest.length > 0) yield { line: ++n, text: rest, terminated: false };
}
