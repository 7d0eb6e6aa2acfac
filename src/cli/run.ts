/** Process entry of the `hmcp` bin: runs {@link main} and exits with its code. */
import { main } from "./main.js";

// A reader that stops early (`hmcp audit query ... | head`) closes the pipe: stop writing and exit quietly with the
// status a shell gives a command ended by SIGPIPE (141 = 128 + 13), as command-line tools do, instead of crashing
// with an unhandled EPIPE and its stack trace; a long-running command (`audit serve`) whose output pipe closed thus
// still ends with a failure status (a supervisor restarts it)
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code !== "EPIPE") throw e;
    process.exit(141);
  });
}

const code = await main(process.argv.slice(2), {
  out: (s) => process.stdout.write(s + "\n"),
  err: (s) => process.stderr.write(s + "\n"),
});
process.exitCode = code;
