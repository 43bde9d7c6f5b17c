// SPDX-License-Identifier: Apache-2.0
// aws-chunked signed upload (S3 API Reference, "Signature Calculations for the Authorization
// Header: Transferring Payload in Multiple Chunks"): the published seed and chunk signatures.

#include "tfork/crypto/hash.hpp"
#include "tfork/sigv4/signer.hpp"

#include <catch2/catch.hpp>

#include "vector_files.hpp"

namespace tfork::sigv4 {

TEST_CASE("sigv4-streaming example: seed and chunk signatures", "[sigv4][streaming]") {
  const Credentials credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                ""};
  const SigningParams params{.region = "us-east-1", .service = "s3"};
  const auto time = testing::parse_utc("20130524T000000Z");
  const Request request{.method = "PUT",
                        .path = "/examplebucket/chunkObject.txt",
                        .query = "",
                        .headers = {{"Host", "s3.amazonaws.com"},
                                    {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
                                    {"Content-Encoding", "aws-chunked"},
                                    {"x-amz-decoded-content-length", "66560"},
                                    {"Content-Length", "66824"}},
                        .payload_hash = std::string(streaming_payload)};

  const HeaderSignature seed = sign_with_details(request, credentials, params, time);
  CHECK(seed.signed_names ==
        "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
        "x-amz-decoded-content-length;x-amz-storage-class");
  CHECK(seed.signature == "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");

  const std::string date = amz_date(time);
  const std::string scope = credential_scope("20130524", "us-east-1", "s3");
  const std::string key = signing_key(credentials.secret_access_key, "20130524", "us-east-1", "s3");
  std::string previous = seed.signature;
  const auto next_chunk = [&](std::size_t size) {
    const std::string sts =
        chunk_string_to_sign(date, scope, previous, crypto::sha256_hex(std::string(size, 'a')));
    previous = signature(key, sts);
    return previous;
  };
  CHECK(next_chunk(65536) == "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648");
  CHECK(next_chunk(1024) == "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497");
  CHECK(next_chunk(0) == "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9");
}

TEST_CASE("chunk and trailer strings to sign have the documented shape", "[sigv4][streaming]") {
  CHECK(chunk_string_to_sign("D", "S", "P", "H") ==
        "AWS4-HMAC-SHA256-PAYLOAD\nD\nS\nP\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\nH");
  CHECK(trailer_string_to_sign("D", "S", "P", "T") == "AWS4-HMAC-SHA256-TRAILER\nD\nS\nP\nT");
}

}  // namespace tfork::sigv4
