// SPDX-License-Identifier: Apache-2.0
#pragma once
// ASCII text helpers for protocol text (header names, query keys, INI files), where case and
// whitespace rules are ASCII-only and must not depend on the C locale.

#include <algorithm>
#include <string>
#include <string_view>

namespace tfork::ascii {

constexpr char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// `text` with A-Z lowered; every other byte unchanged.
inline std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    c = lower(c);
  return out;
}

// Space, tab, CR, LF, vertical tab and form feed.
constexpr bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

constexpr bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](char x, char y) { return lower(x) == lower(y); });
}

// True when `needle` occurs in `haystack`, ignoring ASCII case.
inline bool icontains(std::string_view haystack, std::string_view needle) {
  return std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                     [](char x, char y) { return lower(x) == lower(y); }) != haystack.end();
}

// `text` without leading and trailing ASCII whitespace.
constexpr std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

}  // namespace tfork::ascii
