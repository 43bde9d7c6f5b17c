// SPDX-License-Identifier: Apache-2.0
#pragma once
// `fork diff` (cli.md §10): what an agent changed in its fork, against the fork's source as
// of the fork's snapshot. Both sides are ListObjectsV2 listings in key order, read page by
// page (the next page of both sides fetched together, one page ahead) and merged as they
// stream: memory holds at most two pages per side, whatever the object count.

#include "tfork/tigris/client.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::workflow {

enum class ChangeKind { added, modified, deleted };
std::string_view change_name(ChangeKind kind);

struct Change {
  std::string key;
  ChangeKind kind = ChangeKind::added;
  std::int64_t size = 0;  // the fork's object; the source's for a deleted key
  std::string etag;
};

struct DiffStat {
  std::int64_t added = 0;
  std::int64_t modified = 0;
  std::int64_t deleted = 0;
  std::int64_t bytes = 0;  // the size of every added and modified object
};

struct DiffTarget {
  std::string fork;
  std::string source;
  std::string snapshot;
  // The bucket listed as of `snapshot` for the base side; "" : `source`. An agent's key reads
  // its own fork only, and a fork as of its snapshot holds what its source held then
  // (tigris-wire.md §2.9), so `tfork mcp` in agent mode diffs the fork against itself.
  std::string base_bucket{};
};

// HeadBucket of `fork`: its source and snapshot. Throws TforkError: not_found ("bucket X does
// not exist") for a missing bucket, conflict (exit 6) for a bucket that is not a fork.
DiffTarget diff_target(tigris::Client& client, std::string_view fork);

// Streams every change, in key order, to `on_change`; returns the totals. A key present on
// both sides is modified when its size or ETag differ. Throws TforkError on a failed page.
DiffStat stream_diff(tigris::Client& client, const DiffTarget& target, std::string_view prefix,
                     const std::function<void(const Change&)>& on_change);

// One page of the same stream (`tfork mcp`'s fork_diff): the changes after key `start_after`
// ("" : from the first), in key order, until `on_change` returns false, which ends the listing
// there. Throws TforkError on a failed page.
void stream_diff_after(tigris::Client& client, const DiffTarget& target, std::string_view prefix,
                       std::string_view start_after,
                       const std::function<bool(const Change&)>& on_change);

// The three-way view of a fork before a merge (issue 23 §1): each key as the fork has it now,
// as its base had it (the source at the fork's snapshot) and as the parent (the source) has it
// now, by the same streaming merge, three listings at once (memory flat in the object count).
struct ThreeWayChange {
  std::string key;
  std::optional<ChangeKind> fork;    // what the fork changed since its snapshot
  std::optional<ChangeKind> parent;  // what the parent changed since the fork's snapshot
  // Both changed it, and not to the same object (different ETag or size, or deleted on one
  // side only): a merge would replace the parent's change.
  bool conflict = false;
  std::int64_t size = 0;  // the fork's object; the base's for a deletion
};
struct ThreeWayStat {
  DiffStat fork;    // the fork's changes: what a merge brings into the parent
  DiffStat parent;  // the parent's changes since the fork's snapshot
  std::int64_t conflicts = 0;
};
// Every key either side changed, in key order, to `on_change`; returns the totals. Throws
// TforkError on a failed page.
ThreeWayStat stream_three_way(tigris::Client& client, const DiffTarget& target,
                              std::string_view prefix,
                              const std::function<void(const ThreeWayChange&)>& on_change);

}  // namespace tfork::workflow
