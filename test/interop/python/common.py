"""Shared by modern.py and legacy.py: the settings run-python.ts passes, a bearer HTTP client, and the checks."""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from typing import Any

import httpx2

URL = os.environ["HMCP_URL"]
TOKEN = os.environ["HMCP_TOKEN"]
PATIENT = os.environ["HMCP_PATIENT"]
OTHER_PATIENT = os.environ["HMCP_OTHER_PATIENT"]
EXTENSION_ID = os.environ["HMCP_EXTENSION_ID"]
SAMPLING_TOOL = os.environ["HMCP_SAMPLING_TOOL"]
INFO_NEEDED = os.environ["HMCP_INFO_NEEDED"]
PATIENT_CONTEXT_VIOLATION = int(os.environ["HMCP_PATIENT_CONTEXT_VIOLATION"])
WIRE = os.environ.get("HMCP_INTEROP_WIRE") == "1"


def sampling_params(text: str) -> dict[str, Any]:
    """`sampling/createMessage` params (also the sampling tool's arguments) asking `text`."""
    return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": 100}


async def _log_request(request: httpx2.Request) -> None:
    headers = {k: ("Bearer …" if k.lower() == "authorization" else v) for k, v in request.headers.items()}
    print(f">>> {request.method} {request.url} {headers}\n    {request.content.decode(errors='replace')}", file=sys.stderr)


async def _log_response(response: httpx2.Response) -> None:
    # an SSE body is not read here: it stays open until the client answers what the server asks on it
    streaming = response.headers.get("content-type", "").startswith("text/event-stream")
    body = "(event stream)" if streaming else (await response.aread()).decode(errors="replace")
    print(f"<<< {response.status_code} {dict(response.headers)}\n    {body}", file=sys.stderr)


def bearer_http_client() -> httpx2.AsyncClient:
    """An HTTP client sending the token on every request; with HMCP_INTEROP_WIRE=1 it logs each exchange to stderr."""
    hooks = {"request": [_log_request], "response": [_log_response]} if WIRE else {}
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30.0), event_hooks=hooks)


class Checks:
    """Collects what was seen and every mismatch; `finish()` prints the JSON summary and exits non-zero on a mismatch."""

    def __init__(self, era: str) -> None:
        self.summary: dict[str, Any] = {"era": era, "mismatches": [], "sdk": f"mcp {importlib.metadata.version('mcp')}"}

    def see(self, key: str, value: Any) -> None:
        self.summary[key] = value

    def expect(self, what: str, actual: Any, expected: Any) -> None:
        self.summary[what] = actual
        if actual != expected:
            self.summary["mismatches"].append(f"{what}: expected {expected!r}, got {actual!r}")

    def finish(self) -> None:
        print(json.dumps(self.summary, default=str))
        sys.exit(1 if self.summary["mismatches"] else 0)
