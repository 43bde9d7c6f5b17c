// SPDX-License-Identifier: Apache-2.0
// Object operations and listings through the pure handler (server-design §5.4–5.6).
#include "tfork/server/listing.hpp"
#include "tfork/server/object_support.hpp"
#include "tfork/server/payload.hpp"

#include "support.hpp"
#include <future>
#include <thread>
#include <tuple>
#include <utility>
#include <variant>

using namespace tfork;
using namespace tfork::server;
using namespace tfork::server::test;

TEST_CASE("PutObject stores metadata; GetObject and HeadObject return it", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto put = server.put("/bucket-a/dir/file.txt", "0123456789",
                              {{"Content-Type", "text/plain"}, {"x-amz-meta-Owner", "agent-7"}});
  REQUIRE(put.status == 200);
  const auto etag = "\"" + crypto::to_hex(crypto::md5("0123456789")) + "\"";
  CHECK(*put.header("ETag") == etag);

  const auto got = server.get("/bucket-a/dir/file.txt");
  CHECK(got.status == 200);
  CHECK(*got.header("Content-Type") == "text/plain");
  CHECK(*got.header("x-amz-meta-owner") == "agent-7");
  CHECK(*got.header("ETag") == etag);
  CHECK(got.header("Last-Modified")->ends_with(" GMT"));
  CHECK(Server::body_of(got) == "0123456789");

  const auto head = server.head("/bucket-a/dir/file.txt");
  CHECK(head.status == 200);
  CHECK(head.body.empty());
  CHECK(head.blob_body.empty());
  CHECK(head.body_length() == 10);

  const auto missing = server.get("/bucket-a/nope");
  CHECK(missing.status == 404);
  CHECK(xml_value(missing.body, "Code") == "NoSuchKey");
  CHECK(xml_value(missing.body, "Key") == "nope");
  const auto missing_head = server.head("/bucket-a/nope");
  CHECK(missing_head.status == 404);
  CHECK(missing_head.body.empty());

  CHECK(server.get("/no-such-bucket/k").status == 404);
  CHECK(server.del("/bucket-a/dir/file.txt").status == 204);
  CHECK(server.del("/bucket-a/dir/file.txt").status == 204);
  CHECK(server.get("/bucket-a/dir/file.txt").status == 404);
}

// The road of a small PutObject, as the socket layer takes it: run() prepares the write (a
// request refused before it is answered at once), and commit() hands the response to the
// store's committer thread after the commit (or refusal), with the same error document and
// headers as any other response.
TEST_CASE("a PutObject's pending write is answered by the store's committer after its commit",
          "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto reader = server.create_key("reader", R"([{"bucket":"bucket-a","role":"ReadOnly"}])");
  const auto caller = std::this_thread::get_id();
  struct Answer {
    std::optional<Response> response;
    std::thread::id thread;
  };
  const auto start = [&](const Request& request) {
    auto& handler = server.handler();
    auto admission = handler.admit(request);
    REQUIRE(admission);
    auto receiver = handler.receiver(request, *admission);
    REQUIRE(receiver->feed(request.body));
    auto body = receiver->finish();
    REQUIRE(body);
    REQUIRE_FALSE(handler.may_wait(request, *admission, *body));
    auto reply = handler.run(request, *admission, std::move(*body));
    if (auto* response = std::get_if<Response>(&reply))
      return Answer{std::move(*response), std::this_thread::get_id()};
    std::promise<Answer> answered;
    auto answer = answered.get_future();
    handler.commit(request, *admission, std::get<PendingWrite>(std::move(reply)),
                   [&](Response response) {
                     answered.set_value(Answer{std::move(response), std::this_thread::get_id()});
                   });
    return answer.get();
  };

  const auto denied = start(server.sign({.method = "PUT", .target = "/bucket-a/k", .as = reader}));
  CHECK(denied.thread == caller);
  CHECK(denied.response->status == 403);
  CHECK(xml_value(denied.response->body, "Code") == "AccessDenied");

  const auto missing = start(server.sign({.method = "PUT", .target = "/bucket-b/k", .body = "x"}));
  CHECK(missing.thread != caller);
  CHECK(missing.response->status == 404);
  CHECK(xml_value(missing.response->body, "Code") == "NoSuchBucket");
  CHECK(xml_value(missing.response->body, "BucketName") == "bucket-b");
  REQUIRE(missing.response->header("x-amz-request-id"));
  CHECK(xml_value(missing.response->body, "RequestId") ==
        *missing.response->header("x-amz-request-id"));

  const auto sha256 = crypto::base64_encode(crypto::sha256("hello"));
  const auto stored = start(server.sign({.method = "PUT",
                                         .target = "/bucket-a/k",
                                         .body = "hello",
                                         .headers = {{"x-amz-checksum-sha256", sha256}}}));
  CHECK(stored.thread != caller);
  CHECK(stored.response->status == 200);
  CHECK(*stored.response->header("ETag") == "\"" + crypto::to_hex(crypto::md5("hello")) + "\"");
  CHECK(*stored.response->header("x-amz-checksum-sha256") == sha256);
  CHECK(stored.response->header("x-amz-request-id"));
  CHECK(Server::body_of(server.get("/bucket-a/k")) == "hello");

  // Reads never wait for the store; parts and the other writes may (a writer thread's work).
  for (const auto& [method, target, waits] :
       {std::tuple{"PUT", "/bucket-a/k?partNumber=1&uploadId=u", true},
        std::tuple{"DELETE", "/bucket-a/k", true}, std::tuple{"POST", "/bucket-a?delete", true},
        std::tuple{"GET", "/bucket-a/k", false}, std::tuple{"HEAD", "/bucket-a/k", false}}) {
    const auto request = server.sign({.method = method, .target = target});
    auto admission = server.handler().admit(request);
    REQUIRE(admission);
    CHECK(server.handler().may_wait(request, *admission, DecodedBody{}) == waits);
  }
}

TEST_CASE("Range requests follow S3's rules", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-a/r", "0123456789").status == 200);

  const auto partial = server.get("/bucket-a/r", {{"Range", "bytes=2-4"}});
  CHECK(partial.status == 206);
  CHECK(*partial.header("Content-Range") == "bytes 2-4/10");
  CHECK(Server::body_of(partial) == "234");
  CHECK(Server::body_of(server.get("/bucket-a/r", {{"Range", "bytes=7-"}})) == "789");
  CHECK(Server::body_of(server.get("/bucket-a/r", {{"Range", "bytes=-3"}})) == "789");
  CHECK(Server::body_of(server.get("/bucket-a/r", {{"Range", "bytes=8-100"}})) == "89");

  const auto unsatisfiable = server.get("/bucket-a/r", {{"Range", "bytes=10-"}});
  CHECK(unsatisfiable.status == 416);
  CHECK(xml_value(unsatisfiable.body, "Code") == "InvalidRange");
  CHECK(*unsatisfiable.header("Content-Range") == "bytes */10");

  const auto several = server.get("/bucket-a/r", {{"Range", "bytes=0-1,3-4"}});
  CHECK(several.status == 200);
  CHECK(Server::body_of(several) == "0123456789");
}

TEST_CASE("parse_range", "[server][objects]") {
  CHECK_FALSE(parse_range("items=0-1", 10).has_value());
  CHECK_FALSE(parse_range("bytes=5-1", 10).has_value());
  CHECK(parse_range("bytes=0-", 0)->unsatisfiable);
  CHECK(parse_range("bytes=-0", 10)->unsatisfiable);
  const auto suffix = parse_range("bytes=-20", 10);
  CHECK((suffix->start == 0 && suffix->length == 10));
}

// A header sent more than once is one value to S3: Content-Encoding's codings joined with ", "
// (aws-chunked, which only framed the upload, dropped), a metadata header's values with ",".
TEST_CASE("a header sent twice is stored with its values joined", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server
              .put("/bucket-a/twice", "x",
                   {{"Content-Encoding", "deflate"},
                    {"Content-Encoding", "gzip"},
                    {"x-amz-meta-tag", "one"},
                    {"X-Amz-Meta-Tag", "two"}})
              .status == 200);
  const auto got = server.head("/bucket-a/twice");
  REQUIRE(got.header("Content-Encoding"));
  CHECK(*got.header("Content-Encoding") == "deflate, gzip");
  REQUIRE(got.header("x-amz-meta-tag"));
  CHECK(*got.header("x-amz-meta-tag") == "one,two");
  CHECK(std::ranges::count_if(
            got.headers, [](const Header& h) { return iequals(h.first, "x-amz-meta-tag"); }) == 1);

  REQUIRE(server.put("/bucket-a/framed", "x", {{"Content-Encoding", "aws-chunked,gzip"}}).status ==
          200);
  CHECK(*server.head("/bucket-a/framed").header("Content-Encoding") == "gzip");
  REQUIRE(server.put("/bucket-a/as-sent", "x", {{"Content-Encoding", "gzip,br"}}).status == 200);
  CHECK(*server.head("/bucket-a/as-sent").header("Content-Encoding") == "gzip,br");
}

// Keys travel as UTF-8 in every listing (XML) and in `fork diff --json`: one that is not UTF-8
// would be stored and then break them, so it is refused, whatever the operation.
TEST_CASE("object keys that are not UTF-8 are refused", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  for (const auto* key : {"%FF", "a%C0%AFb", "%ED%A0%80", "%E2%82"}) {
    const auto put = server.put(std::string("/bucket-a/") + key, "x");
    INFO(key);
    CHECK(put.status == 400);
    CHECK(xml_value(put.body, "Code") == "InvalidArgument");
    CHECK(server.post(std::string("/bucket-a/") + key + "?uploads", "").status == 400);
  }
  CHECK(server.put("/bucket-a/%E2%82%AC", "euro").status == 200);  // U+20AC is fine
  const auto listed = server.get("/bucket-a?list-type=2");
  CHECK(contains(listed.body, "<Key>\xE2\x82\xAC</Key>"));
  CHECK_FALSE(contains(listed.body, "\xFF"));
}

TEST_CASE("keys longer than 1024 bytes are KeyTooLongError", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto too_long = server.put("/bucket-a/" + std::string(1025, 'k'), "x");
  CHECK(too_long.status == 400);
  CHECK(xml_value(too_long.body, "Code") == "KeyTooLongError");
  CHECK(server.put("/bucket-a/" + std::string(1024, 'k'), "x").status == 200);
}

TEST_CASE("keys keep %2F, + and spaces from the raw target", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-a/a%2Fb+c%20d", "odd").status == 200);
  const auto listed = server.get("/bucket-a?list-type=2");
  CHECK(xml_value(listed.body, "Key") == "a/b+c d");
  CHECK(Server::body_of(server.get("/bucket-a/a/b%2Bc%20d")) == "odd");
}

TEST_CASE("ListObjectsV2 with prefix, delimiter, pagination and encoding-type=url",
          "[server][listing]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  for (const auto* key : {"a%20b%2Bc%25", "dir/one", "dir/two", "dir2/x", "zeta"}) {
    REQUIRE(server.put(std::string("/bucket-a/") + key, "v").status == 200);
  }
  const auto all = server.get("/bucket-a?list-type=2&encoding-type=url");
  REQUIRE(all.status == 200);
  CHECK(contains(all.body, "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""));
  CHECK(contains(all.body, "<Key>a%20b%2Bc%25</Key>"));
  CHECK(contains(all.body, "<EncodingType>url</EncodingType>"));
  CHECK(xml_value(all.body, "KeyCount") == "5");
  CHECK(xml_value(all.body, "IsTruncated") == "false");

  const auto plain = server.get("/bucket-a?list-type=2");
  CHECK(contains(plain.body, "<Key>a b+c%</Key>"));
  CHECK_FALSE(contains(plain.body, "EncodingType"));

  const auto grouped = server.get("/bucket-a?list-type=2&delimiter=%2F&encoding-type=url");
  CHECK(contains(grouped.body, "<CommonPrefixes><Prefix>dir/</Prefix></CommonPrefixes>"));
  CHECK(contains(grouped.body, "<CommonPrefixes><Prefix>dir2/</Prefix></CommonPrefixes>"));
  CHECK(contains(grouped.body, "<Delimiter>/</Delimiter>"));
  CHECK(xml_value(grouped.body, "KeyCount") == "4");

  const auto prefixed = server.get("/bucket-a?list-type=2&prefix=dir%2F");
  CHECK(xml_value(prefixed.body, "KeyCount") == "2");
  CHECK(xml_value(prefixed.body, "Prefix") == "dir/");

  // Page through one entry at a time: every key or prefix exactly once, in order.
  std::vector<std::string> seen;
  std::string token;
  for (int page = 0; page < 10; ++page) {
    std::string target = "/bucket-a?list-type=2&delimiter=%2F&max-keys=1";
    if (!token.empty()) target += "&continuation-token=" + token;
    const auto response = server.get(target);
    REQUIRE(response.status == 200);
    auto key = xml_value(response.body, "Key");
    if (key.empty()) key = xml_value(xml_value(response.body, "CommonPrefixes"), "Prefix");
    seen.push_back(key);
    token = xml_value(response.body, "NextContinuationToken");
    if (xml_value(response.body, "IsTruncated") == "false") {
      CHECK(token.empty());
      break;
    }
  }
  CHECK(seen == std::vector<std::string>{"a b+c%", "dir/", "dir2/", "zeta"});

  const auto after = server.get("/bucket-a?list-type=2&start-after=dir%2Ftwo");
  CHECK(xml_value(after.body, "Key") == "dir2/x");
  CHECK(xml_value(after.body, "StartAfter") == "dir/two");

  const auto bad_token = server.get("/bucket-a?list-type=2&continuation-token=%21%21");
  CHECK(bad_token.status == 400);
  CHECK(xml_value(bad_token.body, "Code") == "InvalidArgument");
  CHECK(server.get("/bucket-a?list-type=2&encoding-type=base64").status == 400);
  CHECK(xml_value(server.get("/bucket-a?list-type=2&max-keys=0").body, "KeyCount") == "0");
  CHECK(server.get("/no-such-bucket?list-type=2").status == 404);
}

TEST_CASE("ListObjects v1 uses Marker and NextMarker", "[server][listing]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  for (const auto* key : {"a/1", "a/2", "b", "c"}) {
    REQUIRE(server.put(std::string("/bucket-a/") + key, "v").status == 200);
  }
  const auto first = server.get("/bucket-a?delimiter=%2F&max-keys=1");
  CHECK(xml_value(first.body, "NextMarker") == "a/");
  CHECK(xml_value(first.body, "IsTruncated") == "true");
  const auto second = server.get("/bucket-a?delimiter=%2F&max-keys=1&marker=a%2F");
  CHECK(xml_value(second.body, "Key") == "b");
  CHECK(xml_value(second.body, "Marker") == "a/");
}

TEST_CASE("list tokens round-trip", "[server][listing]") {
  const auto token = encode_list_token("dir/\xff+key", true);
  CHECK(token.find_first_of("+/=") == std::string::npos);
  const auto decoded = decode_list_token(token);
  REQUIRE(decoded.has_value());
  CHECK(decoded->last == "dir/\xff+key");
  CHECK(decoded->is_prefix);
  CHECK_FALSE(decode_list_token("not a token").has_value());
  CHECK_FALSE(decode_list_token("").has_value());
}

TEST_CASE("DeleteObjects reports every key, honours Quiet and rejects bad XML",
          "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-a/one", "1").status == 200);
  REQUIRE(server.put("/bucket-a/two", "2").status == 200);
  const std::string body =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/"
      "2006-03-01/\"><Object><Key>one</Key></Object><Object><Key>missing</Key></Object>"
      "<Object><Key>line&#13;&#10;break</Key></Object></Delete>";
  const auto md5 = crypto::base64_encode(crypto::md5(body));
  const auto response = server.post("/bucket-a?delete", body, {{"Content-MD5", md5}});
  INFO(response.body);
  CHECK(response.status == 200);
  CHECK(contains(response.body, "<Deleted><Key>one</Key></Deleted>"));
  CHECK(contains(response.body, "<Deleted><Key>missing</Key></Deleted>"));
  CHECK(contains(response.body, "<Deleted><Key>line"));
  CHECK(server.get("/bucket-a/one").status == 404);

  const std::string quiet = "<Delete><Quiet>true</Quiet><Object><Key>two</Key></Object></Delete>";
  const auto quiet_response = server.post("/bucket-a?delete", quiet,
                                          {{"x-amz-checksum-crc32", checksum_of("crc32", quiet)}});
  CHECK(quiet_response.status == 200);
  CHECK_FALSE(contains(quiet_response.body, "<Deleted>"));
  CHECK(server.get("/bucket-a/two").status == 404);

  const auto malformed = server.post("/bucket-a?delete", "<Delete><Object><Key>x</Key>");
  CHECK(malformed.status == 400);
  CHECK(xml_value(malformed.body, "Code") == "MalformedXML");
  CHECK(xml_value(server.post("/bucket-a?delete", "<Delete></Delete>").body, "Code") ==
        "MalformedXML");
}

TEST_CASE("CopyObject copies content and metadata, or replaces the metadata", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  REQUIRE(server.put("/bucket-b").status == 200);
  REQUIRE(server
              .put("/bucket-a/src key", "copied",
                   {{"Content-Type", "text/x-src"}, {"x-amz-meta-a", "1"}})
              .status == 200);
  // Header values reach the handler percent-decoded (cpp-httplib decodes them), so the copy
  // source a client sends as "/bucket-a/src%20key" arrives as below.
  const auto copied = server.put("/bucket-b/dst", "", {{"x-amz-copy-source", "/bucket-a/src key"}});
  INFO(copied.body);
  CHECK(copied.status == 200);
  CHECK(contains(copied.body, "<CopyObjectResult"));
  CHECK(xml_value(copied.body, "ETag") == "\"" + crypto::to_hex(crypto::md5("copied")) + "\"");
  const auto got = server.get("/bucket-b/dst");
  CHECK(Server::body_of(got) == "copied");
  CHECK(*got.header("x-amz-meta-a") == "1");

  REQUIRE(server
              .put("/bucket-b/dst2", "",
                   {{"x-amz-copy-source", "bucket-a/src key"},
                    {"x-amz-metadata-directive", "REPLACE"},
                    {"Content-Type", "text/new"},
                    {"x-amz-meta-b", "2"}})
              .status == 200);
  const auto replaced = server.head("/bucket-b/dst2");
  CHECK(*replaced.header("Content-Type") == "text/new");
  CHECK(replaced.header("x-amz-meta-a") == nullptr);

  CHECK(
      server.put("/bucket-a/src%20key", "", {{"x-amz-copy-source", "/bucket-a/src key"}}).status ==
      400);
  CHECK(server.put("/bucket-b/x", "", {{"x-amz-copy-source", "/bucket-a/nope"}}).status == 404);
}

TEST_CASE("multipart uploads assemble their parts", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  const auto created = server.post("/bucket-a/big?uploads", "");
  REQUIRE(created.status == 200);
  const auto upload_id = xml_value(created.body, "UploadId");
  REQUIRE_FALSE(upload_id.empty());
  // Every part but the last is at least 5 MiB (S3's EntityTooSmall rule).
  const std::string first = std::string(5 << 20, 'f') + "first-";
  const auto part1 = server.put("/bucket-a/big?partNumber=1&uploadId=" + upload_id, first);
  const auto part2 = server.put("/bucket-a/big?partNumber=2&uploadId=" + upload_id, "second");
  REQUIRE(part1.status == 200);
  REQUIRE(part2.status == 200);
  const auto parts = server.get("/bucket-a/big?uploadId=" + upload_id);
  CHECK(contains(parts.body, "<PartNumber>2</PartNumber>"));

  const auto complete_body = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>" +
                             *part1.header("ETag") +
                             "</ETag></Part><Part><PartNumber>2</PartNumber><ETag>" +
                             *part2.header("ETag") + "</ETag></Part></CompleteMultipartUpload>";
  const auto completed = server.post("/bucket-a/big?uploadId=" + upload_id, complete_body);
  INFO(completed.body);
  REQUIRE(completed.status == 200);
  CHECK(contains(xml_value(completed.body, "ETag"), "-2"));
  CHECK(Server::body_of(server.get("/bucket-a/big")) == first + "second");
  const auto ranged = server.get(
      "/bucket-a/big",
      {{"Range", "bytes=" + std::to_string((5 << 20) + 4) + "-" + std::to_string((5 << 20) + 8)}});
  CHECK(Server::body_of(ranged) == "t-sec");

  CHECK(server.post("/bucket-a/big?uploadId=nope", complete_body).status == 404);
  const auto other = server.post("/bucket-a/other?uploads", "");
  const auto other_id = xml_value(other.body, "UploadId");
  CHECK(server.del("/bucket-a/other?uploadId=" + other_id).status == 204);
  CHECK(server.get("/bucket-a/other?uploadId=" + other_id).status == 404);
}

TEST_CASE("reads at X-Tigris-Snapshot-Version see the past", "[server][objects]") {
  Server server;
  REQUIRE(server.put("/snap-bucket", "", {{"X-Tigris-Enable-Snapshot", "true"}}).status == 200);
  REQUIRE(server.put("/snap-bucket/k", "old").status == 200);
  const auto snapshot = server.put("/snap-bucket", "", {{"X-Tigris-Snapshot", "true; name=v1"}});
  REQUIRE(snapshot.status == 200);
  const auto version = *snapshot.header("X-Tigris-Snapshot-Version");
  REQUIRE(server.put("/snap-bucket/k", "new").status == 200);
  REQUIRE(server.put("/snap-bucket/added", "x").status == 200);

  CHECK(Server::body_of(server.get("/snap-bucket/k")) == "new");
  CHECK(Server::body_of(server.get("/snap-bucket/k", {{"X-Tigris-Snapshot-Version", version}})) ==
        "old");
  CHECK(server.get("/snap-bucket/added", {{"X-Tigris-Snapshot-Version", version}}).status == 404);
  const auto listed =
      server.get("/snap-bucket?list-type=2", {{"X-Tigris-Snapshot-Version", version}});
  CHECK(xml_value(listed.body, "KeyCount") == "1");
  CHECK(server.put("/snap-bucket/k", "w", {{"X-Tigris-Snapshot-Version", version}}).status == 400);
  CHECK(server.get("/snap-bucket/k", {{"X-Tigris-Snapshot-Version", "yesterday"}}).status == 400);

  // CopyObject from the snapshot.
  REQUIRE(
      server
          .put("/snap-bucket/restored", "",
               {{"x-amz-copy-source", "/snap-bucket/k"}, {"X-Tigris-Snapshot-Version", version}})
          .status == 200);
  CHECK(Server::body_of(server.get("/snap-bucket/restored")) == "old");
}
