// SPDX-License-Identifier: Apache-2.0
// parse_authorization(): the forms SDKs send, and one-line errors for the rest.

#include "tfork/sigv4/signer.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace tfork::sigv4 {
namespace {

const std::string signature_hex(64, 'a');

}  // namespace

TEST_CASE("parse_authorization accepts ', ', ',' and extra spaces", "[sigv4][auth]") {
  for (const std::string separator : {", ", ",", " ,  "}) {
    const std::string value =
        "AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/service/"
        "aws4_request" +
        separator + "SignedHeaders=host;x-amz-date" + separator + "Signature=" + signature_hex;
    INFO(value);
    const auto parsed = parse_authorization(value);
    REQUIRE(parsed.has_value());
    CHECK(parsed->access_key_id == "AKID");
    CHECK(parsed->date8 == "20150830");
    CHECK(parsed->region == "us-east-1");
    CHECK(parsed->service == "service");
    CHECK(parsed->signed_headers == "host;x-amz-date");
    CHECK(parsed->signature == signature_hex);
  }
  // Components in another order are fine too.
  CHECK(parse_authorization("AWS4-HMAC-SHA256 Signature=" + signature_hex +
                            ", SignedHeaders=host, Credential=K/20240101/auto/s3/aws4_request")
            .has_value());
}

TEST_CASE("parse_authorization rejects malformed values with a one-line reason", "[sigv4][auth]") {
  const std::string credential = "Credential=AKID/20150830/us-east-1/s3/aws4_request";
  const std::string rest = ", SignedHeaders=host, Signature=" + signature_hex;
  struct Case {
    std::string value;
    std::string error;
  };
  for (const auto& [value, error] : std::initializer_list<Case>{
           {"", "unsupported authorization scheme (expected AWS4-HMAC-SHA256)"},
           {"AWS AKID:c2ln", "unsupported authorization scheme (expected AWS4-HMAC-SHA256)"},
           {"AWS4-HMAC-SHA256X " + credential + rest,
            "unsupported authorization scheme (expected AWS4-HMAC-SHA256)"},
           {"AWS4-HMAC-SHA256", "missing Credential, SignedHeaders and Signature"},
           {"AWS4-HMAC-SHA256 " + credential + ", SignedHeaders=host", "missing Signature"},
           {"AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" + signature_hex,
            "missing Credential"},
           {"AWS4-HMAC-SHA256 " + credential + ", Signature=" + signature_hex,
            "missing SignedHeaders"},
           {"AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/s3" + rest,
            "Credential must be <access key>/<yyyymmdd>/<region>/<service>/aws4_request"},
           {"AWS4-HMAC-SHA256 Credential=AKID/2015-08-30/us-east-1/s3/aws4_request" + rest,
            "Credential date '2015-08-30' is not yyyymmdd"},
           {"AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/s3/aws4_requestx" + rest,
            "Credential must end in aws4_request, not 'aws4_requestx'"},
           {"AWS4-HMAC-SHA256 Credential=/20150830/us-east-1/s3/aws4_request" + rest,
            "Credential has an empty access key id"},
           {"AWS4-HMAC-SHA256 " + credential + ", SignedHeaders=host, Signature=abc",
            "Signature must be 64 lowercase hex digits"},
           {"AWS4-HMAC-SHA256 " + credential + ", SignedHeaders=, Signature=" + signature_hex,
            "SignedHeaders is empty"},
           {"AWS4-HMAC-SHA256 " + credential + rest + ", Extra=1", "unknown component 'Extra'"},
           {"AWS4-HMAC-SHA256 " + credential + ", " + credential + rest, "Credential given twice"},
           {"AWS4-HMAC-SHA256 " + credential + rest + ",", "empty component in Authorization"},
           {"AWS4-HMAC-SHA256 " + credential + " SignedHeaders=host",
            "Credential contains a space (missing ',' between components?)"},
       }) {
    INFO(value);
    const auto parsed = parse_authorization(value);
    REQUIRE_FALSE(parsed.has_value());
    CHECK(parsed.error() == error);
    CHECK(parsed.error().find('\n') == std::string::npos);
  }
}

}  // namespace tfork::sigv4
