/** Process entry of the `hmcp` bin: runs {@link main} and exits with its code. */
import { main } from "./main.js";

// A reader that stops early (`hmcp audit query ... | head`) closes the pipe: stop writing and exit quietly, as a
// command-line tool does, instead of crashing with an unhandled EPIPE and its stack trace
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code !== "EPIPE") throw e;
    process.exit(process.exitCode ?? 0);
  });
}

const code = await main(process.argv.slice(2), {
  out: (s) => process.stdout.write(s + "\n"),
  err: (s) => process.stderr.write(s + "\n"),
});
process.exitCode = code;
