// SPDX-License-Identifier: Apache-2.0
// Name validation (tigris-wire.md §1.4, §2.1, §2.3), table and timestamp rendering, error
// mapping (cli.md §6).
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/client.hpp"

#include <catch2/catch.hpp>

using tfork::ErrorKind;
using tfork::exit_code;
using tfork::tigris::bucket_name_problem;
using tfork::tigris::is_snapshot_version;
using tfork::tigris::snapshot_name_problem;

TEST_CASE("bucket names: valid", "[names]") {
  for (const char* name : {"abc", "training-data", "run-42-1", "a.b.c", "0ab", "my.bucket-9",
                           "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"}) {
    INFO(name);
    CHECK_FALSE(bucket_name_problem(name));
  }
}

TEST_CASE("bucket names: invalid", "[names]") {
  for (const char* name : {
           "ab",                                                                // too short
           "",                                                                  // empty
           "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl",  // 64
           "Training",                                                          // upper case
           "under_score",                                                       // '_'
           "with space",                                                        // ' '
           "-leading",                                                          // starts with '-'
           "trailing-",                                                         // ends with '-'
           ".dot",                                                              // starts with '.'
           "dot.",                                                              // ends with '.'
           "a..b",                                                              // '..'
           "192.168.5.4",                                                       // IP shape
           "10.0.0.1",                                                          // IP shape
           "xn--punycode",                                                      // xn-- prefix
           "bucket-s3alias",                                                    // -s3alias suffix
           "caf\xc3\xa9",                                                       // non-ASCII
       }) {
    INFO(name);
    CHECK(bucket_name_problem(name));
  }
  CHECK_THAT(*bucket_name_problem("192.168.5.4"), Catch::Contains("IP"));
  CHECK_THAT(*bucket_name_problem("xn--a"), Catch::Contains("xn--"));
  CHECK_THAT(*bucket_name_problem("b-s3alias"), Catch::Contains("-s3alias"));
  CHECK_THAT(*bucket_name_problem("a..b"), Catch::Contains(".."));
  // Looks like an IP only with exactly four numeric groups.
  CHECK_FALSE(bucket_name_problem("1.2.3"));
  CHECK_FALSE(bucket_name_problem("1.2.3.4a"));
}

TEST_CASE("snapshot names", "[names]") {
  CHECK_FALSE(snapshot_name_problem("baseline"));
  CHECK_FALSE(snapshot_name_problem("my first snapshot"));
  CHECK_FALSE(snapshot_name_problem("tfork run-42 = v1, (ok)"));
  CHECK(snapshot_name_problem(""));
  CHECK_THAT(*snapshot_name_problem("a;b"), Catch::Contains(";"));
  CHECK(snapshot_name_problem("line\nbreak"));
  CHECK(snapshot_name_problem("carriage\rreturn"));
  CHECK(snapshot_name_problem("tab\there"));
  CHECK(snapshot_name_problem(" leading"));
  CHECK(snapshot_name_problem("trailing "));
  CHECK(snapshot_name_problem("caf\xc3\xa9"));
  CHECK(snapshot_name_problem(std::string(256, 'a')));
  CHECK_FALSE(snapshot_name_problem(std::string(255, 'a')));
}

TEST_CASE("snapshot versions are decimal ns timestamps", "[names]") {
  CHECK(is_snapshot_version("1751631910196672425"));
  CHECK(is_snapshot_version("1"));
  CHECK_FALSE(is_snapshot_version(""));
  CHECK_FALSE(is_snapshot_version("17516319101966724250"));  // 20 digits
  CHECK_FALSE(is_snapshot_version("-1"));
  CHECK_FALSE(is_snapshot_version("1751631910196672425; name=x"));
  CHECK_FALSE(is_snapshot_version("0x10"));
  CHECK_FALSE(is_snapshot_version("12 "));
}

TEST_CASE("Table rendering", "[render]") {
  using tfork::output::Table;
  Table table({"VERSION", "NAME", "CREATED"});
  CHECK(table.empty());
  CHECK(table.render().empty());
  CHECK(table.render("no snapshots") == "no snapshots\n");
  table.row({"1751631910196672425", "my first snapshot", "2025-07-04T12:25:10.19667705Z"});
  table.row({"17", "", "x"});
  CHECK(table.render() ==
        "VERSION              NAME               CREATED\n"
        "1751631910196672425  my first snapshot  2025-07-04T12:25:10.19667705Z\n"
        "17                                      x\n");
  SECTION("missing cells are empty; trailing spaces are trimmed") {
    Table short_rows({"A", "B"});
    short_rows.row({"x"});
    CHECK(short_rows.render() == "A  B\nx\n");
  }
}

TEST_CASE("rfc3339 helpers", "[render][time]") {
  using tfork::output::normalise_rfc3339;
  using tfork::output::rfc3339_from_ns;
  CHECK(rfc3339_from_ns(0) == "1970-01-01T00:00:00Z");
  CHECK(rfc3339_from_ns(1751631910196672425) == "2025-07-04T12:25:10.196672425Z");
  CHECK(rfc3339_from_ns(1751631910190000000) == "2025-07-04T12:25:10.19Z");
  CHECK(rfc3339_from_ns(1751631910000000000) == "2025-07-04T12:25:10Z");

  CHECK(normalise_rfc3339("2025-07-04T12:25:10.19667705Z") == "2025-07-04T12:25:10.19667705Z");
  CHECK(normalise_rfc3339("2025-07-04T12:25:10Z") == "2025-07-04T12:25:10Z");
  CHECK(normalise_rfc3339("2025-07-04T12:25:10.000Z") == "2025-07-04T12:25:10Z");
  CHECK(normalise_rfc3339("2025-07-04T14:25:10.5+02:00") == "2025-07-04T12:25:10.5Z");
  CHECK(normalise_rfc3339("2025-07-04T00:25:10-01:30") == "2025-07-04T01:55:10Z");
  CHECK(normalise_rfc3339("2025-07-04T12:25:10.1234567891Z") == "2025-07-04T12:25:10.123456789Z");
  // Unparseable input is passed through untouched.
  CHECK(normalise_rfc3339("yesterday") == "yesterday");
  CHECK(normalise_rfc3339("2025-07-04 12:25:10") == "2025-07-04 12:25:10");
  CHECK(normalise_rfc3339("2025-07-04T12:25:10+0200") == "2025-07-04T12:25:10+0200");

  CHECK(tfork::output::json_or_null("").is_null());
  CHECK(tfork::output::json_or_null("x") == "x");
}

namespace {
tfork::http::Response response(int status, std::string body, tfork::http::Headers headers = {}) {
  return tfork::http::Response{status, std::move(headers), std::move(body), 1};
}
}  // namespace

TEST_CASE("error_from_response: S3 XML", "[errors]") {
  const auto error = tfork::tigris::error_from_response(
      response(404,
               "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchBucket</Code>"
               "<Message>The specified bucket does not exist</Message>"
               "<BucketName>nope</BucketName><RequestId>REQ1</RequestId></Error>"),
      "HeadBucket");
  CHECK(error.kind == ErrorKind::not_found);
  CHECK(error.code == "NoSuchBucket");
  CHECK(error.message == "HeadBucket failed: The specified bucket does not exist");
  CHECK(error.http_status == 404);
  CHECK(error.request_id == "REQ1");
}

TEST_CASE("error_from_response: the x-amz-request-id header wins", "[errors]") {
  const auto error = tfork::tigris::error_from_response(
      response(409,
               "<Error><Code>BucketAlreadyOwnedByYou</Code><RequestId>BODY</RequestId></Error>",
               {{"X-Amz-Request-Id", "HEADER"}}),
      "CreateBucket");
  CHECK(error.kind == ErrorKind::conflict);
  CHECK(error.request_id == "HEADER");
  CHECK(error.message == "CreateBucket failed: HTTP 409");
}

TEST_CASE("error_from_response: IAM ErrorResponse wrapper", "[errors]") {
  const auto error = tfork::tigris::error_from_response(
      response(403,
               "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidClientTokenId</Code>"
               "<Message>bad key</Message></Error><RequestId>IAMREQ</RequestId></ErrorResponse>"),
      "CreateAccessKey");
  CHECK(error.kind == ErrorKind::auth);
  CHECK(error.code == "InvalidClientTokenId");
  CHECK(error.request_id == "IAMREQ");
}

TEST_CASE("error_from_response: Tigris JSON", "[errors]") {
  auto error = tfork::tigris::error_from_response(
      response(409, R"({"Code":"BucketHasForks","Message":"delete the forks first"})"),
      "DeleteBucket");
  CHECK(error.kind == ErrorKind::conflict);
  CHECK(error.code == "BucketHasForks");
  CHECK(error.message == "DeleteBucket failed: delete the forks first");

  error = tfork::tigris::error_from_response(
      response(400, R"({"status":"error","message":"lower-case message"})"), "PatchBucket");
  CHECK(error.code == "BadRequest");
  CHECK(error.message == "PatchBucket failed: lower-case message");
  CHECK(error.kind == ErrorKind::other);
}

TEST_CASE("error_from_response: bare statuses (HEAD has no body)", "[errors]") {
  using tfork::tigris::error_from_response;
  auto error = error_from_response(response(404, ""), "HeadBucket");
  CHECK(error.kind == ErrorKind::not_found);
  CHECK(error.code == "NotFound");
  CHECK(error.message == "HeadBucket failed: HTTP 404");
  CHECK(error_from_response(response(403, ""), "HeadBucket").kind == ErrorKind::auth);
  CHECK(error_from_response(response(409, ""), "X").kind == ErrorKind::conflict);
  CHECK(error_from_response(response(503, ""), "X").kind == ErrorKind::throttled);
  CHECK(error_from_response(response(429, ""), "X").kind == ErrorKind::throttled);
  CHECK(error_from_response(response(500, ""), "X").kind == ErrorKind::other);
  CHECK(error_from_response(response(500, ""), "X").code == "Http500");
  // Garbage that is neither XML nor JSON still maps by status.
  CHECK(error_from_response(response(404, "<not xml"), "X").kind == ErrorKind::not_found);
}

TEST_CASE("error_from_response: NoSuchEntity in a plain body", "[errors]") {
  const auto error = tfork::tigris::error_from_response(
      response(400, "Error: NoSuchEntity: the access key tid_x does not exist"), "DeleteAccessKey");
  CHECK(error.code == "NoSuchEntity");
  CHECK(error.kind == ErrorKind::not_found);
}

TEST_CASE("error_from_transport and error_from_result", "[errors]") {
  using tfork::http::TransportError;
  const tfork::http::Result refused =
      std::unexpected(TransportError{TransportError::Kind::connect, "connection refused", 3});
  const auto error = tfork::tigris::error_from_result(refused, "ListBuckets");
  REQUIRE(error);
  CHECK(error->kind == ErrorKind::network);
  CHECK(error->code == "ConnectError");
  CHECK(error->http_status == 0);
  const tfork::http::Result cancelled =
      std::unexpected(TransportError{TransportError::Kind::cancelled, "interrupted", 1});
  CHECK(tfork::tigris::error_from_result(cancelled, "X")->kind == ErrorKind::interrupted);
  const tfork::http::Result ok = response(204, "");
  CHECK_FALSE(tfork::tigris::error_from_result(ok, "X"));
  CHECK(tfork::tigris::expect_success(ok, "X").status == 204);
  CHECK_THROWS_AS(tfork::tigris::expect_success(refused, "X"), tfork::TforkError);
}

TEST_CASE("exit codes (cli.md §6)", "[errors]") {
  CHECK(exit_code(ErrorKind::other) == 1);
  CHECK(exit_code(ErrorKind::auth) == 2);
  CHECK(exit_code(ErrorKind::not_found) == 3);
  CHECK(exit_code(ErrorKind::throttled) == 4);
  CHECK(exit_code(ErrorKind::network) == 5);
  CHECK(exit_code(ErrorKind::conflict) == 6);
  CHECK(exit_code(ErrorKind::partial) == 7);
  CHECK(exit_code(ErrorKind::usage) == 64);
  CHECK(exit_code(ErrorKind::interrupted) == 130);
  CHECK(tfork::kind_name(ErrorKind::not_found) == "not_found");
}

TEST_CASE("service error codes map to kinds", "[errors]") {
  using tfork::kind_for_service_error;
  for (const char* code : {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"})
    CHECK(kind_for_service_error(code, 403) == ErrorKind::auth);
  for (const char* code : {"NoSuchBucket", "NoSuchSnapshot", "NoSuchEntity", "NotFound"})
    CHECK(kind_for_service_error(code, 404) == ErrorKind::not_found);
  CHECK(kind_for_service_error("SlowDown", 503) == ErrorKind::throttled);
  // SlowDown means throttled whatever status carries it.
  CHECK(kind_for_service_error("SlowDown", 400) == ErrorKind::throttled);
  for (const char* code :
       {"BucketAlreadyExists", "BucketAlreadyOwnedByYou", "BucketNotEmpty", "BucketHasForks"})
    CHECK(kind_for_service_error(code, 409) == ErrorKind::conflict);
  CHECK(kind_for_service_error("InternalError", 500) == ErrorKind::other);
  CHECK(kind_for_service_error("", 401) == ErrorKind::auth);
  CHECK(kind_for_service_error("Whatever", 404) == ErrorKind::not_found);
}
