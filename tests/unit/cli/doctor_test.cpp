// SPDX-License-Identifier: Apache-2.0
// tfork doctor never shows a whole access key id (issue 23 §4): enough to tell keys apart.
#include "tfork/commands/doctor.hpp"

#include <catch2/catch.hpp>

using tfork::commands::masked_key_id;

TEST_CASE("doctor masks an access key id", "[doctor]") {
  CHECK(masked_key_id("tid_pmd42JNkJ60inTq0iJUIBBaH") == "tid_…BBaH");
  CHECK(masked_key_id("AKIAIOSFODNN7EXAMPLE") == "AK…MPLE");
  // A short id shows nothing of itself.
  CHECK(masked_key_id("tid_abcd") == "********");
  CHECK(masked_key_id("") == "");
}
