// SPDX-License-Identifier: Apache-2.0
#pragma once
// Renderers: stdout carries results only (cli.md §6). JSON documents keep a fixed field
// order (nlohmann::ordered_json); tables are for people and never show secrets.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::output {

using Json = nlohmann::ordered_json;

enum class Format { table, json };

class Table {
 public:
  explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  Table& row(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  // Left-aligned columns separated by two spaces, a header line first; "" when no rows
  // and `empty_text` is empty, else that text.
  std::string render(std::string_view empty_text = {}) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "2026-11-29T11:54:28.123456789Z" from Unix nanoseconds (trailing zeros kept at 9 digits
// only when non-zero: RFC 3339 with the shortest exact fraction).
std::string rfc3339_from_ns(std::int64_t ns);
// The same for a timestamp the server sent in any RFC 3339 form, normalised to UTC "Z";
// returned unchanged when it cannot be parsed.
std::string normalise_rfc3339(std::string_view text);
// Unix nanoseconds of a timestamp in any RFC 3339 form; nullopt when it cannot be parsed.
std::optional<std::int64_t> unix_ns(std::string_view rfc3339);

// One rule per kind of cell, shared by every renderer (issue 11):
// * a timestamp is "2026-11-30 09:26:19" (UTC, whole seconds, so a TIME column lines up) in a
//   table and "2026-11-30T09:26:19Z" in JSON. Seconds, because the times shown (when a
//   snapshot was taken, when a fork was created) mean nothing below a second to a reader, and
//   a snapshot's exact instant is its version, printed next to it in full;
// * an absent value is "-" in a table and null in JSON;
// * names are listed in natural order, so run-2 comes before run-10.
// An empty or unreadable timestamp is absent ("-", null); text that is not RFC 3339 is shown
// as it came rather than lost.
std::string table_time(std::string_view rfc3339);
Json json_time(std::string_view rfc3339);
inline std::string cell_or_dash(std::string_view value) {
  return value.empty() ? std::string("-") : std::string(value);
}
// Digit runs compare by value ("run-2" < "run-10"; "a01" and "a1" by their text after that),
// everything else byte by byte.
bool natural_less(std::string_view a, std::string_view b);

// `text` safe for a terminal: control characters (C0, DEL, C1) and bytes that are not UTF-8
// become \n, \t, \r or \xHH, so a name or message from a server cannot move the cursor, change
// colours or forge lines (cli.md §7). Tables escape every cell with it.
std::string printable(std::string_view text);

// `text` in single quotes for a POSIX shell, zsh or fish ("it's" -> 'it'\''s').
std::string shell_quote(std::string_view text);

// A JSON value or null.
inline Json json_or_null(const std::string& value) {
  return value.empty() ? Json() : Json(value);
}

}  // namespace tfork::output
