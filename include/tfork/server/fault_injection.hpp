// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fault injection of `tfork serve` (cli.md §8: --latency, --fail-rate) as a decorator of
// the handler, decided per request without sockets, so tests can drive it directly. The
// socket layer applies the delay without holding a thread (the connection is suspended).

#include "tfork/server/http_types.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>

namespace tfork::server {

struct FaultOptions {
  std::chrono::milliseconds latency{0};  // delay before each request is handled
  double fail_rate = 0.0;                // share of requests answered 503 SlowDown
};

// What to do with one request before the handler sees it.
struct FaultDecision {
  std::chrono::milliseconds delay{0};
  std::optional<Response> failure;  // answer this instead of calling the handler
};

class FaultInjector {
 public:
  explicit FaultInjector(FaultOptions options, std::uint64_t seed = std::random_device{}());
  // Thread-safe; one draw per request.
  FaultDecision decide();
  bool active() const { return options_.latency.count() > 0 || options_.fail_rate > 0; }

 private:
  FaultOptions options_;
  std::mutex mutex_;
  std::mt19937_64 random_;
};

// The 503 SlowDown answer of an injected failure (S3's throttling error, with Retry-After).
Response slow_down_response();

}  // namespace tfork::server
