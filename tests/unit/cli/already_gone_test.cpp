// SPDX-License-Identifier: Apache-2.0
// "Already gone" (core/error.hpp): one predicate per family of delete, as a table.
#include "tfork/core/error.hpp"

#include <catch2/catch.hpp>

using namespace tfork;

TEST_CASE("already gone: one rule per operation family", "[errors][gone]") {
  struct Row {
    int status;
    const char* code;
    bool bucket;
    bool key;
    bool snapshot;
  };
  const Row rows[] = {
      {404, "NoSuchBucket", true, false, false},
      {404, "NoSuchEntity", false, true, false},
      {404, "NoSuchSnapshot", false, false, true},
      {404, "NotFound", true, true, false},  // a HEAD: no body, nothing more specific
      {404, "", true, true, false},
      {404, "NoSuchKey", false, false, false},
      {403, "AccessDenied", false, false, false},
      {409, "BucketHasForks", false, false, false},
      {0, "ConnectError", false, false, false},
  };
  for (const auto& row : rows) {
    CAPTURE(row.status, row.code);
    const Error error{kind_for_service_error(row.code, row.status), row.code, "m", row.status, {}};
    CHECK(bucket_gone(error) == row.bucket);
    CHECK(key_gone(error) == row.key);
    CHECK(snapshot_gone(error) == row.snapshot);
  }
}
