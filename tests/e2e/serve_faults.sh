#!/usr/bin/env bash
# `tfork serve --latency` keeps each request's own delay under concurrency, and
# `--fail-rate` answers 503 SlowDown (cli.md §8).
source "$(dirname "$0")/lib.sh"
require_cmd curl
start_server --latency 400
s3 PUT /latency-bucket
check_status 200

step "64 concurrent requests each wait 400 ms, not 64 x 400 ms"
start=$(date +%s%N)
pids=()
for i in $(seq 1 64); do
  s3 HEAD /latency-bucket >/dev/null &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a concurrent request failed"; done
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
step "64 requests took ${elapsed_ms} ms"
((elapsed_ms >= 400)) || fail "the latency was not applied (${elapsed_ms} ms)"
((elapsed_ms < 6000)) || fail "the delays were serialised (${elapsed_ms} ms for 64 requests)"
stop_server

step "--fail-rate 1 answers every request with 503 SlowDown"
start_server --fail-rate 1
s3 GET /
check_code 503 SlowDown
stop_server
step "pass"
