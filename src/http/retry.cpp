// The retry rules of cli.md §7 that do not depend on libcurl.

#include "tfork/http/transport.hpp"

#include <algorithm>
#include <chrono>
#include <string_view>

namespace tfork::http {

bool is_retryable_response(const Response& response) {
  switch (response.status) {
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
      return true;
    default:
      break;
  }
  if (response.status >= 200 && response.status < 300) return false;
  // S3 error documents are small; the code is near the start.
  std::string_view body = response.body;
  return body.substr(0, 4096).find("<Code>SlowDown</Code>") != std::string_view::npos;
}

std::chrono::milliseconds backoff_ceiling(const RetryPolicy& policy, int retry) {
  using std::chrono::milliseconds;
  const auto base = std::max<milliseconds::rep>(policy.base_delay.count(), 0);
  const auto cap = std::max<milliseconds::rep>(policy.max_delay.count(), 0);
  // Doubling past 2^30 overflows long before it matters: the cap has taken over by then.
  const int shift = std::clamp(retry - 1, 0, 30);
  const auto unbounded = base > (cap >> shift) ? cap : base << shift;
  return milliseconds(std::min(unbounded, cap));
}

}  // namespace tfork::http
