// SPDX-License-Identifier: Apache-2.0
#pragma once
// The only door to the network. libcurl lives behind this interface (src/http/); tests can
// swap in a recording fake. Requests arrive fully formed and signed: the transport never
// changes a signed header.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::http {

using Headers = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive lookup of the first header with this name.
std::optional<std::string_view> find_header(const Headers& headers, std::string_view name);

struct Request {
  std::string method;  // "GET", "PUT", "HEAD", "DELETE", "POST"
  std::string url;     // scheme://host[:port]/wire-path[?wire-query], already percent-encoded
  Headers headers;     // sent exactly as given (including Host, x-amz-*, Authorization)
  std::string body;
  // When set, a retry sends what this returns instead: the same request signed again, with
  // the date of the moment it goes out (a signature is only good for minutes, and a slow
  // retry must not arrive with a stale x-amz-date). Called on the thread of send/send_all.
  std::function<Request()> resign{};
};

struct Response {
  int status = 0;
  Headers headers;  // names as received
  std::string body;
  int attempts = 1;  // how many times the request was sent (retries + 1)

  std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers, name);
  }
};

struct TransportError {
  enum class Kind { dns, connect, tls, timeout, cancelled, other };
  Kind kind = Kind::other;
  std::string message;  // one line, e.g. "connect to 127.0.0.1:9 failed: Connection refused"
  int attempts = 1;
};

using Result = std::expected<Response, TransportError>;

// Retry policy of cli.md §7: up to max_attempts sends in all; exponential backoff with full
// jitter; on connection errors, timeouts, 429/500/502/503/504 and a SlowDown error body;
// never on other 4xx.
//
// Throttling (429, 503, a SlowDown body) is a request to slow down, not a failure: while the
// answers are throttling a request gets up to throttle_attempts sends (unless max_attempts is
// 1, meaning no retries at all), and send_all narrows its window meanwhile (AIMD, below).
struct RetryPolicy {
  int max_attempts = 3;
  int throttle_attempts = 10;
  std::chrono::milliseconds base_delay{100};
  std::chrono::milliseconds max_delay{20000};
};

struct Options {
  std::chrono::milliseconds connect_timeout{10000};
  // A transfer that receives nothing for this long fails with Kind::timeout.
  std::chrono::milliseconds read_timeout{60000};
  RetryPolicy retry;
  std::string ca_bundle;  // empty: the system default
  bool verify_tls = true;
  std::string user_agent;  // e.g. "tfork/0.1.0"
  bool debug = false;      // log each request and response line to stderr, secrets redacted
  // -v (1): each retry with its reason and delay, and each change of the throttling window;
  // -vv (2): also one line per request (method, URL, status, milliseconds, attempt).
  int verbosity = 0;
  // When set and true, pending and in-flight transfers end with Kind::cancelled.
  const std::atomic<bool>* cancel = nullptr;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual Result send(const Request& request) = 0;

  // Sends every request with at most `max_parallel` in flight over reused connections, and
  // returns one result per request, in input order. The number in flight adapts to
  // throttling (additive increase, multiplicative decrease): after each window of as many
  // answers as requests allowed in flight, the window halves when at least a third of those
  // answers were throttling, and grows by one (up to `max_parallel`) otherwise. `on_done`
  // (optional) is called on the calling thread as each request finishes, with its index and result.
  virtual std::vector<Result> send_all(
      std::span<const Request> requests, std::size_t max_parallel,
      const std::function<void(std::size_t, const Result&)>& on_done = {}) = 0;
};

// The libcurl transport (src/http/curl_transport.cpp). One persistent curl multi handle keeps
// connections alive between calls; calls on one transport are serialised (a mutex), so share it
// between threads only if that is what you want.
std::unique_ptr<Transport> make_curl_transport(const Options& options);

// True for a response that cli.md §7 retries: status 429, 500, 502, 503 or 504, or any other
// non-2xx response whose S3 error body says <Code>SlowDown</Code>. A 2xx body is the
// operation's payload (it may be an object that merely contains that text), so it never
// counts as throttling.
bool is_retryable_response(const Response& response);
// True for the throttling answers among those: 429, 503, or a SlowDown error body.
bool is_throttling_response(const Response& response);

// The additive-increase, multiplicative-decrease window of send_all, on its own so that its
// arithmetic can be tested: `limit()` requests may be in flight.
class ConcurrencyWindow {
 public:
  explicit ConcurrencyWindow(std::size_t max_parallel);
  std::size_t limit() const { return limit_; }
  void answered(bool throttled);  // one answer came back (not counting transport errors)

 private:
  std::size_t max_;
  std::size_t limit_;
  std::size_t answers_ = 0;
  std::size_t throttled_ = 0;
};

// The upper bound of the full-jitter backoff before retry number `retry` (1 before the second
// send): min(max_delay, base_delay * 2^(retry - 1)). The actual sleep is uniform in [0, bound].
std::chrono::milliseconds backoff_ceiling(const RetryPolicy& policy, int retry);

// For --debug logs: the request line and headers with the Authorization signature,
// x-amz-security-token and any secret redacted.
std::string redact_header_value(std::string_view name, std::string_view value);

}  // namespace tfork::http
