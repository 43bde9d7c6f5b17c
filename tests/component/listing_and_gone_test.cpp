// SPDX-License-Identifier: Apache-2.0
// The one fork listing and the "already gone" rules, across the commands that use them:
// teardown --source pages through the same listing as fork ls and stops on a repeated token;
// snapshot rm and teardown --delete-snapshot agree on what counts as already gone.
#include "tfork/commands/snapshot.hpp"
#include "tfork/workflow/teardown.hpp"

#include <catch2/catch.hpp>

#include "batch_support.hpp"
#include "fake_tigris.hpp"

using namespace tfork;
using namespace tfork::testing;
using workflow::BucketOutcome;

namespace {

std::atomic<bool> no_interrupt{false};

// A listing page of `names` (forks of "data") that always says there is more, with the same
// token: a server bug that must end in an error, not in an endless loop.
http::Result repeating_page(const std::vector<std::string>& names) {
  nlohmann::json out;
  out["Buckets"]["Bucket"] = nlohmann::json::array();
  for (const auto& name : names)
    out["Buckets"]["Bucket"].push_back(
        {{"Name", name},
         {"ForkInfo", {{"Parents", {{{"BucketName", "data"}, {"Snapshot", "1"}}}}}}});
  out["ContinuationToken"] = "again";
  return http::Response{200, {{"Content-Type", "application/json"}}, out.dump(), 1};
}

// Runs `action` with a guard: a listing that loops is stopped after 20 pages (and fails the
// test) instead of hanging it.
ErrorKind failure_kind(FakeTigris& tigris, const std::function<void()>& action) {
  int listings = 0;
  tigris.fail_when = [&](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method != "GET") return std::nullopt;
    if (++listings > 20) return xml_error(500, "TestLoopGuard");
    return repeating_page({"run-1", "run-2"});
  };
  try {
    action();
  } catch (const TforkError& error) {
    CHECK(error.error().code == "InvalidResponse");
    CHECK(listings <= 2);
    return error.error().kind;
  }
  FAIL("no TforkError");
  return ErrorKind::other;
}

workflow::SourceSelection run_selection() {
  workflow::SourceSelection selection;
  selection.source = "data";
  selection.prefix = "run";
  return selection;
}

}  // namespace

TEST_CASE("teardown --source stops on a repeated continuation token, like fork ls",
          "[teardown][listing]") {
  FakeTigris tigris;
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  CHECK(failure_kind(tigris, [&] {
          workflow::plan_from_source(client, run_selection(), std::chrono::system_clock::now());
        }) == ErrorKind::other);
  CHECK(failure_kind(tigris, [&] { tigris::find_forks(client, "data"); }) == ErrorKind::other);
}

TEST_CASE("teardown --source keeps only forks of the source named PREFIX-N",
          "[teardown][listing]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["other"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.buckets["run-2"] = {"data", "1"};
  tigris.buckets["run-x"] = {"data", "1"};     // not PREFIX-N
  tigris.buckets["run-3"] = {"other", "1"};    // a fork of another bucket
  tigris.buckets["run-42-1"] = {"data", "1"};  // PREFIX run-42, not run
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  for (const bool old_gateway : {false, true}) {
    tigris.ignore_fork_header = old_gateway;
    const auto plan =
        workflow::plan_from_source(client, run_selection(), std::chrono::system_clock::now());
    std::vector<std::string> names;
    for (const auto& target : plan.targets)
      names.push_back(target.bucket);
    CHECK(names == std::vector<std::string>{"run-1", "run-2"});
  }
}

TEST_CASE("snapshot rm and teardown --delete-snapshot agree on what is nothing to do",
          "[teardown][snapshot][gone]") {
  // A missing snapshot is nothing to do for both (snapshot rm names what it was given: not
  // found; teardown deletes the run's own snapshot: already gone); a missing bucket fails.
  struct Case {
    int status;
    const char* code;
    const char* rm_status;
    const char* teardown_status;
  };
  const Case cases[] = {
      {404, "NoSuchSnapshot", "not-found", "already-gone"},
      {404, "NoSuchBucket", "failed", "failed"},  // the bucket is missing: exit 3
      {403, "AccessDenied", "failed", "failed"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.code);
    FakeTigris tigris;
    tigris.fail_when = [&](const ParsedRequest& r) -> std::optional<http::Result> {
      if (r.method == "DELETE" && r.header("X-Tigris-Snapshot-Version"))
        return xml_error(c.status, c.code);
      return std::nullopt;
    };
    auto transport = tigris.transport();
    auto client = make_client(*transport);

    const auto removed = commands::snapshot::run_snapshot_rm(
        client, {"data", {"1751631910196672425"}}, workflow::BatchSettings{4});
    CHECK(output::status_name(removed.versions.at(0).outcome.status) == c.rm_status);

    workflow::TeardownPlan plan;
    workflow::SnapshotTarget snapshot;
    snapshot.bucket = "data";
    snapshot.version = "1751631910196672425";
    plan.snapshots.push_back(snapshot);
    const auto torn = workflow::run_teardown(client, plan, batch(no_interrupt));
    REQUIRE(torn.snapshots.size() == 1);
    CHECK(workflow::to_json(torn)["snapshots"][0]["status"] == c.teardown_status);
  }
}
