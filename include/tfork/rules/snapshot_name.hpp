// SPDX-License-Identifier: Apache-2.0
#pragma once
// Snapshot names (tigris-wire.md §2.3): sent raw in `X-Tigris-Snapshot: true; name=<name>` and
// answered in listings as `<version>; name=<name>`. The documented rule (reject CR, LF and
// ';'; at most 255 bytes) is shared by the client, which checks more before it sends (see
// tigris::snapshot_name_problem), and `tfork serve`, which refuses to store a name that breaks
// it (400 InvalidArgument), so the two can never disagree on it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::rules {

inline constexpr std::size_t k_max_snapshot_name = 255;  // bytes

// The reason `name` breaks the documented rule, or nullopt.
inline std::optional<std::string> snapshot_name_wire_problem(std::string_view name) {
  if (name.size() > k_max_snapshot_name) return "must be at most 255 characters";
  for (char c : name) {
    if (c == '\r' || c == '\n') return "must not contain a line break";
    if (c == ';') return "must not contain ';' (it separates fields in the header)";
  }
  return std::nullopt;
}

}  // namespace tfork::rules
