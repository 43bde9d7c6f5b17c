// SPDX-License-Identifier: Apache-2.0
#include "debug_log.hpp"

#include "tfork/core/ascii.hpp"
#include "tfork/http/transport.hpp"
#include "tfork/rules/redaction.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace tfork::http::debug {
namespace {

using rules::names_a_secret;
using rules::redact_target;

}  // namespace

std::shared_ptr<spdlog::logger> logger() {
  if (auto http = spdlog::get("http")) return http;
  return spdlog::default_logger();
}

std::string redact_request_line(std::string_view line) {
  const auto first_space = line.find(' ');
  const auto last_space = line.rfind(' ');
  if (first_space == std::string_view::npos) return std::string(line);
  const auto target_end = last_space > first_space ? last_space : line.size();
  std::string out(line.substr(0, first_space + 1));
  out += redact_target(line.substr(first_space + 1, target_end - first_space - 1));
  out += line.substr(target_end);
  return out;
}

std::string redact_header_line(std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return std::string(line);
  const std::string_view name = line.substr(0, colon);
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && value.front() == ' ')
    value.remove_prefix(1);
  return std::string(name) + ": " + redact_header_value(name, value);
}

std::string loggable_body(std::string_view body) {
  if (names_a_secret(body)) return "(body withheld: it mentions a secret or token)";
  constexpr std::size_t k_max = 200;
  std::string out(body.substr(0, k_max));
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  if (body.size() > k_max) out += "...";
  return out;
}

}  // namespace tfork::http::debug
