// SPDX-License-Identifier: Apache-2.0
// Merging a fork into its parent and rebasing a fork onto its parent (tigris-wire §2.11).
// Both touch only what the fork itself wrote, never what is visible through it.

#include "sqlite_store.hpp"

namespace tfork::store {

namespace {

// Two versions hold the same content when they name the same blobs in the same order; the
// ETag alone is not enough (a client may send any md5 for a copy).
bool same_content(const ObjectInfo& a, const ObjectInfo& b) {
  if (a.etag != b.etag || a.parts.size() != b.parts.size()) return false;
  for (std::size_t i = 0; i < a.parts.size(); ++i) {
    if (a.parts[i].hash != b.parts[i].hash) return false;
  }
  return true;
}

}  // namespace

Result<MergeResult> SqliteStore::merge_fork(std::string_view target, std::string_view fork) {
  return write([&](WriteCtx& ctx) -> Result<MergeResult> {
    const auto parent = find_bucket(ctx.db, target);
    if (!parent) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(target));
    const auto child = find_bucket(ctx.db, fork);
    if (!child) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(fork));
    if (child->parent_id != parent->id || !child->fork_seq) {
      return failure(StoreErrc::invalid_argument,
                     child->name + " is not a direct fork of " + parent->name);
    }

    // The keys the fork changed: one row per key it wrote or deleted, its newest.
    std::vector<std::string> keys;
    {
      auto q = ctx.db.query("SELECT DISTINCT key FROM versions WHERE bucket_id=?1 ORDER BY key");
      q->bind(1, child->id);
      while (q->step())
        keys.push_back(q->text(0));
    }

    // The fork's base is the parent (through its own chain) at the fork point; the parent's
    // current state is where the changes land.
    const auto base_layers = chain(ctx.db, parent->id, *child->fork_seq);
    const auto live_layers = chain(ctx.db, parent->id, std::nullopt);
    MergeResult result;
    for (const auto& key : keys) {
      const auto mine = latest_in_layer(ctx.db, child->id, key, k_seq_max);
      if (!mine) continue;
      const auto base = resolve(ctx.db, base_layers, key);
      if (mine->kind == k_kind_tombstone) {
        // Deleted in the fork: a change only when the key existed at the fork point.
        if (!base) continue;
        if (!resolve(ctx.db, live_layers, key)) continue;  // already gone in the parent
        insert_version(ctx, *parent, key, nullptr);
        ++result.deleted;
        continue;
      }
      const ObjectInfo theirs = object_info(ctx.db, child->id, key, *mine);
      if (base && same_content(theirs, object_info(ctx.db, base->bucket_id, key, base->row))) {
        continue;  // rewritten with what it already held: not a change
      }
      // The local store's rule for a key changed on both sides: the fork's version wins.
      NewObject object;
      object.etag = theirs.etag;
      object.content_type = theirs.content_type;
      object.user_meta = theirs.user_meta;
      object.checksums = theirs.checksums;
      object.parts = theirs.parts;
      insert_version(ctx, *parent, key, &object);
      ++result.written;
    }
    // A fresh seq after the last merged write: the parent as of this version is the merge.
    result.version = next_seq(ctx.db);
    return result;
  });
}

Result<BucketInfo> SqliteStore::rebase_fork(std::string_view fork) {
  std::int64_t old_id = 0;
  auto rebased = write([&](WriteCtx& ctx) -> Result<BucketInfo> {
    const auto row = find_bucket(ctx.db, fork);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(fork));
    if (!row->parent_id) {
      return failure(StoreErrc::invalid_argument, row->name + " is not a fork; nothing to rebase");
    }
    if (has_children(ctx.db, row->id, true)) {
      return failure(StoreErrc::bucket_has_forks,
                     "bucket " + row->name + " has forks; delete them before rebasing it");
    }
    // A bucket id's ancestry is immutable (readers cache it without invalidation), so the
    // rebased fork gets a new id with the new horizon and its own rows move to it: O(rows
    // the fork wrote). Foreign keys are checked at COMMIT, once every row has moved.
    ctx.db.exec("PRAGMA defer_foreign_keys=ON");
    const Seq horizon = next_seq(ctx.db);
    ctx.db.query("UPDATE buckets SET state=2 WHERE id=?1")->bind(1, row->id).run();
    std::int64_t new_id = 0;
    {
      auto q = ctx.db.query(
          "INSERT INTO buckets(name, snapshot_enabled, parent_id, fork_seq, created_seq) "
          "VALUES(?1, 1, ?2, ?3, ?4) RETURNING id");
      q->bind(1, std::string_view(row->name))
          .bind(2, *row->parent_id)
          .bind(3, horizon)
          .bind(4, row->created);
      if (!q->step()) return failure(StoreErrc::io, "inserting the rebased fork failed");
      new_id = q->int64(0);
    }
    // The fork's key roles move with it (issue 21 §2): a grant is bound to the bucket id.
    for (const char* table : {"versions", "version_parts", "snapshots", "uploads", "key_roles"}) {
      ctx.db.query(std::string("UPDATE ") + table + " SET bucket_id=?2 WHERE bucket_id=?1")
          ->bind(1, row->id)
          .bind(2, new_id)
          .run();
    }
    // Forks deleted but not yet reclaimed keep their place under it (nothing reads them; the
    // reclaimer removes them before their parent's row): they do not hold the rebase up.
    ctx.db.query("UPDATE buckets SET parent_id=?2 WHERE parent_id=?1")
        ->bind(1, row->id)
        .bind(2, new_id)
        .run();
    ctx.db.query("DELETE FROM buckets WHERE id=?1")->bind(1, row->id).run();
    old_id = row->id;
    auto moved = find_bucket_by_id(ctx.db, new_id);
    if (!moved) return failure(StoreErrc::io, "the rebased fork vanished");
    return info_of(ctx.db, *moved);
  });
  if (rebased) forget_chain(old_id);
  return rebased;
}

}  // namespace tfork::store
