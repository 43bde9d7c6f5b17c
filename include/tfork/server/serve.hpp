#pragma once
// `tfork serve`: the local Tigris-compatible store (cli.md §8, server-design.md).

#include "tfork/server/variance.hpp"
#include "tfork/store/store.hpp"

#include <filesystem>
#include <functional>
#include <string>

namespace tfork::server {

struct ServeOptions {
  std::filesystem::path data_dir;
  std::string host = "127.0.0.1";
  int port = 9000;              // 0: let the OS pick
  std::string root_access_key;  // empty: from the data directory (generated once)
  std::string root_secret_key;
  int latency_ms = 0;      // delay every response, each request on its own
  double fail_rate = 0.0;  // answer this share of requests with 503 SlowDown
  int threads = 8;         // event threads of the HTTP server (delays do not hold one)
  store::Durability durability = store::Durability::normal;
  VarianceOptions variance;  // --quirks, --consistency-delay
};

// Runs until SIGINT/SIGTERM; returns the process exit code. `on_ready` is called once the
// socket is bound, with the port and the root credentials in use.
int run_server(const ServeOptions& options,
               const std::function<void(int port, const std::string& access_key,
                                        const std::string& secret_key)>& on_ready);

struct RootCredentials {
  std::string access_key;
  std::string secret_key;
  std::string source;  // "flags", "environment" or the credentials file's path
};

// Root credentials: the options, else TFORK_ROOT_ACCESS_KEY / TFORK_ROOT_SECRET_KEY, else
// <data_dir>/root-credentials (created once, mode 0600). Throws std::runtime_error on I/O
// failure or a half-given pair.
RootCredentials resolve_root_credentials(const ServeOptions& options);

}  // namespace tfork::server
