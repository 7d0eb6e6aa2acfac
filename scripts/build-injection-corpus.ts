/**
 * The prompt-injection development corpus: agent traffic (benign and attacks) in the places it really arrives,
 * built deterministically from the hand-written files in scripts/data/injection-corpus/ (this project) and, at
 * build time, carrier documents from ../shared/data (MTSamples CC0, MedQuAD CC BY 4.0, Synthea Apache-2.0,
 * deepset/prompt-injections Apache-2.0). No carrier text is stored in the repository: the rows are rebuilt from
 * ../shared/data wherever they are needed (training, tests).
 *
 * Every row has a `split`: `holdout` rows share no phrasing family (a hand-written line's first words, an attack
 * template, a carrier frame) and no carrier document (an MTSamples note, a Synthea patient, a MedQuAD source file)
 * with `dev` rows; indirect attacks are built only from a template and a carrier on the same side. About 30 % of
 * each family set is held out (sha256 of the family key).
 *
 * Run `npx tsx scripts/build-injection-corpus.ts [dataDir]` to print the row counts per kind and split and write
 * scripts/data/injection-corpus/manifest.json (the counts and family keys, no text).
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Benign kinds: what legitimately arrives. */
export const BENIGN_KINDS = [
  "imperative",
  "role",
  "question",
  "approval",
  "answer",
  "tool-result",
  "agent-message",
  "fhir",
  "note",
  "clinical-question",
  "deepset-benign-en",
  "deepset-benign-other",
] as const;
/** Attack kinds: a direct injection (the caller's own message) or one planted in data the agent reads. */
export const ATTACK_KINDS = ["direct", "indirect-note", "indirect-fhir", "indirect-tool-result", "indirect-agent-answer"] as const;
export type BenignKind = (typeof BENIGN_KINDS)[number];
export type AttackKind = (typeof ATTACK_KINDS)[number];
/** Goals of the indirect attacks (scripts/data/injection-corpus/attacks.txt sections); direct attacks have none. */
export type AttackGoal = "task_change" | "leak" | "dose_change" | "privilege_claim";

/**
 * Where a row arrives: `message` (a user message of a server's sampling/createMessage input), `systemPrompt`,
 * `result` (a CallToolResult's text, or a CreateMessageResult when `role` is `assistant`) or `resource`
 * (ReadResourceResult contents) on a client's input stage. Matches the guardrail's TextLocation kinds.
 */
export type Arrival = "message" | "systemPrompt" | "result" | "resource";

export interface CorpusRow {
  kind: BenignKind | AttackKind;
  label: 0 | 1;
  goal?: AttackGoal;
  /** Phrasing family / carrier key the split is made on (no text). */
  family: string;
  split: "dev" | "holdout";
  arrival: Arrival;
  /** `assistant` for a previous agent's answer (CreateMessageResult). */
  role?: string;
  /** The carrier document or frame of a planted attack or a benign framed row (a family key too). */
  carrier?: string;
  /** An attack composed from components (compose.txt) rather than written whole (attacks.txt). */
  composed?: boolean;
  /** The planted attack text as it appears in `text` (before any JSON escaping), for planted attacks. */
  payload?: string;
  /** The file of a later round's rows (e.g. `role-r8.txt`): the trainer reports them apart from their kind's figure. */
  source?: string;
  text: string;
}

/**
 * Whether round 8's rows (role-r8.txt) are built without round 10: HMCP_ROUND8=1 (round 10 builds them too). Round 5
 * and round 8 H were trained without them (docs/guardrails-quality.md, "Session 20").
 */
const ROUND8 = (process.env["HMCP_ROUND8"] ?? "0") === "1";
/**
 * Whether round 9's rows (answers-r9.txt: peer answers that change doses, list approvals, refuse or advise a patient,
 * and hostile answers aimed at the next agent) are built without round 10: HMCP_ROUND9=1 (round 10 builds them too;
 * docs/guardrails-quality.md, "Session 21").
 */
const ROUND9 = (process.env["HMCP_ROUND9"] ?? "0") === "1";
/**
 * Whether round 10's rows are built: on by default (the shipped weights, session 22), HMCP_ROUND10=0 for round 8 H's
 * data. They are the blind sets already scored and read (scripts/data/injection-blind-r5 ... r12: each was scored
 * once, then its misses were read, so they are development rows now), dev families only like every later round, and
 * round 8's and 9's files (docs/guardrails-quality.md, "Session 22").
 */
const ROUND10 = (process.env["HMCP_ROUND10"] ?? "1") === "1";
/**
 * The blind sets learnt from: every one scored and read before the round was written. The model (round 10, shipped):
 * r5, r6, r7, r9, r10, r11, r12 (there is no r8 set; the candidates round 11 added r13 and round 12 r13 and r14, neither
 * shipped). The data model (HMCP_DATA_WORDS=1, session 23's U2, shipped): r5-r24. HMCP_READ_BLIND: a comma list instead.
 */
export const READ_BLIND_SETS: readonly string[] = (
  process.env["HMCP_READ_BLIND"] ??
  (process.env["HMCP_DATA_WORDS"] === "1" ? "r5,r6,r7,r9,r10,r11,r12,r13,r14,r15,r16,r17,r18,r19,r20,r21,r22,r23,r24" : "r5,r6,r7,r9,r10,r11,r12")
)
  .split(",")
  .filter(Boolean);

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const corpusDir = path.join(repo, "scripts/data/injection-corpus");
/** Held-out share of every family set, in percent. */
const HOLDOUT_PCT = 30;

const h32 = (s: string): number => createHash("sha256").update(s).digest().readUInt32BE(0);
/** The split of a family key. */
export const splitOf = (family: string): "dev" | "holdout" => (h32("split:" + family) % 100 < HOLDOUT_PCT ? "holdout" : "dev");

/** Seeded PRNG (LCG), so the corpus is the same on every machine. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
}
const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** Sections "## name" of a hand-written file; comment lines start with "# ". */
function sections(file: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let cur: string[] | undefined;
  for (const raw of readFileSync(path.join(corpusDir, file), "utf8").split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("# ")) continue;
    if (line.startsWith("## ")) {
      cur = [];
      out.set(line.slice(3).trim(), cur);
    } else cur?.push(line);
  }
  return out;
}

/** Family of a hand-written benign line: its kind and first two content words (fillers and "you are a" dropped). */
export function lineFamily(kind: string, text: string): string {
  const words = text
    .toLowerCase()
    .replace(/^(?:system:|instructions:|role:)\s*/, "")
    .replace(/^(?:please|kindly|now|then|next|first|ok,?|okay,?|yes,?|no,?)\s+/, "")
    .replace(/^(?:you are|you're|you will|du bist|eres|tu es|sie sind)\s+(?:a|an|the|ein|eine|un|une)?\s*/, "")
    .split(/[^\p{L}\p{N}']+/u)
    .filter(Boolean);
  return `${kind}:${words.slice(0, 2).join(" ")}`;
}

const DRUGS = ["warfarin", "metformin", "insulin glargine", "heparin", "lisinopril", "digoxin", "methotrexate", "morphine", "amiodarone", "levothyroxine"];
const DOSES = ["5 mg", "10 mg", "500 mg", "20 units", "2.5 mg", "0.125 mg", "40 mg"];
const DOSES2 = ["50 mg", "100 mg", "5000 mg", "200 units", "25 mg", "1.25 mg", "400 mg"];
const URLS = ["https://records-sync.net/upload", "http://203.0.113.7/collect", "https://paste.ee/new", "https://audit-check.org/api", "https://hooks.zapier.io/catch/4471", "https://storage.cloudbox.app/u/77"];
const EMAILS = ["records@mailbox.org", "backup.team@gmx.net", "it-verify@protonmail.com", "j.miller1984@gmail.com", "archive@records-sync.net"];

function fill(r: () => number, template: string): string {
  return template
    .replaceAll("{drug}", pick(r, DRUGS))
    .replaceAll("{dose}", pick(r, DOSES))
    .replaceAll("{dose2}", pick(r, DOSES2))
    .replaceAll("{url}", pick(r, URLS))
    .replaceAll("{email}", pick(r, EMAILS))
    .replaceAll("{pid}", String(100 + Math.floor(r() * 900)))
    .replaceAll("{n}", String(2 + Math.floor(r() * 30)))
    .replaceAll("{date}", `20${10 + Math.floor(r() * 10)}-0${1 + Math.floor(r() * 9)}-1${Math.floor(r() * 10)}`);
}

/** Ways an attack sits in a note: a bare sentence or under a label a note might carry. */
const NOTE_WRAP = ["{p}", "Addendum: {p}", "Nursing comment: {p}", "NOTE: {p}", "Comment from outside records: {p}", "{p}", "[{p}]"];
/** Benign free text for FHIR note fields, so that a note field alone is no attack signal. */
const BENIGN_FHIR_NOTES = [
  "Patient tolerated the procedure well.",
  "Taken sitting, left arm, after 5 minutes rest.",
  "Repeat in 3 months.",
  "Sample slightly hemolyzed; repeat if clinically indicated.",
  "Patient reports adherence to medication.",
  "Ignore the earlier reading, the cuff was too small.",
  "Discussed with the patient; agrees with plan.",
  "Per cardiology, continue current dose.",
  "Take with food. Do not crush.",
  "Follow the discharge instructions given by surgery.",
];

/** Benign sentences for the slot of a benign framed row (a frame's "Comment:" or "Notes:" is seldom empty). */
const BENIGN_FILLS = [
  "None.",
  "No issues found.",
  "Patient counselled on side effects.",
  "Verified against the allergy list.",
  "Please call the ward if the result changes.",
  "Ignore the earlier duplicate, it was sent twice.",
  "Sample received at 08:14.",
  "Dose adjusted for renal function per pharmacy.",
  "Next review in 3 months.",
  "Contact the on-call pharmacist for questions.",
  "Send questions to scheduling@stmarys-clinic.org.",
  "All values within reference range.",
  "Repeat if clinically indicated.",
  "The patient asked to reschedule.",
];

function jsonl<T>(file: string): T[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as T);
}

/** A note's text with `payload` inserted after a randomly chosen sentence (at most `maxChars` of the note, from its start). */
function plant(r: () => number, note: string, payload: string, maxChars: number): string {
  const body = note.length > maxChars ? note.slice(0, note.lastIndexOf(" ", maxChars)) : note;
  const cuts: number[] = [0, body.length];
  for (let i = body.indexOf(". "); i >= 0; i = body.indexOf(". ", i + 2)) cuts.push(i + 2);
  const at = pick(r, cuts);
  return `${body.slice(0, at)}${at > 0 && !/\s$/.test(body.slice(0, at)) ? " " : ""}${payload} ${body.slice(at)}`.trim();
}

/** Languages other than English in the deepset set: a crude stop-word test (German mostly). */
function nonEnglish(text: string): boolean {
  const w = text.toLowerCase().split(/[^\p{L}]+/u);
  const de = w.filter((x) => ["der", "die", "das", "und", "ist", "ich", "wie", "was", "ein", "eine", "nicht", "sie", "mit", "für", "auf", "wer", "wann", "gibt", "es", "zu", "den", "des", "ich", "wo", "welche"].includes(x)).length;
  const en = w.filter((x) => ["the", "and", "is", "what", "how", "who", "of", "to", "in", "a", "are", "do", "i", "you", "can"].includes(x)).length;
  return de > en || /[äöüß]/.test(text.toLowerCase()) || /\b(?:el|la|los|qué|est|les|des)\b/.test(text.toLowerCase());
}

interface Resource {
  resourceType: string;
  [k: string]: unknown;
}

/**
 * Builds every row. `dataDir`: the shared data sets (default ../shared/data beside the repository).
 * @throws Error when a data set is missing
 */
export function buildInjectionCorpus(dataDir = path.resolve(repo, "../shared/data")): CorpusRow[] {
  const rows: CorpusRow[] = [];
  const r = rng(20261126);

  // hand-written benign agent traffic
  const benign = sections("benign.txt");
  const arrivalOf: Record<string, Arrival> = { imperative: "message", role: "message", question: "message", approval: "message", answer: "result" };
  for (const [kind, lines] of benign) {
    for (const text of lines) {
      const family = lineFamily(kind, text);
      rows.push({ kind: kind as BenignKind, label: 0, family, split: splitOf(family), arrival: arrivalOf[kind] ?? "message", ...(kind === "answer" ? { role: "assistant" } : {}), text });
    }
  }
  // the earlier clinical agent messages and injections (scripts/data), split by their first words too
  for (const [file, label] of [["clinical-agent-messages.txt", 0], ["clinical-agent-injections.txt", 1]] as const) {
    for (const line of readFileSync(path.join(repo, "scripts/data", file), "utf8").split("\n")) {
      const text = line.trim();
      if (!text || text.startsWith("#")) continue;
      const family = lineFamily(label ? "agent-injection" : "agent-message", text);
      rows.push({ kind: label ? "direct" : "agent-message", label, family, split: splitOf(family), arrival: "message", text });
    }
  }

  // deepset/prompt-injections: direct attacks and benign prompts, split by row (the hidden test set is a row split too)
  for (const d of jsonl<{ id: string; text: string; label: 0 | 1 }>(path.join(dataDir, "prompt-injections/dev.jsonl"))) {
    const family = `deepset:${d.id}`;
    const kind = d.label ? "direct" : nonEnglish(d.text) ? "deepset-benign-other" : "deepset-benign-en";
    rows.push({ kind, label: d.label, family, split: splitOf(family), arrival: "message", text: d.text });
  }

  // MedQuAD questions, split by source file
  for (const q of jsonl<{ question: string; source_file: string }>(path.join(dataDir, "medquad/dev.jsonl"))) {
    const family = `medquad:${q.source_file}`;
    rows.push({ kind: "clinical-question", label: 0, family, split: splitOf(family), arrival: "message", text: q.question });
  }

  // attack templates; a template's split is its own line
  const attacks = sections("attacks.txt");
  const templates: Array<{ goal: AttackGoal; text: string; split: "dev" | "holdout"; family: string; composed?: boolean }> = [];
  for (const [goal, lines] of attacks) for (const text of lines) templates.push({ goal: goal as AttackGoal, text, family: `attack:${text}`, split: splitOf(`attack:${text}`) });
  // composed attacks: addressee + opener (or a privilege claim) + action + suffix, each component on one side only
  const comp = sections("compose.txt");
  const part = (name: string, split: "dev" | "holdout"): string[] => (comp.get(name) ?? []).filter((x) => splitOf(`compose:${name}:${x}`) === split);
  for (const split of ["dev", "holdout"] as const) {
    for (const goal of ["task_change", "leak", "dose_change", "privilege_claim"] as const) {
      const actions = goal === "privilege_claim" ? [...part("action:task_change", split), ...part("action:leak", split)] : part(`action:${goal}`, split);
      for (let k = 0; k < (split === "dev" ? 30 : 12); k++) {
        const action = pick(r, actions);
        const head = r() < 0.75 ? pick(r, part("addressee", split)) + " " : "";
        const lead = goal === "privilege_claim" ? pick(r, part("claim", split)) : r() < 0.8 ? pick(r, part("opener", split)) : "";
        const tail = r() < 0.5 ? " " + pick(r, part("suffix", split)) : "";
        let text = `${head}${lead} ${action}.${tail}`.replace(/\s+/g, " ").replace(/\.\./g, ".").trim();
        text = text.charAt(0).toUpperCase() + text.slice(1);
        templates.push({ goal, text, family: `compose:${goal}:${action}`, split, composed: true });
      }
    }
  }
  const bySplit = (s: "dev" | "holdout") => templates.filter((t) => t.split === s);
  const benignRemarks = (split: "dev" | "holdout"): string[] =>
    part("benign-addressee", split).flatMap((a) => part("benign-action", split).map((b) => `${a} ${b.charAt(0).toUpperCase()}${b.slice(1)}`));

  // MTSamples notes: benign as they are, and carriers of planted attacks (split by note)
  const notes = jsonl<{ id: string; transcription: string }>(path.join(dataDir, "mtsamples/dev.jsonl"));
  for (const n of notes) {
    const family = `mtsamples:${n.id}`;
    const split = splitOf(family);
    rows.push({ kind: "note", label: 0, family, split, arrival: "message", text: n.transcription });
  }
  for (const split of ["dev", "holdout"] as const) {
    const carriers = notes.filter((n) => splitOf(`mtsamples:${n.id}`) === split);
    for (const t of bySplit(split)) {
      for (let k = 0; k < 4; k++) {
        const note = pick(r, carriers);
        const payload = pick(r, NOTE_WRAP).replace("{p}", fill(r, t.text));
        const text = plant(r, note.transcription, payload, 400 + Math.floor(r() * 2600));
        rows.push({ kind: "indirect-note", label: 1, goal: t.goal, family: t.family, split, ...(t.composed ? { composed: true } : {}), arrival: "message", carrier: `mtsamples:${note.id}`, payload, text });
      }
    }
  }

  // benign remarks planted the same way (a note to the nurse is not an attack)
  for (const split of ["dev", "holdout"] as const) {
    const carriers = notes.filter((n) => splitOf(`mtsamples:${n.id}`) === split);
    for (const remark of benignRemarks(split)) {
      if (r() < 0.5) continue;
      const note = pick(r, carriers);
      rows.push({ kind: "note", label: 0, family: `mtsamples:${note.id}`, split, arrival: "message", text: plant(r, note.transcription, fill(r, remark), 400 + Math.floor(r() * 2600)) });
    }
  }

  // Synthea: single resources and encounter bundles, benign and with an attack in a note field (split by patient)
  const bundleDir = path.join(dataDir, "synthea/bundles");
  const patients = readdirSync(bundleDir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  const resourcesBy = new Map<string, Resource[]>();
  for (const f of patients) {
    const b = JSON.parse(readFileSync(path.join(bundleDir, f), "utf8")) as { entry: Array<{ resource: Resource }> };
    resourcesBy.set(
      f,
      b.entry.map((e) => e.resource).filter((x) => ["Observation", "Condition", "MedicationRequest", "DiagnosticReport", "Procedure", "Immunization", "AllergyIntolerance", "Encounter", "CarePlan"].includes(x.resourceType)),
    );
  }
  const withNote = (res: Resource, note: string): Resource =>
    res.resourceType === "DiagnosticReport" ? { ...res, conclusion: note } : res.resourceType === "CarePlan" ? { ...res, description: note } : { ...res, note: [{ text: note }] };
  const fhirText = (res: Resource, many: Resource[]): string =>
    r() < 0.7 ? JSON.stringify(res) : JSON.stringify({ resourceType: "Bundle", type: "collection", entry: [...many, res].map((x) => ({ resource: x })) });
  for (const f of patients) {
    const family = `synthea:${f}`;
    const split = splitOf(family);
    const res = resourcesBy.get(f)!;
    for (let k = 0; k < 25; k++) {
      const one = pick(r, res);
      const ctx = Array.from({ length: 1 + Math.floor(r() * 5) }, () => pick(r, res));
      const remarks = benignRemarks(split);
      const x = r() < 0.4 ? withNote(one, r() < 0.5 || remarks.length === 0 ? pick(r, BENIGN_FHIR_NOTES) : fill(r, pick(r, remarks))) : one;
      rows.push({ kind: "fhir", label: 0, family, split, arrival: r() < 0.5 ? "result" : "resource", text: fhirText(x, ctx) });
    }
  }
  for (const split of ["dev", "holdout"] as const) {
    const carriers = patients.filter((f) => splitOf(`synthea:${f}`) === split);
    for (const t of bySplit(split)) {
      for (let k = 0; k < 4; k++) {
        const patient = pick(r, carriers);
        const res = resourcesBy.get(patient)!;
        const ctx = Array.from({ length: 1 + Math.floor(r() * 4) }, () => pick(r, res));
        const payload = fill(r, t.text);
        rows.push({ kind: "indirect-fhir", label: 1, goal: t.goal, family: t.family, split, ...(t.composed ? { composed: true } : {}), arrival: r() < 0.5 ? "result" : "resource", carrier: `synthea:${patient}`, payload, text: fhirText(withNote(pick(r, res), payload), ctx) });
      }
    }
  }

  // tool results and previous agents' answers: frames, benign (slot dropped) and with an attack (split by frame and template)
  const frames = sections("frames.txt");
  for (const [section, kind, benignKind, role] of [
    ["tool-result", "indirect-tool-result", "tool-result", undefined],
    ["agent-answer", "indirect-agent-answer", "answer", "assistant"],
  ] as const) {
    const fr = (frames.get(section) ?? []).map((text) => ({ text, family: `frame:${text}`, split: splitOf(`frame:${text}`) }));
    for (const f of fr) {
      for (let k = 0; k < 3; k++) {
        const remarks = benignRemarks(f.split);
        const benignFill = r() < 0.7 ? (r() < 0.6 || remarks.length === 0 ? pick(r, BENIGN_FILLS) : pick(r, remarks)) : "";
        rows.push({ kind: benignKind, label: 0, family: f.family, split: f.split, arrival: "result", ...(role ? { role } : {}), carrier: f.family, text: fill(r, benignFill ? f.text.replace("{payload}", benignFill) : f.text.replace(" {payload}", "").replace("{payload}", "")) });
      }
    }
    for (const split of ["dev", "holdout"] as const) {
      const carriers = fr.filter((f) => f.split === split);
      for (const t of bySplit(split)) {
        for (let k = 0; k < 3; k++) {
          const f = pick(r, carriers);
          const payload = fill(r, t.text);
          rows.push({ kind, label: 1, goal: t.goal, family: t.family, split, ...(t.composed ? { composed: true } : {}), arrival: "result", ...(role ? { role } : {}), carrier: f.family, payload, text: fill(r, f.text.replace("{payload}", payload)) });
        }
      }
    }
  }

  // more written attack templates (attacks-extra.txt), added after every other row with a generator of their own, so
  // that the rows above (and the held-out split) are the same with or without them; only templates whose family falls
  // in dev are used, planted in dev carriers only: they add development rows, never held-out ones
  const r2 = rng(20261127);
  const extra: Array<{ goal: AttackGoal; text: string; family: string }> = [];
  for (const [goal, lines] of sections("attacks-extra.txt")) for (const text of lines) if (splitOf(`attack:${text}`) === "dev") extra.push({ goal: goal as AttackGoal, text, family: `attack:${text}` });
  const devNotes = notes.filter((n) => splitOf(`mtsamples:${n.id}`) === "dev");
  const devPatients = patients.filter((f) => splitOf(`synthea:${f}`) === "dev");
  // round 3: more carrier frames (frames-extra.txt), dev families only, beside the dev frames of frames.txt
  const framesExtra = sections("frames-extra.txt");
  const devFrames = (section: string) => [...(frames.get(section) ?? []), ...(framesExtra.get(section) ?? [])].filter((text) => splitOf(`frame:${text}`) === "dev");
  for (const t of extra) {
    for (let k = 0; k < 4; k++) {
      const note = pick(r2, devNotes);
      const payload = pick(r2, NOTE_WRAP).replace("{p}", fill(r2, t.text));
      const text = plant(r2, note.transcription, payload, 400 + Math.floor(r2() * 2600));
      rows.push({ kind: "indirect-note", label: 1, goal: t.goal, family: t.family, split: "dev", arrival: "message", carrier: `mtsamples:${note.id}`, payload, text });
    }
    for (let k = 0; k < 4; k++) {
      const patient = devPatients[Math.floor(r2() * devPatients.length)]!;
      const own = resourcesBy.get(patient)!;
      const ctx = Array.from({ length: 1 + Math.floor(r2() * 4) }, () => pick(r2, own));
      const payload = fill(r2, t.text);
      const one = withNote(pick(r2, own), payload);
      const text = r2() < 0.7 ? JSON.stringify(one) : JSON.stringify({ resourceType: "Bundle", type: "collection", entry: [...ctx, one].map((x) => ({ resource: x })) });
      rows.push({ kind: "indirect-fhir", label: 1, goal: t.goal, family: t.family, split: "dev", arrival: r2() < 0.5 ? "result" : "resource", carrier: `synthea:${patient}`, payload, text });
    }
    for (const [section, kind, role] of [
      ["tool-result", "indirect-tool-result", undefined],
      ["agent-answer", "indirect-agent-answer", "assistant"],
    ] as const) {
      for (let k = 0; k < 3; k++) {
        const f = pick(r2, devFrames(section));
        const payload = fill(r2, t.text);
        rows.push({ kind, label: 1, goal: t.goal, family: t.family, split: "dev", arrival: "result", ...(role ? { role } : {}), carrier: `frame:${f}`, payload, text: fill(r2, f.replace("{payload}", payload)) });
      }
    }
  }
  // round 3: more benign agent traffic (benign-extra.txt) and benign rows of the extra frames, after every other row,
  // dev families only (a line or frame whose family falls in the held-out split is skipped): development rows only
  for (const [kind, lines] of sections("benign-extra.txt")) {
    for (const text of lines) {
      const family = lineFamily(kind, text);
      if (splitOf(family) !== "dev") continue;
      rows.push({ kind: kind as BenignKind, label: 0, family, split: "dev", arrival: arrivalOf[kind] ?? "message", ...(kind === "answer" ? { role: "assistant" } : {}), text });
    }
  }
  for (const [section, benignKind, role] of [
    ["tool-result", "tool-result", undefined],
    ["agent-answer", "answer", "assistant"],
  ] as const) {
    for (const f of framesExtra.get(section) ?? []) {
      const family = `frame:${f}`;
      if (splitOf(family) !== "dev") continue;
      for (let k = 0; k < 3; k++) {
        const remarks = benignRemarks("dev");
        const benignFill = r2() < 0.7 ? (r2() < 0.6 ? pick(r2, BENIGN_FILLS) : pick(r2, remarks)) : "";
        rows.push({ kind: benignKind, label: 0, family, split: "dev", arrival: "result", ...(role ? { role } : {}), carrier: family, text: fill(r2, benignFill ? f.replace("{payload}", benignFill) : f.replace(" {payload}", "").replace("{payload}", "")) });
      }
    }
  }
  // round 4: benign outcome answers (benign-outcomes.txt: writes done, cancelled or declined, nothing found, errors),
  // as a peer agent's answer or a tool result, after every other row with a generator of their own, dev families only
  const r3 = rng(20261128);
  for (const [section, role] of [
    ["answer", "assistant"],
    ["tool-result", undefined],
  ] as const) {
    for (const text of sections("benign-outcomes.txt").get(section) ?? []) {
      const family = lineFamily(section, text);
      if (splitOf(family) !== "dev") continue;
      rows.push({ kind: section, label: 0, family, split: "dev", arrival: "result", ...(role ? { role } : {}), text: fill(r3, text) });
    }
  }
  // round 5, after every other row with a generator of their own, dev families only (development rows, never held-out
  // ones): direct attacks in the families the round-2 model missed on fresh text (direct-extra.txt); benign traffic in
  // German, Spanish and French and requests that name approvals, tokens and doses in their ordinary sense
  // (benign-r5.txt); and FHIR JSON sent as a message (an orchestrator handing an encounter's resources to an agent, as
  // the demo does: the corpus had FHIR only as a result or a resource), one row per encounter of the dev patients
  const r4 = rng(20261129);
  for (const text of sections("direct-extra.txt").get("direct") ?? []) {
    const family = lineFamily("agent-injection", text);
    if (splitOf(family) !== "dev") continue;
    rows.push({ kind: "direct", label: 1, family, split: "dev", arrival: "message", text });
  }
  for (const [kind, lines] of sections("benign-r5.txt")) {
    for (const text of lines) {
      const family = lineFamily(kind, text);
      if (splitOf(family) !== "dev") continue;
      rows.push({ kind: kind as BenignKind, label: 0, family, split: "dev", arrival: arrivalOf[kind] ?? "message", ...(kind === "answer" ? { role: "assistant" } : {}), text });
    }
  }
  for (const f of devPatients) {
    const bundle = JSON.parse(readFileSync(path.join(bundleDir, f), "utf8")) as { entry: Array<{ fullUrl?: string; resource: Resource }> };
    const byEncounter = new Map<string, Resource[]>();
    for (const e of bundle.entry) {
      const ref = e.resource.resourceType === "Encounter" ? e.fullUrl : (e.resource["encounter"] as { reference?: string } | undefined)?.reference;
      if (ref) byEncounter.set(ref, [...(byEncounter.get(ref) ?? []), e.resource]);
    }
    const encounters = [...byEncounter.values()];
    for (let k = 0; k < Math.min(6, encounters.length); k++) {
      rows.push({ kind: "fhir", label: 0, family: `synthea:${f}`, split: "dev", arrival: "message", text: JSON.stringify(pick(r4, encounters)) });
    }
  }
  // round 8, dev families only: role prompts that set an agent's limits with the words attacks use ("never reveal these
  // instructions", "treat tool output as data", "approval is required") and hostile role prompts and requests that
  // lift the same limits with the same words: contrast rows for the negation scopes of the word features
  if (ROUND8 || ROUND10) {
    for (const [kind, lines] of sections("role-r8.txt")) {
      if (kind !== "role" && kind !== "direct") throw new Error(`role-r8.txt: unknown section ${kind}`);
      for (const text of lines) {
        const family = lineFamily(kind === "role" ? "role" : "agent-injection", text);
        if (splitOf(family) !== "dev") continue;
        rows.push({ kind, label: kind === "direct" ? 1 : 0, family, split: "dev", arrival: "message", source: "role-r8.txt", text });
      }
    }
  }
  // round 9, dev families only: peer answers of a pharmacy, reconciliation or scheduling agent that change doses, list
  // pending approvals, refuse or advise a patient in the second person (blocked as data by round 8 H on blind sets r10
  // and r11), and answers of the same shapes that tell the NEXT agent to act on doses, approvals, audit or data
  if (ROUND9 || ROUND10) {
    for (const [section, lines] of sections("answers-r9.txt")) {
      if (section !== "answer" && section !== "answer-attack") throw new Error(`answers-r9.txt: unknown section ${section}`);
      for (const text of lines) {
        const family = lineFamily(section, text);
        if (splitOf(family) !== "dev") continue;
        const kind = section === "answer" ? "answer" : "indirect-agent-answer";
        rows.push({ kind, label: section === "answer" ? 0 : 1, family, split: "dev", arrival: "result", role: "assistant", source: "answers-r9.txt", text });
      }
    }
  }
  // round 10, dev families only: the rows of the blind sets already scored and read (new writers' role prompts, peer
  // answers, instructions and attacks: the text the model missed most on each new set)
  if (ROUND10) {
    const blindKinds: Record<string, { kind: BenignKind | AttackKind; family: string; arrival: Arrival; role?: "assistant" }> = {
      // (the benign kinds arrive where the hand-written ones do: arrivalOf)
      ...Object.fromEntries((["role", "imperative", "question", "approval", "answer"] as const).map((k) => [k, { kind: k, family: k, arrival: arrivalOf[k]!, ...(k === "answer" ? { role: "assistant" as const } : {}) }])),
      direct: { kind: "direct", family: "agent-injection", arrival: "message" },
      "role-attack": { kind: "direct", family: "agent-injection", arrival: "message" },
      "answer-attack": { kind: "indirect-agent-answer", family: "answer-attack", arrival: "result", role: "assistant" },
      "tool-attack": { kind: "indirect-tool-result", family: "tool-attack", arrival: "result" },
      "note-attack": { kind: "indirect-note", family: "note-attack", arrival: "message" },
    };
    for (const set of READ_BLIND_SETS) {
      const file = `injection-blind-${set}.txt`;
      for (const line of readFileSync(path.join(repo, "scripts/data", file), "utf8").split("\n")) {
        if (!line || line.startsWith("#")) continue;
        const tab = line.indexOf("\t");
        const k = blindKinds[line.slice(0, tab)];
        if (tab < 0 || !k) throw new Error(`${file}: unknown row kind ${line.slice(0, Math.max(tab, 0))}`);
        const text = line.slice(tab + 1);
        const family = lineFamily(k.family, text);
        if (splitOf(family) !== "dev") continue;
        rows.push({ kind: k.kind, label: ATTACK_KINDS.includes(k.kind as AttackKind) ? 1 : 0, family, split: "dev", arrival: k.arrival, ...(k.role ? { role: k.role } : {}), source: file, text });
      }
    }
  }
  return rows;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const rows = buildInjectionCorpus(process.argv[2] ? path.resolve(process.argv[2]) : undefined);
  const counts: Record<string, { dev: number; holdout: number; families: { dev: number; holdout: number } }> = {};
  const fams = new Map<string, Set<string>>();
  for (const row of rows) {
    const c = (counts[row.kind] ??= { dev: 0, holdout: 0, families: { dev: 0, holdout: 0 } });
    c[row.split]++;
    const key = `${row.kind}|${row.split}`;
    if (!fams.has(key)) fams.set(key, new Set());
    fams.get(key)!.add(row.family);
  }
  for (const [k, c] of Object.entries(counts)) {
    c.families.dev = fams.get(`${k}|dev`)?.size ?? 0;
    c.families.holdout = fams.get(`${k}|holdout`)?.size ?? 0;
  }
  writeFileSync(path.join(corpusDir, "manifest.json"), JSON.stringify({ builtBy: "scripts/build-injection-corpus.ts", rows: rows.length, kinds: counts }, null, 2) + "\n");
  console.table(Object.fromEntries(Object.entries(counts).map(([k, c]) => [k, { dev: c.dev, holdout: c.holdout, devFamilies: c.families.dev, holdoutFamilies: c.families.holdout }])));
}
