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

step "manifests: where a bad one is wrong, and the good ones still go"
printf '{\n  "source": "ds1",\n  "forks": [,]\n}\n' >broken.json
expect_rc "manifest that is not JSON" 64 tf teardown --manifest broken.json
check_contains "line and column" "$(stderr)" "manifest broken.json is not valid JSON (line 3, column 13)"
one_line "not JSON"
printf '{"source": "ds1", "forks": [{"bucket": "m-1", "status": "created"}, {"bucket": "m-2"}]}' \
  >nostatus.json
expect_rc "an entry without status" 64 tf teardown --manifest nostatus.json
check_contains "which entry" "$(stderr)" 'entry 2 of "forks" (m-2) has no "status" string'
expect_rc "fork create good" 0 tf fork create ds1 -n 1 --prefix good --manifest good.json -q
expect_rc "a good and a bad manifest" 7 tf teardown --manifest good.json broken.json
check_eq "the good one's fork is gone" 404 "$(bucket_status good-1)"
check_contains "the bad one reported" "$(stderr)" "broken.json is not valid JSON"
check_contains "the good one named as done" "$(stderr)" "the other manifests were torn down"

step "a fork name after --manifest is named, and nothing is sent"
expect_rc "fork create c" 0 tf fork create ds1 -n 1 --prefix c --manifest c.json -q
expect_rc "teardown --manifest c.json c-1" 64 tf teardown --manifest c.json c-1
check_contains "names c-1" "$(stderr)" "'c-1' was read as a manifest"
check_contains "says what to run" "$(stderr)" "tfork teardown c-1"
one_line "swallowed fork name"
check_eq "c-1 untouched" 200 "$(bucket_status c-1)"
expect_rc "teardown c" 0 tf teardown --manifest c.json -q

step "contradicting output options warn; a missing profile names the files read"
expect_rc "-o table --json" 0 tf bucket ls -o table --json
check_contains "warns" "$(stderr)" "--json and --output table contradict each other; printing JSON"
json_get "d['buckets']" <"$OUT/stdout" >/dev/null || fail "-o table --json did not print JSON"
printf '[other]\naws_access_key_id = a\naws_secret_access_key = b\n' >"$WORK/creds"
expect_rc "--profile nope" 2 env AWS_SHARED_CREDENTIALS_FILE="$WORK/creds" \
  AWS_CONFIG_FILE="$WORK/no-config" "$TFORK" bucket ls --profile nope
check_contains "the files" "$(stderr)" \
  "profile 'nope' is not in $WORK/creds or $WORK/no-config (no such file)"
one_line "--profile nope"

step "--virtual-hosted against an IP address says why, and sends nothing"
expect_rc "--virtual-hosted" 64 tf bucket ls --virtual-hosted
check_contains "needs a DNS name" "$(stderr)" "--virtual-hosted needs an endpoint with a DNS name"
one_line "--virtual-hosted"

step "snapshot rm of a snapshot forks were made from asks"
used=$(tf snapshot take ds1 --name used)
unused=$(tf snapshot take ds1 --name unused)
expect_rc "fork from it" 0 tf fork create ds1 -n 1 --prefix u --snapshot "$used" --manifest u.json -q
expect_rc "snapshot rm off a terminal, no --yes" 64 tf snapshot rm ds1 "$used"
check_contains "says why" "$(stderr)" "Forks of ds1 were made from $used (1 fork)"
answer_on_pty n snapshot rm ds1 "$used"
check_eq "answered no: exit 1" 1 "$RC"
check_contains "nothing changed" "$(cat "$WORK/pty.err")" "nothing was changed"
check_contains "still listed" "$(tf snapshot ls ds1)" "$used"
expect_rc "an unused snapshot goes without a question" 0 tf snapshot rm ds1 "$unused"
expect_rc "--yes deletes it" 0 tf snapshot rm ds1 "$used" --yes
check_not_contains "gone" "$(tf snapshot ls ds1)" "$used"
expect_rc "teardown u" 0 tf teardown --manifest u.json -q

step "one cause for every row is said once, the rows not-attempted (an IAM endpoint that is down)"
# A port nothing listens on: bound and closed again, so connecting is refused.
dead=http://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_rc "fork create, IAM down" 5 tf fork create ds1 -n 3 --prefix down --manifest down.json \
  --iam-endpoint-url "$dead"
# The first failure stops the run (every other key would meet it): one error, or the count of
# those that were in flight, "N forks failed alike".
check_contains "the cause" "$(stderr)" "CreateAccessKeyWithBucketsRole failed: connect to"
check_eq "times it is said" 1 "$(cat "$OUT/stdout" "$OUT/stderr" | grep -c 'CreateAccessKeyWithBucketsRole failed')"
check_eq "rows rolled back" 3 "$(grep -c ' rolled-back ' "$OUT/stdout")"
one_line "IAM down"
expect_rc "fork create up" 0 tf fork create ds1 -n 3 --prefix up --manifest up.json -q
expect_rc "teardown, IAM down" 5 tf teardown --manifest up.json --iam-endpoint-url "$dead"
check_contains "the cause, once" "$(stderr)" "could not list access keys, so nothing was deleted"
check_eq "times it is said" 1 "$(cat "$OUT/stdout" "$OUT/stderr" | grep -c 'could not list access keys')"
check_eq "rows not-attempted, their keys kept" 3 "$(grep -cE '^up-[0-9] +not-attempted +kept ' "$OUT/stdout")"
check_eq "the forks are still there" 200 "$(bucket_status up-1)"
expect_rc "teardown, IAM up" 0 tf teardown --manifest up.json -q
check_eq "then gone" 404 "$(bucket_status up-1)"

step "an interrupted teardown says interrupted once; its rows say interrupted"
# An IAM endpoint that accepts and never answers holds the key listing until Ctrl-C.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept(); held.append(c)' >"$WORK/mute.port" &
mute_pid=$!
deadline=$((SECONDS + 60))
until [[ -s "$WORK/mute.port" ]]; do ((SECONDS < deadline)) || fail "no mute listener"; sleep 0.05; done
expect_rc "fork create it" 0 tf fork create ds1 -n 2 --prefix it --manifest it.json -q
"$TFORK" teardown --manifest it.json --iam-endpoint-url "http://127.0.0.1:$(cat "$WORK/mute.port")" \
  --progress json >"$OUT/stdout" 2>"$OUT/stderr" &
td_pid=$!
# Both HeadBuckets answered: only the key listing is left in flight.
deadline=$((SECONDS + 120))
until (($(grep -c '"phase":"checks".*"item":"it-' "$OUT/stderr" || true) >= 2)); do
  kill -0 "$td_pid" 2>/dev/null || fail "teardown ended before it was interrupted: $(cat "$OUT/stderr")"
  ((SECONDS < deadline)) || fail "teardown's checks did not come: $(cat "$OUT/stderr")"
  sleep 0.05
done
kill -INT "$td_pid"
rc=0
wait "$td_pid" || rc=$?
kill "$mute_pid" 2>/dev/null || true
check_eq "exit" 130 "$rc"
check_eq "times 'interrupted' is said on stderr" 1 "$(grep -v '^{' "$OUT/stderr" | grep -c 'interrupted')"
check_contains "what to do" "$(grep -v '^{' "$OUT/stderr")" "run the same teardown again to finish"
check_eq "rows interrupted, their keys kept, no error of their own" 2 \
  "$(grep -cE '^it-[0-9] +interrupted +kept +-$' "$OUT/stdout")"
check_eq "it-1 still there" 200 "$(bucket_status it-1)"
expect_rc "teardown it" 0 tf teardown --manifest it.json -q

step "a fork kept because it has forks: its key is revoked, and the message does not claim one it had not"
expect_rc "fork create p" 0 tf fork create ds1 -n 1 --prefix p --manifest p.json -q
expect_rc "fork create of p-1" 0 tf fork create p-1 -n 1 --prefix q --keys none --manifest q.json -q
# (A manifest's teardown is recursive: the run's forks' forks are the run's. By name it is not.)
expect_rc "teardown p-1" 6 tf teardown p-1
check_eq "p-1 row" 1 "$(grep -cE '^p-1 +skipped +deleted +p-1 has forks of its own \(q-1\); left in place \(--recursive' "$OUT/stdout")"
check_eq "p-1 still there" 200 "$(bucket_status p-1)"
expect_rc "teardown q" 0 tf teardown --manifest q.json -q
expect_rc "teardown p again" 0 tf teardown --manifest p.json -q
