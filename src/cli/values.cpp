// SPDX-License-Identifier: Apache-2.0
#include "tfork/cli/values.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

namespace tfork::cli {
namespace {

// Every message of these checks starts with the option itself, then a space.
std::string shown(const std::string& value) {
  return value.size() > 40 ? value.substr(0, 40) + "…" : value;
}

std::string number_text(double value) {
  return std::floor(value) == value ? fmt::format("{}", static_cast<std::int64_t>(value))
                                    : fmt::format("{}", value);
}

}  // namespace

CLI::Validator whole_number(std::string flag, std::int64_t min, std::int64_t max) {
  auto description = fmt::format("INT {}-{}", min, max);
  return CLI::Validator(
      [flag, min, max](std::string& value) -> std::string {
        std::int64_t number = 0;
        const auto* end = value.data() + value.size();
        const auto [stop, ec] = std::from_chars(value.data(), end, number);
        if (value.empty() || ec != std::errc{} || stop != end || number < min || number > max)
          return fmt::format("{} needs a whole number from {} to {} (got '{}')", flag, min, max,
                             shown(value));
        return {};
      },
      description);
}

CLI::Validator number_between(std::string flag, double min, double max) {
  auto description = fmt::format("NUMBER {}-{}", number_text(min), number_text(max));
  return CLI::Validator(
      [flag, min, max](std::string& value) -> std::string {
        double number = 0;
        const auto* end = value.data() + value.size();
        const auto [stop, ec] = std::from_chars(value.data(), end, number);
        if (value.empty() || ec != std::errc{} || stop != end || !(number >= min && number <= max))
          return fmt::format("{} needs a number from {} to {} (got '{}')", flag, number_text(min),
                             number_text(max), shown(value));
        return {};
      },
      description);
}

CLI::Validator positive_seconds(std::string flag) {
  return CLI::Validator(
      [flag](std::string& value) -> std::string {
        double number = 0;
        const auto* end = value.data() + value.size();
        const auto [stop, ec] = std::from_chars(value.data(), end, number);
        if (value.empty() || ec != std::errc{} || stop != end || !(number > 0) ||
            !std::isfinite(number))
          return fmt::format("{} needs a number of seconds above 0 (got '{}')", flag, shown(value));
        return {};
      },
      "SECONDS");
}

CLI::Validator one_of(std::string flag, std::initializer_list<std::string_view> choices) {
  std::vector<std::string> list(choices.begin(), choices.end());
  std::string joined;
  for (const auto& choice : list)
    joined += (joined.empty() ? "" : ", ") + choice;
  std::string description = "{";
  for (const auto& choice : list)
    description += (description.size() > 1 ? "," : "") + choice;
  description += "}";
  return CLI::Validator(
      [flag, list, joined](std::string& value) -> std::string {
        // Case does not matter ("--keys Editor" is editor); the value becomes the choice.
        for (const auto& choice : list) {
          if (value.size() != choice.size()) continue;
          if (std::ranges::equal(value, choice, [](unsigned char a, unsigned char b) {
                return std::tolower(a) == std::tolower(b);
              })) {
            value = choice;
            return {};
          }
        }
        return fmt::format("{} must be one of: {} (got '{}')", flag, joined, shown(value));
      },
      description);
}

std::string validation_message(std::string_view what) {
  // CLI11 writes "<option name>: <message>"; the checks above start their message with the
  // option as typed ("-n needs ...", "SHELL must be ..."), so the prefix only repeats it.
  const auto colon = what.find(": ");
  if (colon != std::string_view::npos &&
      what.substr(0, colon).find(' ') == std::string_view::npos) {
    const auto name = what.substr(0, colon);
    const auto rest = what.substr(colon + 2);
    if (rest.starts_with('-') || rest.starts_with(name)) return std::string(rest);
    // "--manifest: 1 required TEXT missing": an option given without its value.
    if (rest.find(" required ") != std::string_view::npos && rest.ends_with(" missing"))
      return fmt::format("{} needs a value", name);
  }
  return std::string(what);
}

}  // namespace tfork::cli
