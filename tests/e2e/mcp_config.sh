#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: `tfork mcp config CLIENT` prints each client's entry (JSON, TOML for codex), and
# `tfork mcp install CLIENT` merges it into the client's file: a backup first, other servers
# kept, idempotent; bad input refused before anything is written (issue 22 §3).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_tfork
export HOME="$WORK/home"
mkdir -p "$HOME"
cd "$WORK"
self=$(readlink -f "$TFORK")

step "config prints the entry of each client"
for client in claude-code cursor vscode gemini; do
  expect_rc "config $client" 0 "$TFORK" mcp config "$client" --source training-data --read-only
  key=mcpServers
  [[ $client == vscode ]] && key=servers
  check_eq "$client: command" "$self" "$(json_get "d['$key']['tfork']['command']" <"$OUT/stdout")"
  check_eq "$client: args" '["mcp", "--source", "training-data", "--read-only"]' \
    "$(json_get "d['$key']['tfork']['args']" <"$OUT/stdout")"
done
check_eq "claude-code names the transport" stdio "$("$TFORK" mcp config claude-code --source src1 | json_get "d['mcpServers']['tfork']['type']")"
expect_rc "config codex" 0 "$TFORK" mcp config codex --source training-data
check_eq "codex: TOML" "[mcp_servers.tfork]
command = \"$self\"
args = [\"mcp\", \"--source\", \"training-data\"]" "$(cat "$OUT/stdout")"
expect_rc "agent mode: a missing manifest" 64 "$TFORK" mcp config cursor --manifest missing.json --fork 1
cat >run.manifest.json <<'JSON'
{"source": "src1", "snapshot": "1751631910196672425", "endpoint": "http://127.0.0.1:9",
 "iam_endpoint": "http://127.0.0.1:9",
 "forks": [{"bucket": "src1-f-1", "status": "created", "access_key_id": "tid_a",
            "secret_access_key": "tsec_never_printed", "role": "Editor"}]}
JSON
expect_rc "agent mode" 0 "$TFORK" mcp config gemini --manifest run.manifest.json --fork 1
check_eq "agent mode: the manifest made absolute" "[\"mcp\", \"--manifest\", \"$WORK/run.manifest.json\", \"--fork\", \"1\"]" \
  "$(json_get "d['mcpServers']['tfork']['args']" <"$OUT/stdout")"
check_not_contains "no secret in the entry" "$(cat "$OUT/stdout")" tsec_
expect_rc "agent mode: a fork the manifest does not have" 3 "$TFORK" mcp config gemini --manifest run.manifest.json --fork 2
expect_rc "an unknown client" 64 "$TFORK" mcp config emacs --source training-data
check_contains "the clients named" "$(cat "$OUT/stderr")" "claude-code, cursor, vscode, codex, gemini"
expect_rc "no mode" 64 "$TFORK" mcp config cursor
expect_rc "a bad source name" 64 "$TFORK" mcp config cursor --source Bad_Name

step "install merges into an existing file: backup first, other servers kept"
mkdir -p "$HOME/.cursor"
printf '{"mcpServers": {"other": {"command": "other-server", "args": ["x"]}}, "theme": "dark"}\n' >"$HOME/.cursor/mcp.json"
chmod 600 "$HOME/.cursor/mcp.json"
original=$(cat "$HOME/.cursor/mcp.json")
expect_rc "install cursor" 0 "$TFORK" mcp install cursor --source training-data
check_eq "the backup is the old file" "$original" "$(cat "$HOME/.cursor/mcp.json.bak")"
check_eq "the other server kept" other-server "$(json_get "d['mcpServers']['other']['command']" <"$HOME/.cursor/mcp.json")"
check_eq "the other settings kept" dark "$(json_get "d['theme']" <"$HOME/.cursor/mcp.json")"
check_eq "tfork added" "$self" "$(json_get "d['mcpServers']['tfork']['command']" <"$HOME/.cursor/mcp.json")"
check_eq "the mode kept" 600 "$(stat -c %a "$HOME/.cursor/mcp.json")"
installed=$(cat "$HOME/.cursor/mcp.json")

step "install is idempotent"
expect_rc "install cursor again" 0 "$TFORK" -o json mcp install cursor --source training-data
check_eq "nothing changed" false "$(json_get "d['changed']" <"$OUT/stdout")"
check_eq "the file as it was" "$installed" "$(cat "$HOME/.cursor/mcp.json")"

step "install into a new file, and into codex's TOML among other tables"
expect_rc "install claude-code (project .mcp.json)" 0 "$TFORK" mcp install claude-code --source training-data
check_eq "a new file" "$self" "$(json_get "d['mcpServers']['tfork']['command']" <"$WORK/.mcp.json")"
mkdir -p "$HOME/.codex"
cat >"$HOME/.codex/config.toml" <<'TOML'
model = "o3"

[mcp_servers.other]
command = "other-server"

[mcp_servers.tfork]
command = "old-tfork"
args = ["mcp"]

[mcp_servers.tfork.env]
OLD = "1"

[profiles.fast]
model = "mini"
TOML
expect_rc "install codex" 0 "$TFORK" mcp install codex --source training-data
toml=$(cat "$HOME/.codex/config.toml")
check_contains "the other server kept" "$toml" '[mcp_servers.other]'
check_contains "other tables kept" "$toml" '[profiles.fast]'
check_not_contains "the old entry replaced" "$toml" 'old-tfork'
check_not_contains "its sub-table too" "$toml" 'OLD = "1"'
check_contains "ours" "$toml" "command = \"$self\""
check_eq "one tfork table" 1 "$(grep -c '^\[mcp_servers.tfork\]' "$HOME/.codex/config.toml")"
python3 -c 'import sys, tomllib; d = tomllib.load(open(sys.argv[1], "rb")); assert d["mcp_servers"]["tfork"]["args"] == ["mcp", "--source", "training-data"], d; assert d["profiles"]["fast"]["model"] == "mini"' \
  "$HOME/.codex/config.toml" || fail "the merged config.toml is not the TOML it should be"
expect_rc "install codex again" 0 "$TFORK" -o json mcp install codex --source training-data
check_eq "codex: idempotent" false "$(json_get "d['changed']" <"$OUT/stdout")"

step "a file that is not JSON is refused, untouched"
printf 'not json {' >"$WORK/broken.json"
expect_rc "install into a broken file" 64 "$TFORK" mcp install gemini --source training-data --config-path "$WORK/broken.json"
check_eq "untouched" "not json {" "$(cat "$WORK/broken.json")"
[[ ! -e "$WORK/broken.json.bak" ]] || fail "no backup for a refused install"
step "PASS"
