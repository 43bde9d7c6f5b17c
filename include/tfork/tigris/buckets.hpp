// SPDX-License-Identifier: Apache-2.0
#pragma once
// Tigris bucket, snapshot and fork operations (tigris-wire.md §2): each is a function that
// builds an Operation, and a parser for its response.

#include "tfork/rules/bucket_name.hpp"
#include "tfork/tigris/client.hpp"

#include <chrono>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::tigris {

// ---- names (checked before any request is sent)

// Bucket name rules (tigris-wire.md §2.1): the reason it is invalid, or nullopt. The rule the
// server applies too (tfork/rules/bucket_name.hpp).
using rules::bucket_name_problem;
// Snapshot names go raw into a header value: printable ASCII without ';' (§2.3).
std::optional<std::string> snapshot_name_problem(std::string_view name);
// A snapshot version is a decimal ns timestamp (§1.4).
bool is_snapshot_version(std::string_view version);
// The Unix nanoseconds a snapshot version names, or nullopt when it is not one.
std::optional<std::int64_t> version_ns(std::string_view version);

// ---- requests

Operation create_bucket(std::string_view name, bool enable_snapshots);
Operation take_snapshot(std::string_view bucket, const std::optional<std::string>& name);
Operation list_snapshots(std::string_view bucket, std::string_view continuation_token,
                         int max_buckets);
Operation delete_snapshot(std::string_view bucket, std::string_view version);
Operation create_fork(std::string_view name, std::string_view source,
                      std::string_view snapshot_version);  // empty: the service snapshots now
Operation head_bucket(std::string_view bucket);
Operation list_forks(std::string_view source);  // ListBuckets + X-Tigris-Fork (JSON)
// The full listing with IncludeForkInfo=true (fork ls's fallback; bucket ls, which also asks
// for each bucket's type with IncludeTypeInfo=true).
Operation list_buckets_with_fork_info(std::string_view continuation_token,
                                      bool include_type = false);
Operation delete_bucket(std::string_view bucket, bool force);

// ---- responses

struct BucketHead {
  bool snapshots_enabled = false;
  std::optional<std::string> fork_source;
  std::optional<std::string> fork_source_snapshot;
  bool is_fork_parent = false;
};
BucketHead parse_head_bucket(const http::Response& response);

std::optional<std::string> parse_snapshot_version(const http::Response& response);

struct Snapshot {
  std::string version;
  std::optional<std::string> name;
  std::string created;  // RFC 3339 as the server sent it
};
struct SnapshotPage {
  std::vector<Snapshot> snapshots;
  std::string continuation_token;  // empty on the last page
};
std::expected<SnapshotPage, std::string> parse_snapshot_list(const http::Response& response);

struct ForkParent {
  std::string bucket;        // Parents[i].BucketName
  std::string snapshot;      // Parents[i].Snapshot ("" when absent)
  std::string fork_created;  // Parents[i].ForkCreatedAt ("" when absent)
};
struct ForkEntry {
  std::string bucket;
  std::optional<std::string> source;    // ForkInfo.Parents[0].BucketName
  std::optional<std::string> snapshot;  // ForkInfo.Parents[0].Snapshot
  std::string created;
  std::vector<ForkParent> parents;        // every ForkInfo.Parents[] entry, in order
  bool has_fork_info = false;             // the entry carried a ForkInfo object
  std::optional<bool> has_children;       // ForkInfo.HasChildren, when sent
  std::optional<bool> snapshots_enabled;  // Type "Snapshot" / "Regular", when sent
};
struct ForkPage {
  std::vector<ForkEntry> buckets;
  std::string continuation_token;
  bool has_fork_info = false;  // false: the server ignored X-Tigris-Fork (tigris-wire §2.8c)
};
std::expected<ForkPage, std::string> parse_bucket_list_json(const http::Response& response);

// ---- workflows of several requests

// Every snapshot of `bucket` as listed (at most `limit` when > 0), all pages. Paging stops
// on a page without entries or without a token, whatever the token says (a gateway may echo
// the token it was sent on its last page), and on a repeated token. Throws TforkError.
std::vector<Snapshot> list_all_snapshots(Client& client, std::string_view bucket, int limit = 0);

// The service lists a new fork only after a while (its own tests poll fork listings for up to
// ~45 s, tigris-wire §10): a listing may miss forks made from a snapshot younger than this.
inline constexpr std::chrono::seconds k_fork_listing_lag{60};
// How long ago `snapshot` was taken (its version is the server's Unix nanoseconds), when that
// is within k_fork_listing_lag of `now`; nullopt for an older one (or an unreadable version).
std::optional<std::chrono::seconds> taken_within_listing_lag(
    const Snapshot& snapshot, std::chrono::system_clock::time_point now);
// The warning of a command that decides by a fork listing of `source` while `snapshots` (the
// source's) holds one within the lag; nullopt when none does.
std::optional<std::string> listing_lag_warning(std::string_view source,
                                               const std::vector<Snapshot>& snapshots,
                                               std::chrono::system_clock::time_point now);

// A DeleteBucketSnapshot refusal that may mean "no such version" said otherwise than
// NoSuchSnapshot (no source asserts the real service's code, tigris-wire §10): a 4xx that is
// not the bucket's absence, a refused key or throttling. Counted as gone only once
// snapshots_absent() confirms it.
bool snapshot_refusal_unclear(const Error& error);
// Those of `versions` that the bucket's snapshot listing does not hold (one listing, all
// pages). Throws TforkError when the listing fails.
std::vector<std::string> snapshots_absent(Client& client, std::string_view bucket,
                                          const std::vector<std::string>& versions);

// A fork of `source` as found by find_forks: the entry and the matching parent's snapshot.
struct FoundFork {
  std::string bucket;
  std::string snapshot;                  // "" when the listing does not say
  std::string created;                   // as the server sent it; "" when absent
  std::optional<bool> is_fork_parent{};  // ForkInfo.HasChildren, when the listing says
};
// Every fork of `source` (tigris-wire.md §2.8c): the X-Tigris-Fork listing, all pages, keeping
// entries whose ForkInfo names `source` as a parent. When that listing carries no ForkInfo at
// all (a gateway before 1.320.0 ignores the header or omits ForkInfo), falls back to paging the
// full listing with IncludeForkInfo=true and filtering on Parents[].BucketName == source, as
// the JS SDK's _legacy.ts does. `first_page`, when given, is the answer to list_forks(source)
// already sent (teardown sends it with its last bucket deletes). Throws TforkError on a failed
// request or an unreadable page.
std::vector<FoundFork> find_forks(Client& client, std::string_view source,
                                  std::optional<http::Result> first_page = std::nullopt);

// Every bucket the credentials may list, with its fork information and type (the full
// listing with IncludeForkInfo and IncludeTypeInfo, all pages). Throws TforkError.
std::vector<ForkEntry> list_all_buckets(Client& client);

}  // namespace tfork::tigris
