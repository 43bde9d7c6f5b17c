// SPDX-License-Identifier: Apache-2.0
// Keys bound to buckets, forks and versions: no access beyond the promise (issue 9 §3).
#include "support.hpp"

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;

TEST_CASE("a key's grant dies with its bucket and never reaches a reused name", "[server][keys]") {
  Server server;
  REQUIRE(server.put("/team-bucket").status == 200);
  const auto key = server.create_key("agent", R"([{"bucket":"team-bucket","role":"Editor"}])");
  REQUIRE(server.put("/team-bucket/mine", "agent data", {}, key).status == 200);
  REQUIRE(server.del("/team-bucket/mine").status == 204);
  REQUIRE(server.del("/team-bucket").status == 204);

  // Someone else's bucket, later, under the same name.
  REQUIRE(server.put("/team-bucket").status == 200);
  REQUIRE(server.put("/team-bucket/secret", "not the agent's").status == 200);
  CHECK(server.get("/team-bucket/secret", {}, key).status == 403);
  CHECK(server.put("/team-bucket/x", "y", {}, key).status == 403);
  // The grant is gone from the key itself, too.
  const auto stored = server.store().get_access_key(key.id);
  REQUIRE(stored.has_value());
  CHECK(stored->roles.empty());

  // A grant made before its bucket exists does not reach the bucket created afterwards.
  const auto early = server.create_key("early", R"([{"bucket":"later-bucket","role":"Editor"}])");
  REQUIRE(server.put("/later-bucket").status == 200);
  CHECK(server.get("/later-bucket?list-type=2", {}, early).status == 403);
}

TEST_CASE("scoped keys create no plain buckets; an Editor forks only under its bucket's name",
          "[server][keys]") {
  Server server;
  REQUIRE(server.put("/source", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  const auto reader = server.create_key("reader", R"([{"bucket":"source","role":"ReadOnly"}])");
  const auto editor = server.create_key("editor", R"([{"bucket":"source","role":"Editor"}])");
  for (const auto& key : {reader, editor}) {
    const auto plain = server.put("/free-name", "", {}, key);
    CHECK(plain.status == 403);
    CHECK(xml_value(plain.body, "Code") == "AccessDenied");
    const auto squat =
        server.put("/someone-elses-run", "", {{"X-Tigris-Fork-Source-Bucket", "source"}}, key);
    CHECK(squat.status == 403);
  }
  // A ReadOnly key creates nothing, not even a fork of its bucket (tigris-wire §10); an
  // Editor forks under its bucket's name.
  CHECK(server.put("/source-agent1", "", {{"X-Tigris-Fork-Source-Bucket", "source"}}, reader)
            .status == 403);
  CHECK(server.put("/source-agent1", "", {{"X-Tigris-Fork-Source-Bucket", "source"}}, editor)
            .status == 200);
  CHECK_FALSE(server.store().head_bucket("free-name").has_value());
  CHECK_FALSE(server.store().head_bucket("someone-elses-run").has_value());
}

TEST_CASE("snapshot-version reads through a fork never reach the source's past", "[server][keys]") {
  Server server;
  REQUIRE(server.put("/origin", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/origin/doc", "before the fork: private").status == 200);
  const auto early = server.store().get_object("origin", "doc");
  REQUIRE(early.has_value());
  const auto past = std::to_string(early->seq);
  REQUIRE(server.put("/origin/doc", "at the fork point").status == 200);
  REQUIRE(server.put("/origin/gone", "deleted before the fork").status == 200);
  REQUIRE(server.del("/origin/gone").status == 204);
  REQUIRE(server.put("/origin-fork", "", {{"X-Tigris-Fork-Source-Bucket", "origin"}}).status ==
          200);
  const auto key = server.create_key("fork-key", R"([{"bucket":"origin-fork","role":"Editor"}])");

  const auto at_past = server.get("/origin-fork/doc", {{"X-Tigris-Snapshot-Version", past}}, key);
  CHECK(Server::body_of(at_past) != "before the fork: private");
  const auto listed =
      server.get("/origin-fork?list-type=2", {{"X-Tigris-Snapshot-Version", past}}, key);
  CHECK_FALSE(contains(listed.body, "<Key>gone</Key>"));
  // The key may not read its source directly at all.
  CHECK(server.get("/origin/doc", {{"X-Tigris-Snapshot-Version", past}}, key).status == 403);
  // A fork of the fork at a version before the fork point is refused.
  const auto deep = server.put("/origin-fork-deeper", "",
                               {{"X-Tigris-Fork-Source-Bucket", "origin-fork"},
                                {"X-Tigris-Fork-Source-Bucket-Snapshot", past}},
                               key);
  CHECK(deep.status == 400);
}

TEST_CASE("Tigris control headers count only when signed", "[server][keys]") {
  Server server;
  REQUIRE(server.put("/keep-me").status == 200);
  REQUIRE(server.put("/keep-me/object", "data").status == 200);
  auto request = server.sign({.method = "DELETE", .target = "/keep-me"});
  request.headers.emplace_back("Tigris-Force-Delete", "true");  // added after signing
  const auto response = server.handler().handle(request);
  CHECK(response.status == 403);
  CHECK(server.store().head_bucket("keep-me").has_value());
  auto fork = server.sign({.method = "PUT", .target = "/sneaky-fork"});
  fork.headers.emplace_back("X-Tigris-Fork-Source-Bucket", "keep-me");
  CHECK(server.handler().handle(fork).status == 403);
}
