// SPDX-License-Identifier: Apache-2.0
// sign() and presign() beyond the vectors: session tokens, replaced headers, Tigris headers.

#include "tfork/sigv4/signer.hpp"

#include <catch2/catch.hpp>

#include "vector_files.hpp"
#include <algorithm>

namespace tfork::sigv4 {
namespace {

// AWS S3 API Reference example credentials ("Signature Calculations for the Authorization
// Header"), public documentation values.
const Credentials doc_credentials{"AKIAIOSFODNN7EXAMPLE",
                                  "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
const SigningParams doc_params{.region = "us-east-1", .service = "s3"};
const Clock::time_point doc_time = testing::parse_utc("20130524T000000Z");

std::vector<std::string> names_of(const std::vector<Header>& headers) {
  std::vector<std::string> names;
  for (const auto& header : headers)
    names.push_back(header.first);
  return names;
}

}  // namespace

TEST_CASE("S3 GET example signs to the documented signature", "[sigv4]") {
  const Request request{
      .method = "GET",
      .path = "/test.txt",
      .query = "",
      .headers = {{"Host", "examplebucket.s3.amazonaws.com"}, {"Range", "bytes=0-9"}},
      .payload_hash = std::string(empty_payload_sha256)};
  const auto headers = sign(request, doc_credentials, doc_params, doc_time);
  CHECK(names_of(headers) ==
        std::vector<std::string>{"x-amz-date", "x-amz-content-sha256", "authorization"});
  CHECK(headers[0].second == "20130524T000000Z");
  CHECK(headers[1].second == empty_payload_sha256);
  CHECK(headers[2].second ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("headers sign() adds replace stale ones in the request", "[sigv4]") {
  Request request{.method = "GET",
                  .path = "/test.txt",
                  .query = "",
                  .headers = {{"Host", "examplebucket.s3.amazonaws.com"},
                              {"Range", "bytes=0-9"},
                              {"X-Amz-Date", "19990101T000000Z"},
                              {"Authorization", "stale"},
                              {"x-amz-content-sha256", "stale"}},
                  .payload_hash = std::string(empty_payload_sha256)};
  const auto result = sign_with_details(request, doc_credentials, doc_params, doc_time);
  CHECK(result.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST_CASE("session token: signed by default, added unsigned with omit_session_token", "[sigv4]") {
  const Credentials with_token{"AKIDEXAMPLE", "secret", "token+/="};
  const Request request{.method = "GET",
                        .path = "/b/k",
                        .query = "",
                        .headers = {{"host", "localhost:9000"}},
                        .payload_hash = std::string(unsigned_payload)};

  const auto signed_token = sign_with_details(request, with_token, {}, doc_time);
  CHECK(names_of(signed_token.headers) ==
        std::vector<std::string>{"x-amz-date", "x-amz-content-sha256", "x-amz-security-token",
                                 "authorization"});
  CHECK(signed_token.signed_names == "host;x-amz-content-sha256;x-amz-date;x-amz-security-token");
  CHECK(signed_token.canonical_request.find("\nx-amz-security-token:token+/=\n") !=
        std::string::npos);

  SigningParams omit;
  omit.omit_session_token = true;
  const auto unsigned_token = sign_with_details(request, with_token, omit, doc_time);
  CHECK(names_of(unsigned_token.headers) == names_of(signed_token.headers));
  CHECK(unsigned_token.headers[2].second == "token+/=");
  CHECK(unsigned_token.signed_names == "host;x-amz-content-sha256;x-amz-date");
  // Signing without a token at all gives the same signature as omitting it.
  const Credentials without_token{"AKIDEXAMPLE", "secret", ""};
  CHECK(sign_with_details(request, without_token, {}, doc_time).signature ==
        unsigned_token.signature);

  const auto presigned =
      presign_with_details(request, with_token, {}, doc_time, std::chrono::seconds(60));
  CHECK(presigned.canonical_request.find("&X-Amz-Security-Token=token%2B%2F%3D&") !=
        std::string::npos);
  CHECK(presigned.query.ends_with("&X-Amz-Security-Token=token%2B%2F%3D&X-Amz-Signature=" +
                                  presigned.signature));
  const auto presigned_omit =
      presign_with_details(request, with_token, omit, doc_time, std::chrono::seconds(60));
  CHECK(presigned_omit.canonical_request.find("X-Amz-Security-Token") == std::string::npos);
  CHECK(testing::query_parameter(presigned_omit.query, "X-Amz-Security-Token") == "token%2B%2F%3D");
}

TEST_CASE("presign keeps the request's query, orders X-Amz-* and puts the signature last",
          "[sigv4]") {
  const Request request{.method = "GET",
                        .path = "/bucket/a b",
                        .query = "versionId=1&response-content-type=text%2Fplain",
                        .headers = {{"Host", "localhost:9000"}},
                        .payload_hash = ""};  // empty: UNSIGNED-PAYLOAD
  const auto result =
      presign_with_details(request, doc_credentials, {}, doc_time, std::chrono::seconds(604800));
  CHECK(result.query ==
        "versionId=1&response-content-type=text%2Fplain&X-Amz-Algorithm=AWS4-HMAC-SHA256"
        "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fauto%2Fs3%2Faws4_request"
        "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=604800&X-Amz-SignedHeaders=host"
        "&X-Amz-Signature=" +
            result.signature);
  CHECK(result.canonical_request.ends_with("\nhost\nUNSIGNED-PAYLOAD"));
  CHECK(result.canonical_request.starts_with(
      "GET\n/bucket/a%20b\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="));
  CHECK(presign(request, doc_credentials, {}, doc_time, std::chrono::seconds(604800)) ==
        result.query);

  // A verifier recomputes the same signature from the URL minus X-Amz-Signature.
  const Request received{.method = "GET",
                         .path = "/bucket/a%20b",
                         .query = testing::query_without(result.query, "X-Amz-Signature"),
                         .headers = {{"host", "localhost:9000"}},
                         .payload_hash = std::string(unsigned_payload)};
  const std::string creq = canonical_request(received, "host", UriMode::s3);
  CHECK(creq == result.canonical_request);
}

TEST_CASE("CreateBucket with X-Tigris-Enable-Snapshot signs that header", "[sigv4][tigris]") {
  const Request request{.method = "PUT",
                        .path = "/agent-bucket",
                        .query = "",
                        .headers = {{"Host", "localhost:9000"},
                                    {"X-Tigris-Enable-Snapshot", "true"},
                                    {"Content-Length", "0"}},
                        .payload_hash = std::string(empty_payload_sha256)};
  const Credentials credentials{"tid_example", "tsec_example", ""};
  const auto result = sign_with_details(request, credentials, {}, doc_time);
  CHECK(result.signed_names ==
        "content-length;host;x-amz-content-sha256;x-amz-date;x-tigris-enable-snapshot");
  CHECK(result.canonical_request ==
        "PUT\n/agent-bucket\n\n"
        "content-length:0\n"
        "host:localhost:9000\n"
        "x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
        "x-amz-date:20130524T000000Z\n"
        "x-tigris-enable-snapshot:true\n\n"
        "content-length;host;x-amz-content-sha256;x-amz-date;x-tigris-enable-snapshot\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const auto parsed = parse_authorization(result.headers.back().second);
  REQUIRE(parsed.has_value());
  CHECK(parsed->signed_headers == result.signed_names);
  CHECK(parsed->region == "auto");
  CHECK(parsed->signature == result.signature);
}

}  // namespace tfork::sigv4
