-- SPDX-License-Identifier: Apache-2.0
-- Small-object PUT or GET for `scripts/bench` (section 5) through wrk, a load generator in C
-- whose own cost per request is a small fraction of Node's: with client and server on the
-- same two cores, a heavy client queues requests on its own and so lengthens the server's
-- measured tail. The paths are presigned beforehand (bench-small.mjs URL_DIR), used in turn
-- and again from the start when they run out; every PUT carries 4 KiB of its own.
--
-- usage: wrk -t1 -c32 -dSECONDS -s bench-small.lua ENDPOINT -- PATHS_FILE PUT|GET
-- Prints one JSON line: requests, rate, errors (sockets and HTTP statuses >= 400 apart),
-- latency p50/p99/max in milliseconds.
local paths, method, count, sent, run = {}, 'GET', 0, 0, 0

function init(args)
  method = args[2] or 'GET'
  for line in io.lines(args[1]) do
    count = count + 1
    paths[count] = line
  end
  run = os.time()
end

local filler = string.rep('x', 4096)

function request()
  sent = sent + 1
  local path = paths[(sent - 1) % count + 1]
  if method == 'PUT' then
    local head = string.format('object %d of run %d ', sent, run)
    return wrk.format('PUT', path, nil, head .. filler:sub(#head + 1))
  end
  return wrk.format('GET', path)
end

function done(summary, latency, requests)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    '{"requests":%d,"seconds":%.3f,"per_s":%.1f,"socket_errors":%d,"status_errors":%d,' ..
    '"p50_ms":%.3f,"p99_ms":%.3f,"max_ms":%.3f}\n',
    summary.requests, seconds, summary.requests / seconds,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
