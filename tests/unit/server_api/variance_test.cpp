// SPDX-License-Identifier: Apache-2.0
// `serve --quirks` and `--consistency-delay` (cli.md §8): the handler behaves like the real
// gateway where the real gateway differs.
#include "tfork/server/variance.hpp"

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;
using std::chrono::milliseconds;

namespace {

VarianceOptions quirks(std::initializer_list<Quirk> list) {
  return VarianceOptions{std::vector<Quirk>(list), milliseconds(0)};
}

void make_source(Server& server) {
  REQUIRE(server.put("/source", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
}

Response fork(Server& server, const std::string& name, const std::string& source = "source") {
  return server.put("/" + name, "", {{"X-Tigris-Fork-Source-Bucket", source}});
}

}  // namespace

TEST_CASE("parse_quirks reads a comma-separated list and names an unknown quirk",
          "[server][variance]") {
  const auto parsed = parse_quirks(" iam-message-errors,parent-delete-400,iam-message-errors,");
  REQUIRE(parsed.has_value());
  CHECK(*parsed == std::vector{Quirk::iam_message_errors, Quirk::parent_delete_400});
  CHECK(parse_quirks("")->empty());
  const auto bad = parse_quirks("fork-conflict-409,nonsense");
  REQUIRE_FALSE(bad.has_value());
  CHECK(contains(bad.error(), "\"nonsense\""));
  CHECK(contains(bad.error(), "snapshot-token-echo"));
  for (const auto& [id, name] : k_quirk_names)
    CHECK(quirk_name(id) == name);
}

TEST_CASE("fork-listing-ignores-header: X-Tigris-Fork lists every bucket, IncludeForkInfo works",
          "[server][variance]") {
  Server server(quirks({Quirk::fork_listing_ignores_header}));
  make_source(server);
  REQUIRE(fork(server, "source-1").status == 200);
  REQUIRE(server.put("/source-2").status == 200);  // a plain bucket with a fork-like name
  const auto listed = server.get("/", {{"X-Tigris-Fork", "source"}});
  CHECK(contains(listed.body, "<Name>source-2</Name>"));  // the header was ignored
  CHECK(contains(listed.body, "<Name>source</Name>"));
  const auto json = nlohmann::json::parse(
      server.get("/?IncludeForkInfo=true", {{"Accept", "application/json"}}).body);
  bool saw_fork_info = false;
  for (const auto& bucket : json["Buckets"]["Bucket"]) {
    REQUIRE(bucket.contains("ForkInfo"));
    if (bucket["Name"] == "source-1") {
      saw_fork_info = bucket["ForkInfo"]["Parents"][0]["BucketName"] == "source";
    }
    if (bucket["Name"] == "source-2") CHECK(bucket["ForkInfo"]["Parents"].empty());
  }
  CHECK(saw_fork_info);
}

TEST_CASE("iam-message-errors: status 400 and only a Message carrying the code",
          "[server][variance]") {
  Server server(quirks({Quirk::iam_message_errors}));
  const auto response =
      server.send({.method = "POST",
                   .target = "/?Action=DeleteAccessKey",
                   .body = "Action=DeleteAccessKey&AccessKeyId=tid_missing",
                   .headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                               {"Accept", "application/json"}}});
  CHECK(response.status == 400);
  const auto body = nlohmann::json::parse(response.body);
  CHECK(body.size() == 1);
  CHECK(body["Message"].get<std::string>().starts_with("NoSuchEntity: "));
  // S3 errors are untouched.
  CHECK(server.head("/no-such-bucket").status == 404);
}

TEST_CASE("snapshot-token-echo: the last page repeats the token it was sent",
          "[server][variance]") {
  for (const bool quirk : {false, true}) {
    Server server(quirk ? quirks({Quirk::snapshot_token_echo}) : VarianceOptions{});
    make_source(server);
    for (int i = 0; i < 3; ++i)
      REQUIRE(server.put("/source", "", {{"X-Tigris-Snapshot", "true"}}).status == 200);
    const auto first = server.get("/?max-buckets=2", {{"X-Tigris-Snapshot", "source"}});
    const auto token = xml_value(first.body, "ContinuationToken");
    REQUIRE_FALSE(token.empty());
    const auto last = server.get("/?max-buckets=2&continuation-token=" + token,
                                 {{"X-Tigris-Snapshot", "source"}});
    CHECK(xml_value(last.body, "ContinuationToken") == (quirk ? token : ""));
    // Even the first page echoes only a token it was sent.
    const auto whole = server.get("/", {{"X-Tigris-Snapshot", "source"}});
    CHECK_FALSE(contains(whole.body, "ContinuationToken"));
  }
}

TEST_CASE("fork-conflict-409: every second fork of a source is made but answered 409",
          "[server][variance]") {
  Server server(quirks({Quirk::fork_conflict_409}));
  make_source(server);
  CHECK(fork(server, "source-1").status == 200);
  const auto second = fork(server, "source-2");
  CHECK(second.status == 409);
  CHECK(xml_value(second.body, "Code") == "OperationAborted");
  const auto head = server.head("/source-2");
  CHECK(head.status == 200);  // it was made all the same
  CHECK(*head.header("X-Tigris-Fork-Source-Bucket") == "source");
  CHECK(fork(server, "source-3").status == 200);
  // Plain buckets are not affected.
  CHECK(server.put("/plain-one").status == 200);
  CHECK(server.put("/plain-two").status == 200);
}

TEST_CASE("parent-delete-400: a fork parent's delete is refused with 400", "[server][variance]") {
  Server server(quirks({Quirk::parent_delete_400}));
  make_source(server);
  REQUIRE(fork(server, "source-1").status == 200);
  const auto refused = server.del("/source", {{"X-Tigris-Force-Delete", "true"}});
  CHECK(refused.status == 400);
  CHECK(xml_value(refused.body, "Code") == "BucketHasChildren");
  CHECK(server.head("/source").status == 200);
}

TEST_CASE("consistency delay: new buckets hidden, deleted ones still shown, for the delay",
          "[server][variance]") {
  Server server(VarianceOptions{{}, milliseconds(500)});
  make_source(server);
  CHECK(server.head("/source").status == 404);  // too new
  CHECK_FALSE(contains(server.get("/").body, "<Name>source</Name>"));
  server.advance(milliseconds(501));
  CHECK(server.head("/source").status == 200);
  CHECK(contains(server.get("/").body, "<Name>source</Name>"));

  REQUIRE(fork(server, "source-1").status == 200);
  CHECK(server.head("/source-1").status == 404);
  CHECK_FALSE(contains(server.get("/", {{"X-Tigris-Fork", "source"}}).body, "source-1"));
  // Writes still reach it: only visibility lags.
  CHECK(server.put("/source-1/k", "v").status == 200);
  server.advance(milliseconds(501));
  CHECK(server.head("/source-1").status == 200);
  CHECK(contains(server.get("/", {{"X-Tigris-Fork", "source"}}).body, "<Name>source-1</Name>"));

  // Deleted: still listed, still answers HeadBucket as a fork, still holds its parent.
  CHECK(server.del("/source-1", {{"X-Tigris-Force-Delete", "true"}}).status == 204);
  const auto ghost = server.head("/source-1");
  CHECK(ghost.status == 200);
  CHECK(*ghost.header("X-Tigris-Fork-Source-Bucket") == "source");
  CHECK(*server.head("/source").header("X-Tigris-Is-Fork-Parent") == "true");
  CHECK(contains(server.get("/", {{"X-Tigris-Fork", "source"}}).body, "<Name>source-1</Name>"));
  CHECK(server.del("/source-1", {{"X-Tigris-Force-Delete", "true"}}).status == 404);
  const auto refused = server.del("/source", {{"X-Tigris-Force-Delete", "true"}});
  CHECK(refused.status == 409);
  CHECK(xml_value(refused.body, "Code") == "BucketHasForks");
  server.advance(milliseconds(501));
  CHECK(server.head("/source-1").status == 404);
  CHECK(server.head("/source").header("X-Tigris-Is-Fork-Parent") == nullptr);
  CHECK(server.del("/source", {{"X-Tigris-Force-Delete", "true"}}).status == 204);

  // A bucket deleted before it became visible never shows up.
  REQUIRE(server.put("/brief-bucket").status == 200);
  CHECK(server.del("/brief-bucket").status == 204);
  CHECK(server.head("/brief-bucket").status == 404);
  CHECK_FALSE(contains(server.get("/").body, "brief-bucket"));
}
