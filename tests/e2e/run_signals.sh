#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (cli.md §10–§11, issue 8): SIGINT and SIGTERM reach every agent of `fork exec`,
# which then exits 130/143 with each agent's end recorded; and a `tfork run` interrupted at
# any moment (while forking, while its agents run, while it tears down, and at random
# moments) leaves nothing that `teardown --manifest` cannot remove: afterwards no fork, no
# key and no run snapshot is left, and the source is untouched.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_tfork
require_aws_cli
start_server --latency 30
OUT="$WORK/out"
mkdir -p "$OUT"
export SIGNAL_DIR="$OUT/signals"

tfork_cli bucket create sig-src --snapshots >/dev/null
echo "the dataset" >"$OUT/data.txt"
aws_cli s3api put-object --bucket sig-src --key data.txt --body "$OUT/data.txt" >/dev/null

# An agent that says when it has started, then waits; on INT or TERM it writes which signal
# it got and exits 3 (INT) or 4 (TERM).
cat >"$OUT/agent.sh" <<'AGENT'
trap 'echo INT >"$SIGNAL_DIR/got-$TFORK_AGENT_INDEX"; exit 3' INT
trap 'echo TERM >"$SIGNAL_DIR/got-$TFORK_AGENT_INDEX"; exit 4' TERM
touch "$SIGNAL_DIR/started-$TFORK_AGENT_INDEX"
while :; do sleep 0.05; done
AGENT

# wait_for WHAT DEADLINE_S CONDITION...: polls CONDITION (a command) until it holds, failing
# with WHAT after DEADLINE_S seconds or when the watched process $watch_pid has ended.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@"; do
    if [[ -n "${watch_pid:-}" ]] && ! kill -0 "$watch_pid" 2>/dev/null; then
      fail "$what: the process ended first: $(tail -c 1500 "$OUT/cmd.err")"
    fi
    ((SECONDS < deadline)) || fail "$what: not within $2 s"
    sleep 0.05
  done
}
count_files() { compgen -G "$SIGNAL_DIR/$1" | wc -l; }
all_started() { (($(count_files 'started-*') >= $1)); }

step "fork exec forwards SIGINT and SIGTERM to every agent"
tfork_cli fork create sig-src -n 3 --prefix sx --manifest "$WORK/sx.json" -q >/dev/null
for sig in INT TERM; do
  rm -rf "$SIGNAL_DIR" && mkdir -p "$SIGNAL_DIR"
  "$TFORK" --json fork exec --manifest "$WORK/sx.json" --env SIGNAL_DIR --bind "$SIGNAL_DIR" \
    -- bash "$OUT/agent.sh" \
    >"$OUT/cmd.out" 2>"$OUT/cmd.err" &
  watch_pid=$!
  wait_for "three agents started" 120 all_started 3
  kill -"$sig" "$watch_pid"
  rc=0
  wait "$watch_pid" || rc=$?
  watch_pid=""
  expected=$([[ $sig == INT ]] && echo 130 || echo 143)
  check_eq "fork exec exit after SIG$sig" "$expected" "$rc"
  for i in 1 2 3; do
    check_eq "agent $i got SIG$sig" "$sig" "$(cat "$SIGNAL_DIR/got-$i" 2>/dev/null)"
  done
  code=$([[ $sig == INT ]] && echo 3 || echo 4)
  check_eq "agents' ends on stdout after SIG$sig" "$code $code $code" \
    "$(json_get '" ".join(str(a["exit_code"]) for a in d["agents"])' <"$OUT/cmd.out")"
  check_eq "agents' ends in the manifest after SIG$sig" "$code $code $code" \
    "$(json_get '" ".join(str(f["agent"]["exit_code"]) for f in d["forks"])' <"$WORK/sx.json")"
  check_eq "no agent left running after SIG$sig" "" "$(pgrep -f "$OUT/agent.sh" || true)"
done
expect_rc "teardown of the exec forks" 0 tfork_cli teardown --manifest "$WORK/sx.json"

# manifest_has PATH PYTHON_CONDITION: the manifest exists, parses, and d satisfies it.
manifest_has() {
  [[ -s "$1" ]] && /usr/bin/python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if ($2) else 1)" "$1" 2>/dev/null
}
any_started() { (($(count_files 'started-*') >= 1)); }
created_one() { manifest_has "$manifest" 'any(f["status"] == "created" for f in d["forks"])'; }
# Teardown writes the manifest when the keys are revoked, then when the buckets are deleted.
revoked_one() { manifest_has "$manifest" 'any(f.get("key_status") == "revoked" for f in d["forks"])'; }

# interrupted_run NAME SIGNAL MOMENT: runs `tfork run` with 8 agents that each finish quickly,
# sends SIGNAL at MOMENT (created: a fork exists; agents: an agent has started; teardown: a
# key was revoked, buckets are being deleted; or a delay in seconds), then proves nothing is left once `teardown
# --manifest` has run.
interrupted_run() {
  local name=$1 sig=$2 moment=$3 rc=0
  manifest="$WORK/$name.manifest.json"
  rm -rf "$SIGNAL_DIR" && mkdir -p "$SIGNAL_DIR"
  (cd "$WORK" && exec "$TFORK" --concurrency 2 run sig-src -n 8 --prefix "$name" \
    --manifest "$manifest" --parallel 4 --env SIGNAL_DIR --bind "$SIGNAL_DIR" -- \
    bash -c 'touch "$SIGNAL_DIR/started-$TFORK_AGENT_INDEX"; sleep 0.2') \
    >"$OUT/cmd.out" 2>"$OUT/cmd.err" &
  watch_pid=$!
  case $moment in
    created) wait_for "$name: a fork created" 120 created_one ;;
    agents) wait_for "$name: an agent started" 120 any_started ;;
    teardown) wait_for "$name: a key revoked" 120 revoked_one ;;
    *) sleep "$moment" ;;
  esac
  kill -"$sig" "$watch_pid" 2>/dev/null || true
  wait "$watch_pid" || rc=$?
  watch_pid=""
  case $rc in
    0 | 130 | 143) ;;
    *) fail "$name: run exited $rc after SIG$sig at '$moment': $(tail -c 1500 "$OUT/cmd.err")" ;;
  esac
  # The bucket deletes after the keys are revoked take a few round trips only: a run that
  # finished before the signal landed is fine there (it then removed everything itself).
  if [[ $moment =~ ^(created|agents)$ || ($moment == teardown && $rc != 0) ]]; then
    check_eq "$name: exit after SIG$sig while $moment" "$([[ $sig == INT ]] && echo 130 || echo 143)" "$rc"
  fi
  step "$name: SIG$sig at '$moment' → exit $rc"
  if [[ -e "$manifest" ]]; then
    check_eq "$name: manifest mode" 600 "$(stat -c %a "$manifest")"
    rc=0
    tfork_cli teardown --manifest "$manifest" >"$OUT/td.out" 2>"$OUT/td.err" || rc=$?
    [[ $rc == 0 ]] || fail "$name: teardown --manifest exit $rc: $(tail -c 1500 "$OUT/td.err")"
  fi
  check_eq "$name: forks left" "" "$(buckets_named "$name-*")"
  check_eq "$name: keys left" "" "$(keys_named "$name-*")"
  check_not_contains "$name: run snapshot left" "$(tfork_cli snapshot ls sig-src 2>/dev/null)" "tfork $name"
}

step "tfork run interrupted while it forks, while its agents run, and while it tears down"
interrupted_run ri-create INT created
interrupted_run rt-create TERM created
interrupted_run ri-agents INT agents
interrupted_run rt-agents TERM agents
interrupted_run ri-teardown INT teardown
interrupted_run rt-teardown TERM teardown

step "tfork run interrupted at random moments"
for i in 1 2 3 4 5 6; do
  sig=$([[ $((i % 2)) == 1 ]] && echo INT || echo TERM)
  interrupted_run "rr$i" "$sig" "$(printf '%d.%03d' $((RANDOM % 2)) $((RANDOM % 1000)))"
done

step "the source is untouched"
check_eq "source objects" "data.txt" \
  "$(aws_cli s3api list-objects-v2 --bucket sig-src --query 'Contents[].Key' --output text)"
aws_cli s3api get-object --bucket sig-src --key data.txt "$OUT/back.txt" >/dev/null
check_eq "source data" "the dataset" "$(cat "$OUT/back.txt")"
check_eq "no fork of the source left" "sig-src" "$(buckets_named 'sig-*' | tr '\n' ' ' | sed 's/ $//')"

step "PASS"
