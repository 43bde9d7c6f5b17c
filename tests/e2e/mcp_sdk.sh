#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: `tfork mcp` driven by the official MCP TypeScript SDK (@modelcontextprotocol/sdk,
# locked in tests/node) against a real `tfork serve` (issue 22 §4): tests/node/mcp_sdk.mjs.
# The server answers after 150 ms, so that a fork_create of 64 forks is still in flight when
# the client cancels it.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

ensure_node
[[ -d "$NODE_DIR/node_modules/@modelcontextprotocol/sdk" ]] ||
  fail "tests/node/node_modules lacks @modelcontextprotocol/sdk (npm ci --prefix tests/node)"
start_server --latency 150
export TFORK NODE_NO_WARNINGS=1 AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE=1
mkdir -p "$WORK/mcp"
step "tests/node/mcp_sdk.mjs"
run_node mcp_sdk.mjs "$WORK/mcp" || fail "tests/node/mcp_sdk.mjs failed (see the FAIL line above)"
stop_server
step "PASS"
