#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 11): `fork create SOURCE -n N` without --prefix names its forks
# <source>-fork-<unix-ms>-<i>; for a long SOURCE the source part is cut short so that the
# largest name still fits in a bucket name's 63 characters, and a cut that ends on '-' or '.'
# drops it. Checked against a real `tfork serve`, which refuses invalid names, and in the help
# and the man page, which must say the rule.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_tfork
require_cmd python3
start_server
cd "$WORK"

tf() { timeout 120 "$TFORK" --no-progress "$@"; }

# 63 characters; the room left for the source with -n 12 is 63 - 19 ("-fork-" and 13 digits)
# - 3 ("-12") = 41, and the 41st character is a '-'.
STEM=$(printf 'a%.0s' {1..40})
SRC="$STEM-$(printf 'b%.0s' {1..10}).$(printf 'c%.0s' {1..11})"
[[ ${#SRC} == 63 ]] || fail "test setup: the source is ${#SRC} characters"
tf bucket create "$SRC" --snapshots >/dev/null

step "a 63-character source with -n 12: every fork name is valid and at most 63 characters"
tf fork create "$SRC" -n 12 --keys none --json >"$WORK/create.json"
python3 - "$WORK/create.json" "$STEM" <<'PY' || fail "fork names: $(cat "$WORK/create.json")"
import json, re, sys
d = json.load(open(sys.argv[1]))
stem = sys.argv[2]
names = [f["bucket"] for f in d["forks"]]
assert [f["status"] for f in d["forks"]] == ["created"] * 12, d
assert len(names) == 12, names
for i, name in enumerate(names, 1):
    assert re.fullmatch(re.escape(stem) + r"-fork-\d{13}-" + str(i), name), name
    assert len(name) <= 63, (name, len(name))
assert len(names[-1]) == 62, names[-1]  # 63 less the "-" the cut ended on, no shorter
PY
# The server agrees: each one exists (HeadBucket), as a fork of the source.
mapfile -t names < <(python3 -c 'import json,sys; print("\n".join(f["bucket"] for f in json.load(open(sys.argv[1]))["forks"]))' "$WORK/create.json")
tf fork head "${names[@]}" --json >"$WORK/head.json"
python3 - "$WORK/head.json" "$SRC" <<'PY' || fail "fork head: $(cat "$WORK/head.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert all(b["exists"] and b["fork_source"] == sys.argv[2] for b in d["buckets"]), d
PY

step "the snapshot fork create took is named after the shortened prefix"
prefix=${names[0]%-1}
tf snapshot ls "$SRC" --json >"$WORK/snaps.json"
check_contains "snapshot name" "$(cat "$WORK/snaps.json")" "\"tfork $prefix\""

step "a short source keeps its whole name"
tf bucket create short-src --snapshots >/dev/null
tf fork create short-src -n 4 --keys none --json >"$WORK/short.json"
check_contains "short source names" "$(cat "$WORK/short.json")" '"bucket": "short-src-fork-'

step "an explicit --prefix is never rewritten: too long is a usage error before anything is sent"
rc=0
tf fork create short-src -n 2 --keys none --prefix "$SRC" >"$WORK/out" 2>"$WORK/err" || rc=$?
check_eq "too-long --prefix exit" 64 "$rc"
check_contains "too-long --prefix message" "$(cat "$WORK/err")" "$SRC-1"

step "the rule is said in fork create --help and in the man page"
help=$("$TFORK" fork create --help)
check_contains "help says the limit" "$help" "63 characters"
check_contains "help says the cut" "$help" "cut short"
man_text=$(tr -d '\\' <"$SOURCE_DIR/man/tfork.1" | tr '\n' ' ')
check_contains "man page says the limit" "$man_text" "63 characters of a bucket name"

step "tfork run names its forks as fork create does: a 63-character source works (issue 25 §1)"
rc=0
(cd "$WORK" && timeout 120 "$TFORK" --no-progress run "$SRC" -n 2 -- true) \
  >"$WORK/run.out" 2>"$WORK/run.err" || rc=$?
check_eq "run with a 63-character source exit" 0 "$rc"
python3 - "$WORK/run.out" <<'PY' || fail "run's forks: $(cat "$WORK/run.out")"
import re, sys
names = re.findall(r"^(a{40}\S*-fork-\d{13}-[12])\s", open(sys.argv[1]).read(), re.M)
assert len(names) == 2 and all(len(n) <= 63 for n in names), names
PY
check_not_contains "no invalid name" "$(cat "$WORK/run.err")" "invalid fork name"
