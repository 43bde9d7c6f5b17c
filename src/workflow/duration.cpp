// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/duration.hpp"

#include <charconv>
#include <cstdint>

namespace tfork::workflow {

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  std::int64_t count = 0;
  std::from_chars(text.data(), text.data() + digits, count);
  const auto unit = text.substr(digits);
  std::int64_t unit_ms = 0;
  if (unit == "ms") {
    unit_ms = 1;
  } else if (unit.empty() || unit == "s") {
    unit_ms = 1000;
  } else if (unit == "m") {
    unit_ms = 60'000;
  } else if (unit == "h") {
    unit_ms = 3'600'000;
  } else if (unit == "d") {
    unit_ms = 86'400'000;
  } else if (unit == "w") {
    unit_ms = 7 * 86'400'000LL;
  } else {
    return std::nullopt;
  }
  constexpr std::int64_t k_century_ms = 100LL * 365 * 86'400'000;
  if (count <= 0 || count > k_century_ms / unit_ms) return std::nullopt;
  return std::chrono::milliseconds(count * unit_ms);
}

}  // namespace tfork::workflow
