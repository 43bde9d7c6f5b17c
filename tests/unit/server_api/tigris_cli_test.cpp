// SPDX-License-Identifier: Apache-2.0
// What the Tigris CLI asks of the server (issue 9 §5): bucket statistics in the JSON bucket
// info and listing, POST /?func=presign, and IAM RotateAccessKey.
#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;

namespace {

Response presign(Server& server, const nlohmann::json& body,
                 std::optional<Credentials> as = std::nullopt) {
  return server.send({.method = "POST",
                      .target = "/?func=presign",
                      .body = body.dump(),
                      .headers = {{"Content-Type", "application/json"}},
                      .as = as});
}

// The request a client holding only the URL sends.
Request from_url(const std::string& method, const std::string& url, std::string body = {}) {
  const std::string scheme = "http://127.0.0.1:9000";
  REQUIRE(url.starts_with(scheme));
  Request request;
  request.method = method;
  request.target = url.substr(scheme.size());
  request.headers = {{"host", "127.0.0.1:9000"}};
  request.body = std::move(body);
  if (!request.body.empty())
    request.headers.emplace_back("content-length", std::to_string(request.body.size()));
  return request;
}

}  // namespace

TEST_CASE("bucket info and the JSON listing carry object counts and sizes", "[server][tigris]") {
  Server server;
  REQUIRE(server.put("/src", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/src/a", std::string(10, 'a')).status == 200);
  REQUIRE(server.put("/src/b/c", std::string(20, 'c')).status == 200);
  REQUIRE(server.put("/empty").status == 200);
  const auto info = server.get("/src?metadata&with-size=true", {{"Accept", "application/json"}});
  REQUIRE(info.status == 200);
  const auto json = nlohmann::json::parse(info.body);
  CHECK(json["estimated_unique_rows"] == 2);
  CHECK(json["estimated_rows"] == 2);
  CHECK(json["estimated_size"] == 30);

  const auto listing = server.get("/?IncludeStats=true", {{"Accept", "application/json"}});
  REQUIRE(listing.status == 200);
  const auto stats = nlohmann::json::parse(listing.body)["Stats"];
  CHECK(stats["ActiveBuckets"] == 2);
  CHECK(stats["TotalObjects"] == 2);
  CHECK(stats["TotalStorageBytes"] == 30);
  // Without the flag there is no Stats member (nothing is counted).
  const auto plain = server.get("/", {{"Accept", "application/json"}});
  CHECK_FALSE(nlohmann::json::parse(plain.body).contains("Stats"));

  // A scoped key's totals cover only the buckets it sees.
  const auto reader = server.create_key("r", R"([{"bucket":"empty","role":"ReadOnly"}])");
  const auto scoped = server.get("/?IncludeStats=true", {{"Accept", "application/json"}}, reader);
  REQUIRE(scoped.status == 200);
  const auto scoped_stats = nlohmann::json::parse(scoped.body)["Stats"];
  CHECK(scoped_stats["ActiveBuckets"] == 1);
  CHECK(scoped_stats["TotalObjects"] == 0);
  CHECK(server.get("/src?metadata", {{"Accept", "application/json"}}, reader).status == 403);
}

TEST_CASE("presign: the server signs a working URL with the named key", "[server][tigris]") {
  Server server;
  REQUIRE(server.put("/bkt-a").status == 200);
  REQUIRE(server.put("/bkt-b").status == 200);
  REQUIRE(server.put("/bkt-a/k", "hello").status == 200);
  const auto editor = server.create_key("e", R"([{"bucket":"bkt-a","role":"Editor"}])");

  const auto root_get = presign(server, {{"bucket", "bkt-a"},
                                         {"key", "k"},
                                         {"key_id", k_root_key},
                                         {"type", "get"},
                                         {"expires_in", 600}});
  REQUIRE(root_get.status == 200);
  const auto url = nlohmann::json::parse(root_get.body)["url"].get<std::string>();
  CHECK(contains(url, "X-Amz-Expires=600"));
  CHECK_FALSE(contains(url, k_root_secret));
  const auto got = server.handler().handle(from_url("GET", url));
  CHECK(got.status == 200);
  CHECK(Server::body_of(got) == "hello");

  // A scoped key presigns with itself, for what it may do.
  const auto put = presign(server,
                           {{"bucket", "bkt-a"},
                            {"key", "dir/new key"},
                            {"key_id", editor.id},
                            {"type", "put"},
                            {"expires_in", 60}},
                           editor);
  REQUIRE(put.status == 200);
  const auto put_url = nlohmann::json::parse(put.body)["url"].get<std::string>();
  CHECK(contains(put_url, "/bkt-a/dir/new%20key?"));
  CHECK(server.handler().handle(from_url("PUT", put_url, "via url")).status == 200);
  CHECK(Server::body_of(server.get("/bkt-a/dir/new%20key")) == "via url");

  // ...and with no other key, and not for another bucket.
  const auto as_root = presign(
      server, {{"bucket", "bkt-a"}, {"key", "k"}, {"key_id", k_root_key}, {"type", "get"}}, editor);
  CHECK(as_root.status == 403);
  CHECK(contains(as_root.body, "\"Code\":\"AccessDenied\""));
  const auto other = presign(
      server, {{"bucket", "bkt-b"}, {"key", "k"}, {"key_id", editor.id}, {"type", "get"}}, editor);
  CHECK(other.status == 403);
  CHECK(contains(other.body, "may not read bucket bkt-b"));
  // A bucket that does not exist answers as one the key may not reach: no existence oracle.
  const auto missing =
      presign(server, {{"bucket", "no-such"}, {"key", "k"}, {"key_id", editor.id}, {"type", "get"}},
              editor);
  CHECK(missing.status == other.status);
  CHECK(nlohmann::json::parse(missing.body)["Code"] == nlohmann::json::parse(other.body)["Code"]);
  // Root may name the editor's key, but not for a bucket that key cannot reach.
  CHECK(presign(server, {{"bucket", "bkt-b"}, {"key", "k"}, {"key_id", editor.id}, {"type", "get"}})
            .status == 403);

  // Bad requests: JSON error bodies with a reason.
  const auto bad_type = presign(
      server, {{"bucket", "bkt-a"}, {"key", "k"}, {"key_id", k_root_key}, {"type", "post"}});
  CHECK(bad_type.status == 400);
  CHECK(contains(bad_type.body, "type must be"));
  CHECK(presign(server, {{"bucket", "bkt-a"},
                         {"key", "k"},
                         {"key_id", k_root_key},
                         {"type", "get"},
                         {"expires_in", 604801}})
            .status == 400);
  CHECK(presign(server, {{"bucket", "bkt-a"}, {"key_id", k_root_key}, {"type", "get"}}).status ==
        400);
  CHECK(presign(server, {{"bucket", "nope"}, {"key", "k"}, {"key_id", k_root_key}, {"type", "get"}})
            .status == 404);
  CHECK(presign(server,
                {{"bucket", "bkt-a"}, {"key", "k"}, {"key_id", "tid_unknown"}, {"type", "get"}})
            .status == 400);
  const auto other_func = server.send({.method = "POST", .target = "/?func=other", .body = "{}"});
  CHECK(other_func.status == 501);
}

TEST_CASE("RotateAccessKey: a new secret, the old one refused at once", "[server][tigris]") {
  Server server;
  REQUIRE(server.put("/bkt-a").status == 200);
  REQUIRE(server.put("/bkt-b").status == 200);
  const auto editor = server.create_key("e", R"([{"bucket":"bkt-a","role":"Editor"}])");
  const auto other = server.create_key("o", R"([{"bucket":"bkt-b","role":"Editor"}])");
  const auto rotate = [&](const std::string& id, std::optional<Credentials> as = std::nullopt) {
    return server.send({.method = "POST",
                        .target = "/?Action=RotateAccessKey",
                        .body = "Action=RotateAccessKey&AccessKeyId=" + id,
                        .headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                                    {"Accept", "application/json"}},
                        .as = as});
  };
  const auto rotated = rotate(editor.id);
  REQUIRE(rotated.status == 200);
  const auto json = nlohmann::json::parse(rotated.body);
  CHECK(json["status"] == "success");
  CHECK(json["rotate_access_key_result"]["id"] == editor.id);
  const auto secret = json["rotate_access_key_result"]["new_secret"].get<std::string>();
  CHECK(secret != editor.secret);
  CHECK(server.put("/bkt-a/x", "1", {}, editor).status == 403);
  CHECK(server.put("/bkt-a/x", "1", {}, Credentials{editor.id, secret}).status == 200);

  // Who may delete a key may rotate it: not a key of another bucket.
  CHECK(rotate(other.id, Credentials{editor.id, secret}).status == 403);
  CHECK(rotate("tid_unknown").status == 404);
  CHECK(rotate("").status == 400);
}
