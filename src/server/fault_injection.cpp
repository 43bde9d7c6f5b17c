// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/fault_injection.hpp"

#include "tfork/server/errors.hpp"
#include "tfork/server/handler.hpp"
#include "tfork/server/xml_render.hpp"

namespace tfork::server {

FaultInjector::FaultInjector(FaultOptions options, std::uint64_t seed)
    : options_(options), random_(seed) {}

FaultDecision FaultInjector::decide() {
  FaultDecision decision;
  decision.delay = options_.latency;
  if (options_.fail_rate > 0) {
    double draw = 0;
    {
      std::lock_guard lock(mutex_);
      draw = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
    }
    if (draw < options_.fail_rate) decision.failure = slow_down_response();
  }
  return decision;
}

// S3's SlowDown, which names no Retry-After: clients back off on their own (a Retry-After the
// client honours would turn every injected fault into a one-second wait).
Response slow_down_response() {
  Response response;
  response.status = 503;
  const auto request_id = new_request_id();
  response.body = render_error(make_error(Err::slow_down), "/", request_id);
  response.set_header("Content-Type", "application/xml");
  response.set_header("x-amz-request-id", request_id);
  return response;
}

}  // namespace tfork::server
