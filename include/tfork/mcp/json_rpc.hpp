// SPDX-License-Identifier: Apache-2.0
#pragma once
// JSON-RPC 2.0 as MCP uses it (MCP 2025-11-25 basic/index "Messages"): one message is a
// request (string or integer id, method, object params), a notification (no id) or a response
// (which this server never asks for, so it only ever ignores them). Parsing is bounded: a
// message nested deeper than k_max_depth is refused before the parser sees it, so hostile
// input costs a scan, not a stack.

#include "tfork/output/render.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace tfork::mcp {

using Json = output::Json;

// JSON-RPC 2.0 §5.1 error codes.
inline constexpr int k_parse_error = -32700;
inline constexpr int k_invalid_request = -32600;
inline constexpr int k_method_not_found = -32601;
inline constexpr int k_invalid_params = -32602;
inline constexpr int k_internal_error = -32603;
// -32000..-32099 are the server's own: too many calls waiting.
inline constexpr int k_server_busy = -32000;

inline constexpr std::size_t k_max_depth = 64;

struct Request {
  Json id;  // a string or an integer
  std::string method;
  Json params;  // an object (empty when the message had none)
};
struct Notification {
  std::string method;
  Json params;
};
// A response from the client, or anything else that needs no answer.
struct Ignored {};
// A message that is not valid JSON-RPC: answered with this error (id null when it could not
// be read).
struct Invalid {
  Json id;
  int code = k_invalid_request;
  std::string message;
};
using Message = std::variant<Request, Notification, Ignored, Invalid>;

// One message from its JSON value (an object; a batch is split by the caller).
Message classify(const Json& value);

// The JSON text of a message, or why it cannot be parsed (a parse error or nesting deeper
// than k_max_depth), as the Invalid to answer.
std::variant<Json, Invalid> parse(std::string_view text);

// Outgoing messages.
Json result_message(const Json& id, Json result);
Json error_message(const Json& id, int code, std::string message, Json data = nullptr);
Json notification_message(std::string method, Json params);

// The text of a message for the wire: one line (no raw newline), UTF-8 (invalid bytes
// replaced), and, beyond what JSON escapes itself, DEL, the C1 controls and U+2028/U+2029
// written as \u escapes, so that no text a server or a key carries can move a terminal's
// cursor or split a line when a person reads the stream.
std::string wire_text(const Json& message);

}  // namespace tfork::mcp
