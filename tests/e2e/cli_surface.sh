#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: the command line as people type it (issue 11), with the real binary and a real
# `tfork serve`: unknown commands named with the nearest one, synonyms (list, delete, remove,
# new), `tfork help COMMAND`, bare `tfork`, usage errors that point at the right --help,
# values checked in words, and every parse error as one JSON object when JSON was asked for.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_tfork
require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"

tf() { timeout 60 "$TFORK" "$@"; }
stderr() { cat "$OUT/stderr"; }
stdout() { cat "$OUT/stdout"; }

# json_error WHAT CODE: stderr is exactly one JSON object {"error": {...}} with exit_code CODE.
json_error() {
  python3 - "$OUT/stderr" "$2" <<'PY' || fail "$1: stderr is not one JSON error: $(cat "$OUT/stderr")"
import json, sys
text = open(sys.argv[1]).read()
d = json.loads(text)
assert list(d) == ["error"], d
assert d["error"]["exit_code"] == int(sys.argv[2]), d
assert d["error"]["code"] and d["error"]["message"], d
PY
  check_eq "$1: nothing on stdout" "" "$(stdout)"
}

step "unknown commands are named, with the nearest one"
expect_rc "fork lst" 64 tf fork lst data
check_eq "fork lst" "tfork: error: unknown command 'lst' for 'tfork fork'; did you mean 'ls'?" \
  "$(stderr | head -1)"
check_eq "fork lst: where to look" "Run 'tfork fork --help' for usage." "$(stderr | sed -n 2p)"
expect_rc "tardown" 64 tf tardown --manifest x.json
check_contains "tardown" "$(stderr)" "unknown command 'tardown' for 'tfork'; did you mean 'teardown'?"
expect_rc "snap" 64 tf snap ls data
check_contains "snap" "$(stderr)" "did you mean 'snapshot'?"
expect_rc "a global option's value is not a command" 64 tf --output json fork lst data
check_contains "-o json fork lst" "$(stderr)" "'lst' for 'tfork fork'"
expect_rc "nothing near" 64 tf zzzzzz
check_eq "nothing near: no guess" "tfork: error: unknown command 'zzzzzz' for 'tfork'" "$(stderr | head -1)"
expect_rc "a group without its command" 64 tf bucket
check_contains "bucket alone" "$(stderr)" "'tfork bucket' needs a command: create, rm, ls, set"

step "synonyms: list, delete, remove, new"
"$TFORK" bucket create data --snapshots >/dev/null
expect_rc "bucket new" 0 tf bucket new extra
expect_rc "snapshot list" 0 tf snapshot list data --json
check_eq "snapshot list is snapshot ls" "[]" "$(json_get 'd["snapshots"]' <"$OUT/stdout")"
expect_rc "fork list" 0 tf fork list data --json
expect_rc "bucket delete" 0 tf bucket delete extra --json
check_eq "bucket delete deleted it" "deleted" "$(json_get 'd["buckets"][0]["status"]' <"$OUT/stdout")"
"$TFORK" bucket create extra2 >/dev/null
expect_rc "bucket remove" 0 tf bucket remove extra2

step "help: tfork help COMMAND is COMMAND --help; bare tfork prints the help"
expect_rc "help fork create" 0 tf help fork create
help_text=$(stdout)
expect_rc "fork create --help" 0 tf fork create --help
check_eq "help fork create = fork create --help" "$(stdout)" "$help_text"
check_contains "help names the command" "$help_text" "Usage: tfork fork create"
expect_rc "help with a synonym" 0 tf help fork list
check_contains "help fork list" "$(stdout)" "Usage: tfork fork ls"
expect_rc "help of nothing" 0 tf help
check_contains "tfork help" "$(stdout)" "Subcommands:"
expect_rc "help of a typo" 64 tf help fork lst
check_contains "help fork lst" "$(stderr)" "did you mean 'ls'?"
expect_rc "bare tfork" 64 tf
check_contains "bare tfork: the help" "$(stderr)" "Subcommands:"
check_eq "bare tfork: stdout" "" "$(stdout)"

step "values checked in words, with the limits the help shows"
expect_rc "-n abc" 64 tf fork create data -n abc
check_eq "-n abc" "tfork: error: -n needs a whole number from 1 to 1000 (got 'abc')" "$(stderr | head -1)"
check_eq "-n abc: where to look" "Run 'tfork fork create --help' for usage." "$(stderr | sed -n 2p)"
expect_rc "-n 1001" 64 tf fork create data -n 1001
check_contains "-n 1001" "$(stderr)" "from 1 to 1000 (got '1001')"
expect_rc "-n 0" 64 tf run data -n 0 -- true
check_contains "run -n 0" "$(stderr)" "-n needs a whole number from 1 to 1000 (got '0')"
expect_rc "fork create --help" 0 tf fork create --help
check_contains "the help shows the real limit" "$(stdout)" "1-1000"
expect_rc "--concurrency 0" 64 tf --concurrency 0 fork ls data
check_contains "--concurrency 0" "$(stderr)" "--concurrency needs a whole number from 1 to 1024 (got '0')"
expect_rc "--connect-timeout -1" 64 tf --connect-timeout=-1 fork ls data
check_contains "--connect-timeout" "$(stderr)" "--connect-timeout needs a number of seconds above 0"
expect_rc "--keys" 64 tf fork create data -n 2 --keys admin
check_contains "--keys admin" "$(stderr)" "--keys must be one of: editor, readonly, none (got 'admin')"
expect_rc "-o yaml" 64 tf -o yaml fork ls data
check_contains "-o yaml" "$(stderr)" "--output must be one of: table, json (got 'yaml')"
check_not_contains "no CLI11 range text" "$(stderr)" "not in range"
expect_rc "a usage error found after parsing points at its command" 64 tf fork ls 'Bad_Name'
check_contains "fork ls Bad_Name" "$(stderr)" "Run 'tfork fork ls --help' for usage."

step "every error is one JSON object when JSON was asked for, parse errors included"
expect_rc "--json typo" 64 tf --json fork lst data
json_error "--json fork lst" 64
expect_rc "-o json range" 64 tf -o json fork create data -n abc
json_error "-o json -n abc" 64
expect_rc "--output=json after the command" 64 tf fork create data -n 0 --output=json
json_error "--output=json" 64
TFORK_OUTPUT=json expect_rc "TFORK_OUTPUT=json missing argument" 64 tf fork create
json_error "TFORK_OUTPUT=json" 64
expect_rc "-o table wins over TFORK_OUTPUT" 64 tf -o table fork lst
check_contains "-o table" "$(stderr)" "tfork: error: unknown command"
expect_rc "--json on a missing bucket" 3 tf --json fork head no-such-bucket-x
python3 -c 'import json,sys; json.loads(open(sys.argv[1]).read())' "$OUT/stdout" ||
  fail "fork head --json: stdout is not JSON"

step "messages say what to do"
cd "$WORK"
"$TFORK" bucket create plain-src >/dev/null
expect_rc "fork of a bucket without snapshots" 1 tf fork create plain-src -n 3 --json
check_eq "the forks were not attempted" '["not-attempted", "not-attempted", "not-attempted"]' \
  "$(json_get '[f["status"] for f in d["forks"]]' <"$OUT/stdout")"
check_eq "no error per fork" "[]" "$(json_get '[f for f in d["forks"] if "error" in f]' <"$OUT/stdout")"
expect_rc "fork of a bucket without snapshots (table)" 1 tf fork create plain-src -n 3
check_eq "one error line" 1 "$(grep -c 'tfork: error:' "$OUT/stderr")"
check_contains "how to turn snapshots on" "$(stderr)" "tfork bucket set plain-src --snapshots on"
check_contains "table: not-attempted" "$(stdout)" "not-attempted"
expect_rc "fork create taken-1" 0 tf fork create data taken-1 --keys none
expect_rc "the same name again" 6 tf fork create data taken-1 --keys none
check_contains "a fork of this source, another snapshot" "$(stderr)" \
  "taken-1: exists, as a fork of data from snapshot"
check_contains "what to do" "$(stderr)" "choose another name or --prefix, or tear it down first"
expect_rc "a plain bucket's name" 6 tf fork create data plain-src --keys none
check_contains "not a fork" "$(stderr)" "plain-src: exists and is not a fork of data"
"$TFORK" bucket create other --snapshots >/dev/null
expect_rc "another source's fork" 6 tf fork create other taken-1 --keys none
check_contains "a fork of another source" "$(stderr)" "taken-1: exists, as a fork of data, not of other"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE -u TIGRIS_STORAGE_ACCESS_KEY_ID \
  -u TIGRIS_STORAGE_SECRET_ACCESS_KEY HOME="$WORK/empty-home" "$TFORK" fork ls data \
  >"$OUT/stdout" 2>"$OUT/stderr" && fail "no credentials: it succeeded"
check_contains "no credentials: what was tried" "$(stderr)" "Tried, in order"
check_contains "no credentials: a command that returns" "$(stderr)" "--env-file tfork.env & then, once tfork.env exists"
check_not_contains "no credentials: no bare eval" "$(stderr)" 'eval "$(tfork serve'

step "a refused teardown names the endpoint and the access key in use"
expect_rc "fork create den" 0 tf fork create data -n 2 --prefix den --manifest "$WORK/den.json"
agent_ak=$(json_get 'd["forks"][0]["access_key_id"]' <"$WORK/den.json")
agent_sk=$(json_get 'd["forks"][0]["secret_access_key"]' <"$WORK/den.json")
AWS_ACCESS_KEY_ID=$agent_ak AWS_SECRET_ACCESS_KEY=$agent_sk expect_rc "teardown with an agent's key" 2 tf \
  teardown den-2
check_contains "403: the endpoint" "$(stderr)" "sent to $ENDPOINT"
check_contains "403: the key id" "$(stderr)" "with access key $agent_ak"
check_not_contains "403: never the secret" "$(stderr)" "$agent_sk"
expect_rc "teardown den" 0 tf teardown --manifest "$WORK/den.json"

step "--dry-run shows in the table what would be sent, secrets never"
expect_rc "fork create --dry-run" 0 tf fork create data -n 2 --prefix dry --dry-run
check_contains "dry-run: the snapshot's name" "$(stdout)" "X-Tigris-Snapshot: true; name=tfork dry"
check_contains "dry-run: the fork source" "$(stdout)" "X-Tigris-Fork-Source-Bucket: data"
check_contains "dry-run: the version placeholder" "$(stdout)" "X-Tigris-Fork-Source-Bucket-Snapshot:"
check_contains "dry-run: the key's name" "$(stdout)" "key name: dry-1-key"
check_contains "dry-run: the key's role and scope" "$(stdout)" "role Editor on bucket dry-2 only"
check_not_contains "dry-run: no secret" "$(stdout)" "$ROOT_SK"
expect_rc "bucket rm --force --dry-run" 0 tf bucket rm data --force --dry-run
check_contains "dry-run: the force header" "$(stdout)" "Tigris-Force-Delete: true"
expect_rc "fork create --dry-run --json" 0 tf fork create data -n 1 --prefix dry --dry-run --json
check_eq "dry-run JSON: the key's body" '["dry-1-key", "Editor", "dry-1"]' \
  "$(json_get '[[r["body"]["name"], r["body"]["buckets_role"][0]["role"], r["body"]["buckets_role"][0]["bucket"]] for r in d["requests"] if "body" in r][0]' <"$OUT/stdout")"
"$TFORK" fork ls data --json >"$OUT/stdout"
check_eq "dry-run made nothing" "[]" "$(json_get '[f["bucket"] for f in d["forks"] if f["bucket"].startswith("dry")]' <"$OUT/stdout")"

step "-v says what the run does, -vv every request; no secret at any level"
expect_rc "-v fork create" 0 tf -v fork create data -n 2 --prefix vv --manifest "$WORK/vv.json"
check_contains "-v: the snapshot" "$(stderr)" "took snapshot"
check_not_contains "-v: no request lines" "$(stderr)" " -> 200 ("
expect_rc "-vv fork ls" 0 tf -vv fork ls data
check_contains "-vv: one line per request" "$(stderr)" "GET $ENDPOINT/?IncludeForkInfo=true -> 200 ("
check_contains "-vv: the attempt" "$(stderr)" "attempt 1)"
secret=$(json_get 'd["forks"][0]["secret_access_key"]' <"$WORK/vv.json")
for level in -v -vv --debug; do
  expect_rc "$level teardown" 0 tf "$level" teardown --manifest "$WORK/vv.json"
  check_not_contains "$level: no root secret" "$(stderr)" "$ROOT_SK"
  check_not_contains "$level: no agent secret" "$(stderr)" "$secret"
done
stop_server
start_server --fail-rate 0.5
expect_rc "-v with a throttling server" 0 tf -v --max-attempts 20 bucket create flaky --snapshots
for attempt in 1 2 3; do
  expect_rc "-v fork create (throttled)" 0 tf -v --max-attempts 20 fork create flaky -n 8 --keys none \
    --prefix "t$attempt"
  grep -q "retrying PUT $ENDPOINT/" "$OUT/stderr" && break
done
check_contains "-v: a retry with its reason and delay" "$(stderr)" "after HTTP 503 in"

echo "PASS cli_surface.sh"
