// SPDX-License-Identifier: Apache-2.0
#include "tfork/output/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <optional>

namespace tfork::output {

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto escape = [&out](unsigned char c) {
    static constexpr char k_hex[] = "0123456789abcdef";
    switch (c) {
      case '\n':
        out += "\\n";
        return;
      case '\t':
        out += "\\t";
        return;
      case '\r':
        out += "\\r";
        return;
      default:
        out += "\\x";
        out += k_hex[c >> 4];
        out += k_hex[c & 15];
    }
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      escape(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence passes, except the C1 controls U+0080..U+009F.
    const std::size_t length = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    bool valid = length != 0 && length <= 4 && i + length <= text.size() && c <= 0xf4;
    for (std::size_t k = 1; valid && k < length; ++k)
      valid = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
    if (valid && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) valid = false;
    if (!valid) {
      escape(c);
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  return out;
}

Table& Table::row(std::vector<std::string> cells) {
  for (auto& cell : cells)
    cell = printable(cell);
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
  return *this;
}

std::string Table::render(std::string_view empty_text) const {
  if (rows_.empty()) return empty_text.empty() ? std::string() : std::string(empty_text) + "\n";
  std::vector<std::size_t> widths;
  for (const auto& column : columns_)
    widths.push_back(column.size());
  for (const auto& cells : rows_)
    for (std::size_t i = 0; i < cells.size(); ++i)
      widths[i] = std::max(widths[i], cells[i].size());

  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      text += cells[i];
      if (i + 1 < cells.size()) text += std::string(widths[i] - cells[i].size() + 2, ' ');
    }
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + "\n";
  };
  line(columns_);
  for (const auto& cells : rows_)
    line(cells);
  return out;
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string rfc3339_from_ns(std::int64_t ns) {
  const std::time_t seconds = static_cast<std::time_t>(ns / 1'000'000'000);
  auto fraction = ns % 1'000'000'000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  std::string text = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", utc.tm_year + 1900,
                                 utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec);
  if (fraction != 0) {
    auto digits = fmt::format("{:09}", fraction);
    while (digits.back() == '0')
      digits.pop_back();
    text += "." + digits;
  }
  return text + "Z";
}

namespace {

// Unix nanoseconds of "YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)" (a space for the 'T' too).
std::optional<std::int64_t> parse_rfc3339_ns(std::string_view text) {
  std::tm tm{};
  int offset_minutes = 0;
  if (text.size() < 20) return std::nullopt;
  std::string head(text.substr(0, 19));
  if (head[10] == ' ' || head[10] == 't') head[10] = 'T';
  const char* end = strptime(head.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end != '\0') return std::nullopt;
  auto rest = text.substr(19);
  std::string fraction;
  if (!rest.empty() && rest[0] == '.') {
    std::size_t i = 1;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])))
      ++i;
    fraction = std::string(rest.substr(1, i - 1));
    rest = rest.substr(i);
  }
  if (rest == "Z" || rest == "z") {
    offset_minutes = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':' &&
             std::isdigit(static_cast<unsigned char>(rest[1])) &&
             std::isdigit(static_cast<unsigned char>(rest[2])) &&
             std::isdigit(static_cast<unsigned char>(rest[4])) &&
             std::isdigit(static_cast<unsigned char>(rest[5]))) {
    offset_minutes =
        std::stoi(std::string(rest.substr(1, 2))) * 60 + std::stoi(std::string(rest.substr(4, 2)));
    if (rest[0] == '-') offset_minutes = -offset_minutes;
  } else {
    return std::nullopt;
  }
  const std::int64_t seconds = timegm(&tm) - offset_minutes * 60;
  fraction = fraction.substr(0, 9);
  while (fraction.size() < 9)
    fraction += '0';
  return seconds * 1'000'000'000 + std::stoll(fraction);
}

// Whole seconds, rounded down also before 1970 (a fraction never moves a time forward).
std::tm utc_parts(std::int64_t ns) {
  auto seconds = ns / 1'000'000'000;
  if (ns % 1'000'000'000 < 0) --seconds;
  const auto time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  return utc;
}

std::string format_seconds(std::int64_t ns, char separator, std::string_view zone) {
  const auto utc = utc_parts(ns);
  return fmt::format("{:04}-{:02}-{:02}{}{:02}:{:02}:{:02}{}", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, separator, utc.tm_hour, utc.tm_min, utc.tm_sec, zone);
}

}  // namespace

std::optional<std::int64_t> unix_ns(std::string_view rfc3339) {
  return parse_rfc3339_ns(rfc3339);
}

std::string normalise_rfc3339(std::string_view text) {
  const auto ns = parse_rfc3339_ns(text);
  return ns ? rfc3339_from_ns(*ns) : std::string(text);
}

std::string table_time(std::string_view rfc3339) {
  if (rfc3339.empty()) return "-";
  const auto ns = parse_rfc3339_ns(rfc3339);
  return ns ? format_seconds(*ns, ' ', "") : std::string(rfc3339);
}

Json json_time(std::string_view rfc3339) {
  if (rfc3339.empty()) return Json();
  const auto ns = parse_rfc3339_ns(rfc3339);
  return ns ? Json(format_seconds(*ns, 'T', "Z")) : Json(std::string(rfc3339));
}

bool natural_less(std::string_view a, std::string_view b) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t a_end = i;
      std::size_t b_end = j;
      while (a_end < a.size() && is_digit(a[a_end]))
        ++a_end;
      while (b_end < b.size() && is_digit(b[b_end]))
        ++b_end;
      // Compare the values without converting: leading zeros off, then length, then digits.
      auto a_digits = a.substr(i, a_end - i);
      auto b_digits = b.substr(j, b_end - j);
      const auto a_value =
          a_digits.substr(std::min(a_digits.find_first_not_of('0'), a_digits.size()));
      const auto b_value =
          b_digits.substr(std::min(b_digits.find_first_not_of('0'), b_digits.size()));
      if (a_value.size() != b_value.size()) return a_value.size() < b_value.size();
      if (a_value != b_value) return a_value < b_value;
      i = a_end;
      j = b_end;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  if ((a.size() - i) != (b.size() - j)) return a.size() - i < b.size() - j;
  return a < b;  // equal by value ("a01" vs "a1"): a fixed order all the same
}

}  // namespace tfork::output
