#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 23 §1, cli.md §14): `fork merge FORK --prefix P` promotes only the fork's
# changes under P, by server-side CopyObject and DeleteObject into the parent, after the
# `before-merge FORK` snapshot.
#   - only the prefixes' added, modified and deleted keys land; every other key of the parent
#     stays as it was; the snapshot holds the parent's old state;
#   - a conflict inside the prefixes is exit 6 (nothing written); one outside does not block;
#     --strategy fork-wins promotes it;
#   - --dry-run prints the plan and writes nothing;
#   - Ctrl-C halfway is exit 130; the re-run finishes, copies nothing twice (the keys already
#     copied keep their Last-Modified; the re-run's -vv log has one copy per key left) and
#     takes no second snapshot;
#   - bad --prefix values are exit 64 before anything is sent.
# The real binary against a real `tfork serve`; the parent is read with curl.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

# listing BUCKET PREFIX: "key etag last-modified" per line, in key order.
listing() {
  s3 GET "/$1?list-type=2&max-keys=1000&prefix=${2//\//%2F}"
  check_status 200
  /usr/bin/python3 -c '
import re, sys
for m in re.finditer(r"<Contents>(.*?)</Contents>", sys.stdin.read(), re.S):
    c = m.group(1)
    get = lambda tag: re.search("<%s>(.*?)</%s>" % (tag, tag), c, re.S).group(1)
    print(get("Key"), get("ETag").replace("&quot;", ""), get("LastModified"))' <<<"$S3_BODY"
}
snapshots_named() { # snapshots_named BUCKET NAME: how many snapshots of BUCKET have NAME
  tf snapshot ls "$1" --json | json_get "len([s for s in d['snapshots'] if s['name'] == '$2'])"
}

step "setup: a dataset, a fork of it, changes in and out of the prefixes on both sides"
expect_rc "bucket create data" 0 tf bucket create data --snapshots
for k in keep/a keep/b p/a p/b p/c q/x other/o; do put data "$k" "$k-base"; done
expect_rc "fork create f-1" 0 tf fork create data f-1 --keys none -q
put f-1 p/a p/a-fork        # modified under p/
s3 DELETE /f-1/p/b          # deleted under p/
put f-1 'p/n%20new' p/n-fork  # added under p/ (a key that needs encoding in x-amz-copy-source)
put f-1 q/x q/x-fork        # modified under q/ ...
put data q/x q/x-parent     # ... and in the parent: a conflict inside q/
put f-1 q/sub/y q/y-fork    # added under q/
put f-1 other/o o-fork      # outside every prefix, changed on both sides: a conflict outside
put data other/o o-parent
put f-1 keep/a keep-fork    # outside every prefix: never promoted

step "bad --prefix values: exit 64, one line, before anything is sent"
# An endpoint nothing listens on: anything sent would be exit 5, not 64.
expect_rc "empty prefix" 64 tf --endpoint-url http://127.0.0.1:1 fork merge f-1 --prefix '' --yes
check_contains "empty prefix message" "$(stderr)" "invalid --prefix '': must not be empty"
expect_rc "control character" 64 tf --endpoint-url http://127.0.0.1:1 fork merge f-1 \
  --prefix $'p/\x01' --yes
check_contains "control character message" "$(stderr)" "invalid --prefix 'p/\\x01'"
check_eq "one error line (then the usage hint)" 1 "$(grep -c 'error:' "$OUT/stderr")"

step "--dry-run --prefix p/ --prefix q/: the plan within the prefixes, nothing written"
expect_rc "dry run" 0 tf fork merge f-1 --prefix q/ --prefix p/ --dry-run --json
check_eq "plan keys" "p/a:modified:copy p/b:deleted:delete p/n new:added:copy q/sub/y:added:copy q/x:modified:copy" \
  "$(json_get "' '.join('%s:%s:%s' % (k['key'], k['change'], k['action']) for k in d['keys'])" <"$OUT/stdout")"
check_eq "plan counts" "['p/', 'q/'] 4 1 0 1" \
  "$(json_get "'%s %d %d %d %d' % (d['prefixes'], d['copy'], d['delete'], d['skip'], d['conflict_count'])" <"$OUT/stdout")"
check_eq "parent p/a after the dry run" p/a-base "$(body data p/a)"
check_eq "parent p/b after the dry run" p/b-base "$(body data p/b)"
check_eq "no snapshot after the dry run" 0 "$(snapshots_named data "before-merge f-1")"

step "a conflict inside the prefixes: exit 6, nothing written"
expect_rc "promotion refused" 6 tf fork merge f-1 --prefix p/ --prefix q/ --yes --json
check_contains "the key named" "$(stderr)" "q/x"
check_not_contains "the conflict outside is not counted" "$(stderr)" "other/o"
check_eq "parent p/a" p/a-base "$(body data p/a)"
check_eq "no snapshot after the refusal" 0 "$(snapshots_named data "before-merge f-1")"

step "--prefix p/: a conflict outside p/ does not block; only p/'s changes land"
before_keep=$(listing data keep/)
before_other=$(listing data other/)
expect_rc "promote p/" 0 tf fork merge f-1 --prefix p/ --yes --json
check_eq "counts" "3 2 1 0 []" \
  "$(json_get "'%d %d %d %d %s' % (d['copied'] + d['deleted'], d['copied'], d['deleted'], d['skipped'], d['failed'])" <"$OUT/stdout")"
before=$(json_get 'd["before_snapshot"]' <"$OUT/stdout")
check_eq "parent p/a" p/a-fork "$(body data p/a)"
check_eq "parent p/b (deleted)" "<404>" "$(body data p/b)"
check_eq "parent 'p/n new' (added)" p/n-fork "$(body data 'p/n%20new')"
check_eq "parent p/c (unchanged)" p/c-base "$(body data p/c)"
check_eq "parent q/x (outside p/)" q/x-parent "$(body data q/x)"
check_eq "parent q/sub/y (outside p/)" "<404>" "$(body data q/sub/y)"
check_eq "parent other/o (outside p/)" o-parent "$(body data other/o)"
check_eq "parent keep/ untouched (ETag, Last-Modified)" "$before_keep" "$(listing data keep/)"
check_eq "parent other/ untouched" "$before_other" "$(listing data other/)"
check_eq "one before-merge snapshot" 1 "$(snapshots_named data "before-merge f-1")"
check_eq "the snapshot holds p/a as it was" p/a-base "$(body data p/a "$before")"
check_eq "the snapshot holds p/b" p/b-base "$(body data p/b "$before")"
check_eq "the snapshot lacks 'p/n new'" "<404>" "$(body data 'p/n%20new' "$before")"
expect_rc "promote p/ (table)" 0 tf fork merge f-1 --prefix p/ --yes
check_contains "table: nothing left" "$(stdout)" "0 copied, 0 deleted, 3 skipped"
check_eq "nothing left: no second snapshot" 1 "$(snapshots_named data "before-merge f-1")"

step "--prefix q/ --strategy fork-wins: the conflict inside q/ promoted, and said"
expect_rc "promote q/ fork-wins" 0 tf fork merge f-1 --prefix q/ --strategy fork-wins --yes --json
check_eq "copied, replaced" "2 1" "$(json_get "'%d %d' % (d['copied'], d['replaced'])" <"$OUT/stdout")"
check_eq "parent q/x" q/x-fork "$(body data q/x)"
check_eq "parent q/sub/y" q/y-fork "$(body data q/sub/y)"
check_eq "parent other/o still its own" o-parent "$(body data other/o)"
check_eq "parent keep/a still the base" keep/a-base "$(body data keep/a)"

step "interrupted halfway (SIGINT): exit 130; the re-run finishes and copies nothing twice"
expect_rc "fork create g-1" 0 tf fork create data g-1 --keys none -q
for i in $(seq -w 1 40); do put g-1 "big/$i" "big $i from g-1"; done
stop_server
start_server --latency 150
"$TFORK" --concurrency 2 --json fork merge g-1 --prefix big/ --yes >"$OUT/first.json" 2>"$OUT/first.err" &
merge_pid=$!
deadline=$((SECONDS + 60))
until (($(listing data big/ | grep -c .) >= 4)); do
  ((SECONDS < deadline)) || fail "no copy landed within 60 s: $(cat "$OUT/first.err")"
  kill -0 "$merge_pid" 2>/dev/null || fail "the promotion ended before it could be interrupted"
done
kill -INT "$merge_pid"
rc=0
wait "$merge_pid" || rc=$?
check_eq "exit after SIGINT" 130 "$rc"
check_contains "what to do now" "$(cat "$OUT/first.err")" "run the same fork merge again"
sleep 0.5 # the server finishes the requests it had in flight
landed=$(listing data big/)
landed_count=$(grep -c . <<<"$landed")
((landed_count > 0 && landed_count < 40)) || fail "expected a partial promotion, found $landed_count keys"
first_snapshot=$(json_get 'd["before_snapshot"]' <"$OUT/first.json")
check_eq "the interrupted run's snapshot" 1 "$(snapshots_named data "before-merge g-1")"
stop_server
start_server
expect_rc "re-run" 0 tf -vv --json fork merge g-1 --prefix big/ --yes
check_eq "re-run: copied what was left, skipped what had landed" "$((40 - landed_count)) $landed_count 0" \
  "$(json_get "'%d %d %d' % (d['copied'], d['skipped'], len(d['failed']))" <"$OUT/stdout")"
check_eq "re-run: the interrupted run's snapshot, no second one" "$first_snapshot True 1" \
  "$(json_get "d['before_snapshot']" <"$OUT/stdout") $(json_get "str(d['before_snapshot_reused'])" <"$OUT/stdout") $(snapshots_named data "before-merge g-1")"
check_eq "re-run: one CopyObject per key left (-vv)" "$((40 - landed_count))" \
  "$(grep -cE 'PUT [^ ]*/data/big/[0-9]+ -> 200' "$OUT/stderr" || true)"
for key in $(cut -d' ' -f1 <<<"$landed"); do
  check_contains "re-run: $key not copied again (same ETag and Last-Modified)" \
    "$(listing data big/)" "$(grep "^$key " <<<"$landed")"
done
check_eq "every key promoted" 40 "$(listing data big/ | grep -c .)"
check_eq "big/07" "big 07 from g-1" "$(body data big/07)"

expect_rc "teardown" 0 tf teardown f-1 g-1 -q
