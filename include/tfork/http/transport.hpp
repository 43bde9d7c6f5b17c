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
  // False for a request that must not happen twice (a merge, a rebase, a snapshot taken):
  // once it may have reached the server (a timeout, a reset, a 500) it is not sent again; a
  // failure before it left (DNS, connect) or an answer that says it was not carried out (408,
  // throttling) is still retried. The caller checks the state before it sends it again.
  bool resend_if_unanswered = true;
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
// 1, meaning no retries at all), and send_batch narrows its window meanwhile (AIMD, below).
// The window is what slows the whole batch down; one throttled request's own retries wait
// multiples of the time its answer took (backoff_ceiling's `pace`), never more than
// base_delay's multiples. While throttling is sporadic (ConcurrencyWindow::sporadic: a busy
// shard, a random fault, most answers not throttled) a throttled request waits up to one pace,
// however many times it was throttled; once throttling is sustained the window narrows and
// each request's backoff doubles with its retries again.
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

// The requests of one batch, handed to the transport one at a time (Transport::send_batch). A
// batch may grow while it runs: done() may make next() return requests it did not have before
// (the follow-up of an answer), and next() may hold a request back until its time
// (next_ready_at()), so that a batch can chain requests per item and wait between them without
// a barrier between its phases. What the transport promises in return is written at
// send_batch.
class Batch {
 public:
  virtual ~Batch() = default;

  struct Ready {
    std::size_t id;          // the batch's own number for the request, passed back to done()
    const Request* request;  // must stay valid until done(id) is called
  };
  // A request to send now, or nullopt when none is ready (yet).
  virtual std::optional<Ready> next() = 0;
  // When nothing is ready: the time at which next() will have a request again, or nullopt when
  // only a done() can bring one.
  virtual std::optional<std::chrono::steady_clock::time_point> next_ready_at() const = 0;
  // True once next() will never return a request again, whatever done() is called with.
  virtual bool exhausted() const = 0;
  // The final result of request `id`, after the transport's own retries.
  virtual void done(std::size_t id, Result result) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends the requests of `batch` over reused connections, with at most `max_parallel` (0
  // means 1) in flight. The contract, which every implementation keeps (the curl transport's
  // is tested in tests/unit/http/curl_transport_test.cpp, "send_batch keeps its contract"):
  //
  // * Threads. Every call of next(), next_ready_at(), exhausted() and done() happens on the
  //   thread that called send_batch, one at a time, while the transport is locked: none may
  //   call back into this transport.
  // * Each request is answered exactly once. Every request taken with next() gets exactly one
  //   done(id, result), in any order (the order answers arrive in), once the transport's own
  //   retries (RetryPolicy, cli.md §7) are over; a retry is invisible to the batch except for
  //   Response::attempts / TransportError::attempts. A request never taken gets no call.
  // * The window. next() is called whenever fewer requests are in flight than the window
  //   allows: `max_parallel`, narrowed by throttling (ConcurrencyWindow, AIMD). A request that
  //   waits for its retry backoff does not hold a slot.
  // * The end. send_batch returns once exhausted() is true and every request taken is done.
  //   While nothing is in flight and next() has nothing, it waits until next_ready_at()
  //   (looking at Options::cancel meanwhile), or returns when exhausted().
  // * Cancellation (Options::cancel set). No request is taken any more; every request in flight
  //   or waiting for a retry is done with TransportError::Kind::cancelled, in ascending id,
  //   and send_batch returns, exhausted or not. A cancelled request may or may not have
  //   reached the server: the caller treats its effect as unknown.
  // * Exceptions. One thrown by next() or done() leaves send_batch at once; requests still
  //   in flight are dropped without a done(), and the transport stays usable.
  virtual void send_batch(Batch& batch, std::size_t max_parallel) = 0;

  // One request (send_batch of one, window 1).
  Result send(const Request& request);

  // Every request of `requests` as one batch; returns one result per request, in input
  // order. `on_done` (optional) is called once per index, as each request finishes, under
  // the rules of send_batch; when cancelled, the requests never sent end with
  // Kind::cancelled and attempts 0, and get their on_done call too, in ascending index.
  std::vector<Result> send_all(std::span<const Request> requests, std::size_t max_parallel,
                               const std::function<void(std::size_t, const Result&)>& on_done = {});
};

// "host:port" of a URL for error messages: never the path or query (a presigned URL carries
// its signature there) and never user info; the scheme's port when none is given.
std::string host_port(std::string_view url);

// The error of a request that Options::cancel ended after `attempts` sends (0: never sent).
TransportError cancelled_error(const Request& request, int attempts);

// The libcurl transport (src/http/curl_transport.cpp). One persistent curl multi handle keeps
// connections alive between calls; calls on one transport are serialised (a mutex), so share it
// between threads only if that is what you want.
std::unique_ptr<Transport> make_curl_transport(const Options& options);

// True for a response that cli.md §7 retries: status 408, 429, 500, 502, 503 or 504, or any other
// non-2xx response whose S3 error body says <Code>SlowDown</Code>. A 2xx body is the
// operation's payload (it may be an object that merely contains that text), so it never
// counts as throttling.
bool is_retryable_response(const Response& response);
// The same for a request that must not happen twice: only the answers that say it was not
// carried out (408, and the throttling answers below).
bool is_retryable_once_sent(const Response& response);
// Retry-After in seconds (the HTTP-date form is read as absent), capped at `cap`.
std::optional<std::chrono::milliseconds> retry_after(const Response& response,
                                                     std::chrono::milliseconds cap);
// True for the throttling answers among those: 429, 503, or a SlowDown error body.
bool is_throttling_response(const Response& response);

// The additive-increase, multiplicative-decrease window of send_batch, on its own so that its
// arithmetic can be tested: `limit()` requests may be in flight. After each window of answers
// (as many as the limit, and at least k_min_sample), the limit halves when half of them or
// more were throttling, and grows by one (up to `max_parallel`) otherwise.
class ConcurrencyWindow {
 public:
  static constexpr std::size_t k_min_sample = 32;

  explicit ConcurrencyWindow(std::size_t max_parallel);
  std::size_t limit() const { return limit_; }
  // Throttling, if any, is sporadic: the last window of answers was not mostly throttled and
  // the limit is back at max_parallel.
  bool sporadic() const { return !sustained_ && limit_ == max_; }
  void answered(bool throttled);  // one answer came back (not counting transport errors)

 private:
  std::size_t max_;
  std::size_t limit_;
  std::size_t answers_ = 0;
  std::size_t throttled_ = 0;
  bool sustained_ = false;  // the last window of answers was at least half throttled
};

// The upper bound of the full-jitter backoff before retry number `retry` (1 before the second
// send): min(max_delay, unit * 2^(retry - 1)), where the unit is base_delay, or `pace` (how
// long the throttled answer took) when that is shorter. The actual sleep is uniform in
// [0, bound].
std::chrono::milliseconds backoff_ceiling(const RetryPolicy& policy, int retry,
                                          std::optional<std::chrono::milliseconds> pace = {});

// For --debug logs: the request line and headers with the Authorization signature,
// x-amz-security-token and any secret redacted.
std::string redact_header_value(std::string_view name, std::string_view value);

}  // namespace tfork::http
