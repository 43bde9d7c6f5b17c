// SPDX-License-Identifier: Apache-2.0
#pragma once
// Option values checked in words (issue 11): each check names the option as typed in its
// help, says what it needs and shows what it got, instead of CLI11's generic "Value 0 not in
// range 0.000000 to 1797…". Used with CLI::Option::check().

#include <CLI/CLI.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace tfork::cli {

// "-n needs a whole number from 1 to 1000 (got 'abc')".
CLI::Validator whole_number(std::string flag, std::int64_t min, std::int64_t max);

// "--fail-rate needs a number from 0 to 1 (got 'x')".
CLI::Validator number_between(std::string flag, double min, double max);

// "--connect-timeout needs a number of seconds above 0 (got '-1')".
CLI::Validator positive_seconds(std::string flag);

// "--output must be one of: table, json (got 'yaml')". Case does not matter: the value becomes
// the choice it names ("Editor" is editor), so register it with ->transform, not ->check.
CLI::Validator one_of(std::string flag, std::initializer_list<std::string_view> choices);

// The message of a CLI11 ValidationError raised by one of the checks above, without the
// "<name>: " prefix CLI11 puts before it; other messages unchanged.
std::string validation_message(std::string_view what);

}  // namespace tfork::cli
