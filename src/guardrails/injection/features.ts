/**
 * Feature extraction of the prompt-injection classifier, shared by the run-time detector and the
 * training script (scripts/train-injection.ts): hashed word unigrams, word bigrams, character
 * 4-grams and a few phrase rules over normalised text. Hashing (FNV-1a, 32 bit) into a fixed number
 * of buckets keeps extraction allocation-free apart from the normalised string.
 */

/** Number of hash buckets (2^18). A weights file records the bucket count it was trained with. */
export const DEFAULT_BUCKETS = 1 << 18;

/**
 * Phrase rules (multilingual: EN, DE, ES, FR, some others seen in injection sets): instruction
 * override, role change, prompt extraction, forced output. Each is one feature `r:<name>`.
 * Every pattern is anchored on literal words and uses bounded gaps: linear time.
 */
export const RULES: ReadonlyArray<readonly [string, RegExp]> = [
  ["override", /\b(?:ignore|ignoring|disregard|forget|forgot|drop|skip|bypass|override|overlook|abandon|leave|remove|igmre|ignor|vergiss|vergessen|ignoriere|ignorieren|missachte|olvida|olvide|oublie|oubliez|zaboravi|dimentica|ignora|забудьте|забудь)\b.{0,40}\b(?:instruction|instructions|previous|prior|above|before|everything|all|rules|guidelines|directions|context|assignments|tasks|orders|documents|articles|said|told|anweisungen|instruktionen|aufträge|aufgaben|vorherigen|bisherigen|alles|davor|zuvor|instrucciones|todo|antes|instructions|instrukcije|sve|инструкции|все)\b/],
  ["new_task", /\b(?:now|jetzt|nun|ahora)\b.{0,30}\b(?:new|neue|nueva|next|nächste|further|weitere)\s(?:task|tasks|aufgabe|aufgaben|instructions|anweisungen|challenge|herausforderung|assignment|tarea)/],
  ["role", /\b(?:you are now|you're now|from now on|act as|acting as|pretend|imagine you are|you are (?:a|an|the) |role-?play|roleplaying|play the role|stay in (?:their|your) roles?|du bist (?:jetzt|nun|ein|eine|keine)|jetzt bist du|tu es|eres|act like|behave as|fungieren|agieren|verhalte dich|tue so|stell dir vor,? du|spiele die rolle)\b/],
  ["reveal", /\b(?:prompt|system prompt|initial prompt|instructions|embeddings|prompt-texte|prompt texts?|eingabeaufforderung|anweisungen)\b.{0,30}\b(?:show|print|reveal|repeat|output|return|tell|zeige|zeig|drucke|gib)\b|\b(?:show|print|reveal|repeat|output|return|spell-?check|zeige|zeig|drucken?|wiederhole)\b.{0,40}\b(?:prompt|instructions|embeddings|above|text above|obige|oben|prompt-texte)\b/],
  ["force_say", /\b(?:say|sage|sag|write|schreibe|print|output|dites|di|decir|answer with|antworte mit|respond with|just say|only say|include that)\b.{0,30}(?:"|'|„|:|\bthat you\b|\bdass du\b)/],
  ["hate_forced", /\b(?:hate|hates|hasse|hassen|odio|déteste)\b/],
  ["stop_marker", /(?:^|\s)(?:stop|stopp|achtung|attention|====*|end\.?|new statement|neue anweisung|order:|instruction:|befehl)\s?[-:!.]/],
  ["no_docs", /\b(?:not|nicht|don'?t|do not|ohne|without)\b.{0,20}\b(?:documents|articles|context|dokumente|artikel|kontext|provided)\b/],
  ["jailbreak", /\b(?:dan mode|developer mode|jailbreak|jailbroken|no restrictions|without restrictions|unfiltered|uncensored|no (?:programming )?guidelines|keine regeln|evil ai|do anything now)\b/],
  ["praise_pivot", /\b(?:well done|good job|very good|excellent|great|super|gut gemacht|sehr gut|ausgezeichnet|toll|wow|congratulations|herzlichen glückwunsch|bravo|superbly done)\b.{0,60}\b(?:now|but now|jetzt|nun|next|further|weitere|neue|new)\b/],
];

/**
 * Unambiguous override phrases: any hit makes the score 1 regardless of the surrounding text, so an
 * injection buried in a long benign document is not diluted. Kept narrow (instructions, prompts and
 * rules as objects) so clinical text does not match.
 */
export const HARD_RULES: readonly RegExp[] = [
  // ("orders" only with all/any/your/my: "disregard the prior orders for bed 12" is a clinical correction)
  /\b(?:ignore|disregard|forget|override|bypass)\s(?:all\s|any\s|the\s|your\s|my\s|of\s)?(?:the\s)?(?:previous\s|prior\s|above\s|earlier\s|preceding\s|former\s|original\s|system\s)?(?:instructions|prompts?|rules|directions|guidelines|assignments)\b|\b(?:ignore|disregard|forget|override|bypass)\s(?:all\s|any\s|your\s|my\s)(?:previous\s|prior\s|above\s|earlier\s|preceding\s)?orders\b/,
  /\b(?:ignoriere|vergiss|missachte)\s(?:alle\s)?(?:vorherigen\s|bisherigen\s|obigen\s)?(?:anweisungen|instruktionen|aufträge|aufgaben|regeln)\b|\bvergiss\s(?:alles|jetzt alles)\b/,
  // ("the instructions" only as the system / initial / original / hidden ones: "repeat the instructions to the patient")
  /\b(?:reveal|print|show|repeat|output)\s(?:me\s)?(?:your\s(?:system\s|initial\s|original\s|hidden\s)?(?:prompt|instructions)|the\s(?:system\s|initial\s|original\s|hidden\s)(?:prompt|instructions)|the\sprompt)\b/,
  /\b(?:dan mode|developer mode enabled|do anything now|jailbroken)\b/,
  // role change and instruction override, as phrased in public injection corpora (EN, DE, FR, ES, HR, RU)
  /\bi want you to act as\b|\bich möchte, dass sie als\b|\bact as (?:a|an) [\w-]+ ?(?:interpreter|terminal|translator|console)\b/,
  /\b(?:forget|vergiss)\s(?:about\s)?(?:everything|all|alles)\b/,
  /\boubliez?\s(?:toutes?\s)?(?:les\s)?instructions\b|\bolvid[ae]\s(?:todo|todas\s(?:las\s)?instrucciones)\b|\bzaboravi\ssve\b|забудьте\sвсе|\babweichend\szu\s(?:den\s)?vorherigen\b/,
  /\b(?:ignore|igmre|ignoriere)\s(?:what|everything|alles|was)\s(?:i|ich)\s/,
  // (not a duty or a state: "you are now covering bed 12", "now you are cleared to start heparin")
  /\b(?:now you are|you are now|jetzt bist du|du bist jetzt|nun bist du)\b(?!\s(?:covering|on call|in charge|responsible|assigned|caring|cleared|scheduled|due|logged|connected|able|ready))/,
  // (not an explanation: "pretend you are explaining this to a 10-year-old")
  /\b(?:pretend (?:that )?you(?:'re| are) (?!\w+ing\b)|pretend (?:that )?you (?:can|could|have|were)\b|pretend to be\b|imagine you are\b|stell dir vor,? du bist\b|tu so als\b)/,
  /\b(?:new tasks?|neue aufgaben?|neue anweisungen|new instructions)\s(?:follow|folgen)\b|\bnow (?:comes?|follows?) (?:a )?new\b|\bnun folgen\b/,
  /\b(?:attention|achtung)\s?-\s?(?:stop|stopp)\b/,
  /\b(?:say|sage|sag|include)\b.{0,25}\b(?:hate|hasse)\b/,
  /zzspacedzz/,
  /\b(?:print|spell-?check|zeige|drucken)\b.{0,30}\b(?:above|obige|prompt)/,
  /\b(?:do not|don'?t|not)\s(?:look|use|answer)\b.{0,30}\b(?:documents|articles|context)\b|\bnot by the articles\b|\bignore all provided context\b/,
  /\b(?:well done|very good|sehr gut|gut gemacht|excellent performance|superbly done|great\.)\b.{0,80}\b(?:now|jetzt|nun)\b/,
  /\bhuman:\s?human:/,
  /^you are (?:the |a |an |three )/,
  /\b(?:role-?play(?:ing)?(?: as)?|play(?:ing)? the (?:leading |main )?roles?|stay (?:fully )?in (?:their|your|his|her) roles?|(?:are|as) (?:two |excellent )?actors?\b|act in a (?:film|movie))/,
  /^(?:state|say|write|schreibe|sage|behaupte) (?:that|dass)\b/,
  // ("order:" is left out: "New order: acetaminophen 650 mg" is everyday clinical language)
  // (a label starting a sentence, not "Discharge instruction: keep the wound dry")
  /(?:^|[.!?\n]\s{0,3})(?:instruction|befehl|anweisung)\s?:\s?\w/,
  /\b(?:untrue|unwahre|false|falsche) (?:headline|überschrift)\b/,
];

/**
 * Keyword gates: for each rule, words that every match of it contains, so that a rule whose words are all absent
 * from a text is never run (most texts contain none of them; running every regex over every position was most of
 * the scorer's cost). A gate is a list of groups; each group lists alternatives, and a rule can match only if every
 * group has an alternative present in the text. `null`: no gate (the rule is anchored at the start and cheap).
 *
 * In an alternative, each character that is not an ASCII word character (`[A-Za-z0-9_]`, what `\b` counts) stands
 * for ANY such character or the edge of the text: write `\b` and `\s` as a space, so `" ignore "` is the word
 * "ignore" between word boundaries. An alternative needs 4 or more characters to filter anything (shorter ones always
 * pass). An alternative without any ASCII word character (`"забудь"`, `"==="`) is instead looked up verbatim
 * (`String.prototype.includes`; write only the characters every match contains). Gates only have to be necessary,
 * never sufficient: the rule's regex still decides. A gate that is not necessary would silently lose matches, which
 * test/unit/guardrails/injection-equivalence.test.ts checks on generated matching strings and on the development sets.
 */
type Gate = ReadonlyArray<readonly string[]> | null;

/** Gates of {@link HARD_RULES}, index for index. */
export const HARD_RULE_GATES: readonly Gate[] = [
  [[" ignore ", " disregard ", " forget ", " override ", " bypass "], [" instructions ", " prompt ", " prompts ", " rules ", " directions ", " guidelines ", " orders ", " assignments "]],
  [[" ignoriere ", " vergiss ", " missachte "]],
  [[" reveal ", " print ", " show ", " repeat ", " output "], [" prompt ", " instructions "]],
  [[" dan mode ", " developer mode enabled ", " do anything now ", " jailbroken "]],
  [[" i want you to act as ", " ich möchte, dass sie als ", " act as a"]],
  [[" forget ", " vergiss "], [" everything ", " all ", " alles "]],
  [[" oublie", " olvid", " zaboravi sve ", "забудьте", " abweichend zu "]],
  [[" ignore ", " igmre ", " ignoriere "], [" what ", " everything ", " alles ", " was "]],
  [[" now you are ", " you are now ", " jetzt bist du ", " du bist jetzt ", " nun bist du "]],
  [[" pretend you ", " pretend that you ", " pretend to be ", " imagine you are ", " stell dir vor", " tu so als "]],
  [[" new task", " neue aufgabe", " neue anweisungen ", " new instructions ", " now come", " now follow", " nun folgen "]],
  [[" attention", " achtung"], [" stop ", " stopp "]],
  [[" say ", " sage ", " sag ", " include "], [" hate ", " hasse "]],
  [["zzspacedzz"]],
  [[" print ", " spell", " zeige ", " drucken "], [" above", " obige", " prompt"]],
  [[" not ", " don't ", " dont ", " ignore all provided context "], [" documents ", " articles ", " context "]],
  [[" well done ", " very good ", " sehr gut ", " gut gemacht ", " excellent performance ", " superbly done ", " great."], [" now ", " jetzt ", " nun "]],
  [[" human "]],
  null,
  [[" role play", " roleplay", " play the ", " playing the ", " stay in ", " stay fully in ", " actor ", " actors ", " act in a "]],
  null,
  [[" instruction ", " befehl ", " anweisung "]],
  [[" untrue ", " unwahre ", " false ", " falsche "], [" headline ", " überschrift "]],
];

/** Gates of {@link RULES}, index for index. */
export const RULE_GATES: readonly Gate[] = [
  // override
  [
    [
      " ignore ", " ignoring ", " disregard ", " forget ", " forgot ", " drop ", " skip ", " bypass ", " override ", " overlook ", " abandon ",
      " leave ", " remove ", " igmre ", " ignor ", " vergiss ", " vergessen ", " ignoriere ", " ignorieren ", " missachte ", " olvida ",
      " olvide ", " oublie ", " oubliez ", " zaboravi ", " dimentica ", " ignora ", "забудьте", "забудь",
    ],
  ],
  // new_task
  [
    [" now ", " jetzt ", " nun ", " ahora "],
    [" new ", " neue ", " nueva ", " next ", " nächste ", " further ", " weitere "],
    [" task", " aufgabe", " instructions", " anweisungen", " challenge", " herausforderung", " assignment", " tarea"],
  ],
  // role
  [
    [
      " you are now ", " you're now ", " from now on ", " act as ", " acting as ", " pretend ", " imagine you are ", " you are a ", " you are an ",
      " you are the ", " role play", " roleplay", " play the role ", " stay in their role", " stay in your role", " du bist jetzt ", " du bist nun ",
      " du bist ein", " du bist keine ", " jetzt bist du ", " tu es ", " eres ", " act like ", " behave as ", " fungieren ", " agieren ",
      " verhalte dich ", " tue so ", " stell dir vor", " spiele die rolle ",
    ],
  ],
  // reveal
  [
    [" prompt ", " instructions ", " embeddings ", " eingabeaufforderung ", " anweisungen ", " above ", " obige ", " oben "],
    [" show ", " print ", " reveal ", " repeat ", " output ", " return ", " tell ", " zeige ", " zeig ", " drucke", " gib ", " spell", " wiederhole "],
  ],
  // force_say
  [
    [
      " say ", " sage ", " sag ", " write ", " schreibe ", " print ", " output ", " dites ", " di ", " decir ", " answer with ", " antworte mit ",
      " respond with ", " include that ",
    ],
  ],
  // hate_forced
  [[" hate ", " hates ", " hasse ", " hassen ", " odio ", " déteste "]],
  // stop_marker
  [[" stop ", " stopp ", " achtung ", " attention ", "===", " end ", " new statement ", " neue anweisung ", " order ", " instruction ", " befehl "]],
  // no_docs
  [
    [" not ", " nicht ", " don't ", " dont ", " ohne ", " without "],
    [" documents ", " articles ", " context ", " dokumente ", " artikel ", " kontext ", " provided "],
  ],
  // jailbreak
  [
    [
      " dan mode ", " developer mode ", " jailbreak ", " jailbroken ", " no restrictions ", " without restrictions ", " unfiltered ", " uncensored ",
      " no guidelines ", " no programming guidelines ", " keine regeln ", " evil ai ", " do anything now ",
    ],
  ],
  // praise_pivot
  [
    [
      " well done ", " good job ", " very good ", " excellent ", " great ", " super ", " gut gemacht ", " sehr gut ", " ausgezeichnet ", " toll ",
      " wow ", " congratulations ", " herzlichen gl", " bravo ", " superbly done ",
    ],
    [" now ", " jetzt ", " nun ", " next ", " further ", " weitere ", " neue ", " new "],
  ],
];

/**
 * 6-bit class of a UTF-16 unit for the gates: 1..63 for the ASCII word characters, 0 for everything else (the
 * characters `\b` does not count as word characters, all of them alike).
 */
const GATE_CLASS = new Uint8Array(128);
{
  let k = 1;
  for (const [a, z] of [["0", "9"], ["A", "Z"], ["a", "z"], ["_", "_"]] as const) {
    for (let c = a.charCodeAt(0); c <= z.charCodeAt(0); c++) GATE_CLASS[c] = k++;
  }
}
const gateClass = (c: number): number => (c < 128 ? GATE_CLASS[c]! : 0);

/** Bit of a 4-gram of gate classes (24 bits) in the 2^16-bit set. */
const gramBit = (v: number): number => Math.imul(v, 0x9e3779b1) >>> 16;

/** Scratch set of the gram bits of the text being gated (filled and read within one {@link ruleGates} call). */
const GRAMS = new Uint32Array(1 << 11);

/** A compiled alternative: the bits of its 4-grams (none: always present), or a verbatim string. */
type Alternative = Int32Array | string;

function compileAlternative(alternative: string): Alternative {
  const bits: number[] = [];
  let v = 0;
  let word = false;
  for (let i = 0; i < alternative.length; i++) {
    const k = gateClass(alternative.charCodeAt(i));
    if (k !== 0) word = true;
    v = ((v << 6) | k) & 0xffffff;
    if (i >= 3) bits.push(gramBit(v));
  }
  return word ? Int32Array.from(bits) : alternative;
}

const compileGates = (gates: readonly Gate[]): Array<Alternative[][] | null> =>
  gates.map((g) => (g === null ? null : g.map((group) => group.map(compileAlternative))));
const HARD_GATES = compileGates(HARD_RULE_GATES);
const RULE_GATES_C = compileGates(RULE_GATES);

function present(t: string, alt: Alternative): boolean {
  if (typeof alt === "string") return t.includes(alt);
  const bits = alt;
  for (let i = 0; i < bits.length; i++) {
    const b = bits[i]!;
    if ((GRAMS[b >>> 5]! & (1 << (b & 31))) === 0) return false;
  }
  return true;
}

function gateMask(t: string, gates: ReadonlyArray<Alternative[][] | null>): number {
  let mask = 0;
  for (let r = 0; r < gates.length; r++) {
    const g = gates[r]!;
    let open = true;
    if (g !== null) {
      for (const group of g) {
        let any = false;
        for (const alt of group) {
          if (present(t, alt)) {
            any = true;
            break;
          }
        }
        if (!any) {
          open = false;
          break;
        }
      }
    }
    if (open) mask |= 1 << r;
  }
  return mask;
}

/** Which rules may match a text: bit r of `hard` for {@link HARD_RULES}[r], of `rules` for {@link RULES}[r]. */
export interface RuleGates {
  hard: number;
  rules: number;
}

/**
 * Evaluates every rule's keyword gate over `t` in one pass (every 4-gram of the text's gate classes, edges counted
 * as non-word characters, goes into a 2^16-bit set; an alternative is present when all its 4-grams are).
 * A clear bit means the rule cannot match `t`; a set bit means it may.
 */
export function ruleGates(t: string): RuleGates {
  GRAMS.fill(0);
  let v = 0;
  const n = t.length;
  for (let i = 0; i <= n; i++) {
    const c = i < n ? t.charCodeAt(i) : 0;
    v = ((v << 6) | (c < 128 ? GATE_CLASS[c]! : 0)) & 0xffffff;
    const b = Math.imul(v, 0x9e3779b1) >>> 16;
    GRAMS[b >>> 5]! |= 1 << (b & 31);
  }
  return { hard: gateMask(t, HARD_GATES), rules: gateMask(t, RULE_GATES_C) };
}

/** True when a {@link HARD_RULES} phrase occurs in the normalised text. `gates`: from {@link ruleGates}(t). */
export function hardRuleHit(t: string, gates: RuleGates = ruleGates(t)): boolean {
  for (let r = 0; r < HARD_RULES.length; r++) if (gates.hard & (1 << r) && HARD_RULES[r]!.test(t)) return true;
  return false;
}

/** FNV-1a over a string's UTF-16 units, continuing from `h`. */
function fnv(h: number, s: string, from = 0, to = s.length): number {
  for (let i = from; i < to; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

const SEED_WORD = 2166136261;
const SEED_BIGRAM = 0x811c9dc5 ^ 0x5bd1e995;
const SEED_CHAR = 0x811c9dc5 ^ 0x27d4eb2d;
const SEED_RULE = 0x811c9dc5 ^ 0x165667b1;

/** Lower-cases, folds width/compat forms, turns literal "\n" into spaces and joins s p a c e d letters. */
export function normalizeForInjection(text: string): string {
  let t = text.normalize("NFKC").toLowerCase();
  if (t.includes("\\n")) t = t.replaceAll("\\n", " ");
  // s p a c e d - o u t letters are an obfuscation: join them and mark the text
  if (/(?:^|\s)\p{L} \p{L} \p{L} \p{L} /u.test(t)) t = t.replace(/(?<=(?:^|\s)\p{L}) (?=\p{L}(?:\s|$))/gu, "") + " zzspacedzz";
  return t;
}

/** Word characters of the features' tokenizer among ASCII: a-z, 0-9 and the apostrophe. */
const ASCII_WORD = new Uint8Array(128);
for (let c = 0; c < 128; c++) ASCII_WORD[c] = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 39 ? 1 : 0;

/** The features' word characters: {@link ASCII_WORD}, and every non-ASCII unit but en/em dashes and curly quotes. */
function isWordChar(c: number): boolean {
  return c < 128 ? ASCII_WORD[c] === 1 : c !== 8211 && c !== 8212 && c !== 8220 && c !== 8221 && c !== 8222;
}

/**
 * Calls `emit(bucket)` for every feature occurrence in `t.slice(from, to)` (normalised text) plus the
 * rules set in the bitmask `rules`, and returns the number of occurrences emitted (for length normalisation).
 */
export function forEachFeature(t: string, from: number, to: number, rules: number, buckets: number, emit: (bucket: number) => void): number {
  const mask = buckets - 1;
  let n = 0;
  let prevStart = -1;
  let prevEnd = -1;
  let i = from;
  const len = to;
  while (i < len) {
    while (i < len && !isWordChar(t.charCodeAt(i))) i++;
    if (i >= len) break;
    const s = i;
    while (i < len && isWordChar(t.charCodeAt(i))) i++;
    const e = i;
    emit(fnv(SEED_WORD, t, s, e) & mask);
    n++;
    if (prevStart >= 0) {
      let h = fnv(SEED_BIGRAM, t, prevStart, prevEnd);
      h ^= 32;
      h = Math.imul(h, 16777619);
      emit(fnv(h, t, s, e) & mask);
      n++;
    }
    // character 4-grams of " word " (word boundaries marked)
    if (e - s >= 2) {
      const w0 = s - 1;
      const w1 = e + 1;
      for (let k = w0; k + 4 <= w1; k++) {
        let h = SEED_CHAR;
        for (let q = k; q < k + 4; q++) {
          const c = q < s || q >= e ? 32 : t.charCodeAt(q);
          h ^= c;
          h = Math.imul(h, 16777619);
        }
        emit((h >>> 0) & mask);
        n++;
      }
    }
    prevStart = s;
    prevEnd = e;
  }
  for (let r = 0; r < RULES.length; r++) {
    if (rules & (1 << r)) {
      // rules weigh as much as several ordinary features
      const b = fnv(SEED_RULE, RULES[r]![0]) & mask;
      for (let k = 0; k < 4; k++) emit(b);
      n += 4;
    }
  }
  return n;
}

/** Global copies of the rules, for finding every hit once per text. */
const RULES_G = RULES.map(([, re]) => new RegExp(re.source, re.flags.includes("g") ? re.flags : re.flags + "g"));

/**
 * Start offsets of every rule hit in `t`, as `[ruleIndex, offset]` pairs (by rule, then offset; each rule's hits do
 * not overlap). `gates`: from {@link ruleGates}(t).
 */
export function ruleHits(t: string, gates: RuleGates = ruleGates(t)): Array<[number, number]> {
  const hits: Array<[number, number]> = [];
  for (let r = 0; r < RULES_G.length; r++) {
    if ((gates.rules & (1 << r)) === 0) continue;
    const re = RULES_G[r]!;
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(t)) !== null) {
      hits.push([r, m.index]);
      if (m[0].length === 0) re.lastIndex++;
    }
  }
  return hits;
}

/** Bitmask of the rules with a hit starting in [from, to). */
export function rulesIn(hits: Array<[number, number]>, from: number, to: number): number {
  let mask = 0;
  for (const [r, at] of hits) if (at >= from && at < to) mask |= 1 << r;
  return mask;
}

/**
 * Splits a long normalised text into windows of about `size` characters (at word boundaries), so
 * that an injection inside a long document is not diluted. Short texts are one window. (Phrases that
 * straddle a boundary are still caught by the hard rules, which run over the whole text.)
 */
export function windows(t: string, size = 600, step = 600): Array<[number, number]> {
  if (t.length <= size) return [[0, t.length]];
  const out: Array<[number, number]> = [];
  for (let s = 0; s < t.length; s += step) {
    let a = s;
    if (a > 0) {
      const sp = t.indexOf(" ", a);
      a = sp < 0 || sp - a > 40 ? a : sp + 1;
    }
    let b = Math.min(t.length, a + size);
    if (b < t.length) {
      const sp = t.lastIndexOf(" ", b);
      if (sp > a + size / 2) b = sp;
    }
    out.push([a, b]);
    if (b >= t.length) break;
  }
  return out;
}

/** Scratch for the 4-gram buckets of one word in {@link sumFeatures} (grown on demand; used within one call). */
let wordGrams: Int32Array<ArrayBuffer> = new Int32Array(64);

/**
 * The same features as {@link forEachFeature}, summed directly against `weights` (no callback, no
 * allocation): returns the weight sum and stores the feature count in `out[0]`. Used on the hot path.
 *
 * One pass per word computes its unigram hash, its bigram hash (continuing from the previous word's prefix), the
 * prefix the next word's bigram continues from, and the hashes of its character 4-grams; the weights are then added
 * in the same order as {@link forEachFeature} emits them, so the sum is bit-identical to summing its buckets.
 */
export function sumFeatures(t: string, from: number, to: number, rules: number, weights: Float32Array, out: Float64Array): number {
  const mask = weights.length - 1;
  let sum = 0;
  let n = 0;
  let hasPrev = false;
  // FNV-1a state of "<previous word> " under SEED_BIGRAM: the previous word's half of the next bigram
  let prefix = 0;
  let grams = wordGrams;
  let i = from;
  while (i < to) {
    let c = t.charCodeAt(i);
    if (!isWordChar(c)) {
      i++;
      continue;
    }
    const s = i;
    let hw = SEED_WORD;
    let hb = prefix;
    let hn = SEED_BIGRAM;
    // the last three characters of " word " seen, for its 4-grams
    let p1 = 0;
    let p2 = 0;
    let p3 = 32;
    let g = 0;
    do {
      hw = Math.imul(hw ^ c, 16777619);
      hb = Math.imul(hb ^ c, 16777619);
      hn = Math.imul(hn ^ c, 16777619);
      if (i - s >= 2) {
        if (g === grams.length) grams = wordGrams = growGrams(grams);
        grams[g++] = Math.imul(Math.imul(Math.imul(Math.imul(SEED_CHAR ^ p1, 16777619) ^ p2, 16777619) ^ p3, 16777619) ^ c, 16777619) & mask;
      }
      p1 = p2;
      p2 = p3;
      p3 = c;
      if (++i >= to) break;
      c = t.charCodeAt(i);
    } while (isWordChar(c));
    if (i - s >= 2) {
      // the last 4-gram ends with the word boundary
      if (g === grams.length) grams = wordGrams = growGrams(grams);
      grams[g++] = Math.imul(Math.imul(Math.imul(Math.imul(SEED_CHAR ^ p1, 16777619) ^ p2, 16777619) ^ p3, 16777619) ^ 32, 16777619) & mask;
    }
    sum += weights[hw & mask]!;
    n++;
    if (hasPrev) {
      sum += weights[hb & mask]!;
      n++;
    }
    for (let k = 0; k < g; k++) sum += weights[grams[k]!]!;
    n += g;
    prefix = Math.imul(hn ^ 32, 16777619);
    hasPrev = true;
  }
  for (let r = 0; r < RULES.length; r++) {
    if (rules & (1 << r)) {
      sum += 4 * weights[fnv(SEED_RULE, RULES[r]![0]) & mask]!;
      n += 4;
    }
  }
  out[0] = n;
  return sum;
}

function growGrams(grams: Int32Array): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(grams.length * 2);
  bigger.set(grams);
  return bigger;
}
