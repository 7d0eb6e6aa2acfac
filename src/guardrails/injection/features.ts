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
  /\b(?:ignore|disregard|forget|override|bypass)\s(?:all\s|any\s|the\s|your\s|my\s|of\s)?(?:the\s)?(?:previous\s|prior\s|above\s|earlier\s|preceding\s|former\s|original\s|system\s)?(?:instructions|prompts?|rules|directions|guidelines|orders|assignments)\b/,
  /\b(?:ignoriere|vergiss|missachte)\s(?:alle\s)?(?:vorherigen\s|bisherigen\s|obigen\s)?(?:anweisungen|instruktionen|aufträge|aufgaben|regeln)\b|\bvergiss\s(?:alles|jetzt alles)\b/,
  /\b(?:reveal|print|show|repeat|output)\s(?:me\s)?(?:your|the)\s(?:system\s|initial\s|original\s|hidden\s)?(?:prompt|instructions)\b/,
  /\b(?:dan mode|developer mode enabled|do anything now|jailbroken)\b/,
  // role change and instruction override, as phrased in public injection corpora (EN, DE, FR, ES, HR, RU)
  /\bi want you to act as\b|\bich möchte, dass sie als\b|\bact as (?:a|an) [\w-]+ ?(?:interpreter|terminal|translator|console)\b/,
  /\b(?:forget|vergiss)\s(?:about\s)?(?:everything|all|alles)\b/,
  /\boubliez?\s(?:toutes?\s)?(?:les\s)?instructions\b|\bolvid[ae]\s(?:todo|todas\s(?:las\s)?instrucciones)\b|\bzaboravi\ssve\b|забудьте\sвсе|\babweichend\szu\s(?:den\s)?vorherigen\b/,
  /\b(?:ignore|igmre|ignoriere)\s(?:what|everything|alles|was)\s(?:i|ich)\s/,
  /\b(?:now you are|you are now|jetzt bist du|du bist jetzt|nun bist du)\b/,
  /\b(?:pretend (?:you|to be)|imagine you are|stell dir vor,? du bist|tu so als)\b/,
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
  /(?:^|\s)(?:instruction|order|befehl|anweisung)\s?:\s?\w/,
  /\b(?:untrue|unwahre|false|falsche) (?:headline|überschrift)\b/,
];

/** True when a {@link HARD_RULES} phrase occurs in the normalised text. */
export function hardRuleHit(t: string): boolean {
  for (const re of HARD_RULES) if (re.test(t)) return true;
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

function isWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 39 || (c > 127 && c !== 8211 && c !== 8212 && c !== 8220 && c !== 8221 && c !== 8222);
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

/** Start offsets of every rule hit in `t`, as `[ruleIndex, offset]` pairs. */
export function ruleHits(t: string): Array<[number, number]> {
  const hits: Array<[number, number]> = [];
  for (let r = 0; r < RULES_G.length; r++) {
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

/**
 * The same features as {@link forEachFeature}, summed directly against `weights` (no callback, no
 * allocation): returns the weight sum and stores the feature count in `out[0]`. Used on the hot path.
 */
export function sumFeatures(t: string, from: number, to: number, rules: number, weights: Float32Array, out: Float64Array): number {
  const mask = weights.length - 1;
  let sum = 0;
  let n = 0;
  let prevStart = -1;
  let prevEnd = -1;
  let i = from;
  while (i < to) {
    while (i < to && !isWordChar(t.charCodeAt(i))) i++;
    if (i >= to) break;
    const s = i;
    let hw = SEED_WORD;
    while (i < to) {
      const c = t.charCodeAt(i);
      if (!isWordChar(c)) break;
      hw ^= c;
      hw = Math.imul(hw, 16777619);
      i++;
    }
    const e = i;
    sum += weights[(hw >>> 0) & mask]!;
    n++;
    if (prevStart >= 0) {
      let h = fnv(SEED_BIGRAM, t, prevStart, prevEnd);
      h ^= 32;
      h = Math.imul(h, 16777619);
      sum += weights[fnv(h, t, s, e) & mask]!;
      n++;
    }
    if (e - s >= 2) {
      const w0 = s - 1;
      const w1 = e + 1;
      for (let k = w0; k + 4 <= w1; k++) {
        let h = SEED_CHAR;
        for (let q = k; q < k + 4; q++) {
          h ^= q < s || q >= e ? 32 : t.charCodeAt(q);
          h = Math.imul(h, 16777619);
        }
        sum += weights[(h >>> 0) & mask]!;
        n++;
      }
    }
    prevStart = s;
    prevEnd = e;
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
