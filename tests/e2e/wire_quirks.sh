#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 23 §3): the client against `tfork serve --quirks` playing the ways the real
# gateway may differ (tigris-wire.md §10), one quirk at a time:
#   - settings-delay: `bucket set --snapshots on` (and `bucket create --snapshots --exist-ok` on
#     a regular bucket) waits until HeadBucket shows the change, so a snapshot or fork sent
#     right after it is not refused;
#   - snapshot-gone-400: a delete of a gone snapshot answered 400 is settled by the listing:
#     `snapshot rm` says not-found, a manifest teardown says already-gone, exit 0;
#   - merge-no-version-header: merge and rebase happened, so exit 0, a warning, "snapshot": null;
#   - a consistency delay (fork listings that lag): `fork ls`, `teardown --source` and
#     `snapshot prune --unused` warn that forks made from a snapshot that young may be missing.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

serve_with() { # serve_with LABEL SERVE-ARGS...
  stop_server
  DATA_DIR="$WORK/data-$1"
  shift
  start_server "$@"
}

step "settings-delay: bucket set --snapshots on, then a snapshot at once"
serve_with settings --quirks settings-delay
expect_rc "bucket create plain" 0 tf bucket create plain
expect_rc "bucket set --snapshots on" 0 tf bucket set plain --snapshots on
# The server shows the change 2 s after its answer; a snapshot refused in between would fail.
expect_rc "snapshot take right after" 0 tf snapshot take plain
expect_rc "bucket create plain2" 0 tf bucket create plain2
expect_rc "bucket create --snapshots --exist-ok" 0 tf --json bucket create plain2 --snapshots --exist-ok
check_eq "snapshots turned on" true "$(json_get 'd["snapshots_enabled"]' <"$OUT/stdout")"
expect_rc "fork create right after" 0 tf fork create plain2 plain2-1 --keys none -q
expect_rc "bucket set --snapshots off (a regular bucket)" 0 tf bucket create plain3
expect_rc "set on, off again" 0 tf bucket set plain3 --snapshots on
expect_rc "set off" 0 tf bucket set plain3 --snapshots off
s3 HEAD /plain3
check_eq "HeadBucket shows it off once the command returns" false "$(header_value X-Tigris-Enable-Snapshot)"

step "snapshot-gone-400: a gone snapshot is gone, however the refusal is worded"
serve_with gone --quirks snapshot-gone-400
expect_rc "bucket create data" 0 tf bucket create data --snapshots
expect_rc "snapshot take" 0 tf --json snapshot take data --name once
version=$(json_get 'd["version"]' <"$OUT/stdout")
s3 DELETE /data -H "X-Tigris-Snapshot-Version: 1000000000000000001"
check_status 400 # the quirk: not 404 NoSuchSnapshot
expect_rc "snapshot rm" 0 tf --json snapshot rm data "$version"
check_eq "deleted" deleted "$(json_get 'd["versions"][0]["status"]' <"$OUT/stdout")"
expect_rc "snapshot rm again: nothing to do (exit 3)" 3 tf --json snapshot rm data "$version"
check_eq "not-found, not failed" not-found "$(json_get 'd["versions"][0]["status"]' <"$OUT/stdout")"
expect_rc "fork create g" 0 tf fork create data -n 1 --prefix g --keys none --manifest g.json -q
run_snapshot=$(json_get 'd["snapshot"]' <g.json)
expect_rc "the run's snapshot deleted behind tfork's back" 0 tf --yes snapshot rm data "$run_snapshot"
expect_rc "teardown --manifest" 0 tf --json teardown --manifest g.json
check_eq "the run's snapshot: already gone" already-gone \
  "$(json_get '[s["status"] for s in d["snapshots"]][0]' <"$OUT/stdout")"

step "merge-no-version-header: merge and rebase happened; exit 0, a warning, version null"
serve_with merge --quirks merge-no-version-header
expect_rc "bucket create data" 0 tf bucket create data --snapshots
put data a.txt a-base
expect_rc "fork create" 0 tf fork create data m-1 --keys none -q
put m-1 b.txt b-fork
expect_rc "fork merge" 0 tf --yes --json fork merge m-1
check_eq "snapshot" null "$(json_get 'd["snapshot"]' <"$OUT/stdout")"
check_contains "merge warning" "$(stderr)" "named no X-Tigris-Snapshot-Version"
s3 GET /data/b.txt
check_status 200
check_eq "merged" b-fork "$S3_BODY"
expect_rc "fork rebase" 0 tf --yes --json fork rebase m-1
check_eq "rebase snapshot" null "$(json_get 'd["snapshot"]' <"$OUT/stdout")"
check_contains "rebase warning" "$(stderr)" "named no X-Tigris-Snapshot-Version"

step "fork listings that lag: each command that decides by one says so"
serve_with lag --consistency-delay 3000
expect_rc "bucket create data" 0 tf bucket create data --snapshots
deadline=$((SECONDS + 30))
until tf bucket ls 2>/dev/null | grep -q '^data'; do
  ((SECONDS < deadline)) || fail "data never became visible"
  sleep 0.2
done
expect_rc "fork create lag" 0 tf fork create data -n 2 --prefix lag --keys none --manifest lag.json -q
expect_rc "fork ls right after" 0 tf fork ls data
check_contains "fork ls warns" "$(stderr)" "may not be listed yet"
expect_rc "snapshot prune --unused --dry-run" 0 tf --dry-run snapshot prune data --keep-last 0 --unused
check_contains "prune --unused warns" "$(stderr)" "may not be listed yet"
expect_rc "teardown --source data --prefix lag" 0 tf teardown --source data --prefix lag
check_contains "teardown --source warns" "$(stderr)" "may not be listed yet"
stop_server
step "all scenarios passed"
