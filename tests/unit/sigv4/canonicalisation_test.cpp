// SPDX-License-Identifier: Apache-2.0
// Our own canonicalisation cases (server-design.md §5.2 and §6 "a table of S3
// canonicalisation cases"): keys and query values S3 clients really send.

#include "tfork/sigv4/signer.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace tfork::sigv4 {

TEST_CASE("uri_encode keeps unreserved bytes and encodes everything else once", "[sigv4]") {
  CHECK(uri_encode("AZaz09-_.~", false) == "AZaz09-_.~");
  CHECK(uri_encode("a b+c=d/e%f", false) == "a%20b%2Bc%3Dd%2Fe%25f");
  CHECK(uri_encode("a/b", true) == "a/b");
  CHECK(uri_encode("\xe1\x88\xb4", false) == "%E1%88%B4");
  CHECK(uri_encode(std::string("\0\xff", 2), false) == "%00%FF");
}

TEST_CASE("uri_decode decodes %XY only", "[sigv4]") {
  CHECK(uri_decode("a%20b") == "a b");
  CHECK(uri_decode("a+b") == "a+b");  // not form encoding
  CHECK(uri_decode("%e1%88%B4") == "\xe1\x88\xb4");
  CHECK(uri_decode("100%") == "100%");
  CHECK(uri_decode("%zz%4") == "%zz%4");
}

TEST_CASE("S3 canonical URI: decode the wire path, encode once, never normalise", "[sigv4]") {
  struct Case {
    const char* wire;
    const char* canonical;
  };
  const auto mode = UriMode::s3;
  for (const auto& [wire, canonical] : std::initializer_list<Case>{
           {"", "/"},
           {"/", "/"},
           {"/bucket/a b", "/bucket/a%20b"},    // space sent raw
           {"/bucket/a%20b", "/bucket/a%20b"},  // space sent encoded
           {"/bucket/a+b", "/bucket/a%2Bb"},    // '+' is a plus, not a space
           {"/bucket/a%2Bb", "/bucket/a%2Bb"},
           {"/bucket/a~b", "/bucket/a~b"},        // '~' unreserved
           {"/bucket/a%7Eb", "/bucket/a~b"},      // ... even when sent encoded
           {"/bucket/100%25", "/bucket/100%25"},  // a literal '%'
           {"/bucket/100%", "/bucket/100%25"},    // a stray '%'
           {"/bucket/a=b&c", "/bucket/a%3Db%26c"},
           {"/bucket/a%2Fb", "/bucket/a/b"},  // '/' is never encoded in a path
           {"/bucket/\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", "/bucket/%D0%BA%D0%BB%D1%8E%D1%87"},
           {"/bucket/%D0%BA%D0%BB%D1%8E%D1%87", "/bucket/%D0%BA%D0%BB%D1%8E%D1%87"},
           {"/bucket//a//b", "/bucket//a//b"},        // "//" kept
           {"/bucket/./a/../b", "/bucket/./a/../b"},  // dot segments kept
           {"/bucket/dir/", "/bucket/dir/"},
           {"/bucket/test$file.text", "/bucket/test%24file.text"},
       }) {
    INFO("wire path " << wire);
    CHECK(canonical_uri(wire, mode) == canonical);
  }
}

TEST_CASE("generic canonical URI: normalise, then encode the wire path again", "[sigv4]") {
  CHECK(canonical_uri("/a%20b", UriMode::generic) == "/a%2520b");
  CHECK(canonical_uri("/a b", UriMode::generic) == "/a%20b");
  CHECK(canonical_uri("/a/./b/../c//d", UriMode::generic) == "/a/c/d");
  CHECK(canonical_uri("/a/b/..", UriMode::generic) == "/a/");
  CHECK(canonical_uri("/../..", UriMode::generic) == "/");
  CHECK(canonical_uri("//", UriMode::generic) == "/");
  CHECK(canonical_uri("", UriMode::generic) == "/");
}

TEST_CASE("canonical query: decode, encode once, sort by name then value", "[sigv4]") {
  struct Case {
    const char* wire;
    const char* canonical;
  };
  for (const auto& [wire, canonical] : std::initializer_list<Case>{
           {"", ""},
           {"delete", "delete="},  // no '=': "name="
           {"prefix=", "prefix="},
           {"uploads&prefix=a", "prefix=a&uploads="},
           {"=value", "=value"},            // empty name
           {"a=1&&b=2&", "a=1&b=2"},        // nothing between '&'s
           {"b=2&a=1&a=0", "a=0&a=1&b=2"},  // duplicate names, by value
           {"a=x&a=x", "a=x&a=x"},          // exact duplicates both kept
           {"prefix=a b", "prefix=a%20b"},  // space is %20, never '+'
           {"prefix=a%20b", "prefix=a%20b"},
           {"prefix=a+b", "prefix=a%2Bb"},
           {"prefix=photos/2024/&delimiter=/", "delimiter=%2F&prefix=photos%2F2024%2F"},
           {"prefix=photos%2f2024%2F", "prefix=photos%2F2024%2F"},
           {"key=~tilde%7E", "key=~tilde~"},
           {"k=100%", "k=100%25"},
           {"k=%E2%9C%93&k=\xe2\x9c\x93", "k=%E2%9C%93&k=%E2%9C%93"},
           // ListObjectsV2 continuation tokens are base64: '+', '/' and '=' must survive.
           {"list-type=2&continuation-token=1ab+cd/ef==",
            "continuation-token=1ab%2Bcd%2Fef%3D%3D&list-type=2"},
           {"list-type=2&continuation-token=1ab%2Bcd%2Fef%3D%3D",
            "continuation-token=1ab%2Bcd%2Fef%3D%3D&list-type=2"},
           // Sorting is by the encoded bytes: '%' (0x25) < '-' < 'A' < '_' < 'a'.
           {"a_b=1&aB=2&a-b=3&a%20b=4", "a%20b=4&a-b=3&aB=2&a_b=1"},
       }) {
    INFO("wire query " << wire);
    CHECK(canonical_query(wire) == canonical);
  }
}

TEST_CASE("canonical headers: lowercase, trim, collapse, join repeats in order", "[sigv4]") {
  const std::vector<Header> headers = {
      {"Host", "localhost:9000"},  // a non-default port stays in the value
      {"X-Amz-Meta-Note", "  a   b \t  c  "},
      {"x-amz-meta-list", "one"},
      {"X-AMZ-META-LIST", " two "},
      {"X-Amz-Meta-Folded", "first\r\n  second"},
      {"X-Amz-Meta-Empty", ""},
      {"Content-Type", "text/plain;  charset=utf-8"},
  };
  const std::string names = signed_header_names(headers);
  CHECK(names ==
        "content-type;host;x-amz-meta-empty;x-amz-meta-folded;x-amz-meta-list;x-amz-meta-note");
  CHECK(canonical_headers(headers, names) ==
        "content-type:text/plain; charset=utf-8\n"
        "host:localhost:9000\n"
        "x-amz-meta-empty:\n"
        "x-amz-meta-folded:first second\n"
        "x-amz-meta-list:one,two\n"
        "x-amz-meta-note:a b c\n");
  // Only the named headers are written.
  CHECK(canonical_headers(headers, "host") == "host:localhost:9000\n");
}

TEST_CASE("a non-default port in Host is signed as sent", "[sigv4]") {
  const Request request{.method = "GET",
                        .path = "/bucket/key with space",
                        .query = "versionId=3%2B4",
                        .headers = {{"Host", "127.0.0.1:39123"}},
                        .payload_hash = std::string(unsigned_payload)};
  const Credentials credentials{"tid_key", "secret", ""};
  const auto time = Clock::time_point{} + std::chrono::seconds(1700000000);
  const HeaderSignature result = sign_with_details(request, credentials, {}, time);
  CHECK(amz_date(time) == "20231114T221320Z");
  CHECK(result.canonical_request ==
        "GET\n/bucket/key%20with%20space\nversionId=3%2B4\n"
        "host:127.0.0.1:39123\n"
        "x-amz-content-sha256:UNSIGNED-PAYLOAD\n"
        "x-amz-date:20231114T221320Z\n\n"
        "host;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD");
  CHECK(result.string_to_sign.starts_with(
      "AWS4-HMAC-SHA256\n20231114T221320Z\n20231114/auto/s3/aws4_request\n"));
}

}  // namespace tfork::sigv4
