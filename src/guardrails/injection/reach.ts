/**
 * How far a regex reads around the position where a match attempt starts: what lets the injection scorer search a long
 * text piece by piece (features.ts, chunked gates) and still find exactly the matches a search of the whole text finds.
 *
 * An attempt at position s (every path the engine may try, look-arounds included) reads no character before
 * s - `back` and consumes at most `f` characters plus `u` runs from s on, where a run is what one unbounded quantifier
 * (`\s*`, `\w+`, `[\w'-]+`, `=*` ...) takes: part of one maximal run of characters of one {@link RUN_CLASS} class. So the
 * attempt reads only inside [s - back, s + f + u × (longest run met)]; a slice of the text that holds that interval
 * gives the attempt the same outcome as the whole text. Supported: the syntax of the rules (no flags, no back
 * references, look-behinds without unbounded quantifiers, unbounded quantifiers only on one character class that lies
 * within a run class); anything else has no bound (`null`).
 */

/**
 * Reads of an attempt: at most `back` characters before its start, `f` characters plus `u` runs from it on. `wide`: some
 * of those runs may be word runs with `.`, `'` or `-` in them (a quantifier on `[\w'-]`, `[\w.-]` ...), else every
 * word run is one of `\w` alone.
 */
export interface RegexReach {
  f: number;
  u: number;
  back: number;
  wide: boolean;
}

/**
 * Run classes of the UTF-16 units: 1 `\w` (`[A-Za-z0-9_]`), 4 `.`, `'` and `-` (with 1: a wide word run), 2 white space
 * (what `\s` matches), 3 `=`, 0 any other. An unbounded quantifier must be on a class inside 1, 2, 3 or 1 and 4.
 */
export const RUN_CLASS = new Uint8Array(65536);

/** Every UTF-16 unit once, in order (to find what a character class matches). */
const ALL_UNITS = ((): string => {
  const parts: string[] = [];
  for (let c = 0; c < 65536; c += 4096) parts.push(String.fromCharCode(...Array.from({ length: 4096 }, (_, i) => c + i)));
  return parts.join("");
})();
{
  const ws = /\s/g;
  for (let m = ws.exec(ALL_UNITS); m !== null; m = ws.exec(ALL_UNITS)) RUN_CLASS[m.index] = 2;
  for (const ch of "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") RUN_CLASS[ch.charCodeAt(0)] = 1;
  for (const ch of ".'-") RUN_CLASS[ch.charCodeAt(0)] = 4;
  RUN_CLASS[61] = 3;
}

const classOf = new Map<string, number>();

/**
 * The run class that holds every unit `atom` (one character class, escape or literal) matches: 1, 2 or 3, 4 for units
 * of classes 1 and 4 (a wide word run), else 0.
 */
function runClassOf(atom: string): number {
  let k = classOf.get(atom);
  if (k !== undefined) return k;
  const re = new RegExp(atom, "g");
  // the classes met, as bits
  let seen = 0;
  for (let m = re.exec(ALL_UNITS); m !== null; m = re.exec(ALL_UNITS)) {
    if (m[0].length !== 1) {
      seen = 1;
      break;
    }
    seen |= 1 << RUN_CLASS[m.index]!;
  }
  k = seen === 1 << 1 || seen === 1 << 2 || seen === 1 << 3 ? 31 - Math.clz32(seen) : seen === ((1 << 1) | (1 << 4)) || seen === 1 << 4 ? 4 : 0;
  classOf.set(atom, k);
  return k;
}

/** A parsed piece: `len` what it consumes (f, u), `reach` the most it consumes on any path including look-aheads, `back`. */
interface Piece {
  lf: number;
  lu: number;
  rf: number;
  ru: number;
  back: number;
  /** Whether it holds an unbounded quantifier on a wide word run (class 4). */
  wide: boolean;
  /** The source of a one-character atom (for an unbounded quantifier on it), else null. */
  atom: string | null;
}

class Unsupported extends Error {}

const QUANTIFIER = /(?:([*+?])|\{(\d+)(?:(,)(\d*))?\})\??/y;
const ESCAPE = /\\(?:u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|c[A-Za-z]|.)/y;

const piece = (lf: number, lu: number, rf: number, ru: number, back: number, atom: string | null = null, wide = false): Piece => ({ lf, lu, rf, ru, back, wide, atom });

/** The {@link RegexReach} of `re`, or null when its syntax or flags are outside what the bound covers. */
export function regexReach(re: RegExp): RegexReach | null {
  if (re.flags.replace(/[gy]/g, "") !== "") return null;
  const src = re.source;
  let i = 0;

  function disjunction(): Piece {
    let p = sequence();
    while (src[i] === "|") {
      i++;
      const q = sequence();
      p = piece(Math.max(p.lf, q.lf), Math.max(p.lu, q.lu), Math.max(p.rf, q.rf), Math.max(p.ru, q.ru), Math.max(p.back, q.back), null, p.wide || q.wide);
    }
    return p;
  }

  function sequence(): Piece {
    let lf = 0;
    let lu = 0;
    let rf = 0;
    let ru = 0;
    let back = 0;
    let wide = false;
    let n = 0;
    let only: Piece | null = null;
    while (i < src.length && src[i] !== "|" && src[i] !== ")") {
      const t = term();
      rf = Math.max(rf, lf + t.rf);
      ru = Math.max(ru, lu + t.ru);
      lf += t.lf;
      lu += t.lu;
      back = Math.max(back, t.back);
      wide ||= t.wide;
      only = t;
      n++;
    }
    return n === 1 ? only! : piece(lf, lu, rf, ru, back, null, wide);
  }

  function term(): Piece {
    const a = atom();
    QUANTIFIER.lastIndex = i;
    const q = QUANTIFIER.exec(src);
    if (q === null) return a;
    i += q[0].length;
    let max: number;
    if (q[1] === "?") max = 1;
    else if (q[1] !== undefined) max = Infinity;
    else max = q[3] === undefined ? Number(q[2]) : q[4] === "" ? Infinity : Number(q[4]);
    if (max === Infinity) {
      // a run: one character class inside one run class
      const cls = a.atom === null ? 0 : runClassOf(a.atom);
      if (cls === 0) throw new Unsupported(`unbounded quantifier on ${src.slice(0, i)}`);
      return piece(0, 1, 0, 1, a.back, null, cls === 4);
    }
    if (max === 0) return piece(0, 0, 0, 0, a.back, null, a.wide);
    return piece(max * a.lf, max * a.lu, (max - 1) * a.lf + a.rf, (max - 1) * a.lu + a.ru, a.back, null, a.wide);
  }

  function atom(): Piece {
    const c = src[i]!;
    if (c === "(") {
      let kind = "group";
      if (src.startsWith("(?:", i)) i += 3;
      else if (src.startsWith("(?=", i) || src.startsWith("(?!", i)) {
        kind = "ahead";
        i += 3;
      } else if (src.startsWith("(?<=", i) || src.startsWith("(?<!", i)) {
        kind = "behind";
        i += 4;
      } else if (src.startsWith("(?", i)) throw new Unsupported("named group");
      else i++;
      const p = disjunction();
      if (src[i] !== ")") throw new Unsupported("unbalanced");
      i++;
      if (kind === "ahead") return piece(0, 0, p.rf, p.ru, p.back, null, p.wide);
      if (kind === "behind") {
        // read backwards from here: what it consumes, and a `\b` at its far end one more
        if (p.lu !== 0 || p.ru !== 0) throw new Unsupported("unbounded look-behind");
        return piece(0, 0, 0, 0, p.rf + p.back + 1);
      }
      return p;
    }
    if (c === "[") {
      const start = i;
      i++;
      if (src[i] === "^") i++;
      if (src[i] === "]") i++;
      while (i < src.length && src[i] !== "]") i += src[i] === "\\" ? 2 : 1;
      if (src[i] !== "]") throw new Unsupported("unclosed class");
      i++;
      return piece(1, 0, 1, 0, 0, src.slice(start, i));
    }
    if (c === "\\") {
      const e = src[i + 1];
      if (e === undefined) throw new Unsupported("trailing backslash");
      if (e === "b" || e === "B") {
        i += 2;
        // reads the character before and the one at the position
        return piece(0, 0, 1, 0, 1);
      }
      if (/[1-9k]/.test(e)) throw new Unsupported("back reference");
      ESCAPE.lastIndex = i;
      const m = ESCAPE.exec(src)!;
      i += m[0].length;
      return piece(1, 0, 1, 0, 0, m[0]);
    }
    if (c === "^" || c === "$") {
      i++;
      return piece(0, 0, 0, 0, 0);
    }
    if (c === ")" || c === "|" || c === "*" || c === "+" || c === "?") throw new Unsupported(`unexpected ${c}`);
    i++;
    // (a literal "{" that starts no quantifier is a character too)
    return piece(1, 0, 1, 0, 0, c === "." ? "." : c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"));
  }

  try {
    const p = disjunction();
    if (i !== src.length) return null;
    return { f: Math.max(p.rf, p.lf), u: Math.max(p.ru, p.lu), back: p.back, wide: p.wide };
  } catch (e) {
    if (e instanceof Unsupported) return null;
    throw e;
  }
}
