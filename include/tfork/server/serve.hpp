#pragma once
// `tfork serve`: the local Tigris-compatible store (cli.md §8, server-design.md).

#include <filesystem>
#include <functional>
#include <string>

namespace tfork::server {

struct ServeOptions {
  std::filesystem::path data_dir;
  std::string host = "127.0.0.1";
  int port = 9000;  // 0: let the OS pick
  std::string root_access_key;  // empty: from the data directory (generated once)
  std::string root_secret_key;
  int latency_ms = 0;       // delay every response, each request on its own
  double fail_rate = 0.0;   // answer this share of requests with 503 SlowDown
  int threads = 128;
};

// Runs until SIGINT/SIGTERM; returns the process exit code. `on_ready` is called once the
// socket is bound, with the port and the root credentials in use.
int run_server(const ServeOptions& options,
               const std::function<void(int port, const std::string& access_key,
                                        const std::string& secret_key)>& on_ready);

}  // namespace tfork::server
