// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

namespace tfork::mcp {
namespace {

constexpr std::array<std::string_view, 17> k_known_keywords = {
    "anyOf", "type",     "properties", "required",    "additionalProperties",
    "enum",  "minimum",  "maximum",    "minLength",   "maxLength",
    "items", "minItems", "maxItems",   "description", "default",
    "title", "examples"};

// "the string \"true\"", "the number 3", "an object": what was given, for the message.
std::string described(const Json& value) {
  constexpr std::size_t k_shown = 40;
  switch (value.type()) {
    case Json::value_t::string: {
      auto text = value.get<std::string>();
      if (text.size() > k_shown) text = text.substr(0, k_shown) + "...";
      return "the string " + Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
    }
    case Json::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "the number " + value.dump();
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::null:
      return "null";
    default:
      return "a value of another type";
  }
}

bool has_type(const Json& value, std::string_view type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "integer") {
    if (value.is_number_integer() || value.is_number_unsigned()) return true;
    // 2020-12: a number with a zero fractional part (3.0) is an integer.
    if (!value.is_number_float()) return false;
    const auto number = value.get<double>();
    return std::isfinite(number) && std::floor(number) == number && std::fabs(number) < 9.0e15;
  }
  if (type == "number") return value.is_number();
  if (type == "null") return value.is_null();
  return false;
}

std::string article(std::string_view type) {
  if (type == "null") return "null";
  return (type == "object" || type == "array" || type == "integer" ? "an " : "a ") +
         std::string(type);
}

// UTF-8 code points, as JSON Schema counts a string's length.
std::size_t code_points(std::string_view text) {
  return static_cast<std::size_t>(std::ranges::count_if(
      text, [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

std::optional<std::string> check(const Json& schema, const Json& value, const std::string& path) {
  for (const auto& [keyword, _] : schema.items()) {
    if (std::ranges::find(k_known_keywords, keyword) == k_known_keywords.end())
      return fmt::format("the schema of {} uses the unsupported keyword '{}'", path, keyword);
  }
  if (const auto type = schema.find("type"); type != schema.end()) {
    // One type, or a list of them ({"type": ["string", "null"]}).
    const auto names = type->is_array() ? *type : Json::array({*type});
    const bool matches = std::ranges::any_of(
        names, [&](const Json& name) { return has_type(value, name.get<std::string>()); });
    if (!matches) {
      std::string wanted;
      for (const auto& name : names)
        wanted += (wanted.empty() ? "" : " or ") + article(name.get<std::string>());
      return fmt::format("{} must be {}, got {}", path, wanted, described(value));
    }
  }
  if (const auto branches = schema.find("anyOf"); branches != schema.end()) {
    const bool any = std::ranges::any_of(
        *branches, [&](const Json& branch) { return !check(branch, value, path); });
    if (!any)
      return fmt::format("{} matches none of its allowed forms, got {}", path, described(value));
  }
  if (const auto choices = schema.find("enum"); choices != schema.end()) {
    if (std::ranges::find(*choices, value) == choices->end()) {
      std::string list;
      for (const auto& choice : *choices)
        list += (list.empty() ? "" : ", ") + choice.dump();
      return fmt::format("{} must be one of {}, got {}", path, list, described(value));
    }
  }
  if (value.is_number()) {
    const auto number = value.get<double>();
    if (const auto low = schema.find("minimum"); low != schema.end() && number < low->get<double>())
      return fmt::format("{} must be at least {}, got {}", path, low->dump(), value.dump());
    if (const auto high = schema.find("maximum");
        high != schema.end() && number > high->get<double>())
      return fmt::format("{} must be at most {}, got {}", path, high->dump(), value.dump());
  }
  if (value.is_string()) {
    const auto length = code_points(value.get_ref<const std::string&>());
    if (const auto low = schema.find("minLength");
        low != schema.end() && length < low->get<std::size_t>())
      return fmt::format("{} must be at least {} characters long", path, low->get<std::size_t>());
    if (const auto high = schema.find("maxLength");
        high != schema.end() && length > high->get<std::size_t>())
      return fmt::format("{} must be at most {} characters long", path, high->get<std::size_t>());
  }
  if (value.is_array()) {
    if (const auto low = schema.find("minItems");
        low != schema.end() && value.size() < low->get<std::size_t>())
      return fmt::format("{} needs at least {} item(s)", path, low->get<std::size_t>());
    if (const auto high = schema.find("maxItems");
        high != schema.end() && value.size() > high->get<std::size_t>())
      return fmt::format("{} takes at most {} items", path, high->get<std::size_t>());
    if (const auto items = schema.find("items"); items != schema.end()) {
      for (std::size_t i = 0; i < value.size(); ++i)
        if (auto problem = check(*items, value[i], fmt::format("{}[{}]", path, i))) return problem;
    }
  }
  if (value.is_object()) {
    const auto properties = schema.find("properties");
    if (const auto required = schema.find("required"); required != schema.end()) {
      for (const auto& name : *required)
        if (!value.contains(name.get<std::string>()))
          return fmt::format("{} needs '{}'", path, name.get<std::string>());
    }
    const auto extra = schema.find("additionalProperties");
    const bool closed = extra != schema.end() && extra->is_boolean() && !extra->get<bool>();
    for (const auto& [name, member] : value.items()) {
      const auto child = path == "arguments" ? name : path + "." + name;
      if (properties != schema.end() && properties->contains(name)) {
        if (auto problem = check((*properties)[name], member, child)) return problem;
      } else if (closed) {
        std::string known;
        if (properties != schema.end())
          for (const auto& [property, _] : properties->items())
            known += (known.empty() ? "" : ", ") + property;
        return fmt::format("{} has no argument '{}' (it takes: {})",
                           path == "arguments" ? "this tool" : path, output::printable(name),
                           known.empty() ? "none" : known);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> schema_violation(const Json& schema, const Json& value) {
  return check(schema, value, "arguments");
}

}  // namespace tfork::mcp
