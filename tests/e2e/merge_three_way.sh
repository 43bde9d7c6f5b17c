#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 23 §1): a merge looks at three listings first (the fork now, its base, the
# parent now) and never replaces a change the parent made meanwhile without being told to.
#   - `fork diff --against-parent` shows what each side changed and which keys conflict;
#   - `fork merge --dry-run` prints the plan and writes nothing;
#   - `fork merge` with a conflict is exit 6, the keys listed (20, then a count), the parent
#     untouched; `--strategy fork-wins` merges and says how many changes it replaced.
# The real binary against a real `tfork serve`; the parent is read with curl.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

step "setup: a dataset, a fork of it, and changes on both sides"
expect_rc "bucket create data" 0 tf bucket create data --snapshots
for k in a b c d g; do put data "$k.txt" "$k-base"; done
expect_rc "fork create m" 0 tf fork create data m-1 --keys none -q
put m-1 a.txt a-fork     # the fork alone
put m-1 b.txt b-fork     # both: a conflict
s3 DELETE /m-1/c.txt     # deleted in the fork, changed in the parent: a conflict
put m-1 e.txt e-fork     # added in the fork
put m-1 g.txt g-same     # both to the same object: no conflict
put data b.txt b-parent
put data c.txt c-parent
put data d.txt d-parent  # the parent alone
put data f.txt f-parent  # added in the parent
put data g.txt g-same

step "fork diff --against-parent: each side's change and the conflicts"
expect_rc "diff --against-parent" 0 tf fork diff m-1 --against-parent --json
check_eq "keys" "a.txt:modified:-:False b.txt:modified:modified:True c.txt:deleted:modified:True d.txt:-:modified:False e.txt:added:-:False f.txt:-:added:False g.txt:modified:modified:False" \
  "$(json_get "' '.join('%s:%s:%s:%s' % (k['key'], k['fork'] or '-', k['parent'] or '-', k['conflict']) for k in d['keys'])" <"$OUT/stdout")"
check_eq "conflict_count" 2 "$(json_get 'd["conflict_count"]' <"$OUT/stdout")"
expect_rc "diff --against-parent (table)" 0 tf fork diff m-1 --against-parent
check_contains "table summary" "$(stdout)" "2 conflicts"

step "fork merge --dry-run: the plan, nothing written"
expect_rc "merge --dry-run" 0 tf fork merge m-1 --dry-run --json
check_eq "plan" "1 3 1 2" \
  "$(json_get "'%d %d %d %d' % (d['changes']['added'], d['changes']['modified'], d['changes']['deleted'], d['conflict_count'])" <"$OUT/stdout")"
check_eq "planned keys" "a.txt b.txt c.txt e.txt g.txt" \
  "$(json_get "' '.join(k['key'] for k in d['keys'])" <"$OUT/stdout")"
check_eq "parent a.txt after the dry run" a-base "$(body data a.txt)"
check_not_contains "no before-merge snapshot" "$(tf snapshot ls data)" "before-merge m-1"

step "fork merge with conflicts: exit 6, the keys named, the parent untouched"
expect_rc "merge refused" 6 tf fork merge m-1 --yes --json
check_contains "the keys in the error" "$(cat "$OUT/stderr")" "b.txt, c.txt"
check_contains "the way out" "$(cat "$OUT/stderr")" "--strategy fork-wins"
check_eq "conflicts listed" "b.txt c.txt" "$(json_get "' '.join(c['key'] for c in d['conflicts'])" <"$OUT/stdout")"
check_eq "parent a.txt" a-base "$(body data a.txt)"
check_eq "parent b.txt" b-parent "$(body data b.txt)"
check_not_contains "no snapshot taken" "$(tf snapshot ls data)" "before-merge m-1"

step "--strategy fork-wins: merged, and the result says what it replaced"
expect_rc "merge fork-wins" 0 tf fork merge m-1 --yes --strategy fork-wins --json
check_eq "replaced" 2 "$(json_get 'd["replaced"]' <"$OUT/stdout")"
check_eq "parent a.txt" a-fork "$(body data a.txt)"
check_eq "parent b.txt" b-fork "$(body data b.txt)"
check_eq "parent c.txt" "<404>" "$(body data c.txt)"
check_eq "parent d.txt (its own change kept)" d-parent "$(body data d.txt)"
check_eq "parent e.txt" e-fork "$(body data e.txt)"
check_eq "parent f.txt (its own addition kept)" f-parent "$(body data f.txt)"
expect_rc "--strategy nonsense" 64 tf fork merge m-1 --yes --strategy parent-wins

step "more than 20 conflicts: 20 listed, the rest counted"
expect_rc "fork create n" 0 tf fork create data n-1 --keys none -q
for i in $(seq -w 1 25); do
  put n-1 "many/$i" fork
  put data "many/$i" parent
done
expect_rc "merge n-1 refused" 6 tf fork merge n-1 --yes --json
check_eq "count and listed" "25 20" "$(json_get "'%d %d' % (d['conflict_count'], len(d['conflicts']))" <"$OUT/stdout")"
expect_rc "merge n-1 refused (table)" 6 tf fork merge n-1 --yes
check_contains "the rest counted" "$(stdout)" "... and 5 more"
check_eq "parent many/01" parent "$(body data many/01)"

expect_rc "teardown" 0 tf teardown m-1 n-1 -q
