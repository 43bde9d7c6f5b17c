// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/expiry.hpp"

#include "tfork/output/render.hpp"
#include "tfork/workflow/duration.hpp"

#include <fmt/format.h>

namespace tfork::workflow {

std::optional<std::chrono::seconds> parse_expires_in(std::string_view text) {
  const auto parsed = parse_duration(text);
  if (!parsed || *parsed < std::chrono::seconds(1) || *parsed > k_max_expires_in)
    return std::nullopt;
  // Whole seconds, rounded up: the expiry is written to the second.
  return std::chrono::ceil<std::chrono::seconds>(*parsed);
}

std::string expires_in_problem(std::string_view text) {
  return fmt::format(
      "--expires-in must be a count and a unit from 1s up to 366d, e.g. 90s, 30m, 12h, 7d or 2w "
      "(got '{}')",
      output::printable(text));
}

ExpiryTime expiry_after(std::chrono::system_clock::time_point now,
                        std::chrono::seconds expires_in) {
  return std::chrono::ceil<std::chrono::seconds>(now) + expires_in;
}

std::string expiry_text(ExpiryTime when) {
  const auto day = std::chrono::floor<std::chrono::days>(when);
  const std::chrono::year_month_day date(day);
  const std::chrono::hh_mm_ss time(when - day);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                     time.hours().count(), time.minutes().count(), time.seconds().count());
}

std::optional<ExpiryTime> parse_expiry_text(std::string_view text) {
  // Only UTC ("Z"): an expiry is written by tfork, always in UTC.
  if (text.size() < 20 || text.back() != 'Z') return std::nullopt;
  const auto ns = output::unix_ns(text);
  if (!ns) return std::nullopt;
  return std::chrono::floor<std::chrono::seconds>(
      std::chrono::sys_time<std::chrono::nanoseconds>(std::chrono::nanoseconds(*ns)));
}

std::string snapshot_name_with_expiry(std::string_view name, ExpiryTime when) {
  return std::string(name) + std::string(k_expiry_marker) + expiry_text(when);
}

namespace {

// Where the expiry suffix starts in `name`, or npos.
std::size_t expiry_suffix_at(std::string_view name) {
  const auto at = name.rfind(k_expiry_marker);
  if (at == std::string_view::npos) return at;
  if (!parse_expiry_text(name.substr(at + k_expiry_marker.size()))) return std::string_view::npos;
  return at;
}

}  // namespace

std::optional<ExpiryTime> expiry_of_snapshot_name(std::string_view name) {
  const auto at = expiry_suffix_at(name);
  if (at == std::string_view::npos) return std::nullopt;
  return parse_expiry_text(name.substr(at + k_expiry_marker.size()));
}

std::string_view snapshot_name_without_expiry(std::string_view name) {
  const auto at = expiry_suffix_at(name);
  return at == std::string_view::npos ? name : name.substr(0, at);
}

SnapshotExpiries snapshot_expiries(const std::vector<tigris::Snapshot>& snapshots) {
  SnapshotExpiries expiries;
  for (const auto& snapshot : snapshots)
    if (snapshot.name)
      if (auto when = expiry_of_snapshot_name(*snapshot.name))
        expiries.emplace(snapshot.version, *when);
  return expiries;
}

}  // namespace tfork::workflow
