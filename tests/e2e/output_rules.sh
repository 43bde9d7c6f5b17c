#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 11, tables and JSON): the real binary against a real `tfork serve`.
# Every table prints times as "2026-11-30 09:26:19" (UTC) in an aligned column, every JSON
# time is RFC 3339 in whole seconds ("…T09:26:19Z"), listings sort names naturally (run-2
# before run-10), and an absent value is "-" in a table and null in JSON, in fork head,
# fork ls, snapshot ls, bucket rm, snapshot rm and teardown alike.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_tfork
require_cmd python3
start_server
cd "$WORK"

tf() { timeout 120 "$TFORK" --no-progress "$@"; }

# py FILE EXPR...: runs python assertions over the text of FILE (t) and, when it parses,
# the JSON document (d).
py() {
  python3 - "$@" <<'PY' || fail "assertion on $1: $(head -c 1500 "$1")"
import json, re, sys
t = open(sys.argv[1]).read()
try:
    d = json.loads(t)
except ValueError:
    d = None
SECONDS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
TABLE_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
for expr in sys.argv[2:]:
    exec(expr)
PY
}

SRC=rules-src
tf bucket create "$SRC" --snapshots >/dev/null

step "fork names are listed in natural order: run-2 before run-10"
tf fork create "$SRC" --keys none --prefix run -n 11 --json >"$WORK/create.json"
tf fork ls "$SRC" --json >"$WORK/ls.json"
py "$WORK/ls.json" \
  'names = [f["bucket"] for f in d["forks"]]' \
  'assert names == ["run-%d" % i for i in range(1, 12)], names' \
  'assert all(SECONDS_Z.match(f["created"]) for f in d["forks"]), d'
tf fork ls "$SRC" >"$WORK/ls.txt"
py "$WORK/ls.txt" \
  'lines = t.splitlines()' \
  'assert lines[0].split() == ["BUCKET", "SNAPSHOT", "CREATED", "EXPIRES"], lines[0]' \
  'assert [l.split()[0] for l in lines[1:]] == ["run-%d" % i for i in range(1, 12)], lines' \
  'col, end = lines[0].index("CREATED"), lines[0].index("EXPIRES")' \
  'assert all(TABLE_TIME.fullmatch(l[col:end].rstrip()) for l in lines[1:]), lines' \
  'assert "T" not in "".join(l[col:end] for l in lines[1:]) and "Z" not in t, t'
# The server's own time, cut to the second, is what the table shows (UTC).
py "$WORK/ls.json" \
  'open(sys.argv[1] + ".first", "w").write(d["forks"][0]["created"])'
first_json=$(cat "$WORK/ls.json.first")
first_table=$(sed -n 2p "$WORK/ls.txt" | awk '{print $3" "$4}')
check_eq "the same instant in JSON and table" "${first_json%Z}" "${first_table/ /T}"

step "teardown by prefix goes in the same natural order"
tf teardown --source "$SRC" --prefix run --json >"$WORK/td.json"
py "$WORK/td.json" \
  'names = [f["bucket"] for f in d["forks"]]' \
  'assert names == ["run-%d" % i for i in range(1, 12)], names'

step "snapshot ls: an unnamed snapshot is '-' in the table and null in JSON; times in seconds"
unnamed=$(tf snapshot take "$SRC")
named=$(tf snapshot take "$SRC" --name "release 1")
tf snapshot ls "$SRC" --json >"$WORK/snaps.json"
py "$WORK/snaps.json" \
  "by = {s['version']: s for s in d['snapshots']}" \
  "assert by['$unnamed']['name'] is None, by" \
  "assert by['$named']['name'] == 'release 1', by" \
  'assert all(SECONDS_Z.match(s["created"]) for s in d["snapshots"]), d'
tf snapshot ls "$SRC" >"$WORK/snaps.txt"
py "$WORK/snaps.txt" \
  'lines = t.splitlines()' \
  "row = [l for l in lines if l.startswith('$unnamed')][0]" \
  'assert row.split()[1] == "-", row' \
  'col, forks = lines[0].index("CREATED"), lines[0].index("FORKS")' \
  'assert all(TABLE_TIME.fullmatch(l[col:forks].rstrip()) for l in lines[1:]), lines' \
  'assert all(l[forks:].isdigit() for l in lines[1:]), lines'

step "fork head of a missing bucket: '-' in the table, null in JSON (exit 3 both ways)"
rc=0
tf fork head nosuch-bucket "$SRC" --json >"$WORK/head.json" 2>/dev/null || rc=$?
check_eq "fork head exit" 3 "$rc"
py "$WORK/head.json" \
  'missing, present = d["buckets"]' \
  'assert missing == {"bucket": "nosuch-bucket", "exists": False, "snapshots_enabled": None, "fork_source": None, "fork_source_snapshot": None, "is_fork_parent": None}, missing' \
  'assert present["snapshots_enabled"] is True and present["fork_source"] is None, present'
rc=0
tf fork head nosuch-bucket "$SRC" >"$WORK/head.txt" 2>/dev/null || rc=$?
check_eq "fork head table exit" 3 "$rc"
py "$WORK/head.txt" \
  'rows = {l.split()[0]: l.split()[1:] for l in t.splitlines()[1:]}' \
  'assert rows["nosuch-bucket"] == ["no", "-", "-", "-", "-"], rows' \
  'assert rows["'"$SRC"'"][2:4] == ["-", "-"], rows'

step "batch tables: an item that did not fail shows '-' in its ERROR cell"
tf bucket create gone-later >/dev/null
tf bucket rm gone-later never-there-1 >"$WORK/rm.txt" || true
py "$WORK/rm.txt" \
  'rows = {l.split()[0]: l.split()[1:] for l in t.splitlines()[1:]}' \
  'assert rows["gone-later"] == ["deleted", "-"], rows'
tf snapshot rm "$SRC" "$unnamed" >"$WORK/srm.txt" || true
py "$WORK/srm.txt" \
  'rows = {l.split()[0]: l.split()[1:] for l in t.splitlines()[1:]}' \
  "assert rows['$unnamed'] == ['deleted', '-'], rows"

step "fork ls of a bucket without forks: an empty list, never no output"
tf fork ls "$SRC" --json >"$WORK/empty.json"
py "$WORK/empty.json" 'assert d == {"source": "'"$SRC"'", "forks": []}, d'
