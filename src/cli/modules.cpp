// SPDX-License-Identifier: Apache-2.0
// The executable's side of tfork/modules/modules.hpp: load, check, cache.
#include "tfork/modules/modules.hpp"

#include "tfork/core/module.hpp"
#include "tfork/version.hpp"

#include <cstdlib>
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

// libcurl as Debian builds it links libldap and librtmp, which link GnuTLS, whose library
// constructor initialises it (its crypto backend, p11-kit's trust modules: some 0.8 MiB of
// memory) though tfork's transfers never use it: they are http and https only
// (CURLOPT_PROTOCOLS_STR), over OpenSSL. GNUTLS_NO_IMPLICIT_INIT=1 turns that off
// (gnutls_global_init(3)); it is set only while the module loads, so no agent inherits it, and
// left alone when the user set it.
const CurlModule& load_curl() {
  constexpr const char* k_no_init = "GNUTLS_NO_IMPLICIT_INIT";
  const bool set = std::getenv(k_no_init) == nullptr && ::setenv(k_no_init, "1", 0) == 0;
  try {
    const auto& module = load<CurlModule>("tfork-curl.so", "tfork_curl_module");
    if (set) ::unsetenv(k_no_init);
    return module;
  } catch (...) {
    if (set) ::unsetenv(k_no_init);
    throw;
  }
}

}  // namespace

const CurlModule& curl() {
  static const CurlModule& module = load_curl();
  return module;
}

const CryptoModule& crypto() {
  static const CryptoModule& module = load<CryptoModule>("tfork-crypto.so", "tfork_crypto_module");
  return module;
}

const crypto::Primitives& crypto_primitives() {
  return crypto().primitives;
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
