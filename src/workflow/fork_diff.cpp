// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/fork_diff.hpp"

#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/objects.hpp"

#include <array>
#include <optional>
#include <vector>

namespace tfork::workflow {
namespace {

// One side of the diff: the page being merged and, at most, the next one.
struct Cursor {
  tigris::ListObjectsRequest request;
  std::vector<tigris::ObjectEntry> page;
  std::size_t position = 0;
  std::optional<std::vector<tigris::ObjectEntry>> ahead;
  bool exhausted = false;  // no page left to fetch

  const tigris::ObjectEntry* peek() const {
    return position < page.size() ? &page[position] : nullptr;
  }
  bool wants_page() const { return position >= page.size() && (ahead || !exhausted); }
  bool can_fetch() const { return !exhausted && !ahead; }
  void take_ahead() {
    page = std::move(*ahead);
    ahead.reset();
    position = 0;
  }
};

// Makes every cursor that ran out of entries hold its next page (or end), fetching the next
// page of every side that can take one in the same round trip.
void refill(tigris::Client& client, std::array<Cursor*, 2> cursors) {
  while (true) {
    bool waiting = false;
    for (auto* cursor : cursors) {
      while (cursor->wants_page() && cursor->ahead) {
        cursor->take_ahead();
      }
      if (cursor->wants_page()) waiting = true;
    }
    if (!waiting) return;
    std::vector<tigris::Operation> operations;
    std::vector<Cursor*> fetching;
    for (auto* cursor : cursors) {
      if (!cursor->can_fetch()) continue;
      operations.push_back(tigris::list_objects_v2(cursor->request));
      fetching.push_back(cursor);
    }
    const auto results = client.send_all(operations, operations.size());
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& response = tigris::expect_success(results[i], "ListObjectsV2");
      auto page = tigris::parse_object_list(response);
      if (!page)
        throw TforkError(ErrorKind::other, "InvalidListing",
                         "ListObjectsV2 of " + fetching[i]->request.bucket + ": " + page.error());
      auto* cursor = fetching[i];
      if (page->next_token.empty() || page->next_token == cursor->request.continuation_token)
        cursor->exhausted = true;  // also stops a server that repeats its token
      cursor->request.continuation_token = page->next_token;
      cursor->ahead = std::move(page->objects);
    }
  }
}

}  // namespace

std::string_view change_name(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::added:
      return "added";
    case ChangeKind::modified:
      return "modified";
    case ChangeKind::deleted:
      return "deleted";
  }
  return "?";
}

DiffTarget diff_target(tigris::Client& client, std::string_view fork) {
  const auto answer = client.send(tigris::head_bucket(fork));
  if (auto error = tigris::error_from_result(answer, "HeadBucket")) {
    // Said as fork head says it (issue 26 §3), not as a bare HTTP 404.
    if (error->http_status == 404)
      throw TforkError(ErrorKind::not_found, "NoSuchBucket",
                       "bucket " + std::string(fork) + " does not exist");
    throw TforkError(std::move(*error));
  }
  const auto head = tigris::parse_head_bucket(*answer);
  // A request was sent: not a usage error (exit 64 is for what is refused before sending).
  if (!head.fork_source || !head.fork_source_snapshot || head.fork_source_snapshot->empty())
    throw TforkError(ErrorKind::conflict, "NotAFork",
                     "bucket " + std::string(fork) + " is not a fork: there is nothing to diff");
  return DiffTarget{std::string(fork), *head.fork_source, *head.fork_source_snapshot};
}

namespace {

// The merge of both listings from the first key after `start_after`; stops early when
// `on_change` returns false.
DiffStat merge_listings(tigris::Client& client, const DiffTarget& target, std::string_view prefix,
                        std::string_view start_after,
                        const std::function<bool(const Change&)>& on_change) {
  Cursor fork;
  fork.request.bucket = target.fork;
  fork.request.prefix = std::string(prefix);
  fork.request.start_after = std::string(start_after);
  Cursor base;
  base.request.bucket = target.base_bucket.empty() ? target.source : target.base_bucket;
  base.request.prefix = std::string(prefix);
  base.request.start_after = std::string(start_after);
  base.request.snapshot_version = target.snapshot;

  DiffStat stat;
  const auto report = [&](const tigris::ObjectEntry& entry, ChangeKind kind) {
    switch (kind) {
      case ChangeKind::added:
        ++stat.added;
        stat.bytes += entry.size;
        break;
      case ChangeKind::modified:
        ++stat.modified;
        stat.bytes += entry.size;
        break;
      case ChangeKind::deleted:
        ++stat.deleted;
        break;
    }
    return !on_change || on_change(Change{entry.key, kind, entry.size, entry.etag});
  };
  bool more = true;
  while (more) {
    refill(client, {&fork, &base});
    const auto* mine = fork.peek();
    const auto* theirs = base.peek();
    if (!mine && !theirs) break;
    if (mine && (!theirs || mine->key < theirs->key)) {
      more = report(*mine, ChangeKind::added);
      ++fork.position;
    } else if (!mine || theirs->key < mine->key) {
      more = report(*theirs, ChangeKind::deleted);
      ++base.position;
    } else {
      if (mine->size != theirs->size || mine->etag != theirs->etag)
        more = report(*mine, ChangeKind::modified);
      ++fork.position;
      ++base.position;
    }
  }
  return stat;
}

}  // namespace

DiffStat stream_diff(tigris::Client& client, const DiffTarget& target, std::string_view prefix,
                     const std::function<void(const Change&)>& on_change) {
  return merge_listings(client, target, prefix, {}, [&](const Change& change) {
    if (on_change) on_change(change);
    return true;
  });
}

void stream_diff_after(tigris::Client& client, const DiffTarget& target, std::string_view prefix,
                       std::string_view start_after,
                       const std::function<bool(const Change&)>& on_change) {
  merge_listings(client, target, prefix, start_after, on_change);
}

}  // namespace tfork::workflow
