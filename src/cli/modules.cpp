// SPDX-License-Identifier: Apache-2.0
// The executable's side of tfork/modules/modules.hpp: load, check, cache.
#include "tfork/modules/modules.hpp"

#include "tfork/core/module.hpp"
#include "tfork/version.hpp"

#include <cstring>
#include <string>

namespace tfork::modules {
namespace {

template <class Module>
const Module& load(const char* file, const char* entry) {
  using Entry = const Module* (*)();
  const auto* module = reinterpret_cast<Entry>(module_symbol(file, entry))();
  if (module == nullptr || module->size != sizeof(Module) ||
      std::strcmp(module->version, k_version) != 0 ||
      std::strcmp(module->compiler, __VERSION__) != 0) {
    throw TforkError(ErrorKind::other, "ModuleLoadFailed",
                     std::string(file) + " is from another build of tfork (" +
                         (module ? std::string(module->version) : "?") + "); reinstall tfork");
  }
  return *module;
}

}  // namespace

const CurlModule& curl() {
  static const CurlModule& module = load<CurlModule>("tfork-curl.so", "tfork_curl_module");
  return module;
}

const CryptoModule& crypto() {
  static const CryptoModule& module = load<CryptoModule>("tfork-crypto.so", "tfork_crypto_module");
  return module;
}

const ServeModule& serve() {
  static const ServeModule& module = load<ServeModule>("tfork-serve.so", "tfork_serve_module");
  return module;
}

const McpHttpModule& mcp_http() {
  static const McpHttpModule& module =
      load<McpHttpModule>("tfork-mcp-http.so", "tfork_mcp_http_module");
  return module;
}

}  // namespace tfork::modules
