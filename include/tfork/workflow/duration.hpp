// SPDX-License-Identifier: Apache-2.0
#pragma once
// Durations as people type them on the command line: `fork exec --timeout`, `teardown
// --older-than`.

#include <chrono>
#include <optional>
#include <string_view>

namespace tfork::workflow {

// A positive whole number and one unit: "1500ms", "90s", "30m", "12h", "7d", "2w"; a bare
// number means seconds. nullopt when it is not one, is zero, or is over 100 years.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

}  // namespace tfork::workflow
