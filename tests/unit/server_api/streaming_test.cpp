// SPDX-License-Identifier: Apache-2.0
// Bodies received piece by piece (body.hpp) and the fault injection decorator, without sockets.
#include "tfork/crypto/hash.hpp"
#include "tfork/server/body.hpp"
#include "tfork/server/fault_injection.hpp"
#include "tfork/server/payload.hpp"

#include <fmt/format.h>

#include "support.hpp"
#include <fstream>
#include <iterator>

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::filesystem::path fresh_dir() {
  auto dir = std::filesystem::temp_directory_path() / ("tfork-body-test-" + crypto::random_hex(6));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("aws-chunked bodies decode the same whatever the read sizes", "[server][body]") {
  std::string content;
  for (int i = 0; i < 5000; ++i)
    content += static_cast<char>('a' + i % 26);
  const std::string wire = "1000\r\n" + content.substr(0, 4096) + "\r\n" + "388\r\n" +
                           content.substr(4096) + "\r\n0\r\n" +
                           "x-amz-checksum-crc32:" + checksum_of("crc32", content) + "\r\n\r\n";
  for (const std::size_t step : {std::size_t{1}, std::size_t{2}, std::size_t{7}, wire.size()}) {
    BodyPlan plan;
    plan.aws_chunked = true;
    plan.max_size = k_max_object_body;
    BodyReceiver receiver(plan);
    for (std::size_t at = 0; at < wire.size(); at += step) {
      REQUIRE(receiver.feed(std::string_view(wire).substr(at, step)).has_value());
    }
    const auto body = receiver.finish();
    REQUIRE(body.has_value());
    CHECK(body->data == content);
    REQUIRE(body->trailers.size() == 1);
    CHECK(body->trailers[0].first == "x-amz-checksum-crc32");
  }
  // Cut short: the body ends inside a chunk.
  BodyPlan plan;
  plan.aws_chunked = true;
  BodyReceiver cut(plan);
  REQUIRE(cut.feed(wire.substr(0, 100)).has_value());
  const auto incomplete = cut.finish();
  REQUIRE_FALSE(incomplete.has_value());
  CHECK(incomplete.error().code() == "IncompleteBody");
}

TEST_CASE("object bodies stream to a file with running digests", "[server][body]") {
  const auto dir = fresh_dir();
  std::string content(300000, '\0');
  for (std::size_t i = 0; i < content.size(); ++i)
    content[i] = static_cast<char>(i * 7919 % 251);
  std::filesystem::path spooled_path;
  {
    BodyPlan plan;
    plan.to_file = true;
    plan.max_size = k_max_object_body;
    plan.tmp_dir = dir;
    plan.sha256_hex = crypto::sha256_hex(content);
    plan.checksums = {"crc32", "crc32c", "crc64nvme", "sha1", "sha256"};
    BodyReceiver receiver(plan);
    for (std::size_t at = 0; at < content.size(); at += 65536) {
      REQUIRE(receiver.feed(std::string_view(content).substr(at, 65536)).has_value());
    }
    const auto body = receiver.finish();
    REQUIRE(body.has_value());
    REQUIRE(body->file.has_value());
    CHECK(body->data.empty());
    CHECK(body->size() == static_cast<std::int64_t>(content.size()));
    CHECK(read_file(body->file->path) == content);
    CHECK(body->file->sha256_hex == crypto::sha256_hex(content));
    CHECK(body->file->md5 == crypto::md5(content));
    for (const auto& [algorithm, value] : body->file->checksums) {
      INFO(algorithm);
      CHECK(value == checksum_of(algorithm, content));
    }
    spooled_path = body->file->path;
  }
  // Not adopted by the store: the receiver removed its file.
  CHECK_FALSE(std::filesystem::exists(spooled_path));

  // A claimed x-amz-content-sha256 that does not match fails, and leaves no file.
  {
    BodyPlan plan;
    plan.to_file = true;
    plan.tmp_dir = dir;
    plan.max_size = k_max_object_body;
    plan.sha256_hex = crypto::sha256_hex("something else");
    BodyReceiver receiver(plan);
    REQUIRE(receiver.feed(content).has_value());
    const auto body = receiver.finish();
    REQUIRE_FALSE(body.has_value());
    CHECK(body.error().code() == "XAmzContentSHA256Mismatch");
  }
  CHECK(std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST_CASE("bodies over their limit are refused while they stream", "[server][body]") {
  BodyPlan control;
  control.max_size = 1000;
  BodyReceiver small(control);
  REQUIRE(small.feed(std::string(600, 'x')).has_value());
  const auto over = small.feed(std::string(600, 'x'));
  REQUIRE_FALSE(over.has_value());
  CHECK(over.error().code() == "MaxMessageLengthExceeded");

  const auto dir = fresh_dir();
  BodyPlan object;
  object.to_file = true;
  object.tmp_dir = dir;
  object.max_size = 1000;
  BodyReceiver large(object);
  const auto too_large = large.feed(std::string(1001, 'x'));
  REQUIRE_FALSE(too_large.has_value());
  CHECK(too_large.error().code() == "EntityTooLarge");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a PutObject body past the database bound is streamed to a file and adopted",
          "[server][body]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  // Arrives in pieces: the first ones fit in memory, the one that crosses the bound moves
  // them to the spool file.
  std::string content;
  for (int i = 0; std::ssize(content) <= store::k_max_db_blob; ++i)
    content += fmt::format("line {} of a body that ends up in a file\n", i);
  auto head = server.sign({.method = "PUT", .target = "/bucket-a/streamed", .body = content});
  head.body.clear();
  auto admission = server.handler().admit(head);
  REQUIRE(admission.has_value());
  CHECK(admission->object_body);
  auto receiver = server.handler().receiver(head, *admission);
  for (std::size_t at = 0; at < content.size(); at += 1000)
    REQUIRE(receiver->feed(std::string_view(content).substr(at, 1000)).has_value());
  auto body = receiver->finish();
  REQUIRE(body.has_value());
  REQUIRE(body->file.has_value());
  CHECK(body->file->size == std::ssize(content));
  CHECK(body->file->sha256_hex == crypto::sha256_hex(content));
  const auto response = server.handler().settle(
      head, *admission, server.handler().run(head, *admission, std::move(*body)));
  INFO(response.body);
  CHECK(response.status == 200);
  CHECK(response.header("ETag") != nullptr);
  CHECK(*response.header("ETag") == "\"" + crypto::to_hex(crypto::md5(content)) + "\"");
  CHECK(Server::body_of(server.get("/bucket-a/streamed")) == content);
  receiver.reset();
  CHECK(std::filesystem::is_empty(server.store().tmp_dir()));
}

TEST_CASE("a small PutObject body stays in memory: no spool file is made", "[server][body]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const std::string content(static_cast<std::size_t>(store::k_max_db_blob), 's');
  auto head = server.sign({.method = "PUT", .target = "/bucket-a/small", .body = content});
  head.body.clear();
  auto admission = server.handler().admit(head);
  REQUIRE(admission.has_value());
  auto receiver = server.handler().receiver(head, *admission);
  REQUIRE(receiver->feed(content).has_value());
  CHECK(std::filesystem::is_empty(server.store().tmp_dir()));
  auto body = receiver->finish();
  REQUIRE(body.has_value());
  CHECK_FALSE(body->file.has_value());
  CHECK(body->data == content);
  CHECK(server.handler()
            .settle(head, *admission, server.handler().run(head, *admission, std::move(*body)))
            .status == 200);
  const auto got = server.get("/bucket-a/small");
  CHECK(got.blob_body.size() == 1);
  CHECK(got.blob_body.front().bytes != nullptr);
  CHECK(Server::body_of(got) == content);

  // A wrong x-amz-content-sha256 is still refused for a body kept in memory.
  auto lying = server.sign({.method = "PUT", .target = "/bucket-a/lying", .body = "truth"});
  lying.body.clear();
  auto lying_admission = server.handler().admit(lying);
  REQUIRE(lying_admission.has_value());
  auto lying_receiver = server.handler().receiver(lying, *lying_admission);
  REQUIRE(lying_receiver->feed("a lie").has_value());
  const auto refused = lying_receiver->finish();
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == "XAmzContentSHA256Mismatch");
}

TEST_CASE("a wrong signature is refused from the head, before any body", "[server][body]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  auto head = server.sign({.method = "PUT",
                           .target = "/bucket-a/x",
                           .body = "data",
                           .as = Credentials{k_root_key, "not-the-secret"}});
  head.body.clear();
  const auto admission = server.handler().admit(head);
  REQUIRE_FALSE(admission.has_value());
  CHECK(admission.error().status == 403);
}

TEST_CASE("fault injection decides per request, without sockets", "[server][faults]") {
  FaultInjector never(FaultOptions{std::chrono::milliseconds(0), 0.0}, 1);
  CHECK_FALSE(never.active());
  CHECK_FALSE(never.decide().failure.has_value());

  FaultInjector always(FaultOptions{std::chrono::milliseconds(250), 1.0}, 1);
  CHECK(always.active());
  const auto decision = always.decide();
  CHECK(decision.delay == std::chrono::milliseconds(250));
  REQUIRE(decision.failure.has_value());
  CHECK(decision.failure->status == 503);
  CHECK(xml_value(decision.failure->body, "Code") == "SlowDown");
  // S3's SlowDown names no time to come back; the client's own backoff and window decide.
  CHECK(decision.failure->header("Retry-After") == nullptr);

  FaultInjector half(FaultOptions{std::chrono::milliseconds(0), 0.5}, 42);
  int failures = 0;
  for (int i = 0; i < 1000; ++i)
    failures += half.decide().failure ? 1 : 0;
  CHECK(failures > 350);
  CHECK(failures < 650);
}

TEST_CASE("ranged GETs leave out the whole object's checksum headers", "[server][s3]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const std::string content = "0123456789abcdef";
  REQUIRE(server
              .put("/bucket-a/summed", content,
                   {{"x-amz-checksum-crc32", checksum_of("crc32", content)}})
              .status == 200);
  const auto whole = server.get("/bucket-a/summed", {{"x-amz-checksum-mode", "ENABLED"}});
  CHECK(whole.header("x-amz-checksum-crc32") != nullptr);
  const auto part =
      server.get("/bucket-a/summed", {{"x-amz-checksum-mode", "ENABLED"}, {"Range", "bytes=2-5"}});
  CHECK(part.status == 206);
  CHECK(part.header("x-amz-checksum-crc32") == nullptr);
  CHECK(Server::body_of(part) == "2345");
}

TEST_CASE("PutObject honours If-Match and If-None-Match", "[server][s3]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  CHECK(server.put("/bucket-a/c", "v0", {{"If-Match", "\"abc\""}}).status == 404);
  REQUIRE(server.put("/bucket-a/c", "v1", {{"If-None-Match", "*"}}).status == 200);
  CHECK(server.put("/bucket-a/c", "v2", {{"If-None-Match", "*"}}).status == 412);
  const auto etag = "\"" + crypto::to_hex(crypto::md5("v1")) + "\"";
  CHECK(server.put("/bucket-a/c", "v3", {{"If-Match", "\"0000\""}}).status == 412);
  CHECK(server.put("/bucket-a/c", "v4", {{"If-Match", etag}}).status == 200);
  CHECK(Server::body_of(server.get("/bucket-a/c")) == "v4");
}

TEST_CASE("stored headers come back; aws-chunked is not stored", "[server][s3]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server
              .put("/bucket-a/h", "body",
                   {{"Cache-Control", "max-age=60"},
                    {"Expires", "Thu, 01 Dec 2094 16:00:00 GMT"},
                    {"Content-Encoding", "gzip"},
                    {"Content-Disposition", "attachment"}})
              .status == 200);
  const auto got = server.head("/bucket-a/h");
  CHECK(*got.header("Cache-Control") == "max-age=60");
  CHECK(*got.header("Expires") == "Thu, 01 Dec 2094 16:00:00 GMT");
  CHECK(*got.header("Content-Encoding") == "gzip");
  CHECK(*got.header("Content-Disposition") == "attachment");
  CHECK(got.header("x-amz-meta-:cache-control") == nullptr);
}

TEST_CASE("invalid UTF-8 metadata is 400 and leaves no blob", "[server][s3]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto bad = server.put("/bucket-a/u", "orphan?", {{"x-amz-meta-note", "caf\xe9"}});
  CHECK(bad.status == 400);
  CHECK_FALSE(server.store().get_object("bucket-a", "u").has_value());
  const auto blobs = server.store().tmp_dir().parent_path() / "blobs";
  std::size_t files = 0;
  if (std::filesystem::exists(blobs)) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(blobs))
      files += entry.is_regular_file() ? 1 : 0;
  }
  CHECK(files == 0);
  CHECK(server.put("/bucket-a/u", "ok", {{"x-amz-meta-note", "caf\xc3\xa9"}}).status == 200);
}

TEST_CASE("ListObjectVersions answers each visible object", "[server][s3]") {
  Server server;
  REQUIRE(server.put("/plain-bucket").status == 200);
  REQUIRE(server.put("/plain-bucket/a", "1").status == 200);
  REQUIRE(server.put("/plain-bucket/b", "2").status == 200);
  const auto plain = server.get("/plain-bucket?versions");
  INFO(plain.body);
  CHECK(plain.status == 200);
  CHECK(contains(plain.body, "<ListVersionsResult"));
  CHECK(contains(plain.body, "<Key>a</Key><VersionId>null</VersionId><IsLatest>true</IsLatest>"));

  REQUIRE(server.put("/snap-bucket", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/snap-bucket/k", "versioned").status == 200);
  const auto listed = server.get("/snap-bucket?versions&max-keys=1");
  const auto version = xml_value(listed.body, "VersionId");
  REQUIRE_FALSE(version.empty());
  CHECK(version != "null");
  CHECK(Server::body_of(server.get("/snap-bucket/k?versionId=" + version)) == "versioned");
}
