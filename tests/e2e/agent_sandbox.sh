#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 21 §1, cli.md §12): the agent sandbox, for real (bubblewrap), against a
# real `tfork serve`. The operator's root keys are in every variable a tool reads and in every
# file an agent could look at (its HOME's ~/.aws and ~/.tigris, AWS_SHARED_CREDENTIALS_FILE,
# /dev/shm, /var/tmp, the manifest and an older run's manifest beside it), an SSH agent socket
# is set, and tfork runs on a terminal. A curious agent (agents/curious_agent.py) searches all
# of it, /proc/*/environ and the sibling's working directory, and tries every key it finds on
# the source and on the sibling: it finds nothing, reaches nothing, and its own fork works.
# Also: each agent's own kept working directory (in the result and the manifest), --sandbox
# none's warning, exit 64 without a usable bwrap, --bind/--ro-bind/--env, a manifest's
# hostile fork names, a planted link in --workdir, --logs under its directory, {bucket} as
# one argument, and --dry-run running nothing.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd bwrap script
require_aws_cli
start_server
AGENTS="$SOURCE_DIR/tests/e2e/agents"
OUT="$WORK/out"
mkdir -p "$OUT"

# The operator's directories, outside /tmp (which every sandbox masks whole, so a test there
# would prove little): beside the binary. Removed with the rest on exit.
OPS=$(mktemp -d "$(dirname "$TFORK")/e2e-sandbox.XXXXXX")
SHM_SECRET=/dev/shm/tfork-e2e-sandbox.$$
VARTMP_SECRET=/var/tmp/tfork-e2e-sandbox.$$
trap 'rc=$?; rm -rf "$OPS" "$SHM_SECRET" "$VARTMP_SECRET"; (exit $rc); _lib_cleanup' EXIT

step "a source, a run of two forks, and an older run's manifest beside it"
tfork_cli bucket create cs-src --snapshots >/dev/null
echo data >"$OUT/data.txt"
aws_cli s3api put-object --bucket cs-src --key data.txt --body "$OUT/data.txt" >/dev/null
mkdir -p "$OPS/runs"
cd "$OPS/runs"
M="$OPS/runs/cs.manifest.json"
tfork_cli fork create cs-src -n 2 --prefix cs --manifest "$M" -q >/dev/null
tfork_cli fork create cs-src -n 1 --prefix old --manifest "$OPS/runs/old.json" -q >/dev/null
sibling_secret=$(json_get 'd["forks"][1]["secret_access_key"]' <"$M")
old_secret=$(json_get 'd["forks"][0]["secret_access_key"]' <"$OPS/runs/old.json")

step "the operator's root keys in every variable and file"
mkdir -p "$OPS/home/.aws" "$OPS/home/.tigris" "$OPS/operator" "$OPS/ssh"
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$ROOT_AK" "$ROOT_SK" |
  tee "$OPS/home/.aws/credentials" >"$OPS/operator/credentials"
printf '[default]\nregion = auto\nendpoint_url = %s\n' "$ENDPOINT" >"$OPS/operator/config"
printf '{"version": 2, "credentials": {"saved": {"accessKeyId": "%s", "secretAccessKey": "%s"}}}\n' \
  "$ROOT_AK" "$ROOT_SK" >"$OPS/home/.tigris/config.json"
printf 'root %s %s\n' "$ROOT_AK" "$ROOT_SK" | tee "$SHM_SECRET" >"$VARTMP_SECRET"
/usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
  "$OPS/ssh/agent.sock"
export HOME="$OPS/home" SSH_AUTH_SOCK="$OPS/ssh/agent.sock"
export AWS_SHARED_CREDENTIALS_FILE="$OPS/operator/credentials" AWS_CONFIG_FILE="$OPS/operator/config"
export AWS_PROFILE=default AWS_SESSION_TOKEN=operator-session
export TIGRIS_STORAGE_ACCESS_KEY_ID=$ROOT_AK TIGRIS_STORAGE_SECRET_ACCESS_KEY=$ROOT_SK
export TIGRIS_ACCESS_KEY_ID=$ROOT_AK TIGRIS_SECRET_ACCESS_KEY=$ROOT_SK TIGRIS_BUCKET=cs-src
export TFORK_ROOT_ACCESS_KEY=$ROOT_AK TFORK_ROOT_SECRET_KEY=$ROOT_SK
export AWS_ACCESS_KEY=$ROOT_AK AWS_SECRET_KEY=$ROOT_SK OPERATOR_NOTE="the root key is $ROOT_SK"

step "each agent's working directory: its own, kept, named in the result and the manifest"
# Each agent leaves a note in its directory, its key in it too (as careless agents do).
cat >"$OUT/mark.sh" <<'SH'
echo "$TFORK_BUCKET was here" >mark.txt
echo "$AWS_SECRET_ACCESS_KEY" >my-key.txt
ls -A .. | tr '\n' ' '
SH
expect_rc "fork exec both" 0 tfork_cli --json fork exec --manifest "$M" -- bash "$OUT/mark.sh"
workdir=$(json_get 'd["agents"][1]["workdir"]' <"$OUT/stdout")
check_eq "cs-2's workdir" "$(realpath "$OPS/runs/cs.work/cs-2")" "$workdir"
check_eq "its mark, kept" "cs-2 was here" "$(cat "$workdir/mark.txt")"
check_contains "cs-2 sees only its own directory" "$(cat "$OUT/stderr")" "[cs-2] cs-2 "
check_not_contains "cs-2 sees no sibling" "$(cat "$OUT/stderr")" "[cs-2] cs-1"
check_eq "in the manifest" "$workdir" "$(json_get 'd["forks"][1]["agent"]["workdir"]' <"$M")"
check_eq "manifest mode" 600 "$(stat -c %a "$M")"

step "the curious agent, on a terminal, finds nothing and reaches nothing"
cat >"$OUT/curious.sh" <<EOF_CMD
exec "$TFORK" --json fork exec --manifest "$M" 1 -- /usr/bin/python3 "$AGENTS/curious_agent.py" \
  "$ENDPOINT" cs-src cs-2 "$M" "$OPS/runs/old.json" "?$OPS/home/.aws/credentials" \
  "$OPS/home/.tigris/config.json" "$OPS/operator/credentials" "$OPS/runs/cs.work/cs-2" \
  "$OPS/runs/old.work" "$SHM_SECRET" "$VARTMP_SECRET" "$OPS/ssh/agent.sock" \
  >"$OUT/curious.out" 2>"$OUT/curious.err"
EOF_CMD
mkdir -p "$OPS/runs/old.work/old-1" && echo "$old_secret" >"$OPS/runs/old.work/old-1/notes"
rc=0
script -qec "bash $OUT/curious.sh" /dev/null </dev/null >/dev/null || rc=$?
report=$(cat "$OUT/curious.err")
[[ $rc == 0 ]] || fail "the curious agent found or reached something (exit $rc): $report"
check_contains "curious agent" "$report" "[cs-1] FOUND 0 foreign keys, 0 reached, 0 visible"
for secret in "$ROOT_SK" "$sibling_secret" "$old_secret"; do
  check_not_contains "what the agent printed" "$report" "$secret"
done
check_eq "the sandbox" "bwrap" "$(json_get 'd["agents"][0]["sandbox"]' <"$OUT/curious.out")"

step "the source and the sibling are untouched; the agent's own fork has its write"
check_eq "source keys" "data.txt" \
  "$(aws_cli s3api list-objects-v2 --bucket cs-src --query 'Contents[].Key' --output text)"
check_eq "sibling keys" "data.txt" \
  "$(aws_cli s3api list-objects-v2 --bucket cs-2 --query 'Contents[].Key' --output text)"
check_eq "own keys" "$(printf 'curious.txt\tdata.txt')" \
  "$(aws_cli s3api list-objects-v2 --bucket cs-1 --query 'Contents[].Key' --output text)"

step "--bind, --ro-bind and --env share on purpose; nothing else of the operator's comes in"
mkdir -p "$OPS/shared-rw" "$OPS/shared-ro" && echo model >"$OPS/shared-ro/weights"
export HF_HOME=/models
expect_rc "fork exec with shares" 0 tfork_cli fork exec --manifest "$M" 2 --env HF_HOME \
  --bind "$OPS/shared-rw" --ro-bind "$OPS/shared-ro:/models" -- bash -c \
  'cat "$HF_HOME/weights" && echo "from {bucket}" >"'"$OPS"'/shared-rw/out" &&
   ! touch /models/x 2>/dev/null && echo "${SSH_AUTH_SOCK:-no ssh} ${DISPLAY:-no display}"'
check_eq "a writable share" "from cs-2" "$(cat "$OPS/shared-rw/out")"
check_contains "read-only share and --env" "$(cat "$OUT/stderr")" "[cs-2] model"
check_contains "no SSH agent" "$(cat "$OUT/stderr")" "[cs-2] no ssh no display"
expect_rc "--env of a variable tfork sets" 64 tfork_cli fork exec --manifest "$M" \
  --env AWS_SECRET_ACCESS_KEY -- true
expect_rc "a writable share of the manifest's directory" 64 tfork_cli fork exec --manifest "$M" \
  --bind "$OPS/runs" -- true
check_contains "why" "$(cat "$OUT/stderr")" "would show"

step "{bucket} is one argument, never re-parsed by a shell tfork starts"
expect_rc "{bucket}" 0 tfork_cli fork exec --manifest "$M" 1 -- /usr/bin/printf '<%s>\n' \
  'a {bucket} b' '$(id)'
check_contains "one argument" "$(cat "$OUT/stderr")" '[cs-1] <a cs-1 b>'
check_contains "no substitution" "$(cat "$OUT/stderr")" '[cs-1] <$(id)>'

step "tfork installed under a masked directory runs inside the sandbox, modules and all"
# As `cmake --install --prefix ~/.local` lays it out, but under $WORK (in /tmp, which every
# sandbox masks): the agent is given the binary, and must get the modules it loads beside it.
mkdir -p "$WORK/opt/bin" "$WORK/opt/lib/tfork"
cp "$TFORK" "$WORK/opt/bin/tfork"
cp "$(dirname "$TFORK")"/tfork-*.so "$WORK/opt/lib/tfork/"
expect_rc "a tfork under /tmp as the agent" 0 tfork_cli fork exec --manifest "$M" 1 -- \
  "$WORK/opt/bin/tfork" fork head '{bucket}'
check_contains "it reached its fork" "$(cat "$OUT/stderr")" '[cs-1] '

step "--logs files stay in their directory; output to the terminal is escaped"
expect_rc "fork exec --logs" 0 tfork_cli fork exec --manifest "$M" --logs "$OPS/logs" -- \
  /usr/bin/printf 'x\r\033]0;pwned\007\n'
check_eq "log files" "cs-1.log cs-2.log" "$(ls "$OPS/logs" | tr '\n' ' ' | sed 's/ $//')"
expect_rc "escaped lines" 0 tfork_cli fork exec --manifest "$M" 1 -- /usr/bin/printf 'x\r\033]0;pwned\007\n'
check_contains "escaped" "$(cat "$OUT/stderr")" '[cs-1] x\r\x1b]0;pwned\x07'

step "a manifest's hostile fork names are refused before anything runs"
for name in '..' '../../x' $'cs-1\e[2J' 'a;touch pwned'; do
  /usr/bin/python3 - "$M" "$OUT/hostile.json" "$name" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["forks"][0]["bucket"] = sys.argv[3]
json.dump(m, open(sys.argv[2], "w"))
PY
  expect_rc "fork name $(printf %q "$name")" 64 tfork_cli fork exec --manifest "$OUT/hostile.json" \
    --logs "$OPS/hostile-logs" -- touch "$OPS/ran"
  [[ ! -e "$OPS/ran" && ! -e "$OPS/x.log" && ! -e "$OPS/runs/x.log" ]] || fail "a hostile name ran or wrote"
  check_not_contains "no ESC in the message" "$(cat "$OUT/stderr")" $'\e'
done

step "a planted link where a working directory goes is refused"
mkdir -p "$OPS/work"
ln -s "$OPS/home" "$OPS/work/cs-1"
expect_rc "a link as cs-1's directory" 64 tfork_cli fork exec --manifest "$M" --workdir "$OPS/work" -- true
check_contains "why" "$(cat "$OUT/stderr")" "symbolic link"
[[ ! -e "$OPS/home/cs-1" ]] || fail "the link was followed"

step "--dry-run runs nothing: forks, commands, sandbox, variable names, never values"
expect_rc "dry run" 0 tfork_cli --json --dry-run fork exec --manifest "$M" -- touch "$OPS/dry-{bucket}"
[[ ! -e "$OPS/dry-cs-1" && ! -e "$OPS/dry-cs-2" ]] || fail "--dry-run ran an agent"
check_eq "the commands" "touch $OPS/dry-cs-1|touch $OPS/dry-cs-2" \
  "$(json_get '"|".join(" ".join(a["command"]) for a in d["agents"])' <"$OUT/stdout")"
check_eq "sandbox" "bwrap" "$(json_get 'd["agents"][0]["sandbox"]' <"$OUT/stdout")"
check_contains "variable names" "$(json_get 'd["agents"][0]["variables"]' <"$OUT/stdout")" \
  "AWS_SECRET_ACCESS_KEY"
for secret in "$ROOT_SK" "$sibling_secret"; do
  check_not_contains "no secret in the dry run" "$(cat "$OUT/stdout" "$OUT/stderr")" "$secret"
done
expect_rc "dry run, table" 0 tfork_cli --dry-run fork exec --manifest "$M" -- true
check_contains "the table" "$(cat "$OUT/stdout")" "variables of each agent:"

step "--sandbox none says what it gives away; without a usable bwrap, exit 64 and a way out"
expect_rc "--sandbox none" 0 tfork_cli fork exec --manifest "$M" 1 --sandbox none -- true
check_contains "the warning" "$(cat "$OUT/stderr")" "can read your files"
mkdir -p "$OPS/nobwrap"
expect_rc "no bwrap on PATH" 64 env PATH="$OPS/nobwrap" "$TFORK" fork exec --manifest "$M" -- /bin/true
check_contains "why" "$(cat "$OUT/stderr")" "apt-get install bubblewrap"
# A bwrap that cannot create namespaces here (as in a container that forbids them).
printf '#!/bin/sh\necho "bwrap: No permissions to creating new namespace" >&2\nexit 1\n' >"$OPS/nobwrap/bwrap"
chmod +x "$OPS/nobwrap/bwrap"
expect_rc "bwrap without namespaces" 64 env PATH="$OPS/nobwrap:/usr/bin:/bin" "$TFORK" fork exec \
  --manifest "$M" -- touch "$OPS/ran"
check_contains "why" "$(cat "$OUT/stderr")" "No permissions to creating new namespace"
check_contains "the way out" "$(cat "$OUT/stderr")" "--sandbox none"
[[ ! -e "$OPS/ran" ]] || fail "an agent ran without its sandbox"

cd "$WORK"
unset AWS_PROFILE AWS_SESSION_TOKEN
export AWS_SHARED_CREDENTIALS_FILE="$WORK/aws/credentials" AWS_CONFIG_FILE="$WORK/aws/config"
expect_rc "teardown" 0 tfork_cli teardown --manifest "$M" --manifest "$OPS/runs/old.json" -q
stop_server
step "PASS"
