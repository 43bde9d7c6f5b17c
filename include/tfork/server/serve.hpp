// SPDX-License-Identifier: Apache-2.0
#pragma once
// `tfork serve`: the local Tigris-compatible store (cli.md §8, server-design.md).

#include "tfork/core/error.hpp"
#include "tfork/server/variance.hpp"
#include "tfork/store/store.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace tfork::server {

struct ServeOptions {
  std::filesystem::path data_dir;
  std::string host = "127.0.0.1";
  int port = 9000;              // 0: let the OS pick
  std::string root_access_key;  // empty: from the data directory (generated once)
  std::string root_secret_key;
  // TFORK_ROOT_ACCESS_KEY / TFORK_ROOT_SECRET_KEY: the server reads no environment itself;
  // the command passes these from the one it was given.
  std::string environment_root_access_key;
  std::string environment_root_secret_key;
  int latency_ms = 0;                 // delay every response, each request on its own
  double fail_rate = 0.0;             // answer this share of requests with 503 SlowDown
  int threads = 0;                    // event threads of the HTTP server; 0: one per core
  int max_connections = 4096;         // open at once; more are answered 503 SlowDown
  int max_anonymous_per_peer = 1024;  // awaiting a head, from one address; 0: no limit
  int head_timeout_seconds = 30;      // a request head must arrive within this
  int body_timeout_seconds = 300;     // a body within this of its head (plus 1 s per MiB)
  store::Durability durability = store::Durability::normal;
  VarianceOptions variance;  // --quirks, --consistency-delay
};

// Runs until SIGINT/SIGTERM, which it takes with sigwait: they must be blocked in every thread
// (main() blocks them first of all; run_server blocks them again before it starts any thread).
// Returns why it could not start (the data directory, the store, the root credentials, or the
// address: a network error, exit 5), or nullopt after a clean stop, also when a signal came
// before it listened (then on_ready is never called). `on_ready` is called once the socket
// listens, with the port and the root credentials in use; what it throws stops the server.
std::optional<Error> run_server(const ServeOptions& options,
                                const std::function<void(int port, const std::string& access_key,
                                                         const std::string& secret_key)>& on_ready);

// `tfork serve --verify`: checks every blob of options.data_dir against its SHA-256 and its
// recorded size, without starting a server. `report` gets one line per corrupt or missing
// blob, then a summary line. An error (exit 1) when a blob is bad or the data directory cannot
// be opened (not a tfork data directory, or a server holds it); nullopt when all is well.
std::optional<Error> verify_store(const ServeOptions& options,
                                  const std::function<void(const std::string& line)>& report);

struct RootCredentials {
  std::string access_key;
  std::string secret_key;
  std::string source;  // "flags", "environment" or the credentials file's path
};

// Root credentials: the options, else TFORK_ROOT_ACCESS_KEY / TFORK_ROOT_SECRET_KEY (as the
// options carry them), else
// <data_dir>/root-credentials (created once, mode 0600). Throws std::runtime_error on I/O
// failure or a half-given pair.
RootCredentials resolve_root_credentials(const ServeOptions& options);

}  // namespace tfork::server
