#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 21 §2): no key of a run outlives its fork, whatever the agent or the
# operator did in between. The real binary against a real `tfork serve`; what the server holds
# is read with curl (clients_lib.sh), not through tfork's own code.
#   - a ReadOnly key cannot fork its bucket (serve follows tigris-wire §10: never);
#   - `fork rebase` keeps the agent's key working, and teardown still revokes it;
#   - `bucket rm` of a fork revokes the keys whose roles were only on it;
#   - a fork deleted behind tfork's back: `teardown --manifest` still revokes its key;
#   - `fork create --exist-ok` on a run that has its forks reuses the recorded keys (no second
#     key per fork); `--add K` grows the run by K forks numbered on from its last;
#   - a manifest another run holds is refused with exit 6, and nothing is made;
#   - `run`: a fork the agent made of its own fork goes with the run.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
require_cmd flock
start_server

OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

# as_key AK:SK CMD...: tfork with only that key in the environment.
as_key() {
  local key=$1
  shift
  env -u TIGRIS_STORAGE_ACCESS_KEY_ID -u TIGRIS_STORAGE_SECRET_ACCESS_KEY \
    AWS_ACCESS_KEY_ID="${key%%:*}" AWS_SECRET_ACCESS_KEY="${key#*:}" "$TFORK" "$@"
}
# status_as AK:SK METHOD PATH: the S3 status that key gets.
status_as() {
  s3 --as "$1" "$2" "$3" --body x
  printf '%s' "$S3_STATUS"
}
key_count() { keys_named "$1" | grep -c . || true; }

step "setup: a dataset and a run of two Editor forks and a run of one ReadOnly fork"
expect_rc "bucket create data" 0 tf bucket create data --snapshots
s3 PUT /data/a.txt --body one
check_status 200
expect_rc "fork create e" 0 tf fork create data -n 2 --prefix e -q
expect_rc "fork create ro" 0 tf fork create data -n 1 --prefix ro --keys readonly -q

step "a ReadOnly key cannot fork its bucket"
expect_rc "ro forks" 2 as_key "$(key_of ro.manifest.json ro-1)" fork create ro-1 ro-1-x --keys none -q
check_eq "ro-1-x" 404 "$(bucket_status ro-1-x)"

step "fork rebase keeps the agent's key working on its fork"
e1=$(key_of e.manifest.json e-1)
check_eq "e-1 key before" 200 "$(status_as "$e1" PUT /e-1/before.txt)"
expect_rc "fork rebase e-1" 0 tf fork rebase e-1 --yes -q
check_eq "e-1 key after rebase" 200 "$(status_as "$e1" PUT /e-1/after.txt)"
check_eq "e-1 key still not on data" 403 "$(status_as "$e1" PUT /data/x.txt)"

step "bucket rm of a fork revokes its key"
e2=$(key_of e.manifest.json e-2)
expect_rc "bucket rm e-2" 0 tf bucket rm e-2 --force --yes --json
check_eq "the key in the result" "deleted" \
  "$(json_get "[k['status'] for k in d['keys'] if k['access_key_id'] == '${e2%%:*}'][0]" <"$OUT/stdout")"
check_eq "e-2's key listed" 0 "$(key_count 'e-2-key')"
check_eq "e-2's key refused" 403 "$(status_as "$e2" GET /data/a.txt)"

step "a fork deleted behind tfork's back: teardown --manifest still revokes its key"
s3 DELETE /e-1 -H 'Tigris-Force-Delete: true'
check_eq "e-1 gone" 404 "$(bucket_status e-1)"
check_eq "e-1's key still listed" 1 "$(key_count 'e-1-key')"
expect_rc "teardown e" 0 tf teardown --manifest e.manifest.json -q
check_eq "e-1's key listed after teardown" 0 "$(key_count 'e-1-key')"
check_eq "e-1's key revoked in the manifest" revoked \
  "$(json_get "[f.get('key_status') for f in d['forks'] if f['bucket'] == 'e-1'][0]" <e.manifest.json)"

step "fork create --exist-ok on a run that has its forks reuses their keys"
expect_rc "fork create g" 0 tf fork create data -n 2 --prefix g -q
g1=$(key_of g.manifest.json g-1)
expect_rc "fork create g again --exist-ok" 0 tf fork create data -n 2 --prefix g --exist-ok -q
check_eq "g-1's key kept" "$g1" "$(key_of g.manifest.json g-1)"
check_eq "keys of g" 2 "$(key_count 'g-*-key')"
check_eq "g-1's key works" 200 "$(status_as "$g1" PUT /g-1/still.txt)"

step "fork create --add 2 grows the run: g-3 and g-4, from its snapshot, each with a key"
expect_rc "fork create --add 2" 0 tf fork create data --manifest g.manifest.json --add 2 -q
check_eq "forks in the manifest" "g-1 g-2 g-3 g-4" \
  "$(json_get "' '.join(sorted(f['bucket'] for f in d['forks']))" <g.manifest.json)"
check_eq "keys of g" 4 "$(key_count 'g-*-key')"
check_eq "g-1's key kept" "$g1" "$(key_of g.manifest.json g-1)"
check_eq "g-4 works with its key" 200 "$(status_as "$(key_of g.manifest.json g-4)" PUT /g-4/new.txt)"
expect_rc "--add without --manifest" 64 tf fork create data --add 1 -q
expect_rc "--add with -n" 64 tf fork create data -n 1 --manifest g.manifest.json --add 1 -q

step "a manifest another run holds: exit 6, nothing made, the holder's file untouched"
before=$(sha256sum g.manifest.json)
flock g.manifest.json.lock -c "\"$TFORK\" fork create data --manifest g.manifest.json --add 1 -q" \
  >"$OUT/stdout" 2>"$OUT/stderr" && rc=0 || rc=$?
check_eq "the second run" 6 "$rc"
check_contains "it says why" "$(cat "$OUT/stderr")" "in use by another tfork run"
check_eq "g-5" 404 "$(bucket_status g-5)"
check_eq "the manifest" "$before" "$(sha256sum g.manifest.json)"
[[ ! -e g.manifest.json.lock ]] || rm -f g.manifest.json.lock
expect_rc "teardown g" 0 tf teardown --manifest g.manifest.json -q
[[ ! -e g.manifest.json.lock ]] || fail "teardown left a lock file"
check_eq "keys of g" 0 "$(key_count 'g-*-key')"

step "run: a fork its agent made of its own fork (with its own key) goes with the run"
expect_rc "run with a forking agent" 0 tf run data -n 1 --prefix ag --keep none -q -- \
  "$TFORK" fork create '{bucket}' '{bucket}-x' --keys none -q
check_eq "ag-1-x" 404 "$(bucket_status ag-1-x)"
check_eq "ag-1" 404 "$(bucket_status ag-1)"
check_eq "keys of ag" 0 "$(key_count 'ag-*-key')"

step "fork create leaves no lock file behind"
[[ ! -e e.manifest.json.lock && ! -e ro.manifest.json.lock ]] || fail "a lock file was left: $(ls ./*.lock)"

echo "ok: $TEST_NAME"
