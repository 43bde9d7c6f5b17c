// SPDX-License-Identifier: Apache-2.0
#pragma once
// Forks that expire (issue 23 §2, cli.md §14). The service cannot expire a fork (no TTL on
// snapshot-enabled buckets, tigris-wire.md §10), so tfork records the expiry where every fork
// of a run points to: the name of the snapshot the run takes, which the fork's HeadBucket and
// the fork listing give as its origin and ListBucketSnapshots gives by version. The name ends
// with " expires=YYYY-MM-DDTHH:MM:SSZ" (29 printable ASCII characters, no ';'), so it stays a
// valid snapshot name (§2.3) and survives the loss of the manifest. The manifest records the
// same instant as "expires_at".

#include "tfork/tigris/buckets.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::workflow {

using ExpiryTime = std::chrono::sys_seconds;

// What ends a snapshot name that carries an expiry: " expires=" and a UTC time.
inline constexpr std::string_view k_expiry_marker = " expires=";
inline constexpr std::size_t k_expiry_suffix_size = 29;  // marker (9) + "2026-12-03T14:00:00Z"
// The longest --expires-in: a year; beyond that a typo is likelier than a plan.
inline constexpr std::chrono::seconds k_max_expires_in = std::chrono::days(366);

// --expires-in DURATION (the --older-than syntax: 90s, 30m, 12h, 7d, 2w), 1s up to 366 days;
// nullopt when it is not one.
std::optional<std::chrono::seconds> parse_expires_in(std::string_view text);
// The one-line usage error for a bad --expires-in value.
std::string expires_in_problem(std::string_view text);

// `now` + `expires_in`, rounded up to a whole second so a fork never expires early.
ExpiryTime expiry_after(std::chrono::system_clock::time_point now, std::chrono::seconds expires_in);

// "2026-12-03T14:00:00Z".
std::string expiry_text(ExpiryTime when);
// The inverse of expiry_text (any RFC 3339 UTC time is accepted); nullopt when unreadable.
std::optional<ExpiryTime> parse_expiry_text(std::string_view text);

// `name` + " expires=<when>".
std::string snapshot_name_with_expiry(std::string_view name, ExpiryTime when);
// The expiry a snapshot name ends with, or nullopt (no marker, or not a time after it).
std::optional<ExpiryTime> expiry_of_snapshot_name(std::string_view name);
// The name without its expiry suffix (the name as given, when it has none).
std::string_view snapshot_name_without_expiry(std::string_view name);

// Version → expiry of every snapshot whose name carries one.
using SnapshotExpiries = std::map<std::string, ExpiryTime, std::less<>>;
SnapshotExpiries snapshot_expiries(const std::vector<tigris::Snapshot>& snapshots);

inline bool is_expired(ExpiryTime expires_at, std::chrono::system_clock::time_point now) {
  return expires_at <= now;
}

}  // namespace tfork::workflow
