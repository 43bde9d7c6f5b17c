// SPDX-License-Identifier: Apache-2.0
// Directed tests of the storage engine (server-design.md §6). The randomized comparison
// against a reference model lives in model_test.cpp.

#include "tfork/crypto/hash.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "store_test_support.hpp"
#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <signal.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace tfork::store::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> list_keys(Store& store, std::string_view bucket, ListQuery query = {}) {
  auto page = store.list_objects(bucket, query);
  REQUIRE(page);
  std::vector<std::string> keys;
  for (const auto& object : page->objects)
    keys.push_back(object.key);
  return keys;
}

TEST_CASE("fork isolation: fork writes stay in the fork, later source writes stay out", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  put_text(*store, "src", "a", "a1");
  put_text(*store, "src", "b", "b1");

  auto fork1 = store->create_fork("f1", "src", std::nullopt);
  REQUIRE(fork1);
  CHECK(fork1->fork_source == "src");
  REQUIRE(fork1->fork_snapshot);
  auto fork2 = store->create_fork("f2", "src", std::nullopt);
  REQUIRE(fork2);

  put_text(*store, "f1", "a", "a-f1");
  put_text(*store, "f1", "c", "c-f1");
  REQUIRE(store->delete_object("f1", "b"));
  put_text(*store, "src", "a", "a2");
  put_text(*store, "src", "d", "d2");

  CHECK(get_text(*store, "src", "a") == "a2");
  CHECK(get_text(*store, "src", "b") == "b1");
  CHECK(get_text(*store, "src", "c") == no_such_key());
  CHECK(get_text(*store, "f1", "a") == "a-f1");
  CHECK(get_text(*store, "f1", "b") == no_such_key());
  CHECK(get_text(*store, "f1", "d") == no_such_key());
  CHECK(get_text(*store, "f2", "a") == "a1");
  CHECK(get_text(*store, "f2", "c") == no_such_key());
  CHECK(get_text(*store, "f2", "d") == no_such_key());
  CHECK(list_keys(*store, "f1") == std::vector<std::string>{"a", "c"});
  CHECK(list_keys(*store, "f2") == std::vector<std::string>{"a", "b"});
  CHECK(list_keys(*store, "src") == std::vector<std::string>{"a", "b", "d"});

  auto head = store->head_bucket("src");
  REQUIRE(head);
  CHECK(head->has_children);
  auto forks = store->list_forks("src");
  REQUIRE(forks);
  REQUIRE(forks->size() == 2);
  CHECK((*forks)[0].name == "f1");
  CHECK((*forks)[1].name == "f2");
  // The implicit snapshots of the two forks are listed on the source, newest first.
  auto snapshots = store->list_snapshots("src");
  REQUIRE(snapshots);
  REQUIRE(snapshots->size() == 2);
  CHECK((*snapshots)[0].version == *fork2->fork_snapshot);
  CHECK((*snapshots)[1].version == *fork1->fork_snapshot);
  CHECK(!(*snapshots)[0].name);
}

TEST_CASE("tombstones shadow through three levels", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("l0", true));
  put_text(*store, "l0", "k", "v0");
  put_text(*store, "l0", "j", "j0");
  REQUIRE(store->create_fork("l1", "l0", std::nullopt));
  REQUIRE(store->delete_object("l1", "k"));
  REQUIRE(store->create_fork("l2", "l1", std::nullopt));
  CHECK(get_text(*store, "l2", "k") == no_such_key());
  CHECK(list_keys(*store, "l2") == std::vector<std::string>{"j"});

  // Re-created in the middle layer after l2 was made: l2 still sees the tombstone.
  put_text(*store, "l1", "k", "v1");
  CHECK(get_text(*store, "l1", "k") == "v1");
  CHECK(get_text(*store, "l2", "k") == no_such_key());
  REQUIRE(store->create_fork("l3", "l2", std::nullopt));
  put_text(*store, "l2", "k", "v2");
  CHECK(get_text(*store, "l3", "k") == no_such_key());
  CHECK(get_text(*store, "l2", "k") == "v2");
  // Deleting in the fork a key only the root has.
  REQUIRE(store->delete_object("l3", "j"));
  CHECK(get_text(*store, "l3", "j") == no_such_key());
  CHECK(get_text(*store, "l2", "j") == "j0");
  CHECK(list_keys(*store, "l3").empty());

  // Deleting an invisible key writes nothing.
  auto none = store->delete_object_version("l3", "j");
  REQUIRE(none);
  CHECK(!*none);
}

TEST_CASE("delete bucket: forks refuse even forced, not-empty refuses, force empties", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("p", true));
  put_text(*store, "p", "x", "1");
  REQUIRE(store->create_fork("c", "p", std::nullopt));

  auto refused = store->delete_bucket("p", true);
  REQUIRE(!refused);
  CHECK(refused.error().code == StoreErrc::bucket_has_forks);
  refused = store->delete_bucket("p", false);
  REQUIRE(!refused);
  CHECK(refused.error().code == StoreErrc::bucket_has_forks);

  // The fork shows its parent's object, so a plain delete is refused.
  refused = store->delete_bucket("c", false);
  REQUIRE(!refused);
  CHECK(refused.error().code == StoreErrc::bucket_not_empty);
  REQUIRE(store->delete_object("c", "x"));
  REQUIRE(store->delete_bucket("c", false));  // only a tombstone left: empty to clients
  CHECK(store->head_bucket("c").error().code == StoreErrc::no_such_bucket);

  refused = store->delete_bucket("p", false);
  REQUIRE(!refused);
  CHECK(refused.error().code == StoreErrc::bucket_not_empty);
  REQUIRE(store->delete_bucket("p", true));
  CHECK(store->head_bucket("p").error().code == StoreErrc::no_such_bucket);
  CHECK(store->delete_bucket("p", true).error().code == StoreErrc::no_such_bucket);
  store->wait_for_reclaims();  // the rows go in the background
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions") == 0);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM buckets") == 0);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blobs") == 0);
  CHECK(count_blob_files(dir.path()) == 0);
}

TEST_CASE("deleting a snapshot keeps forks made from it intact", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("s", true));
  put_text(*store, "s", "k", "old");
  auto snap = store->take_snapshot("s", std::string("first"));
  REQUIRE(snap);
  put_text(*store, "s", "k", "new");
  REQUIRE(store->create_fork("f", "s", snap->version));
  REQUIRE(store->delete_snapshot("s", snap->version));
  CHECK(store->delete_snapshot("s", snap->version).error().code == StoreErrc::no_such_snapshot);
  auto snaps = store->list_snapshots("s");
  REQUIRE(snaps);
  CHECK(snaps->empty());

  CHECK(get_text(*store, "f", "k") == "old");
  auto head = store->head_bucket("f");
  REQUIRE(head);
  CHECK(head->fork_snapshot == snap->version);
  CHECK(head->fork_source == "s");
  // Reads at the old version still work on the source: all versions are kept.
  CHECK(get_text(*store, "s", "k", snap->version) == "old");
}

TEST_CASE("deleting a fork frees the blobs only it held", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("s", true));
  const auto shared = put_text(*store, "s", "shared", file_sized("same-bytes"));
  REQUIRE(store->create_fork("f", "s", std::nullopt));
  const auto own = put_text(*store, "f", "own", file_sized("only-in-fork"));
  const auto dup = put_text(*store, "f", "dup", file_sized("same-bytes"));  // dedupes
  CHECK(dup.parts.front().hash == shared.parts.front().hash);
  const auto own_path = store->blob_path(own.parts.front());
  const auto shared_path = store->blob_path(shared.parts.front());
  REQUIRE(fs::exists(own_path));
  CHECK(count_rows(dir.path(),
                   "SELECT refcnt FROM blobs WHERE hash='" + shared.parts.front().hash + "'") == 2);

  REQUIRE(store->delete_bucket("f", true));
  store->wait_for_reclaims();  // the rows go in the background
  CHECK(!fs::exists(own_path));
  CHECK(fs::exists(shared_path));
  CHECK(count_rows(dir.path(),
                   "SELECT refcnt FROM blobs WHERE hash='" + shared.parts.front().hash + "'") == 1);
  CHECK(get_text(*store, "s", "shared") == file_sized("same-bytes"));
  auto head = store->head_bucket("s");
  REQUIRE(head);
  CHECK(!head->has_children);
}

TEST_CASE("bucket names are reusable after delete", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("n", true));
  put_text(*store, "n", "k", "first life");
  CHECK(store->create_bucket("n", false).error().code == StoreErrc::bucket_exists);
  REQUIRE(store->create_fork("m", "n", std::nullopt));
  CHECK(store->create_fork("m", "n", std::nullopt).error().code == StoreErrc::bucket_exists);
  REQUIRE(store->delete_bucket("m", true));
  REQUIRE(store->delete_bucket("n", true));

  REQUIRE(store->create_bucket("n", false));
  CHECK(get_text(*store, "n", "k") == no_such_key());
  CHECK(list_keys(*store, "n").empty());
  auto head = store->head_bucket("n");
  REQUIRE(head);
  CHECK(!head->snapshot_enabled);
  CHECK(!head->fork_source);
  auto fork = store->create_fork("m", "n", std::nullopt);
  REQUIRE(!fork);
  CHECK(fork.error().code == StoreErrc::not_snapshot_enabled);
  REQUIRE(store->set_snapshot_enabled("n", true));
  REQUIRE(store->create_fork("m", "n", std::nullopt));
  CHECK(list_keys(*store, "m").empty());
  auto buckets = store->list_buckets();
  REQUIRE(buckets);
  REQUIRE(buckets->size() == 2);
  CHECK((*buckets)[0].name == "m");
  CHECK((*buckets)[1].name == "n");
}

// Above k_max_db_blob; a small object's copy copies its bytes (the test of small blobs).
TEST_CASE("copy_object is O(1): the new version names the same blob", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("a", true));
  REQUIRE(store->create_bucket("b", false));
  const auto original = put_text(*store, "a", "src", file_sized("payload"));
  put_text(*store, "a", "src", "payload-v2");
  const std::size_t files = count_blob_files(dir.path());

  NewObject replace;
  replace.content_type = "application/x-new";
  replace.user_meta = {{"color", "blue"}};
  auto copy = store->copy_object("a", "src", original.seq, "b", "dst", replace);
  REQUIRE(copy);
  CHECK(copy->parts.front().hash == original.parts.front().hash);
  CHECK(copy->etag == original.etag);
  CHECK(count_blob_files(dir.path()) == files);
  auto got = store->get_object("b", "dst");
  REQUIRE(got);
  CHECK(content_of(*store, *got) == file_sized("payload"));
  CHECK(got->content_type == "application/x-new");
  CHECK(got->user_meta == Metadata{{"color", "blue"}});
  CHECK(count_rows(dir.path(), "SELECT refcnt FROM blobs WHERE hash='" +
                                   original.parts.front().hash + "'") == 2);

  // Without `replace` the source's metadata is kept.
  auto plain = store->copy_object("a", "src", std::nullopt, "a", "dst2", std::nullopt);
  REQUIRE(plain);
  CHECK(plain->content_type == "text/plain");
  CHECK(get_text(*store, "a", "dst2") == "payload-v2");
  CHECK(store->copy_object("a", "nope", std::nullopt, "b", "x", std::nullopt).error().code ==
        StoreErrc::no_such_key);
  CHECK(store->copy_object("a", "src", std::nullopt, "zz", "x", std::nullopt).error().code ==
        StoreErrc::no_such_bucket);
}

TEST_CASE("a regular bucket keeps only the live version", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("r", false));
  const auto v1 = put_text(*store, "r", "k", "one");
  put_text(*store, "r", "k", "two");
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions") == 1);
  CHECK(!fs::exists(store->blob_path(v1.parts.front())));
  CHECK(get_text(*store, "r", "k") == "two");
  // Deleting removes the rows outright: no delete marker.
  auto deleted = store->delete_object_version("r", "k");
  REQUIRE(deleted);
  CHECK(!*deleted);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions") == 0);
  CHECK(count_blob_files(dir.path()) == 0);

  // A snapshot taken while snapshot-enabled pins the version it saw.
  put_text(*store, "r", "p", "pinned");
  REQUIRE(store->set_snapshot_enabled("r", true));
  auto snap = store->take_snapshot("r", std::nullopt);
  REQUIRE(snap);
  REQUIRE(store->set_snapshot_enabled("r", false));
  put_text(*store, "r", "p", "after");
  CHECK(get_text(*store, "r", "p", snap->version) == "pinned");
  CHECK(get_text(*store, "r", "p") == "after");
  auto marker = store->delete_object_version("r", "p");
  REQUIRE(marker);
  CHECK(marker->has_value());  // the pinned version must stay hidden
  CHECK(get_text(*store, "r", "p") == no_such_key());
  CHECK(get_text(*store, "r", "p", snap->version) == "pinned");
  CHECK(store->take_snapshot("r", std::nullopt).error().code == StoreErrc::not_snapshot_enabled);
}

TEST_CASE("snapshot-enabled rules for forks and parents", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("p", true));
  REQUIRE(store->create_fork("c", "p", std::nullopt));
  CHECK(store->set_snapshot_enabled("p", false).error().code == StoreErrc::bucket_has_forks);
  CHECK(store->set_snapshot_enabled("c", false).error().code == StoreErrc::invalid_argument);
  auto head = store->head_bucket("c");
  REQUIRE(head);
  CHECK(head->snapshot_enabled);
  CHECK(head->fork_created > 0);
  // A fork in the future would let the source's later writes leak into it.
  CHECK(store->create_fork("f", "p", Seq{4'000'000'000'000'000'000}).error().code ==
        StoreErrc::invalid_argument);
  CHECK(store->create_fork("f", "nope", std::nullopt).error().code == StoreErrc::no_such_bucket);
}

TEST_CASE("fork at an arbitrary ns timestamp between writes", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("s", true));
  const auto first = put_text(*store, "s", "k", "first");
  const auto second = put_text(*store, "s", "k", "second");
  REQUIRE(second.seq > first.seq + 1);
  REQUIRE(store->create_fork("mid", "s", first.seq + (second.seq - first.seq) / 2));
  REQUIRE(store->create_fork("before", "s", first.seq - 1));
  CHECK(get_text(*store, "mid", "k") == "first");
  CHECK(get_text(*store, "before", "k") == no_such_key());
  // A fork "at" the exact seq of a write includes that write.
  REQUIRE(store->create_fork("exact", "s", second.seq));
  CHECK(get_text(*store, "exact", "k") == "second");
  // Writes after the fork point get later seqs, whatever the clock says.
  const auto third = put_text(*store, "s", "k", "third");
  CHECK(third.seq > second.seq);
  CHECK(get_text(*store, "exact", "k") == "second");
}

TEST_CASE("creating a fork or snapshot writes one row and copies nothing", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("big", true));
  for (int i = 0; i < 200; ++i)
    put_text(*store, "big", "key-" + std::to_string(i), "v");
  const auto versions = count_rows(dir.path(), "SELECT count(*) FROM versions");
  const auto buckets = count_rows(dir.path(), "SELECT count(*) FROM buckets");
  const auto snapshots = count_rows(dir.path(), "SELECT count(*) FROM snapshots");
  const auto blobs = count_rows(dir.path(), "SELECT count(*) FROM blobs");
  CHECK(versions == 200);

  auto snap = store->take_snapshot("big", std::nullopt);
  REQUIRE(snap);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM snapshots") == snapshots + 1);
  REQUIRE(store->create_fork("at-snap", "big", snap->version));
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM buckets") == buckets + 1);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM snapshots") == snapshots + 1);
  REQUIRE(store->create_fork("now", "at-snap", std::nullopt));
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM buckets") == buckets + 2);
  // The implicit snapshot of "now" is its source's one extra row.
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM snapshots") == snapshots + 2);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions") == versions);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blobs") == blobs);
  CHECK(get_text(*store, "now", "key-7") == "v");
}

TEST_CASE("listing: prefix, delimiter, pagination and snapshot views", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("l", true));
  for (const char* key : {"a", "b/1", "b/2", "b/3/x", "c", "d/e"})
    put_text(*store, "l", key, key);
  auto snap = store->take_snapshot("l", std::nullopt);
  REQUIRE(snap);
  REQUIRE(store->delete_object("l", "b/1"));
  REQUIRE(store->delete_object("l", "b/2"));
  REQUIRE(store->delete_object("l", "b/3/x"));

  ListQuery query;
  query.delimiter = "/";
  auto page = store->list_objects("l", query);
  REQUIRE(page);
  CHECK(page->common_prefixes == std::vector<std::string>{"d/"});  // b/ is all tombstones
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].key == "a");
  CHECK(page->objects[1].key == "c");
  CHECK(!page->truncated);

  query.at = snap->version;
  query.max_keys = 2;
  page = store->list_objects("l", query);
  REQUIRE(page);
  CHECK(page->objects.size() == 1);
  CHECK(page->common_prefixes == std::vector<std::string>{"b/"});
  CHECK(page->truncated);
  CHECK(page->last == "b/");
  CHECK(page->last_is_prefix);
  query.after = page->last;
  query.after_is_prefix = true;
  page = store->list_objects("l", query);
  REQUIRE(page);
  REQUIRE(page->objects.size() == 1);
  CHECK(page->objects[0].key == "c");
  CHECK(page->common_prefixes == std::vector<std::string>{"d/"});
  CHECK(!page->truncated);

  ListQuery sub;
  sub.prefix = "b/";
  sub.delimiter = "/";
  sub.at = snap->version;
  page = store->list_objects("l", sub);
  REQUIRE(page);
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].key == "b/1");
  CHECK(page->objects[0].size == 3);
  CHECK(page->objects[0].etag == "etag-b/1");
  CHECK(page->common_prefixes == std::vector<std::string>{"b/3/"});

  ListQuery none;
  none.max_keys = 0;
  page = store->list_objects("l", none);
  REQUIRE(page);
  CHECK(page->objects.empty());
  CHECK(!page->truncated);
  CHECK(store->list_objects("missing", {}).error().code == StoreErrc::no_such_bucket);
}

TEST_CASE("multipart: complete writes an ordered manifest, abort frees the parts", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("m", true));
  NewObject meta;
  meta.content_type = "application/octet-stream";
  meta.user_meta = {{"k", "v"}};
  auto upload = store->create_upload("m", "big", meta);
  REQUIRE(upload);
  CHECK(upload->bucket == "m");
  CHECK(upload->key == "big");
  CHECK(store->get_upload(upload->upload_id)->key == "big");

  const std::vector<std::string> bodies = {"part-one|", "part-two|", "part-three"};
  std::vector<std::pair<int, std::string>> listed;
  for (int i = 0; i < 3; ++i) {
    auto blob = store->write_blob(bodies[i]);
    REQUIRE(blob);
    const auto etag = crypto::to_hex(crypto::md5(bodies[i]));
    REQUIRE(store->put_part(upload->upload_id, i + 1, *blob, etag));
    listed.emplace_back(i + 1, "\"" + etag + "\"");
  }
  // Re-sending part 2 replaces it.
  auto again = store->write_blob(bodies[1]);
  REQUIRE(again);
  REQUIRE(store->put_part(upload->upload_id, 2, *again, crypto::to_hex(crypto::md5(bodies[1]))));
  auto parts = store->list_parts(upload->upload_id);
  REQUIRE(parts);
  REQUIRE(parts->size() == 3);
  CHECK((*parts)[1].part_number == 2);
  CHECK(store->put_part(upload->upload_id, 0, *again, "x").error().code ==
        StoreErrc::invalid_argument);

  CHECK(store->complete_upload(upload->upload_id, {listed[1], listed[0]}).error().code ==
        StoreErrc::invalid_part_order);
  CHECK(store->complete_upload(upload->upload_id, {{1, "\"00000000000000000000000000000000\""}})
            .error()
            .code == StoreErrc::invalid_part);
  CHECK(store->complete_upload(upload->upload_id, {{9, listed[0].second}}).error().code ==
        StoreErrc::invalid_part);

  auto done = store->complete_upload(upload->upload_id, listed);
  REQUIRE(done);
  std::vector<std::string> md5s;
  for (const auto& body : bodies)
    md5s.push_back(crypto::to_hex(crypto::md5(body)));
  CHECK(done->etag == multipart_etag(md5s));
  CHECK(done->etag.ends_with("-3"));
  CHECK(done->size == 28);
  auto got = store->get_object("m", "big");
  REQUIRE(got);
  CHECK(got->parts.size() == 3);
  CHECK(content_of(*store, *got) == "part-one|part-two|part-three");
  CHECK(got->user_meta == Metadata{{"k", "v"}});
  CHECK(got->etag == done->etag);
  CHECK(store->get_upload(upload->upload_id).error().code == StoreErrc::no_such_upload);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM upload_parts") == 0);

  // Known value: two parts "a" and "b".
  CHECK(multipart_etag({crypto::to_hex(crypto::md5("a")), crypto::to_hex(crypto::md5("b"))}) ==
        crypto::to_hex(crypto::md5(crypto::md5("a") + crypto::md5("b"))) + "-2");
  CHECK(!multipart_etag({"not-hex"}));

  // Abort: the parts' blobs go when nothing else holds them.
  auto aborted = store->create_upload("m", "gone", {});
  REQUIRE(aborted);
  auto blob = store->write_blob(file_sized("abandoned part"));
  REQUIRE(blob);
  REQUIRE(store->put_part(aborted->upload_id, 1, *blob, "etag"));
  auto small = store->write_blob("abandoned last part");
  REQUIRE(small);
  REQUIRE(store->put_part(aborted->upload_id, 2, *small, "etag"));
  const auto path = store->blob_path(*blob);
  REQUIRE(fs::exists(path));
  const auto small_bytes =
      "SELECT count(*) FROM blobs b JOIN blob_data d ON d.id=b.data_id WHERE b.hash='" +
      small->hash + "'";
  CHECK(count_rows(dir.path(), small_bytes) == 1);
  REQUIRE(store->abort_upload(aborted->upload_id));
  CHECK(!fs::exists(path));
  CHECK(count_rows(dir.path(), small_bytes) == 0);
  CHECK(store->abort_upload(aborted->upload_id).error().code == StoreErrc::no_such_upload);
  CHECK(store->list_parts(aborted->upload_id).error().code == StoreErrc::no_such_upload);

  // A bucket's unfinished uploads go with it.
  auto orphan = store->create_upload("m", "pending", {});
  REQUIRE(orphan);
  REQUIRE(store->delete_bucket("m", true));
  CHECK(store->get_upload(orphan->upload_id).error().code == StoreErrc::no_such_upload);
}

TEST_CASE("uploads keep their checksum algorithm and their parts' checksums", "[store]") {
  TempDir dir;
  {
    auto store = open_store(dir.path());
    REQUIRE(store->create_bucket("m", false));
  }
  // A data directory from before parts kept checksums: the column is added on open.
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir.path() / "meta.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "ALTER TABLE upload_parts DROP COLUMN checksums", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = open_store(dir.path());
  NewObject meta;
  meta.checksums = {{"crc32", ""}};
  auto upload = store->create_upload("m", "dir/a", meta);
  REQUIRE(upload);
  CHECK(upload->checksums == Metadata{{"crc32", ""}});
  CHECK(store->get_upload(upload->upload_id)->checksums == Metadata{{"crc32", ""}});
  auto blob = store->write_blob("part");
  REQUIRE(blob);
  const auto etag = crypto::to_hex(crypto::md5("part"));
  REQUIRE(store->put_part(upload->upload_id, 1, *blob, etag, {{"crc32", "AAAAAA=="}}));
  auto parts = store->list_parts(upload->upload_id);
  REQUIRE(parts);
  REQUIRE(parts->size() == 1);
  CHECK((*parts)[0].checksums == Metadata{{"crc32", "AAAAAA=="}});

  // list_uploads: this bucket's, under the prefix, by key.
  REQUIRE(store->create_upload("m", "dir/b", {}));
  REQUIRE(store->create_upload("m", "other", {}));
  REQUIRE(store->create_bucket("n", false));
  REQUIRE(store->create_upload("n", "dir/c", {}));
  auto listed = store->list_uploads("m", "dir/");
  REQUIRE(listed);
  REQUIRE(listed->size() == 2);
  CHECK((*listed)[0].key == "dir/a");
  CHECK((*listed)[0].checksums == Metadata{{"crc32", ""}});
  CHECK((*listed)[1].key == "dir/b");
  CHECK(store->list_uploads("nope", "").error().code == StoreErrc::no_such_bucket);

  // complete_upload with checksums: the object gets those, not the upload's.
  auto done = store->complete_upload(upload->upload_id, {{1, etag}}, Metadata{{"crc32", "x-1"}});
  REQUIRE(done);
  CHECK(done->checksums == Metadata{{"crc32", "x-1"}});
  CHECK(store->get_object("m", "dir/a")->checksums == Metadata{{"crc32", "x-1"}});
  CHECK(store->list_uploads("m", "dir/")->size() == 1);
  // The part keeps its own checksum in the object (even as its only part), after a reopen too.
  REQUIRE(done->parts.size() == 1);
  CHECK(done->parts[0].checksums == Metadata{{"crc32", "AAAAAA=="}});
  store.reset();
  store = open_store(dir.path());
  const auto reread = store->get_object("m", "dir/a");
  REQUIRE(reread);
  REQUIRE(reread->parts.size() == 1);
  CHECK(reread->parts[0].checksums == Metadata{{"crc32", "AAAAAA=="}});
  CHECK(reread->parts[0].hash == blob->hash);
}

TEST_CASE("a completed multipart object keeps each part's checksum", "[store]") {
  TempDir dir;
  {
    auto store = open_store(dir.path());
    REQUIRE(store->create_bucket("m", false));
  }
  // A data directory from before completed parts kept checksums: the column is added on open.
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir.path() / "meta.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "ALTER TABLE version_parts DROP COLUMN checksums", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = open_store(dir.path());
  NewObject meta;
  meta.checksums = {{"sha256", ""}};
  auto upload = store->create_upload("m", "big", meta);
  REQUIRE(upload);
  std::vector<std::pair<int, std::string>> listed;
  for (int i = 1; i <= 3; ++i) {
    const auto body = "part " + std::to_string(i);
    auto blob = store->write_blob(body);
    REQUIRE(blob);
    const auto etag = crypto::to_hex(crypto::md5(body));
    REQUIRE(store->put_part(upload->upload_id, i, *blob, etag,
                            {{"sha256", "sum-" + std::to_string(i)}}));
    listed.emplace_back(i, etag);
  }
  REQUIRE(store->complete_upload(upload->upload_id, listed, Metadata{{"sha256", "all-3"}}));
  const auto object = store->get_object("m", "big");
  REQUIRE(object);
  REQUIRE(object->parts.size() == 3);
  for (int i = 0; i < 3; ++i)
    CHECK(object->parts[i].checksums == Metadata{{"sha256", "sum-" + std::to_string(i + 1)}});
  // A copy of the object keeps them too (it names the same parts).
  REQUIRE(store->copy_object("m", "big", std::nullopt, "m", "copy", std::nullopt));
  CHECK(store->get_object("m", "copy")->parts[2].checksums == Metadata{{"sha256", "sum-3"}});
}

TEST_CASE("access keys: create, get, list, update roles, delete", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  // A role names a bucket that exists (grants are bound to the bucket, not the name).
  for (const auto* name : {"fork-1", "a", "b"})
    REQUIRE(store->create_bucket(name, false));
  auto key = store->create_access_key("agent-1", {{"fork-1", Role::editor}});
  REQUIRE(key);
  CHECK(key->id.starts_with("tid_"));
  CHECK(key->secret.starts_with("tsec_"));
  CHECK(key->id.size() > 20);
  CHECK(key->active);
  auto other = store->create_access_key("admin", {{"*", Role::namespace_admin}});
  REQUIRE(other);
  CHECK(other->id != key->id);
  CHECK(other->secret != key->secret);

  auto got = store->get_access_key(key->id);
  REQUIRE(got);
  CHECK(got->secret == key->secret);
  CHECK(got->name == "agent-1");
  REQUIRE(got->roles.size() == 1);
  CHECK(got->roles[0].bucket == "fork-1");
  CHECK(got->roles[0].role == Role::editor);

  REQUIRE(store->update_access_key_roles(key->id, {{"a", Role::read_only}, {"b", Role::editor}}));
  got = store->get_access_key(key->id);
  REQUIRE(got);
  REQUIRE(got->roles.size() == 2);
  CHECK(got->roles[0].role == Role::read_only);
  // Deleting a bucket deletes its grants; a new bucket of that name does not inherit them.
  REQUIRE(store->delete_bucket("b", false));
  REQUIRE(store->create_bucket("b", false));
  got = store->get_access_key(key->id);
  REQUIRE(got->roles.size() == 1);
  CHECK(got->roles[0].bucket == "a");
  REQUIRE(store->update_access_key_roles(key->id, {}));
  CHECK(store->get_access_key(key->id)->roles.empty());

  auto all = store->list_access_keys();
  REQUIRE(all);
  CHECK(all->size() == 2);
  REQUIRE(store->delete_access_key(key->id));
  CHECK(store->get_access_key(key->id).error().code == StoreErrc::no_such_access_key);
  CHECK(store->delete_access_key(key->id).error().code == StoreErrc::no_such_access_key);
  CHECK(store->update_access_key_roles(key->id, {}).error().code == StoreErrc::no_such_access_key);
  CHECK(store->list_access_keys()->size() == 1);
}

TEST_CASE("rotate_access_key replaces the secret and keeps the key's roles", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("b", false));
  auto key = store->create_access_key("agent", {{"b", Role::editor}});
  REQUIRE(key);
  auto rotated = store->rotate_access_key(key->id);
  REQUIRE(rotated);
  CHECK(rotated->id == key->id);
  CHECK(rotated->secret.starts_with("tsec_"));
  CHECK(rotated->secret != key->secret);
  const auto got = store->get_access_key(key->id);
  REQUIRE(got);
  CHECK(got->secret == rotated->secret);
  REQUIRE(got->roles.size() == 1);
  CHECK(got->roles[0].bucket == "b");
  CHECK(store->rotate_access_key("tid_nope").error().code == StoreErrc::no_such_access_key);
}

TEST_CASE("bucket_stats counts what readers see through the fork chain", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  CHECK(store->bucket_stats("src")->objects == 0);
  // More than one listing page (1000 keys) so that paging is counted once per key.
  for (int i = 0; i < 1203; ++i)
    put_text(*store, "src", "k/" + std::to_string(i), "xy");
  put_text(*store, "src", "big", std::string(100, 'z'));
  auto stats = store->bucket_stats("src");
  REQUIRE(stats);
  CHECK(stats->objects == 1204);
  CHECK(stats->bytes == 1203 * 2 + 100);

  REQUIRE(store->create_fork("f", "src", std::nullopt));
  put_text(*store, "f", "big", "tiny");       // overwrite: 100 -> 4 bytes
  REQUIRE(store->delete_object("f", "k/7"));  // tombstone
  put_text(*store, "f", "new", "12345");
  stats = store->bucket_stats("f");
  REQUIRE(stats);
  CHECK(stats->objects == 1204);
  CHECK(stats->bytes == 1202 * 2 + 4 + 5);
  CHECK(store->bucket_stats("src")->bytes == 1203 * 2 + 100);  // the source is untouched
  CHECK(store->bucket_stats("nope").error().code == StoreErrc::no_such_bucket);
}

TEST_CASE("LOCK refuses a second store on the same directory", "[store]") {
  TempDir dir;
  {
    auto store = open_store(dir.path());
    auto second = Store::open(dir.path());
    REQUIRE(!second);
    CHECK(second.error().code == StoreErrc::io);
    CHECK(second.error().message.find("in use") != std::string::npos);
  }
  auto reopened = Store::open(dir.path());
  CHECK(reopened);
}

TEST_CASE("reopen preserves everything and never reuses or lowers a seq", "[store]") {
  TempDir dir;
  Seq last = 0;
  std::string key_id;
  {
    auto store = open_store(dir.path(), Durability::normal);
    REQUIRE(store->create_bucket("s", true));
    put_text(*store, "s", "k", "v1");
    auto snap = store->take_snapshot("s", std::string("named"));
    REQUIRE(snap);
    REQUIRE(store->create_fork("f", "s", snap->version));
    put_text(*store, "f", "k", "fork");
    auto deleted = store->delete_object_version("s", "k");
    REQUIRE(deleted);
    REQUIRE(*deleted);
    last = **deleted;
    auto key = store->create_access_key("k", {{"f", Role::editor}});
    REQUIRE(key);
    key_id = key->id;
  }
  {
    auto store = open_store(dir.path(), Durability::normal);
    CHECK(get_text(*store, "s", "k") == no_such_key());
    CHECK(get_text(*store, "f", "k") == "fork");
    auto snaps = store->list_snapshots("s");
    REQUIRE(snaps);
    REQUIRE(snaps->size() == 1);
    CHECK((*snaps)[0].name == "named");
    CHECK(get_text(*store, "s", "k", (*snaps)[0].version) == "v1");
    CHECK(store->head_bucket("s")->has_children);
    CHECK(store->get_access_key(key_id));
    const auto next = put_text(*store, "s", "k2", "x");
    CHECK(next.seq > last);
  }
  // Push the persisted seq far past the clock: the next write must still go above it.
  const Seq future = Seq{4'000'000'000'000'000'000};
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir.path() / "meta.db").c_str(), &db) == SQLITE_OK);
    const std::string sql = "UPDATE meta SET v=" + std::to_string(future) + " WHERE k='last_seq'";
    REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = open_store(dir.path());
  CHECK(put_text(*store, "s", "k3", "y").seq == future + 1);
  CHECK(store->take_snapshot("s", std::nullopt)->version == future + 2);
}

TEST_CASE("every acknowledged PUT survives the writer's kill -9 (a process crash, not power loss)",
          "[store]") {
  // Any durability survives a process crash (the page cache outlives the process); only power
  // loss tells normal from off, which a test here cannot cause.
  TempDir dir;
  int acks[2];
  REQUIRE(::pipe(acks) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child writes until killed and acknowledges each PUT only after it returned.
    ::close(acks[0]);
    auto store = Store::open(dir.path(), StoreOptions{Durability::normal});
    if (!store || !(*store)->create_bucket("k", true)) ::_exit(1);
    for (std::uint32_t i = 0; i < 100'000; ++i) {
      const std::string body = "value-" + std::to_string(i);
      auto blob = (*store)->write_blob(body);
      NewObject object;
      if (blob) object.parts = {*blob};
      if (!blob || !(*store)->put_object("k", "key-" + std::to_string(i), object)) ::_exit(1);
      if (::write(acks[1], &i, sizeof i) != sizeof i) ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(acks[1]);
  std::uint32_t acked = 0;
  std::uint32_t last = 0;
  while (acked < 40 && ::read(acks[0], &last, sizeof last) == sizeof last)
    ++acked;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  while (::read(acks[0], &last, sizeof last) == sizeof last)
    ++acked;  // acks sent before death
  ::close(acks[0]);
  REQUIRE(acked >= 40);

  auto store = open_store(dir.path());  // the LOCK died with the child
  for (std::uint32_t i = 0; i < acked; ++i) {
    CHECK(get_text(*store, "k", "key-" + std::to_string(i)) == "value-" + std::to_string(i));
  }
}

TEST_CASE("small blobs live in the database, written with the row that names them", "[store]") {
  TempDir dir;
  const std::string at_bound(static_cast<std::size_t>(k_max_db_blob), 'b');
  const std::string past_bound = at_bound + "!";
  // Bytes owned by versions, and bytes of shared blobs, of one content.
  const auto owned_rows = [&](const std::string& hash) {
    return count_rows(dir.path(),
                      "SELECT count(*) FROM versions v JOIN blob_data d ON d.id=v.data_id "
                      "WHERE v.blob='" +
                          hash + "'");
  };
  const auto shared_rows = [&](const std::string& hash) {
    return count_rows(dir.path(), "SELECT count(*) FROM blobs WHERE hash='" + hash + "'");
  };
  {
    auto store = open_store(dir.path(), Durability::normal);
    REQUIRE(store->create_bucket("b", false));

    // Written but never put (a crash before the row): nothing is left anywhere.
    auto unused = store->write_blob("never put");
    REQUIRE(unused);
    REQUIRE(unused->bytes);
    CHECK(*unused->bytes == "never put");
    CHECK(unused->hash == crypto::sha256_hex("never put"));
    CHECK(!fs::exists(store->blob_path(*unused)));
    CHECK(owned_rows(unused->hash) == 0);
    CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 0);

    // At the bound, the object owns its bytes in the database (no shared blob row to write);
    // one byte more is a shared file.
    const auto small = put_text(*store, "b", "small", at_bound);
    const auto large = put_text(*store, "b", "large", past_bound);
    const auto& hash = small.parts.front().hash;
    CHECK(owned_rows(hash) == 1);
    CHECK(shared_rows(hash) == 0);
    CHECK(!fs::exists(store->blob_path(small.parts.front())));
    CHECK(owned_rows(large.parts.front().hash) == 0);
    CHECK(shared_rows(large.parts.front().hash) == 1);
    CHECK(fs::exists(store->blob_path(large.parts.front())));

    // A read carries the bytes of the version it resolved, and where they are kept.
    auto read = store->get_object("b", "small");
    REQUIRE(read);
    REQUIRE(read->parts.front().bytes);
    CHECK(*read->parts.front().bytes == at_bound);
    REQUIRE(read->parts.front().data_id);
    const BlobRef owned{hash, k_max_db_blob, {}, {}, read->parts.front().data_id};
    CHECK(store->db_blob_bytes(owned).value() == at_bound);
    const BlobRef file{large.parts.front().hash, large.parts.front().size};
    CHECK(!store->db_blob_bytes(file).value());

    // Equal content is not shared below the bound: each object owns a copy, and its bytes go
    // with it. A CopyObject copies them.
    const auto twin = put_text(*store, "b", "twin", at_bound);
    CHECK(twin.parts.front().hash == hash);
    CHECK(owned_rows(hash) == 2);
    auto copy = store->copy_object("b", "twin", std::nullopt, "b", "copy", std::nullopt);
    REQUIRE(copy);
    CHECK(copy->parts.front().hash == hash);
    CHECK(owned_rows(hash) == 3);
    REQUIRE(store->delete_object("b", "small"));
    CHECK(owned_rows(hash) == 2);
    put_text(*store, "b", "twin", "overwritten");  // a regular bucket keeps no old version
    CHECK(owned_rows(hash) == 1);
    CHECK(get_text(*store, "b", "copy") == at_bound);
    REQUIRE(store->delete_object("b", "copy"));
    CHECK(owned_rows(hash) == 0);
    CHECK(shared_rows(hash) == 0);
    CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 1);  // "overwritten"

    // Parts are shared by hash, whatever their size: a one-part upload of small content.
    auto upload = store->create_upload("b", "multi", {});
    REQUIRE(upload);
    auto part = store->write_blob("one small part");
    REQUIRE(part);
    REQUIRE(store->put_part(upload->upload_id, 1, *part, crypto::to_hex(crypto::md5("x"))));
    REQUIRE(store->complete_upload(upload->upload_id, {{1, crypto::to_hex(crypto::md5("x"))}}));
    CHECK(shared_rows(part->hash) == 1);
    CHECK(owned_rows(part->hash) == 0);
    CHECK(get_text(*store, "b", "multi") == "one small part");
  }
  // Durable across a restart, and at an older version through a snapshot.
  auto store = open_store(dir.path(), Durability::normal);
  CHECK(get_text(*store, "b", "twin") == "overwritten");
  CHECK(get_text(*store, "b", "multi") == "one small part");
  REQUIRE(store->create_bucket("s", true));
  put_text(*store, "s", "k", "first");
  auto snap = store->take_snapshot("s", std::nullopt);
  REQUIRE(snap);
  put_text(*store, "s", "k", "second");
  CHECK(get_text(*store, "s", "k", snap->version) == "first");
  CHECK(get_text(*store, "s", "k") == "second");
  // Deleting the bucket takes the bytes its versions owned with them.
  REQUIRE(store->delete_bucket("s", true));
  store->wait_for_reclaims();
  CHECK(owned_rows(crypto::sha256_hex("first")) == 0);
  CHECK(count_rows(
            dir.path(),
            "SELECT count(*) FROM blob_data WHERE CAST(data AS TEXT) IN ('first', 'second')") == 0);
}

// Data directories from before blob_data kept small blobs' bytes in blob_bytes, by hash, and
// every object's blob was shared and counted: the bytes move on open, the objects keep naming
// the shared blobs, and every reference to them still counts.
TEST_CASE("small blobs kept by hash in earlier layouts are read, counted and freed after open",
          "[store]") {
  TempDir dir;
  Seq before_second = 0;
  {
    auto store = open_store(dir.path());
    REQUIRE(store->create_bucket("b", false));
    REQUIRE(store->create_bucket("s", true));
    put_text(*store, "b", "one", "shared");
    put_text(*store, "b", "two", "shared");
    put_text(*store, "s", "k", "first");
    before_second = store->take_snapshot("s", std::nullopt)->version;
    put_text(*store, "s", "k", "second");
  }
  {  // back to the earlier layout: shared, counted blobs, their bytes by hash
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open((dir.path() / "meta.db").c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "INSERT INTO blobs(hash, size, refcnt, data_id) "
                         "  SELECT blob, size, count(*), min(data_id) FROM versions "
                         "  WHERE data_id IS NOT NULL GROUP BY blob;"
                         "DELETE FROM blob_data WHERE id NOT IN (SELECT data_id FROM blobs);"
                         "ALTER TABLE versions DROP COLUMN data_id;"
                         "CREATE TABLE blob_bytes(hash TEXT PRIMARY KEY, data BLOB NOT NULL);"
                         "INSERT INTO blob_bytes SELECT b.hash, d.data FROM blobs b "
                         "  JOIN blob_data d ON d.id=b.data_id;"
                         "DROP TABLE blob_data;"
                         "ALTER TABLE blobs DROP COLUMN data_id;",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_bytes") == 3);
  CHECK(count_rows(dir.path(), "SELECT refcnt FROM blobs WHERE hash='" +
                                   crypto::sha256_hex("shared") + "'") == 2);
  auto store = open_store(dir.path());
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions WHERE data_id IS NOT NULL") == 0);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM sqlite_master WHERE name='blob_bytes'") == 0);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 3);
  CHECK(get_text(*store, "b", "one") == "shared");
  CHECK(get_text(*store, "b", "two") == "shared");
  CHECK(get_text(*store, "s", "k", before_second) == "first");
  CHECK(get_text(*store, "s", "k") == "second");
  // The last reference takes the bytes with it; new bytes get rows of their own.
  REQUIRE(store->delete_object("b", "one"));
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 3);
  REQUIRE(store->delete_object("b", "two"));
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 2);
  put_text(*store, "b", "three", "new");  // owns its bytes, as any new small object
  CHECK(get_text(*store, "b", "three") == "new");
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions WHERE data_id IS NOT NULL") == 1);
  CHECK(get_text(*store, "s", "k", before_second) == "first");
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 3);
  // A copy of an object in the earlier layout shares its blob, as it did then.
  REQUIRE(store->copy_object("s", "k", std::nullopt, "b", "copied", std::nullopt));
  CHECK(count_rows(dir.path(), "SELECT refcnt FROM blobs WHERE hash='" +
                                   crypto::sha256_hex("second") + "'") == 2);
  CHECK(get_text(*store, "b", "copied") == "second");
}

TEST_CASE("open sweeps tmp/ and orphan blob files", "[store]") {
  TempDir dir;
  fs::path orphan;
  fs::path kept;
  {
    auto store = open_store(dir.path());
    REQUIRE(store->create_bucket("b", false));
    kept = store->blob_path(put_text(*store, "b", "k", file_sized("referenced")).parts.front());
    auto blob = store->write_blob(file_sized("never put"));  // a crash between rename and commit
    REQUIRE(blob);
    orphan = store->blob_path(*blob);
    std::ofstream(store->tmp_dir() / "half-written") << "partial upload";
  }
  REQUIRE(fs::exists(orphan));
  auto store = open_store(dir.path());
  CHECK(!fs::exists(orphan));
  CHECK(fs::exists(kept));
  CHECK(fs::is_empty(dir.path() / "tmp"));
  CHECK(get_text(*store, "b", "k") == file_sized("referenced"));
}

TEST_CASE("adopt_blob moves a streamed file into place", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::full);
  const fs::path file = store->tmp_dir() / "upload-1";
  const auto body = file_sized("streamed body");
  std::ofstream(file) << body;
  auto blob = store->adopt_blob(file, crypto::sha256_hex(body));
  REQUIRE(blob);
  CHECK(blob->size == std::ssize(body));
  CHECK(!blob->bytes);
  CHECK(!fs::exists(file));
  CHECK(read_file(store->blob_path(*blob)) == body);
  CHECK(store->adopt_blob(file, "not-a-hash").error().code == StoreErrc::invalid_argument);
  REQUIRE(store->create_bucket("b", true));
  NewObject object;
  object.parts = {*blob};
  REQUIRE(store->put_object("b", "k", object));
  CHECK(get_text(*store, "b", "k") == body);

  // A small streamed file joins the database, checked against the hash it was given.
  std::ofstream(file) << "small streamed body";
  auto small = store->adopt_blob(file, crypto::sha256_hex("small streamed body"));
  REQUIRE(small);
  REQUIRE(small->bytes);
  CHECK(*small->bytes == "small streamed body");
  CHECK(!fs::exists(file));
  CHECK(!fs::exists(store->blob_path(*small)));
  std::ofstream(file) << "other bytes";
  CHECK(store->adopt_blob(file, crypto::sha256_hex("small streamed body")).error().code ==
        StoreErrc::invalid_argument);

  // A row can never name a blob that was not written.
  object.parts = {BlobRef{std::string(64, 'a'), 1}};
  CHECK(store->put_object("b", "k", object).error().code == StoreErrc::invalid_argument);
}

TEST_CASE("concurrent puts from 8 threads are all readable", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("c", true));
  constexpr int k_threads = 8;
  constexpr int k_per_thread = 60;
  std::atomic<int> failures{0};
  std::atomic<bool> writing{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < k_per_thread; ++i) {
        std::string body = std::to_string(t);  // "t<thread>-<i>", built by appending:
        body.insert(0, 1, 't');                // g++ 12 -O3 warns falsely on "t" + string
        body += '-';
        body += std::to_string(i);
        auto blob = store->write_blob(body);
        NewObject object;
        object.etag = body;
        if (blob) object.parts = {*blob};
        if (!blob || !store->put_object("c", body, object)) ++failures;
        if (i % 10 == 0 && t == 0) {
          if (!store->create_fork("fork-" + std::to_string(i), "c", std::nullopt)) ++failures;
        }
      }
    });
  }
  // Readers alongside: every page is a consistent, ordered view.
  std::thread reader([&] {
    while (writing) {
      auto page = store->list_objects("c", {});
      if (!page) {
        ++failures;
        continue;
      }
      for (std::size_t i = 1; i < page->objects.size(); ++i) {
        if (!(page->objects[i - 1].key < page->objects[i].key)) ++failures;
      }
    }
  });
  for (auto& thread : threads)
    thread.join();
  writing = false;
  reader.join();
  CHECK(failures == 0);

  ListQuery query;
  query.max_keys = 1000;
  auto page = store->list_objects("c", query);
  REQUIRE(page);
  CHECK(page->objects.size() == k_threads * k_per_thread);
  std::set<Seq> seqs;
  for (const auto& object : page->objects) {
    seqs.insert(object.seq);
    CHECK(get_text(*store, "c", object.key) == object.key);
  }
  CHECK(seqs.size() == k_threads * k_per_thread);  // unique
}

TEST_CASE("writes committed together: one that fails undoes only its own changes", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("g", false));
  REQUIRE(store->create_bucket("taken", false));
  constexpr int k_threads = 8;
  constexpr int k_per_thread = 150;
  std::atomic<int> unexpected{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < k_per_thread; ++i) {
        const auto key = fmt::format("t{}-{}", t, i);
        const auto content = (i % 3 == 0) ? file_sized(key) : key;  // files and database blobs
        auto blob = store->write_blob(content);
        if (!blob) {
          ++unexpected;
          continue;
        }
        NewObject object;
        object.etag = key;
        object.parts = {*blob};
        switch (i % 4) {
          case 0:  // fails inside its body, after the bucket lookup
            if (store->put_object("no-such-bucket", key, object)) ++unexpected;
            break;
          case 1:  // fails: the name is taken
            if (store->create_bucket("taken", false)) ++unexpected;
            if (!store->put_object("g", key, object)) ++unexpected;
            break;
          default:
            if (!store->put_object("g", key, object)) ++unexpected;
        }
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  CHECK(unexpected == 0);

  for (int t = 0; t < k_threads; ++t) {
    for (int i = 0; i < k_per_thread; ++i) {
      const auto key = fmt::format("t{}-{}", t, i);
      const auto want = (i % 3 == 0) ? file_sized(key) : key;
      if (i % 4 == 0) {
        CHECK(get_text(*store, "g", key) == no_such_key());
      } else {
        CHECK(get_text(*store, "g", key) == want);
      }
    }
  }
  // No reference leaked from an undone write: each shared blob is counted by exactly the rows
  // that name it, and small bytes belong to one shared blob or one version, never to none.
  CHECK(count_rows(dir.path(),
                   "SELECT count(*) FROM blobs b WHERE refcnt != "
                   "(SELECT count(*) FROM versions v WHERE v.blob = b.hash AND v.data_id IS NULL)"
                   " + (SELECT count(*) FROM version_parts p WHERE p.blob = b.hash)") == 0);
  CHECK(count_rows(dir.path(),
                   "SELECT count(*) FROM blob_data WHERE id NOT IN "
                   "(SELECT data_id FROM blobs WHERE data_id IS NOT NULL UNION ALL "
                   " SELECT data_id FROM versions WHERE data_id IS NOT NULL)") == 0);
  CHECK(count_rows(dir.path(),
                   "SELECT count(*) FROM (SELECT data_id FROM versions WHERE data_id IS NOT NULL "
                   "GROUP BY data_id HAVING count(*) > 1)") == 0);
  CHECK(count_rows(dir.path(),
                   "SELECT count(*) FROM versions v WHERE data_id IS NOT NULL AND "
                   "NOT EXISTS (SELECT 1 FROM blob_data d WHERE d.id = v.data_id)") == 0);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blobs WHERE size <= " +
                                   std::to_string(k_max_db_blob) + " AND data_id IS NULL") == 0);
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM buckets WHERE name='taken'") == 1);
}

// put_object_async queues the write and returns: the result comes back once the write is
// committed (or refused), on the committer thread; a store being closed still commits and
// answers every write queued before.
TEST_CASE("asynchronous puts are answered after their commit, even while the store closes",
          "[store]") {
  TempDir dir;
  constexpr int k_puts = 600;
  struct Answer {
    Result<ObjectInfo> result;
    std::thread::id thread;
  };
  std::mutex mu;
  std::map<int, Answer> answers;  // guarded by mu
  const auto caller = std::this_thread::get_id();
  {
    auto store = open_store(dir.path(), Durability::normal);
    REQUIRE(store->create_bucket("a", false));
    for (int i = 0; i < k_puts; ++i) {
      // Every tenth into a bucket that does not exist; every hundredth with an invalid key.
      const auto bucket = i % 10 == 3 ? std::string("missing") : std::string("a");
      const auto key = i % 100 == 7 ? std::string() : fmt::format("k{:04}", i);
      auto blob = store->write_blob(fmt::format("body {}", i));
      REQUIRE(blob);
      NewObject object;
      object.etag = fmt::format("etag-{}", i);
      object.parts = {*blob};
      store->put_object_async(bucket, key, std::move(object), [&, i](Result<ObjectInfo> result) {
        std::lock_guard lock(mu);
        answers.emplace(i, Answer{std::move(result), std::this_thread::get_id()});
      });
    }
    // Most writes are likely still queued here: closing the store commits and answers them.
  }
  std::lock_guard lock(mu);
  REQUIRE(answers.size() == k_puts);
  std::set<std::thread::id> committers;
  auto store = open_store(dir.path(), Durability::normal);
  for (int i = 0; i < k_puts; ++i) {
    const auto& answer = answers.at(i);
    const auto key = fmt::format("k{:04}", i);
    if (i % 100 == 7) {  // refused at once, on the caller's thread
      REQUIRE(!answer.result);
      CHECK(answer.result.error().code == StoreErrc::invalid_argument);
      CHECK(answer.thread == caller);
      continue;
    }
    CHECK(answer.thread != caller);
    committers.insert(answer.thread);
    if (i % 10 == 3) {
      REQUIRE(!answer.result);
      CHECK(answer.result.error().code == StoreErrc::no_such_bucket);
    } else {
      REQUIRE(answer.result);
      CHECK(answer.result->key == key);
      CHECK(answer.result->etag == fmt::format("etag-{}", i));
      CHECK(get_text(*store, "a", key) == fmt::format("body {}", i));
    }
  }
  CHECK(committers.size() == 1);
  ListQuery query;
  query.max_keys = 1000;
  auto page = store->list_objects("a", query);
  REQUIRE(page);
  CHECK(page->objects.size() == k_puts - k_puts / 10 - k_puts / 100);
}

// The WAL is checkpointed beside the writes (SQLite's own checkpoint inside a COMMIT is
// replaced): the database file receives the data while the store is open, and the WAL is
// started over rather than holding every page ever written, even under a steady stream of
// writes that leaves a checkpoint beside them no gap to finish in.
TEST_CASE("checkpoints run in the background and keep the WAL bounded", "[store]") {
  TempDir dir;
  StoreOptions options;
  options.durability = Durability::normal;
  options.checkpoint_frames = 100;  // writers held for a last pass at 1,600 frames
  auto opened = Store::open(dir.path(), options);
  REQUIRE(opened);
  auto& store = **opened;
  REQUIRE(store.create_bucket("wal", false));
  constexpr int k_objects = 12000;
  std::string content(4000, 'x');
  for (int i = 0; i < k_objects; ++i) {
    const auto key = fmt::format("k{:05}", i);
    content.replace(0, key.size(), key);  // every blob its own
    put_text(store, "wal", key, content);
  }
  const auto written = std::uintmax_t{k_objects} * content.size();
  const auto db = dir.path() / "meta.db";
  const auto wal = dir.path() / "meta.db-wal";
  // A state, with a generous deadline: the checkpointer has copied most of it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (std::filesystem::file_size(db) < written * 3 / 4 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(std::filesystem::file_size(db) >= written * 3 / 4);  // the last pages may wait
  // The WAL header's checkpoint sequence number (big-endian, bytes 12..15) counts the times
  // a write started the WAL over; a WAL that was never started over holds every page. (With
  // writes back to back, only a pass with writers held lets one start it over.)
  std::ifstream header(wal, std::ios::binary);
  unsigned char bytes[16] = {};
  REQUIRE(header.read(reinterpret_cast<char*>(bytes), sizeof bytes));
  const auto restarts = (std::uint32_t{bytes[12]} << 24) | (std::uint32_t{bytes[13]} << 16) |
                        (std::uint32_t{bytes[14]} << 8) | std::uint32_t{bytes[15]};
  CHECK(restarts >= 1);
  CHECK(get_text(store, "wal", "k11999").starts_with("k11999x"));
}

TEST_CASE("listing: a page steps over a bounded number of deleted keys", "[store]") {
  // Issue 24 §2.2: 8 listings of an emptied 40k-key fork slowed every other reader, since
  // each page read every tombstone before its first visible key.
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  constexpr int k_keys = 40000;
  constexpr int k_kept = 20000;  // the one source key the fork keeps
  const auto key_of = [](int i) {
    char key[16];
    std::snprintf(key, sizeof key, "k%05d", i);
    return std::string(key);
  };
  for (int i = 0; i < k_keys; ++i)
    put_text(*store, "src", key_of(i), "v");
  REQUIRE(store->create_fork("emptied", "src", std::nullopt));
  for (int i = 0; i < k_keys; ++i) {
    if (i != k_kept) REQUIRE(store->delete_object("emptied", key_of(i)));
  }
  put_text(*store, "emptied", "z-last", "z");

  for (const char* delimiter : {"", "/"}) {
    ListQuery query;
    query.delimiter = delimiter;
    std::vector<std::string> listed;
    int pages = 0;
    while (true) {
      auto page = store->list_objects("emptied", query);
      REQUIRE(page);
      ++pages;
      CHECK(page->rows_read <= query.max_keys + 1000);
      for (const auto& object : page->objects)
        listed.push_back(object.key);
      CHECK(page->common_prefixes.empty());
      if (!page->truncated) break;
      REQUIRE(pages < 200);  // each page moves on
      query.after = page->last;
      query.after_is_prefix = page->last_is_prefix;
    }
    CHECK(listed == std::vector<std::string>{key_of(k_kept), "z-last"});
    // Two rows per deleted key (the tombstone and the source's version it shadows).
    CHECK(pages >= 2 * (k_keys - 1) / 2000);
  }

  // The first page is cut short with no key at all, and says where to go on.
  ListQuery first;
  first.max_keys = 1;
  auto page = store->list_objects("emptied", first);
  REQUIRE(page);
  CHECK(page->objects.empty());
  CHECK(page->truncated);
  CHECK(page->rows_read <= 1001);
  CHECK(page->last > key_of(0));

  // What reads every page still sees the whole bucket.
  const auto stats = store->bucket_stats("emptied");
  REQUIRE(stats);
  CHECK(stats->objects == 2);
  const auto refused = store->delete_bucket("emptied", false);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == StoreErrc::bucket_not_empty);
}

TEST_CASE("listing: a cut page never resumes at a deleted \"dir/\" with keys under it", "[store]") {
  // A v1 marker shaped like a common prefix is read as one (its subtree is skipped). A page
  // cut right after the deleted key "d/" must not answer NextMarker "d/" while "d/x" is still
  // to come, or the CommonPrefix "d/" is never listed.
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  constexpr int k_deleted = 499;  // two rows each in the fork: 998, then "d/" makes 1000
  const auto key_of = [](int i) {
    char key[16];
    std::snprintf(key, sizeof key, "a%04d", i);
    return std::string(key);
  };
  for (int i = 0; i < k_deleted; ++i)
    put_text(*store, "src", key_of(i), "v");
  put_text(*store, "src", "d/", "v");
  put_text(*store, "src", "d/x", "v");
  REQUIRE(store->create_fork("fork", "src", std::nullopt));
  for (int i = 0; i < k_deleted; ++i)
    REQUIRE(store->delete_object("fork", key_of(i)));
  REQUIRE(store->delete_object("fork", "d/"));
  put_text(*store, "fork", "d/x", "w");  // two rows: past max_keys + 1000 = 1001

  ListQuery query;
  query.delimiter = "/";
  query.max_keys = 1;
  std::vector<std::string> prefixes;
  std::vector<std::string> keys;
  int pages = 0;
  while (true) {
    auto page = store->list_objects("fork", query);
    REQUIRE(page);
    REQUIRE(++pages < 10);
    for (const auto& object : page->objects)
      keys.push_back(object.key);
    prefixes.insert(prefixes.end(), page->common_prefixes.begin(), page->common_prefixes.end());
    if (!page->truncated) break;
    if (pages == 1) CHECK(page->last != "d/");
    // What ListObjects v1 does with the NextMarker it is sent back.
    query.after = page->last;
    query.after_is_prefix = query.names_common_prefix(page->last);
  }
  CHECK(keys.empty());
  CHECK(prefixes == std::vector<std::string>{"d/"});
}

TEST_CASE("admit_data: a body bigger than the room left is refused; the reserve stays", "[store]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("b", true));
  CHECK(store->admit_data(0));
  CHECK(store->admit_data(1 << 20));
  const auto refused = store->admit_data(std::int64_t{1} << 60);  // more than any disk here
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == StoreErrc::no_space);
  CHECK(std::filesystem::exists(dir.path() / "reserve"));  // a big body gives nothing up
  put_text(*store, "b", "k", "still stored");
  CHECK(get_text(*store, "b", "k") == "still stored");
}

TEST_CASE("listing: which keys name a common prefix", "[store]") {
  ListQuery query;
  query.prefix = "p/";
  query.delimiter = "/";
  CHECK(query.names_common_prefix("p/d/"));
  CHECK_FALSE(query.names_common_prefix("p/"));      // the prefix itself
  CHECK_FALSE(query.names_common_prefix("p/d/e/"));  // two segments
  CHECK_FALSE(query.names_common_prefix("p/d"));
  CHECK_FALSE(query.names_common_prefix("q/d/"));
  query.delimiter = "";
  CHECK_FALSE(query.names_common_prefix("p/d/"));
  query.prefix = "";
  query.delimiter = "--";
  CHECK(query.names_common_prefix("a--"));
  CHECK_FALSE(query.names_common_prefix("a--b--"));
}

}  // namespace
}  // namespace tfork::store::test
