#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: fork create / fork env / teardown (cli.md §4, §5) with the real binary against a
# real `tfork serve`, checked through an independent client (the AWS CLI) and raw IAM calls
# (curl --aws-sigv4): snapshot isolation, key scoping, rollback, --keep-partial, retries under
# injected 503s, SIGINT with a consistent manifest, and the JSON documents' field order.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_aws_cli
require_cmd curl
start_server
# A run that mints keys writes ./<prefix>.manifest.json when no --manifest is given.
cd "$WORK"

OUT="$WORK/out"
mkdir -p "$OUT"


# check_fields WHAT JSON_FILE PYTHON_EXPR FIELDS...: the keys of a JSON object, in order.
check_fields() {
  local what=$1 file=$2 expr=$3
  shift 3
  local got
  got=$(/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(eval(sys.argv[2], {"d": d}).keys()))' "$file" "$expr")
  check_eq "$what fields" "$*" "$got"
}

step "a snapshot-enabled source with one object before and one after the snapshot"
tfork_cli bucket create fw-src --snapshots >/dev/null
echo before >"$OUT/before.txt"
echo after >"$OUT/after.txt"
aws_cli s3api put-object --bucket fw-src --key before.txt --body "$OUT/before.txt" >/dev/null
version=$(tfork_cli --json snapshot take fw-src --name base | json_get 'd["version"]')
[[ "$version" =~ ^[0-9]{19}$ ]] || fail "snapshot version: [$version]"
aws_cli s3api put-object --bucket fw-src --key after.txt --body "$OUT/after.txt" >/dev/null

step "fork create -n 4 from that snapshot, with a manifest"
M="$WORK/run.json"
expect_rc "fork create" 0 tfork_cli --json fork create fw-src -n 4 --prefix fw-run \
  --snapshot "$version" --manifest "$M"
cp "$OUT/stdout" "$OUT/create.json"
check_eq "manifest mode" 600 "$(stat -c %a "$M")"
# stdout is the manifest, and names it (issue 26 §2: "manifest": PATH).
check_eq "the manifest named" "$M" "$(json_get 'd["manifest"]' <"$OUT/create.json")"
cmp -s <(json_get 'd' <"$M") <(json_get '{k: v for k, v in d.items() if k != "manifest"}' <"$OUT/create.json") ||
  fail "stdout and the manifest differ"
check_fields "fork create" "$M" 'd' source snapshot endpoint iam_endpoint forks snapshot_taken \
  snapshot_name expires_at
check_fields "fork create item" "$M" 'd["forks"][0]' bucket status access_key_id \
  secret_access_key role
check_eq "snapshot" "$version" "$(json_get 'd["snapshot"]' <"$M")"
check_eq "statuses" '["created", "created", "created", "created"]' \
  "$(json_get '[f["status"] for f in d["forks"]]' <"$M")"
check_eq "names" '["fw-run-1", "fw-run-2", "fw-run-3", "fw-run-4"]' \
  "$(json_get '[f["bucket"] for f in d["forks"]]' <"$M")"

step "the table never shows a secret"
tfork_cli fork create fw-src --snapshot "$version" fw-table-1 --manifest "$WORK/table.json" \
  >"$OUT/table.txt"
secret=$(json_get 'd["forks"][0]["secret_access_key"]' <"$WORK/table.json")
check_not_contains "table output" "$(cat "$OUT/table.txt")" "$secret"
check_contains "table output" "$(cat "$OUT/table.txt")" "fw-table-1"

step "HeadBucket (AWS CLI) shows each fork's source and snapshot"
for i in 1 2 3 4; do
  head=$(aws_cli s3api head-bucket --bucket "fw-run-$i" --debug 2>&1 | grep -i 'x-tigris-fork-source' || true)
  check_contains "head fw-run-$i" "$head" "fw-src"
done

step "fork env 2 gives agent 2 its own scoped key"
expect_rc "fork env" 0 tfork_cli fork env --manifest "$M" 2
env_text=$(cat "$OUT/stdout")
check_contains "fork env" "$env_text" "export TFORK_BUCKET=fw-run-2"
check_contains "fork env" "$env_text" "export AWS_REGION=auto"
expect_rc "fork env json" 0 tfork_cli --json fork env --manifest "$M" fw-run-2
# Every variable an agent's clients read, then (null) every credential source it must lose.
check_fields "fork env" "$OUT/stdout" 'd' AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY \
  AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL_IAM AWS_REGION \
  AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE TIGRIS_STORAGE_ACCESS_KEY_ID \
  TIGRIS_STORAGE_SECRET_ACCESS_KEY TIGRIS_STORAGE_ENDPOINT TIGRIS_STORAGE_BUCKET TIGRIS_BUCKET \
  TIGRIS_ACCESS_KEY_ID TIGRIS_SECRET_ACCESS_KEY TFORK_BUCKET \
  TFORK_AGENT_INDEX AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN \
  TIGRIS_SESSION_TOKEN AWS_CREDENTIAL_EXPIRATION AWS_ROLE_ARN AWS_ROLE_SESSION_NAME \
  AWS_WEB_IDENTITY_TOKEN_FILE AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
  AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_AUTHORIZATION_TOKEN \
  AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE TIGRIS_ORGANIZATION_ID TIGRIS_IAM_ENDPOINT
agent_key=$(json_get 'd["AWS_ACCESS_KEY_ID"]' <"$OUT/stdout")
(
  eval "$env_text"
  [[ "$AWS_ACCESS_KEY_ID" == "$agent_key" ]] || fail "eval did not set the agent's key"
  step "agent 2 sees the snapshot's data, not what came after"
  keys=$(aws_cli s3api list-objects-v2 --bucket "$TFORK_BUCKET" --query 'Contents[].Key' --output text)
  check_eq "fork listing" "before.txt" "$keys"
  aws_cli s3api put-object --bucket "$TFORK_BUCKET" --key agent.txt --body "$OUT/after.txt" >/dev/null
  step "agent 2's key is refused on a sibling and on the source"
  for other in fw-run-1 fw-src; do
    if aws_cli s3api list-objects-v2 --bucket "$other" >"$OUT/denied.out" 2>"$OUT/denied.err"; then
      fail "agent 2's key could list $other"
    fi
    check_contains "agent key on $other" "$(cat "$OUT/denied.err")" "AccessDenied"
  done
)
expect_rc "fork env 9" 3 tfork_cli fork env --manifest "$M" 9
check_contains "fork env 9" "$(cat "$OUT/stderr")" "no fork 9"
expect_rc "fork env missing name" 3 tfork_cli fork env --manifest "$M" fw-nope
expect_rc "fork create keys none" 0 tfork_cli fork create fw-src fw-nokey-1 --keys none \
  --manifest "$WORK/nokey.json"
expect_rc "fork env without key" 3 tfork_cli fork env --manifest "$WORK/nokey.json" 1
check_contains "fork env without key" "$(cat "$OUT/stderr")" "no access key"

step "teardown --manifest removes keys and forks, keeps the source and its snapshot"
expect_rc "teardown" 0 tfork_cli --json teardown --manifest "$M"
cp "$OUT/stdout" "$OUT/teardown.json"
check_fields "teardown" "$OUT/teardown.json" 'd' forks snapshots keys
check_fields "teardown item" "$OUT/teardown.json" 'd["forks"][0]' bucket status key
check_eq "teardown statuses" '[["deleted", "deleted"], ["deleted", "deleted"], ["deleted", "deleted"], ["deleted", "deleted"]]' \
  "$(json_get '[[f["status"], f["key"]] for f in d["forks"]]' <"$OUT/teardown.json")"
check_eq "forks left" "" "$(buckets_named 'fw-run-*')"
check_eq "keys left" "" "$(keys_named 'fw-run-*')"
if AWS_ACCESS_KEY_ID=$agent_key aws_cli s3api list-buckets >/dev/null 2>"$OUT/revoked.err"; then
  fail "the revoked key still works"
fi
aws_cli s3api head-bucket --bucket fw-src
aws_cli s3api head-object --bucket fw-src --key after.txt >/dev/null
check_contains "snapshots of the source" "$(tfork_cli --json snapshot ls fw-src)" "$version"
# The manifest now records every fork deleted and every key revoked: nothing is left to do.
check_eq "manifest after teardown" '[["deleted", "revoked"], ["deleted", "revoked"], ["deleted", "revoked"], ["deleted", "revoked"]]' \
  "$(json_get '[[f["status"], f["key_status"]] for f in d["forks"]]' <"$M")"
expect_rc "teardown again" 0 tfork_cli --json teardown --manifest "$M"
check_eq "second teardown" '[]' "$(json_get 'd["forks"]' <"$OUT/stdout")"
tfork_cli teardown --manifest "$WORK/table.json" --manifest "$WORK/nokey.json" >/dev/null

step "a bad name exits 64 and sends nothing"
expect_rc "bad name" 64 tfork_cli --debug fork create fw-src fw-ok-1 Bad_Name
check_contains "bad name" "$(cat "$OUT/stderr")" "Bad_Name"
# --debug logs every request line; none may appear.
if grep -Eq '(PUT|POST|HEAD|GET|DELETE) (http|/)' "$OUT/stderr"; then
  fail "a request was sent despite the bad name: $(cat "$OUT/stderr")"
fi
check_eq "buckets after bad name" "" "$(buckets_named 'fw-ok-*')"

step "fork of a missing bucket exits 3"
expect_rc "missing source" 3 tfork_cli fork create fw-missing -n 2

step "a fork failing mid-batch rolls back everything this run created"
aws_cli s3api create-bucket --bucket fw-rb-2 >/dev/null # a plain bucket in the way
expect_rc "rollback" 6 tfork_cli --json fork create fw-src -n 3 --prefix fw-rb --manifest "$WORK/rb.json"
check_eq "rollback statuses" '["rolled-back", "failed", "rolled-back"]' \
  "$(json_get '[f["status"] for f in d["forks"]]' <"$OUT/stdout")"
check_eq "rollback error" "BucketAlreadyExists" \
  "$(json_get 'd["forks"][1]["error"]["code"]' <"$OUT/stdout" | sed 's/BucketAlreadyOwnedByYou/BucketAlreadyExists/')"
check_eq "buckets after rollback" "fw-rb-2" "$(buckets_named 'fw-rb-*')"
check_eq "keys after rollback" "" "$(keys_named 'fw-rb-*')"

step "--keep-partial keeps the successes, exits 7, and teardown finishes"
expect_rc "keep-partial" 7 tfork_cli --json fork create fw-src -n 3 --prefix fw-rb \
  --keep-partial --manifest "$WORK/kp.json"
check_eq "keep-partial statuses" '["created", "failed", "created"]' \
  "$(json_get '[f["status"] for f in d["forks"]]' <"$WORK/kp.json")"
check_eq "keep-partial keys" "2" "$(keys_named 'fw-rb-*' | wc -l)"
expect_rc "teardown keep-partial" 0 tfork_cli teardown --manifest "$WORK/kp.json"
check_eq "buckets after teardown" "fw-rb-2" "$(buckets_named 'fw-rb-*')"
check_eq "keys after teardown" "" "$(keys_named 'fw-rb-*')"

step "teardown refuses a bucket that is not a fork"
expect_rc "teardown non-fork" 6 tfork_cli teardown fw-rb-2
aws_cli s3api head-bucket --bucket fw-rb-2
expect_rc "teardown non-fork allowed" 0 tfork_cli teardown fw-rb-2 --allow-non-fork --yes

step "--exist-ok adopts an existing fork of the same source"
tfork_cli fork create fw-src fw-eo-1 --keys none --snapshot "$version" >/dev/null
expect_rc "exist-ok" 0 tfork_cli --json fork create fw-src fw-eo-1 fw-eo-2 --exist-ok \
  --snapshot "$version" --manifest "$WORK/eo.json"
check_eq "exist-ok statuses" '["exists", "created"]' \
  "$(json_get '[f["status"] for f in d["forks"]]' <"$WORK/eo.json")"
expect_rc "teardown exist-ok" 0 tfork_cli teardown --manifest "$WORK/eo.json"

step "forks of forks: teardown --source/--prefix deletes children first"
tfork_cli fork create fw-src fw-tree-a --keys none >/dev/null
tfork_cli fork create fw-tree-a fw-tree-a-child --keys none >/dev/null
expect_rc "teardown tree" 0 tfork_cli teardown fw-tree-a fw-tree-a-child
check_eq "tree left" "" "$(buckets_named 'fw-tree-*')"
tfork_cli fork create fw-src fw-pre-1 fw-pre-2 fw-other-1 --keys none >/dev/null
expect_rc "teardown source prefix" 0 tfork_cli teardown --source fw-src --prefix fw-pre-
check_eq "prefix left" "fw-other-1" "$(buckets_named 'fw-[po]*')"
tfork_cli teardown fw-other-1 >/dev/null
stop_server

step "under 30% injected 503s, fork create succeeds through retries"
start_server --fail-rate 0.3
tfork_cli --max-attempts 10 bucket create fw-flaky --snapshots >/dev/null
expect_rc "flaky fork create" 0 tfork_cli --max-attempts 10 --json fork create fw-flaky -n 8 \
  --prefix fw-fl --manifest "$WORK/fl.json"
check_eq "flaky statuses" 8 "$(json_get 'len([f for f in d["forks"] if f["status"] == "created"])' <"$WORK/fl.json")"
expect_rc "flaky teardown" 0 tfork_cli --max-attempts 10 teardown --manifest "$WORK/fl.json"
stop_server

# wait_first_created MANIFEST PID ERR: returns once MANIFEST records a first created fork, so
# that a signal lands mid-batch (a state, not a time), with a generous deadline for a loaded
# machine; fails when the command PID ends first.
wait_first_created() {
  local deadline=$((SECONDS + 120))
  until [[ -s "$1" ]] &&
    (($(json_get 'len([f for f in d["forks"] if f["status"] == "created"])' <"$1") >= 1)); do
    kill -0 "$2" 2>/dev/null || fail "fork create ended before it could be interrupted: $(cat "$3")"
    ((SECONDS < deadline)) || fail "no fork was created within 120 s"
    sleep 0.05
  done
}

step "SIGINT during fork create -n 32 (200 ms latency): exit 130, consistent manifest"
start_server --latency 200
tfork_cli bucket create fw-slow --snapshots >/dev/null
"$TFORK" --concurrency 4 --json fork create fw-slow -n 32 --prefix fw-int \
  --manifest "$WORK/int.json" >"$OUT/int.out" 2>"$OUT/int.err" &
pid=$!
wait_first_created "$WORK/int.json" "$pid" "$OUT/int.err"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
check_eq "interrupted exit" 130 "$rc"
check_eq "manifest mode" 600 "$(stat -c %a "$WORK/int.json")"
statuses=$(json_get 'sorted(set(f["status"] for f in d["forks"]))' <"$WORK/int.json")
step "statuses after SIGINT: $statuses"
check_eq "forks listed" 32 "$(json_get 'len(d["forks"])' <"$WORK/int.json")"
# Everything that exists is in the manifest as created or pending.
for b in $(buckets_named 'fw-int-*'); do
  st=$(json_get "[f['status'] for f in d['forks'] if f['bucket'] == '$b'][0]" <"$WORK/int.json")
  [[ "$st" == created || "$st" == pending ]] || fail "$b exists but the manifest says $st"
done
expect_rc "teardown after SIGINT" 0 tfork_cli teardown --manifest "$WORK/int.json"
check_eq "buckets left after SIGINT teardown" "" "$(buckets_named 'fw-int-*')"
check_eq "keys left after SIGINT teardown" "" "$(keys_named 'fw-int-*')"
aws_cli s3api head-bucket --bucket fw-slow

step "SIGTERM is handled like SIGINT: exit 143, consistent manifest"
"$TFORK" --concurrency 4 --json fork create fw-slow -n 32 --prefix fw-term \
  --manifest "$WORK/term.json" >"$OUT/term.out" 2>"$OUT/term.err" &
pid=$!
wait_first_created "$WORK/term.json" "$pid" "$OUT/term.err"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
check_eq "terminated exit" 143 "$rc"
# The same message as for SIGINT, with the signal's own name.
check_eq "the message after SIGTERM" "$(grep -i interrupt "$OUT/int.err" | sed 's/SIGINT/SIGNAL/g')" \
  "$(grep -i interrupt "$OUT/term.err" | sed 's/SIGTERM/SIGNAL/g')"
[[ -n "$(grep -i interrupt "$OUT/term.err")" ]] || fail "no interruption message after SIGTERM: $(cat "$OUT/term.err")"
check_eq "forks listed after SIGTERM" 32 "$(json_get 'len(d["forks"])' <"$WORK/term.json")"
expect_rc "teardown after SIGTERM" 0 tfork_cli teardown --manifest "$WORK/term.json"
check_eq "buckets left after SIGTERM teardown" "" "$(buckets_named 'fw-term-*')"
check_eq "keys left after SIGTERM teardown" "" "$(keys_named 'fw-term-*')"
stop_server

step "all fork workflow checks passed"
