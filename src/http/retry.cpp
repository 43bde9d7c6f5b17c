// SPDX-License-Identifier: Apache-2.0
// The retry rules of cli.md §7 that do not depend on libcurl.

#include "tfork/core/ascii.hpp"
#include "tfork/http/transport.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <string_view>

namespace tfork::http {

bool is_retryable_response(const Response& response) {
  switch (response.status) {
    case 408:
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

bool is_throttling_response(const Response& response) {
  if (response.status == 429 || response.status == 503) return true;
  if (response.status >= 200 && response.status < 300) return false;
  std::string_view body = response.body;
  return body.substr(0, 4096).find("<Code>SlowDown</Code>") != std::string_view::npos;
}

bool is_retryable_once_sent(const Response& response) {
  return response.status == 408 || is_throttling_response(response);
}

std::optional<std::chrono::milliseconds> retry_after(const Response& response,
                                                     std::chrono::milliseconds cap) {
  const auto value = response.header("retry-after");
  if (!value) return std::nullopt;
  const auto text = ascii::trim(*value);
  long long seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc{} || end != text.data() + text.size() || seconds < 0) return std::nullopt;
  if (seconds > cap.count() / 1000) return cap;
  return std::min(std::chrono::milliseconds(seconds * 1000), cap);
}

ConcurrencyWindow::ConcurrencyWindow(std::size_t max_parallel)
    : max_(std::max<std::size_t>(max_parallel, 1)), limit_(max_) {}

void ConcurrencyWindow::answered(bool throttled) {
  ++answers_;
  if (throttled) ++throttled_;
  // One decision per window of answers, and never on fewer than k_min_sample: a throttle now
  // and then (a busy shard, a random fault) costs one retry, not half the throughput. A small
  // window decided on its own few answers would read a steady one-in-five throttling as
  // "sustained" by chance often enough to sink to one request in flight and stay there.
  if (answers_ < std::max(limit_, k_min_sample)) return;
  // Sustained throttling (half the answers or more) halves the window: a server at its limit
  // throttles what goes beyond it, so the window settles between that limit and twice it.
  sustained_ = throttled_ * 2 >= answers_;
  if (sustained_) {
    limit_ = std::max<std::size_t>(limit_ / 2, 1);
  } else if (limit_ < max_) {
    ++limit_;
  }
  answers_ = 0;
  throttled_ = 0;
}

std::chrono::milliseconds backoff_ceiling(const RetryPolicy& policy, int retry,
                                          std::optional<std::chrono::milliseconds> pace) {
  using std::chrono::milliseconds;
  auto unit = policy.base_delay;
  if (pace) unit = std::clamp(*pace, milliseconds{1}, policy.base_delay);
  const auto base = std::max<milliseconds::rep>(unit.count(), 0);
  const auto cap = std::max<milliseconds::rep>(policy.max_delay.count(), 0);
  // Doubling past 2^30 overflows long before it matters: the cap has taken over by then.
  const int shift = std::clamp(retry - 1, 0, 30);
  const auto unbounded = base > (cap >> shift) ? cap : base << shift;
  return milliseconds(std::min(unbounded, cap));
}

}  // namespace tfork::http
