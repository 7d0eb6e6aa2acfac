#!/bin/sh
# npm run interop:python: the Python SDK interop check (test/interop/README.md) for a developer. Keeps the virtual
# environment between runs (node_modules/.cache/hmcp-interop-venv, or $HMCP_VENV) and brings `mcp` up to date in it.
set -eu
cd "$(dirname "$0")/../.."
venv="${HMCP_VENV:-node_modules/.cache/hmcp-interop-venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -qq --retries 0 --upgrade mcp
HMCP_PYTHON="$venv/bin/python" exec npx tsx test/interop/run-python.ts "$@"
