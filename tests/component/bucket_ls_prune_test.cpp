// SPDX-License-Identifier: Apache-2.0
// tfork bucket ls [--forks-of S] [--tree], snapshot prune and snapshot ls's FORKS against the
// recording transport: the exact requests (the full listing with IncludeForkInfo, the
// X-Tigris-Fork listing, ListBucketSnapshots, DeleteBucketSnapshot), which snapshots a rule
// selects, what --unused keeps, that --dry-run sends no delete, and the tree's shape.
#include "tfork/commands/bucket.hpp"
#include "tfork/commands/snapshot.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "batch_support.hpp"
#include "command_harness.hpp"
#include <algorithm>
#include <map>
#include <set>

using namespace tfork;
using namespace tfork::testing::commands;
using tfork::testing::FakeTransport;
namespace bucket_cmd = tfork::commands::bucket;
namespace snapshot_cmd = tfork::commands::snapshot;

namespace {

// A small account: buckets with their fork parent and snapshot, and each bucket's snapshots.
// Answers ListBucketSnapshots (XML), the X-Tigris-Fork listing and the full listing (JSON,
// tigris-wire.md §2.8b) and DeleteBucketSnapshot, and records nothing itself (the
// FakeTransport does).
struct Account {
  struct Bucket {
    std::string parent;    // "" for a bucket that is not a fork
    std::string snapshot;  // the fork's snapshot
    bool snapshots_enabled = true;
  };
  struct Snap {
    std::string version;
    std::string name;  // "" unnamed
    std::string created;
  };
  std::map<std::string, Bucket> buckets;
  std::map<std::string, std::vector<Snap>> snapshots;  // bucket -> its snapshots
  std::set<std::string> failing_deletes;               // versions answered 503 SlowDown
  bool send_has_children = true;
  std::size_t bucket_page = 1000;  // the full listing's page size

  bool has_children(const std::string& name) const {
    return std::ranges::any_of(buckets, [&](const auto& b) { return b.second.parent == name; });
  }

  nlohmann::json entry(const std::string& name, const Bucket& bucket) const {
    nlohmann::json item{{"Name", name},
                        {"CreationDate", "2026-11-29T09:00:00Z"},
                        {"Type", bucket.snapshots_enabled ? "Snapshot" : "Regular"}};
    nlohmann::json info{{"Parents", nlohmann::json::array()}};
    if (send_has_children) info["HasChildren"] = has_children(name);
    if (!bucket.parent.empty())
      info["Parents"].push_back({{"BucketName", bucket.parent}, {"Snapshot", bucket.snapshot}});
    item["ForkInfo"] = info;
    return item;
  }

  http::Result operator()(const http::Request& request) {
    if (request.method == "DELETE") {
      const auto version = header_of(request, "X-Tigris-Snapshot-Version");
      if (failing_deletes.contains(version)) return s3_error(503, "SlowDown");
      auto& list = snapshots[path_of(request).substr(1)];
      const auto gone =
          std::erase_if(list, [&](const Snap& snapshot) { return snapshot.version == version; });
      return gone ? ok(204) : s3_error(404, "NoSuchSnapshot");
    }
    if (const auto bucket = header_of(request, "X-Tigris-Snapshot"); bucket != "<absent>") {
      if (!buckets.contains(bucket)) return s3_error(404, "NoSuchBucket");
      std::string body = "<ListAllMyBucketsResult><Buckets>";
      for (const auto& snapshot : snapshots[bucket]) {
        body += "<Bucket><Name>" + snapshot.version +
                (snapshot.name.empty() ? "" : "; name=" + snapshot.name) + "</Name><CreationDate>" +
                snapshot.created + "</CreationDate></Bucket>";
      }
      return ok(200, {{"Content-Type", "application/xml"}},
                body + "</Buckets></ListAllMyBucketsResult>");
    }
    nlohmann::json list = nlohmann::json::array();
    const auto source = header_of(request, "X-Tigris-Fork");
    const auto query = query_of(request);
    std::string after;
    if (const auto at = query.find("continuation-token="); at != std::string::npos)
      after = query.substr(at + 19);
    std::string token;
    for (const auto& [name, bucket] : buckets) {
      if (source != "<absent>" && bucket.parent != source) continue;
      if (!after.empty() && name <= after) continue;
      if (list.size() == bucket_page) {
        token = list.back()["Name"];
        break;
      }
      list.push_back(entry(name, bucket));
    }
    nlohmann::json body{{"Buckets", {{"Bucket", list}}}};
    if (!token.empty()) body["ContinuationToken"] = token;
    return ok(200, {{"Content-Type", "application/json"}}, body.dump());
  }
};

bool has_snapshot_header(const http::Request& request) {
  return header_of(request, "X-Tigris-Snapshot") != "<absent>";
}

std::vector<std::string> deleted_versions(const FakeTransport& transport) {
  std::vector<std::string> versions;
  for (const auto& request : transport.requests)
    if (request.method == "DELETE")
      versions.push_back(header_of(request, "X-Tigris-Snapshot-Version"));
  std::ranges::sort(versions);
  return versions;
}

// data: four snapshots v1 (oldest) .. v4; fork-a from v2; fork-a's own snapshot a1, which
// fork-a-1 (a fork of a fork) was made from.
Account prune_account() {
  Account account;
  account.buckets["data"] = {};
  account.buckets["fork-a"] = {"data", "1751631910000000002", true};
  account.buckets["fork-a-1"] = {"fork-a", "1751631910000000009", true};
  account.snapshots["data"] = {{"1751631910000000004", "newest", "2026-11-30T11:59:00Z"},
                               {"1751631910000000003", "", "2026-11-30T10:00:00Z"},
                               {"1751631910000000002", "baseline", "2026-11-29T12:00:00Z"},
                               {"1751631910000000001", "", "2026-11-28T12:00:00Z"}};
  account.snapshots["fork-a"] = {{"1751631910000000009", "a1", "2026-11-29T13:00:00Z"}};
  return account;
}

const auto k_now = std::chrono::system_clock::time_point(std::chrono::seconds(1'796'040'000));
// 1'796'040'000 is 2026-11-30T12:00:00Z.

snapshot_cmd::PruneOptions keep_last(const std::string& bucket, int n, bool unused) {
  snapshot_cmd::PruneOptions options;
  options.bucket = bucket;
  options.keep_last = n;
  options.unused = unused;
  return options;
}

void fail_if_any_failed(const snapshot_cmd::PruneResult& result) {
  if (auto error = snapshot_cmd::batch_error(result)) throw TforkError(std::move(*error));
}

}  // namespace

// ---- snapshot prune

TEST_CASE("snapshot prune: exactly one rule, N >= 0, a valid bucket; checked before sending",
          "[snapshot][prune][names]") {
  snapshot_cmd::PruneOptions neither;
  neither.bucket = "data";
  CHECK(failure_kind([&] { snapshot_cmd::check(neither); }) == ErrorKind::usage);
  auto both = keep_last("data", 1, false);
  both.older_than = std::chrono::hours(1);
  CHECK(failure_kind([&] { snapshot_cmd::check(both); }) == ErrorKind::usage);
  CHECK(failure_kind([&] { snapshot_cmd::check(keep_last("data", -1, false)); }) ==
        ErrorKind::usage);
  CHECK(failure_kind([&] { snapshot_cmd::check(keep_last("Bad_Name", 1, false)); }) ==
        ErrorKind::usage);
  CHECK_NOTHROW(snapshot_cmd::check(keep_last("data", 0, true)));
}

TEST_CASE(
    "snapshot prune --keep-last 1 --unused: lists, keeps what forks use, deletes the rest "
    "in parallel",
    "[snapshot][prune]") {
  auto account = prune_account();
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());

  const auto result = snapshot_cmd::run_snapshot_prune(client, keep_last("data", 1, true), k_now,
                                                       false, workflow::BatchSettings{8});
  // ListBucketSnapshots, the fork listing, then one DELETE per selected unused snapshot.
  REQUIRE(transport.requests.size() == 4);
  CHECK(header_of(transport.requests[0], "X-Tigris-Snapshot") == "data");
  CHECK(query_of(transport.requests[0]) == "x-id=ListBuckets");
  CHECK(header_of(transport.requests[1], "X-Tigris-Fork") == "data");
  CHECK(transport.widest_window == 8);
  for (std::size_t i = 2; i < 4; ++i) {
    const auto& request = transport.requests[i];
    CHECK(request.method == "DELETE");
    CHECK(path_of(request) == "/data");
    CHECK(query_of(request).empty());
    CHECK(signed_headers(request).contains("x-tigris-snapshot-version"));
  }
  CHECK(deleted_versions(transport) ==
        std::vector<std::string>{"1751631910000000001", "1751631910000000003"});
  CHECK(
      snapshot_cmd::to_json(result).dump() ==
      R"({"bucket":"data","dry_run":false,"snapshots":[)"
      R"({"version":"1751631910000000003","name":null,"created":"2026-11-30T10:00:00Z","forks":0,"status":"deleted"},)"
      R"({"version":"1751631910000000002","name":"baseline","created":"2026-11-29T12:00:00Z","forks":1,"status":"kept"},)"
      R"({"version":"1751631910000000001","name":null,"created":"2026-11-28T12:00:00Z","forks":0,"status":"deleted"}]})");
  CHECK_NOTHROW(fail_if_any_failed(result));
  CHECK_THAT(snapshot_cmd::to_table(result), Catch::Contains("kept (forks use it)"));

  // Run twice: nothing left to delete, nothing sent but the two listings; exit 0.
  transport.requests.clear();
  const auto again = snapshot_cmd::run_snapshot_prune(client, keep_last("data", 1, true), k_now,
                                                      false, workflow::BatchSettings{8});
  CHECK(deleted_versions(transport).empty());
  REQUIRE(again.snapshots.size() == 1);
  CHECK(again.snapshots[0].outcome.status == output::Status::kept);
  CHECK_NOTHROW(fail_if_any_failed(again));
}

TEST_CASE("snapshot prune --unused on a fork keeps the snapshot a fork of the fork uses",
          "[snapshot][prune]") {
  auto account = prune_account();
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = snapshot_cmd::run_snapshot_prune(client, keep_last("fork-a", 0, true), k_now,
                                                       false, workflow::BatchSettings{4});
  CHECK(deleted_versions(transport).empty());
  CHECK(header_of(transport.requests[1], "X-Tigris-Fork") == "fork-a");
  REQUIRE(result.snapshots.size() == 1);
  CHECK(result.snapshots[0].forks == 1);
  CHECK(result.snapshots[0].outcome.status == output::Status::kept);
}

TEST_CASE("snapshot prune without --unused deletes a used snapshot too, and says it was used",
          "[snapshot][prune]") {
  auto account = prune_account();
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = snapshot_cmd::run_snapshot_prune(client, keep_last("data", 2, false), k_now,
                                                       false, workflow::BatchSettings{4});
  CHECK(deleted_versions(transport) ==
        std::vector<std::string>{"1751631910000000001", "1751631910000000002"});
  REQUIRE(result.snapshots.size() == 2);
  CHECK(result.snapshots[0].forks == 1);  // shown, not protected
  CHECK(result.snapshots[0].outcome.status == output::Status::deleted);
}

TEST_CASE("snapshot prune --dry-run sends no delete and says what would go",
          "[snapshot][prune][dry-run]") {
  auto account = prune_account();
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = snapshot_cmd::run_snapshot_prune(client, keep_last("data", 0, true), k_now,
                                                       true, workflow::BatchSettings{4});
  CHECK(std::ranges::none_of(transport.requests,
                             [](const auto& request) { return request.method != "GET"; }));
  CHECK(account.snapshots["data"].size() == 4);
  const auto json = snapshot_cmd::to_json(result);
  CHECK(json["dry_run"] == true);
  std::vector<std::string> statuses;
  for (const auto& item : json["snapshots"])
    statuses.push_back(item["status"]);
  CHECK(statuses ==
        std::vector<std::string>{"would-delete", "would-delete", "kept", "would-delete"});
  CHECK_NOTHROW(fail_if_any_failed(result));
}

TEST_CASE("snapshot prune --older-than: by CreationDate, else by the version's time",
          "[snapshot][prune][older-than]") {
  auto account = prune_account();
  // Unreadable dates: the version (ns since 1970) tells the time; 1751631910 is July 2025.
  account.snapshots["data"].push_back({"1751631910000000000", "", "yesterday"});
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());
  snapshot_cmd::PruneOptions options;
  options.bucket = "data";
  options.older_than = std::chrono::hours(3);
  const auto result =
      snapshot_cmd::run_snapshot_prune(client, options, k_now, false, workflow::BatchSettings{4});
  // 11:59 and 10:00 today are newer than 09:00; the two older dated ones and the July one go.
  CHECK(deleted_versions(transport) == std::vector<std::string>{"1751631910000000000",
                                                                "1751631910000000001",
                                                                "1751631910000000002"});
  CHECK(result.snapshots.size() == 3);

  // A cut-off before every snapshot: nothing selected, not even the fork listing is sent.
  transport.requests.clear();
  options.older_than = std::chrono::hours(24 * 365 * 3);
  CHECK(snapshot_cmd::run_snapshot_prune(client, options, k_now, false, workflow::BatchSettings{4})
            .snapshots.empty());
  CHECK(transport.requests.size() == 1);
}

TEST_CASE(
    "snapshot prune: one failed delete of several is a partial failure (exit 7); a "
    "missing bucket is exit 3",
    "[snapshot][prune]") {
  auto account = prune_account();
  account.failing_deletes.insert("1751631910000000003");
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = snapshot_cmd::run_snapshot_prune(client, keep_last("data", 1, true), k_now,
                                                       false, workflow::BatchSettings{4});
  CHECK(result.snapshots[0].outcome.status == output::Status::failed);
  CHECK(result.snapshots[2].outcome.status == output::Status::deleted);
  CHECK(failure_kind([&] { fail_if_any_failed(result); }) == ErrorKind::partial);

  CHECK(failure_kind([&] {
          snapshot_cmd::run_snapshot_prune(client, keep_last("nothing-here", 0, false), k_now,
                                           false, workflow::BatchSettings{4});
        }) == ErrorKind::not_found);
}

TEST_CASE("snapshot prune --unused: when the forks cannot be listed nothing is deleted",
          "[snapshot][prune]") {
  auto account = prune_account();
  FakeTransport transport([&](const http::Request& request) -> http::Result {
    if (header_of(request, "X-Tigris-Fork") != "<absent>") return s3_error(403, "AccessDenied");
    return account(request);
  });
  tigris::Client client(settings(), transport, fixed_clock());
  CHECK(failure_kind([&] {
          snapshot_cmd::run_snapshot_prune(client, keep_last("data", 0, true), k_now, false,
                                           workflow::BatchSettings{4});
        }) == ErrorKind::auth);
  CHECK(deleted_versions(transport).empty());
}

// ---- bucket ls

TEST_CASE("bucket ls: the full listing with IncludeForkInfo and IncludeTypeInfo, every page",
          "[bucket][ls]") {
  auto account = prune_account();
  account.buckets["plain"] = {"", "", false};
  account.buckets["data-10"] = {};
  account.buckets["data-9"] = {};
  account.bucket_page = 2;
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());

  const auto result = bucket_cmd::run_bucket_ls(client, std::nullopt);
  REQUIRE(transport.requests.size() == 3);
  CHECK(query_of(transport.requests[0]) == "IncludeForkInfo=true&IncludeTypeInfo=true");
  CHECK(query_of(transport.requests[1]) ==
        "IncludeForkInfo=true&IncludeTypeInfo=true&continuation-token=data-10");  // byte order
  for (const auto& request : transport.requests) {
    CHECK(request.method == "GET");
    CHECK(path_of(request) == "/");
    CHECK(header_of(request, "Accept") == "application/json");
    CHECK(header_of(request, "X-Tigris-Fork") == "<absent>");
  }
  std::vector<std::string> names;
  for (const auto& row : result.buckets)
    names.push_back(row.bucket);
  CHECK(names ==
        std::vector<std::string>{"data", "data-9", "data-10", "fork-a", "fork-a-1", "plain"});
  const auto json = bucket_cmd::to_json(result);
  CHECK(json["forks_of"].is_null());
  CHECK(json["buckets"][0].dump() ==
        R"({"bucket":"data","created":"2026-11-29T09:00:00Z","snapshots_enabled":true,)"
        R"("fork_source":null,"fork_source_snapshot":null,"is_fork_parent":true,)"
        R"("expires_at":null})");
  CHECK(
      json["buckets"][4].dump() ==
      R"({"bucket":"fork-a-1","created":"2026-11-29T09:00:00Z","snapshots_enabled":true,)"
      R"("fork_source":"fork-a","fork_source_snapshot":"1751631910000000009","is_fork_parent":false,)"
      R"("expires_at":null})");
  CHECK(json["buckets"][5]["snapshots_enabled"] == false);
  const auto table = bucket_cmd::to_table(result);
  CHECK_THAT(table, Catch::StartsWith("BUCKET    SNAPSHOTS  FORK_SOURCE  FORK_SNAPSHOT        "
                                      "FORK_PARENT  CREATED\n"));
  CHECK_THAT(table, Catch::Contains("plain     no         -            -                    no"));
}

TEST_CASE("bucket ls --forks-of: the X-Tigris-Fork listing; a missing source is exit 3",
          "[bucket][ls]") {
  auto account = prune_account();
  account.buckets["fork-b"] = {"data", "", true};
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());

  const auto result = bucket_cmd::run_bucket_ls(client, std::string("data"));
  // The fork listing, then the source's snapshots (a fork's expiry is in its snapshot's name).
  REQUIRE(transport.requests.size() == 2);
  CHECK(header_of(transport.requests[0], "X-Tigris-Fork") == "data");
  CHECK(header_of(transport.requests[1], "X-Tigris-Snapshot") == "data");
  CHECK(signed_headers(transport.requests[0]).contains("x-tigris-fork"));
  CHECK(
      bucket_cmd::to_json(result).dump() ==
      R"({"forks_of":"data","buckets":[)"
      R"({"bucket":"fork-a","created":"2026-11-29T09:00:00Z","snapshots_enabled":true,)"
      R"("fork_source":"data","fork_source_snapshot":"1751631910000000002","is_fork_parent":true,)"
      R"("expires_at":null},)"
      R"({"bucket":"fork-b","created":"2026-11-29T09:00:00Z","snapshots_enabled":true,)"
      R"("fork_source":"data","fork_source_snapshot":null,"is_fork_parent":false,)"
      R"("expires_at":null}]})");

  // No forks and no bucket: HeadBucket tells a typo from an empty list.
  transport.requests.clear();
  FakeTransport missing([&](const http::Request& request) -> http::Result {
    if (request.method == "HEAD") return ok(404);
    return account(request);
  });
  tigris::Client other(settings(), missing, fixed_clock());
  CHECK(failure_kind([&] { bucket_cmd::run_bucket_ls(other, std::string("nothing-here")); }) ==
        ErrorKind::not_found);
}

// ---- bucket ls --tree

TEST_CASE(
    "bucket ls --tree: snapshots, forks from each, forks of forks; only parents are "
    "asked for forks",
    "[bucket][ls][tree]") {
  auto account = prune_account();
  account.buckets["fork-b"] = {"data", "1751631910000000002", true};
  account.buckets["fork-c"] = {"data", "1751631910000000000", true};  // a snapshot no longer listed
  account.buckets["fork-d"] = {"data", "", true};  // the listing says no snapshot
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());

  const auto tree = bucket_cmd::run_bucket_tree(client, "data", 16);
  CHECK(transport.widest_window == 16);
  // Level 0: data's snapshots, data's forks. Level 1: the snapshots of its four forks (one
  // parallel batch), the forks of fork-a (the only one with children). Level 2: fork-a-1's
  // snapshots; it has no children, so its forks are not asked for.
  std::vector<std::string> asked_forks;
  std::vector<std::string> asked_snapshots;
  for (const auto& request : transport.requests) {
    CHECK(request.method == "GET");
    if (has_snapshot_header(request))
      asked_snapshots.push_back(header_of(request, "X-Tigris-Snapshot"));
    else
      asked_forks.push_back(header_of(request, "X-Tigris-Fork"));
  }
  CHECK(asked_forks == std::vector<std::string>{"data", "fork-a"});
  CHECK(asked_snapshots ==
        std::vector<std::string>{"data", "fork-a", "fork-b", "fork-c", "fork-d", "fork-a-1"});

  CHECK(bucket_cmd::to_table(tree) ==
        "data\n"
        "├── snapshot 1751631910000000004 \"newest\"  taken 2026-11-30 11:59:00\n"
        "├── snapshot 1751631910000000003  taken 2026-11-30 10:00:00\n"
        "├── snapshot 1751631910000000002 \"baseline\"  taken 2026-11-29 12:00:00\n"
        "│   ├── fork-a  created 2026-11-29 09:00:00\n"
        "│   │   └── snapshot 1751631910000000009 \"a1\"  taken 2026-11-29 13:00:00\n"
        "│   │       └── fork-a-1  created 2026-11-29 09:00:00\n"
        "│   └── fork-b  created 2026-11-29 09:00:00\n"
        "├── snapshot 1751631910000000001  taken 2026-11-28 12:00:00\n"
        "├── snapshot 1751631910000000000  (no longer listed)\n"
        "│   └── fork-c  created 2026-11-29 09:00:00\n"
        "└── fork-d  created 2026-11-29 09:00:00  (snapshot not known)\n");

  const auto json = bucket_cmd::to_json(tree);
  CHECK(json["bucket"] == "data");
  CHECK(json["created"].is_null());
  CHECK(json["snapshots"].size() == 5);
  const auto& baseline = json["snapshots"][2];
  CHECK(baseline["listed"] == true);
  CHECK(baseline["forks"][0]["bucket"] == "fork-a");
  CHECK(baseline["forks"][0]["snapshots"][0]["forks"][0].dump() ==
        R"({"bucket":"fork-a-1","created":"2026-11-29T09:00:00Z","snapshots":[],"forks":[]})");
  CHECK(json["snapshots"][4]["listed"] == false);
  CHECK(json["snapshots"][4]["name"].is_null());
  CHECK(json["forks"][0]["bucket"] == "fork-d");
}

TEST_CASE(
    "bucket ls --tree: without HasChildren every fork is asked; names are escaped; a "
    "missing source is exit 3",
    "[bucket][ls][tree]") {
  auto account = prune_account();
  account.send_has_children = false;
  account.snapshots["fork-a"][0].name = "evil\x1b[2Jname";
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());
  const auto tree = bucket_cmd::run_bucket_tree(client, "data", 4);
  std::vector<std::string> asked_forks;
  for (const auto& request : transport.requests)
    if (!has_snapshot_header(request)) asked_forks.push_back(header_of(request, "X-Tigris-Fork"));
  CHECK(asked_forks == std::vector<std::string>{"data", "fork-a", "fork-a-1"});
  const auto table = bucket_cmd::to_table(tree);
  CHECK_THAT(table, Catch::Contains("\"evil\\x1b[2Jname\""));
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(bucket_cmd::to_json(tree)["snapshots"][2]["forks"][0]["snapshots"][0]["name"] ==
        "evil\x1b[2Jname");

  CHECK(failure_kind([&] { bucket_cmd::run_bucket_tree(client, "nothing-here", 4); }) ==
        ErrorKind::not_found);
}

TEST_CASE("bucket ls --tree: a fork loop from a broken server ends", "[bucket][ls][tree]") {
  Account account;
  account.buckets["a-1"] = {"a-2", "5", true};
  account.buckets["a-2"] = {"a-1", "6", true};
  FakeTransport transport(std::ref(account));
  tigris::Client client(settings(), transport, fixed_clock());
  const auto tree = bucket_cmd::run_bucket_tree(client, "a-1", 4);
  CHECK(bucket_cmd::to_table(tree) ==
        "a-1\n"
        "└── snapshot 6  (no longer listed)\n"
        "    └── a-2  created 2026-11-29 09:00:00\n");
  CHECK(transport.requests.size() < 10);
}
