#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 26 §3): messages that say what to do, in tfork's own words, each one line
# with the documented exit code. The real binary against a real `tfork serve`.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

# one_line WHAT: stderr holds exactly one error line (and at most the pointer to --help).
one_line() {
  local errors
  errors=$(grep -c '^tfork: error:' "$OUT/stderr" || true)
  check_eq "$1: one error line" 1 "$errors"
}

step "setup: a dataset and a regular bucket with an object"
expect_rc "bucket create ds1" 0 tf bucket create ds1 --snapshots
expect_rc "bucket create plain" 0 tf bucket create plain
s3 PUT /plain/k --body x
check_status 200

step "the fix, not the symptom"
expect_rc "bucket create ds1 again" 6 tf bucket create ds1
check_contains "hint --exist-ok" "$(stderr)" "--exist-ok"
expect_rc "bucket rm of a non-empty bucket" 6 tf bucket rm plain
check_contains "hint --force" "$(stderr)" "--force deletes its objects too"
expect_rc "snapshot take of a regular bucket" 1 tf snapshot take plain
check_contains "hint bucket set" "$(stderr)" "tfork bucket set plain --snapshots on"
expect_rc "bucket create --snapshots --exist-ok" 0 tf bucket create plain --snapshots --exist-ok
check_contains "says snapshots were turned on" "$(cat "$OUT/stdout")" "snapshots turned on"

step "typos get a suggestion, in tfork's words"
expect_rc "--prefx" 64 tf fork create ds1 -n 1 --prefx x
check_contains "--prefx" "$(stderr)" "unknown option '--prefx' for 'tfork fork create'; did you mean '--prefix'?"
one_line "--prefx"
expect_rc "--snapshots on fork create" 64 tf fork create ds1 -n 1 --snapshots x
check_contains "--snapshots" "$(stderr)" "did you mean '--snapshot'?"
expect_rc "tfork -V" 64 tf -V
check_contains "-V" "$(stderr)" "did you mean 'tfork version'"
expect_rc "bucket create -abc" 64 tf bucket create -abc
check_contains "-abc" "$(stderr)" "unknown option '-abc'"
expect_rc "teardown --manifest without a value" 64 tf teardown --manifest
check_contains "needs a value" "$(stderr)" "--manifest needs a value"
check_not_contains "no CLI11 wording" "$(stderr)" "required TEXT missing"
expect_rc "completion powershell" 64 tf completion powershell
check_contains "completion" "$(stderr)" "bash, zsh and fish, not 'powershell'"

step "likely meanings are asked about, values are read as meant"
expect_rc "fork create ds1 100" 64 tf fork create ds1 100
check_contains "did you mean -n" "$(stderr)" "-n 100"
check_eq "no fork named 100" 404 "$(s3 HEAD /100; printf '%s' "$S3_STATUS")"
expect_rc "--keys Editor" 0 tf fork create ds1 -n 1 --prefix ed --keys Editor -q
check_eq "its key is an Editor's" Editor "$(json_get "d['forks'][0]['role']" <ed.manifest.json)"
expect_rc "--older-than 0s" 64 tf teardown --source ds1 --all --older-than 0s
check_contains "names the limit" "$(stderr)" "from 1s up to 100 years"

step "half a key in the environment is said alone"
expect_rc "AWS_ACCESS_KEY_ID without its secret" 2 env -u AWS_SECRET_ACCESS_KEY \
  -u TIGRIS_STORAGE_ACCESS_KEY_ID -u TIGRIS_STORAGE_SECRET_ACCESS_KEY HOME="$WORK" \
  "$TFORK" bucket ls
check_contains "the sentence" "$(stderr)" "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"
check_not_contains "not the whole paragraph" "$(stderr)" "Tried, in order"

step "fork diff of a missing bucket says it does not exist (exit 3)"
expect_rc "fork diff nosuch" 3 tf fork diff nosuch
check_contains "does not exist" "$(stderr)" "bucket nosuch does not exist"
expect_rc "fork diff of a bucket that is not a fork" 6 tf fork diff ds1

expect_rc "teardown ed" 0 tf teardown --manifest ed.manifest.json -q
