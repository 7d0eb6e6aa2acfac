/**
 * Pins the public surface (STYLE.md habit 2): a change to what "hmcp" exports at run time must be deliberate and
 * show up here. Type-only exports are pinned by the type-check of the code that uses them.
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import * as hmcp from "hmcp";
import type { ClientSamplingHandler, CreateMessageParams, HMCPToolConfig, SamplingContext } from "hmcp";
import { PUBLIC_RUNTIME_EXPORTS } from "../fixtures/public-exports.js";

describe("public entry", () => {
  it("exports exactly the pinned runtime names", () => {
    expect(Object.keys(hmcp).sort()).toEqual([...PUBLIC_RUNTIME_EXPORTS].sort());
  });
  it("exports no undefined value", () => {
    for (const name of PUBLIC_RUNTIME_EXPORTS) expect((hmcp as Record<string, unknown>)[name], name).toBeDefined();
  });
  it("exports the types its public signatures name (type-checked: npm run typecheck)", () => {
    // one CreateMessageParams for the client's sampling handler and the server's ctx.sample
    expectTypeOf<Parameters<ClientSamplingHandler>[0]>().toEqualTypeOf<CreateMessageParams>();
    expectTypeOf<Parameters<SamplingContext["sample"]>[0]>().toEqualTypeOf<CreateMessageParams>();
    // registerTool's config, with the tool's execution.taskSupport
    expectTypeOf<HMCPToolConfig<undefined, undefined>>().toHaveProperty("execution");
  });
});
