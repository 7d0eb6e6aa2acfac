/**
 * Sequential round-trip latency: one call at a time over one session, through the real clients (`HMCPClient.createMessage`
 * against HMCP servers, the SDK `Client.callTool` against the plain SDK baselines: v2's client against `baseline`, 1.x's
 * against `baseline-v1`). Configurations are interleaved in
 * chunks so machine noise falls on all of them alike.
 */
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "mcp-sdk-v1/client/index.js";
import { StreamableHTTPClientTransport as StreamableHTTPClientTransportV1 } from "mcp-sdk-v1/client/streamableHttp.js";
import { loadHmcp } from "./hmcp.js";
import { PATIENT } from "./fixtures.js";
import { latencySummary, round, type LatencySummary } from "./stats.js";

export interface LatencyTarget {
  name: string;
  url: string;
  /** `sdk-tool`: the SDK v2 client's `callTool`; `sdk-v1-tool`: the SDK 1.x client's (for `baseline-v1`). */
  kind: "hmcp" | "sdk-tool" | "sdk-v1-tool";
  /** Bearer token for the HMCP client's token provider. */
  token?: string;
  /** Declare the bench patient (`_meta["hmcp/patient"]`). */
  patient?: boolean;
  /** The output stage may rewrite the answer (PHI redaction): accept any text answer. */
  redacts?: boolean;
  /** Send `Request <call number>. <text>`: a new text every call, so no guardrail decision comes from a cache. */
  distinct?: boolean;
}

export interface LatencyFigure {
  name: string;
  client: string;
  ms: LatencySummary;
  /** p50 of each chunk, ms: the spread across the interleaved chunks. */
  chunkP50s: number[];
}

interface Caller {
  call(): Promise<void>;
  close(): Promise<void>;
}

async function connect(t: LatencyTarget, text: string): Promise<Caller> {
  if (t.kind === "hmcp") {
    const { HMCPClient } = await loadHmcp();
    const token = t.token;
    const client = new HMCPClient(
      { name: "bench-latency", version: "1.0.0" },
      token ? { tokenProvider: { getToken: async () => token, invalidate: () => undefined } } : {},
    );
    await client.connect({ type: "http", url: t.url });
    const params = { messages: [{ role: "user" as const, content: { type: "text" as const, text } }], maxTokens: 256 };
    const opts = t.patient ? { patient: PATIENT } : {};
    let n = 0;
    return {
      call: async () => {
        const p = t.distinct ? { ...params, messages: [{ role: "user" as const, content: { type: "text" as const, text: `Request ${++n}. ${text}` } }] } : params;
        const r = await client.createMessage(p, opts);
        if (r.content.type !== "text" || (!t.redacts && r.content.text !== text)) throw new Error(`${t.name}: unexpected answer`);
      },
      close: () => client.close(),
    };
  }
  if (t.kind === "sdk-v1-tool") {
    const v1 = new ClientV1({ name: "bench-latency", version: "1.0.0" });
    await v1.connect(new StreamableHTTPClientTransportV1(new URL(t.url)));
    return {
      call: async () => {
        const r = await v1.callTool({ name: "echo", arguments: { text } });
        const c = (r.content as Array<{ type: string; text?: string }>)[0];
        if (c?.text !== text) throw new Error(`${t.name}: unexpected answer`);
      },
      close: () => v1.close(),
    };
  }
  const client = new Client({ name: "bench-latency", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(t.url)));
  return {
    call: async () => {
      const r = await client.callTool({ name: "echo", arguments: { text } });
      const c = (r.content as Array<{ type: string; text?: string }>)[0];
      if (c?.text !== text) throw new Error(`${t.name}: unexpected answer`);
    },
    close: () => client.close(),
  };
}

/**
 * Runs `calls` sequential calls per target, interleaved in chunks of `chunk` (A B C A B C ...), after `warmup` calls each.
 */
export async function sequentialLatency(targets: LatencyTarget[], text: string, calls: number, chunk = 250, warmup = 200): Promise<LatencyFigure[]> {
  const callers = await Promise.all(targets.map((t) => connect(t, text)));
  const samples = targets.map(() => [] as number[]);
  const chunkP50s = targets.map(() => [] as number[]);
  try {
    for (const c of callers) for (let i = 0; i < warmup; i++) await c.call();
    for (let done = 0; done < calls; done += chunk) {
      const n = Math.min(chunk, calls - done);
      for (let k = 0; k < callers.length; k++) {
        const own: number[] = [];
        for (let i = 0; i < n; i++) {
          const t0 = performance.now();
          await callers[k]!.call();
          own.push(performance.now() - t0);
        }
        samples[k]!.push(...own);
        chunkP50s[k]!.push(round(latencySummary(own).p50, 3));
      }
    }
  } finally {
    await Promise.allSettled(callers.map((c) => c.close()));
  }
  return targets.map((t, k) => {
    const s = latencySummary(samples[k]!);
    return {
      name: t.name,
      client: t.kind === "hmcp" ? "HMCPClient.createMessage" : t.kind === "sdk-v1-tool" ? "SDK 1.x Client.callTool" : "SDK v2 Client.callTool",
      ms: { n: s.n, p50: round(s.p50), p90: round(s.p90), p99: round(s.p99), max: round(s.max), mean: round(s.mean) },
      chunkP50s: chunkP50s[k]!,
    };
  });
}
