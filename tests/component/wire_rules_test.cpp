// SPDX-License-Identifier: Apache-2.0
// The wire as the real service speaks it (issue 7 §5): addressing of dotted names, signing
// regions, IAM "already gone", null in JSON, snapshot paging, re-signing of retries, a 409
// on a create of ours, control characters from a server.
#include "tfork/cli/config.hpp"
#include "tfork/iam/access_keys.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/fork_ops.hpp"
#include "tfork/workflow/fork_batch.hpp"

#include <catch2/catch.hpp>

#include "batch_support.hpp"
#include "fake_tigris.hpp"
#include <filesystem>
#include <map>
#include <unistd.h>

using namespace tfork;
using namespace tfork::testing;

namespace {

std::string header_of(const http::Request& request, std::string_view name) {
  auto value = http::find_header(request.headers, name);
  return value ? std::string(*value) : std::string();
}

tigris::Client tigris_client(http::Transport& transport, std::string region = "auto",
                             tigris::Client::Clock clock = {}) {
  return tigris::Client(
      tigris::ClientSettings{"https://t3.storage.dev", "https://iam.storageapi.dev",
                             std::move(region), false, sigv4::Credentials{"AKID", "secret", ""}},
      transport, std::move(clock));
}

cli::Environment env_of(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    const auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

http::Response respond(int status, std::string body) {
  return http::Response{status, {}, std::move(body), 1};
}

}  // namespace

TEST_CASE("dotted bucket names go path-style even against a Tigris host", "[wire]") {
  FakeTransport transport;
  auto client = tigris_client(transport);
  CHECK(client.prepare(tigris::head_bucket("plain-bucket")).url ==
        "https://plain-bucket.t3.storage.dev/");
  const auto dotted = client.prepare(tigris::head_bucket("my.data.v2"));
  CHECK(dotted.url == "https://t3.storage.dev/my.data.v2");
  CHECK(header_of(dotted, "host") == "t3.storage.dev");
}

TEST_CASE("the Tigris-only routes go path-style on a Tigris host; S3 calls stay virtual-hosted",
          "[wire]") {
  FakeTransport transport;
  auto client = tigris_client(transport);
  const auto settings = client.prepare(tigris::set_bucket_type("data", true));
  CHECK(settings.method == "PATCH");
  CHECK(settings.url == "https://t3.storage.dev/data");
  CHECK(header_of(settings, "host") == "t3.storage.dev");
  const auto merge = client.prepare(tigris::merge_fork("data-1", "data"));
  CHECK(merge.url == "https://t3.storage.dev/data");
  CHECK(header_of(merge, "X-Tigris-Merge-Source-Bucket") == "data-1");
  const auto rebase = client.prepare(tigris::rebase_fork("data-1"));
  CHECK(rebase.url == "https://t3.storage.dev/data-1");
  CHECK(header_of(rebase, "host") == "t3.storage.dev");
  // The S3 operations on the same buckets keep virtual hosting.
  CHECK(client.prepare(tigris::take_snapshot("data", std::nullopt)).url ==
        "https://data.t3.storage.dev/");
  CHECK(client.prepare(tigris::create_fork("data-1", "data", "")).url ==
        "https://data-1.t3.storage.dev/");
}

TEST_CASE("signing region: auto for Tigris whatever AWS_REGION says; --region wins; IAM auto",
          "[wire]") {
  cli::ConfigOverrides none;
  const auto tigris = cli::resolve_config(none, env_of({{"AWS_REGION", "us-east-1"},
                                                        {"AWS_DEFAULT_REGION", "eu-west-1"},
                                                        {"HOME", "/nonexistent"}}));
  CHECK(tigris.region == "auto");
  cli::ConfigOverrides flag;
  flag.region = "eu-central-1";
  CHECK(cli::resolve_config(flag, env_of({{"AWS_REGION", "us-east-1"}, {"HOME", "/nonexistent"}}))
            .region == "eu-central-1");
  cli::ConfigOverrides local;
  local.endpoint_url = "http://127.0.0.1:9000";
  CHECK(cli::resolve_config(local, env_of({{"AWS_REGION", "us-east-1"}, {"HOME", "/nonexistent"}}))
            .region == "us-east-1");

  FakeTransport transport;
  auto client = tigris_client(transport, "eu-central-1");
  const auto s3 = client.prepare(tigris::head_bucket("plain-bucket"));
  CHECK(header_of(s3, "Authorization").find("/eu-central-1/s3/aws4_request") != std::string::npos);
  const auto iam = client.prepare(iam::list_access_keys(""));
  CHECK(header_of(iam, "Authorization").find("/auto/s3/aws4_request") != std::string::npos);
}

TEST_CASE("IAM already gone: 404, NoSuchEntity code, or NoSuchEntity anywhere in the body",
          "[wire]") {
  auto gone = [](int status, std::string body) {
    return key_gone(tigris::error_from_response(respond(status, body), "DeleteAccessKey"));
  };
  CHECK(gone(404, ""));
  CHECK(gone(400, R"({"Code":"NoSuchEntity","Message":"x"})"));
  CHECK(gone(400, R"({"Message":"NoSuchEntity: The access key does not exist."})"));
  CHECK(gone(400,
             "<ErrorResponse><Error><Code>InvalidInput</Code><Message>key: NoSuchEntity"
             "</Message></Error></ErrorResponse>"));
  CHECK(gone(400, "error: NoSuchEntity (key tid_1)"));
  CHECK_FALSE(gone(400, R"({"Message":"AccessDenied: not yours"})"));
  CHECK_FALSE(gone(403, "<Error><Code>AccessDenied</Code></Error>"));
  // {"Message": "<Code>: <text>"} carries the code.
  const auto denied =
      tigris::error_from_response(respond(400, R"({"Message":"AccessDenied: not yours"})"), "X");
  CHECK(denied.code == "AccessDenied");
  CHECK(denied.kind == ErrorKind::auth);
}

TEST_CASE("null where a string is expected reads as absent, never a crash", "[wire]") {
  const auto keys = iam::parse_key_list(
      respond(200, R"({"IsTruncated":null,"Marker":null,"Keys":[null,{"access_key_id":"tid_1",
      "username":null,"buckets_role":null},{"access_key_id":"tid_2","username":"k",
      "buckets_role":[{"bucket":null,"role":"Editor"},null]}]})"));
  REQUIRE(keys.has_value());
  REQUIRE(keys->keys.size() == 2);
  CHECK(keys->keys[0].name.empty());
  CHECK(keys->keys[0].buckets_role.empty());
  CHECK(keys->keys[1].buckets_role.empty());  // a role without a bucket is no role
  CHECK(keys->marker.empty());
  CHECK(iam::parse_key_list(respond(200, R"({"Keys":null})")).has_value());

  const auto created = iam::parse_created_key(
      respond(200, R"({"CreateAccessKeyResult":{"AccessKey":{"AccessKeyId":"tid_1",
      "SecretAccessKey":"tsec_1","UserName":null}}})"));
  REQUIRE(created.has_value());
  CHECK(created->name.empty());
  CHECK_FALSE(iam::parse_created_key(
                  respond(200, R"({"CreateAccessKeyResult":{"AccessKey":{"AccessKeyId":null}}})"))
                  .has_value());

  const auto buckets = tigris::parse_bucket_list_json(respond(
      200, R"({"ContinuationToken":null,"Buckets":{"Bucket":[{"Name":"a-1","CreationDate":null,
      "ForkInfo":{"HasChildren":null,"Parents":[{"BucketName":null,"Snapshot":null}]}}]}})"));
  REQUIRE(buckets.has_value());
  CHECK(buckets->continuation_token.empty());
  const auto error = tigris::error_from_response(
      respond(500, R"({"Code":null,"Message":null,"RequestId":null})"), "X");
  CHECK(error.code == "Http500");
}

TEST_CASE("ListBucketSnapshots paging stops on an empty page or an echoed token", "[wire]") {
  auto page = [](std::string entries, std::string token) {
    return respond(
        200, "<ListAllMyBucketsResult><Buckets>" + entries + "</Buckets>" +
                 (token.empty() ? "" : "<ContinuationToken>" + token + "</ContinuationToken>") +
                 "</ListAllMyBucketsResult>");
  };
  const auto entry = [](std::string version) {
    return "<Bucket><Name>" + version + "</Name><CreationDate>x</CreationDate></Bucket>";
  };
  SECTION("the last page echoes the token it was sent") {
    FakeTransport transport([&](const http::Request& request) -> http::Result {
      if (request.url.find("continuation-token=") == std::string::npos)
        return page(entry("30") + entry("20"), "20");
      return page(entry("10"), "20");
    });
    auto client = tigris_client(transport);
    const auto snapshots = tigris::list_all_snapshots(client, "data");
    CHECK(snapshots.size() == 3);
    CHECK(transport.requests.size() == 2);
  }
  SECTION("a page without entries ends the listing whatever its token") {
    int sent = 0;
    FakeTransport transport([&](const http::Request&) -> http::Result {
      ++sent;
      return sent == 1 ? page(entry("30"), "30") : page("", "token-" + std::to_string(sent));
    });
    auto client = tigris_client(transport);
    CHECK(tigris::list_all_snapshots(client, "data").size() == 1);
    CHECK(sent == 2);
  }
}

TEST_CASE("a retry is signed again with the date it is sent at", "[wire]") {
  FakeTransport transport;
  auto now = sigv4::Clock::time_point(std::chrono::seconds(1764500000));
  auto client = tigris_client(transport, "auto", [&] { return now; });
  const auto first = client.prepare(tigris::head_bucket("plain-bucket"));
  REQUIRE(first.resign);
  now += std::chrono::minutes(20);  // beyond the 15 minutes a signature is accepted
  const auto again = first.resign();
  CHECK(header_of(first, "x-amz-date") == "20251130T105320Z");
  CHECK(header_of(again, "x-amz-date") == "20251130T111320Z");
  CHECK(header_of(again, "Authorization") != header_of(first, "Authorization"));
  CHECK(again.url == first.url);
}

TEST_CASE("a 409 on CreateBucketFork of ours is checked with HeadBucket", "[wire][fork]") {
  FakeTigris tigris;
  tigris.buckets["data"] = {};
  tigris.snapshots.insert("data@1751631910196672425");
  int forks_seen = 0;
  // The gateway makes every second fork but answers 409 OperationAborted.
  tigris.fail_when = [&](const ParsedRequest& r) -> std::optional<http::Result> {
    if (r.method != "PUT" || !r.header("X-Tigris-Fork-Source-Bucket")) return std::nullopt;
    if (++forks_seen % 2 == 1) return std::nullopt;
    tigris.buckets[r.bucket] = {"data", *r.header("X-Tigris-Fork-Source-Bucket-Snapshot")};
    return xml_error(409, "OperationAborted");
  };
  auto transport = tigris.transport();
  auto client = make_client(*transport);
  workflow::ForkCreateRequest request;
  request.source = "data";
  request.count = 4;
  request.prefix = "race";
  request.snapshot = "1751631910196672425";
  request.keys = "none";
  const auto plan = workflow::plan_fork_create(request, 0);
  std::atomic<bool> no{false};
  const auto outcome = workflow::run_fork_create(client, plan, batch(no));
  CHECK(exit_of(outcome.error) == 0);
  for (const auto& fork : outcome.manifest.forks)
    CHECK(fork.status == workflow::ForkStatus::created);

  // A 409 for a name that is someone else's fork stays a conflict.
  FakeTigris other;
  other.buckets["data"] = {};
  other.buckets["elsewhere"] = {};
  other.snapshots.insert("data@1751631910196672425");
  other.buckets["taken-1"] = {"elsewhere", "5"};
  auto other_transport = other.transport();
  auto other_client = make_client(*other_transport);
  request.prefix = "taken";
  request.count = 1;
  const auto refused =
      workflow::run_fork_create(other_client, workflow::plan_fork_create(request, 0), batch(no));
  CHECK(exit_of(refused.error) == 6);
  CHECK(refused.manifest.forks[0].status == workflow::ForkStatus::failed);
}

TEST_CASE("control characters from a server are escaped in tables and messages", "[wire]") {
  CHECK(output::printable("snap\x1b[2J\x1b]0;pwned\x07") == "snap\\x1b[2J\\x1b]0;pwned\\x07");
  CHECK(output::printable("line\nforged\r\t") == "line\\nforged\\r\\t");
  CHECK(output::printable("caf\xc3\xa9 \xe2\x9c\x93") ==
        "caf\xc3\xa9 \xe2\x9c\x93");  // UTF-8 stays
  CHECK(output::printable("c1 \xc2\x9b"
                          "31m") == "c1 \\xc2\\x9b31m");  // C1 CSI
  CHECK(output::printable("bad \xff") == "bad \\xff");
  output::Table table({"VERSION", "NAME"});
  table.row({"1", "evil\x1b[31m"});
  const auto text = table.render();
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("evil\\x1b[31m") != std::string::npos);
}
