#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 21 §3): no hint, flag or dry run destroys what the operator did not mean to.
# The real binary against a real `tfork serve`; what is left is read with curl.
#   - `teardown <dataset>` refuses and its hint names `teardown --source <dataset> --all`;
#   - `--allow-non-fork` asks (exit 64 off a terminal without --yes) and then deletes only an
#     empty bucket: never one with objects, snapshots or forks;
#   - `bucket rm --force` asks the same way;
#   - `teardown --dry-run` (--source, --manifest) lists `would-delete` rows and changes nothing;
#   - `fork create --snapshot ''` (an empty "$v") is exit 64 and takes no snapshot.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

snapshot_count() {
  "$TFORK" snapshot ls "$1" --json | json_get 'len(d if isinstance(d, list) else d["snapshots"])'
}

step "setup: a dataset with objects and a run of two forks; an empty bucket; a full one; one with a snapshot"
expect_rc "bucket create data" 0 tf bucket create data --snapshots
s3 PUT /data/a.txt --body one
check_status 200
expect_rc "fork create run" 0 tf fork create data -n 2 --prefix run -q
expect_rc "bucket create empty" 0 tf bucket create empty
expect_rc "bucket create full" 0 tf bucket create full
s3 PUT /full/b.txt --body two
check_status 200
expect_rc "bucket create snapped" 0 tf bucket create snapped --snapshots
expect_rc "snapshot take snapped" 0 tf snapshot take snapped --name keep

step "teardown of the dataset: refused; the hint names its forks' teardown, not a force"
expect_rc "teardown data" 6 tf teardown data
check_contains "the hint" "$(stdout)$(stderr)" "tfork teardown --source data --all"
check_not_contains "no --allow-non-fork hint" "$(stdout)$(stderr)" "--allow-non-fork deletes"
check_eq "data" 200 "$(bucket_status data)"

step "--allow-non-fork off a terminal without --yes: exit 64, nothing sent"
expect_rc "teardown empty --allow-non-fork" 64 tf teardown empty --allow-non-fork
check_contains "it says --yes" "$(stderr)" "--yes"
check_eq "empty" 200 "$(bucket_status empty)"

step "--allow-non-fork --yes: only the empty bucket goes"
expect_rc "teardown four --allow-non-fork --yes" 7 tf teardown data empty full snapped --allow-non-fork --yes --json
check_eq "statuses" "skipped deleted failed skipped" \
  "$(json_get "' '.join(f['status'] for f in d['forks'])" <"$OUT/stdout")"
check_eq "codes" "BucketHasForks BucketNotEmpty BucketHasSnapshots" \
  "$(json_get "' '.join(f['error']['code'] for f in d['forks'] if 'error' in f)" <"$OUT/stdout")"
check_eq "data" 200 "$(bucket_status data)"
check_eq "empty" 404 "$(bucket_status empty)"
check_eq "full" 200 "$(bucket_status full)"
s3 GET /full/b.txt
check_eq "full keeps its object" two "$S3_BODY"
check_eq "snapped" 200 "$(bucket_status snapped)"
check_eq "data keeps its object" 200 "$(s3 GET /data/a.txt; printf '%s' "$S3_STATUS")"

step "bucket rm --force on a terminal asks: 'n' keeps the bucket (exit 1), 'y' deletes it"
expect_rc "bucket create asked" 0 tf bucket create asked
s3 PUT /asked/c.txt --body three
check_status 200
answer_on_pty n bucket rm asked --force
check_eq "exit after n" 1 "$RC"
check_contains "the question" "$(cat "$WORK/pty.err")" "Delete asked and every object in it (--force)?"
check_eq "asked after n" 200 "$(bucket_status asked)"
answer_on_pty y bucket rm asked --force
check_eq "exit after y" 0 "$RC"
check_eq "asked after y" 404 "$(bucket_status asked)"

step "bucket rm --force asks: exit 64 without --yes off a terminal"
expect_rc "bucket rm full --force" 64 tf bucket rm full --force
check_eq "full" 200 "$(bucket_status full)"
expect_rc "bucket rm full --force --dry-run" 0 tf bucket rm full --force --dry-run
check_eq "full after the dry run" 200 "$(bucket_status full)"
expect_rc "bucket rm full --force --yes" 0 tf bucket rm full --force --yes
check_eq "full" 404 "$(bucket_status full)"

step "teardown --source --all --dry-run: would-delete rows for each fork and key; nothing changes"
expect_rc "teardown --dry-run" 0 tf teardown --source data --all --dry-run --json
check_eq "forks" "run-1:would-delete run-2:would-delete" \
  "$(json_get "' '.join(f['bucket'] + ':' + f['status'] for f in d['forks'])" <"$OUT/stdout")"
check_eq "keys" "would-delete would-delete" \
  "$(json_get "' '.join(k['status'] for k in d['keys'])" <"$OUT/stdout")"
check_eq "snapshots" "would-delete" \
  "$(json_get "' '.join(s['status'] for s in d['snapshots'])" <"$OUT/stdout")"
check_eq "run-1" 200 "$(bucket_status run-1)"
check_eq "keys of run" 2 "$(keys_named 'run-*-key' | grep -c .)"
expect_rc "teardown --dry-run (table)" 0 tf teardown --source data --prefix run --dry-run
check_contains "table rows" "$(stdout)" "would-delete"

step "teardown --manifest --dry-run: the same, and the manifest is not rewritten"
before=$(sha256sum run.manifest.json)
expect_rc "teardown --manifest --dry-run" 0 tf teardown --manifest run.manifest.json --dry-run --json
check_eq "forks" "would-delete would-delete" \
  "$(json_get "' '.join(f['status'] for f in d['forks'])" <"$OUT/stdout")"
check_eq "manifest" "$before" "$(sha256sum run.manifest.json)"
check_eq "run-2" 200 "$(bucket_status run-2)"

step "fork create --snapshot '': exit 64, and no snapshot is taken"
snapshots=$(snapshot_count data)
expect_rc "fork create --snapshot ''" 64 tf fork create data -n 1 --prefix empty-v --snapshot ''
check_contains "it says why" "$(stderr)" "--snapshot is empty"
check_eq "snapshots of data" "$snapshots" "$(snapshot_count data)"
check_eq "empty-v-1" 404 "$(bucket_status empty-v-1)"

expect_rc "teardown run" 0 tf teardown --manifest run.manifest.json -q
check_eq "run-1" 404 "$(bucket_status run-1)"
echo "ok: $TEST_NAME"
