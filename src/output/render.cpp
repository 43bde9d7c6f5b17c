#include "tfork/output/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

namespace tfork::output {

Table& Table::row(std::vector<std::string> cells) {
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
