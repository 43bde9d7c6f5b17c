#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end wire fidelity, both ways, between the official Tigris SDKs
# (@tigrisdata/storage, @tigrisdata/iam; tests/node/wire_fidelity.mjs) and the tfork CLI,
# against one real `tfork serve`:
#   1. what `tfork snapshot take --name` and `tfork fork create -n 2 --manifest` make is seen
#      correctly by the SDK (getBucketInfo parents + snapshot, listBucketSnapshots names and
#      versions, listForks, getAccessKey roles), and the manifest's keys work through the SDK
#      scoped to their own fork; after `tfork teardown` the SDK sees forks and keys gone;
#   2. what the SDK makes (snapshots named and unnamed, forks from a snapshot and from now,
#      a fork of a fork) is seen correctly by `tfork fork head --json`, `tfork fork ls
#      --json` and `tfork snapshot ls --json`, and `tfork teardown` removes SDK-made forks.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

ensure_node
require_tfork
for sub in "fork create" "fork head" "fork ls" "snapshot take" "snapshot ls" "teardown"; do
  # shellcheck disable=SC2086
  "$TFORK" $sub --help >/dev/null 2>&1 || skip "'tfork $sub' is not available in this build yet"
done
start_server
export AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE=1 NODE_NO_WARNINGS=1
OUT="$WORK/out"
mkdir -p "$OUT"

# cli_json NAME ARGS...: run `tfork ARGS... --json`, which must succeed; the document goes to
# $OUT/NAME.json.
cli_json() {
  local name=$1
  shift
  local rc=0
  tfork_cli "$@" --json >"$OUT/$name.json" 2>"$OUT/$name.err" || rc=$?
  [[ $rc == 0 ]] || fail "tfork $* --json exited $rc: $(cat "$OUT/$name.err") $(cat "$OUT/$name.json")"
}
jq_() { json_get "$2" <"$OUT/$1.json"; } # jq_ NAME EXPR

# ---------------------------------------------------------------------------------------
step "CLI makes a snapshot-enabled source with data before and after a named snapshot"
cli_json bucket bucket create wf-src --snapshots
check_eq "bucket create" '{"bucket": "wf-src", "created": true, "snapshots_enabled": true}' \
  "$(jq_ bucket '{k: d[k] for k in ("bucket", "created", "snapshots_enabled")}')"
s3 PUT /wf-src/base.txt --body "base before snapshot"
check_status 200 "put base.txt"
SNAP_NAME="cli baseline with spaces"
cli_json take snapshot take wf-src --name "$SNAP_NAME"
V=$(jq_ take 'd["version"]')
[[ "$V" =~ ^[0-9]{16,20}$ ]] || fail "snapshot take version [$V]"
check_eq "snapshot take name" "$SNAP_NAME" "$(jq_ take 'd["name"]')"
s3 PUT /wf-src/after.txt --body "written after the snapshot"
check_status 200 "put after.txt"

step "SDK sees the CLI's snapshot (name with spaces, newest first)"
run_node wire_fidelity.mjs sdk-sees-snapshot wf-src "$V" "$SNAP_NAME" || fail "SDK view of the CLI snapshot"

step "CLI: fork create wf-src -n 2 --snapshot V --manifest; and -n 1 with its own snapshot"
cli_json create fork create wf-src -n 2 --prefix wf-cli --snapshot "$V" --manifest "$OUT/m.json"
check_eq "fork create statuses" '["created", "created"]' "$(jq_ create '[f["status"] for f in d["forks"]]')"
check_eq "fork names" '["wf-cli-1", "wf-cli-2"]' "$(json_get '[f["bucket"] for f in d["forks"]]' <"$OUT/m.json")"
check_eq "manifest snapshot" "$V" "$(json_get 'd["snapshot"]' <"$OUT/m.json")"
check_eq "manifest mode" 600 "$(stat -c %a "$OUT/m.json")"
check_eq "the manifest named" "$OUT/m.json" "$(jq_ create 'd["manifest"]')"
cmp -s <(json_get 'd' <"$OUT/m.json") <(jq_ create '{k: v for k, v in d.items() if k != "manifest"}') ||
  fail "fork create --json differs from the manifest"
cli_json create_auto fork create wf-src -n 1 --prefix wf-auto --manifest "$OUT/m_auto.json"
V_AUTO=$(json_get 'd["snapshot"]' <"$OUT/m_auto.json")
[[ "$V_AUTO" =~ ^[0-9]{16,20}$ && "$V_AUTO" != "$V" ]] || fail "fork create without --snapshot took no new snapshot: [$V_AUTO]"

step "SDK sees the CLI's forks, snapshots and keys; the manifest keys work through the SDK"
run_node wire_fidelity.mjs cli-to-sdk "$OUT/m.json" "$SNAP_NAME" "$OUT/m_auto.json" ||
  fail "SDK view of the CLI-made forks (tests/node/wire_fidelity.mjs cli-to-sdk)"

step "the CLI reads back its own forks consistently (fork head / fork ls)"
cli_json head_cli fork head wf-cli-1 wf-cli-2 wf-src
check_eq "fork head sources" '["wf-src", "wf-src", null]' "$(jq_ head_cli '[b["fork_source"] for b in d["buckets"]]')"
check_eq "fork head snapshots" "[\"$V\", \"$V\", null]" "$(jq_ head_cli '[b["fork_source_snapshot"] for b in d["buckets"]]')"
check_eq "fork head is_fork_parent" '[false, false, true]' "$(jq_ head_cli '[b["is_fork_parent"] for b in d["buckets"]]')"

step "tfork teardown --manifest, then the SDK sees forks and keys gone, source and snapshot kept"
cli_json teardown teardown --manifest "$OUT/m.json"
check_eq "teardown statuses" '[["deleted", "deleted"], ["deleted", "deleted"]]' \
  "$(jq_ teardown '[[f["status"], f["key"]] for f in d["forks"]]')"
run_node wire_fidelity.mjs after-teardown "$OUT/m.json" || fail "SDK view after tfork teardown"
cli_json teardown_auto teardown --manifest "$OUT/m_auto.json"

# ---------------------------------------------------------------------------------------
step "SDK makes a source, a named and an unnamed snapshot, two forks and a fork of a fork"
run_node wire_fidelity.mjs sdk-make wf-sdk >"$OUT/sdk.json" || fail "SDK setup (wire_fidelity.mjs sdk-make)"
sdk() { json_get "d[\"$1\"]" <"$OUT/sdk.json"; }
SRC=$(sdk source) NAMED=$(sdk named) UNNAMED=$(sdk unnamed) F1=$(sdk f1) F2=$(sdk f2)
CHILD=$(sdk child) F1SNAP=$(sdk f1snap) F2SNAP=$(sdk f2snap)

step "tfork fork head --json on SDK-made buckets"
cli_json head fork head "$F1" "$F2" "$CHILD" "$SRC"
check_eq "head buckets" "[\"$F1\", \"$F2\", \"$CHILD\", \"$SRC\"]" "$(jq_ head '[b["bucket"] for b in d["buckets"]]')"
check_eq "head exists" '[true, true, true, true]' "$(jq_ head '[b["exists"] for b in d["buckets"]]')"
check_eq "head snapshots_enabled" '[true, true, true, true]' "$(jq_ head '[b["snapshots_enabled"] for b in d["buckets"]]')"
check_eq "head fork_source" "[\"$SRC\", \"$SRC\", \"$F1\", null]" "$(jq_ head '[b["fork_source"] for b in d["buckets"]]')"
check_eq "head fork_source_snapshot" "[\"$NAMED\", \"$F2SNAP\", \"$F1SNAP\", null]" \
  "$(jq_ head '[b["fork_source_snapshot"] for b in d["buckets"]]')"
check_eq "head is_fork_parent" '[true, false, false, true]' "$(jq_ head '[b["is_fork_parent"] for b in d["buckets"]]')"
rc=0
tfork_cli fork head wf-sdk-missing --json >"$OUT/head_missing.json" 2>"$OUT/head_missing.err" || rc=$?
[[ $rc == 0 || $rc == 3 ]] || fail "fork head of a missing bucket exited $rc: $(cat "$OUT/head_missing.err")"
if [[ -s "$OUT/head_missing.json" ]]; then
  check_eq "missing bucket exists" '[false]' "$(jq_ head_missing '[b["exists"] for b in d["buckets"]]')"
fi

step "tfork fork ls --json on an SDK-made source"
cli_json ls fork ls "$SRC"
check_eq "fork ls source" "$SRC" "$(jq_ ls 'd["source"]')"
check_eq "fork ls buckets (children only, not grandchildren)" "[\"$F1\", \"$F2\"]" \
  "$(jq_ ls 'sorted(f["bucket"] for f in d["forks"])')"
check_eq "fork ls snapshots" "[\"$NAMED\", \"$F2SNAP\"]" \
  "$(jq_ ls '[f["snapshot"] for f in sorted(d["forks"], key=lambda f: f["bucket"])]')"
created=$(jq_ ls '[f["created"] for f in d["forks"]]')
[[ "$created" =~ ^\[\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\",\ \"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z\"\]$ ]] ||
  fail "fork ls created is not RFC 3339 UTC: $created"
cli_json ls_f1 fork ls "$F1"
check_eq "forks of the fork" "[\"$CHILD\"]" "$(jq_ ls_f1 '[f["bucket"] for f in d["forks"]]')"
cli_json ls_f2 fork ls "$F2"
check_eq "a fork without forks" '[]' "$(jq_ ls_f2 'd["forks"]')"

step "tfork snapshot ls --json on an SDK-made source"
cli_json snaps snapshot ls "$SRC"
check_eq "snapshot ls bucket" "$SRC" "$(jq_ snaps 'd["bucket"]')"
# Newest first: the implicit snapshot of the fork from "now" (if listed), the unnamed one,
# then the named one.
versions=$(jq_ snaps '[s["version"] for s in d["snapshots"]]')
check_contains "unnamed snapshot listed" "$versions" "\"$UNNAMED\""
check_contains "named snapshot listed" "$versions" "\"$NAMED\""
check_eq "newest first" "$(jq_ snaps 'sorted([s["version"] for s in d["snapshots"]], key=int, reverse=True)')" "$versions"
check_eq "named snapshot name" "made by the sdk" "$(jq_ snaps "[s['name'] for s in d['snapshots'] if s['version'] == '$NAMED'][0]")"
check_eq "unnamed snapshot name" "null" "$(jq_ snaps "[s['name'] for s in d['snapshots'] if s['version'] == '$UNNAMED'][0]")"
created=$(jq_ snaps "[s['created'] for s in d['snapshots'] if s['version'] == '$NAMED'][0]")
[[ "$created" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]] || fail "snapshot created not RFC 3339 UTC: $created"
cli_json snaps1 snapshot ls "$SRC" --limit 1
check_eq "snapshot ls --limit 1" "[\"$(jq_ snaps 'd["snapshots"][0]["version"]')\"]" \
  "$(jq_ snaps1 '[s["version"] for s in d["snapshots"]]')"
cli_json snaps_f1 snapshot ls "$F1"
check_eq "fork's own snapshot" "[[\"$F1SNAP\", \"fork snapshot\"]]" "$(jq_ snaps_f1 '[[s["version"], s["name"]] for s in d["snapshots"]]')"

step "a CLI snapshot of an SDK-made bucket is seen by the SDK"
cli_json take2 snapshot take "$SRC" --name "cli on an sdk bucket"
run_node wire_fidelity.mjs sdk-sees-snapshot "$SRC" "$(jq_ take2 'd["version"]')" "cli on an sdk bucket" ||
  fail "SDK view of a CLI snapshot on an SDK bucket"

step "tfork bucket rm refuses the SDK-made parent and names its forks"
rc=0
tfork_cli bucket rm "$SRC" --force --yes >"$OUT/rm.out" 2>"$OUT/rm.err" || rc=$?
check_eq "bucket rm of a parent exit code" 6 "$rc"
check_contains "bucket rm names the forks" "$(cat "$OUT/rm.err")" "$F1"

step "tfork teardown of SDK-made forks (children first), then the SDK sees them gone"
cli_json td teardown "$F1" "$F2" "$CHILD"
check_eq "teardown of SDK forks" '["deleted", "deleted", "deleted"]' "$(jq_ td '[f["status"] for f in d["forks"]]')"
run_node wire_fidelity.mjs sdk-gone "$F1" "$F2" "$CHILD" || fail "SDK still sees torn-down forks"
cli_json head_after fork head "$SRC"
check_eq "source no longer a fork parent" false "$(jq_ head_after 'd["buckets"][0]["is_fork_parent"]')"
cli_json rm bucket rm "$SRC" wf-src --force --yes
check_eq "bucket rm" '["deleted", "deleted"]' "$(jq_ rm '[b["status"] for b in d["buckets"]]')"

s3 GET /
check_status 200 "server still answers"
stop_server
step "PASS"
