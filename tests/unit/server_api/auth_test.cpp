// SPDX-License-Identifier: Apache-2.0
// SigV4 verification by the handler (server-design §5.2).
#include "tfork/server/auth.hpp"

#include "support.hpp"

using namespace tfork::server;
using namespace tfork::server::test;

TEST_CASE("signed requests from root are accepted", "[server][auth]") {
  Server server;
  const auto created = server.put("/bucket-a");
  INFO(created.body);
  CHECK(created.status == 200);
  CHECK(*created.header("Location") == "/bucket-a");
  CHECK(created.header("x-amz-request-id")->size() == 16);
  CHECK(server.put("/bucket-a/hello.txt", "hello").status == 200);
  const auto got = server.get("/bucket-a/hello.txt");
  CHECK(got.status == 200);
  CHECK(Server::body_of(got) == "hello");
}

TEST_CASE("a wrong secret is SignatureDoesNotMatch", "[server][auth]") {
  Server server;
  const auto response = server.get("/", {}, Credentials{k_root_key, "tsec_wrong"});
  CHECK(response.status == 403);
  CHECK(xml_value(response.body, "Code") == "SignatureDoesNotMatch");
  CHECK(response.header("x-amz-request-id") != nullptr);
  CHECK(xml_value(response.body, "RequestId") == *response.header("x-amz-request-id"));
}

TEST_CASE("an unknown key is InvalidAccessKeyId", "[server][auth]") {
  Server server;
  const auto response = server.get("/", {}, Credentials{"tid_nobody", "tsec_x"});
  CHECK(response.status == 403);
  CHECK(xml_value(response.body, "Code") == "InvalidAccessKeyId");
}

TEST_CASE("a tampered payload is XAmzContentSHA256Mismatch", "[server][auth]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  auto request = server.sign({.method = "PUT", .target = "/bucket-a/k", .body = "original"});
  request.body = "tampered";
  const auto response = server.handler().handle(request);
  CHECK(response.status == 400);
  CHECK(xml_value(response.body, "Code") == "XAmzContentSHA256Mismatch");
  CHECK(server.get("/bucket-a/k").status == 404);
}

TEST_CASE("a tampered signed header is SignatureDoesNotMatch", "[server][auth]") {
  Server server;
  auto request = server.sign({.method = "PUT", .target = "/bucket-a"});
  request.target = "/bucket-b";
  CHECK(xml_value(server.handler().handle(request).body, "Code") == "SignatureDoesNotMatch");
}

TEST_CASE("an x-amz-* header added after signing is AccessDenied", "[server][auth]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-a/secret.txt", "secret").status == 200);
  // A captured PUT replayed with a copy source would copy an object the signer can read.
  auto request = server.sign({.method = "PUT", .target = "/bucket-a/copy.txt"});
  request.headers.emplace_back("x-amz-copy-source", "/bucket-a/secret.txt");
  const auto response = server.handler().handle(request);
  CHECK(response.status == 403);
  CHECK(xml_value(response.body, "Code") == "AccessDenied");
  CHECK(server.get("/bucket-a/copy.txt").status == 404);
}

TEST_CASE("a stale date is RequestTimeTooSkewed", "[server][auth]") {
  Server server;
  const auto stale = server.send({.target = "/", .time = server.now() - std::chrono::minutes(16)});
  CHECK(stale.status == 403);
  CHECK(xml_value(stale.body, "Code") == "RequestTimeTooSkewed");
  const auto future = server.send({.target = "/", .time = server.now() + std::chrono::minutes(16)});
  CHECK(xml_value(future.body, "Code") == "RequestTimeTooSkewed");
  CHECK(server.send({.target = "/", .time = server.now() - std::chrono::minutes(14)}).status ==
        200);
}

TEST_CASE("S3 requests need x-amz-content-sha256; IAM requests may sign the body hash",
          "[server][auth]") {
  Server server;
  const auto s3 = server.send({.target = "/", .omit_content_sha256 = true});
  CHECK(s3.status == 400);
  CHECK(xml_value(s3.body, "Code") == "InvalidRequest");
  CHECK(contains(s3.body, "x-amz-content-sha256"));

  const auto iam = server.send({.method = "POST",
                                .target = "/",
                                .body = "Action=ListAccessKeys&Version=2010-05-08",
                                .headers = {{"Content-Type", "application/x-www-form-urlencoded"}},
                                .omit_content_sha256 = true,
                                .service = "iam"});
  INFO(iam.body);
  CHECK(iam.status == 200);
  CHECK(contains(iam.body, "\"Keys\""));
}

TEST_CASE("an IAM call that signs its body's hash is checked from its head first",
          "[server][auth]") {
  Server server;
  const std::string form = "Action=ListAccessKeys&Version=2010-05-08";
  auto iam_head = [&](Send send) {
    send.method = "POST";
    send.target = "/";
    send.omit_content_sha256 = true;
    send.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
    if (send.body.empty()) send.body = form;
    auto head = server.sign(send);
    head.body.clear();  // admit() sees the head alone, as the socket layer gives it
    return head;
  };
  auto refusal = [&](const Request& head) {
    auto admitted = server.handler().admit(head);
    REQUIRE_FALSE(admitted.has_value());
    return admitted.error();
  };
  const auto length = std::vector<Header>{{"Content-Length", std::to_string(form.size())}};

  // The deferred road still admits a well-formed head (its signature is checked with the body).
  auto good = server.handler().admit(iam_head({.headers = length, .service = "iam"}));
  REQUIRE(good.has_value());
  CHECK_FALSE(good->auth.has_value());

  const auto unknown = refusal(
      iam_head({.headers = length, .service = "iam", .as = Credentials{"tid_NOSUCHKEY", "x"}}));
  CHECK(unknown.status == 403);
  CHECK(contains(unknown.body, "InvalidAccessKeyId"));

  const auto other_service = refusal(iam_head({.headers = length, .service = "sts"}));
  CHECK(other_service.status == 400);
  CHECK(contains(other_service.body, "AuthorizationHeaderMalformed"));

  const auto skewed = refusal(iam_head(
      {.headers = length, .service = "iam", .time = server.now() - std::chrono::minutes(16)}));
  CHECK(contains(skewed.body, "RequestTimeTooSkewed"));

  const auto big = refusal(
      iam_head({.headers = {{"Content-Length", std::to_string(16 * 1024 + 1)}}, .service = "iam"}));
  CHECK(big.status == 400);
  CHECK(contains(big.body, "MaxMessageLengthExceeded"));
  const auto chunked =
      refusal(iam_head({.headers = {{"Transfer-Encoding", "chunked"}}, .service = "iam"}));
  CHECK(contains(chunked.body, "MaxMessageLengthExceeded"));
}

TEST_CASE("anonymous requests are denied", "[server][auth]") {
  Server server;
  const auto response = server.handler().handle(Request{"GET", "/", {{"Host", "x"}}, ""});
  CHECK(response.status == 403);
  CHECK(xml_value(response.body, "Code") == "AccessDenied");
}

TEST_CASE("malformed Authorization headers are 400", "[server][auth]") {
  Server server;
  auto request = server.sign({.target = "/"});
  for (auto& [name, value] : request.headers) {
    if (iequals(name, "authorization")) value = "AWS4-HMAC-SHA256 Credential=garbage";
  }
  const auto response = server.handler().handle(request);
  CHECK(response.status == 400);
  CHECK(xml_value(response.body, "Code") == "AuthorizationHeaderMalformed");
}

namespace {

std::string presign(Server& server, const std::string& path, std::chrono::seconds expires,
                    std::chrono::system_clock::time_point time) {
  tfork::sigv4::Request wire;
  wire.method = "GET";
  wire.path = path;
  wire.headers = {{"host", "127.0.0.1:9000"}};
  wire.payload_hash = "UNSIGNED-PAYLOAD";
  tfork::sigv4::SigningParams params;
  (void)server;
  return path + "?" +
         tfork::sigv4::presign(wire, {k_root_key, k_root_secret, {}}, params, time, expires);
}

}  // namespace

TEST_CASE("presigned GETs work until they expire", "[server][auth]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-a/obj", "presigned body").status == 200);
  Request request{"GET",
                  presign(server, "/bucket-a/obj", std::chrono::seconds(3600), server.now()),
                  {{"host", "127.0.0.1:9000"}},
                  ""};
  const auto ok = server.handler().handle(request);
  INFO(ok.body);
  CHECK(ok.status == 200);
  CHECK(Server::body_of(ok) == "presigned body");

  // Signed two hours ago for one hour: expired, even though no clock skew applies.
  request.target = presign(server, "/bucket-a/obj", std::chrono::seconds(3600),
                           server.now() - std::chrono::hours(2));
  const auto expired = server.handler().handle(request);
  CHECK(expired.status == 403);
  CHECK(xml_value(expired.body, "Code") == "AccessDenied");
  CHECK(contains(expired.body, "expired"));

  // A week is the longest allowed expiry.
  request.target = presign(server, "/bucket-a/obj", std::chrono::seconds(604801), server.now());
  CHECK(server.handler().handle(request).status == 400);

  // A changed signature fails.
  request.target = presign(server, "/bucket-a/obj", std::chrono::seconds(60), server.now());
  request.target.back() = request.target.back() == '0' ? '1' : '0';
  CHECK(xml_value(server.handler().handle(request).body, "Code") == "SignatureDoesNotMatch");
}

TEST_CASE("a '+' in a signed query means what the signature computed", "[server][auth]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-a/obj", "body").status == 200);
  tfork::sigv4::Request wire;
  wire.method = "GET";
  wire.path = "/bucket-a/obj";
  wire.query = "response-content-disposition=attachment%3B%20filename%3Da%2Bb%20c.txt";
  wire.headers = {{"host", "127.0.0.1:9000"}};
  const auto query = tfork::sigv4::presign(wire, {k_root_key, k_root_secret, {}}, {}, server.now(),
                                           std::chrono::seconds(600));
  const auto replaced = [&](std::initializer_list<std::string_view> escapes) {
    std::string out = query;
    for (const auto escape : escapes) {
      for (auto at = out.find(escape); at != std::string::npos; at = out.find(escape, at + 1))
        out.replace(at, escape.size(), "+");
    }
    return out;
  };
  const auto get = [&](const std::string& wire_query) {
    return server.handler().handle(
        Request{"GET", "/bucket-a/obj?" + wire_query, {{"host", "127.0.0.1:9000"}}, ""});
  };
  const std::string wanted = "attachment; filename=a+b c.txt";
  // As signed; a '+' for the plus (SigV4 reads '+' as a plus); a '+' for the space (a client
  // that form-encoded the URL after signing): each means what the signer meant.
  for (const auto& variant : {query, replaced({"%2B"}), replaced({"%20"})}) {
    INFO(variant);
    const auto response = get(variant);
    CHECK(response.status == 200);
    REQUIRE(response.header("Content-Disposition"));
    CHECK(*response.header("Content-Disposition") == wanted);
  }
  // Both as '+': the signature computed neither reading.
  const auto both = get(replaced({"%2B", "%20"}));
  CHECK(both.status == 403);
  CHECK(xml_value(both.body, "Code") == "SignatureDoesNotMatch");
}

TEST_CASE("a deleted key fails on its next request", "[server][auth]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto key = server.create_key("k", R"([{"bucket":"bucket-a","role":"Editor"}])");
  CHECK(server.get("/bucket-a?list-type=2", {}, key).status == 200);
  REQUIRE(server.store().delete_access_key(key.id).has_value());
  const auto response = server.get("/bucket-a?list-type=2", {}, key);
  CHECK(response.status == 403);
  CHECK(xml_value(response.body, "Code") == "InvalidAccessKeyId");
}

TEST_CASE("parse_amz_date", "[server][auth]") {
  CHECK(parse_amz_date("20130524T000000Z").has_value());
  CHECK_FALSE(parse_amz_date("20130524T000000").has_value());
  CHECK_FALSE(parse_amz_date("20131324T000000Z").has_value());
  CHECK(signatures_equal("abc", "abc"));
  CHECK_FALSE(signatures_equal("abc", "abd"));
  CHECK_FALSE(signatures_equal("abc", "ab"));
}
