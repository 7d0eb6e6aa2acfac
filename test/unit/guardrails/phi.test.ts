import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { createPhiDetector, createPhiGuardrail, GuardrailPipeline, redactPhi, redactPhiText } from "../../../src/guardrails/index.js";

describe("PHI detector", () => {
  it("redacts Safe Harbor identifiers with typed placeholders", () => {
    const text =
      "Mrs. Margaret Gaudreau (MRN: 00482913, SSN 123-45-6789) seen 03/14/2024 by Dr. Sullivan. " +
      "Call 617-555-0123 or mail m.gaudreau@example.org; lives at 12 Maple Street, Boston, MA 02115. IP 10.1.2.3, https://portal.example.com/x";
    const r = redactPhi(text);
    for (const v of ["Margaret", "Gaudreau", "00482913", "123-45-6789", "03/14/2024", "Sullivan", "617-555-0123", "m.gaudreau@example.org", "12 Maple Street", "02115", "10.1.2.3", "portal.example.com"]) {
      expect(r.text, v).not.toContain(v);
    }
    expect(r.text).toContain("[NAME]");
    expect(r.text).toContain("[DATE]");
    expect(r.text).toContain("[SSN]");
    expect(r.text).toContain("[EMAIL]");
    expect(r.text).toContain("[PHONE]");
    for (const e of r.entities) expect(text.slice(e.start, e.end).length).toBeGreaterThan(0);
  });

  it("keeps clinical content, years and ages under 90", () => {
    const text = "Patient is a 67 yo male with CHF since 2019, BP 120/80, on Lasix 40 mg daily. Foley catheter in place.";
    expect(redactPhiText(text)).toBe(text);
  });

  it("redacts ages over 89 and dates with month names", () => {
    expect(redactPhiText("A 93 yo woman admitted on March 3rd, 2021.")).toBe("A [AGE] yo woman admitted on [DATE].");
  });

  it("finds relatives' names in context and extra names given by the caller", () => {
    expect(redactPhiText("daughter suzette called")).toBe("daughter [NAME] called");
    expect(createPhiDetector({ names: ["Zyxwv"] }).redact("seen with zyxwv today").text).toBe("seen with [NAME] today");
  });

  it("reads a name as one word across hyphens, apostrophes, marks and letters outside ASCII, without a possessive or trailing hyphen", () => {
    expect(redactPhiText("Seen by Dr. Stord-Painter today.")).toBe("Seen by Dr. [NAME] today.");
    expect(redactPhiText("Dr. Jones's patient is stable.")).toBe("Dr. [NAME]'s patient is stable.");
    expect(redactPhiText("DR. O’DRISCOLL’S note was read.")).toBe("DR. [NAME]’S note was read.");
    expect(redactPhiText("Mrs. Szöllösy called twice.")).toBe("Mrs. [NAME] called twice.");
    // "e" + U+0301 (a combining mark) and an astral letter (U+1D400) stay inside the word
    expect(redactPhiText("Mr. Zoe\u0301 Castaneda signed.")).toBe("Mr. [NAME] signed.");
    expect(redactPhiText("Dr. \u{1D400}lvarez saw him.")).toBe("Dr. [NAME] saw him.");
    expect(redactPhiText("daughter suzette- called")).toBe("daughter [NAME]- called");
    expect(redactPhiText("Call Dr. Abel-' now")).toBe("Call Dr. [NAME]-' now");
  });

  it("keeps ventilator settings, scores and grades written like dates, and mental status after MS", () => {
    for (const text of [
      "Vent on CPAP 5/10 overnight, then PS 12/5/40%.",
      "Complains of pain #7/10, murmur +2/6, pupils 3/3 brisk, 4/4 strength in both arms.",
      "MS unchanged, MS improved after the bolus.",
    ]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    // a date after a date word stays a date
    expect(redactPhiText("s/p dialysis 8/15, extubated 3/11.")).toBe("s/p dialysis [DATE], extubated [DATE].");
  });

  it("redacts a year in running text and years written with an apostrophe, not clock times", () => {
    expect(redactPhiText("Her first album came out in 1987.")).toBe("Her first album came out in [DATE].");
    expect(redactPhiText("PMH: '08 stent, CVA 92'.")).toBe("PMH: [DATE] stent, CVA [DATE].");
    expect(redactPhiText("Heparin held from 1900 to 0700.")).toBe("Heparin held from 1900 to 0700.");
  });

  it("finds names before 'aware' and hospitals named with common words, not roles and generic places", () => {
    expect(redactPhiText("pressures low, hazel quimbley aware.")).toBe("pressures low, [NAME] aware.");
    expect(redactPhiText("MD aware, team aware.")).toBe("MD aware, team aware.");
    expect(redactPhiText("transferred to little flower hospital for cath")).toBe("transferred to [LOCATION] hospital for cath");
    expect(redactPhiText("sent to the hospital, then to an outside hospital")).toBe("sent to the hospital, then to an outside hospital");
  });

  it("reads a capital letter after a pair sign or ending a phrase as no initial, and keeps real initials", () => {
    for (const text of ["Dressing D&I. Pulses palpable.", "Crackles R>L. Tidal volumes 400.", "STARTED AMPHO B. AWAITING CONSULT.", "LOW GRADE T. CULTURED.", "Site D and I. X-ray done."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("INR 6.0. E. WELSH AWARE.")).toBe("INR 6.0. [NAME] AWARE.");
    expect(redactPhiText("NOT GIVEN PER K. ABRAMS PA.")).toBe("NOT GIVEN PER [NAME] PA.");
    expect(redactPhiText("Seen by J. Yi, MD.")).toBe("Seen by [NAME], MD.");
  });

  it("reads a word before a credential as a name only with a dictionary or capitalised unknown word among its words", () => {
    for (const text of ["WILL KEEP NP AND FACE MASK ON.", "BP STABLE, RN TO WEAN DRIPS.", "dilt given via MD order.", "U/O REMAINS LOW MD AWARE.", "skin care as outlined by day rn."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("MDI GIVEN. EDWARD C. JONES, RRT")).toBe("MDI GIVEN. [NAME], RRT");
    expect(redactPhiText("Diminished LLL and now RLL. Stord-Painter MD plans a tap.")).toBe("Diminished LLL and now RLL. [NAME] MD plans a tap.");
  });

  it("reads MR / MS in capitals or after a grade as mitral regurgitation / mental status, and a full stop after a whole-word title as a sentence end", () => {
    for (const text of ["Monitor for changes in MS. Aspiration precautions.", "Echo: 3-4+MR. Given 2 units PRBC.", "NO IMPROVEMENT IN MS. TOLERATING EXTUBATION.", "Ask your doctor. They can help.", "Excuse me, Sir bot, not this tone.", "alt ms. p: follow sats."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("MR. SMITH CALLED.")).toBe("MR. [NAME] CALLED.");
    expect(redactPhiText("Mr. Abc arrived late.")).toBe("Mr. [NAME] arrived late.");
    expect(redactPhiText("Seen by Dr. Hashimoto.")).toBe("Seen by Dr. [NAME].");
  });

  it("reads a dictionary name before a sign, disease or device noun as an eponym, not a person or a place", () => {
    for (const text of ["RESP: tachypneic, with Kussmaul's respirations.", "PMHX: COPD, Wegener's syndrome.", "Good pulses. Ted stockings on.", "endoscopy showed mallory weiss tear.", "Positive Murphy's sign, Baker's cyst.", "Hx of Turner syndrome and Addison disease."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("Ted Murphy called back.")).toBe("[NAME] called back.");
    // eponyms are surnames: a first name before such a noun, without a possessive, is a person
    for (const [text, redacted] of [
      ["Taught Maria catheter care before discharge.", "Taught [NAME] catheter care before discharge."],
      ["Gave Anne test results by phone.", "Gave [NAME] test results by phone."],
      ["Reviewed Carol pump settings with her.", "Reviewed [NAME] pump settings with her."],
    ]) {
      expect(redactPhiText(text!)).toBe(redacted);
    }
  });

  it("reads no unit acronym, role, relation or predicate after a relation word as a name", () => {
    for (const text of ["Discussed with pt's wife, ABG's pending.", "Family wants to make their father CMO.", "Back on mask to aide with gas exchange.", "Family informed that wife is spokesperson.", "Family: Neice called and was updated.", "Received MOM enema with no results."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("LEGAL GUARDIAN: Niece, Patricia WAITE, lives nearby.")).toBe("LEGAL GUARDIAN: Niece, [NAME], lives nearby.");
    expect(redactPhiText("social: son jonathan arrived, dtr laverne called.")).toBe("social: son [NAME] arrived, dtr [NAME] called.");
  });

  it("reads hospital units, clinical acronyms and rhythms after a place preposition as no place, and keeps facility acronyms", () => {
    for (const text of ["Pt transfered to the NISICU where he was extubated.", "Clot sent to BB for type and cross.", "Pt brought to IR for a line.", "Noted a drop in CI to 1.8.", "Pt able to OOB with one assist.", "Rhythm changed to A-fib, uncontrolled.", "Maintain pt in T-berg for now.", "s/p stent to Lcx.", "Ambu bag at HOB, airways close by."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("Pt transfered to GH for cath.")).toBe("Pt transfered to [LOCATION] for cath.");
    expect(redactPhiText("Blasts on diff at GH, then VAMC.")).toBe("Blasts on diff at [LOCATION], then VAMC.");
    expect(redactPhiText("She works in UTMB Hospitals now.")).toBe("She works in [LOCATION] Hospitals now.");
  });

  it("reads no verb, hyphenated setting or shorthand before a number or a facility word as a ward or a facility", () => {
    for (const text of ["IABP ON 1:1. AUGMENTING 0-12, UNLOADING 0-6.", "ETT rotated and retaped 20 at lip.", "Intubated on 40% c-pap 10 PEEP.", "Pacer in place-Ademand 60.", "Was on O2 at prev rehab site.", "He'll need pt, and poss rehab when ready."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("Plan: transfer to Quartermain 2 today.")).toBe("Plan: transfer to [LOCATION] 2 today.");
    expect(redactPhiText("Was taken to Memorial Hospital.")).toBe("Was taken to [LOCATION] Hospital.");
  });

  it("keeps PEEP / PS written after other ventilator settings, and dates after a date word", () => {
    for (const text of ["Intubated on CPAP .5% 5/8. TV low.", "SETTINGS-SIMV/PS, 500X10, 40%, & 5/8.", "SETTINGS-40%, TV 400'S, RR 14-19, & 5/10.", "Currently on CPAP .4%, 5/10."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("Vent settings unchanged; extubated 3/11.")).toBe("Vent settings unchanged; extubated [DATE].");
  });

  it("reads a surname-like word after to / with / from in upper-case text as no name, unless it is a first name", () => {
    for (const text of ["GI: NGT TO LIS, DRAINING BILE.", "ABD SOFT. BS+ WITH GREY LIQUID STOOL.", "WAITING RESULTS TO CONT TF.", "Pt with LE spasm this am."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("TEAM UP TO TALK WITH THOMAS REGARDING HIS CARE.")).toBe("TEAM UP TO TALK WITH [NAME] REGARDING HIS CARE.");
  });

  it("reads no dose, lone street suffix or phrase after 'in' as an address, and keeps street addresses", () => {
    for (const text of ["K 3.8, repleted with 20 Meq PO, Mag 1.7.", "Valium po x1. HR 100 ST. sats stable.", "PT SENT TO CT SCAN AND FOUND A BLEED.", "Restraints remain in place. Inconsistently following commands.", "SENT TO CT RN ACCOMPANIED.", "PT TAKEN TO CT, NP AT BEDSIDE.", "TRAVELED TO CT STAT."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("She lives at 12 Main St. in town.")).not.toContain("Main");
    expect(redactPhiText("Mail it to 92056 Main Ave today.")).toContain("[ADDRESS]");
    expect(redactPhiText("MOVED TO 45 BIRCHWOOD CT IN MAY.")).not.toContain("BIRCHWOOD");
    // a two-letter suffix opening a street's name (Saint, Doctor) with the street's own suffix after it
    expect(redactPhiText("Pt lives on ST CLAIR AVE with wife.")).toBe("Pt lives on [ADDRESS] with wife.");
    expect(redactPhiText("Lives on DR MARTIN LUTHER KING BLVD.")).not.toContain("KING");
  });

  it("does not extend a name over a unit acronym, a verb form or joined common words", () => {
    expect(redactPhiText("SAID PER DR MADDEN PICC IN SVC.")).toBe("SAID PER DR [NAME] PICC IN SVC.");
    expect(redactPhiText("RESP RATE 22. DR LAVELY NOTIFED AND ATIVAN GIVEN.")).toBe("RESP RATE 22. DR [NAME] NOTIFED AND ATIVAN GIVEN.");
    expect(redactPhiText("PAIN AGAIN. DR. HOLMES CALLED-PT GIVEN MSO4.")).toBe("PAIN AGAIN. DR. [NAME] CALLED-PT GIVEN MSO4.");
    expect(redactPhiText("Megan Carey Weber-Santana called.")).toBe("[NAME] called.");
  });

  it("reads no article, heading, pressure, device size, temperature route or credential as a name", () => {
    for (const text of ["THIS IS A 61 Y/O PT.", "RR 11-13. PA STAS 73,72.", "Given Tylenol at 4PM. MS: Recievd sedated from EW.", "Pt trached today with #6 Shiley.", "ID - T max 96.3 Ax. BC pending.", "O2Sats on 3Ls NP, 97-99%."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
    expect(redactPhiText("Humidifier full.\nDavid Murray RRT")).toBe("Humidifier full.\n[NAME] RRT");
    expect(redactPhiText("Lab at 10.0.0.1 John called.")).toContain("[NAME]");
  });

  it("reads no hospital department or adverb after a place preposition as a place", () => {
    for (const text of ["Awaiting MDI from Pharmacy, ordered Q4hr.", "Attempted to Nasally suction pt.", "PICC line tomorrow in Interventional Radiology."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
  });

  it("reads a US state after a place preposition as no person", () => {
    for (const text of ["They retire to florida in the winter."]) expect(redactPhiText(text), text).toBe(text);
    expect(redactPhiText("Family is moving from Florida soon.")).not.toContain("[NAME]");
    expect(redactPhiText("Spoke to Virginia about the plan.")).toBe("Spoke to [NAME] about the plan.");
  });

  it("reads neither the pronoun I with a contraction nor a greeting as part of a name", () => {
    expect(redactPhiText("I'm Maciej Borkowski, a teacher.")).toBe("I'm [NAME], a teacher.");
    expect(redactPhiText("Hi Victor, I'm writing about a problem.")).toBe("Hi [NAME], I'm writing about a problem.");
  });

  it("reads a word with digits right after it as a lab value or code, not a name", () => {
    for (const text of ["Lungs clear. Sao2 100% on RA.", "Sa02 improved after lasix.", "ABS. Ax4. No BM.", "ABG SENT WITH PAO2 50S."]) {
      expect(redactPhiText(text), text).toBe(text);
    }
  });

  it("returns offsets and never the values", () => {
    const r = redactPhi("Call me at 617-555-0123.");
    expect(r.entities).toEqual([{ type: "PHONE", start: 11, end: 23, replacement: "[PHONE]" }]);
    expect(JSON.stringify(r.entities)).not.toContain("555");
  });
});

describe("PHI detector on FHIR JSON", () => {
  it("redacts identifiers of a Patient resource, keeps the state and coded values, and keeps the JSON valid", () => {
    const patient = {
      resourceType: "Patient",
      id: "6a1ee3a5-3b0b-4a7f-9c50-0d3f7c1b2e11",
      identifier: [
        { type: { text: "Medical Record Number" }, value: "6a1ee3a5-3b0b-4a7f-9c50-0d3f7c1b2e11" },
        { type: { text: "Social Security Number" }, value: "999-41-5678" },
        { type: { text: "Driver's License" }, value: "S99912345" },
      ],
      name: [{ use: "official", family: "Quigley", given: ["Marvin"], prefix: ["Mr."] }],
      telecom: [{ system: "phone", value: "555-311-2047" }],
      gender: "male",
      birthDate: "1961-04-12",
      address: [
        {
          extension: [{ url: "geolocation", extension: [{ url: "latitude", valueDecimal: 42.36 }, { url: "longitude", valueDecimal: -71.05 }] }],
          line: ["48 Hickle Route Suite 12"],
          city: "Springfield",
          state: "Massachusetts",
          postalCode: "01103",
        },
      ],
    };
    const text = JSON.stringify(patient, null, 1);
    const out = redactPhiText(text);
    for (const v of ["6a1ee3a5", "999-41-5678", "S99912345", "Quigley", "Marvin", "555-311-2047", "1961-04-12", "48 Hickle Route", "Springfield", "01103"]) {
      expect(out, v).not.toContain(v);
    }
    expect(out).toContain('"state": "Massachusetts"');
    expect(out).toContain('"gender": "male"');
    expect(out).toContain("Driver's License");
    expect(() => JSON.parse(out)).not.toThrow();
  });

  it("finds names of other countries, lists of people, particles and names before a relation", () => {
    expect(redactPhiText("Her sons are Radomir, Tomasz and Sunniva.")).toBe("Her sons are [NAME] and [NAME].");
    expect(redactPhiText("the nurses were kristina, pamela and donna today")).toBe("the nurses were [NAME] and [NAME] today");
    expect(redactPhiText("Maike ten Brinke will call.")).toBe("[NAME] will call.");
    expect(redactPhiText("Spoke with BEXLEY ARDWICK (SON) AT 1400.")).toBe("Spoke with [NAME] (SON) AT 1400.");
    // a clinical imperative that happens to be a name in some locale stays
    expect(redactPhiText("Cont current vent settings. Cont to monitor.")).toBe("Cont current vent settings. Cont to monitor.");
  });

  it("finds international and military addresses and hyphen-grouped phone numbers, not ranges", () => {
    expect(redactPhiText("The title refers to Rua das Flores 1207, a street downtown.")).toBe("The title refers to [ADDRESS], a street downtown.");
    expect(redactPhiText("She lives at 14 ul. Długa 22 now")).not.toContain("Długa");
    expect(redactPhiText("His unit mail: USNS Comfort FPO AE 09587.")).toBe("His unit mail: [ADDRESS].");
    expect(redactPhiText("Reach him on 47-81-36-92 after six")).toBe("Reach him on [PHONE] after six");
    expect(redactPhiText("SVR 1500-2250 overnight, shift 1900-0700.")).toBe("SVR 1500-2250 overnight, shift 1900-0700.");
  });

  it("finds a large city after a place cue even when it is a common word of clinical text, not the eponym", () => {
    expect(redactPhiText("Daughter flying in from Denver tonight; son lives in Boston, wife moved to Houston.")).toBe(
      "Daughter flying in from [LOCATION] tonight; son lives in [LOCATION], wife moved to [LOCATION].",
    );
    expect(redactPhiText("Surgery in Jackson, MS in 2019; she is from Queens.")).toContain("Surgery in [LOCATION], MS");
    expect(redactPhiText("Surgery in Jackson, MS in 2019; she is from Queens.")).toContain("she is from [LOCATION].");
    for (const text of ["Denver shunt placed; drainage from Denver shunt.", "Jackson-Pratt drain to bulb suction.", "Seen on the mobile unit, or in clinic."]) {
      expect(redactPhiText(text)).toBe(text);
    }
  });

  it("finds local seven-digit numbers and extensions after a cue, not counts, ranges or times", () => {
    expect(redactPhiText("Wife's number 555-1234, she calls daily.")).toBe("Wife's number [PHONE], she calls daily.");
    expect(redactPhiText("CALL SON AT 555 1234 WITH CHANGES.")).toBe("CALL SON AT [PHONE] WITH CHANGES.");
    expect(redactPhiText("Family can be reached at 555-1234.")).toBe("Family can be reached at [PHONE].");
    expect(redactPhiText("Covering team: ext. 5-6789, or ext 4417 after hours.")).toBe("Covering team: ext. [PHONE], or ext [PHONE] after hours.");
    // numbers that are not phones: counts, ranges, times, doses, range of motion
    for (const text of [
      "Number of episodes 3, UO 100-1000 cc/hr, called at 1530, ext 2+ edema.",
      "Knee extension 0-120 degrees. Hip extension 0-100, extension 10-20 degrees, ext 10-20°.",
      "Extension 1000 mg given. Ext 1200 ml out. Number: 120 1000. Reached at 120 1500 cells.",
    ]) {
      expect(redactPhiText(text)).toBe(text);
    }
  });

  it("phi-redaction answers a repeated result of the same session from the decision cache, with the same redaction", async () => {
    const p = new GuardrailPipeline({ output: [{ guardrail: createPhiGuardrail() }] });
    const ctx = { stage: "output" as const, side: "server" as const, method: "sampling/createMessage", sessionId: "s1", principal: { clientId: "c", sub: "u", scopes: [] } };
    const result = { role: "assistant", model: "m", content: { type: "text", text: "Seen by Dr. Sullivan on 03/14/2024." }, stopReason: "endTurn" };
    const first = await p.evaluate("output", result, ctx);
    const second = await p.evaluate("output", result, ctx);
    expect(second.payload).toEqual(first.payload);
    expect(JSON.stringify(second.payload)).toContain("[NAME]");
    expect(second.decisions).toEqual([expect.objectContaining({ guardrail: "phi-redaction", action: "redact", cached: 1 })]);
    // another session is never answered from this one's cache
    const other = await p.evaluate("output", result, { ...ctx, sessionId: "s2" });
    expect(other.decisions[0]).not.toHaveProperty("cached");
  });

  it("keeps clinical text the new rules must not touch", () => {
    const keep = [
      "Will restart Eliquis 5 mg BID; hold Eliquis 48h",
      "Shifts 0700-1500-2300, HR trending 100-110-120, DRG 291-292-293",
      "NDC 0093-7180-56, Lot 12-3456-78",
      '{"code":"0093-7180-56"}',
      "C/ Spine 3 views negative. Av. Temp 37.2 overnight.",
      "PT HAD 1 TEE AND 2 TTE STUDIES",
      'Interpreter: "she agrees with the plan"',
      "Spoke with HCP (daughter). Updated HCP (husband).",
    ];
    for (const t of keep) expect(redactPhiText(t), t).toBe(t);
    // a brand caught by a weak cue is not spread to the dosing orders
    expect(redactPhiText("She ran out of her Eliquis last week. Will restart Eliquis 5 mg BID.")).toContain("restart Eliquis 5 mg");
  });

  // The scan is synchronous: a regression of the surrogate-pair loop would hang this worker, not fail a test. So the
  // checks run in a child process with a deadline (fixtures/phi-termination.ts; ~1 s when they pass).
  const DEADLINE_MS = 60_000;
  it("terminates on astral letters next to rejected candidates, and on arbitrary text with sorted, in-bounds entities", () => {
    const child = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./fixtures/phi-termination.ts", import.meta.url))], {
      encoding: "utf8",
      timeout: DEADLINE_MS,
    });
    expect(child.signal, `the PHI scan did not finish within ${DEADLINE_MS} ms (killed)`).toBeNull();
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toMatchObject({ runs: 1500, entities: expect.any(Number) as number });
    expect((JSON.parse(child.stdout) as { entities: number }).entities).toBeGreaterThan(0);
  });
});
