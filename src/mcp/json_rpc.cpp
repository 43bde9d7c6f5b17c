// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/json_rpc.hpp"

#include <fmt/format.h>

namespace tfork::mcp {
namespace {

// The deepest nesting of arrays and objects in `text`, outside strings; stops counting past
// `limit`. Malformed text is the parser's to refuse.
std::size_t nesting_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

bool valid_id(const Json& id) {
  // MCP: a string or an integer, never null (basic/index "Requests").
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

}  // namespace

Message classify(const Json& value) {
  if (!value.is_object())
    return Invalid{nullptr, k_invalid_request, "a JSON-RPC message must be an object"};
  const auto id = value.find("id");
  const bool has_id = id != value.end();
  Json reply_id = has_id && valid_id(*id) ? *id : Json();
  const auto version = value.find("jsonrpc");
  if (version == value.end() || *version != "2.0")
    return Invalid{reply_id, k_invalid_request, "\"jsonrpc\" must be \"2.0\""};
  const auto method = value.find("method");
  if (method == value.end()) {
    // A response (result or error) to a request of ours: there are none, nothing to answer.
    if (value.contains("result") || value.contains("error")) return Ignored{};
    return Invalid{reply_id, k_invalid_request, "a request needs a \"method\""};
  }
  if (!method->is_string())
    return Invalid{reply_id, k_invalid_request, "\"method\" must be a string"};
  Json params = Json::object();
  if (const auto found = value.find("params"); found != value.end()) {
    if (!found->is_object())
      return Invalid{reply_id, k_invalid_params, "\"params\" must be an object"};
    params = *found;
  }
  if (!has_id) return Notification{method->get<std::string>(), std::move(params)};
  if (!valid_id(*id))
    return Invalid{nullptr, k_invalid_request, "\"id\" must be a string or an integer"};
  return Request{*id, method->get<std::string>(), std::move(params)};
}

std::variant<Json, Invalid> parse(std::string_view text) {
  if (nesting_depth(text, k_max_depth) > k_max_depth)
    return Invalid{nullptr, k_parse_error,
                   fmt::format("the message is nested deeper than {} levels", k_max_depth)};
  auto value = Json::parse(text, nullptr, false);
  if (value.is_discarded()) return Invalid{nullptr, k_parse_error, "the message is not JSON"};
  return value;
}

Json result_message(const Json& id, Json result) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

Json error_message(const Json& id, int code, std::string message, Json data) {
  Json error{{"code", code}, {"message", std::move(message)}};
  if (!data.is_null()) error["data"] = std::move(data);
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

Json notification_message(std::string method, Json params) {
  return Json{{"jsonrpc", "2.0"}, {"method", std::move(method)}, {"params", std::move(params)}};
}

std::string wire_text(const Json& message) {
  const auto text = message.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x7f) {
      out += "\\u007f";
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else if (c == 0xe2 && i + 2 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(text[i + 2]) == 0xa8 ||
                static_cast<unsigned char>(text[i + 2]) == 0xa9)) {
      out += static_cast<unsigned char>(text[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace tfork::mcp
