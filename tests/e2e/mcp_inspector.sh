#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: the MCP Inspector's CLI mode (@modelcontextprotocol/inspector, locked in
# tests/node) lists tfork mcp's tools, finds no portability problem in their schemas (--strict),
# and calls tools, over stdio and over Streamable HTTP, against a real `tfork serve`.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

ensure_node
INSPECTOR="$NODE_DIR/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
[[ -f "$INSPECTOR" ]] || fail "tests/node/node_modules lacks @modelcontextprotocol/inspector (npm ci --prefix tests/node)"
start_server
tfork_cli bucket create insp-src --snapshots >/dev/null
printf 'inspected\n' >"$WORK/body"
aws_cli s3 cp "$WORK/body" s3://insp-src/notes.txt >/dev/null

# The Inspector keeps a catalog in HOME; the server gets only the variables given with -e.
export HOME="$WORK/home" NODE_NO_WARNINGS=1
mkdir -p "$HOME"
inspector() {
  timeout "$CLIENT_TIMEOUT" node "$INSPECTOR" --cli "$@"
}
server_env=(-e "AWS_ENDPOINT_URL=$ENDPOINT" -e "AWS_ACCESS_KEY_ID=$ROOT_AK" -e "AWS_SECRET_ACCESS_KEY=$ROOT_SK")

step "tools/list over stdio, with --strict (schema portability)"
expect_rc "inspector tools/list --strict" 0 inspector "${server_env[@]}" --method tools/list --strict \
  -- "$TFORK" mcp --source insp-src
tools=$(json_get '" ".join(sorted(t["name"] for t in d["tools"]))' <"$OUT/stdout")
check_eq "the tools" "bucket_tree fork_create fork_diff fork_head fork_list fork_merge fork_teardown object_delete object_get object_list object_presign object_put snapshot_list snapshot_take" "$tools"
check_not_contains "--strict found no problem" "$(cat "$OUT/stderr")" "Warning"

step "tools/call over stdio: fork_create, object_get, fork_teardown"
expect_rc "inspector fork_create" 0 inspector "${server_env[@]}" --method tools/call --tool-name fork_create \
  --tool-arg source=insp-src count=2 prefix=insp --cwd "$WORK" -- "$TFORK" mcp --source insp-src
check_eq "forks made" "insp-1 insp-2" "$(json_get '" ".join(f["bucket"] for f in d["structuredContent"]["forks"])' <"$OUT/stdout")"
check_not_contains "no secret" "$(cat "$OUT/stdout")" "tsec_"
expect_rc "inspector object_get" 0 inspector "${server_env[@]}" --method tools/call --tool-name object_get \
  --tool-arg bucket=insp-2 key=notes.txt -- "$TFORK" mcp --source insp-src
check_eq "the fork's copy" "inspected" "$(json_get 'd["structuredContent"]["text"].strip()' <"$OUT/stdout")"
expect_rc "inspector fork_teardown without confirm (a tool error: the Inspector exits 5)" 5 inspector "${server_env[@]}" --method tools/call \
  --tool-name fork_teardown --tool-arg all=true -- "$TFORK" mcp --source insp-src
check_contains "refused" "$(cat "$OUT/stdout")" "Ask the user first"

step "over Streamable HTTP, with the bearer token"
"$TFORK" mcp --source insp-src --listen 127.0.0.1:0 --token-file "$WORK/token" 2>"$WORK/mcp-http.err" &
mcp_pid=$!
deadline=$((SECONDS + 20))
until grep -q 'listening on' "$WORK/mcp-http.err"; do
  ((SECONDS < deadline)) || fail "tfork mcp --listen did not start: $(cat "$WORK/mcp-http.err")"
  sleep 0.05
done
url=$(grep -o 'http://[^ ]*/mcp' "$WORK/mcp-http.err")
token=$(cat "$WORK/token")
check_eq "the token file's mode" 600 "$(stat -c %a "$WORK/token")"
expect_rc "inspector over HTTP without the token (refused: exit 3)" 3 inspector --method tools/list --transport http --server-url "$url"
check_contains "the 401 asked for authorization" "$(cat "$OUT/stderr")" "auth"
expect_rc "inspector over HTTP" 0 inspector --method tools/list --transport http --server-url "$url" \
  --header "Authorization: Bearer $token"
check_contains "tools over HTTP" "$(cat "$OUT/stdout")" '"fork_create"'
expect_rc "inspector fork_teardown over HTTP" 0 inspector --method tools/call --transport http --server-url "$url" \
  --header "Authorization: Bearer $token" --tool-name fork_teardown --tool-arg all=true confirm=true
check_eq "torn down" "deleted deleted" "$(json_get '" ".join(f["status"] for f in d["structuredContent"]["forks"])' <"$OUT/stdout")"
kill -TERM "$mcp_pid"
rc=0
wait "$mcp_pid" || rc=$?
check_eq "tfork mcp --listen after SIGTERM" 0 "$rc"
stop_server
step "PASS"
