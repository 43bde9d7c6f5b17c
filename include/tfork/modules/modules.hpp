// SPDX-License-Identifier: Apache-2.0
#pragma once
// The contract between the tfork executable and its loadable modules (tfork/core/module.hpp
// says why they exist: libcurl, libcrypto and the local store cost more to load than all the
// rest).
//
// Each module exports one C function, `tfork_curl_module`, `tfork_crypto_module`,
// `tfork_serve_module` or `tfork_mcp_http_module`, that returns a pointer to a struct of function
// pointers; nothing else crosses the boundary, and each function has one definition, in the module.
// The structs pass C++ types (Options, std::function, std::optional<Error>), so a module works only
// with the executable of the same build: same tfork version, same compiler, same struct layout. The
// loader checks `size`, `version` and `compiler` before the first call and refuses a module from
// another build with ModuleLoadFailed (exit 1) instead of crashing in it.

#include "tfork/core/error.hpp"
#include "tfork/crypto/primitives.hpp"
#include "tfork/http/transport.hpp"
#include "tfork/mcp/http_types.hpp"
#include "tfork/server/serve.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace tfork::modules {

struct CurlModule {
  std::size_t size;      // sizeof(CurlModule) where the module was built
  const char* version;   // tfork's version where the module was built
  const char* compiler;  // __VERSION__ where the module was built
  // The libcurl transport (http::make_curl_transport); the caller owns the result.
  http::Transport* (*make_transport)(const http::Options& options);
};

struct CryptoModule {
  std::size_t size;
  const char* version;
  const char* compiler;
  // OpenSSL's digests, HMAC, random bytes and base64 (crypto::openssl_primitives()).
  crypto::Primitives primitives;
};

using ReadyCallback =
    std::function<void(int port, const std::string& access_key, const std::string& secret_key)>;

struct ServeModule {
  std::size_t size;
  const char* version;
  const char* compiler;
  // server::run_server: runs until SIGINT/SIGTERM; why it could not start, or nullopt.
  std::optional<Error> (*run_server)(const server::ServeOptions& options,
                                     const ReadyCallback& on_ready);
  // server::verify_store: `tfork serve --verify`.
  std::optional<Error> (*verify_store)(const server::ServeOptions& options,
                                       const std::function<void(const std::string&)>& report);
};

struct McpHttpModule {
  std::size_t size;
  const char* version;
  const char* compiler;
  // The HTTP listener of `tfork mcp --listen` (libmicrohttpd): serves `handler` until `stop` is
  // set; why it could not start (a network error, exit 5), or nullopt. `on_ready` gets the
  // bound port.
  std::optional<Error> (*listen)(const mcp::ListenOptions& options, const mcp::HttpHandler& handler,
                                 const std::atomic<bool>& stop,
                                 const std::function<void(int port)>& on_ready);
};

// The modules, loaded on first use and checked against this build. Throw TforkError
// (ModuleNotFound, ModuleLoadFailed; exit 1) when a module is missing, cannot be loaded, has
// no entry point or comes from another build.
const CurlModule& curl();
const CryptoModule& crypto();
const ServeModule& serve();
const McpHttpModule& mcp_http();
// crypto().primitives: the executable's source of crypto::primitives() (src/main.cpp).
const crypto::Primitives& crypto_primitives();

}  // namespace tfork::modules

extern "C" {
const tfork::modules::CurlModule* tfork_curl_module();
const tfork::modules::CryptoModule* tfork_crypto_module();
const tfork::modules::ServeModule* tfork_serve_module();
const tfork::modules::McpHttpModule* tfork_mcp_http_module();
}
