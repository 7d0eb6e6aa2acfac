/** Process entry of the `hmcp` bin: runs {@link main} and exits with its code. */
import { main } from "./main.js";

const code = await main(process.argv.slice(2), {
  out: (s) => process.stdout.write(s + "\n"),
  err: (s) => process.stderr.write(s + "\n"),
});
process.exitCode = code;
