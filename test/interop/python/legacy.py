"""MCP 2025-11-25 with the official Python SDK: initialize, then raw client → server `sampling/createMessage`.

Connects with mode="legacy" (the initialize handshake, a session), sees `experimental.hmcp`, sends
`sampling/createMessage` as the HMCP Python reference does (an infoNeeded answer, a normal one, one where the agent
elicits back on the same request and this client answers through its elicitation callback), and gets a typed error
for a patient outside the token's launch context.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from common import INFO_NEEDED, OTHER_PATIENT, PATIENT, PATIENT_CONTEXT_VIOLATION, URL, Checks, bearer_http_client, sampling_params

elicitations: list[str] = []


async def approve(_context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    """Answers the agent's elicitation (sent back on the sampling request's stream) by accepting."""
    elicitations.append(params.message)
    return types.ElicitResult(action="accept", content={"ok": True})


async def create_message(client: Client, text: str, meta: dict[str, Any] | None = None) -> types.CreateMessageResult:
    """A raw `sampling/createMessage` request, client → server (HMCP's extension of the 2025 era)."""
    params = types.CreateMessageRequestParams.model_validate({**sampling_params(text), **({"_meta": meta} if meta else {})})
    request = types.CreateMessageRequest(params=params)
    return await client.session.send_request(request, types.CreateMessageResult)


async def main() -> None:
    checks = Checks("legacy")
    async with bearer_http_client() as http:
        client = Client(streamable_http_client(URL, http_client=http), mode="legacy", elicitation_callback=approve)
        async with client:
            checks.expect("protocolVersion", client.protocol_version, "2025-11-25")
            checks.expect("initialized", client.session.initialize_result is not None, True)
            hmcp = (client.server_capabilities.experimental or {}).get("hmcp")
            checks.expect("experimental.hmcp.sampling", (hmcp or {}).get("sampling"), True)

            need = await create_message(client, "write the encounter")
            checks.expect("infoNeeded.stopReason", need.stop_reason, INFO_NEEDED)

            done = await create_message(client, f"patient_id={PATIENT}: write the encounter")
            checks.expect("written.content", done.content.model_dump(exclude_none=True), {"type": "text", "text": "written"})
            checks.expect("written.stopReason", done.stop_reason, "endTurn")

            approved = await create_message(client, f"patient_id={PATIENT}: approve and write")
            checks.expect("approved.content", approved.content.model_dump(exclude_none=True), {"type": "text", "text": "written after approval"})
            checks.expect("elicitationsAnswered", len(elicitations), 1)

            try:
                await create_message(client, f"patient_id={OTHER_PATIENT}", {"hmcp/patient": OTHER_PATIENT})
                checks.expect("otherPatient.code", None, PATIENT_CONTEXT_VIOLATION)
            except MCPError as e:
                checks.expect("otherPatient.code", e.code, PATIENT_CONTEXT_VIOLATION)
    checks.finish()


anyio.run(main)
