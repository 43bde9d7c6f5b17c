// SPDX-License-Identifier: Apache-2.0
#pragma once
// How `tfork serve` departs from its own best behaviour to look like the real gateway where
// the real gateway differs or may differ (cli.md §8): named quirks and a consistency delay.
// The operations consult one Variance object owned by the Handler; with no quirks and no
// delay every query answers "behave normally".

#include "tfork/store/store.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <expected>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::server {

enum class Quirk {
  // ListBuckets ignores X-Tigris-Fork (gateways before 1.320.0; tigris-wire §7.4) but still
  // answers IncludeForkInfo.
  fork_listing_ignores_header,
  // IAM errors come back as status 400 with only {"Message": "<Code>: <text>"}.
  iam_message_errors,
  // The last ListBucketSnapshots page echoes the continuation token it was sent.
  snapshot_token_echo,
  // Every second CreateBucketFork of one source is carried out but answered 409
  // OperationAborted, as a gateway does when its own internal retry races the first attempt.
  fork_conflict_409,
  // Deleting a bucket that still has forks answers 400 BucketHasChildren instead of 409.
  parent_delete_400,
  // A bucket-settings change (snapshots on or off) takes effect k_settings_delay after it is
  // answered: until then HeadBucket shows the old type and a snapshot or fork of a bucket
  // whose snapshots are being turned on is refused (the service's tests wait up to ~20 s,
  // tigris-wire §10).
  settings_delay,
  // DeleteBucketSnapshot of a version that is not there (deleted, or never taken) answers
  // 400 InvalidArgument, not 404 NoSuchSnapshot (no source asserts the real code, §10).
  snapshot_gone_400,
  // Merge and rebase happen but answer without X-Tigris-Snapshot-Version.
  merge_no_version_header,
  // Snapshot names are stored as sent, control characters such as ESC included (only the
  // documented rule, rules::snapshot_name_wire_problem, is enforced), as a gateway that checks
  // no more would: what a client prints from a listing must be escaped by the client.
  snapshot_names_verbatim,
};

inline constexpr std::chrono::milliseconds k_settings_delay{2000};

inline constexpr std::array<std::pair<Quirk, std::string_view>, 9> k_quirk_names{{
    {Quirk::fork_listing_ignores_header, "fork-listing-ignores-header"},
    {Quirk::iam_message_errors, "iam-message-errors"},
    {Quirk::snapshot_token_echo, "snapshot-token-echo"},
    {Quirk::fork_conflict_409, "fork-conflict-409"},
    {Quirk::parent_delete_400, "parent-delete-400"},
    {Quirk::settings_delay, "settings-delay"},
    {Quirk::snapshot_gone_400, "snapshot-gone-400"},
    {Quirk::merge_no_version_header, "merge-no-version-header"},
    {Quirk::snapshot_names_verbatim, "snapshot-names-verbatim"},
}};

// "a,b,c" (spaces around names allowed; empty list = none). The error names the unknown
// quirk and lists the known ones. Inline: `tfork serve` parses its options before the
// server's module is loaded.
namespace detail {

inline std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  return text;
}

}  // namespace detail

inline std::string_view quirk_name(Quirk quirk) {
  for (const auto& [id, name] : k_quirk_names) {
    if (id == quirk) return name;
  }
  return "unknown";
}

inline std::expected<std::vector<Quirk>, std::string> parse_quirks(std::string_view list) {
  std::vector<Quirk> quirks;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto item = detail::trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (item.empty()) continue;
    const auto known =
        std::ranges::find(k_quirk_names, item, &std::pair<Quirk, std::string_view>::second);
    if (known == k_quirk_names.end()) {
      std::string names;
      for (const auto& [id, name] : k_quirk_names)
        names += (names.empty() ? "" : ", ") + std::string(name);
      return std::unexpected("unknown quirk \"" + std::string(item) + "\" (known: " + names + ")");
    }
    if (std::ranges::find(quirks, known->first) == quirks.end()) quirks.push_back(known->first);
  }
  return quirks;
}

struct VarianceOptions {
  std::vector<Quirk> quirks;
  // A new bucket answers HeadBucket 404 and is missing from listings for this long; a
  // deleted one still shows (and still counts as a child of its parent) for this long.
  std::chrono::milliseconds consistency_delay{0};
};

class Variance {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  Variance() = default;
  explicit Variance(VarianceOptions options);

  bool has(Quirk quirk) const;
  bool delays() const { return options_.consistency_delay.count() > 0; }

  // --consistency-delay: the operations report what they did and ask what to show.
  void bucket_created(std::string_view name, TimePoint now);
  void bucket_deleted(store::BucketInfo info, TimePoint now);
  bool hidden(std::string_view name, TimePoint now) const;  // too new to be seen
  std::optional<store::BucketInfo> lingering(std::string_view name, TimePoint now) const;
  std::vector<store::BucketInfo> all_lingering(TimePoint now) const;  // by name
  // Applies both rules to a listing (by name): hides the new, shows the lingering.
  std::vector<store::BucketInfo> as_seen(std::vector<store::BucketInfo> listing,
                                         TimePoint now) const;

  // fork-conflict-409: whether this CreateBucketFork of `source` is answered 409.
  bool answer_fork_conflict(std::string_view source);

  // settings-delay: the PATCH changed `name`'s snapshot setting away from `before`; until the
  // delay is over, settings_shown() answers `before` (nullopt: nothing pending).
  void settings_changed(std::string_view name, bool before, TimePoint now);
  std::optional<bool> settings_shown(std::string_view name, TimePoint now) const;

 private:
  void forget_expired(TimePoint now) const;

  VarianceOptions options_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, TimePoint, std::less<>> created_;
  mutable std::map<std::string, std::pair<store::BucketInfo, TimePoint>, std::less<>> deleted_;
  std::map<std::string, unsigned, std::less<>> forks_per_source_;
  mutable std::map<std::string, std::pair<bool, TimePoint>, std::less<>> settings_pending_;
};

}  // namespace tfork::server
