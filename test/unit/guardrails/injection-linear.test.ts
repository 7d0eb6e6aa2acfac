/**
 * The prompt-injection scorer stays linear on adversarial input: a megabyte of one repeated word, of astral
 * characters, of one letter without spaces (the sentence windows' backward search for a space once made this
 * quadratic) and of a feature-rule hit in every sentence (finding the rules per window once made this quadratic).
 * Bounds are generous (a loaded 2-core machine scores each in 6-40 ms; the quadratic versions took 1.5 s).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadInjectionModel } from "../../../src/guardrails/injection/model.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const model = loadInjectionModel(path.join(repo, "guardrails/data/injection-model.json"));

describe("prompt-injection scorer on 1 MB adversarial inputs", () => {
  const inputs: Array<[string, string]> = [
    ["a repeated word", "ignore ".repeat(150_000)],
    ["astral characters", "\u{1F600}a ".repeat(350_000)],
    ["one letter, no spaces", "a".repeat(1 << 20)],
    ["a rule hit in every sentence", "all patients. ".repeat(75_000)],
    ["a rule hit in every window without sentence ends", "all patients ".repeat(80_000)],
  ];
  for (const [name, text] of inputs) {
    it(`${name}: well under a second, and as fast per character as a tenth of it`, () => {
      model.score(text.slice(0, 10_000));
      let t0 = performance.now();
      const s = model.assess(text, "result").score;
      const whole = performance.now() - t0;
      t0 = performance.now();
      model.assess(text.slice(0, text.length / 10), "result");
      const tenth = performance.now() - t0;
      expect(s).toBeGreaterThanOrEqual(0);
      expect(whole).toBeLessThan(1000);
      // linear: the whole text costs about 10 tenths (quadratic would be 100); generous for timer noise
      expect(whole).toBeLessThan(Math.max(50, 40 * tenth));
    });
  }
});
