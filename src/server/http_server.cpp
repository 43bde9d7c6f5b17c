// The thin socket layer of `tfork serve` (style.md #8): cpp-httplib in, the pure Handler in
// the middle, plus the fault injection of cli.md §8 (--latency, --fail-rate) around it.
#include "tfork/server/handler.hpp"
#include "tfork/server/serve.hpp"
#include "tfork/server/xml_render.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <pthread.h>
#include <random>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>

namespace tfork::server {
namespace {

// A single PUT may be up to 5 GiB (S3's limit), plus aws-chunked framing.
constexpr std::size_t k_max_body = (std::size_t{5} << 30) + (std::size_t{64} << 20);
constexpr std::size_t k_stream_chunk = std::size_t{1} << 20;

Request to_request(const httplib::Request& in, std::string body) {
  Request out;
  out.method = in.method;
  out.target = in.target;
  out.headers.reserve(in.headers.size());
  for (const auto& [name, value] : in.headers) {
    // cpp-httplib adds these to the request it hands over; they were not on the wire.
    if (name == "REMOTE_ADDR" || name == "REMOTE_PORT" || name == "LOCAL_ADDR" ||
        name == "LOCAL_PORT") {
      continue;
    }
    out.headers.emplace_back(name, value);
  }
  out.body = std::move(body);
  return out;
}

// Streams the file segments of a response in order, reading each blob file sequentially.
class SegmentStreamer {
 public:
  explicit SegmentStreamer(std::vector<FileSegment> segments) : segments_(std::move(segments)) {}

  bool provide(std::size_t offset, std::size_t length, httplib::DataSink& sink) {
    if (offset != sent_) return false;  // cpp-httplib asks sequentially; anything else is a bug
    // Advance to the segment holding `offset`.
    while (index_ < segments_.size() && position_ >= segments_[index_].length) {
      ++index_;
      position_ = 0;
      file_.close();
    }
    if (index_ >= segments_.size()) return false;
    const auto& segment = segments_[index_];
    if (!file_.is_open()) {
      file_.open(segment.path, std::ios::binary);
      if (!file_) {
        spdlog::error("cannot open blob {}", segment.path.string());
        return false;
      }
      file_.seekg(segment.offset + position_);
    }
    const auto want = std::min<std::size_t>(
        {length, k_stream_chunk, static_cast<std::size_t>(segment.length - position_)});
    buffer_.resize(want);
    file_.read(buffer_.data(), static_cast<std::streamsize>(want));
    const auto got = static_cast<std::size_t>(file_.gcount());
    if (got == 0) {
      spdlog::error("blob {} is shorter than its record", segment.path.string());
      return false;
    }
    position_ += static_cast<std::int64_t>(got);
    sent_ += got;
    return sink.write(buffer_.data(), got);
  }

 private:
  std::vector<FileSegment> segments_;
  std::size_t index_ = 0;
  std::int64_t position_ = 0;  // within the current segment
  std::size_t sent_ = 0;
  std::ifstream file_;
  std::string buffer_;
};

void to_httplib(Response response, const httplib::Request& request, httplib::Response& out) {
  out.status = response.status;
  std::string content_type;
  for (auto& [name, value] : response.headers) {
    if (iequals(name, "Content-Type")) {
      content_type = value;
      continue;
    }
    out.set_header(name, value);
  }
  const auto length = response.body_length();
  if (!response.file_body.empty() || (request.method == "HEAD" && response.content_length)) {
    if (length > 0) {
      auto streamer = std::make_shared<SegmentStreamer>(std::move(response.file_body));
      out.set_content_provider(
          static_cast<std::size_t>(length), content_type,
          [streamer](std::size_t offset, std::size_t size, httplib::DataSink& sink) {
            return streamer->provide(offset, size, sink);
          });
    } else if (!content_type.empty()) {
      out.set_header("Content-Type", content_type);
    }
    return;
  }
  if (!content_type.empty()) out.set_header("Content-Type", content_type);
  out.body = std::move(response.body);
}

Response slow_down() {
  Response response;
  response.status = 503;
  S3Error error = make_error(Err::slow_down);
  const auto request_id = new_request_id();
  response.body = render_error(error, "/", request_id);
  response.set_header("Content-Type", "application/xml");
  response.set_header("x-amz-request-id", request_id);
  response.set_header("Retry-After", "1");
  return response;
}

// Waits for SIGINT/SIGTERM (blocked in every thread) and stops the server.
class SignalWatcher {
 public:
  explicit SignalWatcher(httplib::Server& server) {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
    thread_ = std::thread([this, &server] {
      while (!done_) {
        timespec timeout{0, 200'000'000};
        const int signal = sigtimedwait(&signals_, nullptr, &timeout);
        if (signal == SIGINT || signal == SIGTERM) {
          spdlog::info("{}: finishing requests in flight, then exiting",
                       signal == SIGINT ? "SIGINT" : "SIGTERM");
          server.stop();
          return;
        }
      }
    });
  }
  ~SignalWatcher() {
    done_ = true;
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

 private:
  sigset_t signals_{};
  sigset_t previous_{};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace

int run_server(const ServeOptions& options,
               const std::function<void(int port, const std::string& access_key,
                                        const std::string& secret_key)>& on_ready) {
  // The data directory holds every access key's secret (meta.db) and all object data: only
  // its owner may read it (cli.md §7: files holding secrets are mode 0600). The umask covers
  // every file the store creates from here on; the chmod, a directory made by an older run.
  ::umask(0077);
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (!ec) {
    std::filesystem::permissions(options.data_dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  if (ec) {
    spdlog::error("cannot prepare {}: {}", options.data_dir.string(), ec.message());
    return 1;
  }
  // The store takes <data>/LOCK first, so two servers never share a directory.
  auto opened = store::Store::open(options.data_dir, store::StoreOptions{options.durability});
  if (!opened) {
    spdlog::error("cannot open the store in {}: {}", options.data_dir.string(),
                  opened.error().message);
    return 1;
  }
  std::unique_ptr<store::Store> store = std::move(*opened);
  RootCredentials root;
  try {
    root = resolve_root_credentials(options);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  Handler handler(*store, HandlerOptions{root.access_key, root.secret_key});

  httplib::Server server;
  const auto threads = static_cast<std::size_t>(std::max(options.threads, 2));
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_keep_alive_max_count(100);
  // httplib notices a stop only between keep-alive waits, so an idle connection holds
  // shutdown for up to this long; 5 s (Node's and httplib's default) bounds SIGTERM to that,
  // and clients reopen idle connections routinely.
  server.set_keep_alive_timeout(5);
  server.set_read_timeout(60);
  server.set_write_timeout(60);
  server.set_payload_max_length(k_max_body);

  std::mutex random_mutex;
  std::mt19937_64 random{std::random_device{}()};
  auto serve = [&](const httplib::Request& request, httplib::Response& out, std::string body) {
    // Fault injection wraps the handler (cli.md §8): the delay is per request, in its own
    // worker; the failure is decided before the handler does anything.
    if (options.latency_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options.latency_ms));
    }
    if (options.fail_rate > 0) {
      double draw = 0;
      {
        std::lock_guard lock(random_mutex);
        draw = std::uniform_real_distribution<double>(0.0, 1.0)(random);
      }
      if (draw < options.fail_rate) return to_httplib(slow_down(), request, out);
    }
    // S3 Range rules are the handler's (a multi-range request gets the whole object), so
    // cpp-httplib must not slice the body again: its parsed ranges are dropped. The Request
    // object is non-const inside cpp-httplib; only the handler signature adds const.
    const_cast<httplib::Request&>(request).ranges.clear();
    to_httplib(handler.handle(to_request(request, std::move(body))), request, out);
  };

  server.Get(".*", [&](const httplib::Request& request, httplib::Response& out) {
    serve(request, out, {});
  });
  // Bodies are read here rather than by cpp-httplib, which would wait for EOF on a PUT that
  // has neither Content-Length nor chunked framing (e.g. `curl -X PUT` without data).
  const httplib::Server::HandlerWithContentReader with_body =
      [&](const httplib::Request& request, httplib::Response& out,
          const httplib::ContentReader& reader) {
        std::string body;
        const bool framed =
            request.has_header("Content-Length") || request.has_header("Transfer-Encoding");
        if (framed) {
          if (request.get_header_value("Content-Type").starts_with("multipart/form-data")) {
            // Browser POST uploads are not supported; the body is left unread.
            out.set_header("Connection", "close");
            return to_httplib(
                [] {
                  Response r;
                  r.status = 501;
                  r.body = render_error(make_error(Err::not_implemented), "/", new_request_id());
                  r.set_header("Content-Type", "application/xml");
                  return r;
                }(),
                request, out);
          }
          const bool complete = reader([&](const char* data, std::size_t size) {
            body.append(data, size);
            return true;
          });
          if (!complete) {
            out.status = 400;
            out.set_header("Connection", "close");
            return;
          }
        }
        serve(request, out, std::move(body));
      };
  server.Put(".*", with_body);
  server.Post(".*", with_body);
  server.Delete(".*", with_body);
  server.Patch(".*", with_body);
  server.set_logger([](const httplib::Request& request, const httplib::Response& response) {
    spdlog::debug("{} {} {}", request.method, loggable_target(request.target), response.status);
  });
  server.set_exception_handler([](const httplib::Request& request, httplib::Response& out,
                                  std::exception_ptr error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", request.method, loggable_target(request.target), e.what());
    } catch (...) {
      spdlog::error("{} {}: unknown exception", request.method, loggable_target(request.target));
    }
    out.status = 500;
  });

  // cpp-httplib 0.11 listens with a backlog of 5, so a burst of connections (a fork batch
  // opens 64 at once) overflows the accept queue and the kernel drops SYNs, which clients
  // retry only after 1, 3, 7... seconds. Its socket-options hook sees the listening socket
  // before bind, so it is kept here and listened on again with the system's maximum backlog.
  int listening_socket = -1;
  server.set_socket_options([&listening_socket](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);  // httplib's default
    listening_socket = sock;
  });

  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
    if (port < 0) port = -1;
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    spdlog::error("cannot listen on {}:{} (in use, or not a local address)", options.host,
                  options.port);
    return 1;
  }
  if (listening_socket >= 0 && ::listen(listening_socket, SOMAXCONN) != 0) {
    spdlog::warn("could not raise the listen backlog: {}", std::strerror(errno));
  }
  spdlog::info("tfork serve: listening on {}:{}, data in {}, root key from {}", options.host, port,
               options.data_dir.string(), root.source);
  {
    SignalWatcher watcher(server);
    on_ready(port, root.access_key, root.secret_key);
    // Returns after server.stop(): the accept loop ends and the pool finishes the
    // requests in flight before it is destroyed.
    server.listen_after_bind();
  }
  spdlog::info("tfork serve: stopped");
  return 0;
}

}  // namespace tfork::server
