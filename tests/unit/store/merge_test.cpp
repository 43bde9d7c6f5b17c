// SPDX-License-Identifier: Apache-2.0
// Merge of a fork into its parent and rebase of a fork (tigris-wire §2.11): what lands, what
// is left alone, the conflict rule, atomicity and the O(changed rows) promise.

#include <catch2/catch.hpp>

#include "store_test_support.hpp"

namespace tfork::store::test {
namespace {

std::vector<std::string> keys_of(Store& store, std::string_view bucket) {
  auto page = store.list_objects(bucket, ListQuery{});
  REQUIRE(page);
  std::vector<std::string> keys;
  for (const auto& object : page->objects)
    keys.push_back(object.key);
  return keys;
}

TEST_CASE("merge applies the fork's writes and deletes onto its parent", "[store][merge]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  put_text(*store, "src", "keep", "k1");
  put_text(*store, "src", "edit", "e1");
  put_text(*store, "src", "gone", "g1");
  put_text(*store, "src", "both", "b1");
  REQUIRE(store->create_fork("agent", "src", std::nullopt));

  put_text(*store, "agent", "edit", "e-agent");
  put_text(*store, "agent", "new", "n-agent");
  REQUIRE(store->delete_object("agent", "gone"));
  put_text(*store, "agent", "both", "b-agent");
  put_text(*store, "agent", "temp", "t");  // written then deleted: no change
  REQUIRE(store->delete_object("agent", "temp"));
  put_text(*store, "agent", "keep", "k1");  // rewritten with the same content: no change
  // Meanwhile the parent moves on.
  put_text(*store, "src", "both", "b-src");
  put_text(*store, "src", "keep", "k-src");
  put_text(*store, "src", "temp", "t-src");

  const auto snapshot = store->take_snapshot("src", std::string("before"));
  REQUIRE(snapshot);
  const Seq before = snapshot->version;
  auto merged = store->merge_fork("src", "agent");
  REQUIRE(merged);
  CHECK(merged->written == 3);  // edit, new, both
  CHECK(merged->deleted == 1);  // gone
  CHECK(merged->version > before);

  CHECK(get_text(*store, "src", "edit") == "e-agent");
  CHECK(get_text(*store, "src", "new") == "n-agent");
  CHECK(get_text(*store, "src", "gone") == no_such_key());
  CHECK(get_text(*store, "src", "both") == "b-agent");  // changed on both sides: the fork wins
  CHECK(get_text(*store, "src", "keep") == "k-src");    // the fork did not change it
  CHECK(get_text(*store, "src", "temp") == "t-src");    // nor this one
  CHECK(keys_of(*store, "src") == std::vector<std::string>{"both", "edit", "keep", "new", "temp"});
  // The parent before the merge is still readable at the snapshot, and after it at the version.
  CHECK(get_text(*store, "src", "edit", before) == "e1");
  CHECK(get_text(*store, "src", "gone", before) == "g1");
  CHECK(get_text(*store, "src", "edit", merged->version) == "e-agent");
  // The fork itself is unchanged.
  CHECK(get_text(*store, "agent", "edit") == "e-agent");
  CHECK(get_text(*store, "agent", "keep") == "k1");
}

TEST_CASE("merge refuses anything but a direct fork, and changes nothing then", "[store][merge]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  REQUIRE(store->create_bucket("other", true));
  put_text(*store, "src", "a", "1");
  REQUIRE(store->create_fork("child", "src", std::nullopt));
  REQUIRE(store->create_fork("grandchild", "child", std::nullopt));
  put_text(*store, "grandchild", "a", "deep");

  const auto code = [&](std::string_view target, std::string_view fork) {
    auto result = store->merge_fork(target, fork);
    REQUIRE_FALSE(result);
    return result.error().code;
  };
  CHECK(code("src", "grandchild") == StoreErrc::invalid_argument);  // not direct
  CHECK(code("other", "child") == StoreErrc::invalid_argument);     // another bucket's fork
  CHECK(code("child", "src") == StoreErrc::invalid_argument);       // the wrong way round
  CHECK(code("src", "src") == StoreErrc::invalid_argument);
  CHECK(code("src", "missing") == StoreErrc::no_such_bucket);
  CHECK(code("missing", "child") == StoreErrc::no_such_bucket);
  CHECK(get_text(*store, "src", "a") == "1");

  // A fork of a fork merges into its own parent, and only there.
  auto merged = store->merge_fork("child", "grandchild");
  REQUIRE(merged);
  CHECK(get_text(*store, "child", "a") == "deep");
  CHECK(get_text(*store, "src", "a") == "1");
}

TEST_CASE("merge is O(the fork's rows): a large parent is never scanned", "[store][merge]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("big", true));
  auto blob = store->write_blob("x");
  REQUIRE(blob);
  for (int i = 0; i < 3000; ++i) {
    NewObject object;
    object.etag = "e";
    object.parts = {*blob};
    REQUIRE(store->put_object("big", "obj-" + std::to_string(i), object));
  }
  REQUIRE(store->create_fork("small", "big", std::nullopt));
  for (int i = 0; i < 10; ++i)
    put_text(*store, "small", "obj-" + std::to_string(i * 7), "changed");
  const auto rows_before = count_rows(dir.path(), "SELECT count(*) FROM versions");
  auto merged = store->merge_fork("big", "small");
  REQUIRE(merged);
  CHECK(merged->written == 10);
  // Exactly one new row per changed key: nothing was copied or rewritten.
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM versions") == rows_before + 10);
  CHECK(get_text(*store, "big", "obj-7") == "changed");
  CHECK(get_text(*store, "big", "obj-8") == "x");
}

TEST_CASE("merged content survives deleting the fork", "[store][merge]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  REQUIRE(store->create_fork("agent", "src", std::nullopt));
  put_text(*store, "agent", "result", "the answer");
  REQUIRE(store->merge_fork("src", "agent"));
  // A small object owns its bytes: the merged version has a copy of its own.
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 2);
  REQUIRE(store->delete_bucket("agent", true));
  store->wait_for_reclaims();  // the fork's rows go, and the bytes they owned
  CHECK(count_rows(dir.path(), "SELECT count(*) FROM blob_data") == 1);
  CHECK(get_text(*store, "src", "result") == "the answer");
}

TEST_CASE("rebase moves the base to the parent's present and keeps the fork's writes",
          "[store][rebase]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  put_text(*store, "src", "a", "a1");
  put_text(*store, "src", "b", "b1");
  auto fork = store->create_fork("agent", "src", std::nullopt);
  REQUIRE(fork);
  put_text(*store, "agent", "a", "a-agent");
  REQUIRE(store->delete_object("agent", "b"));
  auto snap = store->take_snapshot("agent", std::string("mine"));
  REQUIRE(snap);
  put_text(*store, "src", "a", "a2");
  put_text(*store, "src", "c", "c2");
  CHECK(get_text(*store, "agent", "c") == no_such_key());

  auto rebased = store->rebase_fork("agent");
  REQUIRE(rebased);
  REQUIRE(rebased->fork_snapshot);
  CHECK(*rebased->fork_snapshot > *fork->fork_snapshot);
  CHECK(rebased->fork_source == "src");
  CHECK(get_text(*store, "agent", "c") == "c2");       // the parent's present shows through
  CHECK(get_text(*store, "agent", "a") == "a-agent");  // the fork's own write stays
  CHECK(get_text(*store, "agent", "b") == no_such_key());
  CHECK(keys_of(*store, "agent") == std::vector<std::string>{"a", "c"});
  // The fork's own snapshots stay listed.
  auto snapshots = store->list_snapshots("agent");
  REQUIRE(snapshots);
  REQUIRE(snapshots->size() == 1);
  CHECK((*snapshots)[0].name == "mine");
  // Later parent writes stay out again.
  put_text(*store, "src", "d", "d3");
  CHECK(get_text(*store, "agent", "d") == no_such_key());
  // And it can still be deleted, and the parent after it.
  REQUIRE(store->delete_bucket("agent", true));
  REQUIRE(store->delete_bucket("src", true));
}

TEST_CASE("rebase keeps the fork's key roles: the agent's key still works", "[store][rebase]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  REQUIRE(store->create_fork("agent", "src", std::nullopt));
  auto key = store->create_access_key("agent", {{"agent", Role::editor}});
  REQUIRE(key);
  REQUIRE(store->rebase_fork("agent"));
  auto got = store->get_access_key(key->id);
  REQUIRE(got);
  REQUIRE(got->roles.size() == 1);
  CHECK(got->roles[0].bucket == "agent");
  CHECK(got->roles[0].role == Role::editor);
  // Still bound to the live bucket: deleting it takes the grant with it.
  REQUIRE(store->delete_bucket("agent", true));
  CHECK(store->get_access_key(key->id)->roles.empty());
}

TEST_CASE("rebase refuses non-forks and forks that have forks", "[store][rebase]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->create_bucket("src", true));
  REQUIRE(store->create_fork("child", "src", std::nullopt));
  REQUIRE(store->create_fork("grandchild", "child", std::nullopt));
  auto not_fork = store->rebase_fork("src");
  REQUIRE_FALSE(not_fork);
  CHECK(not_fork.error().code == StoreErrc::invalid_argument);
  auto has_forks = store->rebase_fork("child");
  REQUIRE_FALSE(has_forks);
  CHECK(has_forks.error().code == StoreErrc::bucket_has_forks);
  CHECK(store->rebase_fork("grandchild"));
  auto missing = store->rebase_fork("missing");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == StoreErrc::no_such_bucket);
}

TEST_CASE("a fork whose forks were deleted is rebased while they are still reclaimed",
          "[store][rebase]") {
  // A deleted fork's rows go in the background (in batches of 500); its row names its parent
  // until then. That must not refuse the parent's rebase as "has forks".
  TempDir dir;
  {
    auto store = open_store(dir.path());
    REQUIRE(store->create_bucket("src", true));
    REQUIRE(store->create_fork("child", "src", std::nullopt));
    REQUIRE(store->create_fork("grandchild", "child", std::nullopt));
    for (int i = 0; i < 4000; ++i)
      put_text(*store, "grandchild", "k" + std::to_string(i), "g");
    put_text(*store, "src", "late", "l");
    REQUIRE(store->delete_bucket("grandchild", true));
    auto rebased = store->rebase_fork("child");
    REQUIRE(rebased);
    CHECK(get_text(*store, "child", "late") == "l");
    store->wait_for_reclaims();
    CHECK_FALSE(store->head_bucket("grandchild"));
  }
  auto store = open_store(dir.path());  // nothing left half-done
  CHECK(get_text(*store, "child", "late") == "l");
  REQUIRE(store->create_fork("grandchild", "child", std::nullopt));
  CHECK(get_text(*store, "grandchild", "late") == "l");
  CHECK_FALSE(store->get_object("grandchild", "k1", std::nullopt));
}

TEST_CASE("a rebased fork survives reopening the store", "[store][rebase]") {
  TempDir dir;
  Seq horizon = 0;
  {
    auto store = open_store(dir.path());
    REQUIRE(store->create_bucket("src", true));
    REQUIRE(store->create_fork("agent", "src", std::nullopt));
    put_text(*store, "agent", "mine", "m");
    put_text(*store, "src", "late", "l");
    auto rebased = store->rebase_fork("agent");
    REQUIRE(rebased);
    horizon = *rebased->fork_snapshot;
  }
  auto store = open_store(dir.path());
  auto head = store->head_bucket("agent");
  REQUIRE(head);
  CHECK(head->fork_snapshot == horizon);
  CHECK(get_text(*store, "agent", "mine") == "m");
  CHECK(get_text(*store, "agent", "late") == "l");
}

}  // namespace
}  // namespace tfork::store::test
