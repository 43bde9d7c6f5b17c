// SPDX-License-Identifier: Apache-2.0
// tfork bucket create | rm against the recording transport: the exact requests (method, path,
// X-Tigris headers signed), --exist-ok, --force, per-bucket statuses and the exit rule.
#include "tfork/commands/bucket.hpp"

#include <catch2/catch.hpp>

#include "batch_support.hpp"
#include "command_harness.hpp"
#include "fake_tigris.hpp"

using namespace tfork;
using namespace tfork::testing::commands;
using tfork::testing::FakeTransport;
namespace bucket_cmd = tfork::commands::bucket;
using tfork::testing::FakeTigris;
using tfork::testing::ParsedRequest;

namespace {

// The batch exit rule as an exception, for failure_kind.
void fail_if_any_failed(const bucket_cmd::RemoveResult& result) {
  if (auto error = bucket_cmd::batch_error(result)) throw TforkError(std::move(*error));
}

void check_bucket_names(const std::vector<std::string>& names) {
  for (const auto& name : names)
    tfork::cli::require_bucket_name(name);
}

}  // namespace

TEST_CASE("bucket create sends PUT /NAME, with X-Tigris-Enable-Snapshot signed when asked",
          "[bucket][create]") {
  FakeTransport transport;
  tigris::Client client(settings(), transport, fixed_clock());

  auto result = bucket_cmd::run_bucket_create(client, {"training-data", true, false}, {});
  REQUIRE(transport.requests.size() == 1);
  const auto& request = transport.requests[0];
  CHECK(request.method == "PUT");
  CHECK(path_of(request) == "/training-data");
  CHECK(query_of(request).empty());
  CHECK(request.body.empty());
  CHECK(header_of(request, "X-Tigris-Enable-Snapshot") == "true");
  CHECK(signed_headers(request).contains("x-tigris-enable-snapshot"));
  CHECK(signed_headers(request).contains("host"));
  CHECK(bucket_cmd::to_json(result).dump() ==
        R"({"bucket":"training-data","created":true,"snapshots_enabled":true})");

  transport.requests.clear();
  result = bucket_cmd::run_bucket_create(client, {"plain", false, false}, {});
  CHECK(header_of(transport.requests.at(0), "X-Tigris-Enable-Snapshot") == "<absent>");
  CHECK_FALSE(result.snapshots_enabled);
}

TEST_CASE("bucket create on an existing bucket: exit 6, or created:false with --exist-ok",
          "[bucket][create]") {
  bool snapshots_on_head = true;
  int head_status = 200;
  FakeTransport transport([&](const http::Request& request) -> http::Result {
    if (request.method == "PUT") return s3_error(409, "BucketAlreadyOwnedByYou");
    if (request.method == "PATCH") {
      snapshots_on_head = true;  // a service that shows the change at once
      return ok(200, {{"Content-Type", "application/json"}}, R"({"status":"success"})");
    }
    if (head_status != 200) return ok(head_status);
    return ok(200, {{"X-Tigris-Enable-Snapshot", snapshots_on_head ? "true" : "false"}});
  });
  tigris::Client client(settings(), transport, fixed_clock());

  SECTION("without --exist-ok: the conflict, and no HeadBucket") {
    CHECK(failure_kind([&] {
            bucket_cmd::run_bucket_create(client, {"data", true, false}, {});
          }) == ErrorKind::conflict);
    CHECK(transport.requests.size() == 1);
  }
  SECTION("--exist-ok: a HeadBucket reports the snapshot setting") {
    auto result = bucket_cmd::run_bucket_create(client, {"data", true, true}, {});
    REQUIRE(transport.requests.size() == 2);
    CHECK(transport.requests[1].method == "HEAD");
    CHECK(path_of(transport.requests[1]) == "/data");
    CHECK(bucket_cmd::to_json(result).dump() ==
          R"({"bucket":"data","created":false,"snapshots_enabled":true})");
    snapshots_on_head = false;
    result = bucket_cmd::run_bucket_create(client, {"data", false, true}, {});
    CHECK_FALSE(result.snapshots_enabled);
    CHECK_FALSE(result.created);
  }
  SECTION("--snapshots --exist-ok on our regular bucket: a PATCH turns snapshots on") {
    snapshots_on_head = false;
    auto result = bucket_cmd::run_bucket_create(client, {"data", true, true}, {});
    // PUT, HEAD, PATCH, then HEAD again until it shows the change.
    REQUIRE(transport.requests.size() == 4);
    CHECK(transport.requests[1].method == "HEAD");
    const auto& patch = transport.requests[2];
    CHECK(patch.method == "PATCH");
    CHECK(path_of(patch) == "/data");
    CHECK(patch.body == R"({"type":1})");
    CHECK(transport.requests[3].method == "HEAD");
    CHECK(bucket_cmd::to_json(result).dump() ==
          R"({"bucket":"data","created":false,"snapshots_enabled":true})");

    // Without --snapshots a regular bucket stays as it is: no PATCH.
    snapshots_on_head = false;
    transport.requests.clear();
    result = bucket_cmd::run_bucket_create(client, {"data", false, true}, {});
    CHECK(transport.requests.size() == 2);
    CHECK_FALSE(result.snapshots_enabled);
  }
  SECTION("--exist-ok on someone else's bucket (HeadBucket 403): still the conflict") {
    head_status = 403;
    CHECK(failure_kind([&] {
            bucket_cmd::run_bucket_create(client, {"data", false, true}, {});
          }) == ErrorKind::conflict);
  }
}

TEST_CASE("bucket create: BucketAlreadyOwnedByYou after a retry counts as created (cli.md §7)",
          "[bucket][create]") {
  FakeTransport transport([](const http::Request&) -> http::Result {
    auto response = s3_error(409, "BucketAlreadyOwnedByYou");
    response.attempts = 2;
    return response;
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = bucket_cmd::run_bucket_create(client, {"data", false, false}, {});
  CHECK(result.created);
}

TEST_CASE("bucket create: names are checked before anything is sent", "[bucket][names]") {
  CHECK(failure_kind([] { check_bucket_names({"Bad_Name"}); }) == ErrorKind::usage);
  CHECK(failure_kind([] { check_bucket_names({"ok-name", "10.0.0.1"}); }) == ErrorKind::usage);
  CHECK_NOTHROW(check_bucket_names({"ok-name", "other.name"}));
}

TEST_CASE("bucket rm: HeadBucket, then one DELETE per bucket, in parallel, statuses in input order",
          "[bucket][rm]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const auto path = path_of(request);
    if (request.method == "HEAD") return path == "/gone" ? ok(404) : ok(200);
    if (request.method == "POST") return ok(200, {}, R"({"IsTruncated":false,"Keys":[]})");
    if (path == "/full") return s3_error(409, "BucketNotEmpty");
    if (request.method == "GET") return ok(200, {}, R"({"Buckets":{"Bucket":[]}})");
    return ok(204);
  });
  tigris::Client client(settings(), transport, fixed_clock());

  const auto result = bucket_cmd::run_bucket_rm(client, {{"one", "gone", "full"}, false},
                                                workflow::BatchSettings{5});
  REQUIRE(transport.requests.size() >= 6);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(transport.requests[i].method == "HEAD");
  std::vector<std::string> deletes;
  for (const auto& request : transport.requests) {
    if (request.method != "DELETE") continue;
    deletes.push_back(path_of(request));
    CHECK(header_of(request, "Tigris-Force-Delete") == "<absent>");
  }
  CHECK(deletes == std::vector<std::string>{"/one", "/full"});
  CHECK(bucket_cmd::to_json(result).dump() ==
        R"({"buckets":[{"bucket":"one","status":"deleted"},)"
        R"({"bucket":"gone","status":"not-found"},)"
        R"({"bucket":"full","status":"failed","error":{"code":"BucketNotEmpty",)"
        R"x("message":"DeleteBucket failed: BucketNotEmpty message (--force deletes its )x"
        R"x(objects too)","http_status":409}}],"keys":[]})x");
  // A mixed batch exits 7.
  CHECK(failure_kind([&] { fail_if_any_failed(result); }) == ErrorKind::partial);
  CHECK_THAT(bucket_cmd::to_table(result), Catch::Contains("BucketNotEmpty"));
}

TEST_CASE("bucket rm exit rule", "[bucket][rm]") {
  using bucket_cmd::RemoveItem;
  using bucket_cmd::RemoveResult;
  const Error conflict{ErrorKind::conflict, "BucketNotEmpty", "not empty", 409, {}};
  const Error network{ErrorKind::network, "ConnectError", "refused", 0, {}};

  CHECK_NOTHROW(fail_if_any_failed(RemoveResult{{{"a", {output::Status::deleted, std::nullopt}},
                                                 {"b", {output::Status::not_found, std::nullopt}}},
                                                {}}));
  // Every bucket missing: nothing to do, exit 3 (a typo as likely as a finished re-run).
  CHECK(failure_kind([&] {
          fail_if_any_failed(RemoveResult{{{"a", {output::Status::not_found, std::nullopt}},
                                           {"b", {output::Status::not_found, std::nullopt}}},
                                          {}});
        }) == ErrorKind::not_found);
  // One bucket: its own error.
  CHECK(failure_kind([&] {
          fail_if_any_failed(RemoveResult{{{"a", {output::Status::failed, conflict}}}, {}});
        }) == ErrorKind::conflict);
  // All failed for one reason: that reason.
  CHECK(failure_kind([&] {
          fail_if_any_failed(RemoveResult{
              {{"a", {output::Status::failed, network}}, {"b", {output::Status::failed, network}}},
              {}});
        }) == ErrorKind::network);
  // Different reasons, or some succeeded: 7.
  CHECK(failure_kind([&] {
          fail_if_any_failed(RemoveResult{
              {{"a", {output::Status::failed, network}}, {"b", {output::Status::failed, conflict}}},
              {}});
        }) == ErrorKind::partial);
  CHECK(failure_kind([&] {
          fail_if_any_failed(RemoveResult{{{"a", {output::Status::deleted, std::nullopt}},
                                           {"b", {output::Status::failed, conflict}}},
                                          {}});
        }) == ErrorKind::partial);
}

TEST_CASE("bucket rm of a fork parent names its forks (X-Tigris-Fork listing)", "[bucket][rm]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    if (request.method == "DELETE") return s3_error(409, "BucketHasForks");
    if (request.method == "HEAD") return ok(200);
    return ok(200, {{"Content-Type", "application/json"}},
              R"({"Buckets":{"Bucket":[
                   {"Name":"src-fork-1","CreationDate":"2026-01-01T00:00:00Z",
                    "ForkInfo":{"HasChildren":false,"Parents":[{"BucketName":"src","Snapshot":"5"}]}},
                   {"Name":"src-fork-2","CreationDate":"2026-01-01T00:00:01Z",
                    "ForkInfo":{"HasChildren":false,"Parents":[{"BucketName":"src","Snapshot":"5"}]}}]}})");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result =
      bucket_cmd::run_bucket_rm(client, {{"src"}, false}, workflow::BatchSettings{32});
  REQUIRE(transport.requests.size() == 4);  // HeadBucket, the key listing, DELETE, fork listing
  const auto& listing = transport.requests[3];
  CHECK(listing.method == "GET");
  CHECK(path_of(listing) == "/");
  CHECK(header_of(listing, "X-Tigris-Fork") == "src");
  CHECK(signed_headers(listing).contains("x-tigris-fork"));
  REQUIRE(result.buckets.at(0).outcome.error);
  const auto& error = *result.buckets[0].outcome.error;
  CHECK(error.code == "BucketHasForks");
  CHECK(error.kind == ErrorKind::conflict);
  CHECK_THAT(error.message, Catch::Contains("src-fork-1, src-fork-2"));
  CHECK(failure_kind([&] { fail_if_any_failed(result); }) == ErrorKind::conflict);
}

TEST_CASE("bucket rm --force: HeadBucket first; a fork parent is never deleted",
          "[bucket][rm][force]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const auto path = path_of(request);
    if (request.method == "HEAD") {
      if (path == "/parent")
        return ok(200, {{"X-Tigris-Enable-Snapshot", "true"}, {"X-Tigris-Is-Fork-Parent", "true"}});
      if (path == "/missing") return ok(404);
      return ok(200, {{"X-Tigris-Enable-Snapshot", "false"}});
    }
    if (request.method == "GET") return ok(200, {}, R"({"Buckets":{"Bucket":[]}})");
    return ok(204);
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = bucket_cmd::run_bucket_rm(client, {{"parent", "missing", "child"}, true},
                                                workflow::BatchSettings{8});

  std::vector<std::string> deletes;
  for (const auto& request : transport.requests) {
    if (request.method != "DELETE") continue;
    deletes.push_back(path_of(request));
    CHECK(header_of(request, "Tigris-Force-Delete") == "true");
    CHECK(signed_headers(request).contains("tigris-force-delete"));
  }
  CHECK(deletes == std::vector<std::string>{"/child"});
  CHECK(transport.requests[0].method == "HEAD");
  CHECK(result.buckets[0].outcome.status == output::Status::failed);
  CHECK(result.buckets[0].outcome.error->code == "BucketHasForks");
  CHECK(result.buckets[1].outcome.status == output::Status::not_found);
  CHECK(result.buckets[2].outcome.status == output::Status::deleted);
}

TEST_CASE("bucket rm: a network failure is a failed item with http_status null", "[bucket][rm]") {
  FakeTransport transport([](const http::Request&) -> http::Result {
    return std::unexpected(http::TransportError{http::TransportError::Kind::connect, "refused", 3});
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result =
      bucket_cmd::run_bucket_rm(client, {{"one"}, false}, workflow::BatchSettings{32});
  CHECK(bucket_cmd::to_json(result)["buckets"][0]["error"]["http_status"].is_null());
  CHECK(failure_kind([&] { fail_if_any_failed(result); }) == ErrorKind::network);
}

TEST_CASE("bucket rm of a fork revokes the keys whose roles were all on deleted forks",
          "[bucket][rm][keys]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.buckets["plain"] = {};
  tigris.keys["tid_run-1"] = {"run-1-key", "run-1", "Editor"};
  tigris.keys["tid_shared"] = {"shared", "run-1", "Editor", {"data"}};
  tigris.keys["tid_plain"] = {"app", "plain", "Editor"};
  auto transport = tigris.transport();
  auto client = tfork::testing::make_client(*transport);
  const auto result =
      bucket_cmd::run_bucket_rm(client, {{"run-1", "plain"}, false}, workflow::BatchSettings{8});
  CHECK(result.buckets[0].outcome.status == output::Status::deleted);
  CHECK(result.buckets[1].outcome.status == output::Status::deleted);
  REQUIRE(result.keys.size() == 1);
  CHECK(result.keys[0].access_key_id == "tid_run-1");
  CHECK(result.keys[0].outcome.status == output::Status::deleted);
  CHECK_FALSE(tigris.keys.contains("tid_run-1"));
  CHECK(tigris.keys.contains("tid_shared"));  // also on data: not the fork's alone
  CHECK(tigris.keys.contains("tid_plain"));   // a plain bucket's key is the operator's
  // The keys were listed before any bucket went.
  std::size_t listing = 0, first_delete = 0;
  for (std::size_t i = 0; i < transport->requests.size(); ++i) {
    const auto& request = transport->requests[i];
    if (request.method == "POST" && request.body.find("ListAccessKeys") != std::string::npos)
      listing = i;
    if (request.method == "DELETE" && first_delete == 0) first_delete = i;
  }
  CHECK(listing < first_delete);
}

TEST_CASE("bucket rm: a fork is not deleted when the keys cannot be listed", "[bucket][rm][keys]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.buckets["run-1"] = {"data", "1"};
  tigris.fail_when = [](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method == "POST") return http::Response{403, {}, R"({"Code":"AccessDenied"})", 1};
    return std::nullopt;
  };
  auto transport = tigris.transport();
  auto client = tfork::testing::make_client(*transport);
  const auto result =
      bucket_cmd::run_bucket_rm(client, {{"run-1"}, false}, workflow::BatchSettings{8});
  CHECK(result.buckets[0].outcome.status == output::Status::failed);
  CHECK_THAT(result.buckets[0].outcome.error->message,
             Catch::Contains("could not list access keys"));
  CHECK(tigris.buckets.contains("run-1"));
}
