/**
 * The conformance fixture through an unmodified SDK client, in memory: a fast check (no Node 22, no network) that the
 * surface `npm run conformance` tests is there, plus what the official scenarios do not check.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { LoggingMessageNotification } from "@modelcontextprotocol/server";
import { createConformanceServer } from "./fixture-server.js";
import { connectPlainClient } from "../fixtures/harness.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

const connect = () => connectPlainClient(createConformanceServer(), closers);

describe("conformance fixture", () => {
  it("serves every tool, resource and prompt the conformance scenarios call", async () => {
    const client = await connect();
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools).toEqual(
      expect.arrayContaining([
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_error_handling",
        "test_tool_with_progress",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
        "test_reconnection",
        // MCP 2026-07-28 (suite 0.2.0-alpha.12): input-required rounds and the server-stateless diagnostics
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
      ]),
    );
    const resources = (await client.listResources()).resources.map((r) => r.uri);
    expect(resources).toEqual(expect.arrayContaining(["test://static-text", "test://static-binary", "test://watched-resource"]));
    const template = await client.readResource({ uri: "test://template/123/data" });
    expect(JSON.parse((template.contents[0] as { text: string }).text)).toEqual({ id: "123", templateTest: true, data: "Data for ID: 123" });
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(prompts).toEqual(
      expect.arrayContaining(["test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_input_required_result_prompt"]),
    );
    const completion = await client.complete({ ref: { type: "ref/prompt", name: "test_prompt_with_arguments" }, argument: { name: "arg1", value: "par" } });
    expect(completion.completion.values).toEqual(["paris", "park", "party"]);
    await expect(client.subscribeResource({ uri: "test://watched-resource" })).resolves.toEqual({});
  });

  it("a tool exception is an isError result that does not echo its message", async () => {
    const client = await connect();
    const result = await client.callTool({ name: "test_error_handling", arguments: {} });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: "Tool execution failed" }]);
    expect(JSON.stringify(result)).not.toContain("intentionally");
  });

  it("logging/setLevel filters the log notifications a tool sends", async () => {
    const client = await connect();
    const logs: LoggingMessageNotification["params"][] = [];
    client.setNotificationHandler('notifications/message', (n) => {
      logs.push(n.params);
    });
    await client.setLoggingLevel("error");
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    expect(logs).toEqual([]);
    await client.setLoggingLevel("debug");
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    expect(logs.map((l) => l.data)).toEqual(["Tool execution started", "Tool processing data", "Tool execution completed"]);
  });
});
