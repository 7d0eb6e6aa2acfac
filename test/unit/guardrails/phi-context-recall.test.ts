import { describe, expect, it } from "vitest";
import { createPhiDetector, redactPhiText } from "../../../src/guardrails/index.js";

/** Each text comes back from redaction as it went in (the assertion names the text that changed). */
function expectUnchanged(texts: readonly string[]): void {
  for (const text of texts) expect(redactPhiText(text), text).toBe(text);
}

// Names and places the precision rules of session 28 let through, found again by their form and context; each block
// also holds the precision rule's own negatives, which still hold.
describe("PHI detector: names and places in clinical context", () => {
  it("reads a first name after a role abbreviation as a name before a month/day date, not before a measure", () => {
    expect(redactPhiText("Seen by NP Grace 12/3 for follow-up.")).toBe("Seen by NP [NAME] [DATE] for follow-up.");
    expect(redactPhiText("Wound checked by RN Rose 4/11, no drainage.")).toBe("Wound checked by RN [NAME] [DATE], no drainage.");
    expectUnchanged(["RR 11-13. PA STAS 73,72.", "PA Sats 73/72 on the monitor."]);
  });


  it("reads an upper-case surname after to / with / from as a name when a word of talk comes before it", () => {
    expect(redactPhiText("RECEIVED REPORT FROM MARQUEZ AT 0700.")).toBe("RECEIVED REPORT FROM [NAME] AT 0700.");
    expect(redactPhiText("SPOKE WITH OKAFOR RE: PLAN.")).toBe("SPOKE WITH [NAME] RE: PLAN.");
    expect(redactPhiText("CALL TO PATEL, NO ANSWER.")).toBe("CALL TO [NAME], NO ANSWER.");
    expectUnchanged(["GI: NGT TO LIS, DRAINING BILE.", "ABD SOFT. BS+ WITH GREY LIQUID STOOL.", "WAITING RESULTS TO CONT TF.", "REPORT GIVEN TO OR.", "DISCUSSED WITH RENAL."]);
  });


  it("reads a surname before 'family' as a name however short or in whichever case", () => {
    expect(redactPhiText("Met with LI family at bedside.")).toBe("Met with [NAME] family at bedside.");
    expect(redactPhiText("THE DAO FAMILY IS UPDATED.")).toBe("THE [NAME] FAMILY IS UPDATED.");
    expect(redactPhiText("updated TRAN family by phone")).toBe("updated [NAME] family by phone");
    expectUnchanged(["ICU family meeting at 2 pm.", "Pt with LE spasm this am.", "NG family teaching done."]);
  });


  it("reads an initial and a surname before a credential as a signature, even when the surname is an English word", () => {
    expect(redactPhiText("K. BROWN MD notified of K 3.1.")).toBe("[NAME] MD notified of K 3.1.");
    expect(redactPhiText("Per r. smith rn, pt slept well.")).toBe("Per [NAME] rn, pt slept well.");
    expect(redactPhiText("M. PRICE LPN AWARE.")).toBe("[NAME] LPN AWARE.");
    expectUnchanged(["VIT K. GIVEN MD AWARE.", "STARTED AMPHO B. AWAITING CONSULT.", "WILL KEEP NP AND FACE MASK ON.", "BP STABLE, RN TO WEAN DRIPS."]);
  });


  it("reads an unknown upper-case word between a person preposition and a credential as a name", () => {
    expect(redactPhiText("PT SEEN BY EZEOKE RN AT 0400.")).toBe("PT SEEN BY [NAME] RN AT 0400.");
    expect(redactPhiText("MEDS GIVEN PER AKINTOLA CNA TODAY.")).toBe("MEDS GIVEN PER [NAME] CNA TODAY.");
    expect(redactPhiText("PT ASSISTED BY ZELINSKI-ORR NP WITH TRANSFER.")).toBe("PT ASSISTED BY [NAME] NP WITH TRANSFER.");
    for (const text of ["CT FILMS SENT FROM ROCKVILLE, MD ON FRIDAY.", "PT SEEN BY ONC NP TODAY.", "skin care as outlined by day rn.", "HANDED OFF TO NIGHT RN.", "dilt given via MD order."]) {
      expect(redactPhiText(text), text).not.toContain("[NAME]");
    }
  });


  it("reads a university's acronym, or any facility acronym after a verb of care or work and 'at', as a place", () => {
    const d = createPhiDetector();
    const places = (text: string) => d.detect(text).filter((e) => e.type === "LOCATION").map((e) => text.slice(e.start, e.end));
    expect(places("She was seen at UCSD last spring.")).toEqual(["UCSD"]);
    expect(places("Followed at OHSU for cystic fibrosis.")).toEqual(["OHSU"]);
    expect(places("PT HOSPITALIZED AT LSU IN MAY.")).toEqual(["LSU"]);
    expect(places("Her son studies at UVA.")).toEqual(["UVA"]);
    for (const text of ["Pt transfered to the NISICU where he was extubated.", "Noted a drop in CI to 1.8.", "Pt able to OOB with one assist.", "Seen in PACU, then sent UA.", "IVs in LUE and RUE.", "She was seen at ED triage.", "Seen at HD yesterday.", "Appt at PFT lab.", "No change in UGI findings.", "Risk of URI.", "PLT at ULN.", "LFTs trending at ULN today."]) {
      expect(places(text), text).toEqual([]);
    }
  });


  it("reads a name after MR. / MS. after a grade as a name when it is no common word", () => {
    expect(redactPhiText("Edema 2+ MS. Rose called back.")).toBe("Edema 2+ MS. [NAME] called back.");
    expect(redactPhiText("PULSES 1+ MR. SMITH AWARE.")).toBe("PULSES 1+ MR. [NAME] AWARE.");
    expectUnchanged(["Echo: 3-4+MR. Given 2 units PRBC.", "Echo 2+MR. Will repeat in 6 months.", "Trace 1+ MR. Mild TR."]);
  });

  it("reads a role word after a title as a name only when it is also a name, capitalised in mixed-case text", () => {
    expect(redactPhiText("Mr. Case called back about the results.")).toBe("Mr. [NAME] called back about the results.");
    expect(redactPhiText("Ms. Coach is here with her son.")).toBe("Ms. [NAME] is here with her son.");
    expectUnchanged(["Excuse me, Sir bot, not this tone.", "DR. FELLOW AWARE OF K 3.1.", "Dr. Social work consult placed.", "alt ms. p: follow sats."]);
    expect(redactPhiText("we will consult dr. x, who knows her")).toBe("we will consult dr. [NAME], who knows her");
  });

  it("reads any care unit's acronym after a place preposition as no place, however spelt", () => {
    const d = createPhiDetector();
    const places = (text: string) => d.detect(text).filter((e) => e.type === "LOCATION").map((e) => text.slice(e.start, e.end));
    for (const text of ["Pt admitted to the TCU for rehab.", "Pt transferred to the PCU at 3 pm.", "Back to MCIU after CT.", "Pt transfered to the NISICU where he was extubated.", "Sent to micua."]) {
      expect(places(text), text).toEqual([]);
    }
    expect(places("She was seen at NYU.")).toEqual(["NYU"]);
    expect(places("Pt transfered to GH for cath.")).toEqual(["GH"]);
  });

  it("reads PEEP / PS after ventilator settings with a number's plural as no date", () => {
    expectUnchanged(["AC 500, TV 500s, RR 12, & 5/10.", "SETTINGS-40%, TV 400'S, RR 14-19, & 5/10."]);
    expect(redactPhiText("Vent settings unchanged; extubated 3/11.")).toBe("Vent settings unchanged; extubated [DATE].");
  });

  it("reads an upper-case word between 'by' and PT / RT / OT / DO / PA ending a clause as a name", () => {
    expect(redactPhiText("AMBULATED BY ADEYEMI PT: TOL WELL.")).toBe("AMBULATED BY [NAME] PT: TOL WELL.");
    expect(redactPhiText("TX GIVEN BY AKINTOLA RT, SATS 95%.")).toBe("TX GIVEN BY [NAME] RT, SATS 95%.");
    expect(redactPhiText("SEEN BY TCHAIKOVSKAYA DO.")).toBe("SEEN BY [NAME] DO.");
    expectUnchanged(["SEEN BY ORTHO PA.", "EVAL BY ACUTE PT.", "PER FLOWSHEET PT", "SUPPORTED BY LEVOPHED PT STABLE.", "LINE PLACED BY IR PA.", "PALPABLE BY DOPPLER PT.", "SEEN BY DERM PA.", "EVAL BY PODIATRY DO.", "Evaluated by Plastics PA.", "SEEN BY OTOLARYNGOLOGY PA.", "SEEN BY CARDIOLOGY NP"]);
  });

  it("reads a genus initial before a species epithet as an organism, not a person, and keeps the names beside it", () => {
    expect(redactPhiText("S. EPIDERMIDIS IN 1/2 BOTTLES, MD AWARE.")).toBe("S. EPIDERMIDIS IN 1/2 BOTTLES, MD AWARE.");
    expect(redactPhiText("P. AERUGINOSA IN SPUTUM, PER DR. OKONKWO.")).toBe("P. AERUGINOSA IN SPUTUM, PER DR. [NAME].");
    expect(redactPhiText("K. Pneumoniae and N. Meningitidis negative; C. Glabrata in urine.")).toBe("K. Pneumoniae and N. Meningitidis negative; C. Glabrata in urine.");
    // an initial and a surname are still a name
    expect(redactPhiText("S. EPSTEIN MD AWARE.")).toBe("[NAME] MD AWARE.");
    expect(redactPhiText("Seen by K. Adeyemi, RN.")).toBe("Seen by [NAME], RN.");
  });
});
