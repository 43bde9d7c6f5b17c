// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/variance.hpp"

#include <algorithm>

namespace tfork::server {
Variance::Variance(VarianceOptions options) : options_(std::move(options)) {}

bool Variance::has(Quirk quirk) const {
  return std::ranges::find(options_.quirks, quirk) != options_.quirks.end();
}

void Variance::forget_expired(TimePoint now) const {
  const auto cutoff = now - options_.consistency_delay;
  std::erase_if(created_, [&](const auto& item) { return item.second <= cutoff; });
  std::erase_if(deleted_, [&](const auto& item) { return item.second.second <= cutoff; });
}

void Variance::bucket_created(std::string_view name, TimePoint now) {
  if (!delays()) return;
  std::lock_guard lock(mutex_);
  forget_expired(now);
  deleted_.erase(std::string(name));  // the name is taken again: the old bucket is gone
  created_.insert_or_assign(std::string(name), now);
}

void Variance::bucket_deleted(store::BucketInfo info, TimePoint now) {
  if (!delays()) return;
  std::lock_guard lock(mutex_);
  forget_expired(now);
  // A bucket deleted before anyone could see it never shows at all.
  if (created_.erase(info.name) > 0) return;
  auto name = info.name;
  deleted_.insert_or_assign(std::move(name), std::pair{std::move(info), now});
}

bool Variance::hidden(std::string_view name, TimePoint now) const {
  if (!delays()) return false;
  std::lock_guard lock(mutex_);
  forget_expired(now);
  return created_.contains(name);
}

std::optional<store::BucketInfo> Variance::lingering(std::string_view name, TimePoint now) const {
  if (!delays()) return std::nullopt;
  std::lock_guard lock(mutex_);
  forget_expired(now);
  const auto found = deleted_.find(name);
  if (found == deleted_.end()) return std::nullopt;
  return found->second.first;
}

std::vector<store::BucketInfo> Variance::all_lingering(TimePoint now) const {
  std::vector<store::BucketInfo> out;
  if (!delays()) return out;
  std::lock_guard lock(mutex_);
  forget_expired(now);
  for (const auto& item : deleted_)
    out.push_back(item.second.first);
  return out;
}

std::vector<store::BucketInfo> Variance::as_seen(std::vector<store::BucketInfo> listing,
                                                 TimePoint now) const {
  if (!delays()) return listing;
  std::lock_guard lock(mutex_);
  forget_expired(now);
  std::erase_if(listing, [&](const auto& bucket) { return created_.contains(bucket.name); });
  for (const auto& item : deleted_)
    listing.push_back(item.second.first);
  std::ranges::sort(listing, {}, &store::BucketInfo::name);
  return listing;
}

bool Variance::answer_fork_conflict(std::string_view source) {
  if (!has(Quirk::fork_conflict_409)) return false;
  std::lock_guard lock(mutex_);
  auto& count = forks_per_source_[std::string(source)];
  return count++ % 2 == 1;
}

void Variance::settings_changed(std::string_view name, bool before, TimePoint now) {
  if (!has(Quirk::settings_delay)) return;
  std::lock_guard lock(mutex_);
  // A second change within the delay keeps the type shown before the first.
  const auto [it, inserted] =
      settings_pending_.try_emplace(std::string(name), before, now + k_settings_delay);
  if (!inserted) it->second.second = now + k_settings_delay;
}

std::optional<bool> Variance::settings_shown(std::string_view name, TimePoint now) const {
  if (!has(Quirk::settings_delay)) return std::nullopt;
  std::lock_guard lock(mutex_);
  std::erase_if(settings_pending_, [&](const auto& item) { return item.second.second <= now; });
  const auto found = settings_pending_.find(name);
  if (found == settings_pending_.end()) return std::nullopt;
  return found->second.first;
}

}  // namespace tfork::server
