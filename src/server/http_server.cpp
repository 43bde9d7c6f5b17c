// SPDX-License-Identifier: Apache-2.0
// The socket layer of `tfork serve` over GNU libmicrohttpd (see http_server.hpp for why).
//
// Every request takes the Handler's one road (handler.hpp); this layer only moves bytes and
// chooses threads. libmicrohttpd calls on_request several times on the connection's event
// thread:
//   1. once the head has arrived (no body read yet, no 100-continue sent): fault injection,
//      then Handler::admit authenticates from the head; an error is answered right there;
//   2. for each piece of body: fed to the Handler's BodyReceiver (a file or a small buffer);
//   3. once the body is complete: Handler::run. Event threads stay few (one per core) and must
//      never sleep in the store, so a request whose run may wait for it (Handler::may_wait: a
//      write other than a PutObject with its body in memory) runs on a writer thread, its
//      connection suspended. A run that gives a PendingWrite hands it to Handler::commit: the
//      store's committer thread hands the response back after the group commit, and no thread
//      sleeps for it. Reads and small PUTs thus run on the event thread.
//   4. after a hand-off, once the connection is resumed: the response is queued.
// The raw request target comes from the URI log callback (before any unescaping), and header
// values are taken as received: nothing is decoded before the signature is checked.
//
// Around that, per connection (a Link): a cap on connections open at once (the few accepted
// beyond it answer 503 SlowDown and close), of which a quarter is kept from anonymous
// connections awaiting a head (the oldest of them is closed to make room), and at most a
// few of those per peer address; and a total deadline for each request head and each body, kept by
// the timer thread, which closes a connection whose head or body trickles in for too long.
#include "tfork/server/http_server.hpp"

#include "tfork/server/errors.hpp"
#include "tfork/server/xml_render.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <functional>
#include <list>
#include <microhttpd.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <queue>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <variant>
#include <vector>

namespace tfork::server {
namespace {

// After a body error, up to this much of the rest of the body is read and dropped so that the
// client sees the error; beyond it the connection is closed.
constexpr std::uint64_t k_max_discard = std::uint64_t{16} << 20;

enum class Phase { head, delayed, body, working, done };

using SteadyClock = std::chrono::steady_clock;

// What the connection cap and the head and body deadlines know of one connection. Its fields
// are guarded by Impl::timer_mutex: the event thread owning the connection and the timer
// thread both use them. `fd` is only touched while `open` (libmicrohttpd closes it after
// reporting the connection closed), so a reused descriptor is never shut down by mistake.
struct Link;
using LinkHolder = std::shared_ptr<Link>;

struct Link {
  int fd = -1;
  bool open = true;
  // A request on it was authenticated: it no longer counts as anonymous.
  bool vouched = false;
  std::string peer;  // the peer's address, as raw bytes
  // Its places in Impl::anonymous_heads and in its peer's list there while it is anonymous
  // and awaiting a head.
  std::optional<std::list<LinkHolder>::iterator> anonymous_place;
  std::optional<std::list<LinkHolder>::iterator> peer_place;
  bool over_cap = false;        // beyond the connection limit: answered 503 SlowDown
  bool awaiting_head = true;    // between requests, or the head has not fully arrived
  bool request_line = false;    // the current head's request line has arrived
  bool receiving_body = false;  // an admitted request's body is being read
  bool closing = false;         // answered outside libmicrohttpd (deadline, bad length)
  // The head's or the body's (one applies at a time), and when its entry in Impl::deadlines
  // comes due (max: none). A later deadline is found when the entry comes due; an earlier
  // one gets an entry of its own.
  SteadyClock::time_point deadline;
  SteadyClock::time_point queued_due = SteadyClock::time_point::max();
};

// The socket context of a connection is its LinkHolder, shared with the timer thread's queue.

LinkHolder* holder_of(MHD_Connection* connection) {
  const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (!info || !info->socket_context) return nullptr;
  return static_cast<LinkHolder*>(info->socket_context);
}

Link* link_of(MHD_Connection* connection) {
  auto* holder = holder_of(connection);
  return holder ? holder->get() : nullptr;
}

// A slot of a counted resource, given back when its holder goes.
struct GiveBack {
  void operator()(std::atomic<unsigned>* count) const { count->fetch_sub(1); }
};
using CountedSlot = std::unique_ptr<std::atomic<unsigned>, GiveBack>;

struct Exchange {
  Request head;
  Phase phase = Phase::head;
  std::optional<Admission> admission;
  std::unique_ptr<BodyReceiver> receiver;
  std::optional<S3Error> body_error;  // found while the body streamed; answered at its end
  std::uint64_t discarded = 0;
  // An injected failure, answered after the delay; or the response handed back.
  std::optional<Response> ready;
  bool handed_off = false;           // to a writer thread or the store: counted in Impl::unsent
  bool timed_body = false;           // its body has a deadline (Link::receiving_body)
  CountedSlot unauthenticated_body;  // one of Impl::unauthenticated_bodies, while it lives
};

// Requests of this event thread whose request line has arrived but whose head is not yet
// complete. libmicrohttpd refuses a malformed Content-Length itself, before the access
// handler sees the request, with an HTML page; its error log (on this same thread) is the
// only sign, and this list finds the connection it is about.
struct PendingHead {
  MHD_Connection* connection;
  Exchange* exchange;
};
thread_local std::vector<PendingHead> t_pending_heads;

void forget_pending(MHD_Connection* connection) {
  std::erase_if(t_pending_heads,
                [connection](const PendingHead& p) { return p.connection == connection; });
}

// A peer's address as raw bytes (4 or 16), the key of its anonymous connections.
std::string peer_of(const sockaddr* address) {
  if (!address) return {};
  if (address->sa_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in*>(address)->sin_addr;
    return std::string(reinterpret_cast<const char*>(&in), sizeof in);
  }
  if (address->sa_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    return std::string(reinterpret_cast<const char*>(&in6), sizeof in6);
  }
  return {};
}

bool is_decimal_length(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && ec == std::errc{} && end == text.data() + text.size();
}

// A whole response as bytes, for the few answers written to a socket directly (a head
// deadline, a malformed Content-Length): the connection is closed right after.
std::string wire_bytes(const Response& response) {
  const char* reason = MHD_get_reason_phrase_for(static_cast<unsigned>(response.status));
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", response.status, reason ? reason : "");
  for (const auto& [name, value] : response.headers) {
    if (iequals(name, "Content-Length") || iequals(name, "Connection")) continue;
    out += fmt::format("{}: {}\r\n", name, value);
  }
  out += fmt::format("Content-Length: {}\r\nConnection: close\r\n\r\n", response.body.size());
  out += response.body;
  return out;
}

// Writes `response` (small: it fits the socket buffer) and ends the connection's sending
// side; libmicrohttpd then fails its own write and closes the connection.
void answer_directly(int fd, const Response& response) {
  const auto bytes = wire_bytes(response);
  [[maybe_unused]] const auto sent =
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_WR);
}

Response plain_error(Err id) {
  Response response;
  const auto& error_spec = spec(id);
  response.status = error_spec.status;
  const auto request_id = new_request_id();
  response.body = render_error(make_error(id), "/", request_id);
  response.set_header("Content-Type", "application/xml");
  response.set_header("x-amz-request-id", request_id);
  response.set_header("Server", "tfork");
  return response;
}

// Streams a response's segments in order: file segments with pread from files the handler
// opened, and small blobs' bytes from memory.
struct SegmentReader {
  std::vector<BodySegment> segments;
  std::vector<std::shared_ptr<const OpenFile>> files;
  std::size_t index = 0;
  std::uint64_t base = 0;  // response offset where segments[index] starts

  ssize_t read(std::uint64_t pos, char* buffer, std::size_t max) {
    while (index < segments.size() &&
           pos >= base + static_cast<std::uint64_t>(segments[index].length)) {
      base += static_cast<std::uint64_t>(segments[index].length);
      ++index;
    }
    if (index >= segments.size()) return MHD_CONTENT_READER_END_OF_STREAM;
    const auto& segment = segments[index];
    const auto within = pos - base;
    const auto want = std::min<std::uint64_t>(max, segment.length - within);
    if (segment.bytes) {
      std::memcpy(buffer, segment.bytes->data() + segment.offset + within, want);
      return static_cast<ssize_t>(want);
    }
    const auto got =
        ::pread(files[index]->fd(), buffer, want,
                static_cast<off_t>(segment.offset + static_cast<std::int64_t>(within)));
    if (got <= 0) {
      spdlog::error("blob {} is shorter than its record", segment.path.string());
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return got;
  }
};

std::shared_ptr<const OpenFile> open_segment(const BodySegment& segment) {
  if (segment.file || segment.bytes) return segment.file;
  const int fd = ::open(segment.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  return std::make_shared<const OpenFile>(fd);
}

constexpr std::int64_t k_max_buffered_body = 4 * store::k_max_db_blob;

MHD_Response* to_mhd(Response response, bool head_request) {
  MHD_Response* out = nullptr;
  if (!response.blob_body.empty() && response.body_length() <= k_max_buffered_body &&
      std::ranges::all_of(response.blob_body, [](const auto& s) { return s.bytes != nullptr; })) {
    // Only small blobs' bytes, already in memory: sent from one buffer.
    for (const auto& segment : response.blob_body) {
      response.body.append(std::string_view(*segment.bytes)
                               .substr(static_cast<std::size_t>(segment.offset),
                                       static_cast<std::size_t>(segment.length)));
    }
    response.blob_body.clear();
  }
  if (!response.blob_body.empty()) {
    auto reader = std::make_unique<SegmentReader>();
    for (const auto& segment : response.blob_body) {
      auto file = open_segment(segment);
      if (!file && !segment.bytes) {
        spdlog::error("cannot open blob {}", segment.path.string());
        return nullptr;
      }
      reader->files.push_back(std::move(file));
    }
    reader->segments = std::move(response.blob_body);
    const auto length = static_cast<std::uint64_t>(response.body_length());
    if (reader->segments.size() == 1 && reader->files[0]) {
      // One file: sent by the kernel (sendfile) from a descriptor of its own.
      const int fd = ::dup(reader->files[0]->fd());
      if (fd >= 0) {
        out = MHD_create_response_from_fd_at_offset64(
            length, fd, static_cast<std::uint64_t>(reader->segments[0].offset));
        if (!out) ::close(fd);
      }
    }
    if (!out) {
      auto* raw = reader.release();
      out = MHD_create_response_from_callback(
          length, 64 * 1024,
          [](void* cls, std::uint64_t pos, char* buffer, std::size_t max) -> ssize_t {
            return static_cast<SegmentReader*>(cls)->read(pos, buffer, max);
          },
          raw, [](void* cls) { delete static_cast<SegmentReader*>(cls); });
      if (!out) delete raw;
    }
  } else if (head_request && response.content_length) {
    // HEAD: the length a GET would send, and no body.
    out = MHD_create_response_from_callback(
        static_cast<std::uint64_t>(*response.content_length), 4096,
        [](void*, std::uint64_t, char*, std::size_t) -> ssize_t {
          return MHD_CONTENT_READER_END_WITH_ERROR;
        },
        nullptr, nullptr);
  } else {
    out = MHD_create_response_from_buffer(response.body.size(), response.body.data(),
                                          MHD_RESPMEM_MUST_COPY);
  }
  if (!out) return nullptr;
  for (const auto& [name, value] : response.headers) {
    MHD_add_response_header(out, name.c_str(), value.c_str());
  }
  return out;
}

}  // namespace

struct HttpServer::Impl {
  Handler& handler;
  FaultInjector& faults;
  HttpLimits limits;
  MHD_Daemon* daemon = nullptr;
  int listen_fd = -1;

  // Delayed requests (--latency): suspended connections resumed by one timer thread, which
  // also keeps the head deadlines (one queue entry per connection at most).
  struct Timer {
    SteadyClock::time_point due;
    MHD_Connection* connection;
    bool operator>(const Timer& other) const { return due > other.due; }
  };
  struct Deadline {
    SteadyClock::time_point due;
    LinkHolder link;
    bool operator>(const Deadline& other) const { return due > other.due; }
  };
  std::mutex timer_mutex;
  std::condition_variable timer_wake;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines;
  bool timer_stop = false;
  std::thread timer_thread;
  std::atomic<unsigned> open_connections{0};
  // Anonymous connections (no request on them authenticated yet) awaiting a head, oldest
  // first: all of them, and each peer's. A quarter of the connection limit is kept from them,
  // for connections that have authenticated: past the rest, the oldest is closed to make room
  // for a new connection, so slow heads cannot keep signed requests out; and past
  // HttpLimits::anonymous_per_peer of one peer's, that peer's oldest, so one peer cannot
  // push out everyone else's. Guarded by timer_mutex.
  std::list<LinkHolder> anonymous_heads;
  std::unordered_map<std::string, std::list<LinkHolder>> anonymous_heads_of_peer;
  std::atomic<unsigned> unauthenticated_bodies{0};  // held by exchanges (HttpLimits)

  // Writer threads: requests whose run may wait for the store (Handler::may_wait), each with
  // its connection suspended until its response is ready. Jobs already queued are finished
  // before the threads end. A pending write (Handler::commit) holds no thread. `awaiting`
  // counts the requests handed off (to a writer or to the store's committer) and not yet
  // handed back; `unsent` those whose response is not sent yet.
  std::mutex work_mutex;
  std::condition_variable work_wake;
  std::deque<std::function<void()>> work;
  bool work_stop = false;
  std::vector<std::thread> writers;
  unsigned awaiting = 0;
  unsigned unsent = 0;
  std::condition_variable drained;  // `awaiting` or `unsent` reached 0

  Impl(Handler& h, FaultInjector& f, HttpLimits l) : handler(h), faults(f), limits(l) {}

  void run_writer() {
    std::unique_lock lock(work_mutex);
    while (true) {
      work_wake.wait(lock, [this] { return work_stop || !work.empty(); });
      if (work.empty()) return;  // stopping, and nothing left
      auto job = std::move(work.front());
      work.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  void stop_writers() {
    {
      std::lock_guard lock(work_mutex);
      work_stop = true;
    }
    work_wake.notify_all();
    for (auto& writer : writers)
      writer.join();
    writers.clear();
    std::unique_lock lock(work_mutex);
    drained.wait(lock, [this] { return awaiting == 0; });
  }

  // After stop_writers: the responses handed back late are queued on connections the event
  // threads have yet to resume. Waits for them to be sent, up to `grace` (a client that stops
  // reading does not hold the server).
  void wait_for_answers(std::chrono::milliseconds grace) {
    std::unique_lock lock(work_mutex);
    drained.wait_for(lock, grace, [this] { return unsent == 0; });
  }

  void answer_sent() {
    std::lock_guard lock(work_mutex);
    if (--unsent == 0) drained.notify_all();
  }

  // The request leaves its event thread until hand_back: its connection is suspended. False
  // once the server is stopping (nothing handed off then would be waited for): the caller
  // finishes the request itself.
  bool hand_off(MHD_Connection* connection, Exchange& exchange) {
    {
      std::lock_guard lock(work_mutex);
      if (work_stop) return false;
      ++awaiting;
      ++unsent;
    }
    exchange.phase = Phase::working;
    exchange.handed_off = true;
    MHD_suspend_connection(connection);
    return true;
  }

  // Any thread: the response of a request handed off (nullopt: it failed, and the connection
  // closes). After the resume the exchange is the event thread's again, which queues it.
  void hand_back(MHD_Connection* connection, Exchange& exchange, std::optional<Response> response) {
    exchange.ready = std::move(response);
    MHD_resume_connection(connection);
    std::lock_guard lock(work_mutex);
    if (--awaiting == 0) drained.notify_all();
  }

  // The reply of Handler::run, on the thread that ran it (the connection handed off): a
  // response goes back at once, a pending write when the store's committer has done it.
  void deliver(MHD_Connection* connection, Exchange& exchange, Reply reply) {
    if (auto* write = std::get_if<PendingWrite>(&reply)) {
      handler.commit(exchange.head, *exchange.admission, std::move(*write),
                     [this, connection, &exchange](Response response) {
                       hand_back(connection, exchange, std::move(response));
                     });
      return;
    }
    hand_back(connection, exchange, std::get<Response>(std::move(reply)));
  }

  // The body has arrived: Handler::run, inline when it cannot wait for the store, else on a
  // writer thread. The response to queue now, or nullopt when the request was handed off (its
  // response is queued once the connection resumes). While the server stops, nothing is handed
  // off any longer: the request is settled inline.
  std::optional<Response> run(MHD_Connection* connection, Exchange& exchange, DecodedBody& body) {
    const auto& head = exchange.head;
    const auto& admission = *exchange.admission;
    if (handler.may_wait(head, admission, body)) {
      if (!hand_off(connection, exchange))
        return handler.settle(head, admission, handler.run(head, admission, std::move(body)));
      {
        std::lock_guard lock(work_mutex);
        work.push_back([this, connection, &exchange, body = std::move(body)]() mutable {
          std::optional<Reply> reply;
          try {
            reply = handler.run(exchange.head, *exchange.admission, std::move(body));
          } catch (const std::exception& e) {  // as on an event thread: logged, closed
            spdlog::error("{} {}: {}", exchange.head.method, loggable_target(exchange.head.target),
                          e.what());
          }
          if (reply)
            deliver(connection, exchange, std::move(*reply));
          else
            hand_back(connection, exchange, std::nullopt);
        });
      }
      work_wake.notify_one();
      return std::nullopt;
    }
    auto reply = handler.run(head, admission, std::move(body));
    if (auto* response = std::get_if<Response>(&reply)) return std::move(*response);
    if (!hand_off(connection, exchange)) return handler.settle(head, admission, std::move(reply));
    deliver(connection, exchange, std::move(reply));
    return std::nullopt;
  }

  void run_timers() {
    std::unique_lock lock(timer_mutex);
    while (!timer_stop) {
      const auto now = SteadyClock::now();
      while (!timers.empty() && timers.top().due <= now) {
        MHD_resume_connection(timers.top().connection);
        timers.pop();
      }
      while (!deadlines.empty() && deadlines.top().due <= now) {
        const auto entry = deadlines.top();
        deadlines.pop();
        check_deadline(entry.link, entry.due, now);
      }
      auto next = SteadyClock::time_point::max();
      if (!timers.empty()) next = timers.top().due;
      if (!deadlines.empty()) next = std::min(next, deadlines.top().due);
      if (next == SteadyClock::time_point::max())
        timer_wake.wait(lock);
      else
        timer_wake.wait_until(lock, next);
    }
    while (!timers.empty()) {  // stopping: nobody waits any longer
      MHD_resume_connection(timers.top().connection);
      timers.pop();
    }
  }

  void delay(MHD_Connection* connection, std::chrono::milliseconds by) {
    MHD_suspend_connection(connection);
    std::lock_guard lock(timer_mutex);
    timers.push(Timer{SteadyClock::now() + by, connection});
    timer_wake.notify_one();
  }

  // The time a connection has for its next head: a connection beyond the cap gets little.
  std::chrono::seconds head_time(const Link& link) const {
    const auto full = std::chrono::seconds(limits.head_timeout_seconds);
    return link.over_cap ? std::min(full, std::chrono::seconds(5)) : full;
  }

  // Sets the connection's deadline (timer_mutex held).
  void arm(const LinkHolder& link, SteadyClock::time_point due) {
    link->deadline = due;
    if (link->queued_due <= due) return;  // that entry finds the new deadline when it comes due
    link->queued_due = due;
    const bool earliest = deadlines.empty() || due < deadlines.top().due;
    deadlines.push(Deadline{due, link});
    if (earliest) timer_wake.notify_one();
  }

  // A new head starts (the connection opened, or the previous response was sent). Called
  // with timer_mutex held.
  void start_head(const LinkHolder& link) {
    if (!link->open || link->closing) return;
    link->awaiting_head = true;
    link->request_line = false;
    link->receiving_body = false;
    arm(link, SteadyClock::now() + head_time(*link));
    add_anonymous_head(link);
  }

  // The timer thread, when a connection's deadline entry comes due (timer_mutex held).
  void check_deadline(const LinkHolder& link, SteadyClock::time_point entry_due,
                      SteadyClock::time_point now) {
    if (entry_due != link->queued_due) return;  // an earlier entry replaced this one
    link->queued_due = SteadyClock::time_point::max();
    if (!link->open || link->closing || !(link->awaiting_head || link->receiving_body)) return;
    if (link->deadline > now) {
      arm(link, link->deadline);
      return;
    }
    if (link->receiving_body) {
      spdlog::debug("http: request body not complete within its deadline: closing the connection");
    } else if (link->request_line) {
      spdlog::debug("http: request head not complete within {} s: closing the connection",
                    head_time(*link).count());
    }
    cut_off(*link, Err::request_timeout);
  }

  // Closes a connection from outside libmicrohttpd (timer_mutex held). A request whose line
  // has arrived is told why, with `reason`; a connection idle between requests is just closed
  // (a client might be sending its next request at this very moment).
  static void cut_off(Link& link, Err reason) {
    link.closing = true;
    if (link.request_line || link.receiving_body) answer_directly(link.fd, plain_error(reason));
    ::shutdown(link.fd, SHUT_RDWR);
  }

  // Counts `link` among the anonymous connections awaiting a head, and closes the oldest of
  // its peer's or of all when there are more than the limits leave them (timer_mutex held).
  void add_anonymous_head(const LinkHolder& link) {
    if (link->vouched || link->over_cap || link->anonymous_place) return;
    link->anonymous_place = anonymous_heads.insert(anonymous_heads.end(), link);
    auto& of_peer = anonymous_heads_of_peer[link->peer];
    link->peer_place = of_peer.insert(of_peer.end(), link);
    const auto reserve = limits.connection_limit / 4;
    if (limits.anonymous_per_peer > 0 && of_peer.size() > limits.anonymous_per_peer)
      close_anonymous_head(of_peer.front());
    else if (anonymous_heads.size() > limits.connection_limit - reserve)
      close_anonymous_head(anonymous_heads.front());
  }

  void remove_anonymous_head(Link& link) {  // timer_mutex held
    if (!link.anonymous_place) return;
    anonymous_heads.erase(*link.anonymous_place);
    link.anonymous_place.reset();
    const auto of_peer = anonymous_heads_of_peer.find(link.peer);
    of_peer->second.erase(*link.peer_place);
    link.peer_place.reset();
    if (of_peer->second.empty()) anonymous_heads_of_peer.erase(of_peer);
  }

  // Closes an anonymous connection awaiting a head, to make room (timer_mutex held).
  void close_anonymous_head(LinkHolder link) {
    remove_anonymous_head(*link);
    if (!link->open || link->closing) return;  // already on its way out
    spdlog::debug("http: closing an old anonymous connection awaiting a head for a new one");
    cut_off(*link, Err::slow_down);
  }

  // libmicrohttpd refused this thread's current request for its Content-Length (see
  // PendingHead): answer it here as S3 would, before libmicrohttpd's HTML page.
  void answer_bad_length(unsigned mhd_status) {
    for (auto it = t_pending_heads.begin(); it != t_pending_heads.end(); ++it) {
      const char* value = MHD_lookup_connection_value(it->connection, MHD_HEADER_KIND,
                                                      MHD_HTTP_HEADER_CONTENT_LENGTH);
      if (!value || is_decimal_length(value)) continue;
      Link* link = link_of(it->connection);
      if (!link) continue;
      Request head = it->exchange->head;
      MHD_get_connection_values_n(it->connection, MHD_HEADER_KIND, collect_header, &head);
      auto response = handler.reject(
          head, nullptr,
          mhd_status == 413
              ? make_error(Err::entity_too_large)
              : make_error(Err::invalid_argument, "Content-Length must be a number."));
      t_pending_heads.erase(it);
      std::lock_guard lock(timer_mutex);
      if (!link->open || link->closing) return;
      link->closing = true;
      answer_directly(link->fd, response);
      return;
    }
  }

  void connection_started(MHD_Connection* connection, void** socket_context) {
    const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info) return;
    // Small responses on a reused connection must not wait for the client's delayed ACK
    // (Nagle's algorithm adds ~40 ms per response otherwise).
    int yes = 1;
    ::setsockopt(info->connect_fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto link = std::make_shared<Link>();
    link->fd = info->connect_fd;
    if (const auto* address =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) {
      link->peer = peer_of(address->client_addr);
    }
    const bool beyond_limit = open_connections.fetch_add(1) + 1 > limits.connection_limit;
    {
      std::lock_guard lock(timer_mutex);
      // Beyond the limit, the oldest anonymous head gives its place to this connection.
      link->over_cap = beyond_limit && anonymous_heads.empty();
      if (beyond_limit && !link->over_cap) close_anonymous_head(anonymous_heads.front());
      start_head(link);
    }
    *socket_context = new LinkHolder(std::move(link));
  }

  void connection_closed(MHD_Connection* connection, void** socket_context) {
    forget_pending(connection);
    auto* holder = static_cast<LinkHolder*>(*socket_context);
    if (!holder) return;
    {
      std::lock_guard lock(timer_mutex);
      (*holder)->open = false;
      remove_anonymous_head(**holder);
    }
    open_connections.fetch_sub(1);
    delete holder;
    *socket_context = nullptr;
  }

  // The head of a request has arrived: the deadline no longer applies. False when the
  // connection was already answered outside libmicrohttpd and must just close.
  bool head_arrived(MHD_Connection* connection) {
    forget_pending(connection);
    Link* link = link_of(connection);
    if (!link) return true;
    std::lock_guard lock(timer_mutex);
    link->awaiting_head = false;
    remove_anonymous_head(*link);
    return !link->closing;
  }

  // A request was admitted; its body, if any, is about to be read. An authenticated request
  // vouches for its connection. A body whose signature can only be verified once it has
  // arrived takes one of the few slots for such bodies, or is refused 503 SlowDown (returned);
  // every body gets its deadline.
  std::optional<Response> on_admitted(MHD_Connection* connection, Exchange& exchange) {
    if (exchange.admission->auth) vouch(connection);
    const auto* length_text = exchange.head.header("content-length");
    std::uint64_t length = 0;
    if (length_text)
      std::from_chars(length_text->data(), length_text->data() + length_text->size(), length);
    // No Content-Length and no Transfer-Encoding: no body (RFC 9112 §6.3).
    if (length_text ? length == 0 : !exchange.head.header("transfer-encoding")) return std::nullopt;
    if (!exchange.admission->auth) {
      CountedSlot slot(&unauthenticated_bodies);  // given back with the exchange, or now
      if (slot->fetch_add(1) >= limits.unauthenticated_bodies) {
        auto refusal = slow_down_response();
        refusal.set_header("Connection", "close");
        refusal.set_header("Retry-After", "1");  // such bodies are small and quick
        return refusal;
      }
      exchange.unauthenticated_body = std::move(slot);
    }
    auto* holder = holder_of(connection);
    if (!holder) return std::nullopt;
    // A chunked body is allowed the time of the largest body its request may carry.
    if (!length_text)
      length = exchange.admission->object_body ? k_max_object_body : k_max_control_body;
    const auto allowed =
        std::chrono::seconds(limits.body_timeout_seconds) +
        std::chrono::seconds(length / std::max<std::uint64_t>(limits.body_min_rate, 1));
    exchange.timed_body = true;
    std::lock_guard lock(timer_mutex);
    (*holder)->receiving_body = true;
    arm(*holder, SteadyClock::now() + allowed);
    return std::nullopt;
  }

  void vouch(MHD_Connection* connection) {
    Link* link = link_of(connection);
    if (!link || link->vouched) return;  // only its own event thread sets it
    std::lock_guard lock(timer_mutex);
    link->vouched = true;
  }

  // The body has arrived: its deadline no longer applies. False when the connection was
  // already answered (the deadline passed) and must just close.
  bool body_arrived(MHD_Connection* connection) {
    Link* link = link_of(connection);
    if (!link) return true;
    std::lock_guard lock(timer_mutex);
    link->receiving_body = false;
    return !link->closing;
  }

  void request_line_arrived(MHD_Connection* connection, Exchange* exchange) {
    t_pending_heads.push_back(PendingHead{connection, exchange});
    if (Link* link = link_of(connection)) {
      std::lock_guard lock(timer_mutex);
      link->request_line = true;
    }
  }

  // A request ended. Only one answered in full leaves its connection awaiting a next head; one
  // cut short (closed to make room, timed out, aborted) leaves a connection on its way out,
  // which must not count again among the anonymous heads and push out a live one.
  void request_completed(MHD_Connection* connection, MHD_RequestTerminationCode how) {
    forget_pending(connection);
    if (how != MHD_REQUEST_TERMINATED_COMPLETED_OK) return;
    const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (!info || !info->socket_context) return;
    std::lock_guard lock(timer_mutex);
    start_head(*static_cast<LinkHolder*>(info->socket_context));
  }

  static MHD_Result queue(MHD_Connection* connection, Response response, bool head_request) {
    const int status = response.status;
    MHD_Response* mhd = to_mhd(std::move(response), head_request);
    if (!mhd) return MHD_NO;
    const auto queued = MHD_queue_response(connection, static_cast<unsigned>(status), mhd);
    MHD_destroy_response(mhd);
    return queued;
  }

  static MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, std::size_t key_size,
                                   const char* value, std::size_t value_size) {
    auto* request = static_cast<Request*>(cls);
    request->headers.emplace_back(std::string(key, key_size),
                                  value ? std::string(value, value_size) : std::string{});
    return MHD_YES;
  }

  MHD_Result on_request(MHD_Connection* connection, const char* method, const char* upload_data,
                        std::size_t* upload_data_size, Exchange& exchange) {
    const bool head_request = exchange.head.method == "HEAD";
    if (exchange.timed_body && exchange.phase == Phase::body && *upload_data_size == 0) {
      exchange.timed_body = false;
      if (!body_arrived(connection)) return MHD_NO;
    }
    switch (exchange.phase) {
      case Phase::head: {
        if (!head_arrived(connection)) return MHD_NO;
        exchange.head.method = method;
        if (const Link* link = link_of(connection); link && link->over_cap) {
          // Beyond the connection limit: a clear refusal a client retries later, not a hang.
          exchange.phase = Phase::done;
          auto refusal = slow_down_response();
          refusal.set_header("Connection", "close");
          refusal.set_header("Retry-After", "1");  // a slot frees when a connection ends
          return queue(connection, std::move(refusal), exchange.head.method == "HEAD");
        }
        MHD_get_connection_values_n(connection, MHD_HEADER_KIND, collect_header, &exchange.head);
        std::size_t head_size = exchange.head.target.size() + exchange.head.method.size() + 12;
        for (const auto& [name, value] : exchange.head.headers)
          head_size += name.size() + value.size() + 4;
        if (head_size > limits.max_head) {
          Response too_large;
          too_large.status = 431;
          too_large.set_header("Connection", "close");
          return queue(connection, std::move(too_large), false);
        }
        if (faults.active()) {
          auto decision = faults.decide();
          exchange.ready = std::move(decision.failure);
          if (decision.delay.count() > 0) {
            exchange.phase = Phase::delayed;
            delay(connection, decision.delay);
            return MHD_YES;
          }
        }
        [[fallthrough]];
      }
      case Phase::delayed: {
        if (exchange.ready) {
          exchange.phase = Phase::done;
          return queue(connection, std::move(*exchange.ready), exchange.head.method == "HEAD");
        }
        auto admitted = handler.admit(exchange.head);
        if (!admitted) {
          exchange.phase = Phase::done;
          return queue(connection, std::move(admitted.error()), exchange.head.method == "HEAD");
        }
        exchange.admission = std::move(*admitted);
        if (auto refusal = on_admitted(connection, exchange)) {
          exchange.phase = Phase::done;
          return queue(connection, std::move(*refusal), exchange.head.method == "HEAD");
        }
        exchange.receiver = handler.receiver(exchange.head, *exchange.admission);
        exchange.phase = Phase::body;
        // Returning without a response lets libmicrohttpd send 100-continue and read the body.
        return MHD_YES;
      }
      case Phase::body: {
        if (*upload_data_size > 0) {
          const std::string_view piece(upload_data, *upload_data_size);
          *upload_data_size = 0;
          if (exchange.body_error) {
            exchange.discarded += piece.size();
            return exchange.discarded > k_max_discard ? MHD_NO : MHD_YES;
          }
          if (auto fed = exchange.receiver->feed(piece); !fed) {
            exchange.body_error = std::move(fed.error());
          }
          return MHD_YES;
        }
        exchange.phase = Phase::done;
        if (!exchange.body_error) {
          auto body = exchange.receiver->finish();
          if (body) {
            auto response = run(connection, exchange, *body);
            if (!response) return MHD_YES;
            return queue(connection, std::move(*response), head_request);
          }
          exchange.body_error = std::move(body.error());
        }
        auto response = handler.reject(exchange.head, &*exchange.admission, *exchange.body_error);
        response.set_header("Connection", "close");
        return queue(connection, std::move(response), head_request);
      }
      case Phase::working:
        exchange.phase = Phase::done;
        if (!exchange.ready) return MHD_NO;  // the writer thread failed (logged there)
        return queue(connection, std::move(*exchange.ready), head_request);
      case Phase::done:
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_NO;
  }
};

HttpServer::HttpServer(Handler& handler, FaultInjector& faults, HttpLimits limits)
    : impl_(std::make_unique<Impl>(handler, faults, limits)) {}

HttpServer::~HttpServer() {
  stop(std::chrono::milliseconds(0));
}

namespace {

// The socket: bound with SO_REUSEADDR and listening with the system's largest backlog, so a
// burst of connections (a fork batch opens 64 at once) is never dropped at SYN time.
std::expected<int, std::string> listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const auto service = std::to_string(port);
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || !found) {
    return std::unexpected(host + " is not a numeric IP address");
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ::freeaddrinfo(found);
    return std::unexpected(std::string("socket: ") + std::strerror(errno));
  }
  int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  const int bound = ::bind(fd, found->ai_addr, found->ai_addrlen);
  const int error = errno;
  ::freeaddrinfo(found);
  if (bound != 0 || ::listen(fd, SOMAXCONN) != 0) {
    ::close(fd);
    return std::unexpected(std::strerror(bound != 0 ? error : errno));
  }
  return fd;
}

int port_of(int fd) {
  sockaddr_storage address{};
  socklen_t size = sizeof address;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) return -1;
  if (address.ss_family == AF_INET6)
    return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
}

// Thousands of connections need thousands of descriptors: use the hard limit.
void raise_descriptor_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

std::expected<int, std::string> HttpServer::start(const std::string& host, int port) {
  auto& impl = *impl_;
  raise_descriptor_limit();
  auto fd = listen_on(host, port);
  if (!fd) return std::unexpected(fd.error());
  impl.listen_fd = *fd;

  using AccessHandler = MHD_Result (*)(void*, MHD_Connection*, const char*, const char*,
                                       const char*, const char*, std::size_t*, void**);
  const AccessHandler access = [](void* cls, MHD_Connection* connection, const char*,
                                  const char* method, const char*, const char* upload_data,
                                  std::size_t* upload_data_size, void** context) -> MHD_Result {
    auto* exchange = static_cast<Exchange*>(*context);
    if (!exchange) return MHD_NO;
    try {
      return static_cast<Impl*>(cls)->on_request(connection, method, upload_data, upload_data_size,
                                                 *exchange);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", method, loggable_target(exchange->head.target), e.what());
      return MHD_NO;
    }
  };
  using UriLog = void* (*)(void*, const char*, MHD_Connection*);
  const UriLog uri_log = [](void* cls, const char* uri, MHD_Connection* connection) -> void* {
    auto* exchange = new Exchange;
    exchange->head.target = uri;
    static_cast<Impl*>(cls)->request_line_arrived(connection, exchange);
    return exchange;
  };
  using Completed = void (*)(void*, MHD_Connection*, void**, MHD_RequestTerminationCode);
  const Completed completed = [](void* cls, MHD_Connection* connection, void** context,
                                 MHD_RequestTerminationCode how) {
    auto* exchange = static_cast<Exchange*>(*context);
    static_cast<Impl*>(cls)->request_completed(connection, how);
    if (exchange && exchange->handed_off) static_cast<Impl*>(cls)->answer_sent();
    delete exchange;  // removes a spooled body that was not adopted
    *context = nullptr;
  };
  using Notify = void (*)(void*, MHD_Connection*, void**, MHD_ConnectionNotificationCode);
  const Notify notify = [](void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
    auto* server = static_cast<Impl*>(cls);
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
      server->connection_started(connection, socket_context);
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
      server->connection_closed(connection, socket_context);
  };
  // Query strings and paths are parsed by the handler from the raw target: no unescaping.
  using Unescape = std::size_t (*)(void*, MHD_Connection*, char*);
  const Unescape keep = [](void*, MHD_Connection*, char* text) -> std::size_t {
    return std::strlen(text);
  };
  using Log = void (*)(void*, const char*, va_list);
  const Log log = [](void* cls, const char* format, va_list args) {
    char line[512];
    std::vsnprintf(line, sizeof line, format, args);
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    spdlog::debug("http: {}", text);
    // "Error processing request (HTTP response code is 400 ('<html>...Content-Length...')).":
    // logged just before libmicrohttpd queues its own page for a malformed Content-Length.
    constexpr std::string_view k_refusal = "Error processing request (HTTP response code is ";
    if (text.starts_with(k_refusal) && text.find("Content-Length") != std::string::npos) {
      unsigned status = 0;
      std::from_chars(text.data() + k_refusal.size(), text.data() + text.size(), status);
      static_cast<Impl*>(cls)->answer_bad_length(status);
    }
  };

  // The memory pool of a connection holds its head: a little more than the 64 KiB limit so
  // that the handler, not libmicrohttpd, answers heads between the limit and the pool size.
  const std::size_t pool = impl.limits.max_head + 32 * 1024;
  impl.daemon = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0,
      nullptr, nullptr, access, &impl, MHD_OPTION_EXTERNAL_LOGGER, log, &impl,
      MHD_OPTION_LISTEN_SOCKET, impl.listen_fd, MHD_OPTION_THREAD_POOL_SIZE,
      impl.limits.event_threads, MHD_OPTION_CONNECTION_LIMIT,
      impl.limits.connection_limit + impl.limits.refusal_reserve, MHD_OPTION_CONNECTION_TIMEOUT,
      impl.limits.idle_timeout_seconds, MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
      MHD_OPTION_URI_LOG_CALLBACK, uri_log, &impl, MHD_OPTION_NOTIFY_COMPLETED, completed, &impl,
      MHD_OPTION_NOTIFY_CONNECTION, notify, &impl, MHD_OPTION_UNESCAPE_CALLBACK, keep, nullptr,
      MHD_OPTION_END);
  if (!impl.daemon) {
    ::close(impl.listen_fd);
    impl.listen_fd = -1;
    return std::unexpected("libmicrohttpd could not start");
  }
  impl.timer_thread = std::thread([&impl] {
    pthread_setname_np(pthread_self(), "http-timer");  // the event threads are MHD-worker
    impl.run_timers();
  });
  impl.work_stop = false;
  for (unsigned i = 0; i < impl.limits.writer_threads; ++i)
    impl.writers.emplace_back([&impl] {
      pthread_setname_np(pthread_self(), "http-writer");
      impl.run_writer();
    });
  return port_of(impl.listen_fd);
}

void HttpServer::stop(std::chrono::milliseconds grace) {
  auto& impl = *impl_;
  if (!impl.daemon) return;
  MHD_quiesce_daemon(impl.daemon);  // no new connections
  {
    std::lock_guard lock(impl.timer_mutex);
    impl.timer_stop = true;
    impl.timer_wake.notify_one();
  }
  impl.timer_thread.join();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto* info = MHD_get_daemon_info(impl.daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    if (!info || info->num_connections == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Before the daemon goes: a writer thread or the store may still hold a connection's request,
  // and the answers they hand back are sent by the event threads.
  impl.stop_writers();
  impl.wait_for_answers(grace);
  MHD_stop_daemon(impl.daemon);
  impl.daemon = nullptr;
  if (impl.listen_fd >= 0) ::close(impl.listen_fd);
  impl.listen_fd = -1;
}

}  // namespace tfork::server
