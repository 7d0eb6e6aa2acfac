/**
 * Checks that a change to the prompt-injection scorer (src/guardrails/injection/) leaves every score and decision as
 * they were: the scorer of a base commit (its src/guardrails/injection/ written to a scratch folder in the repository,
 * removed at the end) and the working tree's score the same texts, with the shipped weights (guardrails/data), and every
 * assessment must be equal: score (`Object.is`, to the last bit), threshold and class, for `score`, `assess` and
 * `assessWith` (both models, as guardrails/default.yaml runs them) as a message and as a result.
 *
 * Texts: every row of ../shared/data (mtsamples transcriptions and descriptions, medquad questions and answers,
 * prompt-injections, phi-deid-physionet notes, pii-presidio-synth sentences), every Synthea bundle as JSON and each of
 * its resources as JSON (what a tool result carries), and every line of scripts/data/*.txt and
 * scripts/data/injection-corpus/*.txt (the text after a `kind<TAB>` prefix where there is one; `#` lines skipped).
 *
 * Usage: `npx tsx scripts/check-injection-identity.ts [--base <commit>]` (default HEAD). Exit code 1 on any difference.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as current from "../src/guardrails/injection/model.js";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DATA = process.env["HMCP_DATA_DIR"] ?? path.resolve(REPO, "../shared/data");
const i = process.argv.indexOf("--base");
const base = i >= 0 ? process.argv[i + 1]! : "HEAD";

// the base commit's scorer, beside the working tree's (its relative imports stay inside the folder)
const scratch = path.join(REPO, `.identity-base-${process.pid}`);
const dir = path.join(scratch, "src", "guardrails", "injection");
mkdirSync(dir, { recursive: true });
const files = execFileSync("git", ["ls-tree", "--name-only", `${base}:src/guardrails/injection`], { cwd: REPO, encoding: "utf8" }).split("\n").filter(Boolean);
for (const f of files) writeFileSync(path.join(dir, f), execFileSync("git", ["show", `${base}:src/guardrails/injection/${f}`], { cwd: REPO, encoding: "utf8", maxBuffer: 1 << 26 }));
let old: typeof current;
try {
  old = (await import(pathToFileURL(path.join(dir, "model.ts")).href)) as typeof current;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const jsonl = (set: string): Array<Record<string, unknown>> =>
  readFileSync(path.join(DATA, set, "dev.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const str = (v: unknown): string[] => (typeof v === "string" && v.length > 0 ? [v] : []);
const sets: Record<string, string[]> = {
  mtsamples: jsonl("mtsamples").flatMap((r) => [...str(r["transcription"]), ...str(r["description"])]),
  medquad: jsonl("medquad").flatMap((r) => [...str(r["question"]), ...str(r["answer"])]),
  "prompt-injections": jsonl("prompt-injections").flatMap((r) => str(r["text"])),
  "phi-deid-physionet": jsonl("phi-deid-physionet").flatMap((r) => str(r["text"])),
  "pii-presidio-synth": jsonl("pii-presidio-synth").flatMap((r) => str(r["text"])),
  synthea: readdirSync(path.join(DATA, "synthea", "bundles")).flatMap((f) => {
    const raw = readFileSync(path.join(DATA, "synthea", "bundles", f), "utf8");
    const bundle = JSON.parse(raw) as { entry?: Array<{ resource?: unknown }> };
    return [raw, ...(bundle.entry ?? []).map((e) => JSON.stringify(e.resource))];
  }),
};
const lines = (file: string): string[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() && !l.startsWith("#"))
    .map((l) => (/^[\w-]+\t/.test(l) ? l.slice(l.indexOf("\t") + 1) : l));
for (const sub of ["scripts/data", "scripts/data/injection-corpus"]) {
  const d = path.join(REPO, sub);
  if (existsSync(d)) sets[sub] = readdirSync(d).filter((f) => f.endsWith(".txt")).flatMap((f) => lines(path.join(d, f)));
}

const weights = (name: string): string => path.join(REPO, "guardrails", "data", name);
const [m, dm] = [current.loadInjectionModel(weights("injection-model.json")), current.loadInjectionModel(weights("injection-data-model.json"))];
const [om, odm] = [old.loadInjectionModel(weights("injection-model.json")), old.loadInjectionModel(weights("injection-data-model.json"))];
type A = { score: number; threshold: number; class: string };
const same = (a: A, b: A): boolean => Object.is(a.score, b.score) && a.threshold === b.threshold && a.class === b.class;
const blocks = (a: A): boolean => a.score >= a.threshold;

let texts = 0;
let scoreDiffs = 0;
let decisionDiffs = 0;
for (const [set, list] of Object.entries(sets)) {
  let diffs = 0;
  for (const text of list) {
    texts++;
    const pairs: Array<[string, A, A]> = [["score", { score: m.score(text), threshold: 0, class: "" }, { score: om.score(text), threshold: 0, class: "" }]];
    for (const kind of ["message", "result"] as const) {
      pairs.push([`assess ${kind}`, m.assess(text, kind), om.assess(text, kind)]);
      pairs.push([`data assess ${kind}`, dm.assess(text, kind), odm.assess(text, kind)]);
      const [a, d] = m.assessWith(dm, text, kind);
      const [oa, od] = om.assessWith(odm, text, kind);
      pairs.push([`assessWith ${kind}`, a, oa], [`assessWith data ${kind}`, d, od]);
    }
    const bad = pairs.filter(([, a, b]) => !same(a, b));
    if (bad.length > 0) {
      diffs++;
      if (diffs <= 5) console.log(`${set}: ${bad.map(([w, a, b]) => `${w} ${JSON.stringify(a)} != ${JSON.stringify(b)}`).join("; ")}`);
    }
    if (pairs.some(([w, a, b]) => w !== "score" && blocks(a) !== blocks(b))) decisionDiffs++;
  }
  scoreDiffs += diffs;
  console.log(`${set.padEnd(32)} ${String(list.length).padStart(6)} texts, ${diffs} with a different assessment`);
}
console.log(`base ${base}: ${texts} texts compared, ${scoreDiffs} with a different score, threshold or class, ${decisionDiffs} with a different decision`);
process.exitCode = scoreDiffs + decisionDiffs > 0 ? 1 : 0;
