// SPDX-License-Identifier: Apache-2.0
// The tfork-mcp-http.so module: the HTTP listener of `tfork mcp --listen` (libmicrohttpd)
// behind one C entry point (tfork/modules/modules.hpp).
#include "tfork/mcp/http_listener.hpp"
#include "tfork/modules/modules.hpp"
#include "tfork/version.hpp"

namespace {

constexpr tfork::modules::McpHttpModule k_module{
    sizeof(tfork::modules::McpHttpModule), tfork::k_version, __VERSION__, tfork::mcp::listen_http};

}  // namespace

extern "C" [[gnu::visibility("default")]] const tfork::modules::McpHttpModule*
tfork_mcp_http_module() {
  return &k_module;
}
