// SPDX-License-Identifier: Apache-2.0
// The libcurl Transport: one persistent multi handle drives every call, so connections (and
// TLS sessions, through a share handle) are reused across calls. send_batch is the one loop
// (send and send_all are batches over it, src/http/batch.cpp); it follows curl's
// docs/examples/10-at-a-time.c: at most the window's count of easy handles are added at once,
// each freed slot takes the batch's next request, and a request waiting for its retry backoff
// (cli.md §7) sits in a queue of "ready at" times instead of holding a slot or blocking the loop.

#include "tfork/core/ascii.hpp"
#include "tfork/http/transport.hpp"
#include "tfork/rules/redaction.hpp"

#include <spdlog/spdlog.h>

#include "curl_handles.hpp"
#include "debug_log.hpp"
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::http {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often the loop looks at Options::cancel while transfers run or wait.
constexpr milliseconds k_poll_interval{50};

TransportError::Kind kind_of(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return TransportError::Kind::dns;
    case CURLE_COULDNT_CONNECT:
      return TransportError::Kind::connect;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      return TransportError::Kind::tls;
    case CURLE_OPERATION_TIMEDOUT:
      return TransportError::Kind::timeout;
    default:
      return TransportError::Kind::other;
  }
}

// Connection errors and timeouts are retried (cli.md §7), including the ambiguous ones where
// the request may have reached the server; certificate and usage errors are not.
bool is_retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// Failures before the request could have left: it was not carried out, whatever it was.
bool never_reached_server(CURLcode code) {
  return code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_CONNECT ||
         code == CURLE_SSL_CONNECT_ERROR;
}

std::string with_attempts(std::string message, int attempts) {
  if (attempts > 1) message += " (after " + std::to_string(attempts) + " attempts)";
  return message;
}

bool has_line_break(std::string_view text) {
  return text.find_first_of("\r\n") != std::string_view::npos;
}

// One send of one request: the easy handle plus everything its callbacks write into.
struct Transfer {
  std::size_t index = 0;                       // the batch's id of the request
  const Request* original = nullptr;           // the batch's request
  const Request* request = nullptr;            // what goes out: `original`, or `resigned`
  std::unique_ptr<Request> resigned;           // the latest signed copy of a retried request
  int attempts = 0;                            // sends so far, this one included
  std::chrono::steady_clock::time_point sent;  // when this send started
  curl::Easy easy;
  curl::Slist headers;
  Response response;
  std::shared_ptr<spdlog::logger> log;  // set only with Options::debug
  char error[CURL_ERROR_SIZE] = {};
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  transfer->response.body.append(data, size * count);
  return size * count;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string_view line = ascii::trim(std::string_view(data, size * count));
  if (line.starts_with("HTTP/")) {
    // A new status line (after "100 Continue", say) starts a new header block.
    transfer->response.headers.clear();
  } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
    transfer->response.headers.emplace_back(std::string(ascii::trim(line.substr(0, colon))),
                                            std::string(ascii::trim(line.substr(colon + 1))));
  }
  return size * count;
}

// CURLOPT_DEBUGFUNCTION: the exact request and response header lines as on the wire, redacted.
int on_debug(CURL*, curl_infotype type, char* data, std::size_t size, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  if (type != CURLINFO_HEADER_OUT && type != CURLINFO_HEADER_IN) return 0;
  std::string_view block(data, size);
  bool first = true;
  while (!block.empty()) {
    const auto end = block.find('\n');
    const std::string_view line = ascii::trim(block.substr(0, end));
    block.remove_prefix(end == std::string_view::npos ? block.size() : end + 1);
    if (line.empty()) continue;
    if (type == CURLINFO_HEADER_OUT) {
      // curl hands over the whole request head at once; its first line is the request line.
      const std::string shown =
          first ? debug::redact_request_line(line) : debug::redact_header_line(line);
      transfer->log->debug("[#{}] > {}", transfer->index, shown);
    } else {
      const std::string shown =
          line.starts_with("HTTP/") ? std::string(line) : debug::redact_header_line(line);
      transfer->log->debug("[#{}] < {}", transfer->index, shown);
    }
    first = false;
  }
  return 0;
}

class CurlTransport final : public Transport {
 public:
  explicit CurlTransport(const Options& options)
      : options_(options), random_(std::random_device{}()) {
    curl::ensure_global_init();
    multi_.reset(curl_multi_init());
    share_.reset(curl_share_init());
    if (!multi_ || !share_) throw std::runtime_error("libcurl: cannot create its handles");
    // HTTP/2 streams share a connection where the server offers it (ALPN on https).
    curl_multi_setopt(multi_.get(), CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    // Resumed TLS sessions make each new connection to the same host cheaper. Every use of
    // the share handle happens under mutex_, so it needs no lock callbacks.
    curl_share_setopt(share_.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }

  ~CurlTransport() override = default;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  void send_batch(Batch& batch, std::size_t max_parallel) override {
    const std::lock_guard lock(mutex_);
    Loop loop(*this, batch, std::max<std::size_t>(max_parallel, 1));
    loop.run();
  }

 private:
  // The state of one send_batch call: curl's docs/examples/10-at-a-time.c, fed by the batch.
  // Its destructor detaches whatever is still attached to the multi handle, so an exception
  // from the batch leaves the transport usable.
  class Loop {
   public:
    Loop(CurlTransport& owner, Batch& batch, std::size_t parallel)
        : owner_(owner), batch_(batch), parallel_(parallel), window_(parallel) {
      CURLM* multi = owner_.multi_.get();
      const auto limit = static_cast<long>(parallel_);
      // N requests at max_parallel P use at most P connections (cli.md §9), and the cache
      // keeps as many as the widest batch so far for the next call.
      owner_.max_connects_ = std::max(owner_.max_connects_, limit);
      curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, limit);
      curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, limit);
      curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, owner_.max_connects_);
      if (owner_.options_.debug) log_ = debug::logger();
    }

    ~Loop() {
      for (const auto& transfer : active_) {
        curl_multi_remove_handle(owner_.multi_.get(), transfer->easy.get());
      }
    }

    Loop(const Loop&) = delete;
    Loop& operator=(const Loop&) = delete;

    void run() {
      CURLM* multi = owner_.multi_.get();
      while (true) {
        if (cancelled()) {
          cancel_unfinished();
          return;
        }
        const bool starved = start_ready();
        if (active_.empty() && waiting_.empty() && (batch_.exhausted() || !batch_wake(starved)))
          return;  // every request taken is done, and no more will come
        int running = 0;
        if (const CURLMcode code = curl_multi_perform(multi, &running); code != CURLM_OK) {
          fail_unfinished(code);
          return;
        }
        if (collect_finished()) continue;  // free slots: refill before waiting
        curl_multi_poll(multi, nullptr, 0, poll_timeout_ms(starved), nullptr);
      }
    }

   private:
    struct Waiting {
      Clock::time_point ready_at;
      std::size_t id;
      const Request* original;
      int attempts;
    };

    bool cancelled() const {
      return owner_.options_.cancel != nullptr &&
             owner_.options_.cancel->load(std::memory_order_relaxed);
    }

    int max_attempts() const { return std::max(owner_.options_.retry.max_attempts, 1); }
    int verbosity() const { return owner_.options_.verbosity; }
    static long long elapsed_ms(const Transfer& transfer) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - transfer.sent)
          .count();
    }

    // Hands request `id`'s final result to the batch (its one done() call).
    void deliver(std::size_t id, Result result) { batch_.done(id, std::move(result)); }

    // Fills free slots: retries whose backoff is over first, then the batch's next requests.
    // True when a slot stayed free because the batch had nothing ready.
    bool start_ready() {
      while (active_.size() < window_.limit()) {
        const auto due = std::min_element(
            waiting_.begin(), waiting_.end(),
            [](const Waiting& a, const Waiting& b) { return a.ready_at < b.ready_at; });
        if (due != waiting_.end() && due->ready_at <= Clock::now()) {
          const Waiting next = *due;
          waiting_.erase(due);
          start(next.id, next.original, next.attempts);
          continue;
        }
        const auto ready = batch_.next();
        if (!ready) return true;
        start(ready->id, ready->request, 0);
      }
      return false;
    }

    // When the batch said it has nothing now (`starved`), the time it will have something.
    std::optional<Clock::time_point> batch_wake(bool starved) const {
      return starved ? batch_.next_ready_at() : std::nullopt;
    }

    void start(std::size_t id, const Request* original, int attempts_so_far) {
      auto transfer = std::make_unique<Transfer>();
      if (attempts_so_far > 0 && original->resign) {
        // Signed now, not when first sent.
        transfer->resigned = std::make_unique<Request>(original->resign());
      }
      transfer->index = id;
      transfer->original = original;
      transfer->request = transfer->resigned ? transfer->resigned.get() : original;
      transfer->attempts = attempts_so_far + 1;
      transfer->sent = std::chrono::steady_clock::now();
      transfer->log = log_;
      transfer->easy = owner_.take_easy();
      if (!transfer->easy) {
        deliver(id, std::unexpected(TransportError{TransportError::Kind::other,
                                                   "libcurl: cannot create a handle",
                                                   attempts_so_far}));
        return;
      }
      if (auto problem = configure(*transfer)) {
        deliver(id, std::unexpected(TransportError{TransportError::Kind::other, std::move(*problem),
                                                   attempts_so_far}));
        return;
      }
      if (curl_multi_add_handle(owner_.multi_.get(), transfer->easy.get()) != CURLM_OK) {
        deliver(id, std::unexpected(TransportError{TransportError::Kind::other,
                                                   "libcurl: cannot start a transfer",
                                                   attempts_so_far}));
        return;
      }
      active_.push_back(std::move(transfer));
    }

    // Sets every option of one send; a message when the request cannot be sent as given.
    std::optional<std::string> configure(Transfer& transfer) {
      const Request& request = *transfer.request;
      const Options& options = owner_.options_;
      CURL* easy = transfer.easy.get();

      bool has_accept = false, has_content_type = false, has_expect = false, has_agent = false;
      for (const auto& [name, value] : request.headers) {
        if (name.empty() || has_line_break(name) || has_line_break(value) ||
            name.find(':') != std::string::npos) {
          return "request to " + host_port(request.url) + " has an invalid header";
        }
        // "Name;" is curl's spelling of a header with an empty value ("Name:" would delete it).
        transfer.headers.append(value.empty() ? name + ";" : name + ": " + value);
        const std::string lower = ascii::lower(name);
        has_accept |= lower == "accept";
        has_content_type |= lower == "content-type";
        has_expect |= lower == "expect";
        has_agent |= lower == "user-agent";
      }
      // Requests arrive signed: curl must not add headers of its own. "Name:" removes one.
      if (!has_accept) transfer.headers.append("Accept:");
      if (!has_content_type) transfer.headers.append("Content-Type:");
      if (!has_expect) transfer.headers.append("Expect:");
      if (!has_agent && !options.user_agent.empty()) {
        transfer.headers.append("User-Agent: " + options.user_agent);
      }
      if (has_line_break(request.url) || has_line_break(request.method)) {
        return "request to " + host_port(request.url) + " has an invalid URL or method";
      }

      curl_easy_setopt(easy, CURLOPT_URL, request.url.c_str());
      curl_easy_setopt(easy, CURLOPT_PATH_AS_IS, 1L);  // S3 paths are never normalised
      curl_easy_setopt(easy, CURLOPT_HTTPHEADER, transfer.headers.get());
#if LIBCURL_VERSION_NUM >= 0x075500
      curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
      curl_easy_setopt(easy, CURLOPT_SHARE, owner_.share_.get());
      curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
      // Tigris answers are small XML/JSON documents: a 4 KiB receive buffer per transfer
      // instead of curl's 16 KiB keeps 64 transfers in flight well inside cli.md §9's memory
      // budget, at no cost in round trips.
      curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 1024L);
      curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
      curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer.error);
      curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt(easy, CURLOPT_WRITEDATA, &transfer);
      curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
      curl_easy_setopt(easy, CURLOPT_HEADERDATA, &transfer);

      curl_easy_setopt(
          easy, CURLOPT_CONNECTTIMEOUT_MS,
          static_cast<long>(std::max<milliseconds::rep>(options.connect_timeout.count(), 1)));
      // A stall is "less than 1 byte/s for read_timeout", which curl counts in whole seconds.
      const auto stall_seconds =
          std::max<milliseconds::rep>((options.read_timeout.count() + 999) / 1000, 1);
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(stall_seconds));

      if (!options.ca_bundle.empty())
        curl_easy_setopt(easy, CURLOPT_CAINFO, options.ca_bundle.c_str());
      curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
      curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);

      if (request.method == "HEAD") {
        curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
      } else if (request.method == "GET" && request.body.empty()) {
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
      } else if (request.method == "PUT" || request.method == "POST" || !request.body.empty()) {
        // The body goes out from memory with a Content-Length (0 for an empty PUT or POST); the
        // custom method keeps curl from treating it as a form POST.
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(request.body.size()));
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
      } else {
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, request.method.c_str());
      }

      if (transfer.log) {
        curl_easy_setopt(easy, CURLOPT_DEBUGFUNCTION, on_debug);
        curl_easy_setopt(easy, CURLOPT_DEBUGDATA, &transfer);
        curl_easy_setopt(easy, CURLOPT_VERBOSE, 1L);
      }
      return std::nullopt;
    }

    // Reads curl's completion messages; true when at least one transfer ended.
    bool collect_finished() {
      bool any = false;
      int queued = 0;
      while (CURLMsg* message = curl_multi_info_read(owner_.multi_.get(), &queued)) {
        if (message->msg != CURLMSG_DONE) continue;
        const CURLcode code = message->data.result;
        auto found = std::find_if(active_.begin(), active_.end(), [&](const auto& transfer) {
          return transfer->easy.get() == message->easy_handle;
        });
        if (found == active_.end()) continue;
        std::unique_ptr<Transfer> transfer = std::move(*found);
        active_.erase(found);
        curl_multi_remove_handle(owner_.multi_.get(), transfer->easy.get());
        any = true;
        completed(*transfer, code);
        owner_.give_back(std::move(transfer->easy), parallel_);
      }
      return any;
    }

    void completed(Transfer& transfer, CURLcode code) {
      const Request& request = *transfer.request;
      Result result;
      bool retry = false;
      bool throttled = false;
      std::string reason;  // why it failed, for the retry line of -v
      if (code == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo(transfer.easy.get(), CURLINFO_RESPONSE_CODE, &status);
        transfer.response.status = static_cast<int>(status);
        transfer.response.attempts = transfer.attempts;
        if (log_ && status >= 400 && !transfer.response.body.empty()) {
          log_->debug("[#{}] < body: {}", transfer.index,
                      debug::loggable_body(transfer.response.body));
        }
        retry = request.resend_if_unanswered ? is_retryable_response(transfer.response)
                                             : is_retryable_once_sent(transfer.response);
        throttled = is_throttling_response(transfer.response);
        const auto limit_before = window_.limit();
        window_.answered(throttled);
        if (throttled && log_) {
          log_->debug("[#{}] throttled: at most {} requests in flight now", transfer.index,
                      window_.limit());
        }
        if (verbosity() >= 1 && window_.limit() != limit_before) {
          spdlog::info("{}: at most {} requests in flight now",
                       window_.limit() < limit_before ? "throttled" : "recovering",
                       window_.limit());
        }
        if (verbosity() >= 2) {
          spdlog::info("{} {} -> {} ({} ms, attempt {})", request.method,
                       rules::redact_target(request.url), status, elapsed_ms(transfer),
                       transfer.attempts);
        }
        reason = "HTTP " + std::to_string(status);
        result = std::move(transfer.response);
      } else {
        const TransportError::Kind kind = kind_of(code);
        std::string detail = transfer.error[0] != '\0' ? transfer.error : curl_easy_strerror(code);
        std::replace_if(
            detail.begin(), detail.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
        std::string what;
        switch (kind) {
          case TransportError::Kind::dns:
            what = "resolve " + host_port(request.url) + " failed: ";
            break;
          case TransportError::Kind::connect:
            what = "connect to " + host_port(request.url) + " failed: ";
            break;
          case TransportError::Kind::tls:
            what = "TLS with " + host_port(request.url) + " failed: ";
            break;
          case TransportError::Kind::timeout:
            what = "request to " + host_port(request.url) + " timed out: ";
            break;
          default:
            what = "request to " + host_port(request.url) + " failed: ";
            break;
        }
        if (log_) log_->debug("[#{}] ! {}{}", transfer.index, what, detail);
        if (verbosity() >= 2) {
          spdlog::info("{} {} -> {}{} ({} ms, attempt {})", request.method,
                       rules::redact_target(request.url), what, detail, elapsed_ms(transfer),
                       transfer.attempts);
        }
        reason = what + detail;
        result = std::unexpected(TransportError{
            kind, with_attempts(what + std::string(ascii::trim(detail)), transfer.attempts),
            transfer.attempts});
        retry = request.resend_if_unanswered ? is_retryable(code) : never_reached_server(code);
      }

      const int budget = throttled && max_attempts() > 1
                             ? std::max(max_attempts(), owner_.options_.retry.throttle_attempts)
                             : max_attempts();
      if (retry && transfer.attempts < budget && cancelled()) {
        // It would have been sent again: it is unfinished, so it ends as cancelled.
        deliver(transfer.index, std::unexpected(cancelled_error(request, transfer.attempts)));
        return;
      }
      if (retry && transfer.attempts < budget) {
        // A sporadic throttle waits up to one pace, not doubling: the unluckiest of a thousand
        // requests would otherwise wait out four doublings (RetryPolicy).
        const int step = throttled && window_.sporadic() ? 1 : transfer.attempts;
        const auto ceiling = backoff_ceiling(
            owner_.options_.retry, step,
            throttled ? std::optional(milliseconds{elapsed_ms(transfer)}) : std::nullopt);
        milliseconds delay{
            std::uniform_int_distribution<milliseconds::rep>(0, ceiling.count())(owner_.random_)};
        // The server's own word on when to come back is a floor (cli.md §7).
        if (result) {
          if (const auto asked = retry_after(*result, owner_.options_.retry.max_delay))
            delay = std::max(delay, *asked);
        }
        if (log_) {
          log_->debug("[#{}] retrying in {} ms (attempt {} of {})", transfer.index, delay.count(),
                      transfer.attempts + 1, budget);
        }
        if (verbosity() >= 1) {
          spdlog::info("retrying {} {} after {} in {} ms (attempt {} of {})", request.method,
                       rules::redact_target(request.url), reason, delay.count(),
                       transfer.attempts + 1, budget);
        }
        waiting_.push_back(
            Waiting{Clock::now() + delay, transfer.index, transfer.original, transfer.attempts});
        return;
      }
      deliver(transfer.index, std::move(result));
    }

    // Options::cancel: every transfer in flight is dropped now, and every request taken but not
    // finished ends as cancelled (in ascending id), with the number of sends it already had.
    void cancel_unfinished() {
      end_unfinished([this](const Request& request, int attempts) {
        return cancelled_error(request, attempts);
      });
    }

    void fail_unfinished(CURLMcode code) {
      end_unfinished([code](const Request&, int attempts) {
        return TransportError{TransportError::Kind::other,
                              std::string("libcurl: ") + curl_multi_strerror(code), attempts};
      });
    }

    // Ends every request taken and not finished (in flight or waiting to retry), in ascending
    // id, with the error `error_for(request, attempts so far)`.
    template <class ErrorFor>
    void end_unfinished(ErrorFor error_for) {
      struct Unfinished {
        std::size_t id;
        const Request* request;
        int attempts;
      };
      std::vector<Unfinished> unfinished;
      for (const auto& transfer : active_) {
        curl_multi_remove_handle(owner_.multi_.get(), transfer->easy.get());
        unfinished.push_back({transfer->index, transfer->original, transfer->attempts});
      }
      active_.clear();
      for (const auto& waiting : waiting_)
        unfinished.push_back({waiting.id, waiting.original, waiting.attempts});
      waiting_.clear();
      std::ranges::sort(unfinished, {}, &Unfinished::id);
      for (const auto& item : unfinished)
        deliver(item.id, std::unexpected(error_for(*item.request, item.attempts)));
    }

    // Short enough to notice Options::cancel promptly, and no later than the next retry's
    // ready time (or the batch's, when it has nothing now) while a slot is free for it.
    // curl_multi_poll also wakes for curl's own timers.
    int poll_timeout_ms(bool starved) const {
      milliseconds wait = k_poll_interval;
      if (active_.size() < window_.limit()) {
        const auto now = Clock::now();
        auto until = [&](Clock::time_point at) {
          wait =
              std::min(wait, std::max(std::chrono::ceil<milliseconds>(at - now), milliseconds{0}));
        };
        for (const auto& waiting : waiting_)
          until(waiting.ready_at);
        if (const auto wake = batch_wake(starved)) until(*wake);
      }
      return static_cast<int>(wait.count());
    }

    CurlTransport& owner_;
    Batch& batch_;
    std::size_t parallel_;
    ConcurrencyWindow window_;  // AIMD on throttling, at most parallel_
    std::vector<Waiting> waiting_;
    std::vector<std::unique_ptr<Transfer>> active_;
    std::shared_ptr<spdlog::logger> log_;
  };

  // An easy handle for the next transfer: one a finished transfer gave back (reset to libcurl's
  // defaults: its buffers stay, its options go), else a new one. Reusing them saves allocating
  // and freeing a handle and its receive buffer for every request of a batch.
  curl::Easy take_easy() {
    if (idle_.empty()) return curl::Easy(curl_easy_init());
    curl::Easy easy = std::move(idle_.back());
    idle_.pop_back();
    return easy;
  }
  // Keeps at most `keep` idle handles: as many as a batch has in flight.
  void give_back(curl::Easy easy, std::size_t keep) {
    if (!easy || idle_.size() >= keep) return;
    curl_easy_reset(easy.get());
    idle_.push_back(std::move(easy));
  }

  Options options_;
  std::mutex mutex_;  // one call at a time: a multi handle belongs to one thread
  std::mt19937_64 random_;
  long max_connects_ = 1;
  // Destroyed in reverse order: the multi handle (and the connections it caches) before the
  // share handle that holds their TLS sessions. Easy handles live only inside a Loop.
  curl::Share share_;
  curl::Multi multi_;
  std::vector<curl::Easy> idle_;  // destroyed first: before the handles they were attached to
};

}  // namespace

std::unique_ptr<Transport> make_curl_transport(const Options& options) {
  return std::make_unique<CurlTransport>(options);
}

}  // namespace tfork::http
