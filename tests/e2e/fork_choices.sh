#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end, the real binary against a real `tfork serve` (127.0.0.1, port 0): the choices an
# operator makes around a run, each checked by what the forks then hold.
#   - `fork create --snapshot NAME|VERSION [--any-version]` (issue 7 §3): a name is its newest
#     snapshot (said on stderr when several share it), an unknown name or an unlisted version
#     is exit 3 before any fork exists, and --any-version forks that point in time.
#   - `run --keep failed|all|none` (issue 8): which forks outlive the run.
#   - teardown of a fork that has forks (issue 7 §4, issue 21 §2): by name it is left (its key
#     revoked) unless --recursive; --manifest always takes the forks its agents made, children
#     first.
#   - `fork merge` on a terminal (issue 8, issue 26 §3): it asks; 'n' or Ctrl-D change nothing
#     (exit 1), Ctrl-C ends it at once (130), 'y' merges.
#   - teardown by names and by --source --prefix revokes the keys an agent minted for its own
#     fork under any name, and reports (keeps) a key that also reaches another bucket.
#   - `fork exec` (issue 8): --parallel bounds the agents running at once, --logs, --timeout,
#     the result document (exit code, signal, seconds), exit 7, the ends in the manifest.
#   - a hostile name in an error message reaches stderr escaped (issue 7 §5).
#   - `teardown --source S --all --older-than D` keeps younger forks and removes older ones.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
start_server

OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"


# object_in BUCKET KEY: the object's body, or "<STATUS>" when the GET is refused.
object_in() {
  s3 GET "/$1/$2"
  if [[ "$S3_STATUS" == 200 ]]; then printf '%s' "$S3_BODY"; else printf '<%s>' "$S3_STATUS"; fi
}

# ---- a source whose one object changes between snapshots

step "setup: src, two snapshots named base and one named other, one object changing"
expect_rc "bucket create src" 0 tf bucket create src --snapshots
put src a.txt one
expect_rc "snapshot take base (1)" 0 tf snapshot take src --name base
first=$(stdout)
put src a.txt two
expect_rc "snapshot take base (2)" 0 tf snapshot take src --name base
second=$(stdout)
put src a.txt three
expect_rc "snapshot take other" 0 tf snapshot take src --name other
[[ "$first" =~ ^[0-9]+$ && "$second" =~ ^[0-9]+$ ]] || fail "snapshot versions: [$first] [$second]"
((second > first + 1)) || fail "the two snapshots are too close to have a point between them"

step "--snapshot NAME: the newest snapshot of that name, and stderr says there were two"
expect_rc "fork create --snapshot base" 0 tf fork create src by-name --snapshot base --keys none --json
check_eq "the manifest's snapshot" "$second" "$(json_get 'd["snapshot"]' <"$OUT/stdout")"
check_contains "stderr" "$(stderr)" "2 snapshots of src are named 'base'; using the newest, $second"
check_eq "by-name holds the second state" two "$(object_in by-name a.txt)"

step "--snapshot VERSION that is listed: that snapshot"
expect_rc "fork create --snapshot first" 0 tf fork create src by-version --snapshot "$first" --keys none -q
check_eq "by-version holds the first state" one "$(object_in by-version a.txt)"

step "an unknown name: exit 3, nothing made, the error says where to look"
expect_rc "fork create --snapshot nosuch" 3 tf fork create src no-name --snapshot nosuch --keys none
check_contains "stderr" "$(stderr)" "src has no snapshot named 'nosuch' (tfork snapshot ls src lists them)"
check_eq "no-name exists" 404 "$(bucket_status no-name)"

step "the same cause is said once: every row not-attempted, with no error of its own (issue 26 §3)"
expect_rc "fork create 3 names --snapshot nosuch" 3 tf fork create src nn-1 nn-2 nn-3 --snapshot nosuch --keys none
check_eq "rows not-attempted" 3 "$(grep -c ' not-attempted' "$OUT/stdout")"
check_eq "times the cause is said (stdout and stderr)" 1 "$(cat "$OUT/stdout" "$OUT/stderr" | grep -c "no snapshot named 'nosuch'")"
expect_rc "the same, --json" 3 tf fork create src nn-1 nn-2 --snapshot nosuch --keys none --json
check_eq "JSON rows without an error" "not-attempted None not-attempted None" \
  "$(json_get '" ".join(f["status"] + " " + str(f.get("error")) for f in d["forks"])' <"$OUT/stdout")"

# One nanosecond after the first snapshot: before the second write reached the store.
between=$((first + 1))
step "a version that no snapshot has: exit 3 before any fork, naming --any-version"
expect_rc "fork create --snapshot between" 3 tf fork create src unlisted --snapshot "$between" --keys none
check_contains "stderr" "$(stderr)" "snapshot $between is not listed for src"
check_contains "stderr" "$(stderr)" "--any-version"
check_eq "unlisted exists" 404 "$(bucket_status unlisted)"

step "--any-version: the same version forks that point in time"
expect_rc "fork create --any-version" 0 \
  tf fork create src any-point --snapshot "$between" --any-version --keys none --json
check_eq "the manifest's snapshot" "$between" "$(json_get 'd["snapshot"]' <"$OUT/stdout")"
check_eq "any-point holds the state at that time" one "$(object_in any-point a.txt)"
check_eq "the source moved on" three "$(object_in src a.txt)"

step "--any-version with a name is refused before anything is sent"
expect_rc "--any-version with a name" 64 tf fork create src named-any --snapshot base --any-version --keys none
check_eq "named-any exists" 404 "$(bucket_status named-any)"

expect_rc "clean up the snapshot forks" 0 tf teardown by-name by-version any-point -q

# ---- run --keep

# An agent that writes its index into its fork, then fails when it is agent 2 (the directory
# it writes through is shared with each agent's sandbox: --env, --bind).
cat >"$WORK/agent.sh" <<'SH'
#!/usr/bin/env bash
# Writes its index into its own fork with curl's SigV4, then fails when it is agent 2.
set -euo pipefail
printf '%s' "$TFORK_AGENT_INDEX" >"$TMPDIR_AGENT/$TFORK_AGENT_INDEX"
curl -sS --fail --aws-sigv4 "aws:amz:auto:s3" \
  --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
  -T "$TMPDIR_AGENT/$TFORK_AGENT_INDEX" "$AWS_ENDPOINT_URL/$TFORK_BUCKET/agent.txt"
test "$TFORK_AGENT_INDEX" != 2
SH
chmod +x "$WORK/agent.sh"
export TMPDIR_AGENT="$WORK/agent-tmp"
mkdir -p "$TMPDIR_AGENT"

# kept_after RUN: the forks of src named RUN-<n> that exist, space-separated, in order.
kept_after() {
  local n out=()
  for n in 1 2 3; do
    [[ "$(bucket_status "$1-$n")" == 200 ]] && out+=("$1-$n")
  done
  printf '%s' "${out[*]}"
}

step "run --keep failed: only the failed agent's fork stays, with its key and its write"
expect_rc "run --keep failed" 7 tf run src -n 3 --prefix kf --keep failed -q \
  --env TMPDIR_AGENT --bind "$TMPDIR_AGENT" -- "$WORK/agent.sh"
check_eq "forks left" "kf-2" "$(kept_after kf)"
check_eq "kf-2 holds its agent's write" 2 "$(object_in kf-2 agent.txt)"
check_eq "kf-2's key in the manifest" live \
  "$(json_get '"live" if [f for f in d["forks"] if f["bucket"] == "kf-2"][0].get("access_key_id") else "none"' <kf.manifest.json)"

step "run --keep all: every fork stays, the failed one too"
expect_rc "run --keep all" 7 tf run src -n 3 --prefix ka --keep all -q \
  --env TMPDIR_AGENT --bind "$TMPDIR_AGENT" -- "$WORK/agent.sh"
check_eq "forks left" "ka-1 ka-2 ka-3" "$(kept_after ka)"
check_eq "ka-3 holds its agent's write" 3 "$(object_in ka-3 agent.txt)"

step "run --keep none: nothing stays, whatever the agents did"
expect_rc "run --keep none" 7 tf run src -n 3 --prefix kn --keep none -q \
  --env TMPDIR_AGENT --bind "$TMPDIR_AGENT" -- "$WORK/agent.sh"
check_eq "forks left" "" "$(kept_after kn)"
check_eq "keys of kn left" "" "$(keys_named 'kn-*')"

step "run --keep nonsense is refused before anything is made"
expect_rc "run --keep nonsense" 64 tf run src -n 1 --prefix kx --keep some -q -- true
check_eq "forks left" "" "$(kept_after kx)"

expect_rc "teardown kf and ka" 0 tf teardown --manifest kf.manifest.json --manifest ka.manifest.json -q
check_eq "forks left after teardown" "" "$(kept_after kf)$(kept_after ka)"
check_eq "keys of kf and ka left" "" "$(keys_named 'k[fa]-*')"

# ---- teardown of a fork that has forks

step "setup: a run r of two forks, and a fork of r-1 made by its agent with the agent's own key"
expect_rc "fork create r" 0 tf fork create src -n 2 --prefix r -q
agent_key=$(key_of r.manifest.json r-1)
expect_rc "the agent forks its fork" 0 env -u TIGRIS_STORAGE_ACCESS_KEY_ID -u TIGRIS_STORAGE_SECRET_ACCESS_KEY \
  AWS_ACCESS_KEY_ID="${agent_key%%:*}" AWS_SECRET_ACCESS_KEY="${agent_key#*:}" \
  "$TFORK" fork create r-1 r-1-kid --keys none -q
check_eq "r-1-kid" 200 "$(bucket_status r-1-kid)"

step "teardown r-1 by name without --recursive: r-1 stays for its fork, but its key is revoked"
expect_rc "teardown r-1" 6 tf teardown r-1 --json
check_eq "r-1" 200 "$(bucket_status r-1)"
check_contains "r-1 reported with --recursive named" "$(stdout)$(stderr)" "--recursive"
check_eq "r-1's key" "<403>" "$(s3 --as "$agent_key" GET "/r-1/a.txt"; printf '<%s>' "$S3_STATUS")"
check_eq "r-1's key listed" "" "$(keys_named 'r-1-key')"

step "teardown --manifest: the agent's fork is part of the run: the child first, then r-1"
expect_rc "teardown r" 0 tf teardown --manifest r.manifest.json -q
check_eq "r-1-kid" 404 "$(bucket_status r-1-kid)"
check_eq "r-1" 404 "$(bucket_status r-1)"
check_eq "r-2" 404 "$(bucket_status r-2)"
expect_rc "fork ls src" 0 tf fork ls src --json
check_eq "forks of src" "[]" "$(json_get '[f["bucket"] for f in (d if isinstance(d, list) else d["forks"])]' <"$OUT/stdout")"
check_eq "keys of r left" "" "$(keys_named 'r-*')"
check_eq "src untouched" three "$(object_in src a.txt)"

# ---- fork merge asks on a terminal (issue 8)

step "setup: a fork m-1 of src that wrote merged.txt"
expect_rc "fork create m" 0 tf fork create src m-1 --keys none -q
put m-1 merged.txt "from m-1"

step "fork merge on a terminal: the question names both buckets; 'n' changes nothing"
answer_on_pty n fork merge m-1
check_eq "exit after n" 1 "$RC"
check_contains "the question" "$(cat "$WORK/pty.err")" "Merge fork m-1 into src? This writes into src"
check_contains "the refusal" "$(cat "$WORK/pty.err")" "not confirmed; nothing was changed"
check_eq "src after n" "<404>" "$(object_in src merged.txt)"

step "fork merge on a terminal: Ctrl-D is no"
answer_on_pty EOF fork merge m-1
check_eq "exit after Ctrl-D" 1 "$RC"
check_eq "src after Ctrl-D" "<404>" "$(object_in src merged.txt)"

step "fork merge on a terminal: Ctrl-C at the question ends it at once (130)"
answer_on_pty SIGINT fork merge m-1
check_eq "exit after Ctrl-C" 130 "$RC"
check_eq "src after Ctrl-C" "<404>" "$(object_in src merged.txt)"

step "fork merge on a terminal: 'y' merges"
answer_on_pty y fork merge m-1
check_eq "exit after y" 0 "$RC"
check_eq "src after y" "from m-1" "$(object_in src merged.txt)"
expect_rc "teardown m-1" 0 tf teardown m-1 -q

# ---- keys go with their forks, whatever their names (issue 7 §4)

# mint_key AS NAME BUCKET:ROLE...: CreateAccessKeyWithBucketsRole signed by AS (AK:SK); prints
# the new key's id.
mint_key() {
  local as=$1 name=$2 roles="" pair
  shift 2
  for pair in "$@"; do roles+="${roles:+,}{\"bucket\":\"${pair%%:*}\",\"role\":\"${pair#*:}\"}"; done
  iam "Action=CreateAccessKeyWithBucketsRole" \
    "Req=$(urlencode "{\"req_uuid\":\"$(cat /proc/sys/kernel/random/uuid)\",\"name\":\"$name\",\"buckets_role\":[$roles]}")" \
    --as "$as"
  check_status 200
  json_get 'd["CreateAccessKeyResult"]["AccessKey"]["AccessKeyId"]' <<<"$S3_BODY"
}

step "setup: run w; agent 1 mints itself a helper key; the operator shares one key between w-2 and src"
expect_rc "fork create w" 0 tf fork create src -n 2 --prefix w -q
helper=$(mint_key "$(key_of w.manifest.json w-1)" scratch-helper w-1:Editor)
shared=$(mint_key "$ROOT_AK:$ROOT_SK" shared-reader w-2:ReadOnly src:ReadOnly)
check_eq "the helper key is listed" "$helper" "$(keys_named scratch-helper)"

step "teardown by names: the agent's helper key goes too; the shared key is reported and kept"
expect_rc "teardown w-1 w-2" 0 tf --json teardown w-1 w-2
check_eq "w-1" 404 "$(bucket_status w-1)"
check_eq "w-2" 404 "$(bucket_status w-2)"
check_eq "helper key left" "" "$(keys_named scratch-helper)"
check_eq "w-*-key left" "" "$(keys_named 'w-*')"
check_eq "shared key kept" "$shared" "$(keys_named shared-reader)"
check_contains "the shared key is reported" "$(stdout)$(stderr)" "$shared"

step "teardown --source --prefix: an agent's key of another name goes with its fork"
expect_rc "fork create v" 0 tf fork create src -n 1 --prefix v -q
vhelper=$(mint_key "$(key_of v.manifest.json v-1)" v1-tool v-1:ReadOnly)
expect_rc "teardown --source src --prefix v" 0 tf teardown --source src --prefix v -q
check_eq "v-1" 404 "$(bucket_status v-1)"
check_eq "v1-tool left" "" "$(keys_named v1-tool)"
check_eq "v-1-key left" "" "$(keys_named v-1-key)"
[[ -n "$vhelper" ]] || fail "no key was minted for v-1"

# ---- control characters never reach the terminal raw (issue 7 §5)

step "a hostile name in an error message is printed escaped, in text and in JSON"
expect_rc "fork create --snapshot <escape>" 3 tf fork create src esc-1 --snapshot $'no\x1b[2Jsuch' --keys none
[[ "$(stderr)" != *$'\x1b'* ]] || fail "a raw escape reached stderr: $(stderr | od -c | head -3)"
check_contains "escaped name" "$(stderr)" 'no\x1b[2Jsuch'
expect_rc "bucket create <escape>" 64 tf bucket create $'ev\x1b]0;pwned\x07il'
[[ "$(stderr)" != *$'\x1b'* && "$(stderr)" != *$'\x07'* ]] || fail "a raw control character reached stderr"
check_contains "escaped bucket name" "$(stderr)" 'ev\x1b]0;pwned\x07il'
expect_rc "--json fork create --snapshot <escape>" 3 tf --json fork create src esc-1 --snapshot $'no\x1b[2Jsuch' --keys none
[[ "$(stderr)" != *$'\x1b'* ]] || fail "a raw escape reached the JSON error"
# The message names the snapshot as the text table does: escaped, never the raw byte.
check_eq "the JSON error names the snapshot, escaped" True \
  "$(python3 -c 'import json, sys; m = json.loads(sys.stdin.read())["error"]["message"]; print("no\\x1b[2Jsuch" in m and "\x1b" not in m)' <"$OUT/stderr")"

# ---- fork exec: --parallel, --logs, --timeout, the result document and exit 7 (issue 8)

cat >"$WORK/exec-agent.sh" <<'SH'
#!/usr/bin/env bash
# Agent i: notes how many agents run beside it, says hello, then agent 1 exits 0, agent 2
# exits 3 and agent 3 waits for a file that never comes (its --timeout ends it).
set -u
dir=$1
touch "$dir/running-$TFORK_AGENT_INDEX"
ls "$dir" | grep -c '^running-' >"$dir/seen-$TFORK_AGENT_INDEX"
echo "hello from $TFORK_BUCKET"
case $TFORK_AGENT_INDEX in
  1) sleep 0.3; rm "$dir/running-1"; exit 0 ;;
  2) sleep 0.3; rm "$dir/running-2"; exit 3 ;;
  *) rm "$dir/running-$TFORK_AGENT_INDEX"; until [[ -e "$dir/never" ]]; do sleep 0.1; done ;;
esac
SH
chmod +x "$WORK/exec-agent.sh"
mkdir -p "$WORK/exec-state" "$WORK/exec-logs"

step "setup: run x of three forks with keys"
expect_rc "fork create x" 0 tf fork create src -n 3 --prefix x -q

step "fork exec --parallel 2 --logs --timeout 2: one row per agent, exit 7"
expect_rc "fork exec" 7 tf --json fork exec --manifest x.manifest.json --parallel 2 \
  --logs "$WORK/exec-logs" --timeout 2 --bind "$WORK/exec-state" \
  -- "$WORK/exec-agent.sh" "$WORK/exec-state"
python3 - "$OUT/stdout" <<'PY' || fail "fork exec's result: $(stdout)"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d if isinstance(d, list) else d["agents"]
by = {r["bucket"] if "bucket" in r else r["fork"]: r for r in rows}
assert sorted(by) == ["x-1", "x-2", "x-3"], by
assert by["x-1"]["exit_code"] == 0 and by["x-1"]["signal"] is None, by["x-1"]
assert by["x-2"]["exit_code"] == 3 and by["x-2"]["signal"] is None, by["x-2"]
assert by["x-3"]["exit_code"] is None and by["x-3"]["signal"] == "SIGTERM", by["x-3"]
assert by["x-3"]["seconds"] >= 2 and all(r["seconds"] > 0 for r in rows), rows
PY
for i in 1 2 3; do
  [[ $(cat "$WORK/exec-state/seen-$i") -le 2 ]] || fail "agent $i saw more than 2 agents running"
  check_contains "x-$i.log" "$(cat "$WORK/exec-logs/x-$i.log")" "hello from x-$i"
done
check_not_contains "stderr with --logs" "$(stderr)" "hello from"
check_eq "the ends in the manifest" "[0, 3, null]" \
  "$(json_get '[f["agent"]["exit_code"] for f in d["forks"]]' <x.manifest.json)"

step "fork exec of two named forks, in a table: every agent exits 0"
expect_rc "fork exec x-1 2" 0 tf fork exec --manifest x.manifest.json x-1 2 -- true
check_contains "the table" "$(stdout)" "x-1"
check_contains "the table" "$(stdout)" "x-2"
check_not_contains "the table" "$(stdout)" "x-3"
expect_rc "teardown x" 0 tf teardown --manifest x.manifest.json -q

# ---- teardown --source S --all --older-than (issue 7 §4: clean-up after crashed jobs)

step "teardown --source --all --older-than 1h: forks younger than that stay"
expect_rc "fork create o" 0 tf fork create src -n 2 --prefix o --keys none -q
expect_rc "teardown --older-than 1h" 0 tf teardown --source src --all --older-than 1h
check_contains "nothing to do" "$(stdout)$(stderr)" "no forks to tear down"
check_eq "o-1" 200 "$(bucket_status o-1)"
check_eq "o-2" 200 "$(bucket_status o-2)"

step "teardown --source --all --older-than 1s: once they are older, both go"
# Waits for the state (both forks' creation times, as bucket ls reports them, at least 2 s in
# the past), not for a fixed time.
deadline=$((SECONDS + 60))
until tf --json bucket ls --forks-of src >"$OUT/forks" 2>/dev/null && python3 - "$OUT/forks" <<'PY'; do
import datetime, json, sys
rows = [b for b in json.load(open(sys.argv[1]))["buckets"] if b["bucket"] in ("o-1", "o-2")]
now = datetime.datetime.now(datetime.timezone.utc)
ages = [(now - datetime.datetime.fromisoformat(b["created"].replace("Z", "+00:00"))).total_seconds() for b in rows]
sys.exit(0 if len(ages) == 2 and min(ages) >= 2 else 1)
PY
  ((SECONDS < deadline)) || fail "o-1 and o-2 never became older than 2 s: $(cat "$OUT/forks")"
  sleep 0.2
done
expect_rc "teardown --older-than 1s" 0 tf teardown --source src --all --older-than 1s -q
check_eq "o-1" 404 "$(bucket_status o-1)"
check_eq "o-2" 404 "$(bucket_status o-2)"
check_eq "src untouched" 200 "$(bucket_status src)"
