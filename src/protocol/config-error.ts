/**
 * The one error for bad options, thrown at construction by every public constructor and factory (server, client,
 * HTTP app, authenticators, token providers, audit sinks, handler registration), and the check for unknown option
 * names with a "did you mean" hint: in JavaScript, or where types are not checked, a misspelt option
 * (`onElicitaton`) would otherwise be ignored without a word and its default silently used.
 */

/** Error thrown at construction for invalid options. `key` is the dotted path of the offending option. */
export class HMCPConfigError extends TypeError {
  constructor(
    message: string,
    readonly key: string,
  ) {
    super(message);
    this.name = "HMCPConfigError";
  }
}

/** Levenshtein distance of two short strings, case-insensitive (option names: a few dozen characters). */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let prev = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const cur = [i];
    for (let j = 1; j <= y.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (x[i - 1] === y[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[y.length]!;
}

/**
 * The known name closest to `key`, when it is close enough to be a typo: the first known name that `key` (4 or more
 * characters) starts or ends the other's prefix of, else the nearest by edit distance, at most 1 edit for names of
 * up to 4 characters, 2 up to 8, 3 beyond (case differences count as none). `undefined` when none is.
 */
export function closestKey(key: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  const lower = key.toLowerCase();
  for (const k of known) {
    // a cut-short or over-long name ("bodyLimit" for "bodyLimitBytes") is a typo too
    if (key.length >= 4 && (k.toLowerCase().startsWith(lower) || lower.startsWith(k.toLowerCase()))) return k;
    const d = distance(key, k);
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  const limit = key.length <= 4 ? 1 : key.length <= 8 ? 2 : 3;
  return bestD <= limit ? best : undefined;
}

/** The message of an unknown option: `<where>: unknown option '<key>'`, with `; did you mean '<k>'?` when one is close. */
export function unknownOptionMessage(where: string, key: string, known: Iterable<string>): string {
  const leaf = key.slice(key.lastIndexOf(".") + 1);
  const near = closestKey(leaf, known);
  return `${where}: unknown option '${key}'${near !== undefined ? `; did you mean '${near}'?` : ""}`;
}

/**
 * Refuses an options object holding a name outside `known` (own enumerable keys; `undefined` values count too: a
 * misspelt key set to `undefined` is still a misspelling).
 * @param where who checks, e.g. `"HMCPClient options"`; starts the message
 * @param prefix the dotted path of `options` inside the caller's options, for nested objects (default: none)
 * @throws HMCPConfigError naming the first unknown key (its `key` is the dotted path) and the closest known name
 */
export function refuseUnknownOptions(where: string, options: object | undefined | null, known: ReadonlySet<string> | readonly string[], prefix = ""): void {
  if (options === undefined || options === null) return;
  const set = known instanceof Set ? known : new Set(known as readonly string[]);
  for (const k of Object.keys(options)) {
    if (set.has(k)) continue;
    const key = prefix ? `${prefix}.${k}` : k;
    throw new HMCPConfigError(unknownOptionMessage(where, key, set), key);
  }
}
