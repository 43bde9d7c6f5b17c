// SPDX-License-Identifier: Apache-2.0
// teardown (cli.md §5, issue 7 §4) against a recording transport and an in-memory Tigris:
// only HeadBucket-confirmed forks, every key whose roles are all on them, fork parents,
// --recursive, 404s, refused parents, the manifest as it goes, the run's own snapshot.
#include "tfork/workflow/teardown.hpp"

#include <catch2/catch.hpp>

#include "batch_support.hpp"
#include "fake_tigris.hpp"
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace tfork;
using namespace tfork::testing;
using workflow::BucketOutcome;
using workflow::KeyOutcome;

namespace {

std::atomic<bool> no_interrupt{false};

std::size_t index_of(const std::vector<http::Request>& requests, std::string_view method,
                     std::string_view url) {
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (requests[i].method == method && requests[i].url == url) return i;
  FAIL("no " << method << " " << url);
  return 0;
}

bool sent(const std::vector<http::Request>& requests, std::string_view method,
          std::string_view url) {
  return std::ranges::any_of(requests,
                             [&](const auto& r) { return r.method == method && r.url == url; });
}

workflow::Manifest manifest_of(FakeTigris& tigris, std::vector<std::string> forks) {
  workflow::Manifest manifest;
  manifest.source = "data";
  manifest.snapshot = tigris.next_version;
  manifest.endpoint = k_endpoint;
  manifest.iam_endpoint = k_endpoint;
  for (auto& name : forks) {
    tigris.buckets[name] = {"data", tigris.next_version};
    const auto id = "tid_" + name;
    tigris.keys[id] = {name + "-key", name, "Editor"};
    workflow::ManifestFork fork;
    fork.bucket = name;
    fork.status = workflow::ForkStatus::created;
    fork.access_key_id = id;
    fork.secret_access_key = "tsec_x";
    fork.role = iam::Role::editor;
    manifest.forks.push_back(std::move(fork));
  }
  return manifest;
}

workflow::TeardownPlan manifest_plan(const workflow::Manifest& manifest, const fs::path& path,
                                     bool delete_snapshot = false, bool keep_snapshot = false) {
  workflow::write_manifest(path, manifest, false);
  return workflow::plan_from_manifests({{path, manifest}}, delete_snapshot, keep_snapshot);
}

}  // namespace

TEST_CASE("teardown from a manifest: keys first, then buckets; the manifest says so",
          "[teardown]") {
  TempDir dir;
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.snapshots.insert("data@" + tigris.next_version);
  auto manifest = manifest_of(tigris, {"run-1", "run-2", "run-3"});
  manifest.snapshot_taken = true;
  // Keys whose roles are all on these forks go too, whatever their names; a key with a role
  // elsewhere as well is reported and kept.
  tigris.keys["tid_agent"] = {"made-by-the-agent", "run-2", "Editor"};
  tigris.keys["tid_wide"] = {"wide", "run-3", "Editor", {"other-bucket"}};
  tigris.keys["tid_unrelated"] = {"unrelated", "other-bucket", "Editor"};
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  auto plan = manifest_plan(manifest, dir.path / "run.json");
  const auto result = workflow::run_teardown(client, plan, batch(no_interrupt, 5));
  INFO(workflow::to_json(result).dump());
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.buckets.size() == 1);
  CHECK(tigris.keys.size() == 2);
  CHECK(tigris.keys.contains("tid_wide"));
  CHECK(tigris.keys.contains("tid_unrelated"));
  // Each bucket goes after every key with a role on it (run-2 has two), not after the last
  // key of the run.
  const auto& requests = transport->requests;
  auto revoked_at = [&](std::string_view id) {
    for (std::size_t i = 0; i < requests.size(); ++i)
      if (requests[i].url.ends_with("Action=DeleteAccessKey") &&
          requests[i].body.find("AccessKeyId=" + std::string(id)) != std::string::npos)
        return i;
    FAIL("no DeleteAccessKey of " << id);
    return std::size_t{0};
  };
  for (const auto& [bucket, keys] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"run-1", {"tid_run-1"}},
           {"run-2", {"tid_run-2", "tid_agent"}},
           {"run-3", {"tid_run-3"}}}) {
    const auto deleted = index_of(requests, "DELETE", k_endpoint + "/" + bucket);
    for (const auto& id : keys)
      CHECK(deleted > revoked_at(id));
  }
  // The run's own snapshot goes with its last fork.
  CHECK(tigris.snapshots.empty());
  REQUIRE(result.snapshots.size() == 1);
  CHECK(result.snapshots[0].status == BucketOutcome::deleted);
  const auto wide =
      std::ranges::find(result.keys, std::string("tid_wide"), &workflow::KeyItem::access_key_id);
  REQUIRE(wide != result.keys.end());
  CHECK(wide->status == KeyOutcome::kept);
  CHECK(result.forks[2].key == KeyOutcome::kept);

  const auto after = workflow::read_manifest(dir.path / "run.json");
  for (const auto& fork : after.forks) {
    CHECK(fork.status == workflow::ForkStatus::deleted);
    CHECK(fork.key_revoked);
  }
  // A re-run from the updated manifest has nothing left to do.
  const auto again = workflow::run_teardown(
      client, workflow::plan_from_manifests({{dir.path / "run.json", after}}, false, false),
      batch(no_interrupt));
  CHECK(exit_of(again.error) == 0);
  CHECK(again.forks.empty());
}

TEST_CASE("teardown: a fork goes as soon as its keys are gone, not after the run's last key",
          "[teardown]") {
  TempDir dir;
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  auto manifest = manifest_of(tigris, {"run-1", "run-2", "run-3", "run-4", "run-5", "run-6"});
  auto transport = tigris.transport();
  transport->honour_window = true;  // two requests at a time
  auto client = make_client(*transport);
  const auto result = workflow::run_teardown(client, manifest_plan(manifest, dir.path / "m.json"),
                                             batch(no_interrupt, 2));
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.keys.empty());
  CHECK(tigris.buckets.size() == 1);
  const auto& requests = transport->requests;
  std::size_t last_key = 0;
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (requests[i].url.ends_with("Action=DeleteAccessKey")) last_key = i;
  CHECK(index_of(requests, "DELETE", k_endpoint + "/run-1") < last_key);
}

TEST_CASE("the run's snapshot: kept with --keep-snapshot, while in use, or when it was given",
          "[teardown]") {
  TempDir dir;
  SECTION("--keep-snapshot") {
    FakeTigris tigris;
    tigris.buckets["data"] = {};
    tigris.snapshots.insert("data@" + tigris.next_version);
    auto manifest = manifest_of(tigris, {"run-1"});
    manifest.snapshot_taken = true;
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    const auto result = workflow::run_teardown(
        client, manifest_plan(manifest, dir.path / "a.json", false, true), batch(no_interrupt));
    CHECK(exit_of(result.error) == 0);
    CHECK(tigris.snapshots.size() == 1);
  }
  SECTION("another fork of the source still uses it") {
    FakeTigris tigris;
    tigris.buckets["data"] = {};
    tigris.snapshots.insert("data@" + tigris.next_version);
    auto manifest = manifest_of(tigris, {"run-1"});
    manifest.snapshot_taken = true;
    tigris.buckets["someone-else"] = {"data", tigris.next_version};
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    const auto result = workflow::run_teardown(client, manifest_plan(manifest, dir.path / "b.json"),
                                               batch(no_interrupt));
    CHECK(exit_of(result.error) == 0);
    CHECK(tigris.snapshots.size() == 1);
    REQUIRE(result.snapshots.size() == 1);
    CHECK(result.snapshots[0].status == BucketOutcome::skipped);
  }
  SECTION("a snapshot the run was given stays unless --delete-snapshot") {
    FakeTigris tigris;
    tigris.buckets["data"] = {};
    tigris.snapshots.insert("data@" + tigris.next_version);
    auto manifest = manifest_of(tigris, {"run-1"});
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    workflow::run_teardown(client, manifest_plan(manifest, dir.path / "c.json"),
                           batch(no_interrupt));
    CHECK(tigris.snapshots.size() == 1);
    manifest = manifest_of(tigris, {"run-2"});
    workflow::run_teardown(client, manifest_plan(manifest, dir.path / "d.json", true),
                           batch(no_interrupt));
    CHECK(tigris.snapshots.empty());
  }
  SECTION("a run killed before it learnt its version: found by its name") {
    FakeTigris tigris;
    tigris.buckets["data"] = {};
    tigris.snapshots.insert("data@" + tigris.next_version);
    tigris.snapshot_names["data@" + tigris.next_version] = "tfork run";
    tigris.snapshots.insert("data@1");  // another snapshot, unnamed: untouched
    auto manifest = manifest_of(tigris, {"run-1"});
    manifest.snapshot.clear();
    manifest.snapshot_name = "tfork run";
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    const auto result = workflow::run_teardown(client, manifest_plan(manifest, dir.path / "e.json"),
                                               batch(no_interrupt));
    CHECK(exit_of(result.error) == 0);
    CHECK(tigris.snapshots == std::set<std::string>{"data@1"});
  }
}

TEST_CASE("a fork parent is left, its key revoked, unless --recursive, which goes children first",
          "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["aaa"] = {"data", "1"};
  tigris.buckets["aaa-child"] = {"aaa", "2"};
  tigris.buckets["aaa-grandchild"] = {"aaa-child", "3"};
  tigris.buckets["bbb"] = {"data", "1"};
  tigris.keys["tid_aaa"] = {"aaa-key", "aaa", "Editor"};
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  auto plan = workflow::plan_from_names({"aaa", "bbb"});
  auto result = workflow::run_teardown(client, plan, batch(no_interrupt));
  CHECK(exit_of(result.error) == 7);
  CHECK(result.forks[0].status == BucketOutcome::skipped);
  CHECK(result.forks[0].error->code == "BucketHasForks");
  CHECK(result.forks[1].status == BucketOutcome::deleted);
  CHECK(tigris.buckets.contains("aaa"));
  CHECK_FALSE(tigris.keys.contains("tid_aaa"));  // nothing of the run keeps working
  CHECK(result.forks[0].key == KeyOutcome::deleted);
  tigris.keys["tid_aaa"] = {"aaa-key", "aaa", "Editor"};

  transport->requests.clear();
  plan = workflow::plan_from_names({"aaa"});
  plan.recursive = true;
  result = workflow::run_teardown(client, plan, batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.buckets.size() == 1);
  CHECK(tigris.keys.empty());
  const auto& requests = transport->requests;
  const auto grandchild = index_of(requests, "DELETE", k_endpoint + "/aaa-grandchild");
  const auto child = index_of(requests, "DELETE", k_endpoint + "/aaa-child");
  const auto parent = index_of(requests, "DELETE", k_endpoint + "/aaa");
  CHECK(grandchild < child);
  CHECK(child < parent);
  CHECK(result.forks[0].bucket == "aaa");  // the named one first, descendants after
  CHECK(result.forks.size() == 3);
}

TEST_CASE("teardown refuses buckets that are not forks, or forks of another source", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["plain"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.buckets["other-1"] = {"elsewhere", "1"};
  tigris.buckets["elsewhere"] = {};
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto result = workflow::run_teardown(
      client, workflow::plan_from_names({"data", "run-1", "plain"}), batch(no_interrupt));
  CHECK(result.forks[0].status == BucketOutcome::skipped);
  CHECK(result.forks[1].status == BucketOutcome::deleted);
  CHECK(result.forks[2].status == BucketOutcome::skipped);
  CHECK(exit_of(result.error) == 7);
  CHECK(tigris.buckets.contains("data"));
  CHECK(tigris.buckets.contains("plain"));

  TempDir dir;
  workflow::Manifest manifest;
  manifest.source = "data";
  workflow::ManifestFork fork;
  fork.bucket = "other-1";
  fork.status = workflow::ForkStatus::created;
  manifest.forks.push_back(fork);
  const auto refused = workflow::run_teardown(client, manifest_plan(manifest, dir.path / "m.json"),
                                              batch(no_interrupt));
  CHECK(refused.forks[0].status == BucketOutcome::skipped);
  CHECK(tigris.buckets.contains("other-1"));
}

TEST_CASE("HeadBucket 404 is no proof: the force DELETE goes out, and its 404 says gone",
          "[teardown]") {
  TempDir dir;
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  auto manifest = manifest_of(tigris, {"run-1", "run-2"});
  tigris.buckets.erase("run-2");  // really gone
  // run-1 exists but is not visible yet.
  tigris.fail_when = [](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "HEAD" && r.bucket == "run-1") return http::Response{404, {}, "", 1};
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto result = workflow::run_teardown(client, manifest_plan(manifest, dir.path / "m.json"),
                                             batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  CHECK(result.forks[0].status == BucketOutcome::deleted);
  CHECK(result.forks[1].status == BucketOutcome::already_gone);
  CHECK_FALSE(tigris.buckets.contains("run-1"));
  CHECK(tigris.keys.empty());

  // By name, a bucket that was never there is not-found.
  const auto missing =
      workflow::run_teardown(client, workflow::plan_from_names({"never-was"}), batch(no_interrupt));
  CHECK(missing.forks[0].status == BucketOutcome::not_found);
  CHECK(sent(transport->requests, "DELETE", k_endpoint + "/never-was"));
}

TEST_CASE("a refused parent delete is retried whatever the status, within a bound", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["aaa"] = {"data", "1"};
  tigris.buckets["aaa-1"] = {"aaa", "2"};
  int refusals = 0;
  std::string status_code = "400:BucketHasChildren";
  tigris.fail_when = [&](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "DELETE" && r.bucket == "aaa" && refusals < 2) {
      ++refusals;
      const auto colon = status_code.find(':');
      return xml_error(std::stoi(status_code.substr(0, colon)), status_code.substr(colon + 1));
    }
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  SECTION("400 and 403 with a fork-related code, and 409") {
    for (const auto* answer :
         {"400:BucketHasChildren", "403:ForkDependencyExists", "409:Conflict"}) {
      tigris.buckets["aaa"] = {"data", "1"};
      tigris.buckets["aaa-1"] = {"aaa", "2"};
      refusals = 0;
      status_code = answer;
      auto plan = workflow::plan_from_names({"aaa"});
      plan.recursive = true;
      const auto result = workflow::run_teardown(client, plan, batch(no_interrupt));
      CHECK(exit_of(result.error) == 0);
      CHECK(refusals == 2);
      CHECK_FALSE(tigris.buckets.contains("aaa"));
    }
  }
  SECTION("another 403 is not retried") {
    status_code = "403:AccessDenied";
    auto plan = workflow::plan_from_names({"aaa"});
    plan.recursive = true;
    const auto result = workflow::run_teardown(client, plan, batch(no_interrupt));
    CHECK(result.forks[0].status == BucketOutcome::failed);
    CHECK(refusals == 1);
  }
  SECTION("the bound: a parent refused for ever fails") {
    refusals = -1000000;
    auto plan = workflow::plan_from_names({"aaa"});
    plan.recursive = true;
    plan.parent_retry_budget = std::chrono::milliseconds(300);
    const auto result = workflow::run_teardown(client, plan, batch(no_interrupt));
    CHECK(result.forks[0].status == BucketOutcome::failed);
    CHECK(result.forks[0].error->code == "BucketHasChildren");
  }
}

TEST_CASE("--source --prefix: only entries whose fork information names the source", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.buckets["run-2"] = {"data", "1"};
  tigris.buckets["run-3"] = {};              // a plain bucket with a run-like name
  tigris.buckets["run-4"] = {"other", "1"};  // a fork of another source
  tigris.buckets["other"] = {};
  tigris.buckets["run-x"] = {"data", "1"};  // not a name fork create gives
  for (const bool quirk : {false, true}) {
    tigris.fork_listing_keeps_info = quirk;  // a gateway that ignores X-Tigris-Fork
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    const auto plan = workflow::plan_from_source(
        client, {"data", "run-", false, std::nullopt, true}, std::chrono::system_clock::now());
    REQUIRE(plan.targets.size() == 2);
    CHECK(plan.targets[0].bucket == "run-1");
    CHECK(plan.targets[1].bucket == "run-2");
  }
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  CHECK_THROWS_AS(workflow::plan_from_source(client, {"data", "", false, std::nullopt, false},
                                             std::chrono::system_clock::now()),
                  TforkError);
}

TEST_CASE("--source --all [--older-than]", "[teardown]") {
  FakeTigris tigris;  // every listing entry says it was created 2026-01-01T00:00:00Z
  tigris.buckets["data"] = {};
  tigris.buckets["a-1"] = {"data", "1"};
  tigris.buckets["b-7"] = {"data", "1"};
  tigris.buckets["plain"] = {};
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto now = std::chrono::sys_days(std::chrono::January / 2 / 2026) + std::chrono::hours(0);
  auto plan = workflow::plan_from_source(client, {"data", "", true, std::nullopt, false}, now);
  CHECK(plan.targets.size() == 2);
  CHECK(plan.snapshots.size() == 1);  // snapshots named "tfork ..." that no fork uses
  plan = workflow::plan_from_source(client, {"data", "", true, std::chrono::hours(12), false}, now);
  CHECK(plan.targets.size() == 2);
  plan = workflow::plan_from_source(client, {"data", "", true, std::chrono::hours(48), false}, now);
  CHECK(plan.targets.empty());

  CHECK(workflow::parse_duration("90s") == std::chrono::seconds(90));
  CHECK(workflow::parse_duration("30m") == std::chrono::seconds(1800));
  CHECK(workflow::parse_duration("2d") == std::chrono::seconds(172800));
  CHECK(workflow::parse_duration("1w") == std::chrono::seconds(604800));
  CHECK_FALSE(workflow::parse_duration("0h"));
  CHECK_FALSE(workflow::parse_duration("h"));
  CHECK_FALSE(workflow::parse_duration("5y"));
  CHECK_FALSE(workflow::parse_duration("-5m"));
}

TEST_CASE("without the key listing nothing is deleted", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.fail_when = [](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "POST" && r.query.contains("Detailed")) return xml_error(500, "InternalError");
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto result =
      workflow::run_teardown(client, workflow::plan_from_names({"run-1"}), batch(no_interrupt));
  CHECK(exit_of(result.error) != 0);
  CHECK(tigris.buckets.contains("run-1"));
  CHECK_FALSE(sent(transport->requests, "DELETE", k_endpoint + "/run-1"));
}

TEST_CASE("teardown of names validates them first", "[teardown]") {
  CHECK_THROWS_AS(workflow::plan_from_names({"ok-name", "NOT_OK"}), TforkError);
}

TEST_CASE("a manifest's teardown takes the forks made from the run's forks, children first",
          "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  TempDir dir;
  const auto manifest = manifest_of(tigris, {"run-1", "run-2"});
  tigris.buckets["run-1-x"] = {"run-1", "7"};  // an agent forked its own fork
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto result = workflow::run_teardown(client, manifest_plan(manifest, dir.path / "m.json"),
                                             batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.buckets.size() == 1);
  CHECK(tigris.keys.empty());
  const auto& requests = transport->requests;
  CHECK(index_of(requests, "DELETE", k_endpoint + "/run-1-x") <
        index_of(requests, "DELETE", k_endpoint + "/run-1"));
}

TEST_CASE("every key a manifest records is revoked, its bucket there or not", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  TempDir dir;
  const auto manifest = manifest_of(tigris, {"run-1", "run-2"});
  // run-1 was deleted behind tfork's back: its grant went with it, its key did not.
  tigris.buckets.erase("run-1");
  tigris.keys["tid_run-1"].bucket = "";
  tigris.keys["tid_run-1"].role = "";
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto result = workflow::run_teardown(client, manifest_plan(manifest, dir.path / "m.json"),
                                             batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.keys.empty());
  const auto written = workflow::read_manifest(dir.path / "m.json");
  CHECK(written.forks[0].key_revoked);
  CHECK(written.forks[1].key_revoked);
}

TEST_CASE("--allow-non-fork deletes an empty bucket only, never with force", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.buckets["plain"] = {};
  tigris.keys["tid_plain"] = {"app", "plain", "Editor"};
  tigris.buckets["full"] = {};
  tigris.fail_when = [](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "DELETE" && r.bucket == "full")
      return http::Response{409, {}, "<Error><Code>BucketNotEmpty</Code></Error>", 1};
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  auto plan = workflow::plan_from_names({"data", "plain", "full"});
  plan.allow_non_fork = true;
  const auto result = workflow::run_teardown(client, plan, batch(no_interrupt));
  CHECK(result.forks[0].status == BucketOutcome::skipped);  // it has forks
  CHECK(result.forks[0].error->code == "BucketHasForks");
  CHECK(result.forks[1].status == BucketOutcome::deleted);
  CHECK(result.forks[2].status == BucketOutcome::failed);  // refused once, not retried
  CHECK(std::ranges::count_if(transport->requests, [](const http::Request& r) {
          return r.method == "DELETE" && r.url == k_endpoint + "/full";
        }) == 1);
  CHECK(tigris.buckets.contains("data"));
  CHECK(tigris.keys.contains("tid_plain"));  // the operator's key for a bucket of theirs
  for (const auto& request : transport->requests)
    if (request.method == "DELETE" && request.url == k_endpoint + "/plain")
      for (const auto& [name, value] : request.headers)
        CHECK(name != "Tigris-Force-Delete");
}

TEST_CASE("a dry run reads, reports would-delete rows and changes nothing", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  TempDir dir;
  const auto manifest = manifest_of(tigris, {"run-1", "run-2"});
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  auto plan = manifest_plan(manifest, dir.path / "m.json");
  plan.dry_run = true;
  const auto before = workflow::to_json(workflow::read_manifest(dir.path / "m.json")).dump();
  const auto result = workflow::run_teardown(client, plan, batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  REQUIRE(result.forks.size() == 2);
  CHECK(result.forks[0].status == BucketOutcome::would_delete);
  CHECK(result.forks[0].key == KeyOutcome::would_delete);
  REQUIRE(result.keys.size() == 2);
  CHECK(result.keys[0].status == KeyOutcome::would_delete);
  CHECK(tigris.buckets.size() == 3);
  CHECK(tigris.keys.size() == 2);
  for (const auto& request : transport->requests) {
    CHECK(request.method != "DELETE");
    CHECK(request.body.find("DeleteAccessKey") == std::string::npos);
  }
  CHECK(workflow::to_json(workflow::read_manifest(dir.path / "m.json")).dump() == before);
}

TEST_CASE("expiry: the snapshot name carries it; --source --expired picks the forks it passed",
          "[teardown][expiry]") {
  using namespace std::chrono;
  const sys_seconds at = sys_days(year(2026) / 12 / 3) + hours(14);
  CHECK(workflow::expiry_text(at) == "2026-12-03T14:00:00Z");
  CHECK(workflow::parse_expiry_text("2026-12-03T14:00:00Z") == at);
  CHECK_FALSE(workflow::parse_expiry_text("2026-12-03T14:00:00+01:00"));
  const auto name = workflow::snapshot_name_with_expiry("tfork run", at);
  CHECK(name == "tfork run expires=2026-12-03T14:00:00Z");
  CHECK(name.size() == std::string("tfork run").size() + workflow::k_expiry_suffix_size);
  CHECK_FALSE(tigris::snapshot_name_problem(name));
  CHECK(workflow::expiry_of_snapshot_name(name) == at);
  CHECK(workflow::snapshot_name_without_expiry(name) == "tfork run");
  CHECK_FALSE(workflow::expiry_of_snapshot_name("tfork run expires=soon"));
  CHECK(workflow::snapshot_name_without_expiry("tfork run expires=soon") ==
        "tfork run expires=soon");
  CHECK(workflow::parse_expires_in("90s") == seconds(90));
  CHECK(workflow::parse_expires_in("1500ms") == seconds(2));  // rounded up, never early
  CHECK_FALSE(workflow::parse_expires_in("500ms"));
  CHECK_FALSE(workflow::parse_expires_in("367d"));
  CHECK_FALSE(workflow::parse_expires_in(""));
  // Rounded up to the second after `now`.
  CHECK(workflow::expiry_after(at + milliseconds(1), seconds(60)) == at + seconds(61));

  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["old-1"] = {"data", "1"};
  tigris.buckets["new-1"] = {"data", "2"};
  tigris.buckets["plain-1"] = {"data", "3"};
  for (const auto* version : {"1", "2", "3"})
    tigris.snapshots.insert(std::string("data@") + version);
  tigris.snapshot_names["data@1"] = workflow::snapshot_name_with_expiry("tfork old", at);
  tigris.snapshot_names["data@2"] = workflow::snapshot_name_with_expiry("tfork new", at + hours(1));
  tigris.snapshot_names["data@3"] = "tfork plain";
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  workflow::SourceSelection selection{"data", "", false, std::nullopt, false, true};
  auto plan = workflow::plan_from_source(client, selection, at);
  REQUIRE(plan.targets.size() == 1);
  CHECK(plan.targets[0].bucket == "old-1");
  CHECK(plan.recursive);  // its forks go with it, children first
  REQUIRE(plan.snapshots.size() == 1);
  CHECK(plan.snapshots[0].expired_by == at);
  plan = workflow::plan_from_source(client, selection, at - seconds(1));
  CHECK(plan.targets.empty());
  selection.all = true;
  CHECK_THROWS_AS(workflow::plan_from_source(client, selection, at), TforkError);

  workflow::Manifest manifest;
  CHECK_FALSE(workflow::manifest_expired(manifest, at));
  manifest.expires_at = at;
  CHECK(workflow::manifest_expired(manifest, at));
  CHECK_FALSE(workflow::manifest_expired(manifest, at - seconds(1)));
  CHECK(workflow::manifest_from_json(workflow::to_json(manifest)).expires_at == at);
}
