// The socket layer of `tfork serve` over GNU libmicrohttpd (see http_server.hpp for why).
//
// Per request, libmicrohttpd calls on_request several times on the connection's event thread:
//   1. once the head has arrived (no body read yet, no 100-continue sent): fault injection,
//      then Handler::admit authenticates from the head; an error is answered right there;
//   2. for each piece of body: fed to the Handler's BodyReceiver (a file or a small buffer);
//   3. once the body is complete: Handler::finish, and the response is queued.
// The raw request target comes from the URI log callback (before any unescaping), and header
// values are taken as received: nothing is decoded before the signature is checked.
#include "tfork/server/http_server.hpp"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <fcntl.h>
#include <microhttpd.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <queue>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace tfork::server {
namespace {

// After a body error, up to this much of the rest of the body is read and dropped so that the
// client sees the error; beyond it the connection is closed.
constexpr std::uint64_t k_max_discard = std::uint64_t{16} << 20;

enum class Phase { head, delayed, body, done };

struct Exchange {
  Request head;
  Phase phase = Phase::head;
  std::optional<Admission> admission;
  std::unique_ptr<BodyReceiver> receiver;
  std::optional<S3Error> body_error;  // found while the body streamed; answered at its end
  std::uint64_t discarded = 0;
  std::optional<Response> ready;  // an injected failure, answered after the delay
};

// Streams a response's file segments with pread, in order, from files the handler opened.
struct SegmentReader {
  std::vector<FileSegment> segments;
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

std::shared_ptr<const OpenFile> open_segment(const FileSegment& segment) {
  if (segment.file) return segment.file;
  const int fd = ::open(segment.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  return std::make_shared<const OpenFile>(fd);
}

MHD_Response* to_mhd(Response response, bool head_request) {
  MHD_Response* out = nullptr;
  if (!response.file_body.empty()) {
    auto reader = std::make_unique<SegmentReader>();
    for (const auto& segment : response.file_body) {
      auto file = open_segment(segment);
      if (!file) {
        spdlog::error("cannot open blob {}", segment.path.string());
        return nullptr;
      }
      reader->files.push_back(std::move(file));
    }
    reader->segments = std::move(response.file_body);
    const auto length = static_cast<std::uint64_t>(response.body_length());
    if (reader->segments.size() == 1) {
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

  // Delayed requests (--latency): suspended connections resumed by one timer thread.
  struct Timer {
    std::chrono::steady_clock::time_point due;
    MHD_Connection* connection;
    bool operator>(const Timer& other) const { return due > other.due; }
  };
  std::mutex timer_mutex;
  std::condition_variable timer_wake;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  bool timer_stop = false;
  std::thread timer_thread;

  Impl(Handler& h, FaultInjector& f, HttpLimits l) : handler(h), faults(f), limits(l) {}

  void run_timers() {
    std::unique_lock lock(timer_mutex);
    while (!timer_stop) {
      if (timers.empty()) {
        timer_wake.wait(lock);
        continue;
      }
      const auto due = timers.top().due;
      if (timer_wake.wait_until(lock, due) == std::cv_status::timeout ||
          std::chrono::steady_clock::now() >= due) {
        while (!timers.empty() && timers.top().due <= std::chrono::steady_clock::now()) {
          MHD_resume_connection(timers.top().connection);
          timers.pop();
        }
      }
    }
    while (!timers.empty()) {  // stopping: nobody waits any longer
      MHD_resume_connection(timers.top().connection);
      timers.pop();
    }
  }

  void delay(MHD_Connection* connection, std::chrono::milliseconds by) {
    MHD_suspend_connection(connection);
    std::lock_guard lock(timer_mutex);
    timers.push(Timer{std::chrono::steady_clock::now() + by, connection});
    timer_wake.notify_one();
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
    switch (exchange.phase) {
      case Phase::head: {
        exchange.head.method = method;
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
            return queue(connection,
                         handler.finish(exchange.head, *exchange.admission, std::move(*body)),
                         head_request);
          }
          exchange.body_error = std::move(body.error());
        }
        auto response = handler.reject(exchange.head, &*exchange.admission, *exchange.body_error);
        response.set_header("Connection", "close");
        return queue(connection, std::move(response), head_request);
      }
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
  const UriLog uri_log = [](void*, const char* uri, MHD_Connection*) -> void* {
    auto* exchange = new Exchange;
    exchange->head.target = uri;
    return exchange;
  };
  using Completed = void (*)(void*, MHD_Connection*, void**, MHD_RequestTerminationCode);
  const Completed completed = [](void*, MHD_Connection*, void** context,
                                 MHD_RequestTerminationCode) {
    delete static_cast<Exchange*>(*context);  // removes a spooled body that was not adopted
    *context = nullptr;
  };
  using Notify = void (*)(void*, MHD_Connection*, void**, MHD_ConnectionNotificationCode);
  const Notify notify = [](void*, MHD_Connection* connection, void**,
                           MHD_ConnectionNotificationCode code) {
    if (code != MHD_CONNECTION_NOTIFY_STARTED) return;
    // Small responses on a reused connection must not wait for the client's delayed ACK
    // (Nagle's algorithm adds ~40 ms per response otherwise).
    if (const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD)) {
      int yes = 1;
      ::setsockopt(info->connect_fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    }
  };
  // Query strings and paths are parsed by the handler from the raw target: no unescaping.
  using Unescape = std::size_t (*)(void*, MHD_Connection*, char*);
  const Unescape keep = [](void*, MHD_Connection*, char* text) -> std::size_t {
    return std::strlen(text);
  };
  using Log = void (*)(void*, const char*, va_list);
  const Log log = [](void*, const char* format, va_list args) {
    char line[512];
    std::vsnprintf(line, sizeof line, format, args);
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
      text.pop_back();
    spdlog::debug("http: {}", text);
  };

  // The memory pool of a connection holds its head: a little more than the 64 KiB limit so
  // that the handler, not libmicrohttpd, answers heads between the limit and the pool size.
  const std::size_t pool = impl.limits.max_head + 32 * 1024;
  impl.daemon = MHD_start_daemon(
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0,
      nullptr, nullptr, access, &impl, MHD_OPTION_LISTEN_SOCKET, impl.listen_fd,
      MHD_OPTION_THREAD_POOL_SIZE, impl.limits.event_threads, MHD_OPTION_CONNECTION_LIMIT,
      impl.limits.connection_limit, MHD_OPTION_CONNECTION_TIMEOUT, impl.limits.idle_timeout_seconds,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool, MHD_OPTION_URI_LOG_CALLBACK, uri_log, nullptr,
      MHD_OPTION_NOTIFY_COMPLETED, completed, nullptr, MHD_OPTION_NOTIFY_CONNECTION, notify,
      nullptr, MHD_OPTION_UNESCAPE_CALLBACK, keep, nullptr, MHD_OPTION_EXTERNAL_LOGGER, log,
      nullptr, MHD_OPTION_END);
  if (!impl.daemon) {
    ::close(impl.listen_fd);
    impl.listen_fd = -1;
    return std::unexpected("libmicrohttpd could not start");
  }
  impl.timer_thread = std::thread([&impl] { impl.run_timers(); });
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
  MHD_stop_daemon(impl.daemon);
  impl.daemon = nullptr;
  if (impl.listen_fd >= 0) ::close(impl.listen_fd);
  impl.listen_fd = -1;
}

}  // namespace tfork::server
