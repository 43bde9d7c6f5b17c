// SPDX-License-Identifier: Apache-2.0
// The tfork-serve.so module: the local store (SQLite, libmicrohttpd) behind one C entry point
// (tfork/modules/modules.hpp).
#include "tfork/modules/modules.hpp"
#include "tfork/version.hpp"

namespace {

constexpr tfork::modules::ServeModule k_module{
    sizeof(tfork::modules::ServeModule), tfork::k_version, __VERSION__, tfork::server::run_server,
    tfork::server::verify_store};

}  // namespace

extern "C" [[gnu::visibility("default")]] const tfork::modules::ServeModule* tfork_serve_module() {
  return &k_module;
}
