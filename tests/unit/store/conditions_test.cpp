// SPDX-License-Identifier: Apache-2.0
// Conditional writes (issue 24 §1; style.md "One road per request"): WriteConditions travel
// with put_object, put_object_async, copy_object and complete_upload and are evaluated inside
// the write's own transaction, so a write that lands between a caller's check and its commit
// is caught, and of N racing writers exactly one passes.

#include "tfork/crypto/hash.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "store_test_support.hpp"
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

namespace tfork::store::test {
namespace {

namespace fs = std::filesystem;

WriteConditions create_only() {
  WriteConditions conditions;
  conditions.if_none_match_any = true;
  return conditions;
}

WriteConditions replacing(std::string etag) {
  WriteConditions conditions;
  conditions.if_match = std::vector<std::string>{std::move(etag)};
  return conditions;
}

// No assertion inside (it runs on the racing threads too): a failed blob write leaves the
// object without parts, which its put then refuses.
NewObject object_of(Store& store, std::string_view content, std::string etag) {
  NewObject object;
  object.etag = std::move(etag);
  if (auto blob = store.write_blob(content)) object.parts = {*blob};
  return object;
}

StoreErrc code_of(const Result<ObjectInfo>& result) {
  REQUIRE(!result);
  return result.error().code;
}

// Runs `write(i)` on `n` threads released together; returns how many succeeded and checks
// that every other one failed with precondition_failed.
template <class Write>
int race(int n, Write write) {
  std::mutex mu;
  std::condition_variable go;
  bool released = false;
  std::atomic<int> won{0};
  std::atomic<int> refused{0};
  std::atomic<int> other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      {
        std::unique_lock lock(mu);
        go.wait(lock, [&] { return released; });
      }
      const Result<ObjectInfo> result = write(i);
      if (result) {
        ++won;
      } else if (result.error().code == StoreErrc::precondition_failed) {
        ++refused;
      } else {
        ++other;
      }
    });
  }
  {
    std::lock_guard lock(mu);
    released = true;
  }
  go.notify_all();
  for (auto& thread : threads)
    thread.join();
  CHECK(other == 0);
  CHECK(won + refused == n);
  return won;
}

TEST_CASE("check_conditions: If-None-Match finds any version, If-Match one of its ETags",
          "[store]") {
  CHECK(check_conditions({}, std::nullopt));
  CHECK(check_conditions({}, "abc"));
  CHECK(check_conditions(create_only(), std::nullopt));
  CHECK(check_conditions(create_only(), "abc").error().code == StoreErrc::precondition_failed);
  CHECK(check_conditions(replacing("abc"), "abc"));
  CHECK(check_conditions(replacing("abd"), "abc").error().code == StoreErrc::precondition_failed);
  CHECK(check_conditions(replacing("abc"), std::nullopt).error().code == StoreErrc::no_such_key);
  CHECK(check_conditions(replacing("*"), "abc"));
  WriteConditions listed;
  listed.if_match = std::vector<std::string>{"x", "abc"};
  CHECK(check_conditions(listed, "abc"));
}

TEST_CASE("conditions are evaluated by the write itself: a write after the caller's check wins",
          "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("b", false));

  SECTION("put_object with If-None-Match") {
    // The caller's own look finds no key ...
    CHECK(get_text(*store, "b", "k") == no_such_key());
    // ... then another writer commits first ...
    put_text(*store, "b", "k", "first");
    // ... and the conditional write, judged in its own transaction, is refused.
    CHECK(code_of(store->put_object("b", "k", object_of(*store, "second", "e2"), create_only())) ==
          StoreErrc::precondition_failed);
    CHECK(get_text(*store, "b", "k") == "first");
    CHECK(store->put_object("b", "new", object_of(*store, "new", "e3"), create_only()));
  }

  SECTION("put_object with If-Match") {
    const auto v1 = put_text(*store, "b", "k", "one");
    put_text(*store, "b", "k", "two");  // lands after the caller read v1's ETag
    CHECK(code_of(store->put_object("b", "k", object_of(*store, "three", "e3"),
                                    replacing(v1.etag))) == StoreErrc::precondition_failed);
    CHECK(get_text(*store, "b", "k") == "two");
    CHECK(store->put_object("b", "k", object_of(*store, "three", "e3"), replacing("etag-two")));
    CHECK(get_text(*store, "b", "k") == "three");
    CHECK(code_of(store->put_object("b", "missing", object_of(*store, "x", "ex"),
                                    replacing("etag-two"))) == StoreErrc::no_such_key);
  }

  SECTION("copy_object with If-None-Match and If-Match on the destination") {
    put_text(*store, "b", "src", "source");
    put_text(*store, "b", "dst", "there");
    CHECK(code_of(store->copy_object("b", "src", std::nullopt, "b", "dst", std::nullopt,
                                     create_only())) == StoreErrc::precondition_failed);
    CHECK(code_of(store->copy_object("b", "src", std::nullopt, "b", "dst", std::nullopt,
                                     replacing("stale"))) == StoreErrc::precondition_failed);
    CHECK(get_text(*store, "b", "dst") == "there");
    CHECK(store->copy_object("b", "src", std::nullopt, "b", "dst", std::nullopt,
                             replacing("etag-there")));
    CHECK(get_text(*store, "b", "dst") == "source");
    CHECK(store->copy_object("b", "src", std::nullopt, "b", "fresh", std::nullopt, create_only()));
  }

  SECTION("complete_upload with If-None-Match keeps the upload when refused") {
    auto upload = store->create_upload("b", "k", NewObject{});
    REQUIRE(upload);
    auto blob = store->write_blob("part");
    REQUIRE(blob);
    const auto etag = crypto::to_hex(crypto::md5("part"));
    REQUIRE(store->put_part(upload->upload_id, 1, *blob, etag));
    put_text(*store, "b", "k", "raced");  // lands between the caller's check and Complete
    CHECK(code_of(store->complete_upload(upload->upload_id, {{1, etag}}, std::nullopt,
                                         create_only())) == StoreErrc::precondition_failed);
    CHECK(get_text(*store, "b", "k") == "raced");
    REQUIRE(store->get_upload(upload->upload_id));  // still there: it can be retried
    CHECK(store->complete_upload(upload->upload_id, {{1, etag}}, std::nullopt,
                                 replacing("etag-raced")));
    CHECK(get_text(*store, "b", "k") == "part");
  }

  SECTION("in a fork, the parent's version counts as the key's current one") {
    REQUIRE(store->create_bucket("s", true));
    put_text(*store, "s", "k", "parent");
    REQUIRE(store->create_fork("f", "s", std::nullopt));
    CHECK(code_of(store->put_object("f", "k", object_of(*store, "fork", "ef"), create_only())) ==
          StoreErrc::precondition_failed);
    CHECK(store->put_object("f", "k", object_of(*store, "fork", "ef"), replacing("etag-parent")));
    REQUIRE(store->delete_object("f", "k"));  // a tombstone: absent again
    CHECK(store->put_object("f", "k", object_of(*store, "again", "eg"), create_only()));
  }
}

TEST_CASE("of 16 racing create-only writes of one key exactly one succeeds", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("b", false));
  for (int round = 0; round < 5; ++round) {
    const auto key = fmt::format("put-{}", round);
    CHECK(race(16, [&](int i) {
            return store->put_object("b", key, object_of(*store, fmt::format("{}-{}", key, i), "e"),
                                     create_only());
          }) == 1);
    const auto copy_key = fmt::format("copy-{}", round);
    put_text(*store, "b", "source", "source");
    CHECK(race(16, [&](int) {
            return store->copy_object("b", "source", std::nullopt, "b", copy_key, std::nullopt,
                                      create_only());
          }) == 1);
  }
}

TEST_CASE("of 16 racing writes with If-Match on the current ETag exactly one succeeds", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("b", false));
  for (int round = 0; round < 5; ++round) {
    const auto current = put_text(*store, "b", "k", fmt::format("base-{}", round));
    std::atomic<int> winner{-1};
    CHECK(race(16, [&](int i) {
            auto written = store->put_object(
                "b", "k",
                object_of(*store, fmt::format("r{}-w{}", round, i), fmt::format("w{}", i)),
                replacing(current.etag));
            if (written) winner = i;
            return written;
          }) == 1);
    CHECK(get_text(*store, "b", "k") == fmt::format("r{}-w{}", round, winner.load()));
  }
}

// Writes queued without waiting are committed together, each in a savepoint of one
// transaction: each must see the ones before it in the same batch.
TEST_CASE("create-only writes committed in one batch see each other", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("b", false));
  constexpr int k_writes = 64;
  std::mutex mu;
  std::condition_variable all_done;
  int answered = 0;
  int won = 0;
  int refused = 0;
  for (int i = 0; i < k_writes; ++i) {
    store->put_object_async(
        "b", fmt::format("k{}", i % 4), object_of(*store, fmt::format("v{}", i), "e"),
        [&](Result<ObjectInfo> result) {
          std::lock_guard lock(mu);
          if (result) ++won;
          if (!result && result.error().code == StoreErrc::precondition_failed) ++refused;
          ++answered;
          all_done.notify_all();
        },
        create_only());
  }
  std::unique_lock lock(mu);
  all_done.wait(lock, [&] { return answered == k_writes; });
  CHECK(won == 4);  // one per key
  CHECK(refused == k_writes - 4);
  for (int k = 0; k < 4; ++k)
    CHECK(get_text(*store, "b", fmt::format("k{}", k)) == fmt::format("v{}", k));
}

TEST_CASE("a write refused by its conditions leaves no blob file or row behind", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("b", false));
  const auto existing = file_sized("existing");
  put_text(*store, "b", "k", existing);
  const auto files = count_blob_files(dir.path());
  const auto versions = count_rows(dir.path(), "SELECT count(*) FROM versions");

  // A streamed body, adopted into the blob store before its row (as the server does).
  const auto body = file_sized("refused");
  const auto spooled = store->tmp_dir() / "upload";
  {
    std::ofstream out(spooled, std::ios::binary);
    out << body;
  }
  auto blob = store->adopt_blob(spooled, crypto::sha256_hex(body));
  REQUIRE(blob);
  CHECK(count_blob_files(dir.path()) == files + 1);
  NewObject object;
  object.etag = "refused";
  object.parts = {*blob};
  CHECK(code_of(store->put_object("b", "k", object, create_only())) ==
        StoreErrc::precondition_failed);
  CHECK(!fs::exists(store->blob_path(*blob)));
  CHECK(count_blob_files(dir.path()) == files);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions") == versions);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blobs") == 1);

  // Content that a row already names keeps its file.
  auto same = store->write_blob(existing);
  REQUIRE(same);
  object.parts = {*same};
  CHECK(code_of(store->put_object("b", "k", object, replacing("stale"))) ==
        StoreErrc::precondition_failed);
  CHECK(get_text(*store, "b", "k") == existing);
  CHECK(count_blob_files(dir.path()) == files);
}

}  // namespace
}  // namespace tfork::store::test
