#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tfork serve --latency` keeps each request's own delay under concurrency, and
# `--fail-rate` answers 503 SlowDown (cli.md §8).
source "$(dirname "$0")/lib.sh"
require_cmd curl
# Told by states, not durations: with a delay far longer than the test, the server must have
# read all 64 request heads (every server-side socket's receive queue empty) while all 64 are
# still unanswered. Delays that held an event thread each (one per core) would leave most
# heads unread in their sockets.
latency_ms=600000
start_server --latency "$latency_ms"
port=${ENDPOINT##*:}
port_hex=$(printf '%04X' "$port")

step "64 concurrent requests are all read and all waiting at once"
pids=()
for i in $(seq 1 64); do
  s3 HEAD /latency-bucket >/dev/null 2>&1 &
  pids+=($!)
done
# Server-side sockets of the listening port, established (01): "rx_queue" is their unread bytes.
waiting_heads() {
  awk -v port=":$port_hex" '$2 ~ port"$" && $4 == "01" {
      n++; split($5, queues, ":"); if (queues[2] == "00000000") read++ }
    END { printf "%d %d\n", n, read }' /proc/net/tcp
}
deadline=$((SECONDS + 120))
state=""
while ((SECONDS < deadline)); do
  state=$(waiting_heads)
  [[ $state == "64 64" ]] && break
  sleep 0.1
done
check_eq "server-side connections / heads read while all wait" "64 64" "$state"
for pid in "${pids[@]}"; do
  kill -0 "$pid" 2>/dev/null || fail "a delayed request was answered before its delay"
done
step "SIGTERM ends the server with 64 requests still waiting"
stop_server
for pid in "${pids[@]}"; do wait "$pid" || true; done

step "--fail-rate 1 answers every request with 503 SlowDown"
start_server --fail-rate 1
s3 GET /
check_code 503 SlowDown
stop_server
step "pass"
