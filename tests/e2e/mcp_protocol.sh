#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: tfork mcp's JSON-RPC layer by a raw line client against a real `tfork serve`
# (issue 22 §1, §4): tests/node/mcp_raw.mjs (negotiation, error codes, calls before initialize,
# a 2025-03-26 batch, a 100 MB line, deep nesting, a flood of calls, EOF).
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

ensure_node
start_server
export TFORK NODE_NO_WARNINGS=1 AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE=1
step "tests/node/mcp_raw.mjs"
run_node mcp_raw.mjs || fail "tests/node/mcp_raw.mjs failed (see the FAIL line above)"

step "SIGTERM during a call: the server ends it and exits 143"
coproc MCP { "$TFORK" mcp --source raw-src 2>"$WORK/mcp.err"; }
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' >&"${MCP[1]}"
read -r -t 20 answer <&"${MCP[0]}" || fail "no answer to initialize"
check_contains "initialize" "$answer" '"protocolVersion":"2025-11-25"'
mcp_pid=$MCP_PID
# The HTTP transport's library is a module of its own, loaded only with --listen.
check_not_contains "stdio loads no libmicrohttpd" "$(cat "/proc/$mcp_pid/maps")" "microhttpd"
kill -TERM "$mcp_pid"
rc=0
wait "$mcp_pid" || rc=$?
check_eq "exit code after SIGTERM" 143 "$rc"
stop_server
step "PASS"
