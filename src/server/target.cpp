// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/target.hpp"

namespace tfork::server {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool Target::has(std::string_view name) const {
  return get(name) != nullptr;
}

const std::string* Target::get(std::string_view name) const {
  for (const auto& [param, value] : query) {
    if (param == name) return &value;
  }
  return nullptr;
}

std::expected<std::string, std::string> percent_decode(std::string_view text, bool form_plus) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::unexpected("truncated percent escape");
      const int high = hex_value(text[i + 1]);
      const int low = hex_value(text[i + 2]);
      if (high < 0 || low < 0) return std::unexpected("invalid percent escape");
      out.push_back(static_cast<char>(high * 16 + low));
      i += 2;
    } else if (c == '+' && form_plus) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::expected<std::vector<std::pair<std::string, std::string>>, std::string> parse_query(
    std::string_view text, bool plus_is_space) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const auto amp = text.find('&');
    const auto pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq), plus_is_space);
    if (!name) return std::unexpected(name.error());
    std::string value;
    if (eq != std::string_view::npos) {
      auto decoded = percent_decode(pair.substr(eq + 1), plus_is_space);
      if (!decoded) return std::unexpected(decoded.error());
      value = std::move(*decoded);
    }
    out.emplace_back(std::move(*name), std::move(value));
  }
  return out;
}

std::expected<Target, std::string> parse_target(std::string_view raw_target) {
  Target target;
  const auto question = raw_target.find('?');
  target.wire_path = std::string(raw_target.substr(0, question));
  if (question != std::string_view::npos)
    target.wire_query = std::string(raw_target.substr(question + 1));
  if (target.wire_path.empty() || target.wire_path.front() != '/') {
    return std::unexpected("the request target must start with '/'");
  }
  // In the path '+' is a literal plus (server-design §4 probe); only %XY is decoded.
  auto path = percent_decode(target.wire_path, false);
  if (!path) return std::unexpected(path.error());
  const std::string_view rest = std::string_view(*path).substr(1);
  const auto slash = rest.find('/');
  target.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    target.key = std::string(rest.substr(slash + 1));
    target.has_key = !target.key.empty();
  }
  auto query = parse_query(target.wire_query, /*plus_is_space=*/false);
  if (!query) return std::unexpected(query.error());
  target.query = std::move(*query);
  return target;
}

}  // namespace tfork::server
