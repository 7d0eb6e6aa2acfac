/**
 * Trains the prompt-injection classifier shipped as guardrails/data/injection-model.json.
 *
 * Data (../shared/data, development splits only; see each README):
 * - prompt-injections/dev.jsonl (deepset/prompt-injections, Apache-2.0): injection (1) / benign (0);
 * - benign clinical text as extra negatives: mtsamples/dev.jsonl transcriptions (CC0),
 *   medquad/dev.jsonl questions and answers (CC BY 4.0), and FHIR JSON (each encounter of the Synthea
 *   development bundles in synthea/bundles, Apache-2.0, as a collection Bundle), cut into the same windows
 *   the detector scores;
 * - clinical agent messages written for this project: benign orders, corrections, approvals and questions
 *   (scripts/data/clinical-agent-messages.txt) as negatives weighted like the deepset benign rows, because
 *   narrative notes do not teach the model that "OK to write?" or "Ignore the previous lab value" are benign;
 *   and injections phrased for a clinical agent (scripts/data/clinical-agent-injections.txt) as positives, so
 *   that those negatives do not teach it that clinical vocabulary is always benign.
 * Model: L2-regularised logistic regression (AdaGrad) over hashed features (src/guardrails/injection/features.ts).
 * The decision threshold and the L2 strength are chosen by 5-fold cross-validation (folds by row hash),
 * so the shipped threshold reflects held-out, not training, performance. Only weights leave this script.
 * At scoring time a window with fewer than MIN_FEATURES features is weighted as if it had MIN_FEATURES (the model's
 * `minFeatures`), so one- or two-word texts ("yes", "stop") are not amplified past the threshold; the cross-validation
 * scores held-out rows the same way. Set HMCP_MIN_FEATURES to compare (0 = off).
 *
 * Run: npx tsx scripts/train-injection.ts [dataDir]
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { DEFAULT_BUCKETS, forEachFeature, hardRuleHit, normalizeForInjection, ruleHits, rulesIn, windows } from "../src/guardrails/injection/features.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dataDir = path.resolve(process.argv[2] ?? path.join(repo, "../shared/data"));
const B = DEFAULT_BUCKETS;
/** Run-time floor on a window's feature count (see the header): 30 changed no cross-validated figure at the chosen threshold (40 lost 2 of 153 injections). */
const MIN_FEATURES = Number(process.env["HMCP_MIN_FEATURES"] ?? 30);

interface Doc {
  group: "pi" | "clin" | "instr";
  text: string;
  /** A hard phrase rule fires: the detector scores 1 whatever the model says. */
  hard: boolean;
  label: 0 | 1;
  fold: number;
  /** sparse vectors, one per window */
  wins: Array<{ idx: Int32Array; val: Float32Array; n: number }>;
}

function fold(key: string): number {
  return createHash("sha256").update(key).digest().readUInt32BE(0) % 5;
}

function vectorize(text: string): Doc["wins"] {
  const t = normalizeForInjection(text);
  const hits = ruleHits(t);
  const out: Doc["wins"] = [];
  for (const [a, b] of windows(t)) {
    const counts = new Map<number, number>();
    const n = forEachFeature(t, a, b, rulesIn(hits, a, b), B, (k) => counts.set(k, (counts.get(k) ?? 0) + 1));
    if (n === 0) continue;
    const idx = new Int32Array(counts.size);
    const val = new Float32Array(counts.size);
    let i = 0;
    const norm = 1 / Math.sqrt(n);
    for (const [k, c] of counts) {
      idx[i] = k;
      val[i] = c * norm;
      i++;
    }
    out.push({ idx, val, n });
  }
  return out;
}

function jsonl<T>(file: string): T[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

const docs: Doc[] = [];
for (const r of jsonl<{ id: string; text: string; label: 0 | 1 }>(path.join(dataDir, "prompt-injections/dev.jsonl"))) {
  docs.push({ group: "pi", text: r.text, hard: hardRuleHit(normalizeForInjection(r.text)), label: r.label, fold: fold(r.id), wins: vectorize(r.text) });
}
for (const r of jsonl<{ id: string; transcription: string }>(path.join(dataDir, "mtsamples/dev.jsonl"))) {
  docs.push({ group: "clin", text: "", hard: hardRuleHit(normalizeForInjection(r.transcription)), label: 0, fold: fold(r.id), wins: vectorize(r.transcription) });
}
for (const r of jsonl<{ id: string; question: string; answer: string | null; source_file: string }>(path.join(dataDir, "medquad/dev.jsonl"))) {
  const f = fold(r.source_file);
  docs.push({ group: "clin", text: "", hard: hardRuleHit(normalizeForInjection(r.question)), label: 0, fold: f, wins: vectorize(r.question) });
  if (r.answer) docs.push({ group: "clin", text: "", hard: hardRuleHit(normalizeForInjection(r.answer)), label: 0, fold: f, wins: vectorize(r.answer) });
}
// FHIR JSON, the traffic an HMCP agent carries most: each encounter of the Synthea development bundles with the
// resources that reference it, as the demo's orchestrator sends it (a collection Bundle); folds by patient file
for (const f of readdirSync(path.join(dataDir, "synthea/bundles")).filter((x) => x.endsWith(".json")).sort()) {
  const bundle = JSON.parse(readFileSync(path.join(dataDir, "synthea/bundles", f), "utf8")) as { entry: Array<{ fullUrl: string; resource: Record<string, unknown> }> };
  const byEncounter = new Map<string, Array<{ fullUrl: string; resource: unknown }>>();
  for (const e of bundle.entry) {
    const r = e.resource;
    const enc = r["resourceType"] === "Encounter" ? e.fullUrl : (r["encounter"] as { reference?: string } | undefined)?.reference;
    if (enc) byEncounter.set(enc, [...(byEncounter.get(enc) ?? []), { fullUrl: e.fullUrl, resource: r }]);
  }
  for (const entry of byEncounter.values()) {
    const text = JSON.stringify({ resourceType: "Bundle", type: "collection", entry });
    docs.push({ group: "clin", text: "", hard: hardRuleHit(normalizeForInjection(text)), label: 0, fold: fold(f), wins: vectorize(text) });
  }
}
for (const [file, label] of [["clinical-agent-messages.txt", 0], ["clinical-agent-injections.txt", 1]] as const) {
  for (const line of readFileSync(path.join(repo, "scripts/data", file), "utf8").split("\n")) {
    const text = line.trim();
    if (!text || text.startsWith("#")) continue;
    docs.push({ group: "instr", text, hard: hardRuleHit(normalizeForInjection(text)), label, fold: fold(text), wins: vectorize(text) });
  }
}
console.log(
  `docs: ${docs.length} (pi ${docs.filter((d) => d.group === "pi").length}, clinical ${docs.filter((d) => d.group === "clin").length}, agent messages ${docs.filter((d) => d.group === "instr").length})`,
);

const CLIN_WEIGHT = 0.25;

function train(set: Doc[], l2: number, epochs = 30): { w: Float32Array; bias: number } {
  const w = new Float32Array(B);
  const g2 = new Float32Array(B).fill(1e-8);
  let bias = 0;
  let gb2 = 1e-8;
  const lr = 0.5;
  // every window is an example; a positive document's windows are all positive (most are one window)
  const ex: Array<{ v: Doc["wins"][number]; y: number; wt: number }> = [];
  for (const d of set) for (const v of d.wins) ex.push({ v, y: d.label, wt: d.group === "clin" ? CLIN_WEIGHT : d.label === 1 ? 1.3 : 1 });
  let seed = 12345;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let ep = 0; ep < epochs; ep++) {
    for (let i = ex.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [ex[i], ex[j]] = [ex[j]!, ex[i]!];
    }
    for (const { v, y, wt } of ex) {
      let z = bias;
      for (let k = 0; k < v.idx.length; k++) z += w[v.idx[k]!]! * v.val[k]!;
      const p = 1 / (1 + Math.exp(-z));
      const g = (p - y) * wt;
      for (let k = 0; k < v.idx.length; k++) {
        const b = v.idx[k]!;
        const gk = g * v.val[k]! + l2 * w[b]!;
        g2[b]! += gk * gk;
        w[b]! -= (lr * gk) / Math.sqrt(g2[b]!);
      }
      gb2 += g * g;
      bias -= (lr * g) / Math.sqrt(gb2);
    }
  }
  return { w, bias };
}

function score(m: { w: Float32Array; bias: number }, d: Doc): number {
  if (d.hard) return 1;
  let best = 0;
  for (const v of d.wins) {
    let sum = 0;
    for (let k = 0; k < v.idx.length; k++) sum += m.w[v.idx[k]!]! * v.val[k]!;
    // vals carry 1/sqrt(n); a window under MIN_FEATURES is scored with 1/sqrt(MIN_FEATURES), as the model does
    const z = m.bias + sum * Math.sqrt(v.n / Math.max(v.n, MIN_FEATURES));
    best = Math.max(best, 1 / (1 + Math.exp(-z)));
  }
  return best;
}

// Cross-validation over L2 strengths: held-out scores for every document.
const l2s = (process.env["HMCP_L2"] ?? "1e-5,3e-5,1e-4").split(",").map(Number);
let bestChoice: { l2: number; threshold: number; recall: number; recallAgent: number; fprPi: number; fprClin: number; fprAgent: number } | undefined;
for (const l2 of l2s) {
  const held: Array<{ d: Doc; s: number }> = [];
  for (let f = 0; f < 5; f++) {
    const m = train(
      docs.filter((d) => d.fold !== f),
      l2,
    );
    for (const d of docs.filter((d) => d.fold === f)) held.push({ d, s: score(m, d) });
  }
  if (process.env["HMCP_TRAIN_DEBUG"]) {
    const th = Number(process.env["HMCP_TRAIN_DEBUG"]);
    for (const h of held) if (h.d.group === "pi" && (h.s >= th) !== (h.d.label === 1)) console.log(h.d.label ? "FN" : "FP", h.s.toFixed(2), JSON.stringify(h.d.text.slice(0, 160)));
  }
  // the target is recall on the public injection set; the clinical-agent positives are reported beside it
  const pos = held.filter((h) => h.d.group === "pi" && h.d.label === 1);
  const posAgent = held.filter((h) => h.d.group === "instr" && h.d.label === 1);
  const negPi = held.filter((h) => h.d.group === "pi" && h.d.label === 0);
  const negClin = held.filter((h) => h.d.group === "clin");
  const negAgent = held.filter((h) => h.d.group === "instr" && h.d.label === 0);
  for (const th of [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7]) {
    const recall = pos.filter((h) => h.s >= th).length / pos.length;
    const fprPi = negPi.filter((h) => h.s >= th).length / negPi.length;
    const fprClin = negClin.filter((h) => h.s >= th).length / negClin.length;
    const fprAgent = negAgent.filter((h) => h.s >= th).length / negAgent.length;
    const recallAgent = posAgent.filter((h) => h.s >= th).length / posAgent.length;
    console.log(`l2=${l2} th=${th} cv recall=${recall.toFixed(3)} recallAgent=${recallAgent.toFixed(3)} fprPi=${fprPi.toFixed(3)} fprClin=${fprClin.toFixed(4)} fprAgent=${fprAgent.toFixed(3)}`);
    // targets: recall >= 0.90, FPR <= 0.10 (deepset benign) and <= 0.02 (clinical); keep a margin on FPR
    if (fprPi <= 0.09 && fprClin <= 0.01) {
      const better = !bestChoice || recall > bestChoice.recall + 1e-9 || (Math.abs(recall - bestChoice.recall) < 1e-9 && fprPi < bestChoice.fprPi);
      if (better) bestChoice = { l2, threshold: th, recall, recallAgent, fprPi, fprClin, fprAgent };
    }
  }
}
if (!bestChoice) throw new Error("no setting met the FPR bounds in cross-validation");
console.log("chosen", bestChoice);

const final = train(docs, bestChoice.l2);
const index: number[] = [];
const weight: number[] = [];
for (let b = 0; b < B; b++) {
  const v = final.w[b]!;
  if (Math.abs(v) >= 5e-3) {
    index.push(b);
    weight.push(Math.round(v * 1e4) / 1e4);
  }
}
const out = {
  version: 1,
  buckets: B,
  bias: Math.round(final.bias * 1e4) / 1e4,
  threshold: bestChoice.threshold,
  minFeatures: MIN_FEATURES,
  index,
  weight,
  meta: {
    trainedBy: "scripts/train-injection.ts",
    data: [
      "prompt-injections/dev.jsonl (Apache-2.0)",
      "mtsamples/dev.jsonl (CC0)",
      "medquad/dev.jsonl (CC BY 4.0)",
      "synthea/bundles (Apache-2.0)",
      "scripts/data/clinical-agent-messages.txt and clinical-agent-injections.txt (this project)",
    ],
    l2: bestChoice.l2,
    crossValidated: {
      recall: bestChoice.recall,
      recallClinicalAgentInjections: bestChoice.recallAgent,
      fprPromptInjectionBenign: bestChoice.fprPi,
      fprClinical: bestChoice.fprClin,
      fprClinicalAgentMessages: bestChoice.fprAgent,
    },
  },
};
writeFileSync(path.join(repo, "guardrails/data/injection-model.json"), JSON.stringify(out) + "\n");
console.log(`wrote ${index.length} weights`);
