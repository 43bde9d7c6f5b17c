// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/time_format.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>

namespace tfork::server {
namespace {

using namespace std::chrono;

struct Civil {
  int year;
  unsigned month, day, hour, minute, second, weekday;
  std::int64_t nanos;  // within the second
};

Civil civil(store::Seq ns) {
  const sys_time<nanoseconds> time{nanoseconds{ns}};
  const auto day_point = floor<days>(time);
  const year_month_day ymd{day_point};
  const hh_mm_ss hms{floor<seconds>(time - day_point)};
  const auto nanos = (time - floor<seconds>(time)).count();
  return Civil{static_cast<int>(ymd.year()),
               static_cast<unsigned>(ymd.month()),
               static_cast<unsigned>(ymd.day()),
               static_cast<unsigned>(hms.hours().count()),
               static_cast<unsigned>(hms.minutes().count()),
               static_cast<unsigned>(hms.seconds().count()),
               weekday{day_point}.c_encoding(),
               nanos};
}

constexpr std::array<const char*, 7> k_days = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr std::array<const char*, 12> k_months = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

}  // namespace

store::Seq to_seq(system_clock::time_point time) {
  return duration_cast<nanoseconds>(time.time_since_epoch()).count();
}

std::string iso8601_ms(store::Seq ns) {
  const auto c = civil(ns);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", c.year, c.month, c.day, c.hour,
                     c.minute, c.second, c.nanos / 1000000);
}

std::string rfc3339_nano(store::Seq ns) {
  const auto c = civil(ns);
  auto out = fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", c.year, c.month, c.day, c.hour,
                         c.minute, c.second);
  if (c.nanos != 0) {
    auto fraction = fmt::format("{:09}", c.nanos);
    while (fraction.back() == '0')
      fraction.pop_back();
    out += "." + fraction;
  }
  return out + "Z";
}

std::string http_date(store::Seq ns) {
  const auto c = civil(ns);
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", k_days[c.weekday], c.day,
                     k_months[c.month - 1], c.year, c.hour, c.minute, c.second);
}

namespace {

// The decimal number in text[pos, pos+len), or -1 when it has a non-digit.
int digits(std::string_view text, std::size_t pos, std::size_t len) {
  int value = 0;
  for (std::size_t i = pos; i < pos + len; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

// A UTC time from its fields, or nullopt when any is out of range (a leap second allowed).
std::optional<system_clock::time_point> utc_time(int year, int month, int day, int hour, int minute,
                                                 int second) {
  if (year < 1970 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60)
    return std::nullopt;
  const year_month_day ymd{std::chrono::year{year},
                           std::chrono::month{static_cast<unsigned>(month)},
                           std::chrono::day{static_cast<unsigned>(day)}};
  if (!ymd.ok()) return std::nullopt;
  return sys_days{ymd} + hours{hour} + minutes{minute} + std::chrono::seconds{second};
}

}  // namespace

std::optional<system_clock::time_point> parse_http_date(std::string_view text) {
  // "Sun, 06 Nov 1994 08:49:37 GMT"
  if (text.size() != 29 || text.substr(25) != " GMT") return std::nullopt;
  int month = -1;
  for (std::size_t i = 0; i < k_months.size(); ++i) {
    if (text.substr(8, 3) == k_months[i]) month = static_cast<int>(i) + 1;
  }
  return utc_time(digits(text, 12, 4), month, digits(text, 5, 2), digits(text, 17, 2),
                  digits(text, 20, 2), digits(text, 23, 2));
}

std::optional<system_clock::time_point> parse_amz_date(std::string_view text) {
  // "20150830T123600Z"
  if (text.size() != 16 || text[8] != 'T' || text[15] != 'Z') return std::nullopt;
  return utc_time(digits(text, 0, 4), digits(text, 4, 2), digits(text, 6, 2), digits(text, 9, 2),
                  digits(text, 11, 2), digits(text, 13, 2));
}

}  // namespace tfork::server
