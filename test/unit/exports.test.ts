/**
 * Pins the public surface (STYLE.md habit 2): a change to what "hmcp" exports at run time must be deliberate and
 * show up here. Type-only exports are pinned by the type-check of the code that uses them.
 */
import { describe, expect, it } from "vitest";
import * as hmcp from "hmcp";
import { PUBLIC_RUNTIME_EXPORTS } from "../fixtures/public-exports.js";

describe("public entry", () => {
  it("exports exactly the pinned runtime names", () => {
    expect(Object.keys(hmcp).sort()).toEqual([...PUBLIC_RUNTIME_EXPORTS].sort());
  });
  it("exports no undefined value", () => {
    for (const name of PUBLIC_RUNTIME_EXPORTS) expect((hmcp as Record<string, unknown>)[name], name).toBeDefined();
  });
});
