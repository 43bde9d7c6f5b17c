// SPDX-License-Identifier: Apache-2.0
// The error table is the single place for status and code choices (tigris-wire §9).
#include "tfork/server/errors.hpp"

#include "tfork/server/target.hpp"
#include "tfork/server/xml_render.hpp"

#include "support.hpp"
#include <algorithm>
#include <set>
#include <thread>
#include <vector>

using namespace tfork;
using namespace tfork::server;

TEST_CASE("the error table is in enum order and complete", "[server][errors]") {
  for (std::size_t i = 0; i < k_error_table.size(); ++i) {
    INFO(k_error_table[i].code);
    CHECK(static_cast<std::size_t>(k_error_table[i].id) == i);
    CHECK_FALSE(k_error_table[i].code.empty());
    CHECK_FALSE(k_error_table[i].message.empty());
    CHECK(k_error_table[i].status >= 300);
    CHECK(k_error_table[i].status < 600);
  }
  CHECK(k_error_table.back().id == Err::internal_error);
}

TEST_CASE("every store error maps to a table entry", "[server][errors]") {
  using store::StoreErrc;
  for (const auto code :
       {StoreErrc::no_such_bucket, StoreErrc::bucket_exists, StoreErrc::bucket_not_empty,
        StoreErrc::bucket_has_forks, StoreErrc::not_snapshot_enabled, StoreErrc::no_such_snapshot,
        StoreErrc::no_such_key, StoreErrc::no_such_upload, StoreErrc::invalid_part,
        StoreErrc::invalid_part_order, StoreErrc::no_such_access_key, StoreErrc::invalid_argument,
        StoreErrc::no_space, StoreErrc::io}) {
    const auto& entry = spec(from_store(code));
    CHECK(entry.status >= 400);
  }
  CHECK(spec(from_store(StoreErrc::bucket_has_forks)).status == 409);
  CHECK(spec(from_store(StoreErrc::no_such_snapshot)).code == "NoSuchSnapshot");
  CHECK(spec(from_store(StoreErrc::io)).status == 500);
  // Internal failures keep their detail out of the response.
  const auto internal = store_error({StoreErrc::io, "disk on fire at /secret/path"});
  CHECK(internal.text() == spec(Err::internal_error).message);
  CHECK(internal.detail == "disk on fire at /secret/path");  // for the log
  // A full disk: 507, S3-style, the cause kept for the log only.
  const auto full = store_error({StoreErrc::no_space, "writing: database or disk is full"});
  CHECK(full.status() == 507);
  CHECK(full.code() == "InsufficientStorage");
  CHECK(full.text() == spec(Err::insufficient_storage).message);
  CHECK(full.detail == "writing: database or disk is full");
}

TEST_CASE("error XML has Code, Message, Resource, RequestId", "[server][errors]") {
  S3Error error = make_error(Err::no_such_key);
  error.key = "a<b";
  const auto xml = render_error(error, "/bucket/a%3Cb", "0123456789ABCDEF");
  CHECK(test::contains(xml, "<Error><Code>NoSuchKey</Code>"));
  CHECK(test::contains(xml, "<Key>a&lt;b</Key>"));
  CHECK(test::contains(xml, "<RequestId>0123456789ABCDEF</RequestId>"));
  CHECK(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
}

TEST_CASE("parse_target keeps the raw key semantics", "[server][target]") {
  const auto target = parse_target("/bucket/a%2Fb+c%20d?list-type=2&prefix=x%2By+z&delete");
  REQUIRE(target.has_value());
  CHECK(target->bucket == "bucket");
  CHECK(target->key == "a/b+c d");
  CHECK(target->has_key);
  // '+' in the query is a plus until a signature says it was a space (Handler::admit).
  CHECK(*target->get("prefix") == "x+y+z");
  CHECK(parse_query("prefix=x%2By+z")->front().second == "x+y z");  // form bodies
  CHECK(target->has("delete"));
  CHECK(target->get("delete")->empty());
  CHECK(target->wire_path == "/bucket/a%2Fb+c%20d");

  CHECK(parse_target("/")->bucket.empty());
  CHECK_FALSE(parse_target("/bucket/")->has_key);
  CHECK(parse_target("/bucket//")->key == "/");
  CHECK_FALSE(parse_target("/bucket/%zz").has_value());
  CHECK_FALSE(parse_target("/bucket/%4").has_value());
  CHECK_FALSE(parse_target("bucket").has_value());
  CHECK(url_encode_key("a b+c%/d~") == "a%20b%2Bc%25/d~");
}

TEST_CASE("unsupported subresources and methods are answered, not guessed", "[server][errors]") {
  test::Server server;
  REQUIRE(server.put("/bucket-a").status == 200);
  CHECK(server.get("/bucket-a?acl").status == 501);
  CHECK(server.put("/bucket-a?tagging", "<Tagging/>").status == 501);
  CHECK(server.del("/").status == 405);
  const auto location = server.get("/bucket-a?location");
  CHECK(location.status == 200);
  CHECK(test::contains(location.body, "LocationConstraint"));
}

// Ids come from a generator per thread: threads seeded alike would repeat each other's ids.
TEST_CASE("request ids are 16 upper-case hex digits, none repeated across threads",
          "[server][errors]") {
  constexpr std::size_t threads = 4;
  constexpr std::size_t per_thread = 20000;
  std::vector<std::vector<std::string>> ids(threads);
  {
    std::vector<std::jthread> workers;
    for (auto& list : ids)
      workers.emplace_back([&list] {
        for (std::size_t i = 0; i < per_thread; ++i)
          list.push_back(new_request_id());
      });
  }
  std::set<std::string> seen;
  std::size_t malformed = 0;
  for (const auto& list : ids) {
    for (const auto& id : list) {
      const bool hex = std::ranges::all_of(
          id, [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); });
      if (id.size() != 16 || !hex) ++malformed;
      seen.insert(id);
    }
  }
  CHECK(malformed == 0);
  CHECK(seen.size() == threads * per_thread);
}

TEST_CASE("every response has a request id and a host id of its own", "[server][errors]") {
  test::Server server;
  const auto first = server.get("/no-such-bucket/k");
  const auto second = server.get("/no-such-bucket/k");
  for (const auto* response : {&first, &second}) {
    REQUIRE(response->header("x-amz-request-id"));
    REQUIRE(response->header("x-amz-id-2"));
    CHECK(test::xml_value(response->body, "RequestId") == *response->header("x-amz-request-id"));
    const auto host_id = crypto::base64_decode(*response->header("x-amz-id-2"));
    REQUIRE(host_id);
    CHECK(host_id->size() == 48);
  }
  CHECK(*first.header("x-amz-request-id") != *second.header("x-amz-request-id"));
  CHECK(*first.header("x-amz-id-2") != *second.header("x-amz-id-2"));
}
