#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 7 §2, issue 21, cli.md §11–§12): an agent's environment is its fork and
# nothing else, and the clients still work inside the sandbox `fork exec` starts by default.
# With the operator's root keys present in every variable a client could read (AWS_*,
# TIGRIS_STORAGE_*, AWS_PROFILE with a profile file, a session token), the AWS CLI, boto3 and
# @tigrisdata/storage, each run by `tfork fork exec`, write their own fork and are denied on
# the source and on a sibling fork; so does the official Tigris CLI, with the root keys also in
# ~/.tigris/config.json and an ~/.aws profile under its (temporary) HOME. Also: `fork env` in
# its three formats and in a subshell, refusal of forks the manifest does not record as live,
# and the agent-key hint on errors.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_aws_cli
start_server
AGENTS="$SOURCE_DIR/tests/e2e/agents"
OUT="$WORK/out"
mkdir -p "$OUT"

step "a source, and two forks with keys"
tfork_cli bucket create iso-src --snapshots >/dev/null
echo data >"$OUT/data.txt"
aws_cli s3api put-object --bucket iso-src --key data.txt --body "$OUT/data.txt" >/dev/null
M="$WORK/iso.manifest.json"
tfork_cli fork create iso-src -n 2 --prefix iso --manifest "$M" >/dev/null

step "the operator's root keys everywhere a client looks"
mkdir -p "$WORK/operator"
cat >"$WORK/operator/credentials" <<EOF_CREDS
[operator]
aws_access_key_id = $ROOT_AK
aws_secret_access_key = $ROOT_SK
EOF_CREDS
cat >"$WORK/operator/config" <<EOF_CONFIG
[profile operator]
region = auto
endpoint_url = $ENDPOINT
EOF_CONFIG
export AWS_SHARED_CREDENTIALS_FILE="$WORK/operator/credentials" AWS_CONFIG_FILE="$WORK/operator/config"
export AWS_PROFILE=operator AWS_DEFAULT_PROFILE=operator AWS_SESSION_TOKEN=operator-session
export TIGRIS_STORAGE_ACCESS_KEY_ID=$ROOT_AK TIGRIS_STORAGE_SECRET_ACCESS_KEY=$ROOT_SK
export TIGRIS_STORAGE_ENDPOINT=$ENDPOINT TIGRIS_STORAGE_BUCKET=iso-src
# (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY already hold the root keys from `tfork serve`.)
[[ "$AWS_ACCESS_KEY_ID" == "$ROOT_AK" ]] || fail "the root key is not in AWS_ACCESS_KEY_ID"

step "the AWS CLI inside fork exec: own fork yes, source and sibling no"
rc=0
tfork_cli fork exec --manifest "$M" 1 -- bash "$AGENTS/isolation_awscli.sh" iso-src iso-2 \
  >"$OUT/awscli.out" 2>"$OUT/awscli.err" || rc=$?
[[ $rc == 0 ]] || fail "AWS CLI agent: exit $rc: $(cat "$OUT/awscli.err")"
check_contains "AWS CLI agent" "$(cat "$OUT/awscli.err")" "[iso-1] isolated"
check_contains "in its sandbox" "$(cat "$OUT/awscli.err")" "each in a bwrap sandbox"

step "boto3 inside fork exec"
rc=0
tfork_cli fork exec --manifest "$M" iso-2 -- /usr/bin/python3 "$AGENTS/isolation_boto3.py" \
  iso-src iso-1 >"$OUT/boto3.out" 2>"$OUT/boto3.err" || rc=$?
[[ $rc == 0 ]] || fail "boto3 agent: exit $rc: $(cat "$OUT/boto3.err")"
check_contains "boto3 agent" "$(cat "$OUT/boto3.err")" "[iso-2] isolated"

step "@tigrisdata/storage inside fork exec"
ensure_node
rc=0
(cd "$WORK" && tfork_cli fork exec --manifest "$M" 1 -- \
  node "$NODE_DIR/agent_isolation.mjs" iso-src iso-2) >"$OUT/node.out" 2>"$OUT/node.err" || rc=$?
[[ $rc == 0 ]] || fail "@tigrisdata/storage agent: exit $rc: $(cat "$OUT/node.err")"
check_contains "node agent" "$(cat "$OUT/node.err")" "[iso-1] isolated"

step "the Tigris CLI inside fork exec, with root keys in its HOME too"
TIGRIS_JS="$NODE_DIR/node_modules/@tigrisdata/cli/dist/cli.js"
[[ -f "$TIGRIS_JS" ]] || fail "the Tigris CLI is not installed in tests/node (npm ci)"
OPERATOR_HOME="$WORK/operator-home"
mkdir -p "$OPERATOR_HOME/.tigris" "$OPERATOR_HOME/.aws"
# Its own file, as `tigris login credentials` writes it, and the profile files it checks for.
printf '{"version": 2, "activeMethod": "credentials", "credentials": {"saved": {"accessKeyId": "%s", "secretAccessKey": "%s", "endpoint": "%s"}}}\n' \
  "$ROOT_AK" "$ROOT_SK" "$ENDPOINT" >"$OPERATOR_HOME/.tigris/config.json"
cp "$WORK/operator/credentials" "$OPERATOR_HOME/.aws/credentials"
cp "$WORK/operator/config" "$OPERATOR_HOME/.aws/config"
export AWS_ENDPOINT_URL_S3=$ENDPOINT AWS_ENDPOINT_URL_IAM=$ENDPOINT
# Outside an agent, these reach the source: the CLI really would find the root keys.
NODE_NO_WARNINGS=1 HOME=$OPERATOR_HOME timeout 120 node "$TIGRIS_JS" ls t3://iso-src </dev/null \
  >"$OUT/tigris-operator.out" 2>&1 || fail "the operator's Tigris CLI cannot list the source: $(cat "$OUT/tigris-operator.out")"
check_contains "operator's Tigris CLI" "$(cat "$OUT/tigris-operator.out")" "data.txt"
rc=0
HOME=$OPERATOR_HOME tfork_cli fork exec --manifest "$M" iso-2 -- bash "$AGENTS/isolation_tigriscli.sh" \
  "$TIGRIS_JS" iso-src iso-1 >"$OUT/tigriscli.out" 2>"$OUT/tigriscli.err" || rc=$?
[[ $rc == 0 ]] || fail "Tigris CLI agent: exit $rc: $(cat "$OUT/tigriscli.err")"
check_contains "Tigris CLI agent" "$(cat "$OUT/tigriscli.err")" "[iso-2] isolated"
unset AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL_IAM

step "what the agents wrote is in their forks, and nothing reached the source"
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN
export AWS_SHARED_CREDENTIALS_FILE="$WORK/aws/credentials" AWS_CONFIG_FILE="$WORK/aws/config"
src_keys=$(aws_cli s3api list-objects-v2 --bucket iso-src --query 'Contents[].Key' --output text)
check_eq "source keys" "data.txt" "$src_keys"
check_eq "iso-1 keys" "$(printf 'awscli.txt\tdata.txt\ttigris.txt')" \
  "$(aws_cli s3api list-objects-v2 --bucket iso-1 --query 'Contents[].Key' --output text)"
check_eq "iso-2 keys" "$(printf 'boto3.txt\tdata.txt\ttigriscli.txt')" \
  "$(aws_cli s3api list-objects-v2 --bucket iso-2 --query 'Contents[].Key' --output text)"

step "fork env: three formats, and a subshell leaves the operator's credentials alone"
tfork_cli fork env --manifest "$M" 2 >"$OUT/env.sh"
check_contains "env format" "$(head -1 "$OUT/env.sh")" "unset AWS_PROFILE AWS_DEFAULT_PROFILE"
tfork_cli fork env --manifest "$M" 2 --format dotenv >"$OUT/env.dotenv"
check_contains "dotenv" "$(cat "$OUT/env.dotenv")" 'TIGRIS_STORAGE_BUCKET=iso-2'
# The README's container recipe: `docker run --env-file` (and podman) take each line's value
# verbatim after the first '=', skipping comments.
check_eq "dotenv read as docker reads it" "$(json_get 'd["forks"][1]["secret_access_key"]' <"$M")" \
  "$(/usr/bin/python3 -c '
import sys
env = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]) if l.strip() and not l.startswith("#"))
print(env["AWS_SECRET_ACCESS_KEY"])' "$OUT/env.dotenv")"
tfork_cli fork env --manifest "$M" 2 --format json >"$OUT/env.json"
check_eq "json key" "$(json_get 'd["TFORK_BUCKET"]' <"$OUT/env.json")" "iso-2"
check_eq "json unset" "true" "$(json_get 'd["AWS_PROFILE"] is None' <"$OUT/env.json")"
export AWS_PROFILE=operator
(
  eval "$(cat "$OUT/env.sh")"
  [[ -z "${AWS_PROFILE+set}" ]] || fail "fork env left AWS_PROFILE set"
  [[ "$AWS_CONFIG_FILE" == /dev/null && "$TIGRIS_STORAGE_BUCKET" == iso-2 ]] ||
    fail "fork env did not point the config at /dev/null"
  [[ "$TIGRIS_STORAGE_ACCESS_KEY_ID" != "$ROOT_AK" ]] || fail "the root key survived in TIGRIS_STORAGE_*"
)
[[ "$AWS_PROFILE" == operator && "$AWS_ACCESS_KEY_ID" == "$ROOT_AK" ]] ||
  fail "the subshell changed the operator's shell"
unset AWS_PROFILE

step "an operator command run with an agent's key says so"
agent_key=$(json_get 'd["forks"][0]["access_key_id"]' <"$M")
agent_secret=$(json_get 'd["forks"][0]["secret_access_key"]' <"$M")
rc=0
(cd "$WORK" && AWS_ACCESS_KEY_ID=$agent_key AWS_SECRET_ACCESS_KEY=$agent_secret \
  tfork_cli snapshot take iso-src) >"$OUT/hint.out" 2>"$OUT/hint.err" || rc=$?
[[ $rc == 2 ]] || fail "agent key on the source: exit $rc, expected 2"
check_contains "agent key hint" "$(cat "$OUT/hint.err")" "agent key of fork iso-1"

step "fork env and fork exec refuse a fork the manifest does not record as live"
/usr/bin/python3 - "$M" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["forks"][1]["status"] = "failed"
json.dump(m, open(sys.argv[1], "w"))
PY
rc=0
tfork_cli fork env --manifest "$M" 2 >/dev/null 2>"$OUT/refused.err" || rc=$?
[[ $rc == 3 ]] || fail "fork env of a failed fork: exit $rc, expected 3"
rc=0
tfork_cli fork exec --manifest "$M" 2 -- true >/dev/null 2>"$OUT/refused.err" || rc=$?
[[ $rc == 3 ]] || fail "fork exec of a failed fork: exit $rc, expected 3"

stop_server
step "PASS"
