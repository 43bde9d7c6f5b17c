// SPDX-License-Identifier: Apache-2.0
// fork diff | merge | rebase and bucket set against the recording transport: the exact
// requests each sends, in order, and what they refuse before sending anything.
#include "tfork/commands/bucket.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/tigris/fork_ops.hpp"
#include "tfork/workflow/fork_diff.hpp"
#include "tfork/workflow/send_once.hpp"

#include <catch2/catch.hpp>

#include "command_harness.hpp"
#include <algorithm>
#include <atomic>
#include <sstream>

using namespace tfork;
using namespace tfork::testing::commands;
using tfork::testing::FakeTransport;
namespace fork_cmd = tfork::commands::fork;

namespace {

http::Response fork_head(std::string_view source) {
  return ok(200, {{"X-Tigris-Enable-Snapshot", "true"},
                  {"X-Tigris-Fork-Source-Bucket", std::string(source)},
                  {"X-Tigris-Fork-Source-Bucket-Snapshot", "1751631910196672425"}});
}

// A ListObjectsV2 page (encoding-type=url) of `keys` ("key:size:etag").
http::Response listing(const std::vector<std::string>& entries, const std::string& next) {
  std::string body = "<ListBucketResult><EncodingType>url</EncodingType>";
  for (const auto& entry : entries) {
    const auto a = entry.find(':');
    const auto b = entry.find(':', a + 1);
    body += "<Contents><Key>" + entry.substr(0, a) + "</Key><Size>" +
            entry.substr(a + 1, b - a - 1) + "</Size><ETag>&quot;" + entry.substr(b + 1) +
            "&quot;</ETag></Contents>";
  }
  body += next.empty() ? "<IsTruncated>false</IsTruncated>"
                       : "<IsTruncated>true</IsTruncated><NextContinuationToken>" + next +
                             "</NextContinuationToken>";
  body += "</ListBucketResult>";
  return ok(200, {{"Content-Type", "application/xml"}}, body);
}

std::string query_param(const http::Request& request, const std::string& name) {
  const auto query = "&" + query_of(request) + "&";
  const auto start = query.find("&" + name + "=");
  if (start == std::string::npos) return "<absent>";
  const auto value = start + name.size() + 2;
  return query.substr(value, query.find('&', value) - value);
}

}  // namespace

TEST_CASE("fork merge: HeadBucket, the before-merge snapshot, then the merge", "[fork][merge]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    if (request.method == "HEAD") return fork_head("data");
    if (header_of(request, "X-Tigris-Snapshot") != "<absent>")
      return ok(200, {{"X-Tigris-Snapshot-Version", "1000000000000000001"}});
    if (header_of(request, "X-Tigris-Merge-Source-Bucket") != "<absent>")
      return ok(200, {{"X-Tigris-Snapshot-Version", "1000000000000000002"}});
    return s3_error(400, "Unexpected");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  fork_cmd::MergeOptions options{"run-3", "", false, "refuse"};
  fork_cmd::check_merge_options(options);
  const auto parent = fork_cmd::merge_parent(client, options);
  CHECK(parent == "data");
  const auto result = fork_cmd::run_merge(client, options, parent);
  REQUIRE(transport.requests.size() == 3);
  CHECK(transport.requests[0].method == "HEAD");
  CHECK(path_of(transport.requests[0]) == "/run-3");
  CHECK(transport.requests[1].method == "PUT");
  CHECK(path_of(transport.requests[1]) == "/data");
  CHECK(header_of(transport.requests[1], "X-Tigris-Snapshot") == "true; name=before-merge run-3");
  CHECK(signed_headers(transport.requests[1]).contains("x-tigris-snapshot"));
  CHECK(transport.requests[2].method == "PUT");
  CHECK(path_of(transport.requests[2]) == "/data");
  CHECK(header_of(transport.requests[2], "X-Tigris-Merge-Source-Bucket") == "run-3");
  CHECK(signed_headers(transport.requests[2]).contains("x-tigris-merge-source-bucket"));
  CHECK(transport.requests[2].body.empty());
  CHECK(fork_cmd::to_json(result).dump() ==
        R"({"fork":"run-3","into":"data","before_snapshot":"1000000000000000001",)"
        R"("snapshot":"1000000000000000002","changes":{"added":0,"modified":0,"deleted":0},)"
        R"("replaced":0})");

  SECTION("--no-snapshot sends the merge alone") {
    transport.requests.clear();
    const auto bare = fork_cmd::run_merge(client, {"run-3", "data", true, "refuse"}, "data");
    REQUIRE(transport.requests.size() == 1);
    CHECK(header_of(transport.requests[0], "X-Tigris-Merge-Source-Bucket") == "run-3");
    CHECK(fork_cmd::to_json(bare)["before_snapshot"].is_null());
  }
}

TEST_CASE("fork merge refuses before merging: not a direct fork, not a fork, bad names",
          "[fork][merge]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    if (path_of(request) == "/run-3") return fork_head("data");
    if (path_of(request) == "/plain") return ok(200, {{"X-Tigris-Enable-Snapshot", "false"}});
    return s3_error(404, "NoSuchBucket");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  CHECK(failure_kind([&] {
          fork_cmd::merge_parent(client, {"run-3", "other", false});
        }) == ErrorKind::usage);
  CHECK(failure_kind([&] {
          fork_cmd::merge_parent(client, {"plain", "", false});
        }) == ErrorKind::usage);
  CHECK(failure_kind([&] {
          fork_cmd::merge_parent(client, {"gone", "", false});
        }) == ErrorKind::not_found);
  for (const auto& request : transport.requests)
    CHECK(request.method == "HEAD");  // nothing but HeadBucket was sent
  const auto sent = transport.requests.size();
  CHECK(failure_kind([] {
          fork_cmd::check_merge_options({"Bad_Name", "", false});
        }) == ErrorKind::usage);
  CHECK(failure_kind([] {
          fork_cmd::check_merge_options({"run-3", "run-3", false});
        }) == ErrorKind::usage);
  CHECK(transport.requests.size() == sent);
}

TEST_CASE(
    "fork merge --prefix: one HeadBucket, the prefix's listings, the snapshot, then "
    "CopyObject and DeleteObject per key",
    "[fork][merge][promote]") {
  // Under p/: the fork modified p/a, added "p/n x" and deleted p/d; p/s it changed as the
  // parent did (already promoted: skipped).
  FakeTransport transport([](const http::Request& request) -> http::Result {
    if (request.method == "HEAD") return fork_head("data");
    if (request.method == "GET" && path_of(request) == "/")  // no earlier before-merge snapshot
      return ok(200, {}, "<ListAllMyBucketsResult><Buckets></Buckets></ListAllMyBucketsResult>");
    if (request.method == "GET" && path_of(request) == "/run-3")
      return listing({"p/a:2:a-fork", "p/n%20x:1:n", "p/s:1:s-new"}, "");
    if (request.method == "GET" && header_of(request, "X-Tigris-Snapshot-Version") != "<absent>")
      return listing({"p/a:2:a", "p/d:1:d", "p/s:1:s"}, "");
    if (request.method == "GET") return listing({"p/a:2:a", "p/d:1:d", "p/s:1:s-new"}, "");
    if (header_of(request, "X-Tigris-Snapshot") != "<absent>")
      return ok(200, {{"X-Tigris-Snapshot-Version", "1900000000000000001"}});
    if (request.method == "PUT")
      return ok(200, {}, "<CopyObjectResult><ETag>&quot;e&quot;</ETag></CopyObjectResult>");
    if (request.method == "DELETE") return ok(204, {});
    return s3_error(400, "Unexpected");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  fork_cmd::MergeOptions options{"run-3", "", false, "refuse", {"p/", "p/deep/"}};
  fork_cmd::check_merge_options(options);
  const auto target = fork_cmd::merge_target(client, options);
  auto plan = fork_cmd::plan_merge(client, target, options.prefixes, false);
  CHECK(plan.prefixes == std::vector<std::string>{"p/"});  // p/deep/ is under p/
  CHECK(plan.skipped == 1);
  REQUIRE(plan.work.size() == 3);
  const auto result =
      fork_cmd::run_promotion(client, options, target, std::move(plan), workflow::BatchSettings{});
  // HEAD once; three listings, each with prefix p/; the snapshot list (a key is already in
  // the parent: an interrupted run may have left its snapshot); the snapshot; three object
  // requests.
  REQUIRE(transport.requests.size() == 9);
  CHECK(std::ranges::count_if(transport.requests,
                              [](const auto& r) { return r.method == "HEAD"; }) == 1);
  for (std::size_t i = 1; i < 4; ++i)
    CHECK(query_param(transport.requests[i], "prefix") == "p%2F");
  CHECK(path_of(transport.requests[4]) == "/");
  CHECK(header_of(transport.requests[5], "X-Tigris-Snapshot") == "true; name=before-merge run-3");
  std::vector<std::string> sent;
  for (std::size_t i = 6; i < 9; ++i)
    sent.push_back(transport.requests[i].method + " " + path_of(transport.requests[i]) + " " +
                   header_of(transport.requests[i], "x-amz-copy-source"));
  std::ranges::sort(sent);
  CHECK(sent == std::vector<std::string>{"DELETE /data/p/d <absent>", "PUT /data/p/a /run-3/p/a",
                                         "PUT /data/p/n%20x /run-3/p/n%20x"});
  for (std::size_t i = 6; i < 9; ++i)
    if (transport.requests[i].method == "PUT")
      CHECK(signed_headers(transport.requests[i]).contains("x-amz-copy-source"));
  const auto doc = fork_cmd::to_json(result);
  CHECK(doc["before_snapshot"] == "1900000000000000001");
  CHECK(doc["copied"] == 2);
  CHECK(doc["deleted"] == 1);
  CHECK(doc["skipped"] == 1);
  CHECK(doc["failed"].empty());
}

TEST_CASE("fork merge --prefix refuses bad prefixes before sending", "[fork][merge][promote]") {
  for (const auto* bad : {"", "p/\x01", "a\nb"})
    CHECK(failure_kind([&] {
            fork_cmd::check_merge_options({"run-3", "", false, "refuse", {"ok/", bad}});
          }) == ErrorKind::usage);
}

TEST_CASE("fork rebase: PUT /<fork> with X-Tigris-Rebase, the new version", "[fork][rebase]") {
  FakeTransport transport([](const http::Request& request) -> http::Result {
    if (request.method == "HEAD") return fork_head("data");
    return ok(200, {{"X-Tigris-Snapshot-Version", "1000000000000000003"}});
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto head = fork_cmd::rebase_head(client, "run-1");
  const auto result = fork_cmd::run_rebase(client, "run-1", head);
  REQUIRE(transport.requests.size() == 2);
  CHECK(transport.requests[1].method == "PUT");
  CHECK(path_of(transport.requests[1]) == "/run-1");
  CHECK(header_of(transport.requests[1], "X-Tigris-Rebase") == "true");
  CHECK(signed_headers(transport.requests[1]).contains("x-tigris-rebase"));
  CHECK(fork_cmd::to_json(result).dump() == R"({"fork":"run-1","snapshot":"1000000000000000003"})");
}

TEST_CASE(
    "fork rebase and merge are never sent twice blindly; an answer without a version is "
    "not a failure",
    "[fork][rebase][merge][wire]") {
  std::string base = "1000000000000000001";
  int puts = 0;
  bool timeout = true;  // the PUT happens, but its answer never comes
  bool version_header = true;
  FakeTransport transport([&](const http::Request& request) -> http::Result {
    if (request.method == "HEAD")
      return ok(200, {{"X-Tigris-Enable-Snapshot", "true"},
                      {"X-Tigris-Fork-Source-Bucket", "data"},
                      {"X-Tigris-Fork-Source-Bucket-Snapshot", base}});
    ++puts;
    base = "1000000000000000009";
    if (timeout)
      return std::unexpected(
          http::TransportError{http::TransportError::Kind::timeout, "request timed out", 1});
    if (!version_header) return ok(200);
    return ok(200, {{"X-Tigris-Snapshot-Version", base}});
  });
  tigris::Client client(settings(), transport, fixed_clock());
  CHECK_FALSE(tigris::take_snapshot("data", "n").resend_if_unanswered);
  CHECK_FALSE(tigris::merge_fork("run-1", "data").resend_if_unanswered);
  CHECK_FALSE(tigris::rebase_fork("run-1").resend_if_unanswered);
  CHECK(tigris::head_bucket("data").resend_if_unanswered);

  SECTION("a rebase that timed out but moved the base: not sent again, the base read back") {
    const auto result =
        fork_cmd::run_rebase(client, "run-1", fork_cmd::rebase_head(client, "run-1"));
    CHECK(puts == 1);
    CHECK(result.snapshot == "1000000000000000009");
  }
  SECTION("a rebase that timed out and did not happen: sent once more") {
    const auto head = fork_cmd::rebase_head(client, "run-1");
    base = "1000000000000000001";
    FakeTransport lost([&](const http::Request& request) -> http::Result {
      if (request.method == "HEAD")
        return ok(200, {{"X-Tigris-Fork-Source-Bucket", "data"},
                        {"X-Tigris-Fork-Source-Bucket-Snapshot", base}});
      if (++puts == 1)
        return std::unexpected(
            http::TransportError{http::TransportError::Kind::other, "connection reset", 1});
      return ok(200, {{"X-Tigris-Snapshot-Version", "1000000000000000005"}});
    });
    tigris::Client lost_client(settings(), lost, fixed_clock());
    const auto result = fork_cmd::run_rebase(lost_client, "run-1", head);
    CHECK(puts == 2);
    CHECK(result.snapshot == "1000000000000000005");
  }
  SECTION("a refused connection is not 'may have happened'") {
    CHECK_FALSE(workflow::may_have_happened(
        std::unexpected(http::TransportError{http::TransportError::Kind::connect, "refused", 1})));
    CHECK(workflow::may_have_happened(http::Response{502, {}, {}, 1}));
    CHECK_FALSE(workflow::may_have_happened(http::Response{503, {}, {}, 1}));
  }
  SECTION("an answer without X-Tigris-Snapshot-Version: done, version null") {
    timeout = false;
    version_header = false;
    const auto result =
        fork_cmd::run_rebase(client, "run-1", fork_cmd::rebase_head(client, "run-1"));
    CHECK(puts == 1);
    CHECK(fork_cmd::to_json(result).dump() == R"({"fork":"run-1","snapshot":null})");
  }
}

TEST_CASE("fork diff merges two paged listings, the source read at the fork's snapshot",
          "[fork][diff]") {
  // The fork: a b(modified) d(new) | e(new) — two pages; the source at the snapshot:
  // a b c(deleted) | z(deleted) — two pages.
  FakeTransport transport([](const http::Request& request) -> http::Result {
    if (request.method == "HEAD") return fork_head("data");
    const bool fork = path_of(request) == "/run-1";
    const bool second = query_param(request, "continuation-token") != "<absent>";
    if (fork)
      return second ? listing({"e:5:e5"}, "")
                    : listing({"a:1:a1", "b:2:b-new", "d:4:d4"}, "fork-page-2");
    return second ? listing({"z:26:z26"}, "")
                  : listing({"a:1:a1", "b:2:b-old", "c:3:c3"}, "source-page-2");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  const auto target = workflow::diff_target(client, "run-1");
  CHECK(target.source == "data");
  std::vector<std::string> seen;
  const auto stat = workflow::stream_diff(client, target, "", [&](const workflow::Change& c) {
    seen.push_back(std::string(workflow::change_name(c.kind)) + " " + c.key + " " +
                   std::to_string(c.size) + " " + c.etag);
  });
  CHECK(seen == std::vector<std::string>{"modified b 2 b-new", "deleted c 3 c3", "added d 4 d4",
                                         "added e 5 e5", "deleted z 26 z26"});
  CHECK(stat.added == 2);
  CHECK(stat.modified == 1);
  CHECK(stat.deleted == 2);
  CHECK(stat.bytes == 11);
  // HEAD, then both first pages, then both second pages.
  REQUIRE(transport.requests.size() == 5);
  for (std::size_t i = 1; i < 5; ++i) {
    const auto& request = transport.requests[i];
    CHECK(query_param(request, "list-type") == "2");
    CHECK(query_param(request, "encoding-type") == "url");
    const bool source = path_of(request) == "/data";
    CHECK(header_of(request, "X-Tigris-Snapshot-Version") ==
          (source ? "1751631910196672425" : "<absent>"));
    if (source) CHECK(signed_headers(request).contains("x-tigris-snapshot-version"));
  }
  CHECK(query_param(transport.requests[3], "continuation-token") != "<absent>");

  SECTION("the JSON document, streamed") {
    std::ostringstream out;
    fork_cmd::write_diff(client, "run-1", "", false, true, out);
    const auto doc = nlohmann::ordered_json::parse(out.str());
    CHECK(doc["fork"] == "run-1");
    CHECK(doc["source"] == "data");
    CHECK(doc["snapshot"] == "1751631910196672425");
    CHECK(doc["changes"].size() == 5);
    CHECK(doc["changes"][0].dump() == R"({"key":"b","status":"modified","size":2,"etag":"b-new"})");
    CHECK(doc["stat"].dump() == R"({"added":2,"modified":1,"deleted":2,"bytes":11})");
  }
  SECTION("--prefix goes to both listings") {
    transport.requests.clear();
    workflow::stream_diff(client, target, "logs/", {});
    for (std::size_t i = 0; i < transport.requests.size(); ++i)
      CHECK(query_param(transport.requests[i], "prefix") == "logs%2F");
  }
}

TEST_CASE("fork diff of a bucket that is not a fork is a conflict (a request was sent)",
          "[fork][diff]") {
  FakeTransport transport([](const http::Request&) -> http::Result {
    return ok(200, {{"X-Tigris-Enable-Snapshot", "true"}});
  });
  tigris::Client client(settings(), transport, fixed_clock());
  CHECK(failure_kind([&] { workflow::diff_target(client, "data"); }) == ErrorKind::conflict);
}

TEST_CASE("fork diff of a missing bucket says it does not exist", "[fork][diff]") {
  FakeTransport transport([](const http::Request&) -> http::Result { return ok(404); });
  tigris::Client client(settings(), transport, fixed_clock());
  try {
    workflow::diff_target(client, "gone");
    FAIL("diff_target of a missing bucket returned");
  } catch (const TforkError& e) {
    CHECK(e.error().kind == ErrorKind::not_found);
    CHECK(e.error().message == "bucket gone does not exist");
  }
}

TEST_CASE("bucket set --snapshots: PATCH {\"type\":N}; off refused for forks and parents",
          "[bucket][set]") {
  std::string head_kind = "plain";
  bool enabled = false;
  FakeTransport transport([&](const http::Request& request) -> http::Result {
    if (request.method == "HEAD") {
      if (head_kind == "fork") return fork_head("data");
      if (head_kind == "parent")
        return ok(200, {{"X-Tigris-Enable-Snapshot", "true"}, {"X-Tigris-Is-Fork-Parent", "true"}});
      return ok(200, {{"X-Tigris-Enable-Snapshot", enabled ? "true" : "false"}});
    }
    enabled = request.body == R"({"type":1})";
    return ok(200, {{"Content-Type", "application/json"}}, R"({"status":"success"})");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  tfork::commands::bucket::run_bucket_set(client, "data", true, {});
  REQUIRE(transport.requests.size() == 2);
  CHECK(transport.requests[0].method == "PATCH");
  CHECK(path_of(transport.requests[0]) == "/data");
  CHECK(transport.requests[0].body == R"({"type":1})");
  CHECK(header_of(transport.requests[0], "Content-Type") == "application/json");
  CHECK(transport.requests[1].method == "HEAD");  // the change shows

  transport.requests.clear();
  tfork::commands::bucket::run_bucket_set(client, "data", false, {});
  REQUIRE(transport.requests.size() == 3);
  CHECK(transport.requests[0].method == "HEAD");
  CHECK(transport.requests[1].body == R"({"type":0})");
  CHECK(transport.requests[2].method == "HEAD");

  for (const auto* kind : {"fork", "parent"}) {
    head_kind = kind;
    transport.requests.clear();
    CHECK(failure_kind([&] {
            tfork::commands::bucket::run_bucket_set(client, "data", false, {});
          }) == ErrorKind::conflict);
    REQUIRE(transport.requests.size() == 1);  // the HeadBucket only
  }
}

TEST_CASE("bucket set waits until HeadBucket shows the change, bounded and interruptible",
          "[bucket][set]") {
  int heads = 0;
  int shows_after = 3;  // the HEAD from which the change shows
  FakeTransport transport([&](const http::Request& request) -> http::Result {
    if (request.method != "HEAD") return ok(200, {}, R"({"status":"success"})");
    ++heads;
    return ok(200, {{"X-Tigris-Enable-Snapshot", heads >= shows_after ? "true" : "false"}});
  });
  tigris::Client client(settings(), transport, fixed_clock());

  SECTION("a delayed change: looked at until it shows") {
    const auto result = tfork::commands::bucket::run_bucket_set(client, "data", true, {});
    CHECK(result.snapshots_enabled);
    CHECK(heads == 3);
  }
  SECTION("a change that never shows: a failure that says so once the bound is spent") {
    shows_after = 1'000'000;
    try {
      tfork::commands::bucket::run_bucket_set(client, "data", true, {},
                                              std::chrono::milliseconds(300));
      FAIL("no error");
    } catch (const TforkError& error) {
      CHECK(error.error().code == "SettingNotVisible");
      CHECK(error.error().message.find("still shows snapshots off") != std::string::npos);
    }
    CHECK(heads >= 2);
  }
  SECTION("interrupted while waiting: the interruption, at once") {
    shows_after = 1'000'000;
    std::atomic<bool> stop{false};
    FakeTransport stopping([&](const http::Request& request) -> http::Result {
      if (request.method != "HEAD") return ok(200, {}, R"({"status":"success"})");
      stop = true;  // Ctrl-C arrives while the change is not yet visible
      return ok(200, {{"X-Tigris-Enable-Snapshot", "false"}});
    });
    tigris::Client stopping_client(settings(), stopping, fixed_clock());
    CHECK(failure_kind([&] {
            tfork::commands::bucket::run_bucket_set(stopping_client, "data", true,
                                                    {.interrupted = &stop});
          }) == ErrorKind::interrupted);
  }
}

TEST_CASE("a settings answer with status error is a failure", "[bucket][set]") {
  FakeTransport transport([](const http::Request&) -> http::Result {
    return ok(200, {}, R"({"status":"error","message":"lifecycle rules are set"})");
  });
  tigris::Client client(settings(), transport, fixed_clock());
  try {
    tfork::commands::bucket::run_bucket_set(client, "data", true, {});
    FAIL("no error");
  } catch (const TforkError& error) {
    CHECK(error.error().message.find("lifecycle rules are set") != std::string::npos);
  }
}
