/**
 * Golden harness of the PHI detector: runs `createPhiDetector().detect(text)` over every text of ../shared/data
 * (PhysioNet deid `text`, Presidio synthetic `text`, MTSamples `transcription`, MedQuAD `question` and `answer`), the
 * adversarial strings of bench/adversarial.ts and bench/phi.ts at ~20 KB, and a seeded fuzz set (astral characters,
 * lone surrogates, combining marks, very long words, digit and punctuation runs, name / date / address fragments), and
 * records or compares the entities (type, start, end) of every text.
 *
 * The record is written OUTSIDE the repository (default /tmp/phi-golden.json): PhysioNet text is GPL-2.0 and must never
 * enter it. Only offsets and types are stored, plus a digest of all of them.
 *
 * Usage (record on the commit before a change, compare after it; the data sets are read from ../shared/data, or
 * HMCP_DATA_DIR):
 *   npx tsx scripts/phi-golden.ts --record [--out /tmp/phi-golden.json]   record the current detector's output
 *   npx tsx scripts/phi-golden.ts [--out /tmp/phi-golden.json]            compare against the record (exit 1 on a difference)
 *
 * `--extended` (record and compare with the same flag) adds, for a stricter check of a speed change: upper-, lower-
 * and title-case variants of every PhysioNet and Presidio text and of 200 MTSamples notes, the bench/phi.ts
 * adversarial fragments mixed with each other and with case changes, lone surrogates, astral letters and combining
 * marks, 1,000 more seeded fuzz texts; and it digests each entity's text and replacement as well as type and offsets
 * (in the record's digest only: the per-text record still holds no text).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createPhiDetector } from "../src/guardrails/phi/detector.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DATA = process.env["HMCP_DATA_DIR"] ?? path.resolve(ROOT, "..", "shared", "data");
const arg = (name: string): string | undefined => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const OUT = arg("--out") ?? "/tmp/phi-golden.json";
const record = process.argv.includes("--record");
const extended = process.argv.includes("--extended");

/** Named texts: [id, text]. */
const texts: Array<[string, string]> = [];

function jsonl(file: string, fields: string[]): void {
  const p = path.join(DATA, file);
  if (!existsSync(p)) {
    console.error(`missing ${p}`);
    process.exit(2);
  }
  const lines = readFileSync(p, "utf8").split("\n").filter((l) => l.trim());
  lines.forEach((l, i) => {
    const row = JSON.parse(l) as Record<string, unknown>;
    for (const f of fields) if (typeof row[f] === "string") texts.push([`${file}#${i}.${f}`, row[f] as string]);
  });
}
jsonl("phi-deid-physionet/dev.jsonl", ["text"]);
jsonl("pii-presidio-synth/dev.jsonl", ["text"]);
jsonl("mtsamples/dev.jsonl", ["transcription"]);
jsonl("medquad/dev.jsonl", ["question", "answer"]);

// Adversarial strings (bench/adversarial.ts and bench/phi.ts) at ~20 KB.
const ADV = 20_000;
const fill = (unit: string, chars: number): string => unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars);
const adversarial: Array<[string, string]> = [
  ["one letter, no spaces", "a"],
  ["one short word", "ab "],
  ["capitalised name-like words", "John Smith "],
  ["title and name", "Dr. Ann Lee, "],
  ["digits and separators", "12/34-56 78 "],
  ["phone-like", "617-555-0123 "],
  ["e-mail-like, no dot", "aaa@bbb"],
  ["astral letters", "\u{1D518}\u{1D51E} "],
  ["unclosed quotes", 'say "'],
  ["override cue words", "ignore previous "],
  ["newlines", "\n"],
  ["street-like", "12 Main St "],
  ["repeated word", "Smith "],
  ["repeated number+street", "12 Main "],
  ["repeated 1 via", "1 via "],
  ["repeated date-ish", "5/10/40% "],
  ["repeated Dr.", "Dr. "],
  ["astral chars", "𝒜𝒷 "],
  ["digits", "1"],
  ["emails@", "a@b."],
];
for (const [name, unit] of adversarial) texts.push([`adversarial:${name}`, fill(unit, ADV)]);
texts.push(["adversarial:deep nesting", "(".repeat(ADV / 2) + ")".repeat(ADV / 2)]);

// Seeded fuzz (mulberry32): fragments of the kinds the rules look at, glued by random separators.
let seed = 0x9e3779b9;
const rnd = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const int = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
const FRAGMENTS: Array<() => string> = [
  () => String.fromCodePoint(int(0x10000, 0x1ffff)),
  () => pick(["\u{1D518}", "\u{1D51E}", "𝒜", "😀", "\u{20000}"]),
  () => String.fromCharCode(int(0xd800, 0xdbff)),
  () => String.fromCharCode(int(0xdc00, 0xdfff)),
  () => pick(["e\u0301", "a\u0308", "\u0301", "n\u0303o", "Z\u0327\u0301"]),
  () => pick(["a", "Z", "é", "ß", "İ", "ǅ"]).repeat(int(20, 400)),
  () => "1234567890".repeat(int(1, 6)).slice(0, int(1, 40)),
  () => pick([".", ",", "-", "/", ":", "@", "#", "(", ")", "'", "’", "\"", "%", "+"]).repeat(int(1, 30)),
  () => pick(["Dr.", "Mr", "mrs.", "MS", "wife", "RN", "np", "by", "and", "lives in", "transferred to", "at", "my name is", "aware"]),
  () => pick(["John", "Smith", "MARY", "o'brien", "Stord-Painter", "McDonald", "van", "de", "Noort", "J.", "G", "Szöllösy", "Baltimore", "San Diego", "NEW YORK"]),
  () => pick(["\u017Fent to", "\u212Aing St", "ſtop at", "Dr. \u212Aelly", "in \u017Fan Diego", "lives at 5 ſ", "İstanbul", "ǅemal"]),
  () => pick(["Hospital", "hosp", "Memorial", "clinic", "medical center", "Regional", "ICU", "quartermain"]),
  () => `${int(1, 12)}/${int(1, 31)}${rnd() < 0.5 ? `/${int(0, 2099)}` : ""}`,
  () => `${int(100, 999)}-${int(10, 99)}-${int(1000, 9999)}`,
  () => `(${int(200, 999)}) ${int(200, 999)}-${int(1000, 9999)}`,
  () => `${int(1, 99999)} ${pick(["Main", "Elm", "Puruntie", "Mellemvej", "Rua João"])} ${pick(["St", "Street", "Ave", "82", "Apt. 5", "Road"])}`,
  () => pick(["a@b.com", "x.y@host", "user@@", "www.example.org/path", "http://x.io", "10.0.0.1", "fe80::1", "1:2:3:4:5:6:7:8"]),
  () => pick(["MRN 12345678", "SSN 123456789", "zip 02139", "MA 02139", "aged 95", "97 yo", "'09", "May 5, 2020", "5th of June", "Jan 2019"]),
  () => pick(['"city": "Boston"', '"postalCode": "02139"', '"line": ["1 Main St"]', "USNS Mercy FPO AP 96677", "PSC 5420, Box 2708 APO AA 33879"]),
];
const SEPARATORS = [" ", " ", " ", "  ", "\n", ", ", ". ", "\t", "", ": ", "\u00a0", "\u2028"];
for (let k = 0; k < 400; k++) {
  const parts: string[] = [];
  const len = int(1, k < 350 ? 60 : 600);
  for (let i = 0; i < len; i++) parts.push(pick(FRAGMENTS)(), pick(SEPARATORS));
  texts.push([`fuzz#${k}`, parts.join("")]);
}

if (extended) {
  const title = (t: string): string => t.toLowerCase().replace(/(^|[^\p{L}])(\p{L})/gu, (_m, a: string, b: string) => a + b.toUpperCase());
  const base = texts.filter(([id]) => id.startsWith("phi-deid") || id.startsWith("pii-presidio") || /^mtsamples\/dev\.jsonl#1?\d?\d\./.test(id));
  for (const [id, t] of base) {
    texts.push([`upper:${id}`, t.toUpperCase()], [`lower:${id}`, t.toLowerCase()], [`title:${id}`, title(t)]);
  }
  const UNITS = adversarial.map(([, u]) => u).concat(["12 Main ", "1 via ", "Dr. ", "𝒜𝒷 ", "a@b.", "5/10/40% ", "Smith "]);
  const NOISE = ["\ud800", "\udc00", "\u{1D518}", "𝒜", "\u0301", "e\u0301", "İ", "ſ", "\u212A", " ", "\n", "@", ".", "-"];
  for (let k = 0; k < 600; k++) {
    const parts: string[] = [];
    const len = int(5, k < 500 ? 200 : 3000);
    for (let i = 0; i < len; i++) {
      let u = pick(UNITS).repeat(int(1, 8));
      const r = rnd();
      if (r < 0.15) u = u.toUpperCase();
      else if (r < 0.3) u = u.toLowerCase();
      parts.push(u);
      if (rnd() < 0.3) parts.push(pick(NOISE));
      if (rnd() < 0.2) parts.push(pick(FRAGMENTS)());
    }
    texts.push([`mix#${k}`, parts.join("")]);
  }
  for (let k = 0; k < 1000; k++) {
    const parts: string[] = [];
    const len = int(1, k < 900 ? 80 : 800);
    for (let i = 0; i < len; i++) {
      let f = pick(FRAGMENTS)();
      const r = rnd();
      if (r < 0.1) f = f.toUpperCase();
      else if (r < 0.2) f = f.toLowerCase();
      parts.push(f, pick(SEPARATORS));
    }
    texts.push([`fuzz2#${k}`, parts.join("")]);
  }
}

const detector = createPhiDetector();
const perText: Record<string, string> = {};
const digest = createHash("sha256");
let entities = 0;
const t0 = performance.now();
for (const [id, text] of texts) {
  const found = detector.detect(text);
  entities += found.length;
  const s = found.map((e) => `${e.type}:${e.start}:${e.end}`).join(" ");
  perText[id] = s;
  digest.update(`${id}\u0000${s}\n`);
  if (extended) for (const e of found) digest.update(`${e.type}\u0001${e.start}\u0001${e.end}\u0001${text.slice(e.start, e.end)}\u0001${e.replacement}\u0002`);
}
const ms = Math.round(performance.now() - t0);
const hex = digest.digest("hex");

if (record) {
  writeFileSync(OUT, JSON.stringify({ digest: hex, texts: texts.length, entities, perText }));
  console.log(`recorded ${texts.length} texts, ${entities} entities, digest ${hex.slice(0, 16)} -> ${OUT} (${ms} ms)`);
} else {
  const gold = JSON.parse(readFileSync(OUT, "utf8")) as { digest: string; texts: number; entities: number; perText: Record<string, string> };
  const diffs = Object.keys({ ...gold.perText, ...perText }).filter((id) => gold.perText[id] !== perText[id]);
  console.log(`${texts.length} texts, ${entities} entities (golden ${gold.entities}), digest ${hex === gold.digest ? "identical" : "DIFFERENT"} (${ms} ms)`);
  for (const id of diffs.slice(0, 20)) {
    const a = new Set((gold.perText[id] ?? "").split(" "));
    const b = new Set((perText[id] ?? "").split(" "));
    console.log(`  ${id}: missing [${[...a].filter((x) => !b.has(x)).slice(0, 8).join(" ")}] extra [${[...b].filter((x) => !a.has(x)).slice(0, 8).join(" ")}]`);
  }
  if (diffs.length > 0) {
    console.log(`${diffs.length} texts differ`);
    process.exit(1);
  }
}
