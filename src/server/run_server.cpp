// `tfork serve` put together (cli.md §8): the data directory, the store, the handler with its
// fault injection, the HTTP server, and the wait for SIGINT/SIGTERM — one job per function.
#include "tfork/server/fault_injection.hpp"
#include "tfork/server/handler.hpp"
#include "tfork/server/http_server.hpp"
#include "tfork/server/serve.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <pthread.h>
#include <sys/stat.h>

namespace tfork::server {
namespace {

// Exit code 6 (cli.md §6, conflict): the directory belongs to something else.
constexpr int k_exit_not_ours = 6;

// The data directory holds every access key's secret (meta.db) and all object data: only
// its owner may read it (cli.md §7: files holding secrets are mode 0600). The umask covers
// every file the store creates from here on. A new or empty directory, or one an earlier run
// made (it has meta.db), becomes 0700; any other existing directory is refused untouched,
// because opening the store would empty its tmp/ and sweep unknown files under blobs/.
// Returns 0, or the exit code.
int prepare_data_dir(const std::filesystem::path& dir) {
  ::umask(0077);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    if (!std::filesystem::is_directory(dir, ec)) {
      spdlog::error("--data {} is not a directory", dir.string());
      return k_exit_not_ours;
    }
    const bool empty = std::filesystem::is_empty(dir, ec);
    if (!ec && !empty && !std::filesystem::exists(dir / "meta.db", ec)) {
      spdlog::error(
          "--data {} is not a tfork data directory (it has files but no meta.db); "
          "use a new or empty directory",
          dir.string());
      return k_exit_not_ours;
    }
  } else {
    std::filesystem::create_directories(dir, ec);
  }
  if (!ec) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  if (ec) {
    spdlog::error("cannot prepare {}: {}", dir.string(), ec.message());
    return 1;
  }
  return 0;
}

// SIGINT and SIGTERM are blocked in every thread (the mask is inherited), and taken here.
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

}  // namespace

int run_server(const ServeOptions& options,
               const std::function<void(int port, const std::string& access_key,
                                        const std::string& secret_key)>& on_ready) {
  if (const int refused = prepare_data_dir(options.data_dir)) return refused;
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
  HandlerOptions handler_options;
  handler_options.root_access_key = root.access_key;
  handler_options.root_secret_key = root.secret_key;
  handler_options.variance = options.variance;
  Handler handler(*store, std::move(handler_options));
  FaultInjector faults(
      FaultOptions{std::chrono::milliseconds(options.latency_ms), options.fail_rate});

  SignalWait signals;  // before any thread starts
  HttpLimits limits;
  limits.event_threads = static_cast<unsigned>(std::clamp(options.threads, 2, 64));
  HttpServer http(handler, faults, limits);
  const auto port = http.start(options.host, options.port);
  if (!port) {
    spdlog::error("cannot listen on {}:{}: {}", options.host, options.port, port.error());
    return 1;
  }
  spdlog::info("tfork serve: listening on {}:{}, data in {}, root key from {}", options.host, *port,
               options.data_dir.string(), root.source);
  on_ready(*port, root.access_key, root.secret_key);
  const int signal = signals.wait();
  spdlog::info("{}: finishing requests in flight, then exiting",
               signal == SIGINT ? "SIGINT" : "SIGTERM");
  http.stop();
  spdlog::info("tfork serve: stopped");
  return 0;
}

}  // namespace tfork::server
