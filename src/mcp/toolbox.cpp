// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/toolbox.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tfork::mcp {

std::vector<Tool> make_tools(const ServerConfig& config) {
  std::vector<Tool> tools;
  add_fork_tools(tools, config);
  add_object_tools(tools, config);
  // cli.md §13: --read-only removes the mutating tools from tools/list, not only refuses them.
  if (config.read_only) std::erase_if(tools, [](const Tool& tool) { return tool.mutating(); });
  return tools;
}

std::string server_instructions(const ServerConfig& config) {
  std::string text;
  if (std::holds_alternative<AgentMode>(config.mode)) {
    text =
        "tfork gives you one fork (a copy-on-write copy) of a Tigris bucket, with a key scoped to "
        "it. Read and write its objects freely: nothing you do reaches the original. Take a "
        "snapshot (snapshot_take) before a risky change, so it can be compared or restored; "
        "fork_diff shows what you changed so far. Other buckets are refused.";
  } else {
    const auto& sources = std::get<OperatorMode>(config.mode).sources;
    std::string names;
    for (const auto& source : sources)
      names += (names.empty() ? "" : ", ") + source;
    text = fmt::format(
        "tfork forks Tigris buckets: one copy-on-write fork per agent or per experiment, each with "
        "its own scoped key. Sources here: {}. Workflow: snapshot_take (optional), fork_create "
        "(count N), give each sub-agent its fork through `tfork mcp --manifest <manifest> --fork "
        "<n>` or `tfork fork exec`, compare with fork_diff, keep a winner with fork_merge, remove "
        "the rest with fork_teardown. The sources are never written or deleted except by a "
        "fork_merge the user confirmed. fork_merge and fork_teardown need confirm: true, which "
        "you may only pass after the user said yes. Secrets never appear in results.",
        names);
  }
  if (config.read_only) text += " This server is read-only: no tool changes anything.";
  return text;
}

std::string make_cursor(const Json& position) {
  constexpr char k_hex[] = "0123456789abcdef";
  const auto text = position.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string cursor = "tc1.";
  for (const char c : text) {
    cursor += k_hex[static_cast<unsigned char>(c) >> 4];
    cursor += k_hex[static_cast<unsigned char>(c) & 15];
  }
  return cursor;
}

Json read_cursor(std::string_view cursor) {
  const auto invalid = [] {
    usage_error("invalid cursor: pass the next_cursor of the previous page unchanged");
  };
  if (!cursor.starts_with("tc1.") || cursor.size() % 2 != 0) invalid();
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::string text;
  for (std::size_t i = 4; i + 1 < cursor.size(); i += 2) {
    const int high = digit(cursor[i]);
    const int low = digit(cursor[i + 1]);
    if (high < 0 || low < 0) invalid();
    text += static_cast<char>(high * 16 + low);
  }
  auto position = Json::parse(text, nullptr, false);
  if (!position.is_object()) invalid();
  return position;
}

namespace schema {

Json text(std::string description) {
  return Json{{"type", "string"}, {"description", std::move(description)}};
}

Json bucket(std::string description) {
  return Json{{"type", "string"},
              {"minLength", 3},
              {"maxLength", 63},
              {"description", std::move(description)}};
}

Json integer(std::string description, std::int64_t minimum, std::int64_t maximum) {
  return Json{{"type", "integer"},
              {"minimum", minimum},
              {"maximum", maximum},
              {"description", std::move(description)}};
}

Json boolean(std::string description) {
  return Json{{"type", "boolean"}, {"description", std::move(description)}};
}

Json object(Json properties, std::vector<std::string> required) {
  Json schema{{"type", "object"}, {"properties", std::move(properties)}};
  if (!required.empty()) schema["required"] = std::move(required);
  schema["additionalProperties"] = false;
  return schema;
}

Json document(Json properties, std::vector<std::string> required) {
  return Json{
      {"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

Json nullable(std::string_view type, std::string description) {
  // anyOf rather than a list of types: clients that map schemas onto a one-type dialect (the
  // OpenAPI subset of some model providers) keep it.
  return Json{{"anyOf", Json::array({Json{{"type", type}}, Json{{"type", "null"}}})},
              {"description", std::move(description)}};
}

Json nullable_text(std::string description) {
  return nullable("string", std::move(description));
}

Json next_cursor() {
  return nullable_text("Pass it as `cursor` to get the next page; null on the last page");
}

}  // namespace schema

}  // namespace tfork::mcp
