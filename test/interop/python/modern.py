"""MCP 2026-07-28 with the official Python SDK: its Client in modern mode calls an HMCP agent's sampling tool.

Connects with mode="auto" (probes server/discover, falls back to initialize) and checks it lands on 2026-07-28,
finds the HMCP extension in the server's capabilities, calls `sampling_createMessage` (an infoNeeded answer and a
normal one, the CreateMessageResult in structuredContent), gets a typed error for a patient outside the token's
launch context, and answers an agent that asks its caller mid-request: on 2026-07-28 the question comes back as an
input-required result (resultType "input_required", an elicitation/create input request and a sealed requestState),
which the SDK's Client fulfils itself (it calls the elicitation callback, then retries the call with inputResponses
and the requestState) until the tool's complete result arrives.
"""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from common import (
    EXTENSION_ID,
    INFO_NEEDED,
    OTHER_PATIENT,
    PATIENT,
    PATIENT_CONTEXT_VIOLATION,
    SAMPLING_TOOL,
    URL,
    Checks,
    bearer_http_client,
    sampling_params,
)

elicitations: list[str] = []


async def approve(_context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Answers an input request of the server (an elicitation) by accepting; counted in the summary."""
    elicitations.append(params.message)
    return types.ElicitResult(action="accept", content={"ok": True})


async def main() -> None:
    checks = Checks("modern")
    async with bearer_http_client() as http:
        client = Client(streamable_http_client(URL, http_client=http), mode="auto", elicitation_callback=approve)
        async with client:
            checks.expect("protocolVersion", client.protocol_version, "2026-07-28")
            checks.expect("discovered", client.session.discover_result is not None, True)
            caps = client.server_capabilities
            hmcp = (caps.extensions or {}).get(EXTENSION_ID)
            checks.expect("extension", hmcp is not None, True)
            checks.expect("extension.samplingTool", (hmcp or {}).get("samplingTool"), SAMPLING_TOOL)

            tools = await client.list_tools()
            checks.expect("toolListed", SAMPLING_TOOL in [t.name for t in tools.tools], True)

            need = await client.call_tool(SAMPLING_TOOL, sampling_params("write the encounter"))
            checks.expect("infoNeeded.stopReason", (need.structured_content or {}).get("stopReason"), INFO_NEEDED)
            checks.expect("infoNeeded.isError", bool(need.is_error), False)

            done = await client.call_tool(SAMPLING_TOOL, sampling_params(f"patient_id={PATIENT}: write the encounter"))
            result = types.CreateMessageResult.model_validate(done.structured_content or {})
            checks.expect("written.content", result.content.model_dump(exclude_none=True), {"type": "text", "text": "written"})
            checks.expect("written.stopReason", result.stop_reason, "endTurn")

            try:
                await client.call_tool(SAMPLING_TOOL, sampling_params(f"patient_id={OTHER_PATIENT}"), meta={"hmcp/patient": OTHER_PATIENT})
                checks.expect("otherPatient.code", None, PATIENT_CONTEXT_VIOLATION)
            except MCPError as e:
                checks.expect("otherPatient.code", e.code, PATIENT_CONTEXT_VIOLATION)

            # the agent elicits its caller: an input-required round, fulfilled by the Client (the callback, then a retry)
            asked = await client.call_tool(SAMPLING_TOOL, sampling_params(f"patient_id={PATIENT}: approve and write"))
            checks.expect("askBack.isError", bool(asked.is_error), False)
            answered = types.CreateMessageResult.model_validate(asked.structured_content or {})
            checks.expect("askBack.content", answered.content.model_dump(exclude_none=True), {"type": "text", "text": "written after approval"})
            checks.expect("askBack.stopReason", answered.stop_reason, "endTurn")
            checks.expect("elicitations", elicitations, ["Approve writing the encounter?"])
            checks.see("elicitationsAnswered", len(elicitations))
    checks.finish()


anyio.run(main)
