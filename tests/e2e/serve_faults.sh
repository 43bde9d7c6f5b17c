#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tfork serve --latency` keeps each request's own delay under concurrency, and
# `--fail-rate` answers 503 SlowDown (cli.md §8).
source "$(dirname "$0")/lib.sh"
require_cmd curl
# The delay is long enough that serialised delays (64 x 3 s) and concurrent ones (3 s plus
# start-up of 64 curl processes) stay far apart even on a loaded machine: the check is "less
# than half the serial time", not a tight wall-clock bound.
latency_ms=3000
start_server --latency "$latency_ms"
s3 PUT /latency-bucket
check_status 200

step "64 concurrent requests each wait $latency_ms ms, not 64 x $latency_ms ms"
start=$(date +%s%N)
pids=()
for i in $(seq 1 64); do
  s3 HEAD /latency-bucket >/dev/null &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a concurrent request failed"; done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
step "64 requests took ${elapsed_ms} ms"
((elapsed_ms >= latency_ms)) || fail "the latency was not applied (${elapsed_ms} ms)"
((elapsed_ms < 64 * latency_ms / 2)) || fail "the delays were serialised (${elapsed_ms} ms for 64 requests)"
stop_server

step "--fail-rate 1 answers every request with 503 SlowDown"
start_server --fail-rate 1
s3 GET /
check_code 503 SlowDown
stop_server
step "pass"
