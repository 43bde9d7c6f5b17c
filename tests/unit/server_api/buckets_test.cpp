// SPDX-License-Identifier: Apache-2.0
// Buckets, snapshots and forks (tigris-wire §2, §8).
#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;

TEST_CASE("CreateBucket, HeadBucket, DeleteBucket", "[server][buckets]") {
  Server server;
  const auto created = server.put("/plain-bucket");
  REQUIRE(created.status == 200);
  CHECK(*created.header("Location") == "/plain-bucket");
  const auto again = server.put("/plain-bucket");
  CHECK(again.status == 409);
  CHECK(xml_value(again.body, "Code") == "BucketAlreadyOwnedByYou");
  CHECK(xml_value(server.put("/Bad_Name").body, "Code") == "InvalidBucketName");
  CHECK(xml_value(server.put("/192.168.1.1").body, "Code") == "InvalidBucketName");

  const auto head = server.head("/plain-bucket");
  CHECK(head.status == 200);
  CHECK(*head.header("X-Tigris-Enable-Snapshot") == "false");
  CHECK(head.header("X-Tigris-Fork-Source-Bucket") == nullptr);
  CHECK(head.header("X-Tigris-Is-Fork-Parent") == nullptr);
  const auto missing = server.head("/nope-bucket");
  CHECK(missing.status == 404);
  CHECK(missing.body.empty());

  REQUIRE(server.put("/plain-bucket/k", "v").status == 200);
  const auto not_empty = server.del("/plain-bucket");
  CHECK(not_empty.status == 409);
  CHECK(xml_value(not_empty.body, "Code") == "BucketNotEmpty");
  CHECK(xml_value(not_empty.body, "BucketName") == "plain-bucket");
  CHECK(server.del("/plain-bucket", {{"Tigris-Force-Delete", "true"}}).status == 204);
  CHECK(server.head("/plain-bucket").status == 404);

  REQUIRE(server.put("/other-bucket").status == 200);
  REQUIRE(server.put("/other-bucket/k", "v").status == 200);
  CHECK(server.del("/other-bucket", {{"X-Tigris-Force-Delete", "true"}}).status == 204);
  CHECK(server.del("/other-bucket").status == 404);
}

TEST_CASE("snapshots: take, list newest first with pagination, delete", "[server][buckets]") {
  Server server;
  REQUIRE(server.put("/snap-bucket", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  CHECK(*server.head("/snap-bucket").header("X-Tigris-Enable-Snapshot") == "true");
  std::vector<std::string> versions;
  for (const auto* value : {"true", "true; name=second one", "true;name=third"}) {
    const auto response = server.put("/snap-bucket", "", {{"X-Tigris-Snapshot", value}});
    REQUIRE(response.status == 200);
    versions.push_back(*response.header("X-Tigris-Snapshot-Version"));
  }
  const auto listed = server.get("/", {{"X-Tigris-Snapshot", "snap-bucket"}});
  INFO(listed.body);
  REQUIRE(listed.status == 200);
  const auto third = listed.body.find(versions[2] + "; name=third");
  const auto second = listed.body.find(versions[1] + "; name=second one");
  const auto first = listed.body.find("<Name>" + versions[0] + "</Name>");
  CHECK(third < second);
  CHECK(second < first);
  CHECK(first != std::string::npos);
  CHECK_FALSE(contains(listed.body, "<ContinuationToken>"));

  const auto page = server.get("/?max-buckets=2", {{"X-Tigris-Snapshot", "snap-bucket"}});
  CHECK(xml_value(page.body, "ContinuationToken") == versions[1]);
  const auto rest = server.get("/?max-buckets=2&continuation-token=" + versions[1],
                               {{"X-Tigris-Snapshot", "snap-bucket"}});
  CHECK(contains(rest.body, "<Name>" + versions[0] + "</Name>"));
  CHECK_FALSE(contains(rest.body, "<ContinuationToken>"));

  CHECK(server.del("/snap-bucket", {{"X-Tigris-Snapshot-Version", versions[0]}}).status == 204);
  const auto unknown = server.del("/snap-bucket", {{"X-Tigris-Snapshot-Version", "12345"}});
  CHECK(unknown.status == 404);
  CHECK(xml_value(unknown.body, "Code") == "NoSuchSnapshot");
  CHECK(server.head("/snap-bucket").status == 200);

  // A regular bucket cannot be snapshotted (tigris-wire §9 inference: 400 InvalidRequest).
  REQUIRE(server.put("/regular-bucket").status == 200);
  const auto refused = server.put("/regular-bucket", "", {{"X-Tigris-Snapshot", "true"}});
  CHECK(refused.status == 400);
  CHECK(xml_value(refused.body, "Code") == "InvalidRequest");
  CHECK(server.put("/missing-bucket", "", {{"X-Tigris-Snapshot", "true"}}).status == 404);
}

// tigris-wire §2.3: the documented rule (no CR, LF or ';'; at most 255 bytes), which the
// client checks too (tfork/rules/snapshot_name.hpp). Line breaks cannot cross a real socket in
// a header value; the handler refuses them all the same.
TEST_CASE("snapshot names the documented rule refuses are not stored", "[server][buckets]") {
  Server server;
  REQUIRE(server.put("/snap-bucket", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  for (const auto* name : {"a\nb", "a\rb", "a;b"}) {
    const auto refused =
        server.put("/snap-bucket", "", {{"X-Tigris-Snapshot", std::string("true; name=") + name}});
    CHECK(refused.status == 400);
    CHECK(xml_value(refused.body, "Code") == "InvalidArgument");
  }
  CHECK(
      server.put("/snap-bucket", "", {{"X-Tigris-Snapshot", "true; name=" + std::string(256, 'n')}})
          .status == 400);
  CHECK(
      server.put("/snap-bucket", "", {{"X-Tigris-Snapshot", "true; name=" + std::string(255, 'n')}})
          .status == 200);
  const auto listed = server.get("/", {{"X-Tigris-Snapshot", "snap-bucket"}});
  CHECK(contains(listed.body, "; name=" + std::string(255, 'n') + "</Name>"));
  CHECK_FALSE(contains(listed.body, std::string(256, 'n')));
  CHECK_FALSE(contains(listed.body, "; name=a"));
}

// A name with ESC would reach every terminal that prints a listing as a control sequence;
// `--quirks snapshot-names-verbatim` stores it, as a gateway that checks no more might.
TEST_CASE("snapshot names with control characters are refused unless stored verbatim",
          "[server][buckets]") {
  for (const bool verbatim : {false, true}) {
    Server server(verbatim ? VarianceOptions{{Quirk::snapshot_names_verbatim}} : VarianceOptions{});
    REQUIRE(server.put("/snap-bucket", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
    for (const auto& name : {std::string("evil\x1b[31mred"), std::string("nul\0x", 5),
                             std::string("tab\tx"), std::string("del\x7f")}) {
      const auto taken =
          server.put("/snap-bucket", "", {{"X-Tigris-Snapshot", "true; name=" + name}});
      INFO(verbatim << " " << taken.body);
      CHECK(taken.status == (verbatim ? 200 : 400));
      if (!verbatim) CHECK(contains(taken.body, "control characters"));
    }
    const auto listed = server.get("/", {{"X-Tigris-Snapshot", "snap-bucket"}});
    CHECK(contains(listed.body, "; name=evil") == verbatim);
  }
}

TEST_CASE("forks: create, head, isolation, listing, delete order", "[server][buckets]") {
  Server server;
  REQUIRE(server.put("/source", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/source/shared", "base").status == 200);
  const auto fork = server.put("/fork-one", "", {{"X-Tigris-Fork-Source-Bucket", "source"}});
  INFO(fork.body);
  REQUIRE(fork.status == 200);
  CHECK(*fork.header("Location") == "/fork-one");

  const auto head = server.head("/fork-one");
  CHECK(*head.header("X-Tigris-Enable-Snapshot") == "true");
  CHECK(*head.header("X-Tigris-Fork-Source-Bucket") == "source");
  CHECK_FALSE(head.header("X-Tigris-Fork-Source-Bucket-Snapshot")->empty());
  CHECK(*server.head("/source").header("X-Tigris-Is-Fork-Parent") == "true");

  // Copy-on-write isolation both ways.
  CHECK(Server::body_of(server.get("/fork-one/shared")) == "base");
  REQUIRE(server.put("/fork-one/shared", "changed in fork").status == 200);
  REQUIRE(server.put("/source/late", "after fork").status == 200);
  CHECK(Server::body_of(server.get("/source/shared")) == "base");
  CHECK(server.get("/fork-one/late").status == 404);
  CHECK(Server::body_of(server.get("/fork-one/shared")) == "changed in fork");

  // A fork at an explicit snapshot version.
  const auto snap = server.put("/source", "", {{"X-Tigris-Snapshot", "true"}});
  const auto version = *snap.header("X-Tigris-Snapshot-Version");
  REQUIRE(server
              .put("/fork-two", "",
                   {{"X-Tigris-Fork-Source-Bucket", "source"},
                    {"X-Tigris-Fork-Source-Bucket-Snapshot", version}})
              .status == 200);
  CHECK(*server.head("/fork-two").header("X-Tigris-Fork-Source-Bucket-Snapshot") == version);
  CHECK(Server::body_of(server.get("/fork-two/late")) == "after fork");

  // Fork listing: XML, and JSON with ForkInfo (tigris-wire §2.8c).
  const auto xml = server.get("/", {{"X-Tigris-Fork", "source"}});
  CHECK(contains(xml.body, "<Name>fork-one</Name>"));
  CHECK(contains(xml.body, "<Name>fork-two</Name>"));
  const auto json = server.get("/", {{"X-Tigris-Fork", "source"}, {"Accept", "application/json"}});
  const auto parsed = nlohmann::json::parse(json.body);
  REQUIRE(parsed["Buckets"]["Bucket"].size() == 2);
  CHECK(parsed["Buckets"]["Bucket"][1]["ForkInfo"]["Parents"][0]["BucketName"] == "source");
  CHECK(parsed["Buckets"]["Bucket"][1]["ForkInfo"]["Parents"][0]["Snapshot"] == version);

  const auto metadata = server.get("/fork-two?metadata", {{"Accept", "application/json"}});
  const auto info = nlohmann::json::parse(metadata.body);
  CHECK(info["type"] == 1);
  CHECK(info["ForkInfo"]["Parents"][0]["BucketName"] == "source");

  // The source cannot go while forks exist, even forced.
  const auto refused = server.del("/source", {{"Tigris-Force-Delete", "true"}});
  CHECK(refused.status == 409);
  CHECK(xml_value(refused.body, "Code") == "BucketHasForks");
  CHECK(contains(xml_value(refused.body, "Message"), "fork-one"));
  CHECK(server.del("/fork-one", {{"Tigris-Force-Delete", "true"}}).status == 204);
  CHECK(server.del("/fork-two", {{"Tigris-Force-Delete", "true"}}).status == 204);
  CHECK(server.del("/source", {{"Tigris-Force-Delete", "true"}}).status == 204);

  // Forks of regular or missing buckets.
  REQUIRE(server.put("/regular-bucket").status == 200);
  CHECK(server.put("/fork-three", "", {{"X-Tigris-Fork-Source-Bucket", "regular-bucket"}}).status ==
        400);
  CHECK(server.put("/fork-three", "", {{"X-Tigris-Fork-Source-Bucket", "missing-src"}}).status ==
        404);
}

TEST_CASE("ListBuckets in XML and JSON; PATCH toggles snapshots", "[server][buckets]") {
  Server server;
  REQUIRE(server.put("/bucket-b").status == 200);
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto xml = server.get("/");
  CHECK(xml.body.find("<Name>bucket-a</Name>") < xml.body.find("<Name>bucket-b</Name>"));
  CHECK(contains(xml.body, "<ListAllMyBucketsResult"));
  const auto paged = server.get("/?max-buckets=1");
  CHECK(xml_value(paged.body, "ContinuationToken") == "bucket-a");

  const auto json = server.get("/", {{"Accept", "application/json"}});
  const auto parsed = nlohmann::json::parse(json.body);
  CHECK(parsed["Buckets"]["Bucket"][0]["Name"] == "bucket-a");
  CHECK(parsed["Buckets"]["Bucket"][0]["Type"] == "Regular");

  const auto patched = server.send({.method = "PATCH",
                                    .target = "/bucket-a",
                                    .body = R"({"type":1})",
                                    .headers = {{"Content-Type", "application/json"}}});
  INFO(patched.body);
  CHECK(patched.status == 200);
  CHECK(contains(patched.body, "success"));
  CHECK(*server.head("/bucket-a").header("X-Tigris-Enable-Snapshot") == "true");
  const auto bad = server.send({.method = "PATCH", .target = "/bucket-a", .body = "{"});
  CHECK(bad.status == 400);
  CHECK(nlohmann::json::parse(bad.body)["Code"] == "InvalidArgument");
}

TEST_CASE("merge: a fork's changes land in its parent, answered with a version",
          "[server][buckets][merge]") {
  Server server;
  REQUIRE(server.put("/source", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/source/keep", "k").status == 200);
  REQUIRE(server.put("/source/edit", "e1").status == 200);
  REQUIRE(server.put("/source/gone", "g").status == 200);
  REQUIRE(server.put("/agent-1", "", {{"X-Tigris-Fork-Source-Bucket", "source"}}).status == 200);
  REQUIRE(server.put("/agent-2", "", {{"X-Tigris-Fork-Source-Bucket", "source"}}).status == 200);
  REQUIRE(server.put("/agent-1/edit", "e-agent").status == 200);
  REQUIRE(server.put("/agent-1/new", "n").status == 200);
  REQUIRE(server.del("/agent-1/gone").status == 204);

  // Not a direct fork: 400 InvalidArgument, and nothing changes.
  REQUIRE(server.put("/deeper", "", {{"X-Tigris-Fork-Source-Bucket", "agent-1"}}).status == 200);
  const auto indirect = server.put("/source", "", {{"X-Tigris-Merge-Source-Bucket", "deeper"}});
  CHECK(indirect.status == 400);
  CHECK(xml_value(indirect.body, "Code") == "InvalidArgument");
  const auto sibling = server.put("/agent-2", "", {{"X-Tigris-Merge-Source-Bucket", "agent-1"}});
  CHECK(sibling.status == 400);
  CHECK(server.put("/source", "", {{"X-Tigris-Merge-Source-Bucket", "no-such"}}).status == 404);
  CHECK(Server::body_of(server.get("/source/edit")) == "e1");

  // An agent's key (Editor on its fork only) cannot merge into the source.
  const auto agent_key =
      server.create_key("agent-1-key", R"([{"bucket":"agent-1","role":"Editor"}])");
  const auto denied =
      server.put("/source", "", {{"X-Tigris-Merge-Source-Bucket", "agent-1"}}, agent_key);
  CHECK(denied.status == 403);
  CHECK(Server::body_of(server.get("/source/edit")) == "e1");

  const auto merged = server.put("/source", "", {{"X-Tigris-Merge-Source-Bucket", "agent-1"}});
  INFO(merged.body);
  REQUIRE(merged.status == 200);
  const auto* version = merged.header("X-Tigris-Snapshot-Version");
  REQUIRE(version);
  CHECK(Server::body_of(server.get("/source/edit")) == "e-agent");
  CHECK(Server::body_of(server.get("/source/new")) == "n");
  CHECK(server.get("/source/gone").status == 404);
  CHECK(Server::body_of(server.get("/source/keep")) == "k");
  // The sibling still sees the source as it was when it was made.
  CHECK(Server::body_of(server.get("/agent-2/edit")) == "e1");
  // The version names the merged state.
  CHECK(Server::body_of(server.get("/source/edit", {{"X-Tigris-Snapshot-Version", *version}})) ==
        "e-agent");
}

TEST_CASE("rebase: the fork sees its parent's present, keeps its writes, answers the version",
          "[server][buckets][rebase]") {
  Server server;
  REQUIRE(server.put("/source", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/agent-1", "", {{"X-Tigris-Fork-Source-Bucket", "source"}}).status == 200);
  const auto old_version = *server.head("/agent-1").header("X-Tigris-Fork-Source-Bucket-Snapshot");
  REQUIRE(server.put("/agent-1/mine", "m").status == 200);
  REQUIRE(server.put("/source/late", "l").status == 200);
  CHECK(server.get("/agent-1/late").status == 404);

  // A key scoped to the fork cannot widen its own view of the source.
  const auto agent_key =
      server.create_key("agent-1-key", R"([{"bucket":"agent-1","role":"Editor"}])");
  CHECK(server.put("/agent-1", "", {{"X-Tigris-Rebase", "true"}}, agent_key).status == 403);
  CHECK(server.put("/source", "", {{"X-Tigris-Rebase", "true"}}).status == 400);
  CHECK(server.put("/agent-1", "", {{"X-Tigris-Rebase", "maybe"}}).status == 400);

  const auto rebased = server.put("/agent-1", "", {{"X-Tigris-Rebase", "true"}});
  INFO(rebased.body);
  REQUIRE(rebased.status == 200);
  const auto* version = rebased.header("X-Tigris-Snapshot-Version");
  REQUIRE(version);
  CHECK(*version != old_version);
  CHECK(*server.head("/agent-1").header("X-Tigris-Fork-Source-Bucket-Snapshot") == *version);
  CHECK(Server::body_of(server.get("/agent-1/late")) == "l");
  CHECK(Server::body_of(server.get("/agent-1/mine")) == "m");
}

TEST_CASE("PATCH type 0 is refused for fork parents and forks", "[server][buckets]") {
  Server server;
  REQUIRE(server.put("/source", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/agent-1", "", {{"X-Tigris-Fork-Source-Bucket", "source"}}).status == 200);
  const auto patch = [&](const std::string& bucket, const std::string& body) {
    return server.send({.method = "PATCH",
                        .target = "/" + bucket,
                        .body = body,
                        .headers = {{"Content-Type", "application/json"}}});
  };
  const auto parent = patch("source", R"({"type":0})");
  CHECK(parent.status == 409);
  CHECK(nlohmann::json::parse(parent.body)["Code"] == "BucketHasForks");
  const auto fork = patch("agent-1", R"({"type":0})");
  CHECK(fork.status == 400);
  CHECK(contains(nlohmann::json::parse(fork.body)["Message"].get<std::string>(), "fork"));
  CHECK(*server.head("/source").header("X-Tigris-Enable-Snapshot") == "true");
  CHECK(patch("source", R"({"type":2})").status == 400);
  CHECK(patch("missing", R"({"type":1})").status == 404);
  REQUIRE(server.del("/agent-1", {{"Tigris-Force-Delete", "true"}}).status == 204);
  CHECK(patch("source", R"({"type":0})").status == 200);
  CHECK(*server.head("/source").header("X-Tigris-Enable-Snapshot") == "false");
}
