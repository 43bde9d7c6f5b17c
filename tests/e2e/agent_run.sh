#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 25 §1, issue 26 §1–§3, issue 21 §3–§4): `tfork run` and `fork exec` around
# their agents, against a real `tfork serve`:
#   - run takes its fork-create options through fork create's own mapping: a 50-character
#     source gets the same cut default prefix (it was exit 64);
#   - --usage: each agent's objects and bytes, from its fork's own listing (the source is never
#     listed), in the result and the table, with a summary line;
#   - run interrupted honours --keep (tears down what it would not keep, exit 130/143), and
#     --keep-on-interrupt keeps everything;
#   - run --dry-run creates nothing and shows each agent's command, sandbox and variable names;
#   - the agent's private ~/.aws files hold its own key, region and endpoint; fork env sets the
#     storagesdk adapter's names; --help says stdin is /dev/null.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd bwrap
require_aws_cli
start_server
OUT="$WORK/out"
mkdir -p "$OUT"
cd "$WORK"

tfork_cli bucket create ar-src --snapshots >/dev/null
echo seed >"$OUT/seed.txt"
aws_cli s3api put-object --bucket ar-src --key seed.txt --body "$OUT/seed.txt" >/dev/null

step "run with a 50-character source: the default prefix is cut as fork create cuts it"
long=$(printf 'l%.0s' {1..46})-src
tfork_cli bucket create "$long" --snapshots >/dev/null
expect_rc "run with a long source" 0 tfork_cli --json run "$long" -n 2 -q -- true
names=$(json_get '" ".join(a["bucket"] for a in d["agents"])' <"$OUT/stdout")
for name in $names; do
  ((${#name} <= 63)) || fail "fork name $name is longer than 63 characters"
  [[ $name == lllllll*-fork-*-[12] ]] || fail "fork name $name is not <source cut>-fork-<ms>-N"
done
check_eq "forks left (--keep none)" "" "$(buckets_named "lllll*-fork-*")"

step "--usage: what each agent wrote, from its own fork's listing only"
cat >"$OUT/writer.sh" <<'SH'
set -e
for i in $(seq "$TFORK_AGENT_INDEX"); do
  printf 'hello' | curl -sS --fail --aws-sigv4 "aws:amz:auto:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    -T - "$AWS_ENDPOINT_URL/$TFORK_BUCKET/out-$i.txt"
done
SH
expect_rc "run --usage" 0 tfork_cli --json --debug run ar-src -n 2 --prefix au --keep all --usage \
  -- bash "$OUT/writer.sh"
check_eq "objects and bytes per agent" "1 5 2 10" \
  "$(json_get '" ".join("%d %d" % (a["usage"]["objects"], a["usage"]["bytes"]) for a in d["agents"])' <"$OUT/stdout")"
check_contains "each fork listed" "$(cat "$OUT/stderr")" "/au-2?"
check_not_contains "the source never listed" "$(cat "$OUT/stderr")" "/ar-src?list-type"
expect_rc "fork exec --usage, a table" 0 tfork_cli fork exec --manifest au.manifest.json --usage -- true
check_contains "the table's columns" "$(head -1 "$OUT/stdout")" "OBJECTS  BYTES"
check_contains "the summary" "$(cat "$OUT/stderr")" "2 of 2 agents exited 0"
check_contains "the summary" "$(cat "$OUT/stderr")" "they wrote 3 objects, 15 bytes"
expect_rc "teardown au" 0 tfork_cli teardown --manifest au.manifest.json -q

step "the agent's own ~/.aws files: its key, region auto, its endpoint; fork env's adapter names"
expect_rc "fork create ak" 0 tfork_cli fork create ar-src -n 1 --prefix ak -q
expect_rc "the agent's files" 0 tfork_cli fork exec --manifest ak.manifest.json -- \
  bash -c 'cat "$AWS_CONFIG_FILE" "$AWS_SHARED_CREDENTIALS_FILE"; /usr/bin/aws configure get region;
    stat -c "%a %n" "$AWS_SHARED_CREDENTIALS_FILE"'
agent_key=$(json_get 'd["forks"][0]["access_key_id"]' <ak.manifest.json)
check_contains "its endpoint" "$(cat "$OUT/stderr")" "[ak-1] endpoint_url = $ENDPOINT"
check_contains "its key" "$(cat "$OUT/stderr")" "[ak-1] aws_access_key_id = $agent_key"
check_contains "the AWS CLI reads the file" "$(cat "$OUT/stderr")" "[ak-1] auto"
check_contains "mode 0600" "$(cat "$OUT/stderr")" "[ak-1] 600 "
check_not_contains "no root key" "$(cat "$OUT/stderr")" "$ROOT_SK"
expect_rc "fork env" 0 tfork_cli fork env --manifest ak.manifest.json 1
for line in "export TIGRIS_BUCKET=ak-1" "export TIGRIS_ACCESS_KEY_ID=$agent_key" \
  "export TIGRIS_SECRET_ACCESS_KEY="; do
  check_contains "fork env" "$(cat "$OUT/stdout")" "$line"
done
expect_rc "teardown ak" 0 tfork_cli teardown --manifest ak.manifest.json -q

step "run --dry-run creates nothing and shows each agent"
expect_rc "run --dry-run" 0 tfork_cli --json --dry-run run ar-src -n 2 --prefix dr -- echo '{bucket}'
check_eq "the agents' commands" "echo dr-1|echo dr-2" \
  "$(json_get '"|".join(" ".join(a["command"]) for a in d["agents"])' <"$OUT/stdout")"
check_eq "their sandbox" "bwrap bwrap" "$(json_get '" ".join(a["sandbox"] for a in d["agents"])' <"$OUT/stdout")"
check_contains "variable names" "$(json_get 'd["agents"][1]["variables"]' <"$OUT/stdout")" "TFORK_BUCKET"
check_contains "the requests" "$(json_get '" ".join(r["operation"] for r in d["requests"])' <"$OUT/stdout")" \
  "CreateBucketFork"
check_eq "no fork made" "" "$(buckets_named 'dr-*')"
[[ ! -e dr.manifest.json ]] || fail "--dry-run wrote a manifest"

step "--help says where stdin comes from, and what the sandbox hides"
expect_rc "fork exec --help" 0 tfork_cli fork exec --help
check_contains "stdin" "$(tr '\n' ' ' <"$OUT/stdout")" "stdin /dev/null"
check_contains "--sandbox" "$(cat "$OUT/stdout")" "--sandbox"
expect_rc "run --help" 0 tfork_cli run --help
check_contains "--keep-on-interrupt" "$(cat "$OUT/stdout")" "--keep-on-interrupt"

# wait_for WHAT CONDITION...: polls CONDITION until it holds (deadline 120 s, or the run ended).
wait_for() {
  local what=$1 deadline=$((SECONDS + 120))
  shift
  until "$@"; do
    kill -0 "$run_pid" 2>/dev/null || fail "$what: the run ended first: $(tail -c 1500 "$OUT/run.err")"
    ((SECONDS < deadline)) || fail "$what: not within 120 s"
    sleep 0.05
  done
}
started() { (($(compgen -G "$WORK/signals/started-*" | wc -l) >= 2)); }

# interrupted_run PREFIX SIGNAL EXPECTED_RC FLAGS...: two agents that wait; SIGNAL once both
# have started.
interrupted_run() {
  local prefix=$1 sig=$2 expected=$3 rc=0
  shift 3
  rm -rf "$WORK/signals" && mkdir -p "$WORK/signals"
  "$TFORK" --json run ar-src -n 2 --prefix "$prefix" --env SIGNAL_DIR --bind "$WORK/signals" "$@" \
    -- bash -c 'touch "$SIGNAL_DIR/started-$TFORK_AGENT_INDEX"; while :; do sleep 0.05; done' \
    >"$OUT/run.out" 2>"$OUT/run.err" &
  run_pid=$!
  wait_for "$prefix: both agents started" started
  kill -"$sig" "$run_pid"
  wait "$run_pid" || rc=$?
  check_eq "$prefix: exit after SIG$sig" "$expected" "$rc"
}
export SIGNAL_DIR="$WORK/signals"

step "run interrupted with --keep none: nothing is left, without a teardown of mine"
interrupted_run ri INT 130
check_eq "ri: forks left" "" "$(buckets_named 'ri-*')"
check_eq "ri: keys left" "" "$(keys_named 'ri-*')"
check_contains "ri: said so" "$(cat "$OUT/run.err")" "tore down what --keep none does not keep"
interrupted_run rt TERM 143
check_eq "rt: forks left" "" "$(buckets_named 'rt-*')"
check_eq "rt: keys left" "" "$(keys_named 'rt-*')"

step "run interrupted with --keep failed keeps the interrupted agents' forks"
interrupted_run rf TERM 143 --keep failed
check_eq "rf: forks kept" "rf-1 rf-2" "$(buckets_named 'rf-*' | sort | tr '\n' ' ' | sed 's/ $//')"
expect_rc "teardown rf" 0 tfork_cli teardown --manifest rf.manifest.json -q

step "--keep-on-interrupt: the old way, everything kept for teardown --manifest"
interrupted_run rk INT 130 --keep-on-interrupt
check_eq "rk: forks kept" "rk-1 rk-2" "$(buckets_named 'rk-*' | sort | tr '\n' ' ' | sed 's/ $//')"
check_contains "rk: the hint" "$(cat "$OUT/run.err")" "tfork teardown --manifest"
expect_rc "teardown rk" 0 tfork_cli teardown --manifest rk.manifest.json -q
check_eq "rk: keys left" "" "$(keys_named 'rk-*')"

check_eq "the source" "seed.txt" \
  "$(aws_cli s3api list-objects-v2 --bucket ar-src --query 'Contents[].Key' --output text)"
stop_server
step "PASS"
