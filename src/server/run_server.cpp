// SPDX-License-Identifier: Apache-2.0
// `tfork serve` put together (cli.md §8): the data directory, the store, the handler with its
// fault injection, the HTTP server, and the wait for SIGINT/SIGTERM — one job per function.
#include "tfork/server/fault_injection.hpp"
#include "tfork/server/handler.hpp"
#include "tfork/server/http_server.hpp"
#include "tfork/server/serve.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <malloc.h>
#include <pthread.h>
#include <sys/stat.h>
#include <thread>

namespace tfork::server {
namespace {

Error serve_error(ErrorKind kind, std::string code, std::string message) {
  return Error{kind, std::move(code), std::move(message), 0, {}};
}

// The data directory holds every access key's secret (meta.db) and all object data: only
// its owner may read it (cli.md §7: files holding secrets are mode 0600). The umask covers
// every file the store creates from here on. A new or empty directory, or one an earlier run
// made (it has meta.db), becomes 0700; any other existing directory is refused untouched
// (a conflict, exit 6), because opening the store would empty its tmp/ and sweep unknown
// files under blobs/.
std::optional<Error> prepare_data_dir(const std::filesystem::path& dir) {
  ::umask(0077);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec)) {
      return serve_error(ErrorKind::conflict, "DataDirectoryNotOurs",
                         "--data " + dir.string() + " is not a directory");
    }
    const bool empty = std::filesystem::is_empty(dir, ec);
    if (!ec && !empty && !std::filesystem::exists(dir / "meta.db", ec)) {
      return serve_error(ErrorKind::conflict, "DataDirectoryNotOurs",
                         "--data " + dir.string() +
                             " is not a tfork data directory (it has files but no meta.db); "
                             "use a new or empty directory");
    }
  } else {
    std::filesystem::create_directories(dir, ec);
  }
  if (!ec) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  if (ec) {
    return serve_error(ErrorKind::other, "DataDirectoryUnusable",
                       "cannot prepare " + dir.string() + ": " + ec.message());
  }
  return std::nullopt;
}

// SIGINT and SIGTERM are blocked in every thread and taken here, by sigwait. main() blocked
// them before any thread started (cli::block_interrupts); blocking them again here keeps
// run_server right when it is called from elsewhere, since every thread it starts inherits
// the mask. A signal that arrives before the server listens stays pending until taken.
class SignalWait {
 public:
  SignalWait() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGINT);
    sigaddset(&signals_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals_, &previous_);
  }
  ~SignalWait() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalWait(const SignalWait&) = delete;
  SignalWait& operator=(const SignalWait&) = delete;

  // The signal already pending, if one is: taken without waiting.
  std::optional<int> arrived() {
    const timespec now{};
    const int signal = sigtimedwait(&signals_, nullptr, &now);
    if (signal > 0) return signal;
    return std::nullopt;
  }

  int wait() {
    int signal = 0;
    while (sigwait(&signals_, &signal) != 0) {
    }
    return signal;
  }

 private:
  sigset_t signals_{};
  sigset_t previous_{};
};

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : "SIGTERM";
}

}  // namespace

std::optional<Error> run_server(
    const ServeOptions& options,
    const std::function<void(int port, const std::string& access_key,
                             const std::string& secret_key)>& on_ready) {
  SignalWait signals;  // before any thread starts
  if (auto refused = prepare_data_dir(options.data_dir)) return refused;
  // The store takes <data>/LOCK first, so two servers never share a directory.
  auto opened = store::Store::open(options.data_dir, store::StoreOptions{options.durability});
  if (!opened) {
    return serve_error(
        ErrorKind::other, "StoreUnusable",
        "cannot open the store in " + options.data_dir.string() + ": " + opened.error().message);
  }
  std::unique_ptr<store::Store> store = std::move(*opened);
  RootCredentials root;
  try {
    root = resolve_root_credentials(options);
  } catch (const std::exception& e) {
    return serve_error(ErrorKind::other, "RootCredentials", e.what());
  }
  HandlerOptions handler_options;
  handler_options.root_access_key = root.access_key;
  handler_options.root_secret_key = root.secret_key;
  handler_options.variance = options.variance;
  Handler handler(*store, std::move(handler_options));
  FaultInjector faults(
      FaultOptions{std::chrono::milliseconds(options.latency_ms), options.fail_rate});

  if (const auto early = signals.arrived()) {
    // Asked to stop before listening: a clean stop that starts nothing (cli.md §8).
    spdlog::info("{} before listening: exiting", signal_name(*early));
    return std::nullopt;
  }
  // glibc gives memory back to the kernel as soon as 128 KiB lie free at the top of a heap,
  // and each thread's heap then faults the same pages in again on its next request: that
  // churn cost a 100-key listing two thirds of its CPU time. Up to 8 MiB stay with a heap.
  ::mallopt(M_TRIM_THRESHOLD, 8 << 20);
  ::mallopt(M_TOP_PAD, 1 << 20);
  HttpLimits limits;
  // One event thread per core: reads run on them, and more threads than cores only add
  // waits for a time slice to the latency of the requests each one holds.
  const int threads =
      options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  limits.event_threads = static_cast<unsigned>(std::clamp(threads, 2, 16));
  limits.connection_limit = static_cast<unsigned>(std::max(options.max_connections, 1));
  limits.anonymous_per_peer = static_cast<unsigned>(std::max(options.max_anonymous_per_peer, 0));
  limits.head_timeout_seconds = static_cast<unsigned>(std::max(options.head_timeout_seconds, 1));
  limits.body_timeout_seconds = static_cast<unsigned>(std::max(options.body_timeout_seconds, 1));
  HttpServer http(handler, faults, limits);
  const auto port = http.start(options.host, options.port);
  if (!port) {
    // A network error (exit 5, cli.md §6), like a client that cannot connect.
    return serve_error(
        ErrorKind::network, "ListenFailed",
        fmt::format("cannot listen on {}:{}: {}", options.host, options.port, port.error()));
  }
  // The listening line itself is the command's (on stderr whatever -v says).
  spdlog::info("tfork serve: data in {}, root key from {}", options.data_dir.string(), root.source);
  on_ready(*port, root.access_key, root.secret_key);
  const int signal = signals.wait();
  spdlog::info("{}: finishing requests in flight, then exiting", signal_name(signal));
  http.stop();
  spdlog::info("tfork serve: stopped");
  return std::nullopt;
}

}  // namespace tfork::server
