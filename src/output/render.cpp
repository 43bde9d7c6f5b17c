#include "tfork/output/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

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

std::string normalise_rfc3339(std::string_view text) {
  // Accept "YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)"; anything else is passed through.
  std::tm tm{};
  int offset_minutes = 0;
  if (text.size() < 20) return std::string(text);
  const std::string head(text.substr(0, 19));
  if (!strptime(head.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return std::string(text);
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
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    offset_minutes =
        std::stoi(std::string(rest.substr(1, 2))) * 60 + std::stoi(std::string(rest.substr(4, 2)));
    if (rest[0] == '-') offset_minutes = -offset_minutes;
  } else {
    return std::string(text);
  }
  const std::int64_t seconds = timegm(&tm) - offset_minutes * 60;
  fraction = fraction.substr(0, 9);
  while (fraction.size() < 9)
    fraction += '0';
  return rfc3339_from_ns(seconds * 1'000'000'000 + std::stoll(fraction));
}

}  // namespace tfork::output
