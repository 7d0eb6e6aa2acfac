/** Word lists of the name and place rules (./names.ts): cue words, roles, facilities, clinical units. */

// Words that introduce a name (titles) or a relative's name.
export const TITLES = new Set([
  "dr", "drs", "mr", "mrs", "ms", "miss", "mister", "doctor", "prof", "professor", "sra", "herr", "frau", "madam", "mme", "sir", "dame", "mx",
]);
export const RELATIONS = new Set([
  "wife", "husband", "daughter", "son", "dtr", "sister", "brother", "mother", "father", "mom", "dad", "friend", "proxy", "caseworker",
  "niece", "nephew", "grandson", "granddaughter", "grandmother", "grandfather", "aunt", "uncle", "partner", "spouse", "fiance", "fiancee",
  "girlfriend", "boyfriend", "sibling", "sis", "daughters", "sons", "sisters", "brothers", "nurse", "np", "rn", "pa", "ho", "rabbi", "chaplain",
  "pastor", "neighbor", "neighbour", "lawyer", "attorney", "guardian", "poa", "named", "called", "dear", "hcp", "contact", "by", "per", "with", "to", "from", "and", "cc",
  // the usual misspellings of relation words in hurried notes (a relation, so never a name itself)
  "neice", "neices", "grandaughter", "grandaughters", "daugher", "duaghter",
]);
/** Clinical role abbreviations before a name: the name must be a dictionary name or capitalised in mixed-case text. */
export const ROLE_ABBR = new Set(["np", "rn", "pa", "ho"]);
export const WEAK_RELATIONS = new Set(["by", "per", "with", "to", "from", "and", "cc", "contact", "dear", "called"]);
export const CUE_WORDS = new Set(["add", "kid", "starring", "features", "him", "her", "name", "me", "says", "said", "asks", "asked", "told", "tells", "wrote", "writes", "under", "called", "named", "meet", "thanks", "dear", "hi", "hello", "hey", "ask", "contact", "mr", "mrs", "ms", "dr"]);
export const POST_CUE = /^(?:'s)?(?: lives? (?:on|at|in)| is from| spent | shouted| had given| says| said| wrote| told| asked| wishes| verbalizes| verbalized| states| stated| contacted| called| visited| phoned| was updated| updated)\b/;
export const NON_ASCII = /[\u00C0-\u024F]/;
export const NAME_IS = /\b(?:my name is|name is|name:|i am|i'm|this is)\s$/i;
export const CREDENTIAL = /^,?\s{0,2}(?:RN|RRT|CRT|MD|NP|PA-C|LPN|CNA|MSW|LCSW|SLP|PharmD|RPh|PhD|BSN|MSN|CCRN)\b/;
export const CREDENTIAL_LOWER = /^,?\s{0,2}(?:rn|rrt|crt|md|np|bsn\/rn|bsn|msn|lpn|ccrn|pa-c)\b/;
/** First words of {@link CREDENTIAL} / {@link CREDENTIAL_LOWER} as the word scanner reads them (lower case). */
export const CREDENTIAL_WORDS = new Set(["rn", "rrt", "crt", "md", "np", "pa-c", "lpn", "cna", "msw", "lcsw", "slp", "pharmd", "rph", "phd", "bsn", "msn", "ccrn"]);
export const CREDENTIALS = new Set(["rn", "rrt", "crt", "md", "np", "pa", "bsn", "msn", "lpn", "ccrn", "cna", "msw", "lcsw", "slp", "pharmd", "rph", "phd", "pa-c"]);
export const FACILITY = /^(?:\s{1,2})(?:hospital|hosp|medical center|med ctr|clinic|health center|healthcare center|memorial|infirmary|nursing home|rehab|rehabilitation|campus|hospice|medical|health system|va|vamc|general|regional|house|med ctr)\b/i;
/** Hospital units and common clinical acronyms that follow "to"/"at"/"in" but are not places that identify anyone. */
export const UNIT_ACRONYMS = new Set([
  "icu", "ccu", "micu", "sicu", "csru", "cvicu", "nicu", "picu", "vicu", "tsicu", "ed", "er", "or", "pacu", "ew", "osh", "ct", "mri", "ir", "ep",
  "cath", "lab", "rad", "pt", "ot", "rt", "md", "rn", "np", "pa", "ho", "gi", "gu", "id", "ent", "nsr", "sr", "st", "af", "afib", "vt", "vf",
  "bp", "hr", "rr", "sbp", "map", "cvp", "nad", "dic", "ards", "chf", "copd", "mi", "cabg", "ptca", "ivf", "tpn", "npo", "ngt", "ogt", "ett",
  "iabp", "abg", "cxr", "ekg", "ecg", "tee", "tte", "us", "ns", "lr", "d5w", "prbc", "ffp", "ac", "simv", "cpap", "psv", "peep", "ps", "tc",
  "am", "pm", "rle", "lle", "rue", "lue", "lll", "rll", "rul", "lul", "mat", "osa", "ltc", "snf", "rehab", "home", "floor", "ward", "unit",
  "mn", "bs", "bb", "ue", "oh", "nard", "lcx", "lad", "rca", "om", "pda", "rij", "lij", "mae", "lws", "lcs", "lcw", "le", "va", "tv", "dc", "bsd", "sob",
  "hosp", "mg", "ml", "cc", "iv", "po", "sc", "im", "prn", "bid", "tid", "qid", "qd", "qhs", "hs", "ok", "nc", "fm", "nrb", "vm", "cmo", "dnr", "dni",
  "picc", "cvl", "tlc", "rlq", "llq", "ruq", "luq", "hob", "oob", "uop", "bipap",
  // departments of a hospital ("from Pharmacy", "in Interventional Radiology")
  "pharmacy", "radiology", "interventional", "dialysis", "endoscopy", "pathology",
]);
/** Word endings of drug names and clinical verbs, which are not ward names ("propofol 20", "captopril 25"). */
export const DRUG_LIKE = /(?:ol|il|ine|ide|ate|pam|lam|pril|sartan|mab|cin|zole|one|ium|fen|ize|use|ert|ive)$/;
/** Words for a hospital that follow its name ("holy cross hospital"). */
export const HOSPITAL_WORDS = new Set(["hospital", "hosp", "hsp", "clinic", "infirmary"]);
export const CENTER_WORDS = new Set(["center", "centre", "ctr"]);
export const LOC_PREPOSITIONS = new Set(["to", "from", "at", "in"]);
/** Words before a hospital word that do not name it ("the hospital", "outside hosp", "a local clinic"). */
export const HOSPITAL_MODIFIERS = new Set([
  "the", "this", "that", "another", "other", "outside", "local", "same", "his", "her", "their", "our", "your", "my", "its", "nearest", "nearby",
  "previous", "prior", "referring", "receiving", "sending", "community", "general", "teaching", "university", "county", "state", "private", "rehab",
  "psychiatric", "psych", "children", "childrens", "women", "veterans", "new", "old", "different", "first", "second", "admitting", "home",
  "tertiary", "regional", "city", "area", "day", "night", "any", "each", "every", "one", "two", "both", "all", "some", "which", "what", "osh",
]);
export const WARD_PREV = new Set(["to", "from", "on", "at", "in", "transfer", "or", "and"]);
/** Roles, not names: a speaker label or the person before "(daughter)" may be one of these. */
export const ROLE_WORDS = new Set([
  "interpreter", "translator", "caregiver", "chaplain", "resident", "surrogate", "hcp", "poa", "sw", "pcp", "attending", "fellow", "intern",
  "nurse", "doctor", "physician", "therapist", "pharmacist", "social", "worker", "patient", "pt", "family", "guardian", "proxy", "case", "manager",
  "updated", "spoke", "met", "call", "called", "with", "per", "visitor", "friend", "student", "provider", "clinician", "staff", "team", "user", "bot",
  "agent", "assistant", "system", "doula", "midwife", "coach", "aide", "tech", "technician", "dietitian", "dietician", "counselor", "psychologist",
]);
/** Lower-case particles inside personal names ("van de Noort", "ten Pas", "da Silva"). */
export const NAME_PARTICLES = new Set(["van", "de", "der", "den", "ten", "ter", "von", "da", "di", "du", "dos", "das", "del", "della", "le", "la", "bin", "ibn", "al"]);
/** Verbs that follow a person as the subject of a sentence ("Sunniva is very reliable"). */
export const SUBJECT_VERBS = new Set(["is", "was", "has", "had", "will", "would", "can", "could", "says", "said", "and", "lives", "began", "listed", "wrote", "went", "called"]);
export const NAME_PREV = new Set(["is", "am", "i'm", "name", "me"]);
export const LOC_PREV = new Set(["in", "from", "to", "at", "of", "the", "visiting"]);
/** Facility words that are part of the facility's proper name ("Frederick Memorial", "Laurel Regional"). */
export const NAMED_FACILITY = new Set(["memorial", "regional", "rehab", "house"]);
export const FACILITY_WORDS = new Set(["regional", "house", "hospital", "hosp", "medical", "med", "clinic", "health", "healthcare", "memorial", "infirmary", "nursing", "rehab", "rehabilitation", "campus", "hospice", "va", "vamc", "general"]);
export const LOC_PREFIX = /\b(?:lives in|living in|live in|resides in|resident of|from|transferred from|transferred to|transfered to|transfered from|moved to|moved from|travel(?:l?ing|led)? to|trip to|visiting|in|at|to)\s{1,2}$/i;

/** Words that end a name run even when capitalised (facility and document words). */
export const NOT_NAMES = new Set([
  "hosp", "hospital", "clinic", "center", "centre", "medical", "memorial", "campus", "unit", "ward", "icu", "ccu", "micu", "sicu", "er", "ed",
  "driver", "latino", "hispanic", "afib", "fib", "aflutter", "bermuda", "trendelenburg", "trendelenberg", "resp", "pulm", "heme", "tele", "soc", "integ", "addendum", "misc", "dispo", "cardio", "neuro", "endo", "skin", "social", "plan", "osh", "vicu", "csru", "ew", "careview", "ho", "min", "ve", "los", "rad", "sang", "riss", "sero", "pan", "bair", "fent", "quinton", "pearl", "riker", "swan", "levo", "aline", "pacer", "fick", "hickman", "foley", "dopa", "neo", "vanco", "lasix", "heparin", "english", "spanish", "french",
  "german", "italian", "russian", "chinese", "portuguese", "polish", "greek", "arabic", "hindi", "vietnamese", "korean", "japanese",
  "street", "st", "road", "rd", "avenue", "ave", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from", "is", "was",
]);

/**
 * Species epithets of the bacteria, fungi and parasites clinical notes name most ("S. aureus", "K. pneumoniae",
 * "E. coli", "C. difficile", "P. jirovecii"): after a genus or its initial they name an organism, never a person, so
 * they are {@link NOT_NAMES} too. Microbiology vocabulary (Latin, no English given name or surname), not a list of rows.
 */
export const SPECIES_EPITHETS = new Set([
  "aureus", "epidermidis", "saprophyticus", "lugdunensis", "haemolyticus", "hominis", "capitis", "pneumoniae", "pyogenes",
  "agalactiae", "viridans", "mitis", "mutans", "gallolyticus", "anginosus", "faecalis", "faecium", "coli", "aeruginosa",
  "maltophilia", "baumannii", "cloacae", "aerogenes", "oxytoca", "mirabilis", "marcescens", "freundii", "koseri",
  "morganii", "influenzae", "parainfluenzae", "catarrhalis", "meningitidis", "gonorrhoeae", "trachomatis", "pallidum",
  "burgdorferi", "difficile", "perfringens", "fragilis", "acnes", "jejuni", "pylori", "enterica", "typhi", "typhimurium",
  "sonnei", "flexneri", "monocytogenes", "pertussis", "tuberculosis", "avium", "intracellulare", "kansasii", "abscessus",
  "albicans", "glabrata", "krusei", "parapsilosis", "tropicalis", "auris", "neoformans", "fumigatus", "jirovecii",
  "carinii", "gondii", "vaginalis", "histolytica", "lamblia", "cereus", "anthracis", "diphtheriae", "jeikeium",
  "pneumophila", "cholerae", "vulnificus", "enterocolitica", "multocida", "henselae", "genitalium", "urealyticum",
]);

export const STRONG_LOC_PREFIX = /\b(?:transferr?ed (?:back )?(?:to|from)|transfer(?:red)? (?:back )?to|admitted to|presented to|went to|go to|lives in|live in|living in|resides in|nearby in|moved to|moved from|called to|discharged to|adm(?:itted)? (?:to|from)|sent to|brought to|tx to|taken to|flighted to|enroute to|arrival to|retired from|rec(?:ie|ei)ved from|transfer)\s{1,2}(?:the\s)?$/i;

/**
 * Nouns that follow an eponym or a device's brand in clinical text ("Kussmaul's respirations", "Wegener's syndrome",
 * "Mallory-Weiss tear", "TED stockings", "balloon pump", "Asp pneumonia"): a dictionary name right before one of them,
 * with no other cue, names a sign, a disease or a device, not a person. Common medical vocabulary, not a list of rows.
 */
export const EPONYM_HEADS = new Set([
  "syndrome", "syndromes", "disease", "diseases", "sign", "signs", "respirations", "respiration", "reflex", "reflexes", "phenomenon", "palsy",
  "maneuver", "maneuvers", "manoeuvre", "test", "tests", "score", "scale", "criteria", "classification", "procedure", "operation", "repair",
  "fracture", "ulcer", "ulcers", "hernia", "cyst", "aneurysm", "tear", "tears", "pneumonia", "lesion", "lesions", "node", "nodes", "pouch",
  "pump", "stockings", "stocking", "catheter", "drain", "drains", "tube", "shunt", "valve", "dressing", "splint", "collar", "boots", "mask",
]);

// Word-class bits: each set above as one bit of the lexicon's word -> bits map (./lexicon.ts), above the lexicon's own
// classes (bits 0-7), so one hash lookup per token answers every "is this word a title / relation / unit ..." question.
export const W_TITLES = 1 << 8;
export const W_RELATIONS = 1 << 9;
export const W_ROLE_ABBR = 1 << 10;
export const W_WEAK_RELATIONS = 1 << 11;
export const W_CUE_WORDS = 1 << 12;
export const W_CREDENTIAL_WORDS = 1 << 13;
export const W_CREDENTIALS = 1 << 14;
export const W_UNIT_ACRONYMS = 1 << 15;
export const W_HOSPITAL_WORDS = 1 << 16;
export const W_CENTER_WORDS = 1 << 17;
export const W_LOC_PREPOSITIONS = 1 << 18;
export const W_HOSPITAL_MODIFIERS = 1 << 19;
export const W_WARD_PREV = 1 << 20;
export const W_ROLE_WORDS = 1 << 21;
export const W_SUBJECT_VERBS = 1 << 22;
export const W_NAME_PREV = 1 << 23;
export const W_LOC_PREV = 1 << 24;
export const W_NAMED_FACILITY = 1 << 25;
export const W_FACILITY_WORDS = 1 << 26;
export const W_NOT_NAMES = 1 << 27;
/** {@link EPONYM_HEADS} (above ./tokens.ts X_EXTRA, 1 << 28; below ./lexicon.ts F_BIG_CITY, 1 << 30). */
export const W_EPONYM_HEADS = 1 << 29;

/** The word sets that become bits of every lexicon map. */
export const WORD_CLASSES: ReadonlyArray<readonly [ReadonlySet<string>, number]> = [
  [TITLES, W_TITLES],
  [RELATIONS, W_RELATIONS],
  [ROLE_ABBR, W_ROLE_ABBR],
  [WEAK_RELATIONS, W_WEAK_RELATIONS],
  [CUE_WORDS, W_CUE_WORDS],
  [CREDENTIAL_WORDS, W_CREDENTIAL_WORDS],
  [CREDENTIALS, W_CREDENTIALS],
  [UNIT_ACRONYMS, W_UNIT_ACRONYMS],
  [HOSPITAL_WORDS, W_HOSPITAL_WORDS],
  [CENTER_WORDS, W_CENTER_WORDS],
  [LOC_PREPOSITIONS, W_LOC_PREPOSITIONS],
  [HOSPITAL_MODIFIERS, W_HOSPITAL_MODIFIERS],
  [WARD_PREV, W_WARD_PREV],
  [ROLE_WORDS, W_ROLE_WORDS],
  [SUBJECT_VERBS, W_SUBJECT_VERBS],
  [NAME_PREV, W_NAME_PREV],
  [LOC_PREV, W_LOC_PREV],
  [NAMED_FACILITY, W_NAMED_FACILITY],
  [FACILITY_WORDS, W_FACILITY_WORDS],
  [NOT_NAMES, W_NOT_NAMES],
  [SPECIES_EPITHETS, W_NOT_NAMES],
  [EPONYM_HEADS, W_EPONYM_HEADS],
];
