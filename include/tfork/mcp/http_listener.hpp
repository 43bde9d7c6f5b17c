// SPDX-License-Identifier: Apache-2.0
#pragma once
// The HTTP listener of `tfork mcp --listen`, on libmicrohttpd, built into the
// tfork-mcp-http.so module (tfork/modules/modules.hpp): a thread per connection (at most
// options.max_connections), a request body read whole up to options.max_body_bytes (413 beyond),
// then `handler`, then its reply, a streamed one chunk by chunk.

#include "tfork/core/error.hpp"
#include "tfork/mcp/http_types.hpp"

#include <atomic>
#include <functional>
#include <optional>

namespace tfork::mcp {

// Serves until `stop` is set; why it could not start (exit 5), or nullopt after a clean stop.
// `on_ready` gets the bound port before the first request is read.
std::optional<Error> listen_http(const ListenOptions& options, const HttpHandler& handler,
                                 const std::atomic<bool>& stop,
                                 const std::function<void(int port)>& on_ready);

}  // namespace tfork::mcp
