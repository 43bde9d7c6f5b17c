// teardown (cli.md §5) against a recording transport and an in-memory Tigris: safety,
// children-first order, idempotency, the --source listing and its fallback.
#include "tfork/workflow/teardown.hpp"

#include <catch2/catch.hpp>

#include "fake_tigris.hpp"

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

}  // namespace

TEST_CASE("teardown from a manifest: keys with the safety heads, then buckets", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.snapshots.insert("data@" + tigris.next_version);
  const auto manifest = manifest_of(tigris, {"run-1", "run-2", "run-3"});
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  auto plan = workflow::plan_from_manifests({manifest}, false);
  plan.concurrency = 5;
  const auto result = workflow::run_teardown(client, plan, no_interrupt);
  CHECK(result.exit_code == 0);
  CHECK(tigris.buckets.size() == 1);
  CHECK(tigris.keys.empty());
  CHECK(tigris.snapshots.size() == 1);  // the snapshot stays without --delete-snapshot
  CHECK(transport->last_max_parallel == 5);
  // Two batches for a flat set: every head and key delete before any bucket delete.
  REQUIRE(transport->requests.size() == 9);
  for (std::size_t i = 0; i < 6; ++i)
    CHECK(transport->requests[i].method != "DELETE");
  for (std::size_t i = 6; i < 9; ++i) {
    CHECK(transport->requests[i].method == "DELETE");
    CHECK(http::find_header(transport->requests[i].headers, "Tigris-Force-Delete") == "true");
  }
  const auto json = workflow::to_json(result);
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items())
    keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"forks", "snapshots"});
  std::vector<std::string> item_keys;
  for (const auto& [key, value] : json["forks"][0].items())
    item_keys.push_back(key);
  CHECK(item_keys == std::vector<std::string>{"bucket", "status", "key"});
  CHECK(json["forks"][0]["status"] == "deleted");
  CHECK(json["forks"][0]["key"] == "deleted");
  CHECK(json["snapshots"].empty());

  SECTION("a second run finds everything already gone") {
    const auto again = workflow::run_teardown(client, plan, no_interrupt);
    CHECK(again.exit_code == 0);
    for (const auto& item : again.forks) {
      CHECK(item.status == BucketOutcome::already_gone);
      CHECK(item.key == KeyOutcome::already_gone);
    }
  }
}

TEST_CASE("teardown --delete-snapshot removes the manifest's snapshot after the forks",
          "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.snapshots.insert("data@" + tigris.next_version);
  const auto manifest = manifest_of(tigris, {"run-1"});
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto result =
      workflow::run_teardown(client, workflow::plan_from_manifests({manifest}, true), no_interrupt);
  CHECK(result.exit_code == 0);
  CHECK(tigris.snapshots.empty());
  REQUIRE(result.snapshots.size() == 1);
  CHECK(result.snapshots[0].status == BucketOutcome::deleted);
  const auto& last = transport->requests.back();
  CHECK(last.method == "DELETE");
  CHECK(http::find_header(last.headers, "X-Tigris-Snapshot-Version") == tigris.next_version);
  CHECK(tigris.buckets.contains("data"));
}

TEST_CASE("forks of forks are deleted children-first", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["aaa"] = {"data", "1"};
  tigris.buckets["aaa-child"] = {"aaa", "2"};
  tigris.buckets["aaa-grandchild"] = {"aaa-child", "3"};
  tigris.buckets["bbb"] = {"data", "1"};
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  const auto plan = workflow::plan_from_names({"aaa", "aaa-child", "bbb", "aaa-grandchild"});
  const auto result = workflow::run_teardown(client, plan, no_interrupt);
  CHECK(result.exit_code == 0);
  CHECK(tigris.buckets.size() == 1);
  const auto& requests = transport->requests;
  const auto grandchild = index_of(requests, "DELETE", k_endpoint + "/aaa-grandchild");
  const auto child = index_of(requests, "DELETE", k_endpoint + "/aaa-child");
  const auto parent = index_of(requests, "DELETE", k_endpoint + "/aaa");
  CHECK(grandchild < child);
  CHECK(child < parent);
  // Output keeps the order the user gave.
  CHECK(result.forks[3].bucket == "aaa-grandchild");
  CHECK(result.forks[0].key == KeyOutcome::none);
}

TEST_CASE("teardown refuses buckets that are not forks", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["plain"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  SECTION("by default") {
    const auto result = workflow::run_teardown(
        client, workflow::plan_from_names({"data", "run-1", "plain"}), no_interrupt);
    CHECK(result.exit_code == 7);
    CHECK(result.forks[0].status == BucketOutcome::skipped);
    REQUIRE(result.forks[0].error);
    CHECK(result.forks[0].error->code == "NotAFork");
    CHECK(result.forks[1].status == BucketOutcome::deleted);
    CHECK(result.forks[2].status == BucketOutcome::skipped);
    CHECK(tigris.buckets.contains("data"));
    CHECK(tigris.buckets.contains("plain"));
    for (const auto& sent : transport->requests)
      if (sent.method == "DELETE") CHECK(sent.url == k_endpoint + "/run-1");
  }
  SECTION("only refusals: the refusal's exit code") {
    const auto result =
        workflow::run_teardown(client, workflow::plan_from_names({"plain"}), no_interrupt);
    CHECK(result.exit_code == 6);
    REQUIRE(result.error);
    CHECK_THAT(result.error->message, Catch::Contains("not a fork"));
  }
  SECTION("with --allow-non-fork") {
    auto plan = workflow::plan_from_names({"plain"});
    plan.allow_non_fork = true;
    const auto result = workflow::run_teardown(client, plan, no_interrupt);
    CHECK(result.exit_code == 0);
    CHECK_FALSE(tigris.buckets.contains("plain"));
  }
  SECTION("a manifest's fork that is now a fork of another source") {
    tigris.buckets["run-1"] = {"plain", "1"};
    workflow::Manifest manifest;
    manifest.source = "data";
    workflow::ManifestFork fork;
    fork.bucket = "run-1";
    fork.status = workflow::ForkStatus::created;
    manifest.forks.push_back(fork);
    const auto result = workflow::run_teardown(
        client, workflow::plan_from_manifests({manifest}, false), no_interrupt);
    CHECK(result.forks[0].status == BucketOutcome::skipped);
    CHECK(tigris.buckets.contains("run-1"));
  }
}

TEST_CASE("teardown failures are per fork and exit 7", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  const auto manifest = manifest_of(tigris, {"run-1", "run-2"});
  tigris.fail_when = [](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "DELETE" && r.bucket == "run-2") return xml_error(500, "InternalError");
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto result = workflow::run_teardown(
      client, workflow::plan_from_manifests({manifest}, false), no_interrupt);
  CHECK(result.exit_code == 7);
  CHECK(result.forks[0].status == BucketOutcome::deleted);
  CHECK(result.forks[1].status == BucketOutcome::failed);
  CHECK(result.forks[1].key == KeyOutcome::deleted);
  const auto json = workflow::to_json(result);
  CHECK(json["forks"][1]["error"]["code"] == "InternalError");
  CHECK(json["forks"][1]["error"]["http_status"] == 500);
}

TEST_CASE("--source S --prefix P tears down the matching forks of S", "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["other"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.buckets["run-2"] = {"data", "1"};
  tigris.buckets["keep-1"] = {"data", "1"};
  tigris.buckets["run-x"] = {"other", "1"};
  tigris.buckets["run-1x"] = {"data", "1"};  // not a name fork create --prefix run gives
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  auto check = [&] {
    const auto plan = workflow::plan_from_source(client, "data", "run-");
    REQUIRE(plan.targets.size() == 2);
    CHECK(plan.targets[0].bucket == "run-1");
    CHECK(plan.targets[1].bucket == "run-2");
    const auto result = workflow::run_teardown(client, plan, no_interrupt);
    CHECK(result.exit_code == 0);
    CHECK(tigris.buckets.size() == 5);
    CHECK(tigris.buckets.contains("keep-1"));
    CHECK(tigris.buckets.contains("run-x"));
    CHECK(tigris.buckets.contains("run-1x"));
  };
  SECTION("the fork-scoped listing") {
    check();
  }
  SECTION("an older gateway that ignores X-Tigris-Fork: the full listing, filtered") {
    tigris.ignore_fork_header = true;
    check();
  }
  CHECK_THROWS_AS(workflow::plan_from_source(client, "data", ""), TforkError);
}

TEST_CASE("teardown of names validates them first", "[teardown]") {
  CHECK_THROWS_AS(workflow::plan_from_names({"ok-name", "NOT_OK"}), TforkError);
}

TEST_CASE("teardown by name revokes the fork's key, and never a refused bucket's key",
          "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["plain"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.keys["tid_fork"] = {"run-1-key", "run-1", "Editor"};
  tigris.keys["tid_plain"] = {"plain-key", "plain", "Editor"};
  tigris.keys["tid_other"] = {"run-1-key", "elsewhere", "Editor"};  // same name, not scoped
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  const auto result =
      workflow::run_teardown(client, workflow::plan_from_names({"run-1", "plain"}), no_interrupt);

  CHECK(result.forks[0].status == BucketOutcome::deleted);
  CHECK(result.forks[0].key == workflow::KeyOutcome::deleted);
  CHECK(result.forks[1].status == BucketOutcome::skipped);
  CHECK(result.forks[1].key == workflow::KeyOutcome::none);
  CHECK_FALSE(tigris.keys.contains("tid_fork"));
  CHECK(tigris.keys.contains("tid_plain"));
  CHECK(tigris.keys.contains("tid_other"));
}

TEST_CASE(
    "teardown by name: keys of forks already gone are revoked; a failed key lookup keeps "
    "the bucket for a re-run",
    "[teardown]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-2"] = {"data", "1"};
  tigris.keys["tid_gone"] = {"run-1-key", "run-1", "Editor"};  // run-1 itself is gone
  tigris.keys["tid_two"] = {"run-2-key", "run-2", "Editor"};
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  SECTION("already gone") {
    const auto result =
        workflow::run_teardown(client, workflow::plan_from_names({"run-1"}), no_interrupt);
    CHECK(result.exit_code == 0);
    CHECK(result.forks[0].status == BucketOutcome::already_gone);
    CHECK(result.forks[0].key == KeyOutcome::deleted);
    CHECK_FALSE(tigris.keys.contains("tid_gone"));
  }
  SECTION("the key listing fails") {
    tigris.fail_when = [](const ParsedRequest& r) -> std::optional<http::Result> {
      if (r.method == "POST" && r.form.count("Action") && r.form.at("Action") == "ListAccessKeys")
        return http::Response{500, {}, "<Error><Code>InternalError</Code></Error>", 1};
      return std::nullopt;
    };
    const auto result =
        workflow::run_teardown(client, workflow::plan_from_names({"run-2"}), no_interrupt);
    CHECK(result.exit_code != 0);
    CHECK(result.forks[0].status == BucketOutcome::failed);
    CHECK(tigris.buckets.contains("run-2"));
    CHECK(tigris.keys.contains("tid_two"));

    tigris.fail_when = {};  // the re-run finishes the job
    const auto again =
        workflow::run_teardown(client, workflow::plan_from_names({"run-2"}), no_interrupt);
    CHECK(again.exit_code == 0);
    CHECK_FALSE(tigris.buckets.contains("run-2"));
    CHECK_FALSE(tigris.keys.contains("tid_two"));
  }
}
