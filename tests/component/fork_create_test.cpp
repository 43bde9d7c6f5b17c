// SPDX-License-Identifier: Apache-2.0
// fork create (cli.md §4) against a recording transport and an in-memory Tigris: the exact
// requests, rollback, --keep-partial, --exist-ok, the manifest at every step, interruption.
#include "tfork/workflow/fork_batch.hpp"
#include "tfork/workflow/manifest.hpp"
#include "tfork/workflow/teardown.hpp"

#include <catch2/catch.hpp>

#include "batch_support.hpp"
#include "fake_tigris.hpp"
#include <filesystem>
#include <fstream>
#include <regex>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace tfork;
using namespace tfork::testing;
using workflow::ForkStatus;

namespace {

// Manifests of runs that do not name one (a run that mints keys always writes one) go here,
// not into the test's working directory.
const fs::path& scratch_dir() {
  static TempDir dir;
  return dir.path;
}

fs::path scratch_manifest() {
  static int n = 0;
  return scratch_dir() / fmt::format("manifest-{}.json", n++);
}

workflow::ForkCreatePlan plan_for(int count, std::string prefix = "run") {
  workflow::ForkCreateRequest request;
  request.source = "data";
  request.count = count;
  request.prefix = std::move(prefix);
  request.manifest_path = scratch_manifest();
  return workflow::plan_fork_create(request, 1700000000000);
}

workflow::TeardownPlan teardown_plan(const workflow::Manifest& manifest) {
  const auto path = scratch_manifest();
  workflow::write_manifest(path, manifest, false);
  return workflow::plan_from_manifests({{path, manifest}}, false, false);
}

std::string header_of(const http::Request& request, std::string_view name) {
  auto value = http::find_header(request.headers, name);
  return value ? std::string(*value) : std::string();
}

std::string signed_headers(const http::Request& request) {
  const auto auth = header_of(request, "Authorization");
  std::smatch match;
  static const std::regex pattern("SignedHeaders=([^,]+)");
  REQUIRE(std::regex_search(auth, match, pattern));
  return match[1];
}

// Every X-Tigris-* header the request carries is in SignedHeaders (tigris-wire.md §1.2).
void check_tigris_headers_signed(const http::Request& request) {
  const auto names = ";" + signed_headers(request) + ";";
  for (const auto& [name, value] : request.headers) {
    std::string lower = name;
    std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.starts_with("x-tigris-") || lower.starts_with("tigris-")) {
      INFO(lower);
      CHECK(names.find(";" + lower + ";") != std::string::npos);
    }
  }
}

nlohmann::json req_json(const http::Request& request) {
  const auto form = parse_pairs(request.body, true);
  return nlohmann::json::parse(form.at("Req"));
}

std::atomic<bool> no_interrupt{false};

}  // namespace

TEST_CASE("fork create sends one snapshot, N forks of it and N scoped keys", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  auto plan = plan_for(3);

  const auto outcome = workflow::run_fork_create(client, plan, batch(no_interrupt, 7));
  REQUIRE(exit_of(outcome.error) == 0);
  CHECK_FALSE(outcome.error);

  const auto& requests = transport->requests;
  REQUIRE(requests.size() == 7);
  CHECK(transport->widest_window == 7);

  // 1. exactly one snapshot, named after the prefix
  CHECK(requests[0].method == "PUT");
  CHECK(requests[0].url == k_endpoint + "/data");
  CHECK(header_of(requests[0], "X-Tigris-Snapshot") == "true; name=tfork run");
  check_tigris_headers_signed(requests[0]);

  // 2. N forks, all from that one version
  for (int i = 1; i <= 3; ++i) {
    const auto& request = requests[static_cast<std::size_t>(i)];
    CHECK(request.method == "PUT");
    CHECK(request.url == fmt::format("{}/run-{}", k_endpoint, i));
    CHECK(header_of(request, "X-Tigris-Fork-Source-Bucket") == "data");
    CHECK(header_of(request, "X-Tigris-Fork-Source-Bucket-Snapshot") == tigris.next_version);
    CHECK(request.body.empty());
    check_tigris_headers_signed(request);
  }

  // 3. N keys, each with one role on its own fork only
  std::set<std::string> uuids;
  for (int i = 1; i <= 3; ++i) {
    const auto& request = requests[static_cast<std::size_t>(3 + i)];
    CHECK(request.method == "POST");
    CHECK(request.url == k_endpoint + "/?Action=CreateAccessKeyWithBucketsRole");
    CHECK(header_of(request, "Content-Type") == "application/x-www-form-urlencoded");
    const auto req = req_json(request);
    CHECK(req["name"] == fmt::format("run-{}-key", i));
    REQUIRE(req["buckets_role"].size() == 1);
    CHECK(req["buckets_role"][0]["bucket"] == fmt::format("run-{}", i));
    CHECK(req["buckets_role"][0]["role"] == "Editor");
    CHECK(std::regex_match(req["req_uuid"].get<std::string>(),
                           std::regex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                                      "[0-9a-f]{12}")));
    uuids.insert(req["req_uuid"].get<std::string>());
  }
  CHECK(uuids.size() == 3);

  // The document (and manifest): cli.md §4, fields in order.
  const auto json = workflow::to_json(outcome.manifest);
  std::vector<std::string> keys;
  for (const auto& [key, value] : json.items())
    keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"source", "snapshot", "endpoint", "iam_endpoint", "forks",
                                         "snapshot_taken", "snapshot_name", "expires_at"});
  CHECK(json["snapshot"] == tigris.next_version);
  REQUIRE(json["forks"].size() == 3);
  std::vector<std::string> fork_keys;
  for (const auto& [key, value] : json["forks"][0].items())
    fork_keys.push_back(key);
  CHECK(fork_keys ==
        std::vector<std::string>{"bucket", "status", "access_key_id", "secret_access_key", "role"});
  for (const auto& fork : json["forks"]) {
    CHECK(fork["status"] == "created");
    CHECK(fork["access_key_id"].get<std::string>().starts_with("tid_"));
    CHECK(fork["secret_access_key"].get<std::string>().starts_with("tsec_"));
    CHECK(fork["role"] == "Editor");
  }
  // The table never shows a secret.
  const auto table = workflow::to_table(outcome.manifest);
  CHECK(table.find("tsec_") == std::string::npos);
  CHECK(table.find("tid_0001") != std::string::npos);
}

TEST_CASE("fork create with --snapshot takes no snapshot; --keys none mints no key", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.snapshots.insert("data@1751631910000000000");
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  workflow::ForkCreateRequest request;
  request.source = "data";
  request.names = {"agent-a", "agent-b"};
  request.snapshot = "1751631910000000000";
  request.keys = "none";
  const auto plan = workflow::plan_fork_create(request, 0);

  const auto outcome = workflow::run_fork_create(client, plan, batch(no_interrupt));
  REQUIRE(exit_of(outcome.error) == 0);
  // The version is checked against ListBucketSnapshots first (cli.md §4.8).
  REQUIRE(transport->requests.size() == 3);
  CHECK(transport->requests[0].method == "GET");
  CHECK(header_of(transport->requests[0], "X-Tigris-Snapshot") == "data");
  transport->requests.erase(transport->requests.begin());
  for (const auto& sent : transport->requests) {
    CHECK(sent.method == "PUT");
    CHECK(header_of(sent, "X-Tigris-Fork-Source-Bucket-Snapshot") == "1751631910000000000");
    CHECK(header_of(sent, "X-Tigris-Snapshot").empty());
  }
  const auto json = workflow::to_json(outcome.manifest);
  CHECK(json["forks"][0]["role"].is_null());
  CHECK(json["forks"][0]["access_key_id"].is_null());
  CHECK(json["forks"][1]["bucket"] == "agent-b");
}

TEST_CASE("bad names and options are refused before any request", "[fork]") {
  auto refused = [](workflow::ForkCreateRequest request) -> std::string {
    try {
      workflow::plan_fork_create(request, 1700000000000);
    } catch (const TforkError& error) {
      CHECK(error.error().kind == ErrorKind::usage);
      CHECK(exit_code(error.error().kind) == 64);
      return error.error().message;
    }
    FAIL("not refused");
    return {};
  };
  workflow::ForkCreateRequest base;
  base.source = "data";
  base.count = 2;

  auto bad_name = base;
  bad_name.count = 0;
  bad_name.names = {"good-name", "Bad_Name"};
  CHECK_THAT(refused(bad_name), Catch::Contains("'Bad_Name'") && Catch::Contains("lowercase"));

  auto long_prefix = base;
  long_prefix.prefix = std::string(62, 'a');
  CHECK_THAT(refused(long_prefix),
             Catch::Contains(std::string(62, 'a') + "-1") && Catch::Contains("3 to 63"));

  auto bad_source = base;
  bad_source.source = "x";
  CHECK_THAT(refused(bad_source), Catch::Contains("source"));

  auto none = base;
  none.count = 0;
  CHECK_THAT(refused(none), Catch::Contains("-n N"));

  auto both = base;
  both.names = {"abc"};
  CHECK_THAT(refused(both), Catch::Contains("not both"));

  auto duplicate = base;
  duplicate.count = 0;
  duplicate.names = {"abc", "abc"};
  CHECK_THAT(refused(duplicate), Catch::Contains("twice"));

  auto name_any_version = base;
  name_any_version.snapshot = "yesterday";
  name_any_version.any_version = true;
  CHECK_THAT(refused(name_any_version), Catch::Contains("--any-version"));
  auto lone_any_version = base;
  lone_any_version.any_version = true;
  CHECK_THAT(refused(lone_any_version), Catch::Contains("--any-version"));

  auto bad_snapshot_name = base;
  bad_snapshot_name.snapshot_name = "a;b";
  CHECK_THAT(refused(bad_snapshot_name), Catch::Contains("--snapshot-name"));

  // The default prefix is <source>-fork-<unix-ms>.
  const auto plan = workflow::plan_fork_create(base, 1700000000123);
  CHECK(plan.names ==
        std::vector<std::string>{"data-fork-1700000000123-1", "data-fork-1700000000123-2"});
  CHECK(plan.snapshot_name == "tfork data-fork-1700000000123");
}

TEST_CASE("dry run lists the requests without sending them", "[fork]") {
  const auto plan = plan_for(2);
  const auto operations = workflow::fork_create_operations(plan);
  REQUIRE(operations.size() == 5);
  CHECK(operations[0].name == "CreateBucketSnapshot");
  CHECK(operations[1].name == "CreateBucketFork");
  CHECK(operations[4].name == "CreateAccessKeyWithBucketsRole");
}

TEST_CASE("a failing fork rolls back what the run created", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-2"] = {};  // a plain bucket someone else owns
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  const auto outcome = workflow::run_fork_create(client, plan_for(3), batch(no_interrupt));
  CHECK(exit_of(outcome.error) == 6);  // conflict
  REQUIRE(outcome.error);
  CHECK_THAT(outcome.error->message, Catch::Contains("run-2") && Catch::Contains("rolled back 2"));
  const auto& forks = outcome.manifest.forks;
  CHECK(forks[0].status == ForkStatus::rolled_back);
  CHECK(forks[1].status == ForkStatus::failed);
  CHECK(forks[1].error->code == "BucketAlreadyExists");
  CHECK(forks[2].status == ForkStatus::rolled_back);
  // Nothing of this run is left; the other owner's bucket is untouched. The keys of the forks
  // made before the conflict was known went out with them (each fork's key follows its fork),
  // and were revoked before the forks went.
  CHECK(tigris.buckets.size() == 2);
  CHECK(tigris.buckets.contains("run-2"));
  CHECK(tigris.keys.empty());
  std::size_t minted = 0, revoked = 0;
  for (const auto& sent : transport->requests) {
    minted += sent.url.find("Action=CreateAccessKeyWithBucketsRole") != std::string::npos;
    revoked += sent.url.find("Action=DeleteAccessKey") != std::string::npos;
  }
  CHECK(minted <= 2);  // never one for run-2
  CHECK(revoked == minted);
  CHECK_THAT(outcome.error->message, Catch::Contains(fmt::format("and {} key", minted)));
  const auto json = workflow::to_json(outcome.manifest);
  CHECK(json["forks"][1]["error"]["code"] == "BucketAlreadyExists");
  CHECK(json["forks"][1]["error"]["http_status"] == 409);
}

TEST_CASE("a failing key rolls back keys, then forks", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.fail_when = [](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "POST" && r.form.contains("Req") &&
        r.form.at("Req").find("run-2-key") != std::string::npos)
      return http::Response{403, {}, R"({"Code":"AccessDenied","Message":"denied"})", 1};
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);

  const auto outcome = workflow::run_fork_create(client, plan_for(3), batch(no_interrupt));
  CHECK(exit_of(outcome.error) == 2);
  CHECK(tigris.keys.empty());
  CHECK(tigris.buckets.size() == 1);
  for (const auto& fork : outcome.manifest.forks) {
    CHECK(fork.status == ForkStatus::rolled_back);
    CHECK(fork.access_key_id.empty());
    CHECK(fork.secret_access_key.empty());
  }
  // Keys first, then buckets, then the snapshot the run took.
  auto is_snapshot_delete = [](const http::Request& sent) {
    return sent.method == "DELETE" && !header_of(sent, "X-Tigris-Snapshot-Version").empty();
  };
  std::size_t last_key_delete = 0, first_bucket_delete = transport->requests.size();
  for (std::size_t i = 0; i < transport->requests.size(); ++i) {
    const auto& sent = transport->requests[i];
    if (sent.url.find("Action=DeleteAccessKey") != std::string::npos) last_key_delete = i;
    if (sent.method == "DELETE" && !is_snapshot_delete(sent))
      first_bucket_delete = std::min(first_bucket_delete, i);
  }
  CHECK(last_key_delete > 0);
  CHECK(last_key_delete < first_bucket_delete);
  for (const auto& sent : transport->requests)
    if (sent.method == "DELETE" && !is_snapshot_delete(sent))
      CHECK(header_of(sent, "Tigris-Force-Delete") == "true");
  REQUIRE(is_snapshot_delete(transport->requests.back()));
  CHECK(header_of(transport->requests.back(), "X-Tigris-Snapshot-Version") ==
        outcome.manifest.snapshot);
  CHECK_THAT(outcome.error->message, Catch::Contains("and the snapshot"));
}

TEST_CASE("--keep-partial keeps the successes and exits 7; teardown finishes", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-2"] = {};
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  auto plan = plan_for(3);
  plan.keep_partial = true;

  const auto outcome = workflow::run_fork_create(client, plan, batch(no_interrupt));
  CHECK(exit_of(outcome.error) == 7);
  const auto& forks = outcome.manifest.forks;
  CHECK(forks[0].status == ForkStatus::created);
  CHECK_FALSE(forks[0].access_key_id.empty());
  CHECK(forks[1].status == ForkStatus::failed);
  CHECK(forks[1].access_key_id.empty());
  CHECK(forks[2].status == ForkStatus::created);
  CHECK(tigris.keys.size() == 2);

  // teardown --manifest removes this run's forks and keys, never the other owner's bucket.
  const auto teardown = teardown_plan(outcome.manifest);
  REQUIRE(teardown.targets.size() == 2);
  const auto result = workflow::run_teardown(client, teardown, batch(no_interrupt));
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.keys.empty());
  CHECK(tigris.buckets.size() == 2);
  CHECK(tigris.buckets.contains("run-2"));
}

TEST_CASE("--exist-ok adopts a fork of the same source and mints it a key", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["other"] = {};
  tigris.buckets["run-2"] = {"data", tigris.next_version};

  SECTION("adopted") {
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    auto plan = plan_for(3);
    plan.exist_ok = true;
    const auto outcome = workflow::run_fork_create(client, plan, batch(no_interrupt));
    CHECK(exit_of(outcome.error) == 0);
    CHECK(outcome.manifest.forks[1].status == ForkStatus::exists);
    CHECK_FALSE(outcome.manifest.forks[1].access_key_id.empty());
    // Only the conflicting fork gets a HeadBucket.
    int heads = 0;
    for (const auto& sent : transport->requests)
      if (sent.method == "HEAD") {
        ++heads;
        CHECK(sent.url == k_endpoint + "/run-2");
      }
    CHECK(heads == 1);
  }
  SECTION("a fork of the same source from another snapshot is a conflict naming both") {
    tigris.buckets["run-2"] = {"data", "1"};
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    auto plan = plan_for(3);
    plan.exist_ok = true;
    const auto outcome = workflow::run_fork_create(client, plan, batch(no_interrupt));
    CHECK(exit_of(outcome.error) == 6);
    const auto& fork = outcome.manifest.forks[1];
    CHECK(fork.status == ForkStatus::failed);
    REQUIRE(fork.error);
    CHECK(fork.error->code == "ForkSnapshotMismatch");
    CHECK_THAT(fork.error->message,
               Catch::Contains("snapshot 1,") && Catch::Contains(tigris.next_version));
    CHECK(tigris.buckets.contains("run-2"));
  }
  SECTION("a fork of another source is not adopted") {
    tigris.buckets["run-2"] = {"other", "1"};
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    auto plan = plan_for(3);
    plan.exist_ok = true;
    const auto outcome = workflow::run_fork_create(client, plan, batch(no_interrupt));
    CHECK(exit_of(outcome.error) == 6);
    CHECK(outcome.manifest.forks[1].status == ForkStatus::failed);
    CHECK(tigris.buckets.contains("run-2"));
  }
  SECTION("without --exist-ok the run fails and leaves the existing fork alone") {
    auto transport = tigris.transport();
    auto client = make_client(*transport);
    const auto outcome = workflow::run_fork_create(client, plan_for(3), batch(no_interrupt));
    CHECK(exit_of(outcome.error) == 6);
    CHECK(tigris.buckets.contains("run-2"));
    CHECK_FALSE(tigris.buckets.contains("run-1"));
    // One HeadBucket, of the taken name only, to say what it is.
    for (const auto& sent : transport->requests)
      if (sent.method == "HEAD") CHECK(sent.url == k_endpoint + "/run-2");
    REQUIRE(outcome.manifest.forks[1].error);
    CHECK_THAT(outcome.manifest.forks[1].error->message,
               Catch::Contains("run-2: exists, as a fork of data from this run's snapshot"));
  }
}

TEST_CASE("a retried create answered 409 for our own fork counts as created", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.fail_when = [&tigris](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "PUT" && r.bucket == "run-2") {
      // The first attempt went through, its answer was lost, the retry finds the bucket.
      tigris.buckets["run-2"] = {"data", tigris.next_version};
      auto response = xml_error(409, "BucketAlreadyOwnedByYou");
      response.attempts = 2;
      return response;
    }
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto outcome = workflow::run_fork_create(client, plan_for(3), batch(no_interrupt));
  CHECK(exit_of(outcome.error) == 0);
  CHECK(outcome.manifest.forks[1].status == ForkStatus::created);
  CHECK_FALSE(outcome.manifest.forks[1].access_key_id.empty());
}

TEST_CASE("a missing source fails at the snapshot and creates nothing", "[fork]") {
  FakeTigris tigris;
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto outcome = workflow::run_fork_create(client, plan_for(2), batch(no_interrupt));
  CHECK(exit_of(outcome.error) == 3);
  // The snapshot, then a HeadBucket that says why; no fork request.
  REQUIRE(transport->requests.size() == 2);
  CHECK(transport->requests[1].method == "HEAD");
  for (const auto& fork : outcome.manifest.forks) {
    CHECK(fork.status == ForkStatus::not_attempted);
    CHECK_FALSE(fork.error);
  }
  REQUIRE(outcome.error);
  CHECK_THAT(outcome.error->message, Catch::Contains("there is no bucket data"));
}

TEST_CASE("the manifest is 0600 and lets teardown find everything that exists at every request",
          "[fork]") {
  TempDir dir;
  const auto path = dir.path / "run.json";
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  int checks = 0;
  tigris.fail_when = [&](const ParsedRequest&) -> std::optional<http::Result> {
    // Whatever exists now was created by an earlier request; the file must already say so.
    REQUIRE(fs::exists(path));
    struct stat info {};
    REQUIRE(::stat(path.c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0600);
    const auto manifest = workflow::read_manifest(path);
    for (const auto& [name, bucket] : tigris.buckets) {
      if (name == "data") continue;
      const auto it =
          std::ranges::find_if(manifest.forks, [&](const auto& f) { return f.bucket == name; });
      REQUIRE(it != manifest.forks.end());
      CHECK(it->may_exist());
    }
    // Every key is recorded, or teardown can find it: it is named `<fork>-key`, has its role
    // on that fork, and the manifest marks the fork's key as possibly unrecorded.
    for (const auto& [id, key] : tigris.keys) {
      const auto recorded = std::ranges::find_if(
          manifest.forks, [&](const auto& f) { return f.access_key_id == id; });
      if (recorded != manifest.forks.end()) continue;
      CHECK(key.name == key.bucket + "-key");
      const auto fork = std::ranges::find_if(manifest.forks,
                                             [&](const auto& f) { return f.bucket == key.bucket; });
      REQUIRE(fork != manifest.forks.end());
      CHECK(fork->key_may_be_unrecorded());
    }
    ++checks;
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  auto plan = plan_for(4);
  plan.manifest_path = path;
  const auto outcome = workflow::run_fork_create(client, plan, batch(no_interrupt));
  CHECK(exit_of(outcome.error) == 0);
  CHECK(checks == 9);
  const auto final_manifest = workflow::read_manifest(path);
  CHECK(workflow::to_json(final_manifest) == workflow::to_json(outcome.manifest));
  // No temporary file is left next to it.
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);

  // Another run's manifest is never replaced (exit 6); --exist-ok adopts it.
  workflow::ForkCreateRequest again;
  again.source = "data";
  again.count = 1;
  again.prefix = "more";
  again.manifest_path = path;
  try {
    workflow::plan_fork_create(again, 0);
    FAIL("an existing manifest was not refused");
  } catch (const TforkError& e) {
    CHECK(exit_code(e.error().kind) == 6);
    CHECK_THAT(e.error().message, Catch::Contains("--exist-ok"));
  }
  again.exist_ok = true;
  const auto adopting = workflow::plan_fork_create(again, 0);
  REQUIRE(adopting.adopted);
  CHECK(adopting.snapshot == final_manifest.snapshot);  // continues that run's snapshot
  const auto more = workflow::run_fork_create(client, adopting, batch(no_interrupt));
  CHECK(exit_of(more.error) == 0);
  const auto merged = workflow::read_manifest(path);
  CHECK(merged.forks.size() == 5);
  CHECK(merged.forks[0].bucket == "more-1");
  CHECK(merged.snapshot_taken);
  again.source = "other-source";
  CHECK_THROWS_AS(workflow::plan_fork_create(again, 0), TforkError);
}

TEST_CASE("an unwritable manifest fails before anything is sent", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  auto plan = plan_for(2);
  plan.manifest_path = "/nonexistent-dir/run.json";
  CHECK_THROWS_AS(workflow::run_fork_create(client, plan, batch(no_interrupt)), TforkError);
  CHECK(transport->requests.empty());
}

TEST_CASE("SIGINT stops with a consistent manifest; teardown finishes the job", "[fork]") {
  TempDir dir;
  const auto path = dir.path / "run.json";
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  std::atomic<bool> interrupted{false};
  tigris.fail_when = [&](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "PUT" && r.bucket == "run-3") {
      // Ctrl-C while run-3 is in flight: the server still completes it.
      interrupted = true;
      tigris.buckets["run-3"] = {"data", tigris.next_version};
    }
    if (interrupted.load())
      return std::unexpected(
          http::TransportError{http::TransportError::Kind::cancelled, "cancelled", 1});
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  auto plan = plan_for(4);
  plan.manifest_path = path;
  const auto outcome = workflow::run_fork_create(client, plan, batch(interrupted));
  CHECK(exit_of(outcome.error) == 130);
  const auto manifest = workflow::read_manifest(path);
  CHECK(manifest.forks[0].status == ForkStatus::created);
  CHECK(manifest.forks[1].status == ForkStatus::created);
  CHECK(manifest.forks[2].status == ForkStatus::pending);
  CHECK(manifest.forks[3].status == ForkStatus::pending);
  // No rollback and no keys after the interrupt.
  for (const auto& sent : transport->requests) {
    CHECK(sent.method != "DELETE");
    CHECK(sent.method != "POST");
  }

  interrupted = false;
  tigris.fail_when = nullptr;
  const auto result = workflow::run_teardown(client, teardown_plan(manifest), batch(interrupted));
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.buckets.size() == 1);
  CHECK(result.forks[3].status == workflow::BucketOutcome::already_gone);
}

TEST_CASE("SIGINT during the keys: teardown finds the unrecorded key by name", "[fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  std::atomic<bool> interrupted{false};
  tigris.fail_when = [&](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "POST" && r.form.contains("Req") &&
        r.form.at("Req").find("run-2-key") != std::string::npos) {
      interrupted = true;
      tigris.keys["tid_lost"] = {"run-2-key", "run-2", "Editor"};  // minted, answer lost
    }
    if (interrupted.load())
      return std::unexpected(
          http::TransportError{http::TransportError::Kind::cancelled, "cancelled", 1});
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  const auto outcome = workflow::run_fork_create(client, plan_for(3), batch(interrupted));
  CHECK(exit_of(outcome.error) == 130);
  CHECK(outcome.manifest.forks[1].key_may_be_unrecorded());
  CHECK(tigris.keys.size() == 2);

  interrupted = false;
  tigris.fail_when = nullptr;
  const auto plan = teardown_plan(outcome.manifest);
  const auto result = workflow::run_teardown(client, plan, batch(interrupted));
  CHECK(exit_of(result.error) == 0);
  CHECK(tigris.keys.empty());
  CHECK(tigris.buckets.size() == 1);
}
