#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: `bucket ls [--forks-of S] [--tree]`, `snapshot ls`'s FORKS count and `snapshot
# prune` (cli.md §10) with the real binary against a real `tfork serve` (127.0.0.1, port 0):
# the fork information of every bucket, the fork tree drawn and nested, and a careless user's
# prune: a bucket that does not exist, no rule or two, --keep-last 0, --dry-run, a snapshot a
# fork of a fork was made from, the same prune twice, a hostile snapshot name.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_cmd python3
start_server --quirks snapshot-names-verbatim  # stores the hostile name below

OUT="$WORK/out"
mkdir -p "$OUT"


# check_doc WHAT PYTHON: parses $OUT/stdout as one JSON document `d` and runs the assertions.
check_doc() {
  python3 - "$OUT/stdout" "$2" <<'PY' || fail "$1: $(cat "$OUT/stdout")"
import json, sys
d = json.loads(open(sys.argv[1]).read())
keys = lambda x: list(x.keys())
exec(sys.argv[2])
PY
}

# ---- a small estate: src with snapshots, two forks, a fork of a fork, a plain bucket

step "setup: src, its snapshots and forks, a fork of a fork"
expect_rc "bucket create src" 0 tf bucket create src --snapshots
expect_rc "bucket create plain" 0 tf bucket create plain
expect_rc "snapshot take base" 0 tf snapshot take src --name base
base=$(stdout)
expect_rc "fork create run-1 run-2" 0 tf fork create src run-1 run-2 --snapshot "$base" --keys none -q
expect_rc "snapshot take run-1" 0 tf snapshot take run-1 --name inner
inner=$(stdout)
expect_rc "fork create run-1-x" 0 tf fork create run-1 run-1-x --snapshot "$inner" --keys none -q
expect_rc "snapshot take unused" 0 tf snapshot take src
unused=$(stdout)
# Another client names a snapshot with an escape sequence: tfork must never print it raw.
s3 PUT /src -H $'X-Tigris-Snapshot: true; name=evil\x1b[31mred'
check_status 200
hostile=$(header_value X-Tigris-Snapshot-Version)
expect_rc "snapshot take newest" 0 tf snapshot take src --name newest
newest=$(stdout)

# ---- bucket ls

step "bucket ls: every bucket with its fork information"
expect_rc "bucket ls --json" 0 tf bucket ls --json
check_doc "bucket ls --json" "
assert keys(d) == ['forks_of', 'buckets'] and d['forks_of'] is None, keys(d)
rows = {b['bucket']: b for b in d['buckets']}
assert [b['bucket'] for b in d['buckets']] == ['plain', 'run-1', 'run-1-x', 'run-2', 'src'], d
assert keys(rows['src']) == ['bucket', 'created', 'snapshots_enabled', 'fork_source',
                             'fork_source_snapshot', 'is_fork_parent', 'expires_at'], keys(rows['src'])
assert rows['src']['fork_source'] is None and rows['src']['is_fork_parent'] is True
assert rows['plain']['snapshots_enabled'] is False and rows['plain']['is_fork_parent'] is False
assert rows['run-1']['fork_source'] == 'src' and rows['run-1']['fork_source_snapshot'] == '$base'
assert rows['run-1']['is_fork_parent'] is True and rows['run-2']['is_fork_parent'] is False
assert rows['run-1-x']['fork_source'] == 'run-1' and rows['run-1-x']['fork_source_snapshot'] == '$inner'
import re
assert all(re.match(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$', b['created']) for b in d['buckets']), d
"
expect_rc "bucket ls (table)" 0 tf bucket ls
check_contains "table header" "$(stdout)" "BUCKET   SNAPSHOTS  FORK_SOURCE  FORK_SNAPSHOT"
check_contains "table: the fork of a fork" "$(stdout)" "run-1-x  yes        run-1        $inner"

step "bucket ls --forks-of: only that bucket's direct forks"
expect_rc "bucket ls --forks-of src" 0 tf bucket ls --forks-of src --json
check_doc "--forks-of src" "
assert d['forks_of'] == 'src'
assert [(b['bucket'], b['fork_source_snapshot'], b['is_fork_parent']) for b in d['buckets']] == \
  [('run-1', '$base', True), ('run-2', '$base', False)], d
"
expect_rc "--forks-of a bucket without forks" 0 tf bucket ls --forks-of plain --json
check_doc "no forks" "assert d['buckets'] == [], d"
expect_rc "--forks-of a bucket without forks (table)" 0 tf bucket ls --forks-of plain
check_contains "no forks: said on stderr" "$(stderr)" "No forks of bucket plain."
expect_rc "--forks-of a missing bucket" 3 tf bucket ls --forks-of nothing-here
check_contains "missing source" "$(stderr)" "nothing-here"
expect_rc "--forks-of a bad name" 64 tf bucket ls --forks-of Bad_Name
expect_rc "--tree without a bucket" 64 tf bucket ls --tree
check_contains "--tree without a bucket" "$(stderr)" "--forks-of"

step "bucket ls --tree: the fork tree of src, drawn and nested"
expect_rc "--tree" 0 tf bucket ls --tree --forks-of src
tree=$(stdout)
[[ "$tree" != *$'\x1b'* ]] || fail "the tree printed a raw escape: $tree"
check_contains "tree: the hostile name, escaped" "$tree" 'snapshot '"$hostile"' "evil\x1b[31mred"'
python3 - "$OUT/stdout" "$base" "$inner" "$unused" "$newest" <<'PY' || fail "tree: $tree"
import re, sys
text = open(sys.argv[1]).read()
base, inner, unused, newest = sys.argv[2:]
time = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
lines = text.splitlines()
assert lines[0] == "src", lines
# newest first; forks under the snapshot they were made from; the fork of a fork below its parent
expected = [
    rf'├── snapshot {newest} "newest"  taken {time}',
    rf'├── snapshot \d+ "evil\\x1b\[31mred"  taken {time}',
    rf'├── snapshot {unused}  taken {time}',
    rf'└── snapshot {base} "base"  taken {time}',
    rf'    ├── run-1  created {time}',
    rf'    │   └── snapshot {inner} "inner"  taken {time}',
    rf'    │       └── run-1-x  created {time}',
    rf'    └── run-2  created {time}',
]
assert len(lines) == 1 + len(expected), lines
for pattern, line in zip(expected, lines[1:]):
    assert re.fullmatch(pattern, line), (pattern, line)
PY
expect_rc "--tree --json" 0 tf bucket ls --tree --forks-of src -o json
check_doc "--tree --json" "
assert keys(d) == ['bucket', 'created', 'snapshots', 'forks'] and d['bucket'] == 'src', d
assert [s['version'] for s in d['snapshots']] == ['$newest', '$hostile', '$unused', '$base'], d
assert d['snapshots'][1]['name'] == 'evil\x1b[31mred'
b = d['snapshots'][3]
assert keys(b) == ['version', 'name', 'created', 'listed', 'forks'] and b['listed'] is True
assert [f['bucket'] for f in b['forks']] == ['run-1', 'run-2'], b
x = b['forks'][0]['snapshots'][0]
assert x['version'] == '$inner' and [f['bucket'] for f in x['forks']] == ['run-1-x'], x
assert x['forks'][0]['snapshots'] == [] and x['forks'][0]['forks'] == []
assert d['forks'] == []
"
expect_rc "--tree of a missing bucket" 3 tf bucket ls --tree --forks-of nothing-here
check_contains "--tree of a missing bucket" "$(stderr)" "nothing-here does not exist"

# ---- snapshot ls: FORKS

step "snapshot ls counts the forks made from each snapshot"
expect_rc "snapshot ls --json" 0 tf snapshot ls src --json
check_doc "snapshot ls FORKS" "
assert keys(d['snapshots'][0]) == ['version', 'name', 'created', 'forks'], d
assert {s['version']: s['forks'] for s in d['snapshots']} == \
  {'$newest': 0, '$hostile': 0, '$unused': 0, '$base': 2}, d
"
expect_rc "snapshot ls (table)" 0 tf snapshot ls src
check_contains "FORKS column" "$(head -1 "$OUT/stdout")" "FORKS"
[[ "$(grep "^$base " "$OUT/stdout")" =~ \ 2$ ]] || fail "FORKS of base: $(stdout)"
expect_rc "snapshot ls run-1" 0 tf snapshot ls run-1 --json
check_doc "a fork's snapshot used by a fork of the fork" "assert d['snapshots'][0]['forks'] == 1, d"

# ---- snapshot prune: a careless user

step "prune: bad options are refused before anything is sent (exit 64)"
# Nothing listens on port 1: a request sent would fail with exit 5, not 64.
for args in "src" "src --keep-last 1 --older-than 1d" "src --keep-last -1" "src --keep-last x" \
  "src --older-than 0s" "src --older-than soon" "Bad_Name --keep-last 1"; do
  # shellcheck disable=SC2086
  expect_rc "prune $args" 64 tf --endpoint-url http://127.0.0.1:1 -vv snapshot prune $args
  check_not_contains "prune $args: nothing sent" "$(stderr)" " -> "
done
expect_rc "prune (no rule)" 64 tf snapshot prune src
check_contains "no rule: what to do" "$(stderr)" "--keep-last N or --older-than DURATION"
expect_rc "prune (both rules)" 64 tf snapshot prune src --keep-last 1 --older-than 1d
check_contains "two rules" "$(stderr)" "do not go together"

step "prune: a bucket that does not exist is exit 3"
expect_rc "prune nothing-here" 3 tf snapshot prune nothing-here --keep-last 0
expect_rc "prune nothing-here --json" 3 tf snapshot prune nothing-here --keep-last 0 --json
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["exit_code"]==3 and e["code"]=="NoSuchBucket", e' \
  "$OUT/stderr" || fail "prune missing bucket error: $(stderr)"

step "prune --dry-run: what would go, no delete sent"
expect_rc "prune --keep-last 0 --unused --dry-run" 0 tf -vv snapshot prune src --keep-last 0 --unused --dry-run --json
check_not_contains "dry run: no DELETE" "$(stderr)" "DELETE "
check_doc "dry run" "
assert keys(d) == ['bucket', 'dry_run', 'snapshots'] and d['dry_run'] is True, d
assert [(s['version'], s['status'], s['forks']) for s in d['snapshots']] == [
  ('$newest', 'would-delete', 0), ('$hostile', 'would-delete', 0),
  ('$unused', 'would-delete', 0), ('$base', 'kept', 2)], d
"
expect_rc "dry run left them" 0 tf snapshot ls src --json
check_doc "dry run left them" "assert len(d['snapshots']) == 4, d"

step "prune --keep-last 1 --unused: the newest and the used one stay"
expect_rc "prune --keep-last 1 --unused" 0 tf -vv snapshot prune src --keep-last 1 --unused --json
check_doc "prune" "
assert [(s['version'], s['status']) for s in d['snapshots']] == [
  ('$hostile', 'deleted'), ('$unused', 'deleted'), ('$base', 'kept')], d
"
[[ $(grep -c "DELETE $ENDPOINT/src -> 204" "$OUT/stderr") == 2 ]] || fail "two deletes: $(stderr)"
expect_rc "after prune" 0 tf snapshot ls src --json
check_doc "after prune" "assert [s['version'] for s in d['snapshots']] == ['$newest', '$base'], d"

step "prune twice: nothing more to do, exit 0"
expect_rc "prune again" 0 tf -vv snapshot prune src --keep-last 1 --unused --json
check_not_contains "prune again: no DELETE" "$(stderr)" "DELETE "
check_doc "prune again" "assert [(s['version'], s['status']) for s in d['snapshots']] == [('$base', 'kept')], d"
expect_rc "prune again (table)" 0 tf snapshot prune src --keep-last 1 --unused
check_contains "kept, said why" "$(stdout)" "kept (forks use it)"

step "prune --keep-last 0 --unused on a fork: a fork of the fork keeps its snapshot"
expect_rc "prune run-1" 0 tf snapshot prune run-1 --keep-last 0 --unused --json
check_doc "prune run-1" "assert [(s['version'], s['status'], s['forks']) for s in d['snapshots']] == [('$inner', 'kept', 1)], d"
expect_rc "run-1-x still reads" 0 tf fork head run-1-x --json
check_doc "run-1-x" "assert d['buckets'][0]['fork_source_snapshot'] == '$inner', d"

step "prune --older-than: only what is older than the cut-off"
expect_rc "nothing that old" 0 tf snapshot prune src --older-than 1d --json
check_doc "nothing that old" "assert d['snapshots'] == [], d"
expect_rc "nothing that old (table)" 0 tf snapshot prune src --older-than 1d
check_contains "nothing to prune said" "$(stderr)" "Nothing to prune"
expect_rc "snapshot take old" 0 tf snapshot take src --name old
old=$(stdout)
# Wait (generous deadline) until the snapshot is more than 1 s old as the dry run sees it.
deadline=$((SECONDS + 30))
until "$TFORK" snapshot prune src --older-than 1s --dry-run --json >"$OUT/stdout" 2>"$OUT/stderr" &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(s["version"]==sys.argv[2] for s in d["snapshots"]) else 1)' "$OUT/stdout" "$old"; do
  ((SECONDS < deadline)) || fail "snapshot $old never became older than 1 s: $(stdout)"
  sleep 0.2
done
expect_rc "prune --older-than 1s --unused" 0 tf snapshot prune src --older-than 1s --unused --json
check_doc "older-than" "
st = {s['version']: s['status'] for s in d['snapshots']}
assert st['$old'] == 'deleted' and st['$base'] == 'kept', d
"
expect_rc "after older-than" 0 tf snapshot ls src --json
check_doc "after older-than" "v = [s['version'] for s in d['snapshots']]; assert '$old' not in v and '$base' in v, d"

step "prune --keep-last 0 without --unused deletes even a used snapshot; the forks stay"
expect_rc "prune all" 0 tf snapshot prune run-1 --keep-last 0 --json
check_doc "prune all" "assert [(s['version'], s['status'], s['forks']) for s in d['snapshots']] == [('$inner', 'deleted', 1)], d"
expect_rc "fork of the fork still there" 0 tf bucket ls --forks-of run-1 --json
check_doc "fork of fork" "assert [b['bucket'] for b in d['buckets']] == ['run-1-x'], d"
expect_rc "tree: the snapshot no longer listed" 0 tf bucket ls --tree --forks-of run-1
check_contains "tree: unlisted" "$(stdout)" "snapshot $inner  (no longer listed)"

echo "PASS $TEST_NAME"
