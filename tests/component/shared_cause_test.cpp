// SPDX-License-Identifier: Apache-2.0
// take_shared_cause (issue 26 §3): a cause every failed row shares is said once.
#include "tfork/workflow/batch.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

using tfork::Error;
using tfork::ErrorKind;
using tfork::workflow::take_shared_cause;

namespace {

Error error(ErrorKind kind, std::string code, std::string message) {
  return Error{kind, std::move(code), std::move(message), 0, {}};
}

struct Rows {
  std::vector<std::string> names;
  std::vector<std::optional<Error>> errors;
  std::optional<Error> take() {
    std::vector<std::optional<Error>*> pointers;
    for (auto& e : errors)
      pointers.push_back(&e);
    return take_shared_cause(pointers, names);
  }
};

}  // namespace

TEST_CASE("one cause on every failed row: the copies go, the cause without a name stays",
          "[batch][shared-cause]") {
  Rows rows{
      {"f-1", "f-2", "f-3"},
      {error(ErrorKind::network, "ConnectError",
             "f-1: connect failed after 0 ms (after 3 attempts)"),
       std::nullopt, error(ErrorKind::network, "ConnectError", "f-3: connect failed after 12 ms")}};
  const auto cause = rows.take();
  REQUIRE(cause);
  CHECK(cause->message == "connect failed after 0 ms");
  CHECK(cause->code == "ConnectError");
  CHECK(cause->kind == ErrorKind::network);
  for (const auto& e : rows.errors)
    CHECK_FALSE(e);
}

TEST_CASE("rows that failed for different reasons keep their own errors", "[batch][shared-cause]") {
  Rows rows{{"f-1", "f-2"},
            {error(ErrorKind::conflict, "BucketAlreadyExists", "f-1: taken"),
             error(ErrorKind::conflict, "BucketAlreadyExists", "f-2: exists as a fork of x")}};
  CHECK_FALSE(rows.take());
  CHECK(rows.errors[0]);
  CHECK(rows.errors[1]);
}

TEST_CASE("one failed row: its error stays, unless the cause is systemic",
          "[batch][shared-cause]") {
  Rows own{{"f-1", "f-2"}, {error(ErrorKind::conflict, "BucketAlreadyExists", "f-1: taken"), {}}};
  CHECK_FALSE(own.take());
  CHECK(own.errors[0]);

  Rows unreachable{{"f-1", "f-2"},
                   {{}, error(ErrorKind::network, "ConnectError", "f-2: connect failed")}};
  const auto cause = unreachable.take();
  REQUIRE(cause);
  CHECK(cause->message == "connect failed");
  CHECK_FALSE(unreachable.errors[1]);
}

TEST_CASE("no failed row: nothing to say", "[batch][shared-cause]") {
  Rows rows{{"f-1"}, {std::nullopt}};
  CHECK_FALSE(rows.take());
}
