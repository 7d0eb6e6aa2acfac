/**
 * Maps positions in generated code back to the TypeScript source with the inline source map tsx attaches
 * (Source Map Revision 3, base64 VLQ mappings). Used to give CPU profile frames real `file:line` positions.
 */
import type { Session } from "node:inspector/promises";

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64_INDEX = new Map([...B64].map((c, i) => [c, i]));

/** One mapping segment: generated column → original line/column (all 0-based). */
export interface Segment {
  genCol: number;
  srcLine: number;
  srcCol: number;
}

function decodeVlq(s: string): number[] {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (const ch of s) {
    const digit = B64_INDEX.get(ch);
    if (digit === undefined) throw new Error(`bad VLQ character ${ch}`);
    value += (digit & 31) << shift;
    if (digit & 32) shift += 5;
    else {
      out.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return out;
}

/** Decodes the `mappings` of a source map into segments per generated line (single-source maps). */
export function decodeMappings(mappings: string): Segment[][] {
  const lines: Segment[][] = [];
  let srcLine = 0;
  let srcCol = 0;
  for (const line of mappings.split(";")) {
    const segs: Segment[] = [];
    let genCol = 0;
    for (const seg of line.split(",")) {
      if (!seg) continue;
      const v = decodeVlq(seg);
      genCol += v[0]!;
      if (v.length >= 4) {
        srcLine += v[2]!;
        srcCol += v[3]!;
        segs.push({ genCol, srcLine, srcCol });
      }
    }
    lines.push(segs);
  }
  return lines;
}

/** The decoded inline source map of a generated script, or undefined when it carries none. */
export function inlineSourceMap(code: string): Segment[][] | undefined {
  const m = /\/\/# sourceMappingURL=data:application\/json(?:;charset=[^;,]+)?;base64,([A-Za-z0-9+/=]+)\s*$/.exec(code);
  if (!m) return undefined;
  const map = JSON.parse(Buffer.from(m[1]!, "base64").toString("utf8")) as { mappings: string };
  return decodeMappings(map.mappings);
}

/** Original 0-based line and column of a generated 0-based position (the nearest segment at or before it). */
export function originalPosition(lines: Segment[][], line: number, column: number): { line: number; column: number } | undefined {
  const segs = lines[line];
  if (!segs?.length) return undefined;
  let lo = 0;
  let hi = segs.length - 1;
  let best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (segs[mid]!.genCol <= column) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  const s = segs[Math.max(best, 0)]!;
  return { line: s.srcLine, column: s.srcCol };
}

/** The part of a V8 CPU profile this module rewrites. */
export interface ProfileFrames {
  nodes: Array<{ callFrame: { scriptId: string; url: string; lineNumber: number; columnNumber: number } }>;
}

/**
 * Rewrites the positions of the frames of `root`'s own files (tsx-generated code, not node_modules) to TypeScript
 * source lines, using each script's inline source map, so a profile names real `file:line`s. Needs the inspector
 * session of the profiled process.
 */
export async function mapProfileToSource(session: Session, profile: ProfileFrames, root: string): Promise<void> {
  await session.post("Debugger.enable");
  const maps = new Map<string, Segment[][] | undefined>();
  for (const node of profile.nodes) {
    const cf = node.callFrame;
    if (!cf.url.startsWith(`file://${root}/`) || cf.url.includes("/node_modules/") || cf.lineNumber < 0) continue;
    if (!maps.has(cf.scriptId)) {
      try {
        const { scriptSource } = await session.post("Debugger.getScriptSource", { scriptId: cf.scriptId });
        maps.set(cf.scriptId, inlineSourceMap(scriptSource));
      } catch {
        maps.set(cf.scriptId, undefined);
      }
    }
    const map = maps.get(cf.scriptId);
    const pos = map && originalPosition(map, cf.lineNumber, cf.columnNumber);
    if (pos) {
      cf.lineNumber = pos.line;
      cf.columnNumber = pos.column;
    }
  }
  await session.post("Debugger.disable");
}
