// SPDX-License-Identifier: Apache-2.0
#include "tfork/http/transport.hpp"

#include <catch2/catch.hpp>

#include <string>

using tfork::http::find_header;
using tfork::http::Headers;
using tfork::http::redact_header_value;

TEST_CASE("find_header ignores case and returns the first match", "[http]") {
  const Headers headers{{"Content-Type", "text/xml"}, {"x-amz-meta-a", "1"}, {"X-Amz-Meta-A", "2"}};
  CHECK(find_header(headers, "content-type") == "text/xml");
  CHECK(find_header(headers, "X-AMZ-META-A") == "1");
  CHECK_FALSE(find_header(headers, "etag").has_value());
}

TEST_CASE("redact_header_value keeps the SigV4 scope but hides the signature", "[http]") {
  const std::string authorization =
      "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/auto/s3/aws4_request, "
      "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
      "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7";
  CHECK(redact_header_value("Authorization", authorization) ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/auto/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=***");
  CHECK(redact_header_value("authorization", "Bearer abc.def") == "Bearer ***");
  CHECK(redact_header_value("authorization", "opaque") == "***");
}

TEST_CASE("redact_header_value hides tokens and secrets, keeps the rest", "[http]") {
  CHECK(redact_header_value("x-amz-security-token", "FQoGZXIvYXdzE") == "***");
  CHECK(redact_header_value("X-Amz-Security-Token", "FQoGZXIvYXdzE") == "***");
  CHECK(redact_header_value("X-Tigris-Secret-Key", "s3cr3t") == "***");
  CHECK(redact_header_value("Cookie", "session=1") == "***");
  CHECK(redact_header_value("x-amz-date", "20240101T000000Z") == "20240101T000000Z");
  CHECK(redact_header_value("Host", "bucket.t3.storage.dev") == "bucket.t3.storage.dev");
}
