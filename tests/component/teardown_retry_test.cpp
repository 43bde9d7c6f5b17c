// SPDX-License-Identifier: Apache-2.0
// teardown's retry of a parent that still sees its just-deleted child (tigris-wire.md §7.3:
// a 409 on a later wave is retried a few times), and workflows over a transport that reports
// completions out of order, as the curl transport does.
#include "tfork/workflow/fork_batch.hpp"
#include "tfork/workflow/teardown.hpp"

#include <catch2/catch.hpp>

#include "batch_support.hpp"
#include "fake_tigris.hpp"

using namespace tfork;
using namespace tfork::testing;
using workflow::BucketOutcome;

namespace {

std::atomic<bool> no_interrupt{false};

std::size_t count(const std::vector<http::Request>& requests, std::string_view method,
                  const std::string& url) {
  return static_cast<std::size_t>(std::ranges::count_if(
      requests, [&](const auto& r) { return r.method == method && r.url == url; }));
}

// A fork "parent" of "data" with a child "parent-child"; DELETE /parent answers 409 the first
// `conflicts` times even once the child is gone (a service that has not caught up yet).
struct Tree {
  FakeTigris tigris;
  int conflicts_left = 0;
  explicit Tree(int conflicts) : conflicts_left(conflicts) {
    tigris.buckets["data"] = {};
    tigris.buckets["parent"] = {"data", "1"};
    tigris.buckets["parent-child"] = {"parent", "2"};
    tigris.fail_when = [this](const ParsedRequest& r) -> std::optional<http::Result> {
      if (r.method == "DELETE" && r.bucket == "parent" && !r.header("X-Tigris-Snapshot-Version") &&
          conflicts_left > 0) {
        --conflicts_left;
        return xml_error(409, "BucketHasForks");
      }
      return std::nullopt;
    };
  }
};

}  // namespace

TEST_CASE("teardown retries a parent's 409 on a later wave, then deletes it", "[teardown][retry]") {
  Tree tree(1);
  auto transport = tree.tigris.transport();
  auto client = make_client(*transport);
  const auto result = workflow::run_teardown(
      client, workflow::plan_from_names({"parent", "parent-child"}), batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  CHECK(result.forks[0].status == BucketOutcome::deleted);
  CHECK(count(transport->requests, "DELETE", k_endpoint + "/parent") == 2);
  CHECK_FALSE(tree.tigris.buckets.contains("parent"));
}

TEST_CASE("teardown gives up on a parent that keeps answering 409: that fork fails, exit 7",
          "[teardown][retry]") {
  Tree tree(1000);
  auto transport = tree.tigris.transport();
  auto client = make_client(*transport);
  auto plan = workflow::plan_from_names({"parent", "parent-child"});
  // Long enough for the first retry (after 200 ms) whatever the machine's load; the test
  // decides by the count of sends, not by the time.
  plan.parent_retry_budget = std::chrono::milliseconds(2000);
  const auto result = workflow::run_teardown(client, plan, batch(no_interrupt));
  CHECK(exit_of(result.error) == 7);
  CHECK(result.forks[0].status == BucketOutcome::failed);
  REQUIRE(result.forks[0].error);
  CHECK(result.forks[0].error->code == "BucketHasForks");
  CHECK(result.forks[1].status == BucketOutcome::deleted);
  // Retried within the budget, then left: more than one send, and it stopped.
  CHECK(count(transport->requests, "DELETE", k_endpoint + "/parent") > 1);
  REQUIRE(result.error);
  CHECK(result.error->kind == ErrorKind::partial);
}

TEST_CASE("a 409 on the first wave is retried too (a new child may not be visible yet)",
          "[teardown][retry]") {
  Tree tree(2);
  auto transport = tree.tigris.transport();
  auto client = make_client(*transport);
  tree.tigris.buckets.erase("parent-child");
  const auto result =
      workflow::run_teardown(client, workflow::plan_from_names({"parent"}), batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  CHECK(count(transport->requests, "DELETE", k_endpoint + "/parent") == 3);
}

TEST_CASE("teardown and fork create do not depend on completion order", "[teardown][order]") {
  TempDir scratch;
  for (const bool reverse : {false, true}) {
    CAPTURE(reverse);
    FakeTigris tigris;
    tigris.buckets["data"] = {};
    auto transport = tigris.transport();
    transport->complete_in_reverse = reverse;
    auto client = make_client(*transport);

    workflow::ForkCreateRequest request;
    request.source = "data";
    request.count = 6;
    request.prefix = "run";
    request.manifest_path = scratch.path / fmt::format("run-{}.json", reverse);
    const auto plan = workflow::plan_fork_create(request, 1'751'631'910'000);
    const auto created = workflow::run_fork_create(client, plan, batch(no_interrupt));
    REQUIRE(exit_of(created.error) == 0);
    std::vector<std::string> names;
    for (const auto& fork : created.manifest.forks) {
      names.push_back(fork.bucket);
      CHECK(fork.status == workflow::ForkStatus::created);
      CHECK(tigris.keys.contains(fork.access_key_id));
      CHECK(tigris.keys.at(fork.access_key_id).bucket == fork.bucket);
    }
    CHECK(names == std::vector<std::string>{"run-1", "run-2", "run-3", "run-4", "run-5", "run-6"});

    const auto torn = workflow::run_teardown(
        client,
        workflow::plan_from_manifests(
            {workflow::ManifestFile{*plan.manifest_path, created.manifest}}, true, false),
        batch(no_interrupt));
    CHECK(exit_of(torn.error) == 0);
    for (const auto& fork : torn.forks)
      CHECK(fork.status == BucketOutcome::deleted);
    CHECK(tigris.buckets.size() == 1);
    CHECK(tigris.keys.empty());
  }
}
