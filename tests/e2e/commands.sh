#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: bucket create|rm, snapshot take|ls|rm, fork head|ls, --help and version with the
# real binary against a real `tfork serve` (127.0.0.1, port 0). Checks the JSON documents of
# cli.md §6 (field names and order, null, [] for empty lists) and the exit codes: 64 before
# anything is sent, 3 missing, 6 exists, 2 wrong secret, 5 nothing listening.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"


# check_doc WHAT PYTHON-ASSERTIONS: parses $OUT/stdout as ONE JSON document (d) and runs the
# assertions; keys(x) is the list of x's field names in document order.
check_doc() {
  python3 - "$OUT/stdout" "$2" <<'PY' || fail "$1: $(cat "$OUT/stdout")"
import json, re, sys
text = open(sys.argv[1]).read()
d = json.loads(text)  # exactly one document, or this raises
keys = lambda x: list(x.keys())
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$")
exec(sys.argv[2])
PY
}

tf() { timeout 60 "$TFORK" "$@"; }

# ---- help and version

step "--help lists the global options; version prints the version"
expect_rc "tfork --help" 0 tf --help
for option in --output --json --endpoint-url --iam-endpoint-url --profile --region --path-style \
  --virtual-hosted --ca-bundle --no-verify-ssl --concurrency --max-attempts --connect-timeout \
  --read-timeout --verbose --debug --quiet --no-progress --no-color --yes --dry-run; do
  check_contains "tfork --help" "$(cat "$OUT/stdout")" "$option"
done
for command in bucket completion fork snapshot version; do
  check_contains "tfork --help subcommands" "$(cat "$OUT/stdout")" "$command"
done
expect_rc "tfork version" 0 tf version
[[ "$(cat "$OUT/stdout")" =~ ^tfork\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "version: $(cat "$OUT/stdout")"
version_line=$(cat "$OUT/stdout")
expect_rc "tfork --version" 0 tf --version
check_eq "--version" "$version_line" "$(cat "$OUT/stdout")"
expect_rc "tfork version --json" 0 tf version --json
check_doc "version --json" 'assert keys(d) == ["version"]'

# ---- bucket create

step "bucket create"
expect_rc "bucket create --snapshots" 0 tf bucket create data-src --snapshots --json
check_doc "bucket create" '
assert keys(d) == ["bucket", "created", "snapshots_enabled"], keys(d)
assert d == {"bucket": "data-src", "created": True, "snapshots_enabled": True}'
expect_rc "bucket create (plain, table)" 0 tf bucket create data-plain
check_contains "bucket create table" "$(cat "$OUT/stdout")" "data-plain"

expect_rc "bucket create existing" 6 tf bucket create data-src --snapshots
check_contains "exists message" "$(cat "$OUT/stderr")" "BucketAlreadyOwnedByYou"
expect_rc "bucket create existing --json" 6 tf bucket create data-src --json
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert list(e)==["code","message","http_status","request_id","exit_code"] and e["exit_code"]==6 and e["http_status"]==409, e' \
  "$OUT/stderr" || fail "error document: $(cat "$OUT/stderr")"
[[ ! -s "$OUT/stdout" ]] || fail "an error wrote to stdout: $(cat "$OUT/stdout")"
expect_rc "bucket create --exist-ok" 0 tf bucket create data-src --exist-ok --json
check_doc "bucket create --exist-ok" '
assert keys(d) == ["bucket", "created", "snapshots_enabled"]
assert d["created"] is False and d["snapshots_enabled"] is True, d'
expect_rc "bucket create --exist-ok (plain)" 0 tf bucket create data-plain --exist-ok -o json
check_doc "exist-ok plain" 'assert d["created"] is False and d["snapshots_enabled"] is False, d'

step "bad names: exit 64 and nothing sent (even to a closed port)"
for name in Bad_Name ab 192.168.1.1 xn--abc data-s3alias a..b -lead; do
  expect_rc "bucket create $name" 64 tf --debug bucket create "$name"
  check_not_contains "no request for $name" "$(cat "$OUT/stderr")" "> PUT"
done
expect_rc "bad name, closed port" 64 tf --endpoint-url http://127.0.0.1:1 bucket create Bad_Name
expect_rc "bucket rm bad name" 64 tf --endpoint-url http://127.0.0.1:1 bucket rm ok-name BAD
expect_rc "fork head bad name" 64 tf --endpoint-url http://127.0.0.1:1 fork head x
expect_rc "usage error hint" 64 tf bucket create
check_contains "usage hint" "$(cat "$OUT/stderr")" "--help"

step "--dry-run prints the request and sends nothing"
expect_rc "dry run" 0 tf --dry-run bucket create dry-bucket --snapshots --json
check_doc "dry run" '
r = d["requests"][0]
assert r["method"] == "PUT" and r["url"].endswith("/dry-bucket"), r
assert any(k.lower() == "x-tigris-enable-snapshot" for k in r["headers"]), r'
expect_rc "dry-run bucket really absent" 3 tf fork head dry-bucket

# ---- snapshots

step "snapshot take / ls / rm"
expect_rc "snapshot take --name" 0 tf snapshot take data-src --name "base line" --json
check_doc "snapshot take" '
assert keys(d) == ["bucket", "version", "name"], keys(d)
assert d["bucket"] == "data-src" and d["name"] == "base line" and re.fullmatch(r"\d{19}", d["version"]), d'
v1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$OUT/stdout")
v2=$(tf snapshot take data-src) || fail "snapshot take (table)"
[[ "$v2" =~ ^[0-9]{19}$ ]] || fail "snapshot take table output is not just the version: [$v2]"
expect_rc "snapshot take bad name" 64 tf snapshot take data-src --name 'a;b'
expect_rc "snapshot take missing bucket" 3 tf snapshot take no-such-bucket

expect_rc "snapshot ls" 0 tf snapshot ls data-src --json
check_doc "snapshot ls" "
assert keys(d) == ['bucket', 'snapshots'], keys(d)
s = d['snapshots']
assert [x['version'] for x in s] == ['$v2', '$v1'], s
assert all(keys(x) == ['version', 'name', 'created', 'forks'] for x in s), s
assert all(x['forks'] == 0 for x in s), s
assert s[0]['name'] is None and s[1]['name'] == 'base line', s
assert all(RFC3339.match(x['created']) for x in s), s"
expect_rc "snapshot ls --limit 1" 0 tf snapshot ls data-src --limit 1 --json
check_doc "snapshot ls --limit" "assert [x['version'] for x in d['snapshots']] == ['$v2']"
expect_rc "snapshot ls table" 0 tf snapshot ls data-src
check_eq "snapshot ls header" "VERSION              NAME       CREATED              FORKS" "$(head -n 1 "$OUT/stdout")"
expect_rc "snapshot ls empty" 0 tf snapshot ls data-plain --json
check_doc "snapshot ls empty" 'assert d == {"bucket": "data-plain", "snapshots": []}, d'
grep -q '"snapshots": \[\]' "$OUT/stdout" || fail "empty list is not []: $(cat "$OUT/stdout")"

# ---- forks: created through the product's own fork create

step "fork head / fork ls"
expect_rc "fork create" 0 tf fork create data-src data-fork-a data-fork-b --snapshot "$v1" --keys none
expect_rc "fork head" 0 tf fork head data-fork-a data-src --json
check_doc "fork head" "
assert keys(d) == ['buckets']
a, s = d['buckets']
want = ['bucket', 'exists', 'snapshots_enabled', 'fork_source', 'fork_source_snapshot', 'is_fork_parent']
assert keys(a) == want and keys(s) == want, d
assert a == {'bucket': 'data-fork-a', 'exists': True, 'snapshots_enabled': True, 'fork_source': 'data-src', 'fork_source_snapshot': '$v1', 'is_fork_parent': False}, a
assert s['fork_source'] is None and s['fork_source_snapshot'] is None and s['is_fork_parent'] is True, s"
expect_rc "fork head with a missing bucket" 3 tf fork head data-fork-a no-such-bucket --json
check_doc "fork head missing" "
assert [b['exists'] for b in d['buckets']] == [True, False], d
assert d['buckets'][1]['fork_source'] is None and d['buckets'][1]['snapshots_enabled'] is None
assert d['buckets'][1]['is_fork_parent'] is None, d"
expect_rc "fork head table" 0 tf fork head data-fork-a
check_contains "fork head table" "$(cat "$OUT/stdout")" "data-src"

expect_rc "fork ls" 0 tf fork ls data-src --json
check_doc "fork ls" "
assert keys(d) == ['source', 'forks'] and d['source'] == 'data-src', d
assert [f['bucket'] for f in d['forks']] == ['data-fork-a', 'data-fork-b'], d
assert all(keys(f) == ['bucket', 'snapshot', 'created', 'expires_at', 'expired'] for f in d['forks'])
assert all(f['snapshot'] == '$v1' and RFC3339.match(f['created']) for f in d['forks']), d"
expect_rc "fork ls without forks" 0 tf fork ls data-plain --json
check_doc "fork ls empty" 'assert d == {"source": "data-plain", "forks": []}, d'
expect_rc "fork ls missing source" 3 tf fork ls no-such-bucket

# ---- deletes

step "bucket rm refuses a fork parent, naming its forks"
expect_rc "bucket rm parent" 6 tf bucket rm data-src
check_contains "names the forks" "$(cat "$OUT/stdout")$(cat "$OUT/stderr")" "data-fork-a"
expect_rc "bucket rm --force parent" 6 tf bucket rm data-src --force --yes
expect_rc "still there" 0 tf fork head data-src

step "snapshot rm"
expect_rc "snapshot rm bad version" 64 tf snapshot rm data-src "$v2" latest
expect_rc "snapshot rm" 0 tf snapshot rm data-src "$v2" --json
check_doc "snapshot rm" "
assert keys(d) == ['bucket', 'versions']
assert d['versions'] == [{'version': '$v2', 'status': 'deleted'}], d"
expect_rc "snapshot rm again" 3 tf snapshot rm data-src "$v2" --json
check_doc "snapshot rm again" "assert d['versions'][0]['status'] == 'not-found', d"
expect_rc "snapshot rm again (table)" 3 tf snapshot rm data-src "$v2"
check_contains "snapshot rm again says so" "$(cat "$OUT/stdout")" "not found (nothing to do)"
check_contains "snapshot rm again: one error line" "$(cat "$OUT/stderr")" "nothing to do"
expect_rc "snapshot rm missing bucket" 3 tf snapshot rm no-such-bucket "$v2" --json
check_doc "snapshot rm missing bucket" "
v = d['versions'][0]
assert v['status'] == 'failed' and keys(v['error']) == ['code', 'message', 'http_status'] and v['error']['http_status'] == 404, d"

step "bucket rm"
expect_rc "bucket rm forks" 0 tf bucket rm data-fork-a data-fork-b --json
check_doc "bucket rm" "
assert keys(d) == ['buckets', 'keys']
assert d['buckets'] == [{'bucket': 'data-fork-a', 'status': 'deleted'}, {'bucket': 'data-fork-b', 'status': 'deleted'}], d"
expect_rc "bucket rm gone" 3 tf bucket rm data-fork-a --json
check_doc "bucket rm gone" "assert d['buckets'][0]['status'] == 'not-found', d"
expect_rc "bucket rm typo (table)" 3 tf bucket rm no-such-bucket-typo
check_contains "bucket rm typo says so" "$(cat "$OUT/stdout")" "not found (nothing to do)"
check_contains "bucket rm typo names it" "$(cat "$OUT/stderr")" "no-such-bucket-typo"
# A non-empty bucket needs an object; tfork has no object commands, so the AWS CLI writes one
# when it is installed (otherwise these two checks are left out).
aws_put() {
  [[ -x "$AWS_BIN" ]] && aws_cli s3api put-object --bucket data-plain --key k --body /etc/hostname >/dev/null
}
if aws_put; then
  expect_rc "bucket rm non-empty" 6 tf bucket rm data-plain --json
  check_doc "bucket rm non-empty" "assert d['buckets'][0]['status'] == 'failed' and d['buckets'][0]['error']['code'] == 'BucketNotEmpty', d"
  expect_rc "bucket rm mixed batch" 7 tf bucket rm data-plain no-such-bucket
fi
expect_rc "bucket rm --force" 0 tf bucket rm data-plain data-src --force --yes --json
check_doc "bucket rm --force" "assert [b['status'] for b in d['buckets']] == ['deleted', 'deleted'], d"
expect_rc "deleted" 3 tf fork head data-src

# check_error_doc WHAT EXIT: the last line of $OUT/stderr is the JSON error document of
# cli.md §6 with that exit code (progress or log lines may come before it).
check_error_doc() {
  python3 - "$OUT/stderr" "$2" <<'PY' || fail "$1: stderr: $(cat "$OUT/stderr")"
import json, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.strip()]
e = json.loads(lines[-1])["error"]
assert list(e.keys()) == ["code", "message", "http_status", "request_id", "exit_code"], e
assert e["exit_code"] == int(sys.argv[2]), e
PY
}

step "partial failures: the result on stdout, the JSON error on stderr, exit 7"
expect_rc "partial: source" 0 tf bucket create part-src --snapshots
expect_rc "partial: fork" 0 tf fork create part-src -n 1 --prefix part --keys none \
  --manifest "$WORK/part.json"
expect_rc "partial: plain buckets" 0 tf bucket create part-plain
expect_rc "partial: plain buckets" 0 tf bucket create part-plain-2
expect_rc "bucket rm partial --json" 7 tf bucket rm part-src part-plain --json
check_doc "bucket rm partial" "assert [b['status'] for b in d['buckets']] == ['failed', 'deleted'], d"
check_error_doc "bucket rm partial" 7
expect_rc "teardown partial --json" 7 tf teardown part-1 part-plain-2 --json
check_doc "teardown partial" "assert [f['status'] for f in d['forks']] == ['deleted', 'skipped'], d"
check_error_doc "teardown partial" 7
# part-1 is gone now: a teardown of names none of which exists has nothing to do (exit 3).
expect_rc "teardown of a name that is gone" 3 tf teardown part-1
check_contains "teardown nothing to do" "$(cat "$OUT/stdout")" "not found (nothing to do)"
check_contains "teardown nothing to do: the error" "$(cat "$OUT/stderr")" "nothing to do: no such fork: part-1"
expect_rc "partial: cleanup" 0 tf bucket rm part-src part-plain-2

step "serve on a port in use: exit 5 with the JSON error, nothing on stdout"
expect_rc "serve port in use" 5 tf serve --json --listen "${ENDPOINT#http://}" --data "$WORK/second"
check_eq "serve port in use: stdout" "" "$(cat "$OUT/stdout")"
check_error_doc "serve port in use" 5
check_contains "serve port in use: message" "$(cat "$OUT/stderr")" "cannot listen on"

# ---- auth, network

step "wrong secret → 2; secrets never printed"
expect_rc "wrong secret" 2 env AWS_SECRET_ACCESS_KEY=wrong-secret "$TFORK" snapshot ls data-src
check_contains "wrong secret message" "$(cat "$OUT/stderr")" "SignatureDoesNotMatch"
expect_rc "debug run" 3 tf --debug fork head data-src
check_not_contains "secret in --debug" "$(cat "$OUT/stdout" "$OUT/stderr")" "$AWS_SECRET_ACCESS_KEY"

step "nothing listening → 5, a network error"
closed_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
expect_rc "closed port" 5 tf --endpoint-url "http://127.0.0.1:$closed_port" --connect-timeout 2 \
  --max-attempts 1 fork head some-bucket
check_contains "closed port: message" "$(cat "$OUT/stderr")" "connect to 127.0.0.1:$closed_port failed"
expect_rc "closed port --json" 5 tf --endpoint-url "http://127.0.0.1:$closed_port" --connect-timeout 2 \
  --max-attempts 1 --json snapshot ls some-bucket
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["exit_code"]==5 and e["http_status"] is None, e' \
  "$OUT/stderr" || fail "network error document: $(cat "$OUT/stderr")"

step "a connect that gets no answer ends at --connect-timeout: exit 5, timed out"
# A listener whose accept queue is full: Linux drops further SYNs, so a connect is neither
# accepted nor refused. A patient client (--connect-timeout 300) starts first; once its SYN is
# out, a client with --connect-timeout 1 must end with exit 5 ("timed out") while the patient
# still waits. The order of the two ends decides, so the option, not the default (10 s) nor
# the kernel, ended it; no duration is measured.
python3 -c '
import signal, socket
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(0)
fillers = [socket.socket() for _ in range(4)]
for filler in fillers:
    filler.setblocking(False)
    filler.connect_ex(listener.getsockname())
print(listener.getsockname()[1], flush=True)
signal.pause()  # until the test kills it
' >"$WORK/blackhole.port" &
blackhole_pid=$!
# syn_sent PID: whether process PID has a TCP connect under way (state SYN-SENT).
syn_sent() {
  local fd target inodes=" "
  for fd in /proc/"$1"/fd/*; do
    target=$(readlink "$fd" 2>/dev/null) || continue
    [[ $target == "socket:["*"]" ]] && inodes+="${target:8:-1} "
  done
  awk -v inodes="$inodes" '$4 == "02" && index(inodes, " " $10 " ") { found = 1 } END { exit !found }' \
    /proc/net/tcp
}
deadline=$((SECONDS + 60))
until [[ -s "$WORK/blackhole.port" ]]; do
  kill -0 "$blackhole_pid" 2>/dev/null || fail "the full listener did not start"
  ((SECONDS < deadline)) || fail "the full listener printed no port within 60 s"
  sleep 0.05
done
blackhole="http://127.0.0.1:$(cat "$WORK/blackhole.port")"
"$TFORK" --endpoint-url "$blackhole" --connect-timeout 300 --max-attempts 1 fork head some-bucket \
  >"$WORK/patient.out" 2>"$WORK/patient.err" &
patient_pid=$!
until syn_sent "$patient_pid"; do
  kill -0 "$patient_pid" 2>/dev/null || fail "the patient client ended: $(cat "$WORK/patient.err")"
  ((SECONDS < deadline)) || fail "the patient client sent no SYN within 60 s"
  sleep 0.05
done
expect_rc "no answer, --connect-timeout 1" 5 tf --endpoint-url "$blackhole" --connect-timeout 1 \
  --max-attempts 1 fork head some-bucket
check_contains "no answer: message" "$(cat "$OUT/stderr")" "timed out"
kill -0 "$patient_pid" 2>/dev/null ||
  fail "the client with --connect-timeout 300 ended first: $(cat "$WORK/patient.err")"
kill "$patient_pid" "$blackhole_pid"
wait "$patient_pid" "$blackhole_pid" 2>/dev/null || true

stop_server
step "all passed"
