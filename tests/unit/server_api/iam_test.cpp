// SPDX-License-Identifier: Apache-2.0
// IAM actions and role enforcement (tigris-wire §3, server-design §6.9).
#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;

namespace {

Response iam(Server& server, const std::string& target, const std::string& body,
             std::optional<Credentials> as = std::nullopt) {
  return server.send({.method = "POST",
                      .target = target,
                      .body = body,
                      .headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                                  {"Accept", "application/json"}},
                      .as = as});
}

}  // namespace

TEST_CASE("Editor and ReadOnly keys are held to their bucket", "[server][iam]") {
  Server server;
  REQUIRE(server.put("/bucket-a", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/bucket-b").status == 200);
  REQUIRE(server.put("/bucket-a/k", "v").status == 200);
  const auto editor = server.create_key("editor", R"([{"bucket":"bucket-a","role":"Editor"}])");
  const auto reader = server.create_key("reader", R"([{"bucket":"bucket-a","role":"ReadOnly"}])");
  CHECK(editor.id.starts_with("tid_"));
  CHECK(editor.secret.starts_with("tsec_"));

  // Editor: read and write its bucket, nothing else.
  CHECK(server.put("/bucket-a/e", "x", {}, editor).status == 200);
  CHECK(server.get("/bucket-a/e", {}, editor).status == 200);
  CHECK(server.del("/bucket-a/e", {}, editor).status == 204);
  CHECK(server.head("/bucket-a", {}, editor).status == 200);
  const auto other = server.put("/bucket-b/e", "x", {}, editor);
  CHECK(other.status == 403);
  CHECK(xml_value(other.body, "Code") == "AccessDenied");
  CHECK(server.get("/bucket-b?list-type=2", {}, editor).status == 403);
  CHECK(server.put("/new-bucket", "", {}, editor).status == 403);

  // ReadOnly: reads, HeadBucket, snapshot reads; no writes.
  CHECK(server.get("/bucket-a/k", {}, reader).status == 200);
  CHECK(server.get("/bucket-a?list-type=2", {}, reader).status == 200);
  CHECK(server.head("/bucket-a", {}, reader).status == 200);
  CHECK(server.put("/bucket-a/r", "x", {}, reader).status == 403);
  CHECK(server.del("/bucket-a/k", {}, reader).status == 403);
  CHECK(server.del("/bucket-a", {}, reader).status == 403);
  CHECK(server.get("/bucket-b/k", {}, reader).status == 403);

  // DeleteObjects by a reader: per-key AccessDenied errors.
  const auto batch =
      server.post("/bucket-a?delete", "<Delete><Object><Key>k</Key></Object></Delete>", {}, reader);
  CHECK(batch.status == 200);
  CHECK(contains(batch.body, "<Error><Key>k</Key><Code>AccessDenied</Code>"));
  CHECK(server.get("/bucket-a/k").status == 200);

  // Snapshot and fork operations are open to ReadOnly and Editor (tigris-wire §2.3).
  CHECK(server.put("/bucket-a", "", {{"X-Tigris-Snapshot", "true"}}, reader).status == 200);
  CHECK(server.get("/", {{"X-Tigris-Snapshot", "bucket-a"}}, reader).status == 200);

  // ListBuckets shows only the key's buckets.
  const auto listed = server.get("/", {}, editor);
  CHECK(contains(listed.body, "<Name>bucket-a</Name>"));
  CHECK_FALSE(contains(listed.body, "<Name>bucket-b</Name>"));
}

TEST_CASE("IAM actions create, list, update and delete keys", "[server][iam]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto key = server.create_key("fork-key", R"([{"bucket":"bucket-a","role":"Editor"}])");

  const auto listed = iam(server, "/?Detailed", "Action=ListAccessKeys&MaxItems=1000");
  REQUIRE(listed.status == 200);
  const auto keys = nlohmann::json::parse(listed.body);
  REQUIRE(keys["Keys"].size() == 1);
  CHECK(keys["Keys"][0]["access_key_id"] == key.id);
  CHECK(keys["Keys"][0]["username"] == "fork-key");
  CHECK(keys["Keys"][0]["buckets_role"][0]["role"] == "Editor");
  CHECK(keys["IsTruncated"] == false);

  const auto one = iam(server, "/?Detailed", "Action=ListAccessKeys&KeyId=" + key.id);
  CHECK(nlohmann::json::parse(one.body)["Keys"].size() == 1);

  const auto updated =
      iam(server, "/?Action=UpdateAccessKeyWithBucketsRole",
          "Req=%7B%22id%22%3A%22" + key.id + "%22%2C%22buckets_role%22%3A%5B%5D%7D");
  INFO(updated.body);
  CHECK(updated.status == 200);
  CHECK(nlohmann::json::parse(updated.body)["status"] == "success");
  CHECK(server.put("/bucket-a/x", "x", {}, key).status == 403);

  const auto deleted = iam(server, "/?Action=DeleteAccessKey",
                           "Action=DeleteAccessKey&Version=2010-05-08&AccessKeyId=" + key.id);
  CHECK(deleted.status == 200);
  const auto gone =
      iam(server, "/?Action=DeleteAccessKey", "Action=DeleteAccessKey&AccessKeyId=" + key.id);
  CHECK(gone.status == 404);
  CHECK(contains(gone.body, "NoSuchEntity"));
  CHECK(nlohmann::json::parse(gone.body)["Code"] == "NoSuchEntity");

  const auto unknown = iam(server, "/?Action=CreatePolicy", "");
  CHECK(unknown.status == 400);
  CHECK(nlohmann::json::parse(unknown.body)["Code"] == "InvalidAction");
}

TEST_CASE("scoped keys mint keys only for buckets they edit", "[server][iam]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-b").status == 200);
  const auto editor = server.create_key("editor", R"([{"bucket":"bucket-a","role":"Editor"}])");
  const auto reader = server.create_key("reader", R"([{"bucket":"bucket-a","role":"ReadOnly"}])");
  const auto minted =
      server.create_key("minted", R"([{"bucket":"bucket-a","role":"ReadOnly"}])", editor);
  CHECK(server.get("/bucket-a?list-type=2", {}, minted).status == 200);

  const auto body = [](const std::string& bucket, const std::string& role) {
    return "Req=%7B%22name%22%3A%22x%22%2C%22buckets_role%22%3A%5B%7B%22bucket%22%3A%22" + bucket +
           "%22%2C%22role%22%3A%22" + role + "%22%7D%5D%7D";
  };
  CHECK(iam(server, "/?Action=CreateAccessKeyWithBucketsRole", body("bucket-b", "Editor"), editor)
            .status == 403);
  CHECK(iam(server, "/?Action=CreateAccessKeyWithBucketsRole", body("bucket-a", "Editor"), reader)
            .status == 403);
  CHECK(iam(server, "/?Action=CreateAccessKeyWithBucketsRole", body("*", "NamespaceAdmin"), editor)
            .status == 403);
  CHECK(iam(server, "/?Detailed", "Action=ListAccessKeys", editor).status == 403);

  // A NamespaceAdmin key can do what root does.
  const auto admin = server.create_key("admin", R"([{"bucket":"*","role":"NamespaceAdmin"}])");
  CHECK(server.put("/admin-made", "", {}, admin).status == 200);
  CHECK(server.put("/bucket-b/k", "v", {}, admin).status == 200);
  CHECK(iam(server, "/?Action=CreateAccessKeyWithBucketsRole", body("*", "Editor")).status == 400);
}
