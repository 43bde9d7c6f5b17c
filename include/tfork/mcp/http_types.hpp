// SPDX-License-Identifier: Apache-2.0
#pragma once
// What crosses between the Streamable HTTP front (tfork/mcp/http_front.hpp, in the
// executable) and the HTTP listener (the tfork-mcp-http.so module, libmicrohttpd): a request
// read whole, and a reply whose body is either given or streamed. The listener only moves
// bytes; every rule of MCP's HTTP transport is the front's.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::mcp {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;
  std::string path;    // without the query
  HeaderList headers;  // names in lower case
  std::string body;

  std::optional<std::string_view> header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers)
      if (name == lower_name) return value;
    return std::nullopt;
  }
};

// A body sent as it is produced (Server-Sent Events). Called on the connection's thread.
class ReplyStream {
 public:
  virtual ~ReplyStream() = default;
  // The next bytes, waiting at most `wait`; "" when nothing came meanwhile (the listener then
  // sends an SSE comment, so a dead connection is noticed); nullopt at the end of the body.
  virtual std::optional<std::string> next(std::chrono::milliseconds wait) = 0;
  // The connection ended (sent whole, or the client went away).
  virtual void close() = 0;
};

struct HttpReply {
  int status = 200;
  HeaderList headers;
  std::string body;
  std::shared_ptr<ReplyStream> stream;  // set: the body is streamed instead of `body`
};

using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

struct ListenOptions {
  std::string host = "127.0.0.1";  // a literal IPv4 or IPv6 address
  int port = 0;                    // 0: the OS picks; on_ready says which
  std::size_t max_body_bytes = 16u << 20;
  unsigned max_connections = 64;
};

}  // namespace tfork::mcp
