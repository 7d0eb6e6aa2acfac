/**
 * PHI detection and redaction after the HIPAA Safe Harbor identifiers (45 CFR 164.514(b)(2)(i)):
 * names, geographic subdivisions smaller than a state (street address, city/facility in context, ZIP),
 * dates more specific than the year, ages over 89, phone and fax numbers, e-mail, SSN, medical record,
 * account, licence and other identifying numbers, URLs and IP addresses.
 *
 * Deterministic and local: precompiled regular expressions with bounded quantifiers (linear in the input
 * length) plus a name dictionary (guardrails/data/phi-lexicon.json: US Census name lists, the person-name
 * lists of @faker-js/faker's locales, a gazetteer and common clinical words; see scripts/build-phi-lexicon.ts).
 * Replacements keep the entity type: `[NAME]`, `[DATE]`, `[PHONE]` ...
 *
 * Non-guarantees: it is a recall-oriented detector, not a proof of de-identification; a year alone is
 * kept (Safe Harbor allows it); unusual formats and names without a name context may be missed.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { guardrailsDir } from "../root.js";
import type { RedactedEntity } from "../types.js";

/** Entity types the detector emits (the replacement is `[TYPE]`). */
export const PHI_ENTITY_TYPES = [
  "NAME",
  "DATE",
  "AGE",
  "SSN",
  "ID",
  "ACCOUNT",
  "PHONE",
  "EMAIL",
  "URL",
  "IP",
  "ADDRESS",
  "ZIP",
  "LOCATION",
] as const;
export type PhiEntityType = (typeof PHI_ENTITY_TYPES)[number];

/** A detected entity: type and offsets (UTF-16) into the input, plus its replacement. Never the value. */
export interface PhiEntity extends RedactedEntity {
  type: PhiEntityType;
  replacement: string;
}

/** Result of {@link PhiDetector.redact}. */
export interface PhiRedaction {
  /** The input with every entity replaced by `[TYPE]`. */
  text: string;
  /** Entities in input order (offsets into the input). */
  entities: PhiEntity[];
}

/** Options of {@link createPhiDetector}. */
export interface PhiDetectorOptions {
  /** Entity types to detect; default all of {@link PHI_ENTITY_TYPES}. */
  entities?: readonly PhiEntityType[];
  /** Extra names (e.g. the patient's and care team's, from the FHIR record) to always treat as names. */
  names?: readonly string[];
  /**
   * Path of a lexicon JSON (`{first, last, intl, ambiguous, common, cities}` arrays of lower-case words; missing arrays
   * count as empty); default the shipped one.
   */
  lexiconFile?: string;
}

/** A PHI detector. Stateless after construction; safe to share. */
export interface PhiDetector {
  /** Finds entities; offsets into `text`, sorted, non-overlapping. */
  detect(text: string): PhiEntity[];
  /** Finds and replaces entities with `[TYPE]`. */
  redact(text: string): PhiRedaction;
}

// Lexicon word classes, as bits of one map entry per word: one hash lookup answers every question about a token.
const F_FIRST = 1;
const F_LAST = 2;
const F_INTL = 4;
const F_AMBIGUOUS = 8;
const F_COMMON = 16;
const F_CITY = 32;
const F_CITY_FIRST = 64;

/** A read-only set view over one class of the lexicon map. */
interface WordSet {
  has(word: string): boolean;
  readonly size: number;
}

interface Lexicon {
  /** word -> F_* bits */
  flags: Map<string, number>;
  cities: WordSet;
  /** First words of multi-word city names ("san" for "san diego"). */
  cityFirst: WordSet;
  first: WordSet;
  last: WordSet;
  /** Names of other countries (faker locales): trusted only with some context. */
  intl: WordSet;
  ambiguous: WordSet;
  common: WordSet;
}

const lexicons = new Map<string, Lexicon>();

function loadLexicon(file: string): Lexicon {
  let lx = lexicons.get(file);
  if (!lx) {
    const raw = JSON.parse(readFileSync(file, "utf8")) as Record<string, string[]>;
    const flags = new Map<string, number>();
    const add = (words: string[] | undefined, bit: number): number => {
      for (const w of words ?? []) flags.set(w, (flags.get(w) ?? 0) | bit);
      return words?.length ?? 0;
    };
    const view = (bit: number, size: number): WordSet => ({ has: (w) => ((flags.get(w) ?? 0) & bit) !== 0, size });
    const cityFirst = (raw["cities"] ?? []).filter((c) => c.includes(" ")).map((c) => c.slice(0, c.indexOf(" ")));
    lx = {
      flags,
      cities: view(F_CITY, add(raw["cities"], F_CITY)),
      cityFirst: view(F_CITY_FIRST, add(cityFirst, F_CITY_FIRST)),
      first: view(F_FIRST, add(raw["first"], F_FIRST)),
      last: view(F_LAST, add(raw["last"], F_LAST)),
      intl: view(F_INTL, add(raw["intl"], F_INTL)),
      ambiguous: view(F_AMBIGUOUS, add(raw["ambiguous"], F_AMBIGUOUS)),
      common: view(F_COMMON, add(raw["common"], F_COMMON)),
    };
    lexicons.set(file, lx);
  }
  return lx;
}

// ---------------------------------------------------------------------------------------------
// Pattern recognizers. Every pattern starts at a boundary (lookbehind) so that a failed attempt is
// not retried from every inner position, and uses bounded quantifiers: linear in the input length.

const MONTH =
  "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";

interface Pattern {
  type: PhiEntityType;
  re: RegExp;
  /** Optional check on the match; return false to drop it. */
  valid?: (m: RegExpExecArray) => boolean;
  /** Report only this capture group (offset found inside the match). */
  group?: number;
  /** Cheap pre-check on the whole text; the pattern runs only when it returns true. */
  gate?: (text: string) => boolean;
}

function luhn(digits: string): boolean {
  let sum = 0;
  let dbl = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (dbl) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    dbl = !dbl;
  }
  return sum % 10 === 0;
}

const VENT_BEFORE = /\b(?:peep|ps|psv|cpap|bi-?pap|flowby|flow-by|settings?|vent|wean(?:ed|ing)?(?: down)? to|simv|ac|imv|pressure support|tc|trach collar)\b[^.\n]{0,14}$/i;
const VENT_AFTER = /^\s?(?:bi-?pap|cpap|peep|ps\b|psv|fio2|\/\d|\d{0,3}%)/i;
const US_STATES =
  "alabama|alaska|arizona|arkansas|california|colorado|connecticut|delaware|florida|georgia|hawaii|idaho|illinois|indiana|iowa|kansas|kentucky|louisiana|maine|maryland|massachusetts|michigan|minnesota|mississippi|missouri|montana|nebraska|nevada|new hampshire|new jersey|new mexico|new york|north carolina|north dakota|ohio|oklahoma|oregon|pennsylvania|rhode island|south carolina|south dakota|tennessee|texas|utah|vermont|virginia|washington|west virginia|wisconsin|wyoming";
const STREET_WORD_SUFFIX =
  /(?:tie|katu|kuja|polku|vej|gade|straße|strasse|str\.|weg|gasse|laan|straat|plein|vägen|gatan|veien|gata|utca|ulica|ul\.|rue|calle|avenida|rua|via|viale|piazza|street|road|avenue|maantee|puiestee)$/i;
// Gates: cheap scans that start on a literal character, so the costlier pattern runs only when it can match.
const IPV6_GATE = /:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:/;
const MILITARY_GATE = /[OoPp]\s{1,2}[Aa][AaEePp]\s{1,2}\d{5}/;
const UUID_GATE = /-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-/;
/** A street word's suffix right before a space and a digit (the street-word pattern needs one). */
const STREET_NUMBER_GATE = /(?:tie|katu|kuja|polku|vej|gade|straße|strasse|str\.|weg|gasse|laan|straat|plein|vägen|gatan|veien|gata|utca|ulica|ul\.|rue|calle|avenida|rua|via|viale|piazza|street|road|avenue|tee|maantee|puiestee)\s{1,2}\d/i;
const DOMAIN_GATE = /\.(?:com|org|net|edu|gov|mil|info|biz|io)\b/;

const PATTERNS: Pattern[] = [
  { type: "EMAIL", gate: (t) => t.includes("@"), re: /(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9][A-Za-z0-9-]{0,62}(?:\.[A-Za-z0-9-]{1,63}){0,4}\.[A-Za-z]{2,24}\b/g },
  { type: "URL", re: /(?<![\w/])(?:https?:\/\/|www\.)[^\s<>"'|]{1,2000}/gi },
  { type: "URL", gate: (t) => DOMAIN_GATE.test(t), re: /(?<![\w@.-])(?:[a-z0-9-]{1,63}\.){1,4}(?:com|org|net|edu|gov|mil|info|biz|io)(?![\w-])\/?/g },
  { type: "IP", re: /(?<![\w.])(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?![\w.]\w)/g },
  { type: "IP", gate: (t) => IPV6_GATE.test(t), re: /(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?![\w:])/g },
  { type: "IP", gate: (t) => t.includes("::"), re: /(?<![\w:])(?:[0-9A-Fa-f]{1,4}:){1,6}:(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,5})?(?![\w:])/g },
  { type: "SSN", re: /(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])/g },
  { type: "SSN", re: /\b(?:ssn|social security(?: number)?)\W{0,4}(?:is\W{1,2})?(\d{9}|\d{3} \d{2} \d{4})\b/gi, group: 1 },
  {
    type: "ACCOUNT",
    re: /(?<![\w.-])\d(?:[ -]?\d){11,18}(?![\w-])/g,
    valid: (m) => luhn(m[0].replace(/\D/g, "")),
  },
  { type: "ACCOUNT", re: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g },
  // Phone and fax: North American forms, international +CC forms, and grouped digits.
  {
    type: "PHONE",
    re: /(?<![\w+/])(?:\+?1[ .-]?)?(?:\(\d{3}\)\s?|\d{3}\s?[ ./-]\s?)\d{3}\s?[ ./-]\s?\d{4}(?:\s?(?:x|ext\.?|extension)\s?\d{1,5})?(?![\w/])/gi,
  },
  { type: "PHONE", re: /(?<![\w+])\+\d{1,3}[ .-]?(?:\(0\)\s?)?(?:\(\d{1,4}\)\s?)?\d{1,5}(?:[ .-]?\d{2,5}){1,5}(?!\w)/g, valid: (m) => m[0].replace(/\D/g, "").length >= 8 },
  { type: "PHONE", re: /(?<![\w./-])\d{2,5}(?:[ .]\d{2,4}){2,5}(?![\w/]|\.\d)/g, valid: (m) => m[0].replace(/\D/g, "").length >= 8 },
  {
    type: "PHONE",
    re: /\b(?:pager|beeper|pgr|cell(?:ular)?|phone|tel|telephone|fax|mobile|desk|home|work|office|call(?: me)?(?: at| on)?)\s?(?:#|no\.?|number)?\s?[:#-]?\s?(\(?\d[\d() .-]{3,16}\d)(?!\w)/gi,
    group: 1,
    valid: (m) => m[1]!.replace(/\D/g, "").length >= 4,
  },
  { type: "PHONE", re: /(?<![\w/.-])(?:\d{3}[ -]\d{7}|\d{6}-\d{4})(?![\w/]|[.-]\d)/g },
  // hyphen-grouped digits with 8 or more digits that are not a date ("71-33-52-22", "0961-7596216")
  {
    type: "PHONE",
    re: /(?<![\w/.-])\d{2,5}(?:-\d{2,7}){1,4}(?![\w/]|[.-]\d)/g,
    valid: (m) => {
      const groups = m[0].split("-");
      if (m[0].replace(/\D/g, "").length < 8 || /^(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}-\d{1,2}-\d{2,4})$/.test(m[0])) return false;
      // groups of 3-4 digits are ranges and series ("1900-0700", "0700-1500-2300", "100-110-120", DRG 291-292-293)
      if (groups.every((g) => g.length >= 3 && g.length <= 4)) return false;
      // two groups: only a long subscriber number ("0961-7596216")
      if (groups.length === 2 && !groups.some((g) => g.length >= 6)) return false;
      // product, lot and code numbers ("NDC 0093-7180-56", "Lot 12-3456-78", FHIR "code": "...")
      return !/(?:ndc|lot|batch|serial|drg|cpt|icd|code|sku|model|part)\W{0,4}$|"code"\s{0,4}:\s{0,4}"$/i.test(m.input.slice(Math.max(0, m.index - 16), m.index));
    },
  },
  // Dates more specific than the year.
  { type: "DATE", re: /(?<![\w-])(?:19|20)\d{2}-(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w-])/g },
  {
    type: "DATE",
    re: /(?<![\w/.]|\d-)(?:0?[1-9]|1[0-2])(?:\/(?:0?[1-9]|[12]\d|3[01])(?:\/(?:19|20)?\d{2})?|-(?:0?[1-9]|[12]\d|3[01])-(?:19|20)?\d{2})(?![\w/]|-\d|\.\d)/g,
    valid: (m) => {
      const parts = m[0].split(/[/-]/);
      if (parts.length === 3) return true;
      const a = Number(parts[0]);
      const b = Number(parts[1]);
      if (a < b && (b === 2 || b === 3 || b === 4)) return false; // a fraction: 1/2, 3/4, 2/3
      if (b <= 5 && /(?:psv|ps|peep|cpap|bipap|ac|simv|vent|d5|str|strength|x)\s{0,2}$/i.test(m.input.slice(Math.max(0, m.index - 8), m.index))) return false;
      // ventilator settings ("PEEP/PS 5/10", "flowby 6/3", "wean to 10/5", "10/5 BIPAP")
      if (b <= 15 && VENT_BEFORE.test(m.input.slice(Math.max(0, m.index - 28), m.index))) return false;
      if (VENT_AFTER.test(m.input.slice(m.index + m[0].length, m.index + m[0].length + 12))) return false;
      return true;
    },
  },
  { type: "DATE", re: /(?<![\w/.-])(?:0?[1-9]|[12]\d|3[01])[./-](?:0?[1-9]|1[0-2])[./-](?:19|20)\d{2}(?![\w/])/g },
  // full month/day/year even when glued to a word ("on10/14/82"), and the second date of a range ("10/15-10/16")
  { type: "DATE", re: /(?<![\d/.])(?:0?[1-9]|1[0-2])\/(?:0?[1-9]|[12]\d|3[01])\/(?:19|20)?\d{2}(?![\d/])/g },
  { type: "DATE", re: /\d\/\d{1,2}-((?:0?[1-9]|1[0-2])\/(?:0?[1-9]|[12]\d|3[01]))(?![\d/])/g, group: 1 },
  { type: "DATE", re: /(?<![\w/.-])(?:0?[1-9]|1[0-2])\/(?:19|20)?\d{2}(?![\w/]|\.\d)/g },
  {
    type: "DATE",
    re: new RegExp(`\\b${MONTH}\\.?\\s{1,2}(?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\b(?:,?\\s{1,2}(?:19|20)\\d{2}\\b)?`, "gi"),
    valid: (m) => !/^may\s/i.test(m[0]) || /\d{4}|[a-z]{2}$/i.test(m[0]) || /^May/.test(m[0]),
  },
  { type: "DATE", re: new RegExp(`\\b(?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\s{1,2}(?:of\\s{1,2})?${MONTH}\\b\\.?(?:,?\\s{1,2}(?:19|20)\\d{2}\\b)?`, "gi") },
  { type: "DATE", re: new RegExp(`\\b${MONTH}\\.?,?\\s{1,2}(?:of\\s)?(?:19|20)\\d{2}\\b`, "gi"), valid: (m) => !/^may\s/i.test(m[0]) || /^May/.test(m[0]) },
  // Ages over 89.
  { type: "AGE", re: /\b(?:9\d|1[01]\d)(?=\s?-?\s?(?:yo|y\/o|y\.o\.?|yrs?|years?|year-old|yr-old|-year-old)\b)/gi },
  { type: "AGE", re: /\b(?:age[d:]?|aged)\s{1,2}(9\d|1[01]\d)\b/gi, group: 1 },
  // Addresses.
  {
    type: "ADDRESS",
    re: /(?<![\w-])\d{1,6}[A-Za-z]?(?:\s{1,2}[\p{Lu}\d][\p{L}'.-]{0,30}){1,4}\s{1,2}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Ter|Circle|Cir|Highway|Hwy|Parkway|Pkwy|Square|Squares|Sq|Trail|Trl|Crossing|Loop|Alley|Row|Walk|Path|Pike|Plaza|Heights|Hills|Park|Gardens|Mews|Close|Crescent|Grove)\b\.?/gu,
  },
  {
    // a street word ending in a street suffix of many languages, then a house number ("Puruntie 82", "Mellemvej 32")
    type: "ADDRESS",
    re: /(?<![\p{L}\d-])(?:\d{1,6}\s{1,2})?([\p{L}][\p{L}.-]{1,30})\s{1,2}\d{1,5}[A-Za-z]?\b/gu,
    gate: (t) => STREET_NUMBER_GATE.test(t),
    // English "via" ("access via 2 PIVs") is not a street; "Via Roma 12" is caught by the street-type-first pattern
    valid: (m) => STREET_WORD_SUFFIX.test(m[1]!) && m[1]!.toLowerCase() !== "via",
  },
  { type: "ADDRESS", re: /\b(?:apt\.?|apartment|suite|ste\.?|unit|room|rm\.?|box|psc|p\.?\s?o\.?\s?box)\s{0,2}#?\s?\d{1,6}[A-Z]?\b/gi },
  { type: "ADDRESS", re: /\b(?:APO|FPO|DPO)\s{1,2}(?:AA|AE|AP)\s{1,2}\d{5}\b/g },
  // US military mail: ship name or unit before the APO/FPO/DPO line ("USNS Mercy FPO AP 96677", "PSC 5420, Box 2708 APO AA 33879")
  { type: "ADDRESS", gate: (t) => MILITARY_GATE.test(t), re: /\b(?:usns|usnv|uss|uscgc)\s{1,2}[\p{L}][\p{L}'’-]{1,30}(?:\s{1,2}[\p{L}][\p{L}'’-]{1,30})?\s{1,3}(?:apo|fpo|dpo)\s{1,2}(?:aa|ae|ap)\s{1,2}\d{5}\b/giu },
  { type: "ADDRESS", gate: (t) => MILITARY_GATE.test(t), re: /\b(?:psc|unit)\s{1,2}\d{3,5},?\s{1,2}box\s{1,2}\d{3,5}\s{1,3}(?:apo|fpo|dpo)\s{1,2}(?:aa|ae|ap)\s{1,2}\d{5}\b/gi },
  {
    // street type first, then the street's name and the house number ("Rua João Pessoa 1636", "C/ Señores Curas 88", "ul. Północna 73")
    type: "ADDRESS",
    re: /(?<![\p{L}\d])(?:[Rr]ua|[Rr]úa|[Rr]ue|[Vv]iale|[Cc]alle|[Aa]venida|[Aa]vda\.|[Uu]l\.|[Uu]lica|[Ss]trada|[Pp]iazza|[Pp]raça|[Ll]argo|[Tt]ravessa|[Ee]strada|[Cc]arrer|[Pp]aseo|[Pp]laza|[Cc]amino|[Aa]leja|[Tt]rg)\s{1,2}(?:(?:[\p{Lu}][\p{Ll}][\p{L}'’.-]*|de|do|da|dos|das|del|di|la|le|des|du)\s{1,2}){1,4}\d{1,5}[A-Za-z]?\b(?![.,]\d)(?:\.(?!\d))?/gu,
    valid: (m) => !NOT_ADDR_AFTER_NUM.test(m.input.slice(m.index + m[0].length).trimStart()),
  },
  // ZIP codes: after a state code or a ZIP label, or a standalone 5-digit number.
  { type: "ZIP", re: /\b(?:zip(?:\s?code)?|postal\s?code|postcode)\s?(?:is\s)?:?\s{0,2}([A-Z0-9]{2,5}(?:[ -][A-Z0-9]{2,4})?)\b/gi, group: 1 },
  { type: "ZIP", re: /\b[A-Z]{2}\s{1,2}(\d{5}(?:-\d{4})?)\b/g, group: 1 },
  { type: "ZIP", re: /(?<![\w.,/:-])\d{5}(?:-\d{4})?(?![\w./:%]|,\d|-\d)/g },
  { type: "LOCATION", re: /\b(?:University|UNIVERSITY|Univ\.?|U) (?:of|OF) [A-Z][A-Za-z]{1,20}(?: [A-Z][A-Za-z]{2,20})?\b/g },
  { type: "LOCATION", re: new RegExp(`\\b(?:U|Univ\\.?|University) (?:of )?(?:${US_STATES})\\b`, "gi") },
  { type: "LOCATION", re: /(?<!\d\s{1,2})\b(?:(?:St|ST)\.\s?|(?:Saint|SAINT)\s)[A-Z][A-Za-z]{2,20}(?:'s)?\b/g },
  // Record, account, licence and other identifying numbers in context, and long digit runs.
  {
    type: "ID",
    re: /\b(?:mrn|mr#|medical record(?:\s(?:no\.?|number|#))?|acct|account(?:\s(?:no\.?|number|#))?|ref(?:erence)?(?:\s?#|\sno\.?|\snumber)?|record\s?#|licen[cs]e(?:\snumber)?(?:\sis)?|dl|driver'?s licen[cs]e(?:\snumber)?(?:\sis)?|patient\sid|member\sid|policy\s(?:no\.?|number|#)|id\s?#|id:|npi|dea|passport(?:\snumber)?(?:\sis)?)\s?[:#]?\s?((?=[A-Z0-9-]{0,20}\d)[A-Z0-9][A-Z0-9-]{3,20})\b/gi,
    group: 1,
  },
  { type: "ID", re: /(?<![\w.,-])\d{7,}(?![\w.,]|-\d)/g },
  // UUIDs (FHIR resource and record ids) and letter-framed licence / passport numbers ("S99991568", "X43747560X")
  { type: "ID", gate: (t) => UUID_GATE.test(t), re: /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g },
  { type: "ID", re: /\b[A-Z]{1,2}\d{7,9}[A-Z]?\b/g },
  // FHIR JSON address fields (the state is not a Safe Harbor identifier and is kept)
  { type: "LOCATION", gate: (t) => t.includes('"city"') || t.includes('"district"'), re: /"(?:city|district)"\s{0,4}:\s{0,4}"([^"\n]{1,80})"/g, group: 1 },
  { type: "ZIP", gate: (t) => t.includes('"postalCode"'), re: /"postalCode"\s{0,4}:\s{0,4}"([^"\n]{1,20})"/g, group: 1 },
  { type: "ADDRESS", gate: (t) => t.includes('"line"'), re: /"line"\s{0,4}:\s{0,4}\[\s{0,8}"([^"\n]{1,120})"/g, group: 1 },
];

// Words that introduce a name (titles) or a relative's name.
const TITLES = new Set([
  "dr", "drs", "mr", "mrs", "ms", "miss", "mister", "doctor", "prof", "professor", "sra", "herr", "frau", "madam", "mme", "sir", "dame", "mx",
]);
const RELATIONS = new Set([
  "wife", "husband", "daughter", "son", "dtr", "sister", "brother", "mother", "father", "mom", "dad", "friend", "proxy", "caseworker",
  "niece", "nephew", "grandson", "granddaughter", "grandmother", "grandfather", "aunt", "uncle", "partner", "spouse", "fiance", "fiancee",
  "girlfriend", "boyfriend", "sibling", "sis", "daughters", "sons", "sisters", "brothers", "nurse", "np", "rn", "pa", "ho", "rabbi", "chaplain",
  "pastor", "neighbor", "neighbour", "lawyer", "attorney", "guardian", "poa", "named", "called", "dear", "hcp", "contact", "by", "per", "with", "to", "from", "and", "cc",
]);
const WEAK_RELATIONS = new Set(["by", "per", "with", "to", "from", "and", "cc", "contact", "dear", "called"]);
const CUE_WORDS = new Set(["add", "kid", "starring", "features", "him", "her", "name", "me", "says", "said", "asks", "asked", "told", "tells", "wrote", "writes", "under", "called", "named", "meet", "thanks", "dear", "hi", "hello", "hey", "ask", "contact", "mr", "mrs", "ms", "dr"]);
const POST_CUE = /^(?:'s)?(?: lives? (?:on|at|in)| is from| spent | shouted| had given| says| said| wrote| told| asked| wishes| verbalizes| verbalized| states| stated| contacted| called| visited| phoned| was updated| updated)\b/;
const NON_ASCII = /[\u00C0-\u024F]/;
const NAME_IS = /\b(?:my name is|name is|name:|i am|i'm|this is)\s$/i;
const CREDENTIAL = /^,?\s{0,2}(?:RN|RRT|CRT|MD|NP|PA-C|LPN|CNA|MSW|LCSW|SLP|PharmD|RPh|PhD|BSN|MSN|CCRN)\b/;
const CREDENTIAL_LOWER = /^,?\s{0,2}(?:rn|rrt|crt|md|np|bsn\/rn|bsn|msn|lpn|ccrn|pa-c)\b/;
const CREDENTIALS = new Set(["rn", "rrt", "crt", "md", "np", "pa", "bsn", "msn", "lpn", "ccrn", "cna", "msw", "lcsw", "slp", "pharmd", "rph", "phd", "pa-c"]);
const FACILITY = /^(?:\s{1,2})(?:hospital|hosp|medical center|med ctr|clinic|health center|healthcare center|memorial|infirmary|nursing home|rehab|rehabilitation|campus|hospice|medical|health system|va|vamc|general|regional|house|med ctr)\b/i;
/** Hospital units and common clinical acronyms that follow "to"/"at"/"in" but are not places that identify anyone. */
const UNIT_ACRONYMS = new Set([
  "icu", "ccu", "micu", "sicu", "csru", "cvicu", "nicu", "picu", "vicu", "tsicu", "ed", "er", "or", "pacu", "ew", "osh", "ct", "mri", "ir", "ep",
  "cath", "lab", "rad", "pt", "ot", "rt", "md", "rn", "np", "pa", "ho", "gi", "gu", "id", "ent", "nsr", "sr", "st", "af", "afib", "vt", "vf",
  "bp", "hr", "rr", "sbp", "map", "cvp", "nad", "dic", "ards", "chf", "copd", "mi", "cabg", "ptca", "ivf", "tpn", "npo", "ngt", "ogt", "ett",
  "iabp", "abg", "cxr", "ekg", "ecg", "tee", "tte", "us", "ns", "lr", "d5w", "prbc", "ffp", "ac", "simv", "cpap", "psv", "peep", "ps", "tc",
  "am", "pm", "rle", "lle", "rue", "lue", "lll", "rll", "rul", "lul", "mat", "osa", "ltc", "snf", "rehab", "home", "floor", "ward", "unit",
  "mn", "bs", "bb", "ue", "oh", "nard", "lcx", "lad", "rca", "om", "pda", "rij", "lij", "mae", "lws", "lcs", "lcw", "le", "va", "tv", "dc", "bsd", "sob",
  "hosp", "mg", "ml", "cc", "iv", "po", "sc", "im", "prn", "bid", "tid", "qid", "qd", "qhs", "hs", "ok", "nc", "fm", "nrb", "vm", "cmo", "dnr", "dni",
]);
/** Word endings of drug names and clinical verbs, which are not ward names ("propofol 20", "captopril 25"). */
const DRUG_LIKE = /(?:ol|il|ine|ide|ate|pam|lam|pril|sartan|mab|cin|zole|one|ium|fen|ize|use|ert|ive)$/;
const WARD_PREV = new Set(["to", "from", "on", "at", "in", "transfer", "or", "and"]);
/** Roles, not names: a speaker label or the person before "(daughter)" may be one of these. */
const ROLE_WORDS = new Set([
  "interpreter", "translator", "caregiver", "chaplain", "resident", "surrogate", "hcp", "poa", "sw", "pcp", "attending", "fellow", "intern",
  "nurse", "doctor", "physician", "therapist", "pharmacist", "social", "worker", "patient", "pt", "family", "guardian", "proxy", "case", "manager",
  "updated", "spoke", "met", "call", "called", "with", "per", "visitor", "friend", "student", "provider", "clinician", "staff", "team", "user", "bot",
  "agent", "assistant", "system", "doula", "midwife", "coach", "aide", "tech", "technician", "dietitian", "dietician", "counselor", "psychologist",
]);
/** Lower-case particles inside personal names ("van de Noort", "ten Pas", "da Silva"). */
const NAME_PARTICLES = new Set(["van", "de", "der", "den", "ten", "ter", "von", "da", "di", "du", "dos", "das", "del", "della", "le", "la", "bin", "ibn", "al"]);
/** Verbs that follow a person as the subject of a sentence ("Sunniva is very reliable"). */
const SUBJECT_VERBS = new Set(["is", "was", "has", "had", "will", "would", "can", "could", "says", "said", "and", "lives", "began", "listed", "wrote", "went", "called"]);
const NAME_PREV = new Set(["is", "am", "i'm", "name", "me"]);
const LOC_PREV = new Set(["in", "from", "to", "at", "of", "the", "visiting"]);
/** Facility words that are part of the facility's proper name ("Frederick Memorial", "Laurel Regional"). */
const NAMED_FACILITY = new Set(["memorial", "regional", "rehab", "house"]);
const FACILITY_WORDS = new Set(["regional", "house", "hospital", "hosp", "medical", "med", "clinic", "health", "healthcare", "memorial", "infirmary", "nursing", "rehab", "rehabilitation", "campus", "hospice", "va", "vamc", "general"]);
const LOC_PREFIX = /\b(?:lives in|living in|live in|resides in|resident of|from|transferred from|transferred to|transfered to|transfered from|moved to|moved from|travel(?:l?ing|led)? to|trip to|visiting|in|at|to)\s{1,2}$/i;

/** Words that end a name run even when capitalised (facility and document words). */
const NOT_NAMES = new Set([
  "hosp", "hospital", "clinic", "center", "centre", "medical", "memorial", "campus", "unit", "ward", "icu", "ccu", "micu", "sicu", "er", "ed",
  "driver", "latino", "hispanic", "afib", "fib", "aflutter", "bermuda", "trendelenburg", "trendelenberg", "resp", "pulm", "heme", "tele", "soc", "integ", "addendum", "misc", "dispo", "cardio", "neuro", "endo", "skin", "social", "plan", "osh", "vicu", "csru", "ew", "careview", "ho", "min", "ve", "los", "rad", "sang", "riss", "sero", "pan", "bair", "fent", "quinton", "pearl", "riker", "swan", "levo", "aline", "pacer", "fick", "hickman", "foley", "dopa", "neo", "vanco", "lasix", "heparin", "english", "spanish", "french",
  "german", "italian", "russian", "chinese", "portuguese", "polish", "greek", "arabic", "hindi", "vietnamese", "korean", "japanese",
  "street", "st", "road", "rd", "avenue", "ave", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "was",
]);

const STRONG_LOC_PREFIX = /\b(?:transferr?ed (?:back )?(?:to|from)|transfer(?:red)? (?:back )?to|admitted to|presented to|went to|go to|lives in|live in|living in|resides in|nearby in|moved to|moved from|called to|discharged to|adm(?:itted)? (?:to|from)|sent to|brought to|tx to|taken to|flighted to|enroute to|arrival to|retired from|rec(?:ie|ei)ved from|transfer)\s{1,2}(?:the\s)?$/i;

/**
 * Letter/mark class of a BMP code point, filled on first use: 0 not yet known, 1 neither, 2 a letter (\p{L}), 3 a mark
 * (\p{M}). 64 KB for the life of the process; astral code points are classified each time (rare in clinical text).
 */
const BMP_CLASS = new Uint8Array(0x10000);
const LETTER = /^\p{L}$/u;
const MARK = /^\p{M}$/u;
const classify = (ch: string): number => (LETTER.test(ch) ? 2 : MARK.test(ch) ? 3 : 1);
function charClass(cp: number): number {
  if (cp >= 0x10000) return classify(String.fromCodePoint(cp));
  let v = BMP_CLASS[cp]!;
  if (v === 0) BMP_CLASS[cp] = v = classify(String.fromCharCode(cp));
  return v;
}

/**
 * The name rules' words, as a global unicode regex of `[\p{L}][\p{L}\p{M}'’-]*` would find them (a letter, then letters, marks,
 * apostrophes and hyphens; stepping one code point where no word starts), by a scan of char codes: ASCII is decided
 * inline and other code points by {@link charClass}. Calls `word(start, end, asciiLower)` for each, `asciiLower` true
 * when every character is ASCII and none is upper case (the word is its own lower case).
 */
function scanWords(text: string, word: (start: number, end: number, asciiLower: boolean) => void): void {
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    let size = 1;
    let lower = true;
    if (c < 128) {
      if (c >= 97 && c <= 122) {
        // a-z
      } else if (c >= 65 && c <= 90) lower = false;
      else {
        i++;
        continue;
      }
    } else {
      const cp = text.codePointAt(i)!;
      if (cp > 0xffff) size = 2;
      if (charClass(cp) !== 2) {
        i += size;
        continue;
      }
      lower = false;
    }
    const start = i;
    i += size;
    while (i < n) {
      const d = text.charCodeAt(i);
      if (d < 128) {
        if (d >= 97 && d <= 122) i++;
        else if (d >= 65 && d <= 90) {
          lower = false;
          i++;
        } else if (d === 39 || d === 45) i++; // ' -
        else break;
        continue;
      }
      if (d === 0x2019) {
        // ’
        lower = false;
        i++;
        continue;
      }
      const cp = text.codePointAt(i)!;
      if (charClass(cp) < 2) break;
      lower = false;
      i += cp > 0xffff ? 2 : 1;
    }
    word(start, i, lower);
  }
}

interface Tok {
  s: number;
  e: number;
  w: string;
  lower: string;
  /** Index in the token list. */
  i: number;
  /** The text between the previous token and this one ("" for the first). */
  g: string;
  /** Lexicon bits (F_*) of `lower`. */
  f: number;
}

const isUp = (c: number) => c >= 65 && c <= 90;
const isLow = (c: number) => c >= 97 && c <= 122;

/** Capitalised: "Smith", "SMITH", "J" (ASCII fast path; other scripts by case mapping). */
function isCap(w: string): boolean {
  const c0 = w.charCodeAt(0);
  if (c0 < 128) {
    if (!isUp(c0)) return false;
    if (w.length === 1) return true;
    const c1 = w.charCodeAt(1);
    return !isUp(c1) || isUpper(w);
  }
  return w[0] !== w[0]!.toLowerCase() && (w.length === 1 || w[1] === w[1]!.toLowerCase() || w === w.toUpperCase());
}
/** Title case: "Smith" (first letter upper, the rest not upper). */
function isTitleCase(w: string): boolean {
  if (w.length < 2) return false;
  const c0 = w.charCodeAt(0);
  if (c0 < 128 && !isUp(c0)) return false;
  if (c0 >= 128 && w[0] === w[0]!.toLowerCase()) return false;
  for (let i = 1; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (isUp(c)) return false;
    if (c >= 128 && w[i] !== w[i]!.toLowerCase()) return false;
  }
  return true;
}
/** Name case: title case, or title-case parts joined by ' or - ("O'Driscoll", "Stord-Painter", "McDonald"). */
function isNameCase(w: string): boolean {
  if (isTitleCase(w)) return true;
  const c0 = w.charCodeAt(0);
  if (c0 < 128 && !isUp(c0)) return false;
  if (w.includes("'") || w.includes("’") || w.includes("-")) {
    const parts = w.split(/['’-]/);
    return parts.every((p) => p.length > 0 && (isTitleCase(p) || (p.length === 1 && isUp(p.charCodeAt(0)))));
  }
  return c0 === 77 && /^(?:Mc|Mac)[A-Z][a-z]+$/.test(w);
}

/** All upper case, with at least one letter. */
function isUpper(w: string): boolean {
  let letter = false;
  for (let i = 0; i < w.length; i++) {
    const c = w.charCodeAt(i);
    if (isLow(c)) return false;
    if (isUp(c)) letter = true;
    else if (c >= 128) {
      const ch = w[i]!;
      if (ch !== ch.toUpperCase()) return false;
      if (ch !== ch.toLowerCase()) letter = true;
    }
  }
  return letter;
}

class Detector implements PhiDetector {
  readonly #types: Set<PhiEntityType>;
  readonly #lx: Lexicon;
  readonly #extra: Set<string>;

  constructor(opts: PhiDetectorOptions) {
    this.#types = new Set(opts.entities ?? PHI_ENTITY_TYPES);
    this.#lx = loadLexicon(opts.lexiconFile ?? path.join(guardrailsDir(), "data", "phi-lexicon.json"));
    this.#extra = new Set((opts.names ?? []).flatMap((n) => n.toLowerCase().split(/\s+/)).filter((n) => n.length > 1));
  }

  detect(text: string): PhiEntity[] {
    const found: Array<{ s: number; e: number; type: PhiEntityType }> = [];
    const types = this.#types;
    for (const p of PATTERNS) {
      if (!types.has(p.type) || (p.gate && !p.gate(text))) continue;
      p.re.lastIndex = 0;
      let lastRejected = -1;
      let m: RegExpExecArray | null;
      while ((m = p.re.exec(text)) !== null) {
        if (m[0].length === 0) {
          p.re.lastIndex = m.index + ((text.codePointAt(m.index) ?? 0) > 0xffff ? 2 : 1);
          continue;
        }
        if (p.valid && !p.valid(m)) {
          // A rejected candidate must not swallow the start of the next one ("at 255 Hersnapvej 18"): resume one
          // code point after its start. (With the u flag V8 moves a lastIndex inside a surrogate pair back to the
          // pair's start, so stepping one UTF-16 unit past an astral letter would find the same candidate forever.)
          const next = m.index + ((text.codePointAt(m.index) ?? 0) > 0xffff ? 2 : 1);
          p.re.lastIndex = next;
          // the scan must always move forward (the guard also covers engines that snap differently)
          if (next <= lastRejected) break;
          lastRejected = next;
          continue;
        }
        if (p.group !== undefined) {
          const g = m[p.group];
          if (!g) continue;
          const off = m.index + m[0].lastIndexOf(g);
          found.push({ s: off, e: off + g.length, type: p.type });
        } else {
          let e = m.index + m[0].length;
          if (p.type === "URL") while (e > m.index && /[.,;:!?)\]'"]/.test(text[e - 1]!)) e--;
          found.push({ s: m.index, e, type: p.type });
        }
      }
    }
    if (types.has("ADDRESS")) {
      scanAddresses(text, found, this.#lx.common);
      this.#addressLines(text, found);
    }
    if (types.has("NAME") || types.has("LOCATION")) this.#names(text, found);
    return merge(found, text);
  }

  redact(text: string): PhiRedaction {
    const entities = this.detect(text);
    if (entities.length === 0) return { text, entities };
    // joined into one flat string: a concatenation of slices would keep the unredacted input reachable
    // for as long as the redacted text lives (e.g. in the guardrail decision cache)
    const parts: string[] = [];
    let at = 0;
    for (const e of entities) {
      parts.push(text.slice(at, e.start), e.replacement);
      at = e.end;
    }
    parts.push(text.slice(at));
    return { text: parts.join(""), entities };
  }

  /** A street line followed by short lines (city, region, country + postcode) is one address. */
  #addressLines(text: string, found: Array<{ s: number; e: number; type: PhiEntityType }>): void {
    const streets = found.filter((f) => f.type === "ADDRESS");
    for (const a of streets) {
      let end = a.e;
      for (let k = 0; k < 4; k++) {
        const nl = text.indexOf("\n", end);
        if (nl < 0 || nl - end > 30) break;
        if (/\S/.test(text.slice(end, nl)) && !/^[\s,]*(?:[\p{L}\d.'-]+\s?){0,4}$/u.test(text.slice(end, nl))) break;
        let lineEnd = text.indexOf("\n", nl + 1);
        if (lineEnd < 0) lineEnd = text.length;
        const line = text.slice(nl + 1, lineEnd);
        if (line.trim().length === 0 || line.length > 40 || /[:?!]|\.\s|@|https?:/.test(line)) break;
        end = lineEnd;
      }
      if (end > a.e) found.push({ s: a.s, e: end, type: "ADDRESS" });
    }
  }

  #names(text: string, found: Array<{ s: number; e: number; type: PhiEntityType }>): void {
    const { first, common, ambiguous } = this.#lx;
    const lexFlags = this.#lx.flags;
    const extra = this.#extra;
    const toks: Tok[] = [];
    scanWords(text, (s, end, asciiLower) => {
      // trailing hyphens and apostrophes are not part of the word ("Smith-", "Jones'")
      let e = end;
      for (let c = text.charCodeAt(e - 1); e - s > 1 && (c === 45 || c === 39 || c === 0x2019); c = text.charCodeAt(e - 1)) e--;
      let w = text.slice(s, e);
      let lower = asciiLower ? w : w.toLowerCase();
      // possessive: "Smith's", "SMITH’S" (the test is on the lower case, as the word's own case may differ)
      const ll = lower.length;
      if (ll >= 2 && lower.charCodeAt(ll - 1) === 115 && (lower.charCodeAt(ll - 2) === 39 || lower.charCodeAt(ll - 2) === 0x2019)) {
        lower = lower.slice(0, -2);
        w = w.slice(0, -2);
      }
      const prev = toks.length > 0 ? toks[toks.length - 1]! : undefined;
      toks.push({ s, e: s + w.length, w, lower, i: toks.length, g: prev ? text.slice(prev.e, s) : "", f: lexFlags.get(lower) ?? 0 });
    });
    const n = toks.length;
    const isName = new Uint8Array(n);
    /** Named only by a weak cue ("her X", "X was"): such a word is not spread to its other mentions. */
    const weak = new Uint8Array(n);
    // per-token answers are memoised (0 unknown, 1 false, 2 true): the passes below ask the same questions many times
    const knownM = new Uint8Array(n);
    const commonM = new Uint8Array(n);
    const startM = new Uint8Array(n);
    const known = (t: Tok) => {
      let v = knownM[t.i]!;
      if (v === 0) knownM[t.i] = v = extra.has(t.lower) || ((((t.f & F_FIRST) !== 0) || ((t.f & F_LAST) !== 0) || ((t.f & F_INTL) !== 0)) && !NOT_NAMES.has(t.lower)) ? 2 : 1;
      return v === 2;
    };
    const onlyIntl = (t: Tok) => ((t.f & F_INTL) !== 0) && !((t.f & F_FIRST) !== 0) && !((t.f & F_LAST) !== 0) && !extra.has(t.lower);
    const isCommon = (t: Tok) => {
      let v = commonM[t.i]!;
      if (v === 0) commonM[t.i] = v = ((t.f & F_COMMON) !== 0) || ((t.f & F_AMBIGUOUS) !== 0) || t.lower.length < 2 ? 2 : 1;
      return v === 2;
    };
    const gap = (a: Tok, b: Tok) => (b.i === a.i + 1 ? b.g : text.slice(a.e, b.s));
    const sentenceStart = (i: number) => {
      if (i === 0) return true;
      let v = startM[i]!;
      if (v === 0) startM[i] = v = /[.!?:;\n]\s*$/.test(toks[i]!.g) || /^\s*["'(]$/.test(toks[i]!.g) ? 2 : 1;
      return v === 2;
    };
    const upperFlag = new Uint8Array(n);
    for (let j = 0; j < n; j++) upperFlag[j] = isUpper(toks[j]!.w) ? 1 : 0;
    const allCapsText = (i: number) => {
      // True when the surrounding text is upper case (so case says nothing about names).
      let up = 0;
      let tot = 0;
      for (let j = Math.max(0, i - 4); j < Math.min(n, i + 5); j++) {
        if (j === i) continue;
        tot++;
        up += upperFlag[j]!;
      }
      return tot > 0 && up / tot > 0.6;
    };
    const nameLike = (t: Tok, i: number) => {
      if (extra.has(t.lower)) return true;
      if (((t.f & F_COMMON) !== 0) && !known(t)) return false;
      if (NOT_NAMES.has(t.lower)) return false;
      if (isUpper(t.w) && allCapsText(i)) return (known(t) && !isCommon(t)) || (t.w.length > 2 && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0));
      if (isNameCase(t.w) || (isUpper(t.w) && t.w.length > 1)) return !((t.f & F_COMMON) !== 0) || known(t) || ((t.f & F_AMBIGUOUS) !== 0) ? true : false;
      // lower case: only dictionary names
      return known(t) && !allCapsText(i);
    };

    for (let i = 0; i < n; i++) {
      const t = toks[i]!;
      // 1. after a title ("Dr. Jones", "mrs. marcela carlson", "DR SULLIVAN")
      if (TITLES.has(t.lower) && i + 1 < n && /^(?:\.?\s{1,3}|\.)$/.test(gap(t, toks[i + 1]!))) {
        const nx = toks[i + 1]!;
        if (isCap(nx.w) || known(nx) || ((nx.f & F_AMBIGUOUS) !== 0) || !((nx.f & F_COMMON) !== 0)) {
          if (!(((nx.f & F_COMMON) !== 0) && !known(nx) && !((nx.f & F_AMBIGUOUS) !== 0) && !isCap(nx.w))) isName[i + 1] = 1;
        }
        continue;
      }
      // 2a. after "my name is", a speech verb or a greeting: a capitalised word that is not a common word
      if (i > 0 && NAME_PREV.has(toks[i - 1]!.lower) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower) && NAME_IS.test(text.slice(Math.max(0, t.s - 12), t.s)) && (isCap(t.w) || (known(t) && /name is\s$/i.test(text.slice(Math.max(0, t.s - 9), t.s))))) {
        isName[i] = 1;
        continue;
      }
      if (i > 0 && CUE_WORDS.has(toks[i - 1]!.lower) && /^[\s,:?]{1,8}$/.test(gap(toks[i - 1]!, t)) && isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(t.lower)) {
        isName[i] = 1;
        weak[i] = 1;
        continue;
      }
      // 2c. a capitalised unknown word followed by a person verb ("Timotea lives on", "Vinka: What")
      if (((isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0)) || ((t.w === t.lower || isUpper(t.w)) && ((t.f & F_FIRST) !== 0) && !NOT_NAMES.has(t.lower))) && !NOT_NAMES.has(t.lower) && POST_CUE.test(text.slice(t.e, t.e + 16).toLowerCase())) {
        isName[i] = 1;
        weak[i] = 1;
        continue;
      }
      // 2d. a line of two or three capitalised words (a letter head or signature: "Satu Elomo")
      if (isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower) && /(?:^|\n)[ \t>?]*$/.test(text.slice(Math.max(0, t.s - 6), t.s)) && i + 1 < n) {
        const nx = toks[i + 1]!;
        const line = text.slice(t.s, text.indexOf("\n", t.s) < 0 ? text.length : text.indexOf("\n", t.s));
        const lineToks = line.trim().split(/\s+/);
        if (/^[\p{Lu}][\p{L}'’-]+(?: [\p{Lu}]\.?)?(?: [\p{Lu}][\p{L}'’-]+){1,2}$/u.test(line.trim()) && !((nx.f & F_COMMON) !== 0) && lineToks.every((w) => !common.has(w.toLowerCase()) && !NOT_NAMES.has(w.toLowerCase()) && !UNIT_ACRONYMS.has(w.toLowerCase()))) {
          for (let j = i; j < n && toks[j]!.s < t.s + line.length; j++) isName[j] = 1;
          continue;
        }
      }
      // 2b. a capitalised word with letters outside ASCII (names in English text: "Szöllösy", "Guðmundsdóttir")
      if (isTitleCase(t.w) && NON_ASCII.test(t.w) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower)) {
        isName[i] = 1;
        continue;
      }
      // 2. after a relation or "my name is"
      const rel = t.lower.includes("-") ? t.lower.slice(t.lower.lastIndexOf("-") + 1) : t.lower;
      if (RELATIONS.has(rel) && i + 1 < n) {
        let j = i + 1;
        const g = gap(t, toks[j]!);
        if (!/^[\s,(:"'“]{1,4}$/.test(g)) continue;
        if (toks[j]!.lower === "is" && j + 1 < n) j++;
        const nx = toks[j]!;
        const weak = WEAK_RELATIONS.has(rel);
        if (weak) {
          if (t.lower === "and") continue; // handled when extending runs
          if (nx && (known(nx) || extra.has(nx.lower)) && !isCommon(nx) && (isTitleCase(nx.w) || isUpper(nx.w) || (nx.w === nx.lower && ((nx.f & F_FIRST) !== 0)))) isName[j] = 1;
        } else if (nx && !((nx.f & F_COMMON) !== 0) && nx.lower.length > 1 && !TITLES.has(nx.lower) && !NOT_NAMES.has(nx.lower) && !RELATIONS.has(nx.lower) && (known(nx) || (isCap(nx.w) && !allCapsText(j)) || (nx.w === nx.lower && !/(?:ed|ing|ly)$/.test(nx.lower) && !((nx.f & F_AMBIGUOUS) !== 0)))) {
          isName[j] = 1;
        } else if (nx && ((nx.f & F_AMBIGUOUS) !== 0) && isCap(nx.w) && !allCapsText(j)) {
          isName[j] = 1;
        }
        continue;
      }
      // 3. dictionary names in name shape
      if (isName[i]) continue;
      if (extra.has(t.lower)) {
        isName[i] = 1;
        continue;
      }
      if (!known(t) || isCommon(t)) continue;
      // a name known only from other countries' lists, starting a sentence: only as a subject ("Sunniva is", "Aksel Berg")
      if (onlyIntl(t) && (!isTitleCase(t.w) || (sentenceStart(i) && !(i + 1 < n && /^\s{1,2}$/.test(gap(t, toks[i + 1]!)) && (SUBJECT_VERBS.has(toks[i + 1]!.lower) || (isNameCase(toks[i + 1]!.w) && known(toks[i + 1]!) && !isCommon(toks[i + 1]!))))))) continue;
      if (isTitleCase(t.w)) {
        isName[i] = 1;
      } else if (isUpper(t.w) && t.w.length > 2 && i + 1 < n && known(toks[i + 1]!) && !isCommon(toks[i + 1]!) && /^\s{1,2}$/.test(gap(t, toks[i + 1]!))) {
        isName[i] = 1;
        isName[i + 1] = 1;
      } else if (t.w === t.lower && ((t.f & F_FIRST) !== 0) && i + 1 < n && ((toks[i + 1]!.f & F_LAST) !== 0) && !isCommon(toks[i + 1]!) && /^\s{1,2}$/.test(gap(t, toks[i + 1]!))) {
        isName[i] = 1;
        isName[i + 1] = 1;
      }
    }
    // 4. extend runs: neighbours that look like names, initials, and signatures ("DAN A. FORMAN-LYONS, RRT")
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < n; i++) {
        if (!isName[i]) continue;
        const t = toks[i]!;
        if (i + 1 < n && !isName[i + 1]) {
          const nx = toks[i + 1]!;
          const g = gap(t, nx);
          if (/^\.?\s{1,2}$/.test(g) && ((nx.w.length === 1 && isUpper(nx.w)) || (nameLike(nx, i + 1) && (isCap(nx.w) === isCap(t.w) || known(nx))) || (isTitleCase(t.w) && isTitleCase(nx.w) && ((nx.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(nx.lower)))) {
            if (!(nx.w.length === 1 && !/^\.?\s/.test(text.slice(nx.e, nx.e + 2)) && !/^\s/.test(g))) isName[i + 1] = 1;
          }
        }
        if (i > 0 && !isName[i - 1]) {
          const pv = toks[i - 1]!;
          const g = gap(pv, t);
          if (/^\.?\s{1,2}$/.test(g) && ((pv.w.length === 1 && isUpper(pv.w) && i > 1 && isName[i - 2]) || (nameLike(pv, i - 1) && known(pv) && isCap(pv.w) === isCap(t.w)))) {
            isName[i - 1] = 1;
          } else if (g === " " && isTitleCase(pv.w) && isNameCase(t.w) && !((pv.f & F_COMMON) !== 0) && !((pv.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(pv.lower) && !UNIT_ACRONYMS.has(pv.lower) && !RELATIONS.has(pv.lower) && !TITLES.has(pv.lower)) {
            // "Radu Crosson": a capitalised unknown word right before a surname
            isName[i - 1] = 1;
          }
        }
      }
    }
    // initial + surname ("E. WELSH", "Z. Miller") and "<name> and <name>"
    for (let i = 0; i + 1 < n; i++) {
      const t = toks[i]!;
      const nx = toks[i + 1]!;
      if (t.w.length === 1 && isUpper(t.w) && /^\.\s{1,2}$/.test(gap(t, nx)) && nx.w.length > 1 && !NOT_NAMES.has(nx.lower) && (allCapsText(i + 1) ? (known(nx) && !isCommon(nx)) || (nx.w.length > 2 && !((nx.f & F_COMMON) !== 0) && !((nx.f & F_AMBIGUOUS) !== 0)) : isNameCase(nx.w) && !((nx.f & F_COMMON) !== 0)) && !/[/\w'’]$/.test(text.slice(Math.max(0, t.s - 1), t.s))) {
        isName[i] = 1;
        isName[i + 1] = 1;
      }
      if (isName[i] && !isName[i + 1] && /^,\s{1,2}$/.test(gap(t, nx)) && isTitleCase(nx.w) && isTitleCase(t.w) && !((nx.f & F_COMMON) !== 0) && !((nx.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(nx.lower)) {
        isName[i + 1] = 1;
      }
      if (isName[i] && i + 2 < n && nx.lower === "and" && !isName[i + 2]) {
        const y = toks[i + 2]!;
        if (((known(y) || extra.has(y.lower)) && !isCommon(y)) || (isNameCase(y.w) && isNameCase(t.w) && !((y.f & F_COMMON) !== 0) && !NOT_NAMES.has(y.lower))) {
          if (/^\s{1,2}$/.test(gap(t, nx)) && /^\s{1,2}$/.test(gap(nx, y))) isName[i + 2] = 1;
        }
      }
    }
    // backwards: "<X>, <name>", "<X> and <name>", "<X> <initial> <name>"; forwards: generational suffixes
    for (let i = n - 1; i > 0; i--) {
      if (!isName[i]) continue;
      const t = toks[i]!;
      const pv = toks[i - 1]!;
      const g = gap(pv, t);
      const ok = (x: Tok) => isNameCase(x.w) && !((x.f & F_COMMON) !== 0) && !((x.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(x.lower) && !UNIT_ACRONYMS.has(x.lower);
      if (!isName[i - 1] && /^,\s{1,2}$/.test(g) && isNameCase(t.w) && ok(pv)) isName[i - 1] = 1;
      if (i > 1 && pv.lower === "and" && !isName[i - 2] && /^\s{1,2}$/.test(g) && /^\s{1,2}$/.test(gap(toks[i - 2]!, pv)) && isNameCase(t.w) && ok(toks[i - 2]!)) isName[i - 2] = 1;
      if (i > 1 && pv.w.length === 1 && isUpper(pv.w) && /^\.?\s{1,2}$/.test(g) && /^\s{1,2}$/.test(gap(toks[i - 2]!, pv)) && ok(toks[i - 2]!)) {
        isName[i - 1] = 1;
        isName[i - 2] = 1;
      }
      if (i + 1 < n && /^(?:II|III|IV|Jr|Sr)$/.test(toks[i + 1]!.w) && /^,?\s{1,2}$/.test(gap(t, toks[i + 1]!))) isName[i + 1] = 1;
    }
    // signatures: name-like words right before a credential ("Marie Munroe, RN", "barbara j. parrilli bsn/rn")
    for (let i = 0; i < n; i++) {
      const t = toks[i]!;
      const after = text.slice(t.e, t.e + 12);
      const upperCred = CREDENTIAL.test(after);
      if (!upperCred && !CREDENTIAL_LOWER.test(after)) continue;
      if (CREDENTIALS.has(t.lower)) continue;
      const line = text.lastIndexOf("\n", t.s);
      if (!upperCred) {
        const head = text.slice(line + 1, t.e).trim();
        const first0 = /^[a-z]+/.exec(head)?.[0];
        if (first0 && first.has(first0) && /^[a-z]+ (?:[a-z]\.? )?[a-z'-]+$/.test(head)) {
          for (let j = i; j >= 0 && toks[j]!.s > line; j--) isName[j] = 1;
          continue;
        }
      }
      for (let j = i; j >= 0 && toks[j]!.s > line && i - j < 4; j--) {
        const tj = toks[j]!;
        if (j < i && !/^\.?\s{1,3}$/.test(gap(tj, toks[j + 1]!))) break;
        const initial = tj.w.length === 1;
        if (initial && (j === i || /[\d'’/]$/.test(text.slice(Math.max(0, tj.s - 1), tj.s)))) break;
        const nameish = initial || known(tj) || ((tj.f & F_AMBIGUOUS) !== 0) || (isNameCase(tj.w) && !((tj.f & F_COMMON) !== 0)) || (upperCred && isUpper(tj.w) && !((tj.f & F_COMMON) !== 0));
        if (!nameish || NOT_NAMES.has(tj.lower) || CREDENTIALS.has(tj.lower)) break;
        if (!upperCred && !initial && !known(tj) && !((tj.f & F_AMBIGUOUS) !== 0) && !isNameCase(tj.w)) break;
        isName[j] = 1;
      }
    }
    // lists of people ("they had 3: silvana, adam and caleb", "our founders: Monjeau, Graves and Reed"): a run of
    // three or more single words joined by commas / "and", at least two of them dictionary names
    for (let i = 0; i < n; i++) {
      const items = [i];
      let j = i;
      while (j + 1 < n) {
        const g = gap(toks[j]!, toks[j + 1]!);
        if (/^,\s{1,2}$/.test(g)) {
          items.push(++j);
        } else if (/^,?\s{1,2}$/.test(g) && toks[j + 1]!.lower === "and" && j + 2 < n && /^\s{1,2}$/.test(gap(toks[j + 1]!, toks[j + 2]!))) {
          items.push((j += 2));
          break;
        } else break;
      }
      if (items.length >= 3) {
        const sameCase = items.every((k) => isNameCase(toks[k]!.w)) || items.every((k) => toks[k]!.w === toks[k]!.lower);
        const names = items.filter((k) => isName[k] || (known(toks[k]!) && !((toks[k]!.f & F_COMMON) !== 0))).length;
        const plain = items.every((k) => !NOT_NAMES.has(toks[k]!.lower) && !UNIT_ACRONYMS.has(toks[k]!.lower) && (!((toks[k]!.f & F_COMMON) !== 0) || ((toks[k]!.f & F_AMBIGUOUS) !== 0)));
        if (sameCase && plain && names >= 2) for (const k of items) isName[k] = 1;
      }
      i = Math.max(i, j);
    }
    // names with particles or a bare middle initial ("Maika van de Noort", "Willemine ten Pas", "Ravil G Yefimov"):
    // capitalised words around lower-case particles or one capital letter, at least one of them a dictionary name
    for (let i = 0; i + 2 < n; i++) {
      const a = toks[i]!;
      if (!isTitleCase(a.w) || ((a.f & F_COMMON) !== 0) || NOT_NAMES.has(a.lower)) continue;
      let j = i + 1;
      while (j < n && j - i <= 3 && (NAME_PARTICLES.has(toks[j]!.w) || (toks[j]!.w.length === 1 && isUp(toks[j]!.w.charCodeAt(0)))) && /^\s$/.test(gap(toks[j - 1]!, toks[j]!))) j++;
      if (j === i + 1 || j >= n || !/^\s$/.test(gap(toks[j - 1]!, toks[j]!))) continue;
      const z = toks[j]!;
      if (!isNameCase(z.w) || ((z.f & F_COMMON) !== 0) || NOT_NAMES.has(z.lower) || UNIT_ACRONYMS.has(a.lower) || ((((a.f & F_AMBIGUOUS) !== 0) || ((z.f & F_AMBIGUOUS) !== 0)) && !(known(a) && known(z)))) continue;
      for (let k = i; k <= j; k++) isName[k] = 1;
      i = j;
    }
    // a name followed by the relation in parentheses ("URSLA MORETTI (DAUGHTER)", "Ann Lee (wife)")
    for (let i = 0; i + 1 < n; i++) {
      const r = toks[i + 1]!;
      if (!RELATIONS.has(r.lower) || WEAK_RELATIONS.has(r.lower) || !/^\s?\($/.test(gap(toks[i]!, r))) continue;
      for (let j = i; j >= 0 && i - j < 3; j--) {
        const tj = toks[j]!;
        if (j < i && !/^\s{1,2}$/.test(gap(tj, toks[j + 1]!))) break;
        if (!(isNameCase(tj.w) || isUpper(tj.w)) || ((tj.f & F_COMMON) !== 0) || NOT_NAMES.has(tj.lower) || UNIT_ACRONYMS.has(tj.lower) || ROLE_WORDS.has(tj.lower) || RELATIONS.has(tj.lower) || tj.w.length < 3) break;
        isName[j] = 1;
      }
    }
    // a lower-case initial and a dictionary surname ("nsg (d. renna and j. o'brien)"); "e. coli" is not a surname
    for (let i = 0; i + 1 < n; i++) {
      const t = toks[i]!;
      const nx = toks[i + 1]!;
      if (t.w.length === 1 && isLow(t.w.charCodeAt(0)) && nx.g === ". " && (nx.f & F_LAST) !== 0 && !isCommon(nx) && !NOT_NAMES.has(nx.lower) && /(?:^|[(\n]|(?:and|or|by|with|per|to|nsg|rn|md|dr|,)\s)$/i.test(text.slice(Math.max(0, t.s - 5), t.s))) {
        isName[i] = 1;
        isName[i + 1] = 1;
      }
    }
    // a speaker label starting a line or sentence ('Zuzana: "Who are you?"')
    for (let i = 0; i < n; i++) {
      const t = toks[i]!;
      if (!isName[i] && isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !NOT_NAMES.has(t.lower) && !ROLE_WORDS.has(t.lower) && !RELATIONS.has(t.lower) && !TITLES.has(t.lower) && sentenceStart(i) && /^:\s?["“]/.test(text.slice(t.e, t.e + 3))) isName[i] = 1;
    }
    // all-lower-case text (case says nothing): a first name and the word after it ("olga krylova", "leone mazzi")
    if (!/\p{Lu}/u.test(text)) {
      for (let i = 0; i + 1 < n; i++) {
        const t = toks[i]!;
        const nx = toks[i + 1]!;
        if ((((t.f & F_FIRST) !== 0) || isName[i]) && !isCommon(t) && /^\s{1,2}$/.test(gap(t, nx)) && known(nx) && !isCommon(nx) && nx.lower.length > 2) {
          isName[i] = 1;
          isName[i + 1] = 1;
        } else if (isName[i] && nx.w.length === 1 && i + 2 < n && /^\s$/.test(gap(t, nx)) && /^\.?\s$/.test(gap(nx, toks[i + 2]!)) && (toks[i + 2]!.f & F_COMMON) === 0 && toks[i + 2]!.lower.length > 2) {
          // "eric g. samoylova": a name, a middle initial and the word after it
          isName[i + 1] = 1;
          isName[i + 2] = 1;
        }
      }
    }
    // one name, every mention: a word found as a name elsewhere in the text is a name wherever it is written the same way
    const seen = new Set<string>();
    const lowerText = !/\p{Lu}/u.test(text);
    for (let i = 0; i < n; i++) {
      const t = toks[i]!;
      // only names found by a strong cue, a dictionary name, or a capitalised word with letters outside ASCII:
      // a drug brand caught by a weak cue ("her Eliquis") must not spread to every dosing order
      const evidence = !weak[i] || known(t) || (isNameCase(t.w) && NON_ASCII.test(t.w));
      if (isName[i] && evidence && t.w.length > 2 && (isNameCase(t.w) || lowerText) && !isCommon(t) && !UNIT_ACRONYMS.has(t.lower) && !CREDENTIALS.has(t.lower)) seen.add(t.w);
    }
    if (seen.size > 0) {
      for (let i = 0; i < n; i++) {
        const t = toks[i]!;
        if (!isName[i] && seen.has(t.w) && !sentenceStart(i) && !/^\s{0,2}\d/.test(text.slice(t.e, t.e + 3))) isName[i] = 1;
      }
    }
    if (this.#types.has("NAME")) {
      for (let i = 0; i < n; i++) if (isName[i]) found.push({ s: toks[i]!.s, e: toks[i]!.e, type: "NAME" });
    }
    if (!this.#types.has("LOCATION")) return;
    // Facilities and places in context: "VAMC HOSPITAL", "reisterstown hospital", "lives in Hampton".
    const cities = this.#lx.cities;
    for (let i = 0; i < n; i++) {
      const t = toks[i]!;
      // a named facility word after a name or place ("FREDERICK MEMORIAL", "Baltimore Rehab", "LAUREL REGIONAL")
      if (i + 1 < n && NAMED_FACILITY.has(toks[i + 1]!.lower) && /^\s{1,2}$/.test(gap(t, toks[i + 1]!)) && isCap(toks[i + 1]!.w) && (isName[i] || ((t.f & F_CITY) !== 0))) {
        found.push({ s: t.s, e: toks[i + 1]!.e, type: "LOCATION" });
        i++;
        continue;
      }
      // a lower-case city after "lives in" ("both live in hampton")
      if (t.w === t.lower && ((t.f & F_CITY) !== 0) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && i > 0 && /\b(?:lives?|living|resides?|nearby) in\s{1,2}$/i.test(text.slice(Math.max(0, t.s - 16), t.s))) {
        found.push({ s: t.s, e: t.e, type: "LOCATION" });
        continue;
      }
      // city names (gazetteer), capitalised, up to three words ("San Diego", "New Haven", "BALTIMORE")
      if (cities.size > 0 && (!isName[i] || ((t.f & F_CITY_FIRST) !== 0)) && (isNameCase(t.w) || (isUpper(t.w) && t.w.length > 2)) && !UNIT_ACRONYMS.has(t.lower)) {
        let matched = 0;
        let key = t.lower;
        const maxK = ((t.f & F_CITY_FIRST) !== 0) ? 3 : 1;
        for (let k = 1; k <= maxK && i + k - 1 < n; k++) {
          if (k > 1) {
            const nx = toks[i + k - 1]!;
            if (!/^ $/.test(gap(toks[i + k - 2]!, nx)) || !(isNameCase(nx.w) || isUpper(nx.w))) break;
            key += " " + nx.lower;
          }
          if (cities.has(key) && (k > 1 || (!common.has(key) && !ambiguous.has(key) && !NOT_NAMES.has(key) && (isNameCase(t.w) || !allCapsText(i) || (i > 0 && LOC_PREV.has(toks[i - 1]!.lower) && t.w.length >= 5))))) matched = k;
        }
        if (matched > 1 || (matched === 1 && !isName[i])) {
          const last = toks[i + matched - 1]!;
          found.push({ s: t.s, e: last.e, type: "LOCATION" });
          i += matched - 1;
          continue;
        }
      }
      if (isName[i]) continue;
      const after = i + 1 < n && FACILITY_WORDS.has(toks[i + 1]!.lower) ? text.slice(t.e, t.e + 24) : "";
      if (i + 1 < n && FACILITY_WORDS.has(toks[i + 1]!.lower) && t.lower.length > 1 && (!((t.f & F_COMMON) !== 0) || (isTitleCase(t.w) && !NOT_NAMES.has(t.lower))) && FACILITY.test(after)) {
        const fw = toks[i + 1]!;
        found.push({ s: t.s, e: NAMED_FACILITY.has(fw.lower) && isCap(fw.w) === isCap(t.w) ? fw.e : t.e, type: "LOCATION" });
        const pv = i > 0 ? toks[i - 1]! : undefined;
        if (pv && /^\s{1,2}$/.test(gap(pv, t)) && (!((pv.f & F_COMMON) !== 0) || (isTitleCase(pv.w) && isTitleCase(t.w) && !NOT_NAMES.has(pv.lower))) && isCap(pv.w) === isCap(t.w)) {
          found.push({ s: toks[i - 1]!.s, e: toks[i - 1]!.e, type: "LOCATION" });
        }
        continue;
      }
      // a named ward or building with a floor number after to/from/on/at ("to quartermain 2", "ON QUARTERMAIN 6")
      if (i > 0 && t.w.length >= 5 && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(t.lower) && !UNIT_ACRONYMS.has(t.lower) && WARD_PREV.has(toks[i - 1]!.lower) && !DRUG_LIKE.test(t.lower) && /^\s\d{1,2}(?![\d,/]|\.\d|\s?(?:%|mg|mcg|ml|cc|u|units?|am|pm|hours?|hrs?|days?|x|l|liters?|meq|gm?)\b)/i.test(text.slice(t.e, t.e + 10))) {
        found.push({ s: t.s, e: t.e, type: "LOCATION" });
        continue;
      }
      // a facility acronym after a transfer verb or "at"/"in" ("transferred to GH", "at BIDMC"), not a hospital unit
      if (i > 0 && t.w.length >= 2 && t.w.length <= 5 && isUpper(t.w) && !UNIT_ACRONYMS.has(t.lower) && !((t.f & F_COMMON) !== 0) && LOC_PREV.has(toks[i - 1]!.lower) && (STRONG_LOC_PREFIX.test(text.slice(Math.max(0, t.s - 24), t.s)) || (!allCapsText(i) && /\b(?:at|in|to)\s$/i.test(text.slice(Math.max(0, t.s - 4), t.s)))) && !/^\s?\d/.test(text.slice(t.e, t.e + 2))) {
        found.push({ s: t.s, e: t.e, type: "LOCATION" });
        continue;
      }
      if (i > 0 && LOC_PREV.has(toks[i - 1]!.lower) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && t.lower.length > 1 && !NOT_NAMES.has(t.lower) && STRONG_LOC_PREFIX.test(text.slice(Math.max(0, t.s - 24), t.s))) {
        found.push({ s: t.s, e: t.e, type: "LOCATION" });
        const nx = toks[i + 1];
        if (nx && /^\s{1,2}$/.test(gap(t, nx)) && !((nx.f & F_COMMON) !== 0) && !NOT_NAMES.has(nx.lower) && isCap(nx.w) === isCap(t.w)) found.push({ s: nx.s, e: nx.e, type: "LOCATION" });
        continue;
      }
      if (i > 0 && isTitleCase(t.w) && !((t.f & F_COMMON) !== 0) && !((t.f & F_AMBIGUOUS) !== 0) && !NOT_NAMES.has(t.lower) && LOC_PREV.has(toks[i - 1]!.lower) && LOC_PREFIX.test(text.slice(Math.max(0, t.s - 20), t.s)) && !sentenceStart(i)) {
        found.push({ s: t.s, e: t.e, type: "LOCATION" });
        for (let j = i + 1; j < n && j < i + 3; j++) {
          const nx = toks[j]!;
          if (!/^\s{1,2}$/.test(gap(toks[j - 1]!, nx)) || !isTitleCase(nx.w) || ((nx.f & F_COMMON) !== 0)) break;
          found.push({ s: nx.s, e: nx.e, type: "LOCATION" });
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Free-form street addresses (international): a house number followed by street words and another
// number, a street suffix or a unit ("28245 Puruntie 82 Apt. 595"), or any address-like run after an
// address phrase ("lives at", "address is", "corner of"). Runs are consumed with a sticky token regex.

const ADDR_TRIGGER =
  /\b(?:address(?:es)?(?: is)?(?: here they are)?|lives (?:at|on)|live (?:at|on)|living at|located at|office is at|offices are located at|is at|is on|(?:sent|send(?: it| a new one)?|deliver(?:ed)?|mail(?:ed)?|return|moved|move) to|corner of|meet (?:me|you) at|stop at|drops? you off at|arrived at|enter on|north side of|south side of|address to|address with|it is|in)\s?:?\s{1,6}/giu;
const ADDR_NUM_START = /(?<![\w.,/:+-])\d{1,6}(?:\s\d{1,6})?\s(?=[\p{Lu}]|(?:ul|rue|rua|rúa|avenida|avda|calle|via|viale|str|út|utca|ulica|strada|aleja|trg)\b)/gu;
const ADDR_TOKEN =
  /(?:[ \t]{0,4}|,[ \t]{0,4}|\n[ \t>?]{0,6}|\n,[ \t]{0,4})(?:[\p{Lu}][\p{L}\p{M}'’.-]*|\d{1,6}[A-Za-z]?(?:-\d{1,4})?|(?:apt|apartment|suite|ste|unit|box|postbox|p\.o\.|po)\b\.?|(?:and|de|du|del|dei|der|van|von|u|ul|str|st|la|le|do|da|di|dos|das|y|of|the|corner|street|road|avenue|lane|drive|place|square|terrace|way|court)\b\.?|\((?:[\p{Lu}][\p{L}]*)\)|[\p{Ll}][\p{L}\p{M}'’-]{0,30}\.?)/uy;
const ADDR_SUFFIX = /^(?:út|ul|avda|aleja|põik|iela|gatve|street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|way|place|pl|terrace|sq|square|squares|loop|pass|club|union|strasse|straße|str|vej|katu|kuja|tie|rua|rue|via|vicolo|calle|gate|gata|gatan|vegen|veien|terrasse|trg|kapu|útja|utca|ulica|avenida|rúa|praia|plaza|piazza|allee|gasse|weg|laan|straat)\.?$/i;
const UNIT_WORD = /^(?:apt|apartment|suite|ste|unit|box|postbox|p\.o\.|po)\.?$/i;
const NOT_ADDR_AFTER_NUM = /^(?:%|(?:mg|ml|mcg|cc|kg|g|units?|hours?|hrs?|days?|weeks?|months?|years?|times|x|min|mins|minutes|am|pm|percent|liters?|l|views?|ago|overnight|doses?|tabs?|tablets?|puffs?|drops?|beats?|bpm|breaths?|mmhg)\b)/i;

/** Share of upper-case letters among the first 2,000 letters (clinical notes are often all caps). */
function upperShare(text: string): number {
  let up = 0;
  let letters = 0;
  for (let i = 0; i < text.length && letters < 2000; i++) {
    const c = text.charCodeAt(i);
    if (c >= 65 && c <= 90) {
      up++;
      letters++;
    } else if (c >= 97 && c <= 122) letters++;
  }
  return letters === 0 ? 0 : up / letters;
}

/** What {@link scanAddresses} needs to know of one address token; depends only on the text and the position. */
interface AddrToken {
  /** Index just past the token (the sticky regex's lastIndex). */
  next: number;
  /** Begins with a separator (space, comma or line break). */
  sep: boolean;
  /** Contains a line break. */
  nl: boolean;
  /** A number ... */
  num: boolean;
  /** ... followed by a unit or dose word ("5 mg", "3 days"): not an address. */
  numStop: boolean;
  /** A capitalised common word in all-capital text: ends the run. */
  upperCommonStop: boolean;
  /** Counts as a street word. */
  cap: boolean;
  suffix: boolean;
  unit: boolean;
  /** A lower-case word that is not a connector, unit or suffix. */
  lowerWord: boolean;
  /** ... and a common word. */
  lowerCommon: boolean;
  /** Ends a sentence (a word with a full stop, not an abbreviation of the address, before white space). */
  sentenceEnd: boolean;
  /** Starts with a capital, digit or parenthesis. */
  strong: boolean;
  /** A lower-case word a run may end on once it has lower-case words. */
  lowerEndable: boolean;
}

function scanAddresses(text: string, found: Array<{ s: number; e: number; type: PhiEntityType }>, common: WordSet): void {
  const upperText = upperShare(text) > 0.5;
  // Estonian "tee" (road) only in lower case: upper-case "TEE" is a transesophageal echo
  const isSuffix = (tok: string) => ADDR_SUFFIX.test(tok) || tok === "tee";
  // Candidate runs overlap (every house number starts one and each reads up to 24 tokens), so each position's token is
  // read and classified once per text: text made of candidates ("1 via 1 via ...") costs no more than 24 map lookups each.
  // at[pos]: 0 not read yet, -1 no token there, k the token tokens[k - 1]; allocated on the first read
  let at: Int32Array | undefined;
  const tokens: AddrToken[] = [];
  const tokenAt = (pos: number): AddrToken | null => {
    at ??= new Int32Array(text.length + 1);
    const k = at[pos]!;
    if (k !== 0) return k < 0 ? null : tokens[k - 1]!;
    ADDR_TOKEN.lastIndex = pos;
    const m = ADDR_TOKEN.exec(text);
    if (m === null || m[0].length === 0) {
      at[pos] = -1;
      return null;
    }
    const raw = m[0];
    const next = ADDR_TOKEN.lastIndex;
    const tok = raw.replace(/^[\s,>?]+/, "");
    const suffix = isSuffix(tok);
    const unit = UNIT_WORD.test(tok);
    const num = /^\d/.test(tok);
    const upper = !num && /^[\p{Lu}]/u.test(tok);
    const lowerStart = /^[\p{Ll}]/u.test(tok);
    const core = tok.replace(/[.'’-]+$/, "");
    const lowerWord = lowerStart && !unit && !suffix && !/^(?:and|de|du|del|dei|der|van|von|u|ul|str|st|la|le|do|da|di|dos|das|y|of|the|corner|na)\.?$/.test(tok);
    const t: AddrToken = {
      next,
      sep: /^[\s,]/.test(raw),
      nl: raw.includes("\n"),
      num,
      numStop: num && NOT_ADDR_AFTER_NUM.test(text.slice(next).trimStart()),
      upperCommonStop: upper && upperText && !suffix && !unit && common.has(tok.toLowerCase().replace(/[.'’]+$/, "")),
      // street words are capitalised words; an all-capital acronym (PEEP, PSV) counts only in all-capital text
      cap: upper && ((core.length >= 3 && !common.has(core.toLowerCase()) && (upperText || !isUpper(core))) || suffix),
      suffix,
      unit,
      lowerWord,
      lowerCommon: lowerWord && common.has(tok.toLowerCase().replace(/[.'’]+$/, "")),
      sentenceEnd: tok.endsWith(".") && tok.length > 3 && !unit && !suffix && /^\s/.test(text.slice(next, next + 1)),
      strong: /^[\p{Lu}\d(]/u.test(tok),
      lowerEndable: lowerStart && !/^(?:and|de|of|the|na|y)$/.test(tok),
    };
    at[pos] = tokens.push(t);
    return t;
  };
  const tryRun = (start: number, triggered: boolean): number => {
    let pos = start;
    let end = start;
    let caps = 0;
    let nums = 0;
    let suffix = false;
    let unit = false;
    let count = 0;
    let lines = 0;
    let lower = 0;
    let endBeforeLower = -1;
    let statsBeforeLower = { caps: 0, nums: 0, suffix: false, unit: false };
    let t: AddrToken | null;
    while (count < 24 && (t = tokenAt(pos)) !== null) {
      if (pos !== start && !t.sep) break; // tokens are separated
      pos = t.next;
      if (t.nl && ++lines > 4) break;
      if (t.num) {
        nums++;
        if (t.numStop) break;
      } else if (t.upperCommonStop) break;
      if (t.cap) caps++;
      if (t.unit) unit = true;
      if (t.suffix) suffix = true;
      if (t.lowerWord) {
        // a lower-case word: part of an address only in lower-case addresses ("3911 fourth avenue suite 112 calgary")
        if (lower === 0) {
          endBeforeLower = end;
          statsBeforeLower = { caps, nums, suffix, unit };
        }
        if (t.lowerCommon && (lower > 0 || !suffix)) break;
        lower++;
        if (lower > 6) break;
      }
      count++;
      // a sentence ends at a word with a full stop that is not an abbreviation of the address
      if (t.sentenceEnd) {
        if (t.strong) end = pos - 1;
        break;
      }
      // do not end on a connector word
      if (t.strong || t.unit || t.suffix || (lower > 0 && t.lowerEndable)) end = pos;
    }
    if (end <= start) return start;
    if (lower > 0 && !(suffix && nums >= 1 && (nums >= 2 || unit || triggered))) {
      // not a lower-case address: keep the run up to its first lower-case word
      if (endBeforeLower <= start) return start;
      end = endBeforeLower;
      ({ caps, nums, suffix, unit } = statsBeforeLower);
      lower = 0;
    }
    const first = text.slice(start, end);
    if (triggered) {
      if ((caps >= 1 || suffix) && (nums >= 1 || caps >= 2 || suffix)) return end;
      return start;
    }
    const afterNum = text.slice(start).replace(/^\d{1,6}(?:\s\d{1,6})?\s/, "");
    if (NOT_ADDR_AFTER_NUM.test(afterNum)) return start;
    if (upperText ? caps >= 1 && (suffix || unit) : (caps >= 1 || (suffix && lower > 0)) && (nums >= 2 || suffix || unit) && first.length > 6) return end;
    return start;
  };
  ADDR_NUM_START.lastIndex = 0;
  let m: RegExpExecArray | null;
  let covered = 0;
  while ((m = ADDR_NUM_START.exec(text)) !== null) {
    if (m.index < covered) continue;
    const e = tryRun(m.index, false);
    if (e > m.index) {
      found.push({ s: m.index, e, type: "ADDRESS" });
      covered = e;
      ADDR_NUM_START.lastIndex = e;
    }
  }
  ADDR_TRIGGER.lastIndex = 0;
  while ((m = ADDR_TRIGGER.exec(text)) !== null) {
    const s = m.index + m[0].length;
    const trig = m[0].toLowerCase().replace(/[\s:]+$/, "");
    const weak = trig === "in" || trig === "it is" || trig === "is at" || trig === "is on";
    if (upperText && weak) continue;
    const e = tryRun(s, !weak);
    if (e > s) {
      const corner = /corner of\s{1,6}$/i.exec(m[0]);
      // "the corner of X and Y" is the address, article included
      const the = corner && /(?:^|[^\p{L}\d])the\s$/iu.test(text.slice(Math.max(0, m.index - 5), m.index)) ? 4 : 0;
      found.push({ s: corner ? m.index - the : s, e, type: "ADDRESS" });
    }
  }
}

const PRIORITY: Record<PhiEntityType, number> = {
  EMAIL: 9, URL: 8, IP: 8, SSN: 8, ACCOUNT: 7, ADDRESS: 7, DATE: 6, PHONE: 6, ID: 5, AGE: 5, ZIP: 4, NAME: 3, LOCATION: 2,
};

/** Sorts, drops overlaps (longer / higher priority wins), joins adjacent names, adds replacements. */
function merge(found: Array<{ s: number; e: number; type: PhiEntityType }>, text: string): PhiEntity[] {
  found.sort((a, b) => a.s - b.s || b.e - a.e || PRIORITY[b.type] - PRIORITY[a.type]);
  const out: PhiEntity[] = [];
  for (const f of found) {
    const prev = out[out.length - 1];
    if (prev && f.s < prev.end) {
      if (f.e > prev.end) {
        if (f.e - f.s > prev.end - prev.start && PRIORITY[f.type] >= PRIORITY[prev.type]) {
          // a longer, stronger entity overlapping the previous: extend
          prev.end = f.e;
          prev.type = f.type;
          prev.replacement = `[${f.type}]`;
        } else {
          prev.end = f.e;
        }
      }
      continue;
    }
    if (prev && (prev.type === f.type && (f.type === "NAME" || f.type === "LOCATION" || f.type === "ADDRESS")) && /^[.,]?\s{1,2}$/.test(text.slice(prev.end, f.s))) {
      prev.end = f.e;
      continue;
    }
    out.push({ type: f.type, start: f.s, end: f.e, replacement: `[${f.type}]` });
  }
  return out;
}

/**
 * Creates a PHI detector. The default lexicon is read once per process and shared.
 * @throws Error when the lexicon file cannot be read or parsed
 */
export function createPhiDetector(options: PhiDetectorOptions = {}): PhiDetector {
  return new Detector(options);
}

let shared: PhiDetector | undefined;

/** Detects and redacts PHI with the default detector (all entity types). See {@link PhiDetector.redact}. */
export function redactPhi(text: string): PhiRedaction {
  shared ??= createPhiDetector();
  return shared.redact(text);
}

/**
 * Cheap helper for log lines: the text with PHI replaced by `[TYPE]` (default detector). Intended
 * for the audit logger, so no PHI reaches a log line. Never throws on a string input.
 */
export function redactPhiText(text: string): string {
  if (text.length === 0) return text;
  return redactPhi(text).text;
}
