// SPDX-License-Identifier: Apache-2.0
// The rules the client and `tfork serve` share (tfork/rules): one table each.
#include "tfork/rules/bucket_name.hpp"
#include "tfork/rules/redaction.hpp"

#include <catch2/catch.hpp>

using namespace tfork;

TEST_CASE("bucket names (tigris-wire.md §2.1)", "[rules][names]") {
  struct Row {
    const char* name;
    const char* problem;  // a part of the reason, or nullptr when valid
  };
  const Row rows[] = {
      {"abc", nullptr},
      {"my-bucket.v2", nullptr},
      {"0day", nullptr},
      {"ab-", "start and end"},
      {"-ab", "start and end"},
      {"ab", "3 to 63"},
      {"a234567890123456789012345678901234567890123456789012345678901234", "3 to 63"},
      {"Upper", "lowercase"},
      {"under_score", "lowercase"},
      {"sp ace", "lowercase"},
      {"a..b", "'..'"},
      {"192.168.5.4", "IP address"},
      {"1.2.3", nullptr},  // three groups is not an address
      {"xn--abc", "xn--"},
      {"data-s3alias", "-s3alias"},
      {"caf\xc3\xa9", "lowercase"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.name);
    const auto problem = rules::bucket_name_problem(row.name);
    if (!row.problem) {
      CHECK_FALSE(problem);
    } else {
      REQUIRE(problem);
      CHECK_THAT(*problem, Catch::Contains(row.problem));
    }
  }
}

TEST_CASE("log redaction of request targets", "[rules][redaction]") {
  struct Row {
    const char* target;
    const char* logged;
  };
  const Row rows[] = {
      {"/b/k", "/b/k"},
      {"/b/k?list-type=2&prefix=a", "/b/k?list-type=2&prefix=a"},
      {"/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc123&X-Amz-Expires=60",
       "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=***&X-Amz-Expires=60"},
      {"/b/k?X-Amz-Security-Token=tok&x-amz-signature=s",
       "/b/k?X-Amz-Security-Token=***&x-amz-signature=***"},
      {"/b/k?continuation-token=next", "/b/k?continuation-token=***"},
      {"/b/k?SecretAccessKey=s", "/b/k?SecretAccessKey=***"},
      // A path that looks like a parameter is not a parameter.
      {"/b/X-Amz-Signature=keep?x=1", "/b/X-Amz-Signature=keep?x=1"},
      {"/b/k?X-Amz-Signature", "/b/k?X-Amz-Signature"},
      {"/b/k?", "/b/k?"},
  };
  for (const auto& row : rows) {
    CAPTURE(row.target);
    CHECK(rules::redact_target(row.target) == row.logged);
  }
}
