// SPDX-License-Identifier: Apache-2.0
// tfork fork head | ls against the recording transport: HeadBucket in parallel with the fork
// headers parsed, the X-Tigris-Fork listing with pagination, and the full-listing fallback.
#include "tfork/commands/fork.hpp"

#include <catch2/catch.hpp>

#include "batch_support.hpp"
#include "command_harness.hpp"

using namespace tfork;
using namespace tfork::testing::commands;
using tfork::testing::FakeTransport;
namespace fork_cmd = tfork::commands::fork;

namespace {

std::string fork_json(const std::string& name, const std::string& parent,
                      const std::string& snapshot) {
  return R"({"Name":")" + name + R"(","CreationDate":"2026-11-29T10:00:00.5+01:00","ForkInfo":{)" +
         R"("HasChildren":false,"Parents":[{"BucketName":")" + parent + R"(","Snapshot":")" +
         snapshot + R"(","ForkCreatedAt":"2026-11-29T09:00:00Z"}]}})";
}

void fail_if_missing(const fork_cmd::HeadResult& result) {
  if (auto error = fork_cmd::missing_error(result)) throw TforkError(std::move(*error));
}

}  // namespace

TEST_CASE("fork head: HeadBucket per bucket, in parallel; 404 is exists:false", "[fork][head]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const auto path = path_of(request);
    if (path == "/run-42-3") {
      return ok(200, {{"x-tigris-enable-snapshot", "true"},
                      {"X-Tigris-Fork-Source-Bucket", "training-data"},
                      {"X-Tigris-Fork-Source-Bucket-Snapshot", "1751631910196672425"}});
    }
    if (path == "/training-data")
      return ok(200, {{"X-Tigris-Enable-Snapshot", "true"}, {"X-Tigris-Is-Fork-Parent", "true"}});
    return ok(404);
  });
  tigris::Client client(settings(), transport, fixed_clock());

  const auto result = fork_cmd::run_fork_head(client, {"run-42-3", "training-data", "nothing-here"},
                                              workflow::BatchSettings{16});
  CHECK(transport.widest_window == 16);
  REQUIRE(transport.requests.size() == 3);
  for (const auto& request : transport.requests) {
    CHECK(request.method == "HEAD");
    CHECK(query_of(request).empty());
  }
  CHECK(
      fork_cmd::to_json(result).dump() ==
      R"({"buckets":[)"
      R"({"bucket":"run-42-3","exists":true,"snapshots_enabled":true,"fork_source":"training-data",)"
      R"("fork_source_snapshot":"1751631910196672425","is_fork_parent":false},)"
      R"({"bucket":"training-data","exists":true,"snapshots_enabled":true,"fork_source":null,)"
      R"("fork_source_snapshot":null,"is_fork_parent":true},)"
      R"({"bucket":"nothing-here","exists":false,"snapshots_enabled":null,"fork_source":null,)"
      R"("fork_source_snapshot":null,"is_fork_parent":null}]})");
  CHECK(failure_kind([&] { fail_if_missing(result); }) == ErrorKind::not_found);
  CHECK_THAT(fork_cmd::to_table(result), Catch::Contains("run-42-3") &&
                                             Catch::Contains("training-data") &&
                                             Catch::Contains("FORK_SOURCE"));
}

TEST_CASE("fork head: every bucket exists → no error; an auth failure fails the command",
          "[fork][head]") {
  int status = 200;
  FakeTransport transport([&](const http::Request&) -> http::Result { return ok(status); });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = fork_cmd::run_fork_head(client, {"one", "two"}, workflow::BatchSettings{4});
  CHECK_NOTHROW(fail_if_missing(result));
  CHECK_FALSE(result.buckets[0].head.snapshots_enabled);  // header absent: false

  status = 403;
  CHECK(failure_kind([&] {
          fork_cmd::run_fork_head(client, {"one"}, workflow::BatchSettings{4});
        }) == ErrorKind::auth);
}

TEST_CASE("fork ls: ListBuckets with X-Tigris-Fork (signed), every page", "[fork][ls]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const auto query = query_of(request);
    if (header_of(request, "X-Tigris-Snapshot") == "src") {
      // The expiry of a fork is in its snapshot's name (issue 23 §2): 8 has one, 7 none.
      return ok(200, {},
                "<ListAllMyBucketsResult><Buckets>"
                "<Bucket><Name>8; name=tfork r expires=2026-11-29T10:00:00Z</Name>"
                "<CreationDate>2026-11-29T09:00:00Z</CreationDate></Bucket>"
                "<Bucket><Name>7; name=tfork q</Name>"
                "<CreationDate>2026-11-29T08:00:00Z</CreationDate></Bucket>"
                "</Buckets></ListAllMyBucketsResult>");
    }
    if (query == "IncludeForkInfo=true") {
      return ok(200, {{"Content-Type", "application/json"}},
                R"({"ContinuationToken":"src-b","Buckets":{"Bucket":[)" +
                    fork_json("src-b", "src", "7") + "," + fork_json("src-a", "src", "7") + "]}}");
    }
    if (query == "IncludeForkInfo=true&continuation-token=src-b") {
      return ok(200, {}, R"({"Buckets":{"Bucket":[)" + fork_json("src-c", "src", "8") + "]}}");
    }
    return s3_error(400, "UnexpectedQuery");
  });
  tigris::Client client(settings(), transport, fixed_clock());

  const auto now = std::chrono::system_clock::time_point(
                       std::chrono::sys_days(std::chrono::year(2026) / 11 / 29)) +
                   std::chrono::hours(10);
  const auto result = fork_cmd::run_fork_ls(client, "src", now);
  REQUIRE(transport.requests.size() == 3);
  CHECK(header_of(transport.requests[2], "X-Tigris-Snapshot") == "src");
  transport.requests.pop_back();
  for (const auto& request : transport.requests) {
    CHECK(request.method == "GET");
    CHECK(path_of(request) == "/");
    CHECK(header_of(request, "X-Tigris-Fork") == "src");
    CHECK(header_of(request, "Accept") == "application/json");
    CHECK(signed_headers(request).contains("x-tigris-fork"));
  }
  CHECK(
      fork_cmd::to_json(result).dump() ==
      R"({"source":"src","forks":[)"
      R"({"bucket":"src-a","snapshot":"7","created":"2026-11-29T09:00:00Z","expires_at":null,"expired":false},)"
      R"({"bucket":"src-b","snapshot":"7","created":"2026-11-29T09:00:00Z","expires_at":null,"expired":false},)"
      R"({"bucket":"src-c","snapshot":"8","created":"2026-11-29T09:00:00Z","expires_at":"2026-11-29T10:00:00Z","expired":true}]})");
  // An expiry one second later is not yet passed.
  CHECK(fork_cmd::expires_cell(result.expires_at[2], now - std::chrono::seconds(1)) ==
        "2026-11-29 10:00:00");
  CHECK(fork_cmd::expires_cell(result.expires_at[2], now) == "2026-11-29 10:00:00 expired");
  CHECK(fork_cmd::expires_cell(result.expires_at[0], now) == "-");
}

TEST_CASE("fork ls: an old gateway without ForkInfo → the full listing, filtered on parents",
          "[fork][ls][fallback]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const bool scoped = header_of(request, "X-Tigris-Fork") != "<absent>";
    const auto query = query_of(request);
    if (scoped) {
      // The header is ignored: every bucket, and no ForkInfo.
      return ok(200, {},
                R"({"Buckets":{"Bucket":[{"Name":"src","CreationDate":"2026-01-01T00:00:00Z"},)"
                R"({"Name":"other","CreationDate":"2026-01-01T00:00:00Z"}]}})");
    }
    if (query == "IncludeForkInfo=true") {
      return ok(200, {},
                R"({"ContinuationToken":"m","Buckets":{"Bucket":[{"Name":"src"},)" +
                    fork_json("elsewhere-1", "other", "3") + "," + fork_json("kid-1", "src", "4") +
                    "]}}");
    }
    if (query == "IncludeForkInfo=true&continuation-token=m") {
      // A fork of a fork lists its whole ancestry; either parent matches.
      return ok(200, {},
                R"({"Buckets":{"Bucket":[{"Name":"grandkid","CreationDate":"2026-02-02T00:00:00Z",)"
                R"("ForkInfo":{"Parents":[{"BucketName":"kid-1","Snapshot":"9"},)"
                R"({"BucketName":"src","Snapshot":"4"}]}}]}})");
    }
    return s3_error(400, "UnexpectedQuery");
  });
  tigris::Client client(settings(), transport, fixed_clock());

  const auto result = fork_cmd::run_fork_ls(client, "src");
  // The fork listing (scoped, then full, two pages), then the source's snapshots (refused
  // here: a warning, and no expiry).
  REQUIRE(transport.requests.size() == 4);
  CHECK(header_of(transport.requests[1], "X-Tigris-Fork") == "<absent>");
  CHECK(header_of(transport.requests[1], "Accept") == "application/json");
  CHECK(query_of(transport.requests[2]) == "IncludeForkInfo=true&continuation-token=m");
  CHECK(
      fork_cmd::to_json(result).dump() ==
      R"({"source":"src","forks":[)"
      R"({"bucket":"grandkid","snapshot":"4","created":"2026-02-02T00:00:00Z","expires_at":null,"expired":false},)"
      R"({"bucket":"kid-1","snapshot":"4","created":"2026-11-29T09:00:00Z","expires_at":null,"expired":false}]})");
}

TEST_CASE("fork ls: no forks is an empty list, after checking that the source exists",
          "[fork][ls]") {
  int head_status = 200;
  int snapshots_status = 200;
  FakeTransport transport([&](const http::Request& request) -> http::Result {
    if (request.method == "HEAD") return ok(head_status);
    if (http::find_header(request.headers, "X-Tigris-Snapshot"))
      return snapshots_status == 200
                 ? ok(200, {},
                      "<ListAllMyBucketsResult><Buckets></Buckets></ListAllMyBucketsResult>")
                 : ok(snapshots_status);
    return ok(200, {}, R"({"Buckets":{"Bucket":null}})");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  // The source's snapshots listed: it exists, and no HeadBucket is needed.
  auto result = fork_cmd::run_fork_ls(client, "src");
  CHECK(fork_cmd::to_json(result).dump() == R"({"source":"src","forks":[]})");
  CHECK(std::ranges::none_of(transport.requests,
                             [](const auto& request) { return request.method == "HEAD"; }));
  // They could not be listed: HeadBucket tells "no forks" from "no such bucket".
  snapshots_status = 404;
  transport.requests.clear();
  result = fork_cmd::run_fork_ls(client, "src");
  CHECK(fork_cmd::to_json(result).dump() == R"({"source":"src","forks":[]})");
  REQUIRE(transport.requests.size() == 3);
  CHECK(transport.requests[2].method == "HEAD");
  CHECK(path_of(transport.requests[2]) == "/src");

  head_status = 404;
  CHECK(failure_kind([&] { fork_cmd::run_fork_ls(client, "src"); }) == ErrorKind::not_found);
}

TEST_CASE("fork ls: a JSON page that cannot be read is an error", "[fork][ls]") {
  FakeTransport transport(
      [](const http::Request&) -> http::Result { return ok(200, {}, "<xml/>"); });
  tigris::Client client(settings(), transport, fixed_clock());
  CHECK(failure_kind([&] { fork_cmd::run_fork_ls(client, "src"); }) == ErrorKind::other);
}
