#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (cli.md §10): `run` 8 agents that each write a different file, keep the ones
# that succeeded, diff one, merge it into the source, and check the source through boto3 and
# @tigrisdata/storage; fork rebase, bucket set, and merge's refusals.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_aws_cli
start_server
OUT="$WORK/out"
mkdir -p "$OUT"

step "a source with two objects"
tfork_cli bucket create st-src --snapshots >/dev/null
echo base >"$OUT/base.txt"
aws_cli s3api put-object --bucket st-src --key base.txt --body "$OUT/base.txt" >/dev/null
aws_cli s3api put-object --bucket st-src --key old.txt --body "$OUT/base.txt" >/dev/null

step "run 8 agents, each writes its own file; agent 8 fails; keep the succeeded"
cat >"$OUT/agent.sh" <<'AGENT'
set -e
printf 'result of agent %s\n' "$TFORK_AGENT_INDEX" >"$TMPDIR_AGENT/r$TFORK_AGENT_INDEX"
/usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" --no-cli-pager s3api put-object --bucket "$1" \
  --key "agent-$2.txt" --body "$TMPDIR_AGENT/r$TFORK_AGENT_INDEX" >/dev/null
[ "$2" = 1 ] && /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" --no-cli-pager s3api delete-object \
  --bucket "$1" --key old.txt >/dev/null
echo "agent $2 done"
[ "$2" != 8 ]
AGENT
export TMPDIR_AGENT="$OUT"
rc=0
(cd "$WORK" && tfork_cli --json run st-src -n 8 --prefix st --keep succeeded --parallel 4 \
  --env TMPDIR_AGENT --bind "$OUT" -- bash "$OUT/agent.sh" '{bucket}' '{index}') >"$OUT/run.json" 2>"$OUT/run.err" || rc=$?
[[ $rc == 7 ]] || fail "run: exit $rc, expected 7 (agent 8 fails): $(tail -5 "$OUT/run.err")"
check_contains "run lines" "$(cat "$OUT/run.err")" "[st-3] agent 3 done"
check_eq "kept" "st-1 st-2 st-3 st-4 st-5 st-6 st-7" \
  "$(json_get '" ".join(d["kept"])' <"$OUT/run.json")"
check_eq "agent 8" "1" "$(json_get 'd["agents"][7]["exit_code"]' <"$OUT/run.json")"
[[ -f "$WORK/st.manifest.json" ]] || fail "run left no manifest"
check_eq "exit codes in the manifest" "0 1" \
  "$(json_get '" ".join(str(f["agent"]["exit_code"]) for f in d["forks"][6:8])' <"$WORK/st.manifest.json")"
aws_cli s3api head-bucket --bucket st-8 >/dev/null 2>&1 && fail "st-8 (failed) was kept"
aws_cli s3api head-bucket --bucket st-1 >/dev/null || fail "st-1 was not kept"

step "fork diff st-1: one added, one deleted"
tfork_cli fork diff st-1 >"$OUT/diff.txt"
check_contains "diff" "$(cat "$OUT/diff.txt")" "added"
check_contains "diff" "$(cat "$OUT/diff.txt")" "agent-1.txt"
check_contains "diff" "$(cat "$OUT/diff.txt")" "1 added, 0 modified, 1 deleted"
tfork_cli --json fork diff st-1 --stat >"$OUT/stat.json"
check_eq "stat" "1 0 1" "$(json_get '"%d %d %d" % (d["stat"]["added"], d["stat"]["modified"], d["stat"]["deleted"])' <"$OUT/stat.json")"

step "fork merge refuses without --yes off a terminal, and a non-direct fork"
rc=0
tfork_cli fork merge st-1 </dev/null >/dev/null 2>&1 || rc=$?
[[ $rc == 64 ]] || fail "merge without --yes: exit $rc, expected 64"
rc=0
tfork_cli fork merge st-1 --into st-2 --yes >/dev/null 2>&1 || rc=$?
[[ $rc == 64 ]] || fail "merge into a sibling: exit $rc, expected 64"

step "fork merge st-1 --yes: snapshot first, then the merge"
tfork_cli --json fork merge st-1 --yes >"$OUT/merge.json"
before=$(json_get 'd["before_snapshot"]' <"$OUT/merge.json")
[[ "$before" =~ ^[0-9]{19}$ ]] || fail "before_snapshot: [$before]"
check_contains "snapshot name" "$(tfork_cli snapshot ls st-src)" "before-merge st-1"

step "the source through boto3: agent 1's file, old.txt gone"
/usr/bin/python3 - "$ENDPOINT" <<'PY' || fail "boto3 check of the merged source"
import sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url=sys.argv[1], config=Config(s3={"addressing_style": "path"}))
keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="st-src").get("Contents", []))
assert keys == ["agent-1.txt", "base.txt"], keys
body = s3.get_object(Bucket="st-src", Key="agent-1.txt")["Body"].read()
assert body == b"result of agent 1\n", body
PY

step "the source through @tigrisdata/storage"
ensure_node
cat >"$NODE_DIR/.stage_two_check.mjs" <<'JS'
import { get, list } from '@tigrisdata/storage';
const config = { accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
  endpoint: process.env.AWS_ENDPOINT_URL, forcePathStyle: true, bucket: 'st-src' };
const l = await list({ config });
if (l.error) throw l.error;
const names = l.data.items.map((i) => i.name).sort().join(',');
if (names !== 'agent-1.txt,base.txt') throw new Error(`keys: ${names}`);
const g = await get('agent-1.txt', 'string', { config });
if (g.error || g.data !== 'result of agent 1\n') throw new Error(`content: ${g.data}`);
console.log('ok');
JS
(cd "$WORK" && timeout 120 node "$NODE_DIR/.stage_two_check.mjs") || { rm -f "$NODE_DIR/.stage_two_check.mjs"; fail "@tigrisdata/storage check"; }
rm -f "$NODE_DIR/.stage_two_check.mjs"

step "fork rebase st-2 --yes: it now sees agent 1's merged file"
tfork_cli fork rebase st-2 --yes >/dev/null
aws_cli s3api head-object --bucket st-2 --key agent-1.txt >/dev/null || fail "rebased st-2 lacks agent-1.txt"

step "bucket set: off refused for a fork parent; on for a regular bucket; create --exist-ok"
rc=0
tfork_cli bucket set st-src --snapshots off >/dev/null 2>&1 || rc=$?
[[ $rc == 6 ]] || fail "snapshots off on a parent: exit $rc, expected 6"
tfork_cli bucket create st-plain >/dev/null
tfork_cli bucket set st-plain --snapshots on >/dev/null
tfork_cli bucket set st-plain --snapshots off >/dev/null
tfork_cli --json bucket create st-plain --snapshots --exist-ok >"$OUT/exist.json"
check_eq "exist-ok turns snapshots on" "True" \
  "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["snapshots_enabled"])' "$OUT/exist.json")"

step "teardown --manifest removes what run kept"
tfork_cli teardown --manifest "$WORK/st.manifest.json" >/dev/null
aws_cli s3api head-bucket --bucket st-1 >/dev/null 2>&1 && fail "st-1 survived teardown"
stop_server
step "PASS"
