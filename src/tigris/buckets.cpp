// SPDX-License-Identifier: Apache-2.0
#include "tfork/tigris/buckets.hpp"

#include "tfork/rules/snapshot_name.hpp"
#include "tfork/tigris/paging.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace tfork::tigris {
namespace {

std::string header_text(const http::Response& response, std::string_view name) {
  auto value = response.header(name);
  return value ? std::string(*value) : std::string();
}

}  // namespace

std::optional<std::string> snapshot_name_problem(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (auto problem = rules::snapshot_name_wire_problem(name)) return problem;
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f)
      return "must not contain control characters";
    // It goes raw into a header value (tigris-wire.md §2.3: "send raw printable ASCII").
    if (static_cast<unsigned char>(c) >= 0x80) return "must be printable ASCII";
  }
  // HTTP drops whitespace around a header value, so the server would store another name.
  if (name.front() == ' ' || name.back() == ' ') return "must not start or end with a space";
  return std::nullopt;
}

bool is_snapshot_version(std::string_view version) {
  return !version.empty() && version.size() <= 19 &&
         std::ranges::all_of(version, [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<std::int64_t> version_ns(std::string_view version) {
  std::int64_t ns = 0;
  if (!is_snapshot_version(version) ||
      std::from_chars(version.data(), version.data() + version.size(), ns).ec != std::errc{})
    return std::nullopt;
  return ns;
}

Operation create_bucket(std::string_view name, bool enable_snapshots) {
  Operation op{.name = "CreateBucket", .method = "PUT", .bucket = std::string(name)};
  if (enable_snapshots) op.headers.emplace_back("X-Tigris-Enable-Snapshot", "true");
  return op;
}

Operation take_snapshot(std::string_view bucket, const std::optional<std::string>& name) {
  // A CreateBucket on the existing bucket (tigris-wire.md §2.3); the name goes raw.
  Operation op{.name = "CreateBucketSnapshot", .method = "PUT", .bucket = std::string(bucket)};
  op.headers.emplace_back("X-Tigris-Snapshot", name ? "true; name=" + *name : "true");
  op.resend_if_unanswered = false;  // a second send takes a second snapshot
  return op;
}

Operation list_snapshots(std::string_view bucket, std::string_view continuation_token,
                         int max_buckets) {
  Operation op{.name = "ListBucketSnapshots", .method = "GET"};
  op.query.emplace_back("x-id", "ListBuckets");
  if (max_buckets > 0) op.query.emplace_back("max-buckets", std::to_string(max_buckets));
  if (!continuation_token.empty())
    op.query.emplace_back("continuation-token", std::string(continuation_token));
  op.headers.emplace_back("X-Tigris-Snapshot", std::string(bucket));
  return op;
}

Operation delete_snapshot(std::string_view bucket, std::string_view version) {
  Operation op{.name = "DeleteBucketSnapshot", .method = "DELETE", .bucket = std::string(bucket)};
  op.headers.emplace_back("X-Tigris-Snapshot-Version", std::string(version));
  return op;
}

Operation create_fork(std::string_view name, std::string_view source,
                      std::string_view snapshot_version) {
  Operation op{.name = "CreateBucketFork", .method = "PUT", .bucket = std::string(name)};
  op.headers.emplace_back("X-Tigris-Fork-Source-Bucket", std::string(source));
  if (!snapshot_version.empty())
    op.headers.emplace_back("X-Tigris-Fork-Source-Bucket-Snapshot", std::string(snapshot_version));
  return op;
}

Operation head_bucket(std::string_view bucket) {
  return Operation{.name = "HeadBucket", .method = "HEAD", .bucket = std::string(bucket)};
}

Operation list_forks(std::string_view source) {
  Operation op{.name = "ListForks", .method = "GET"};
  op.query.emplace_back("IncludeForkInfo", "true");
  op.headers.emplace_back("Accept", "application/json");
  op.headers.emplace_back("X-Tigris-Fork", std::string(source));
  return op;
}

Operation list_buckets_with_fork_info(std::string_view continuation_token, bool include_type) {
  Operation op{.name = "ListBuckets", .method = "GET"};
  op.query.emplace_back("IncludeForkInfo", "true");
  if (include_type) op.query.emplace_back("IncludeTypeInfo", "true");
  if (!continuation_token.empty())
    op.query.emplace_back("continuation-token", std::string(continuation_token));
  op.headers.emplace_back("Accept", "application/json");
  return op;
}

Operation delete_bucket(std::string_view bucket, bool force) {
  Operation op{.name = "DeleteBucket", .method = "DELETE", .bucket = std::string(bucket)};
  // Both spellings are in live use (tigris-wire.md §2.10); the official CLI and SDK send
  // this one, byte for byte.
  if (force) op.headers.emplace_back("Tigris-Force-Delete", "true");
  return op;
}

BucketHead parse_head_bucket(const http::Response& response) {
  BucketHead head;
  head.snapshots_enabled = header_text(response, "X-Tigris-Enable-Snapshot") == "true";
  head.is_fork_parent = header_text(response, "X-Tigris-Is-Fork-Parent") == "true";
  if (auto source = header_text(response, "X-Tigris-Fork-Source-Bucket"); !source.empty())
    head.fork_source = source;
  if (auto snapshot = header_text(response, "X-Tigris-Fork-Source-Bucket-Snapshot");
      !snapshot.empty())
    head.fork_source_snapshot = snapshot;
  return head;
}

std::optional<std::string> parse_snapshot_version(const http::Response& response) {
  auto version = header_text(response, "X-Tigris-Snapshot-Version");
  if (version.empty()) return std::nullopt;
  return version;
}

std::expected<SnapshotPage, std::string> parse_snapshot_list(const http::Response& response) {
  pugi::xml_document doc;
  if (!doc.load_buffer(response.body.data(), response.body.size()))
    return std::unexpected("the snapshot list is not valid XML");
  const auto root = doc.child("ListAllMyBucketsResult");
  if (!root) return std::unexpected("the snapshot list has no ListAllMyBucketsResult element");
  SnapshotPage page;
  for (auto bucket : root.child("Buckets").children("Bucket")) {
    // Name is "<version>" or "<version>; name=<name>" (tigris-wire.md §2.4).
    std::string_view name = bucket.child_value("Name");
    Snapshot snapshot;
    const auto separator = name.find("; name=");
    snapshot.version = std::string(name.substr(0, std::min(name.find(';'), name.size())));
    if (separator != std::string_view::npos)
      snapshot.name = std::string(name.substr(separator + 7));
    snapshot.created = bucket.child_value("CreationDate");
    page.snapshots.push_back(std::move(snapshot));
  }
  page.continuation_token = root.child_value("ContinuationToken");
  return page;
}

std::expected<ForkPage, std::string> parse_bucket_list_json(const http::Response& response) {
  const auto doc = nlohmann::json::parse(response.body, nullptr, false);
  if (!doc.is_object()) return std::unexpected("the bucket list is not a JSON object");
  auto text = [](const nlohmann::json& object, const char* name) -> std::string {
    const auto it = object.find(name);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  ForkPage page;
  page.continuation_token = text(doc, "ContinuationToken");
  // {"Buckets": {"Bucket": [...]}} (tigris-wire.md §2.8b); a null or missing list is empty,
  // and a bare array under "Buckets" is accepted too.
  nlohmann::json buckets = nlohmann::json::array();
  if (const auto it = doc.find("Buckets"); it != doc.end()) {
    if (it->is_array()) {
      buckets = *it;
    } else if (it->is_object()) {
      if (const auto list = it->find("Bucket"); list != it->end() && list->is_array())
        buckets = *list;
    }
  }
  for (const auto& item : buckets) {
    if (!item.is_object()) continue;
    ForkEntry entry;
    entry.bucket = text(item, "Name");
    entry.created = text(item, "CreationDate");
    if (const auto type = text(item, "Type"); type == "Snapshot" || type == "Regular")
      entry.snapshots_enabled = type == "Snapshot";
    if (const auto info = item.find("ForkInfo"); info != item.end() && info->is_object()) {
      page.has_fork_info = true;
      entry.has_fork_info = true;
      if (const auto children = info->find("HasChildren");
          children != info->end() && children->is_boolean())
        entry.has_children = children->get<bool>();
      if (const auto parents = info->find("Parents");
          parents != info->end() && parents->is_array()) {
        for (const auto& parent : *parents) {
          if (!parent.is_object()) continue;
          entry.parents.push_back({text(parent, "BucketName"), text(parent, "Snapshot"),
                                   text(parent, "ForkCreatedAt")});
        }
      }
      if (!entry.parents.empty()) {
        entry.source = entry.parents.front().bucket;
        entry.snapshot = entry.parents.front().snapshot;
      }
    }
    page.buckets.push_back(std::move(entry));
  }
  return page;
}

namespace {

// The forks of `source` on one listing page: entries with a parent named `source`.
void collect_forks(const ForkPage& page, std::string_view source, std::vector<FoundFork>& forks) {
  for (const auto& entry : page.buckets) {
    for (const auto& parent : entry.parents) {
      if (parent.bucket != source) continue;
      forks.push_back({entry.bucket, parent.snapshot,
                       entry.created.empty() ? parent.fork_created : entry.created,
                       entry.has_children});
      break;
    }
  }
}

}  // namespace

std::optional<std::chrono::seconds> taken_within_listing_lag(
    const Snapshot& snapshot, std::chrono::system_clock::time_point now) {
  const auto ns = version_ns(snapshot.version);
  if (!ns) return std::nullopt;
  const auto taken = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(*ns)));
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - taken);
  if (age >= k_fork_listing_lag) return std::nullopt;
  return std::max(age, std::chrono::seconds(0));
}

std::optional<std::string> listing_lag_warning(std::string_view source,
                                               const std::vector<Snapshot>& snapshots,
                                               std::chrono::system_clock::time_point now) {
  std::optional<std::chrono::seconds> youngest;
  for (const auto& snapshot : snapshots)
    if (const auto age = taken_within_listing_lag(snapshot, now);
        age && (!youngest || *age < *youngest))
      youngest = age;
  if (!youngest) return std::nullopt;
  return fmt::format(
      "a snapshot of {} was taken {} s ago: forks made from it may not be listed yet (the "
      "service lists a new fork within about {} s); run this again after that to be sure",
      source, youngest->count(), k_fork_listing_lag.count());
}

bool snapshot_refusal_unclear(const Error& error) {
  if (error.http_status < 400 || error.http_status >= 500) return false;
  if (error.http_status == 403 || error.http_status == 408 || error.http_status == 429)
    return false;
  return !snapshot_gone(error) && error.code != "NoSuchBucket";
}

std::vector<std::string> snapshots_absent(Client& client, std::string_view bucket,
                                          const std::vector<std::string>& versions) {
  const auto listed = list_all_snapshots(client, bucket);
  std::vector<std::string> absent;
  for (const auto& version : versions)
    if (std::ranges::none_of(listed, [&](const Snapshot& s) { return s.version == version; }))
      absent.push_back(version);
  return absent;
}

std::vector<Snapshot> list_all_snapshots(Client& client, std::string_view bucket, int limit) {
  std::vector<Snapshot> snapshots;
  std::string sent;
  page_through(
      client,
      [&](const std::string& token) {
        sent = token;
        const int remaining = limit > 0 ? limit - static_cast<int>(snapshots.size()) : 0;
        return list_snapshots(bucket, token, remaining);
      },
      parse_snapshot_list,
      [&](SnapshotPage& page) {
        const bool empty = page.snapshots.empty();
        for (auto& snapshot : page.snapshots)
          snapshots.push_back(std::move(snapshot));
        // No IsTruncated here (tigris-wire.md §2.4): a page with nothing on it ends the
        // listing, and a token equal to the one sent is an echo, not a next page.
        if (empty || page.continuation_token == sent) return false;
        return limit <= 0 || static_cast<int>(snapshots.size()) < limit;
      });
  return snapshots;
}

std::vector<FoundFork> find_forks(Client& client, std::string_view source,
                                  std::optional<http::Result> first_page) {
  std::vector<FoundFork> forks;
  bool fall_back = false;
  bool first = true;
  page_through(
      client,
      [&](const std::string& token) {
        auto operation = list_forks(source);
        if (!token.empty()) operation.query.emplace_back("continuation-token", token);
        return operation;
      },
      parse_bucket_list_json,
      [&](const ForkPage& page) {
        // A first page with buckets but no ForkInfo at all cannot be trusted to hold only
        // forks of `source` (tigris-wire.md §2.8c rollout caveat).
        if (first && !page.buckets.empty() && !page.has_fork_info) {
          fall_back = true;
          return false;
        }
        first = false;
        collect_forks(page, source, forks);
        return true;
      },
      std::move(first_page));
  if (!fall_back) return forks;
  page_through(
      client, [](const std::string& token) { return list_buckets_with_fork_info(token); },
      parse_bucket_list_json,
      [&](const ForkPage& page) {
        collect_forks(page, source, forks);
        return true;
      });
  return forks;
}

std::vector<ForkEntry> list_all_buckets(Client& client) {
  std::vector<ForkEntry> buckets;
  page_through(
      client, [](const std::string& token) { return list_buckets_with_fork_info(token, true); },
      parse_bucket_list_json,
      [&](ForkPage& page) {
        for (auto& entry : page.buckets)
          buckets.push_back(std::move(entry));
        return true;
      });
  return buckets;
}

}  // namespace tfork::tigris
