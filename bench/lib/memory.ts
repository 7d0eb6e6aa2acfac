/**
 * Memory per open idle session: a server child opens N sessions (initialize + notifications/initialized, then nothing);
 * RSS and heap are read in the server process after forced GC, before and after, and the delta divided by N.
 */
import { closeSession, openSession } from "./mcp-http.js";
import { ServerProc } from "./procs.js";
import type { ServerConfig } from "../server.js";

export interface MemoryFigure {
  config: ServerConfig;
  sessions: number;
  /** Bytes of RSS per session ((after - before) / sessions). */
  rssPerSession: number;
  heapPerSession: number;
  /** external + arrayBuffers per session. */
  externalPerSession: number;
  rssBefore: number;
  rssAfter: number;
  heapBefore: number;
  heapAfter: number;
  openSeconds: number;
}

async function openMany(url: string, n: number, concurrency: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        await openSession(url);
      }
    }),
  );
}

/** Measures one server configuration (`mem-hmcp` or `mem-sdk`). */
export async function memoryPerSession(config: "mem-hmcp" | "mem-sdk", sessions: number): Promise<MemoryFigure> {
  const server = await ServerProc.start({ config });
  try {
    // Warm-up: load lazily imported code and grow the heap's steady state before the baseline reading.
    for (let i = 0; i < 3; i++) {
      const warm = await Promise.all(Array.from({ length: 20 }, () => openSession(server.url)));
      await Promise.all(warm.map((s) => closeSession(server.url, s)));
    }
    const before = await server.gcStats();
    if (before.sessions !== 0) throw new Error(`${config}: ${before.sessions} sessions still open after warm-up`);
    const t0 = performance.now();
    await openMany(server.url, sessions, 16);
    const openSeconds = (performance.now() - t0) / 1000;
    const after = await server.gcStats();
    if (after.sessions !== sessions) throw new Error(`${config}: expected ${sessions} open sessions, server reports ${after.sessions}`);
    return {
      config,
      sessions,
      rssPerSession: Math.round((after.rss - before.rss) / sessions),
      heapPerSession: Math.round((after.heapUsed - before.heapUsed) / sessions),
      externalPerSession: Math.round((after.external + after.arrayBuffers - before.external - before.arrayBuffers) / sessions),
      rssBefore: before.rss,
      rssAfter: after.rss,
      heapBefore: before.heapUsed,
      heapAfter: after.heapUsed,
      openSeconds: Math.round(openSeconds * 100) / 100,
    };
  } finally {
    await server.stop();
  }
}
