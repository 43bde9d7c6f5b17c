// SPDX-License-Identifier: Apache-2.0
// tfork snapshot take | ls | rm against the recording transport: exact requests, the
// X-Tigris headers signed, ListBucketSnapshots pagination, per-version statuses.
#include "tfork/commands/snapshot.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "batch_support.hpp"
#include "command_harness.hpp"

using namespace tfork;
using namespace tfork::testing::commands;
using tfork::testing::FakeTransport;
namespace snapshot_cmd = tfork::commands::snapshot;

namespace {

std::string snapshot_page(const std::vector<std::pair<std::string, std::string>>& entries,
                          const std::string& token) {
  std::string body =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListAllMyBucketsResult "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Buckets>";
  for (const auto& [name, created] : entries)
    body +=
        "<Bucket><Name>" + name + "</Name><CreationDate>" + created + "</CreationDate></Bucket>";
  body += "</Buckets>";
  if (!token.empty()) body += "<ContinuationToken>" + token + "</ContinuationToken>";
  return body + "</ListAllMyBucketsResult>";
}

struct ListedFork {
  std::string bucket;
  std::string parent;  // "": an entry without ForkInfo
  std::string snapshot;
};

// A ListBuckets JSON page (tigris-wire.md §2.8b) of the given entries, one page.
std::string fork_listing(const std::vector<ListedFork>& forks) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& fork : forks) {
    nlohmann::json entry{{"Name", fork.bucket}, {"CreationDate", "2026-11-29T09:00:00Z"}};
    if (!fork.parent.empty())
      entry["ForkInfo"] = {
          {"HasChildren", false},
          {"Parents", {{{"BucketName", fork.parent}, {"Snapshot", fork.snapshot}}}}};
    list.push_back(entry);
  }
  return nlohmann::json{{"Buckets", {{"Bucket", list}}}}.dump();
}

// The batch exit rule as an exception, for failure_kind.
void fail_if_any_failed(const snapshot_cmd::RemoveResult& result) {
  if (auto error = snapshot_cmd::batch_error(result)) throw TforkError(std::move(*error));
}

}  // namespace

TEST_CASE("snapshot take: PUT /BUCKET with X-Tigris-Snapshot (signed); the version comes back",
          "[snapshot][take]") {
  FakeTransport transport([](const http::Request&) -> http::Result {
    return ok(200, {{"X-Tigris-Snapshot-Version", "1751631910196672425"}});
  });
  tigris::Client client(settings(), transport, fixed_clock());

  auto result = snapshot_cmd::run_snapshot_take(client, {"training-data", "my baseline"});
  REQUIRE(transport.requests.size() == 1);
  const auto& request = transport.requests[0];
  CHECK(request.method == "PUT");
  CHECK(path_of(request) == "/training-data");
  CHECK(header_of(request, "X-Tigris-Snapshot") == "true; name=my baseline");
  CHECK(signed_headers(request).contains("x-tigris-snapshot"));
  CHECK(snapshot_cmd::to_json(result).dump() ==
        R"({"bucket":"training-data","version":"1751631910196672425","name":"my baseline"})");
  CHECK(snapshot_cmd::to_table(result) == "1751631910196672425\n");

  transport.requests.clear();
  result = snapshot_cmd::run_snapshot_take(client, {"training-data", std::nullopt});
  CHECK(header_of(transport.requests.at(0), "X-Tigris-Snapshot") == "true");
  CHECK(snapshot_cmd::to_json(result)["name"].is_null());
}

TEST_CASE("snapshot take: a success without the version header is an error", "[snapshot]") {
  FakeTransport transport;
  tigris::Client client(settings(), transport, fixed_clock());
  CHECK(failure_kind([&] {
          snapshot_cmd::run_snapshot_take(client, {"bucket", std::nullopt});
        }) == ErrorKind::other);
}

TEST_CASE("snapshot take: a missing bucket is exit 3", "[snapshot]") {
  FakeTransport transport(
      [](const http::Request&) -> http::Result { return s3_error(404, "NoSuchBucket"); });
  tigris::Client client(settings(), transport, fixed_clock());
  CHECK(failure_kind([&] {
          snapshot_cmd::run_snapshot_take(client, {"bucket", std::nullopt});
        }) == ErrorKind::not_found);
}

TEST_CASE("snapshot take / rm validate before sending", "[snapshot][names]") {
  CHECK(failure_kind([] {
          snapshot_cmd::check(snapshot_cmd::TakeOptions{"bucket", "a;b"});
        }) == ErrorKind::usage);
  CHECK(failure_kind([] {
          snapshot_cmd::check(snapshot_cmd::TakeOptions{"bucket", "a\nb"});
        }) == ErrorKind::usage);
  CHECK(failure_kind([] {
          snapshot_cmd::check(snapshot_cmd::TakeOptions{"BAD", std::nullopt});
        }) == ErrorKind::usage);
  CHECK_NOTHROW(snapshot_cmd::check(snapshot_cmd::TakeOptions{"bucket", "fine name"}));
  CHECK(failure_kind([] {
          snapshot_cmd::check(
              snapshot_cmd::RemoveOptions{"bucket", {"1751631910196672425", "latest"}});
        }) == ErrorKind::usage);
  CHECK(failure_kind([] {
          snapshot_cmd::check(snapshot_cmd::RemoveOptions{"bucket", {"-5"}});
        }) == ErrorKind::usage);
  CHECK_NOTHROW(
      snapshot_cmd::check(snapshot_cmd::RemoveOptions{"bucket", {"1751631910196672425"}}));
}

TEST_CASE("snapshot ls follows ContinuationToken and lists newest first; FORKS counts the forks",
          "[snapshot][ls]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const auto query = query_of(request);
    if (header_of(request, "X-Tigris-Fork") == "training-data" && query == "IncludeForkInfo=true") {
      // Two forks from the newest snapshot, one from a snapshot no longer listed, a fork of a
      // fork (its parent is another bucket) and an entry without fork information.
      return ok(200, {{"Content-Type", "application/json"}},
                fork_listing({
                    {"run-1", "training-data", "1751631910196672425"},
                    {"run-2", "training-data", "1751631910196672425"},
                    {"run-3", "training-data", "1751631910000000000"},
                    {"run-1-1", "run-1", "1751631910140685342"},
                    {"stray", "", ""},
                }));
    }
    if (query == "x-id=ListBuckets") {
      return ok(200, {{"Content-Type", "application/xml"}},
                snapshot_page({{"1751631910196672425; name=my first snapshot",
                                "2025-07-04T12:25:10.19667705Z"},
                               {"1751631910169675092", "2025-07-04T12:25:10.16968055Z"}},
                              "1751631910169675092"));
    }
    if (query == "x-id=ListBuckets&continuation-token=1751631910169675092") {
      return ok(200, {},
                snapshot_page({{"1751631910140685342; name=a=b c", "2025-07-04T12:25:10Z"}}, ""));
    }
    return s3_error(400, "UnexpectedQuery");
  });
  tigris::Client client(settings(), transport, fixed_clock());

  const auto result = snapshot_cmd::run_snapshot_ls(client, {"training-data", 0});
  REQUIRE(transport.requests.size() == 3);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& request = transport.requests[i];
    CHECK(request.method == "GET");
    CHECK(path_of(request) == "/");
    CHECK(header_of(request, "X-Tigris-Snapshot") == "training-data");
    CHECK(signed_headers(request).contains("x-tigris-snapshot"));
  }
  CHECK(query_of(transport.requests[1]) ==
        "x-id=ListBuckets&continuation-token=1751631910169675092");
  // Then the one fork listing of the bucket (ListBuckets with X-Tigris-Fork), for FORKS.
  const auto& forks = transport.requests[2];
  CHECK(forks.method == "GET");
  CHECK(path_of(forks) == "/");
  CHECK(header_of(forks, "X-Tigris-Fork") == "training-data");
  CHECK(header_of(forks, "X-Tigris-Snapshot") == "<absent>");
  CHECK(signed_headers(forks).contains("x-tigris-fork"));
  CHECK(
      snapshot_cmd::to_json(result).dump() ==
      R"({"bucket":"training-data","snapshots":[)"
      R"({"version":"1751631910196672425","name":"my first snapshot","created":"2025-07-04T12:25:10Z","forks":2},)"
      R"({"version":"1751631910169675092","name":null,"created":"2025-07-04T12:25:10Z","forks":0},)"
      R"({"version":"1751631910140685342","name":"a=b c","created":"2025-07-04T12:25:10Z","forks":0}]})");
  CHECK(snapshot_cmd::to_table(result) ==
        "VERSION              NAME               CREATED              FORKS\n"
        "1751631910196672425  my first snapshot  2025-07-04 12:25:10  2\n"
        "1751631910169675092  -                  2025-07-04 12:25:10  0\n"
        "1751631910140685342  a=b c              2025-07-04 12:25:10  0\n");
}

TEST_CASE("snapshot ls: a failed fork listing leaves FORKS absent, the snapshots stay",
          "[snapshot][ls]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    if (header_of(request, "X-Tigris-Fork") != "<absent>") return s3_error(403, "AccessDenied");
    return ok(200, {}, snapshot_page({{"7", "2025-07-04T12:25:10Z"}}, ""));
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = snapshot_cmd::run_snapshot_ls(client, {"data", 0});
  CHECK(transport.requests.size() == 2);
  CHECK(snapshot_cmd::to_json(result).dump() ==
        R"({"bucket":"data","snapshots":[{"version":"7","name":null,)"
        R"("created":"2025-07-04T12:25:10Z","forks":null}]})");
  CHECK_THAT(snapshot_cmd::to_table(result), Catch::EndsWith("2025-07-04 12:25:10  -\n"));
}

TEST_CASE("snapshot ls --limit asks for at most the remaining count and stops early",
          "[snapshot][ls]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const auto query = query_of(request);
    if (header_of(request, "X-Tigris-Fork") != "<absent>") return ok(200, {}, fork_listing({}));
    if (query.find("continuation-token") == std::string::npos)
      return ok(200, {}, snapshot_page({{"30", ""}, {"20", ""}}, "20"));
    return ok(200, {}, snapshot_page({{"10", ""}}, ""));
  });
  tigris::Client client(settings(), transport, fixed_clock());
  auto result = snapshot_cmd::run_snapshot_ls(client, {"bucket", 2});
  REQUIRE(transport.requests.size() == 2);  // one snapshot page, then the fork listing
  CHECK(query_of(transport.requests[0]) == "x-id=ListBuckets&max-buckets=2");
  CHECK(header_of(transport.requests[1], "X-Tigris-Fork") == "bucket");
  CHECK(result.snapshots.size() == 2);

  transport.requests.clear();
  result = snapshot_cmd::run_snapshot_ls(client, {"bucket", 3});
  REQUIRE(transport.requests.size() == 3);
  CHECK(query_of(transport.requests[1]) == "x-id=ListBuckets&max-buckets=1&continuation-token=20");
  CHECK(result.snapshots.size() == 3);
  CHECK(snapshot_cmd::to_json(result)["snapshots"][0]["created"].is_null());
}

TEST_CASE("snapshot ls: an empty bucket is an empty list, whatever the token", "[snapshot][ls]") {
  std::string token = "";
  FakeTransport transport(
      [&](const http::Request&) -> http::Result { return ok(200, {}, snapshot_page({}, token)); });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result = snapshot_cmd::run_snapshot_ls(client, {"bucket", 0});
  CHECK(snapshot_cmd::to_json(result).dump() == R"({"bucket":"bucket","snapshots":[]})");
  CHECK(snapshot_cmd::to_table(result).empty());
  CHECK(transport.requests.size() == 1);  // no snapshots: no fork listing either

  // A page without entries ends the listing whatever its token (issue 7 §5).
  token = "same";
  transport.requests.clear();
  CHECK(snapshot_cmd::run_snapshot_ls(client, {"bucket", 0}).snapshots.empty());
  CHECK(transport.requests.size() == 1);
}

TEST_CASE("snapshot rm: DELETE /BUCKET with X-Tigris-Snapshot-Version, per version",
          "[snapshot][rm]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    const auto version = header_of(request, "X-Tigris-Snapshot-Version");
    if (version == "2") return s3_error(404, "NoSuchSnapshot");
    if (version == "3") return s3_error(503, "SlowDown");
    return ok(204);
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result =
      snapshot_cmd::run_snapshot_rm(client, {"data", {"1", "2", "3"}}, workflow::BatchSettings{4});
  CHECK(transport.widest_window == 4);
  REQUIRE(transport.requests.size() == 3);
  for (const auto& request : transport.requests) {
    CHECK(request.method == "DELETE");
    CHECK(path_of(request) == "/data");
    CHECK(signed_headers(request).contains("x-tigris-snapshot-version"));
  }
  CHECK(snapshot_cmd::to_json(result).dump() ==
        R"({"bucket":"data","versions":[{"version":"1","status":"deleted"},)"
        R"({"version":"2","status":"not-found"},)"
        R"({"version":"3","status":"failed","error":{"code":"SlowDown",)"
        R"("message":"DeleteBucketSnapshot failed: SlowDown message","http_status":503}}]})");
  CHECK(failure_kind([&] { fail_if_any_failed(result); }) == ErrorKind::partial);
}

TEST_CASE("snapshot rm: a missing bucket fails (exit 3), it is not 'already gone'",
          "[snapshot][rm]") {
  FakeTransport transport(
      [](const http::Request&) -> http::Result { return s3_error(404, "NoSuchBucket"); });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto result =
      snapshot_cmd::run_snapshot_rm(client, {"data", {"1", "2"}}, workflow::BatchSettings{4});
  CHECK(result.versions[0].outcome.status == output::Status::failed);
  CHECK(failure_kind([&] { fail_if_any_failed(result); }) == ErrorKind::not_found);
}
