// SPDX-License-Identifier: Apache-2.0
// aws-chunked bodies (AWS sigv4-streaming) and integrity headers (server-design §5.1, §6.6).
#include "tfork/server/payload.hpp"

#include "support.hpp"

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;

namespace {

constexpr std::string_view k_empty_sha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string hex_size(std::size_t size) {
  static constexpr char k_hex[] = "0123456789abcdef";
  if (size == 0) return "0";
  std::string out;
  while (size) {
    out.insert(out.begin(), k_hex[size % 16]);
    size /= 16;
  }
  return out;
}

// A STREAMING-AWS4-HMAC-SHA256-PAYLOAD body: every chunk signed, chained from the seed.
std::string signed_chunks(const std::vector<std::string>& chunks, const std::string& seed,
                          const std::string& key, const std::string& amz_date,
                          const std::string& scope) {
  std::string body;
  std::string previous = seed;
  auto add = [&](const std::string& chunk) {
    const auto signature = sigv4::signature(
        key, sigv4::chunk_string_to_sign(amz_date, scope, previous, crypto::sha256_hex(chunk)));
    body += hex_size(chunk.size()) + ";chunk-signature=" + signature + "\r\n" + chunk + "\r\n";
    previous = signature;
  };
  for (const auto& chunk : chunks)
    add(chunk);
  add("");
  return body;
}

std::string header_of(const Request& request, std::string_view name) {
  const auto* value = request.header(name);
  return value ? *value : std::string{};
}

}  // namespace

TEST_CASE("the AWS sigv4-streaming example verifies", "[server][payload]") {
  // AWS S3 API reference, "Signature Calculations for the Authorization Header: Transferring
  // Payload in Multiple Chunks": 65536 + 1024 + 0 bytes of 'a'.
  const std::string secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  ChunkSigning signing{sigv4::signing_key(secret, "20130524", "us-east-1", "s3"),
                       "20130524T000000Z", "20130524/us-east-1/s3/aws4_request",
                       "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"};
  const std::string first(65536, 'a'), second(1024, 'a');
  const std::string body =
      "10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648\r\n" +
      first + "\r\n" +
      "400;chunk-signature=0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n" +
      second + "\r\n" +
      "0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9\r\n\r\n";
  const auto decoded = decode_aws_chunked(body, &signing);
  INFO((decoded ? std::string("ok") : std::string(decoded.error().text())));
  REQUIRE(decoded.has_value());
  CHECK(decoded->data == first + second);

  auto tampered = body;
  tampered[200] = 'b';
  const auto rejected = decode_aws_chunked(tampered, &signing);
  REQUIRE_FALSE(rejected.has_value());
  CHECK(rejected.error().code() == "SignatureDoesNotMatch");
}

TEST_CASE("signed aws-chunked PUTs are decoded and verified end to end", "[server][payload]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);

  // Sign the headers first (the seed), then frame the body with chunk signatures.
  const std::string payload_mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";
  const std::vector<std::string> chunks = {std::string(9000, 'x'), "tail"};
  auto request = server.sign(
      {.method = "PUT",
       .target = "/bucket-a/chunked",
       .headers = {{"Content-Encoding", "aws-chunked"}, {"x-amz-decoded-content-length", "9004"}},
       .payload_hash = payload_mode});
  const auto authorization = *request.header("authorization");
  const auto seed = authorization.substr(authorization.rfind('=') + 1);
  const auto amz_date = header_of(request, "x-amz-date");
  const auto date8 = amz_date.substr(0, 8);
  const auto scope = date8 + "/auto/s3/aws4_request";
  const auto key = sigv4::signing_key(k_root_secret, date8, "auto", "s3");
  request.body = signed_chunks(chunks, seed, key, amz_date, scope);
  const auto put = server.handler().handle(request);
  INFO(put.body);
  REQUIRE(put.status == 200);
  CHECK(Server::body_of(server.get("/bucket-a/chunked")) == chunks[0] + chunks[1]);

  // A chunk changed in flight breaks its signature.
  auto tampered = request;
  tampered.body[120] = 'y';
  const auto rejected = server.handler().handle(tampered);
  CHECK(rejected.status == 403);
  CHECK(xml_value(rejected.body, "Code") == "SignatureDoesNotMatch");

  // The decoded length must match x-amz-decoded-content-length.
  // (the header is signed, so the request is signed again with the wrong value)
  auto resigned = server.sign(
      {.method = "PUT",
       .target = "/bucket-a/chunked",
       .headers = {{"Content-Encoding", "aws-chunked"}, {"x-amz-decoded-content-length", "9005"}},
       .payload_hash = payload_mode});
  const auto auth2 = *resigned.header("authorization");
  resigned.body = signed_chunks(chunks, auth2.substr(auth2.rfind('=') + 1), key,
                                header_of(resigned, "x-amz-date"), scope);
  const auto mismatch = server.handler().handle(resigned);
  CHECK(mismatch.status == 400);
  CHECK(xml_value(mismatch.body, "Code") == "IncompleteBody");
}

TEST_CASE("STREAMING-UNSIGNED-PAYLOAD-TRAILER bodies verify their trailer checksum",
          "[server][payload]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  // Exactly what @aws-sdk/client-s3 3.x sends for a stream upload (server-design §5.1).
  const std::string good =
      "6\r\nhello \r\n6\r\nstream\r\n0\r\nx-amz-checksum-crc32:gtnkmQ==\r\n\r\n";
  auto send = [&](const std::string& body) {
    return server.send({.method = "PUT",
                        .target = "/bucket-a/streamed",
                        .body = body,
                        .headers = {{"Content-Encoding", "aws-chunked"},
                                    {"x-amz-trailer", "x-amz-checksum-crc32"},
                                    {"x-amz-decoded-content-length", "12"}},
                        .payload_hash = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"});
  };
  const auto ok = send(good);
  INFO(ok.body);
  REQUIRE(ok.status == 200);
  CHECK(*ok.header("x-amz-checksum-crc32") == "gtnkmQ==");
  const auto got = server.get("/bucket-a/streamed", {{"x-amz-checksum-mode", "ENABLED"}});
  CHECK(Server::body_of(got) == "hello stream");
  CHECK(*got.header("x-amz-checksum-crc32") == "gtnkmQ==");

  auto bad = good;
  bad.replace(bad.find("gtnkmQ=="), 8, "AAAAAA==");
  const auto rejected = send(bad);
  CHECK(rejected.status == 400);
  CHECK(xml_value(rejected.body, "Code") == "BadDigest");

  auto missing = std::string("6\r\nhello \r\n6\r\nstream\r\n0\r\n\r\n");
  CHECK(xml_value(send(missing).body, "Code") == "IncompleteBody");
}

TEST_CASE("Content-MD5 and x-amz-checksum-* headers are verified", "[server][payload]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const std::string body = "integrity";
  const auto md5 = crypto::base64_encode(crypto::md5(body));
  CHECK(server.put("/bucket-a/a", body, {{"Content-MD5", md5}}).status == 200);
  const auto wrong_md5 = crypto::base64_encode(crypto::md5("other"));
  CHECK(xml_value(server.put("/bucket-a/a", body, {{"Content-MD5", wrong_md5}}).body, "Code") ==
        "BadDigest");
  CHECK(xml_value(server.put("/bucket-a/a", body, {{"Content-MD5", "bm90LW1kNQ=="}}).body,
                  "Code") == "InvalidDigest");

  for (const std::string algorithm : {"crc32", "crc32c", "crc64nvme", "sha1", "sha256"}) {
    INFO(algorithm);
    const auto value = checksum_of(algorithm, body);
    const auto ok = server.put("/bucket-a/c", body, {{"x-amz-checksum-" + algorithm, value}});
    CHECK(ok.status == 200);
    CHECK(*ok.header("x-amz-checksum-" + algorithm) == value);
    const auto bad = server.put("/bucket-a/c", body,
                                {{"x-amz-checksum-" + algorithm, checksum_of(algorithm, "x")}});
    CHECK(xml_value(bad.body, "Code") == "BadDigest");
  }
  CHECK(xml_value(server.put("/bucket-a/c", body, {{"x-amz-checksum-crc32", "!!"}}).body, "Code") ==
        "InvalidRequest");
  CHECK(k_empty_sha256.size() == 64);
}

TEST_CASE("decode_aws_chunked rejects broken framing", "[server][payload]") {
  CHECK_FALSE(decode_aws_chunked("zz\r\nabc\r\n0\r\n\r\n", nullptr).has_value());
  CHECK_FALSE(decode_aws_chunked("5\r\nabc", nullptr).has_value());
  CHECK_FALSE(decode_aws_chunked("3\r\nabcX0\r\n\r\n", nullptr).has_value());
  const auto ok = decode_aws_chunked("3\r\nabc\r\n0\r\n\r\n", nullptr);
  REQUIRE(ok.has_value());
  CHECK(ok->data == "abc");
  CHECK(ok->trailers.empty());
  // Signed bodies need every chunk signature.
  ChunkSigning signing{"key", "20130524T000000Z", "20130524/auto/s3/aws4_request", "seed"};
  CHECK_FALSE(decode_aws_chunked("3\r\nabc\r\n0\r\n\r\n", &signing).has_value());
}
