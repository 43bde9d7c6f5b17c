// SPDX-License-Identifier: Apache-2.0
#include "tfork/rules/bucket_name.hpp"

#include <string>

namespace tfork::rules {
namespace {

bool lower_or_digit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// Four groups of digits separated by dots ("192.168.5.4").
bool is_ip_address_shape(std::string_view name) {
  int dots = 0;
  for (const char c : name) {
    if (c == '.')
      ++dots;
    else if (c < '0' || c > '9')
      return false;
  }
  return dots == 3;
}

}  // namespace

std::optional<std::string> bucket_name_problem(std::string_view name) {
  if (name.size() < 3 || name.size() > 63)
    return "must be 3 to 63 characters long (it has " + std::to_string(name.size()) + ")";
  for (const char c : name) {
    if (!lower_or_digit(c) && c != '.' && c != '-')
      return "may only contain lowercase letters, digits, '.' and '-'";
  }
  if (!lower_or_digit(name.front()) || !lower_or_digit(name.back()))
    return "must start and end with a letter or digit";
  if (name.find("..") != std::string_view::npos) return "must not contain '..'";
  if (is_ip_address_shape(name)) return "must not look like an IP address";
  if (name.starts_with("xn--")) return "must not start with 'xn--'";
  if (name.ends_with("-s3alias")) return "must not end with '-s3alias'";
  return std::nullopt;
}

}  // namespace tfork::rules
