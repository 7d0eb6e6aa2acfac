/**
 * Component benchmarks measured directly: the guardrail pipeline per 4 KB message (with and without PHI, input and
 * output stage of guardrails/default.yaml) and JWT bearer verification (cold: full ES256 signature and claim checks;
 * cached: the authenticator's verified-token cache). Prints JSON; bench/run.ts runs it in its own process.
 *
 * Usage: `npx tsx bench/components.ts [--quick] [--skip-guardrails]` (the runner skips the guardrail part when
 * bench/guardrails.ts, the guardrail component's own benchmark, is in the tree and reports).
 */
import path from "node:path";
import type { GuardrailRunner } from "../src/index.js";
import { ensureBuilt, loadHmcp } from "./lib/hmcp.js";
import { AUDIENCE, ISSUER, REPO_ROOT, benchKeys, clinicalText, phiText, signAccessToken } from "./lib/fixtures.js";
import { latencySummary, round, type LatencySummary } from "./lib/stats.js";

export interface GuardrailFigure {
  stage: "input" | "output";
  phi: boolean;
  chars: number;
  /** µs per message. */
  us: LatencySummary;
  action: string;
  entityTypes: string[];
}

export interface TokenFigure {
  mode: "cold" | "cached";
  /** µs per `check()` (token extraction, verification or cache hit, scope checks). */
  us: LatencySummary;
}

export interface ComponentResults {
  guardrails: GuardrailFigure[] | { error: string } | { skipped: string };
  textSources: { benign: string; phi: string };
  tokens: TokenFigure[];
}

async function loadPolicy(): Promise<GuardrailRunner> {
  const { loadGuardrailPolicy } = await loadHmcp();
  return loadGuardrailPolicy(path.join(REPO_ROOT, "guardrails/default.yaml"));
}

async function timeCalls(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await fn();
    out[i] = Number(process.hrtime.bigint() - t) / 1000;
  }
  return out;
}

const roundSummary = (s: LatencySummary): LatencySummary => ({
  n: s.n,
  p50: round(s.p50, 1),
  p90: round(s.p90, 1),
  p99: round(s.p99, 1),
  max: round(s.max, 1),
  mean: round(s.mean, 1),
});

/** Guardrail pipeline µs per 4 KB message, both stages, with and without PHI. */
export async function benchGuardrails(n: number, chars = 4096): Promise<{ figures: GuardrailFigure[]; sources: { benign: string; phi: string } }> {
  const runner = await loadPolicy();
  const benign = clinicalText(chars);
  const phi = phiText(chars);
  const figures: GuardrailFigure[] = [];
  for (const stage of ["input", "output"] as const) {
    for (const [withPhi, text] of [
      [false, benign.text],
      [true, phi.text],
    ] as const) {
      const payload =
        stage === "input"
          ? { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 256 }
          : { role: "assistant", model: "bench-agent", content: { type: "text", text }, stopReason: "endTurn" };
      const ctx = { stage, side: "server" as const, method: "sampling/createMessage" };
      let last = await runner.evaluate(stage, payload, ctx);
      await timeCalls(Math.min(200, n), () => runner.evaluate(stage, payload, ctx));
      const us = await timeCalls(n, async () => {
        last = await runner.evaluate(stage, payload, ctx);
      });
      figures.push({
        stage,
        phi: withPhi,
        chars: text.length,
        us: roundSummary(latencySummary(us)),
        action: last.action,
        entityTypes: [...new Set(last.decisions.flatMap((d) => d.entityTypes ?? []))].sort(),
      });
    }
  }
  return { figures, sources: { benign: benign.source, phi: phi.source } };
}

/** Bearer check µs: cold (cache off: ES256 signature + claims every time) and cached (same token, cache on). */
export async function benchTokens(nCold: number, nCached: number): Promise<TokenFigure[]> {
  const { createJwtBearerAuthenticator } = await loadHmcp();
  const { privateKey, publicJwk } = await benchKeys();
  const token = await signAccessToken(privateKey);
  const request = { authorization: [`Bearer ${token}`], url: "/mcp", contentType: "application/json" };
  const jwks = { keys: { keys: [publicJwk] } };
  const cold = createJwtBearerAuthenticator({ issuer: ISSUER, audience: AUDIENCE, jwks, cache: false });
  const cached = createJwtBearerAuthenticator({ issuer: ISSUER, audience: AUDIENCE, jwks });
  const first = await cold.check(request);
  if (!first.ok) throw new Error(`bench token refused: ${first.description}`);
  await timeCalls(100, () => cold.check(request));
  const coldUs = await timeCalls(nCold, () => cold.check(request));
  await cached.check(request);
  await timeCalls(1000, () => cached.check(request));
  const cachedUs = await timeCalls(nCached, () => cached.check(request));
  return [
    { mode: "cold", us: roundSummary(latencySummary(coldUs)) },
    { mode: "cached", us: roundSummary(latencySummary(cachedUs)) },
  ];
}

export async function benchComponents(quick: boolean, skipGuardrails = false): Promise<ComponentResults> {
  let guardrails: ComponentResults["guardrails"];
  let textSources = { benign: "", phi: "" };
  if (skipGuardrails) guardrails = { skipped: "measured by bench/guardrails.ts" };
  else
    try {
      const g = await benchGuardrails(quick ? 500 : 2000);
      guardrails = g.figures;
      textSources = g.sources;
    } catch (error) {
      guardrails = { error: (error as Error).message };
    }
  const tokens = await benchTokens(quick ? 500 : 2000, quick ? 5000 : 20000);
  return { guardrails, textSources, tokens };
}

const isMain = process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(REPO_ROOT, "bench/components.ts");
if (isMain) {
  ensureBuilt();
  const results = await benchComponents(process.argv.includes("--quick"), process.argv.includes("--skip-guardrails"));
  if (process.send) process.send({ type: "result", results }, () => process.exit(0));
  else console.log(JSON.stringify(results, null, 2));
}
