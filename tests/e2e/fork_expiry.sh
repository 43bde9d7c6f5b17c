#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 23 §2, cli.md §14): forks that expire. The real binary against a real
# `tfork serve`; what is left is read with curl.
#   - `fork create --expires-in` records expires_at in its JSON and manifest, and in the name of
#     the snapshot it takes, so `bucket ls --forks-of` and `fork ls` show it with no manifest;
#   - bad values, and --expires-in with --snapshot, are exit 64 before anything is sent; so are
#     `teardown --expired` with --all, --prefix or fork names;
#   - `teardown --source S --expired` (and --dry-run first) removes the expired forks, a fork of
#     an expired fork with them (children first), and revokes their keys; the others stay;
#   - `teardown --manifest M... --expired` removes only the expired runs; `run --expires-in`.
# No test waits for a clock: a short expiry is polled for until teardown sees it passed.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

snapshot_names() { "$TFORK" snapshot ls "$1" --json | json_get "' | '.join(s['name'] or '' for s in d['snapshots'])"; }
snapshot_count() { "$TFORK" snapshot ls "$1" --json | json_get "len(d['snapshots'])"; }
expiry_in() { json_get "[f['expires_at'] for f in d['$2'] if f['bucket'] == '$3'][0]" <"$1"; }

# until_expired WHAT ARGS...: polls `tfork teardown ARGS --expired --dry-run --json` until it
# shows would-delete rows (the short expiry has passed), with a generous deadline.
until_expired() {
  local what=$1 tries=0
  shift
  until "$TFORK" teardown "$@" --expired --dry-run --json >"$OUT/poll" 2>"$OUT/poll.err" &&
    [[ "$(json_get "len(d['forks'])" <"$OUT/poll")" != 0 ]]; do
    tries=$((tries + 1))
    ((tries < 300)) || fail "$what: nothing expired after 60 s: $(cat "$OUT/poll" "$OUT/poll.err")"
    sleep 0.2
  done
}

step "setup: a dataset with an object"
expect_rc "bucket create data" 0 tf bucket create data --snapshots
s3 PUT /data/a.txt --body one
check_status 200
expect_rc "snapshot take base" 0 tf snapshot take data --name base --json
base=$(json_get 'd["version"]' <"$OUT/stdout")

step "bad --expires-in values: one line, exit 64, nothing sent"
for value in 0s soon 500ms 400d -1h ""; do
  expect_rc "--expires-in '$value'" 64 tf fork create data -n 1 --prefix bad --expires-in "$value"
  check_contains "--expires-in '$value' names the option" "$(stderr)" "--expires-in"
done
expect_rc "--expires-in with --snapshot" 64 tf fork create data -n 1 --prefix bad --snapshot "$base" --expires-in 1h
check_contains "says why" "$(stderr)" "cannot go with --snapshot"
expect_rc "--expires-in with a long --snapshot-name" 64 \
  tf fork create data -n 1 --prefix bad --expires-in 1h --snapshot-name "$(printf 'x%.0s' {1..240})"
check_eq "no snapshot taken" 1 "$(snapshot_count data)"
check_eq "no fork made" 404 "$(bucket_status bad-1)"
check_eq "no manifest written" no "$([[ -e bad.manifest.json ]] && echo yes || echo no)"

step "bad teardown --expired combinations: exit 64"
expect_rc "--expired --all" 64 tf teardown --source data --expired --all
expect_rc "--expired --prefix" 64 tf teardown --source data --expired --prefix run
expect_rc "--expired with fork names" 64 tf teardown some-fork --expired
expect_rc "--expired alone" 64 tf teardown --expired
expect_rc "--source without a selection" 64 tf teardown --source data
check_contains "names --expired" "$(stderr)" "--expired"

step "fork create --expires-in: expires_at in the JSON, the manifest and the snapshot's name"
expect_rc "fork create short" 0 tf fork create data -n 2 --prefix short --expires-in 1s --json
short_at=$(json_get 'd["expires_at"]' <"$OUT/stdout")
[[ "$short_at" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] ||
  fail "expires_at is not RFC 3339 UTC: [$short_at]"
check_eq "manifest expires_at" "$short_at" "$(json_get 'd["expires_at"]' <short.manifest.json)"
check_eq "manifest snapshot_name" "tfork short expires=$short_at" \
  "$(json_get 'd["snapshot_name"]' <short.manifest.json)"
check_contains "the snapshot carries it" "$(snapshot_names data)" "tfork short expires=$short_at"
short_key=$(key_of short.manifest.json short-1)
expect_rc "fork create long" 0 tf fork create data -n 1 --prefix long --expires-in 7d --json
long_at=$(json_get 'd["expires_at"]' <"$OUT/stdout")
long_key=$(key_of long.manifest.json long-1)
expect_rc "fork create plain" 0 tf fork create data -n 1 --prefix plain --json
check_eq "no expiry: null" null "$(json_get 'd["expires_at"]' <"$OUT/stdout")"

step "a fork of an expired fork (its own key)"
expect_rc "fork create kid" 0 tf fork create short-1 kid-1 --manifest kid.json --json
kid_key=$(key_of kid.json kid-1)

step "the manifest is lost: the service still tells the expiry"
rm short.manifest.json
expect_rc "bucket ls --forks-of data --json" 0 tf bucket ls --forks-of data --json
check_eq "short-1" "$short_at" "$(expiry_in "$OUT/stdout" buckets short-1)"
check_eq "short-2" "$short_at" "$(expiry_in "$OUT/stdout" buckets short-2)"
check_eq "long-1" "$long_at" "$(expiry_in "$OUT/stdout" buckets long-1)"
check_eq "plain-1" null "$(expiry_in "$OUT/stdout" buckets plain-1)"
expect_rc "bucket ls --forks-of data" 0 tf bucket ls --forks-of data
check_contains "EXPIRES column" "$(stdout)" "EXPIRES"

step "teardown --source data --expired --dry-run: would-delete rows, nothing deleted"
until_expired "--source" --source data
expect_rc "dry run" 0 tf teardown --source data --expired --dry-run --json
check_eq "would delete" "kid-1:would-delete short-1:would-delete short-2:would-delete" \
  "$(json_get "' '.join(sorted(f['bucket'] + ':' + f['status'] for f in d['forks']))" <"$OUT/stdout")"
check_eq "short-1 still there" 200 "$(bucket_status short-1)"
check_eq "kid-1 still there" 200 "$(bucket_status kid-1)"
expect_rc "fork ls data --json" 0 tf fork ls data --json
check_eq "fork ls marks expired" "long-1:False plain-1:False short-1:True short-2:True" \
  "$(json_get "' '.join(f['bucket'] + ':' + str(f['expired']) for f in d['forks'])" <"$OUT/stdout")"
expect_rc "fork ls data" 0 tf fork ls data
check_contains "fork ls table" "$(stdout)" "expired"

step "teardown --source data --expired: the expired forks and the fork of one go, keys revoked"
expect_rc "teardown --expired" 0 tf teardown --source data --expired --json
check_eq "deleted" "kid-1:deleted short-1:deleted short-2:deleted" \
  "$(json_get "' '.join(sorted(f['bucket'] + ':' + f['status'] for f in d['forks']))" <"$OUT/stdout")"
for bucket in short-1 short-2 kid-1; do check_eq "$bucket gone" 404 "$(bucket_status "$bucket")"; done
s3 --as "$short_key" GET /data/a.txt
check_code 403 InvalidAccessKeyId "short-1's key"
s3 --as "$kid_key" GET /data/a.txt
check_code 403 InvalidAccessKeyId "kid-1's key"
check_eq "long-1 stays" 200 "$(bucket_status long-1)"
check_eq "plain-1 stays" 200 "$(bucket_status plain-1)"
s3 --as "$long_key" GET /long-1/a.txt
check_status 200 "long-1's key still works"
check_not_contains "the expired run's snapshot is gone" "$(snapshot_names data)" "tfork short"
check_contains "the long run's snapshot stays" "$(snapshot_names data)" "tfork long expires=$long_at"
expect_rc "again: nothing expired" 0 tf teardown --source data --expired --json
check_eq "an empty list" 0 "$(json_get 'len(d["forks"])' <"$OUT/stdout")"

step "teardown --manifest M... --expired: only the expired run"
expect_rc "fork create mshort" 0 tf fork create data -n 1 --prefix mshort --expires-in 1s -q
expect_rc "fork create mlong" 0 tf fork create data -n 1 --prefix mlong --expires-in 7d -q
until_expired "--manifest" --manifest mshort.manifest.json mlong.manifest.json
expect_rc "teardown --manifest --expired" 0 \
  tf teardown --manifest mshort.manifest.json mlong.manifest.json --expired --json
check_eq "only mshort-1" "mshort-1:deleted" \
  "$(json_get "' '.join(f['bucket'] + ':' + f['status'] for f in d['forks'])" <"$OUT/stdout")"
check_eq "mshort-1 gone" 404 "$(bucket_status mshort-1)"
check_eq "mlong-1 stays" 200 "$(bucket_status mlong-1)"
check_eq "mshort's manifest says deleted" deleted "$(json_get 'd["forks"][0]["status"]' <mshort.manifest.json)"

step "run --expires-in: the same option, the same record"
expect_rc "run --expires-in 1h" 0 tf run data -n 1 --prefix r --expires-in 1h --keep all \
  --sandbox none -q -- true
r_at=$(json_get 'd["expires_at"]' <r.manifest.json)
[[ "$r_at" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] || fail "run's expires_at: [$r_at]"
expect_rc "bucket ls --forks-of data" 0 tf bucket ls --forks-of data --json
check_eq "r-1 expiry from the service" "$r_at" "$(expiry_in "$OUT/stdout" buckets r-1)"
expect_rc "run with a bad --expires-in" 64 tf run data -n 1 --prefix rbad --expires-in 0s -- true
rm r.manifest.json
expect_rc "teardown --source data --prefix r" 0 tf teardown --source data --prefix r --json
check_eq "r-1 gone" 404 "$(bucket_status r-1)"
check_not_contains "--prefix r finds its snapshot by name, expiry and all" "$(snapshot_names data)" "tfork r expires="

step "MCP fork_create: expires_in through the same plan (a bad value refused the same way)"
mkdir -p "$WORK/mcp"
python3 - "$TFORK" "$WORK/mcp" >"$OUT/mcp.json" 2>"$OUT/mcp.err" <<'PY' || fail "mcp: $(cat "$OUT/mcp.err")"
import json, subprocess, sys
tfork, manifests = sys.argv[1], sys.argv[2]
server = subprocess.Popen([tfork, "mcp", "--source", "data", "--manifest-dir", manifests],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(message):
    server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()
def answer(id_):
    while True:
        reply = json.loads(server.stdout.readline())
        if reply.get("id") == id_:
            return reply
send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                 "clientInfo": {"name": "e2e", "version": "1"}}})
answer(1)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
results = []
for id_, expires_in, prefix in ((2, "2h", "mcp"), (3, "0s", "mcpbad")):
    send({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
          "params": {"name": "fork_create", "arguments": {
              "source": "data", "count": 1, "prefix": prefix, "expires_in": expires_in}}})
    results.append(answer(id_)["result"])
server.stdin.close()
server.wait(timeout=30)
print(json.dumps(results))
PY
check_eq "mcp: created, with expires_at" "False created" \
  "$(json_get "str(d[0].get('isError', False)) + ' ' + d[0]['structuredContent']['forks'][0]['status']" <"$OUT/mcp.json")"
mcp_at=$(json_get "d[0]['structuredContent']['expires_at']" <"$OUT/mcp.json")
check_eq "mcp: its manifest" "$mcp_at" "$(json_get 'd["expires_at"]' <"$WORK/mcp/mcp.manifest.json")"
check_contains "mcp: its snapshot" "$(snapshot_names data)" "tfork mcp expires=$mcp_at"
check_eq "mcp: a bad expires_in is refused" True "$(json_get "str(d[1].get('isError'))" <"$OUT/mcp.json")"
check_contains "mcp: it names expires-in" "$(cat "$OUT/mcp.json")" "--expires-in must be"
check_eq "mcp: nothing made" 404 "$(bucket_status mcpbad-1)"

stop_server
