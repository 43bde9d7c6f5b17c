// SPDX-License-Identifier: Apache-2.0
// Object reads through the fork chain (server-design.md §6.4) and the write path (§6.6).

#include "sqlite_store.hpp"
#include <algorithm>
#include <stdexcept>

namespace tfork::store {

namespace {

constexpr const char* k_version_columns =
    "seq, kind, blob, size, nparts, etag, content_type, user_meta, checksums, data_id";

VersionRow version_from(const sqlite::Stmt& s) {
  VersionRow row;
  row.seq = s.int64(0);
  row.kind = s.int64(1);
  row.blob = s.opt_text(2);
  row.size = s.int64(3);
  row.nparts = s.int64(4);
  row.etag = s.text(5);
  row.content_type = s.text(6);
  row.user_meta = s.opt_text(7);
  row.checksums = s.opt_text(8);
  row.data_id = s.opt_int64(9);
  return row;
}

std::int64_t total_size(const std::vector<BlobRef>& parts) {
  std::int64_t size = 0;
  for (const auto& part : parts)
    size += part.size;
  return size;
}

}  // namespace

// ---------------------------------------------------------------- read path

std::optional<VersionRow> SqliteStore::latest_in_layer(sqlite::Db& db, std::int64_t bucket_id,
                                                       std::string_view key, Seq horizon) {
  // §3.2: one primary-key seek per layer.
  auto q = db.query(std::string("SELECT ") + k_version_columns +
                    " FROM versions WHERE bucket_id=?1 AND key=?2 AND seq<=?3"
                    " ORDER BY seq DESC LIMIT 1");
  if (!q->bind(1, bucket_id).bind(2, key).bind(3, horizon).step()) return std::nullopt;
  return version_from(*q);
}

std::optional<Found> SqliteStore::resolve(sqlite::Db& db, const std::vector<Layer>& layers,
                                          std::string_view key) {
  for (const auto& layer : layers) {
    auto row = latest_in_layer(db, layer.bucket_id, key, layer.horizon);
    if (!row) continue;
    if (row->kind == k_kind_tombstone) return std::nullopt;  // shadows every deeper layer
    return Found{layer.bucket_id, std::move(*row)};
  }
  return std::nullopt;
}

std::vector<BlobRef> SqliteStore::version_parts(sqlite::Db& db, std::int64_t bucket_id,
                                                std::string_view key, Seq seq) {
  std::vector<BlobRef> parts;
  auto q = db.query(
      "SELECT blob, size, checksums, blob_offset FROM version_parts WHERE bucket_id=?1 AND key=?2 "
      "AND seq=?3 ORDER BY part_no");
  q->bind(1, bucket_id).bind(2, key).bind(3, seq);
  while (q->step()) {
    parts.push_back(
        BlobRef{q->text(0), q->int64(1), decode_metadata(q->opt_text(2)), {}, {}, q->int64(3)});
  }
  return parts;
}

ObjectInfo SqliteStore::object_info(sqlite::Db& db, std::int64_t bucket_id, std::string_view key,
                                    const VersionRow& row) {
  ObjectInfo info;
  info.key = std::string(key);
  info.seq = row.seq;
  info.size = row.size;
  info.etag = row.etag;
  info.content_type = row.content_type;
  info.user_meta = decode_metadata(row.user_meta);
  info.checksums = decode_metadata(row.checksums);
  if (row.nparts > 0) {
    info.parts = version_parts(db, bucket_id, key, row.seq);
  } else if (row.blob) {
    info.parts.push_back(BlobRef{*row.blob, row.size, {}, {}, row.data_id});
  }
  return info;
}

Result<ObjectInfo> SqliteStore::get_object(std::string_view bucket, std::string_view key,
                                           std::optional<Seq> at) {
  return read([&](sqlite::Db& db) -> Result<ObjectInfo> {
    const auto row = find_bucket(db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    const auto found = resolve(db, chain(db, row->id, at), key);
    if (!found) return failure(StoreErrc::no_such_key, "no such key " + std::string(key));
    auto info = object_info(db, found->bucket_id, key, found->row);
    load_bytes(db, info.parts);  // in this read transaction: the bytes of this very version
    return info;
  });
}

// ---------------------------------------------------------------- write path

ObjectInfo SqliteStore::written(std::string_view key, std::optional<Seq> seq, std::int64_t size,
                                NewObject& object) {
  ObjectInfo info;
  info.key = std::string(key);
  info.seq = seq.value_or(0);
  info.size = size;
  info.etag = std::move(object.etag);
  info.content_type = std::move(object.content_type);
  info.user_meta = std::move(object.user_meta);
  info.checksums = std::move(object.checksums);
  info.parts = std::move(object.parts);
  return info;
}

void SqliteStore::add_ref(WriteCtx& ctx, const BlobRef& blob) {
  // Bytes an object owns are shared from here on as a blob of their own (a copy of them).
  const auto bytes = blob.data_id ? bytes_of(ctx.db, blob) : blob.bytes;
  if (blob.data_id && !bytes)
    throw std::runtime_error("the bytes of blob " + blob.hash + " are missing");
  bool first = false;
  {
    auto q = ctx.db.query(
        "INSERT INTO blobs(hash, size, refcnt) VALUES(?1, ?2, 1) "
        "ON CONFLICT(hash) DO UPDATE SET refcnt=refcnt+1 RETURNING refcnt");
    first = q->bind(1, std::string_view(blob.hash)).bind(2, blob.size).step() && q->int64(0) == 1;
  }
  // A blob still named by a row keeps the form it was first stored in.
  if (first && bytes) {
    std::int64_t data_id = 0;
    {
      auto q = ctx.db.query("INSERT INTO blob_data(data) VALUES(?1) RETURNING id");
      q->bind_blob(1, *bytes).step();
      data_id = q->int64(0);
    }
    ctx.db.query("UPDATE blobs SET data_id=?2 WHERE hash=?1")
        ->bind(1, std::string_view(blob.hash))
        .bind(2, data_id)
        .run();
  }
}

bool SqliteStore::present(const BlobRef& blob) const {
  // Under the writer lock no unlink can race this check (§6.7), so a row never names a
  // missing file; a blob with bytes is written by the row's own transaction.
  return blob.bytes != nullptr || blobs_.exists(blob.hash);
}

void SqliteStore::release_on_commit(WriteCtx& ctx, const BlobRef& blob) {
  if (!blob.bytes) ctx.consumed_pins.push_back(blob.hash);  // only files are pinned
}

std::shared_ptr<const std::string> SqliteStore::bytes_of(sqlite::Db& db, const BlobRef& blob) {
  if (blob.bytes || blob.size > k_max_db_blob) return blob.bytes;
  if (blob.data_id) {
    auto q = db.query("SELECT data FROM blob_data WHERE id=?1");
    if (!q->bind(1, *blob.data_id).step()) return nullptr;
    return std::make_shared<const std::string>(q->blob(0));
  }
  auto q =
      db.query("SELECT d.data FROM blobs b JOIN blob_data d ON d.id=b.data_id WHERE b.hash=?1");
  if (!q->bind(1, std::string_view(blob.hash)).step()) return nullptr;
  return std::make_shared<const std::string>(q->blob(0));
}

void SqliteStore::load_bytes(sqlite::Db& db, std::vector<BlobRef>& parts) {
  for (auto& part : parts)
    part.bytes = bytes_of(db, part);
}

void SqliteStore::drop_ref(WriteCtx& ctx, std::string_view hash, std::int64_t count) {
  std::int64_t left = 0;
  std::optional<std::int64_t> data_id;
  {
    auto q =
        ctx.db.query("UPDATE blobs SET refcnt=refcnt-?2 WHERE hash=?1 RETURNING refcnt, data_id");
    if (!q->bind(1, hash).bind(2, count).step()) return;
    left = q->int64(0);
    data_id = q->opt_int64(1);
  }
  if (left > 0) return;
  ctx.db.query("DELETE FROM blobs WHERE hash=?1")->bind(1, hash).run();
  if (data_id) {
    ctx.db.query("DELETE FROM blob_data WHERE id=?1")->bind(1, *data_id).run();
  } else {
    ctx.freed.emplace_back(hash);  // a file: unlinked after COMMIT (§6.7)
  }
}

void SqliteStore::remove_version(WriteCtx& ctx, std::int64_t bucket_id, std::string_view key,
                                 Seq seq) {
  std::optional<std::string> blob;
  std::int64_t nparts = 0;
  std::optional<std::int64_t> data_id;
  {
    auto q = ctx.db.query(
        "SELECT blob, nparts, data_id FROM versions WHERE bucket_id=?1 AND key=?2 AND seq=?3");
    if (!q->bind(1, bucket_id).bind(2, key).bind(3, seq).step()) return;
    blob = q->opt_text(0);
    nparts = q->int64(1);
    data_id = q->opt_int64(2);
  }
  if (data_id) {
    ctx.db.query("DELETE FROM blob_data WHERE id=?1")->bind(1, *data_id).run();
  } else if (nparts > 0) {
    for (const auto& part : version_parts(ctx.db, bucket_id, key, seq))
      drop_ref(ctx, part.hash);
    ctx.db.query("DELETE FROM version_parts WHERE bucket_id=?1 AND key=?2 AND seq=?3")
        ->bind(1, bucket_id)
        .bind(2, key)
        .bind(3, seq)
        .run();
  } else if (blob) {
    drop_ref(ctx, *blob);
  }
  ctx.db.query("DELETE FROM versions WHERE bucket_id=?1 AND key=?2 AND seq=?3")
      ->bind(1, bucket_id)
      .bind(2, key)
      .bind(3, seq)
      .run();
}

bool SqliteStore::pinned(sqlite::Db& db, std::int64_t bucket_id, Seq from, Seq to) {
  // §6.7 version rule: a version [from, to) is kept if a snapshot or a child's fork point
  // falls inside it.
  {
    auto q = db.query("SELECT 1 FROM snapshots WHERE bucket_id=?1 AND seq>=?2 AND seq<?3 LIMIT 1");
    if (q->bind(1, bucket_id).bind(2, from).bind(3, to).step()) return true;
  }
  auto q =
      db.query("SELECT 1 FROM buckets WHERE parent_id=?1 AND fork_seq>=?2 AND fork_seq<?3 LIMIT 1");
  return q->bind(1, bucket_id).bind(2, from).bind(3, to).step();
}

std::optional<Seq> SqliteStore::insert_version(WriteCtx& ctx, const BucketRow& bucket,
                                               std::string_view key, const NewObject* object) {
  // §6.6 step 5: only a regular root bucket prunes; snapshot-enabled buckets and forks keep
  // every version because any ns timestamp may be read or forked from (§6.7).
  const bool prunes = !bucket.snapshot_enabled && !bucket.parent_id;
  std::optional<VersionRow> previous;
  if (prunes) previous = latest_in_layer(ctx.db, bucket.id, key, k_seq_max);
  const Seq seq = next_seq(ctx.db);

  if (object != nullptr) {
    // The new row takes its blob references before the previous version drops its own, so
    // an overwrite with the same content never sees a refcount of zero.
    const auto& parts = object->parts;
    // One blob is kept in the row itself, unless it is a part with checksums of its own (a
    // one-part multipart upload) or a range of its blob: those are kept in the manifest.
    const bool inline_blob =
        parts.size() == 1 && parts.front().checksums.empty() && parts.front().offset == 0;
    // A small object's one blob (bytes in hand, or owned by the version copied) is owned by
    // this row: its bytes are written again, and no shared blob is counted.
    std::optional<std::int64_t> data_id;
    if (inline_blob && (parts.front().bytes || parts.front().data_id)) {
      if (const auto bytes = bytes_of(ctx.db, parts.front())) {
        auto q = ctx.db.query("INSERT INTO blob_data(data) VALUES(?1) RETURNING id");
        q->bind_blob(1, *bytes).step();
        data_id = q->int64(0);
      }
    }
    auto q = ctx.db.query(
        "INSERT INTO versions(bucket_id, key, seq, kind, blob, size, nparts, etag, "
        "content_type, user_meta, checksums, data_id) "
        "VALUES(?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    q->bind(1, bucket.id).bind(2, key).bind(3, seq);
    if (inline_blob) {
      q->bind(4, std::string_view(parts.front().hash));
    } else {
      q->bind_null(4);
    }
    if (data_id) {
      q->bind(11, *data_id);
    } else {
      q->bind_null(11);
    }
    const auto user_meta = encode_metadata(object->user_meta);
    const auto checksums = encode_metadata(object->checksums);
    q->bind(5, total_size(parts))
        .bind(6, static_cast<std::int64_t>(inline_blob ? 0 : parts.size()))
        .bind(7, std::string_view(object->etag))
        .bind(8, std::string_view(object->content_type))
        .bind(9, user_meta ? std::optional<std::string_view>(*user_meta) : std::nullopt)
        .bind(10, checksums ? std::optional<std::string_view>(*checksums) : std::nullopt)
        .run();
    if (!inline_blob) {
      std::vector<std::optional<std::string>> part_checksums;
      for (const auto& part : parts)
        part_checksums.push_back(encode_metadata(part.checksums));
      for (std::size_t i = 0; i < parts.size(); ++i) {
        ctx.db
            .query(
                "INSERT INTO version_parts(bucket_id, key, seq, part_no, blob, size, checksums, "
                "blob_offset) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
            ->bind(1, bucket.id)
            .bind(2, key)
            .bind(3, seq)
            .bind(4, static_cast<std::int64_t>(i + 1))
            .bind(5, std::string_view(parts[i].hash))
            .bind(6, parts[i].size)
            .bind(7, part_checksums[i] ? std::optional<std::string_view>(*part_checksums[i])
                                       : std::nullopt)
            .bind(8, parts[i].offset)
            .run();
      }
    }
    if (!data_id) {
      for (const auto& part : parts)
        add_ref(ctx, part);
    }
    if (previous && !pinned(ctx.db, bucket.id, previous->seq, seq)) {
      remove_version(ctx, bucket.id, key, previous->seq);
    }
    return seq;
  }

  if (prunes) {
    if (previous && !pinned(ctx.db, bucket.id, previous->seq, seq)) {
      remove_version(ctx, bucket.id, key, previous->seq);
    }
    // A tombstone is only needed where an older, pinned version would otherwise show.
    auto q = ctx.db.query("SELECT 1 FROM versions WHERE bucket_id=?1 AND key=?2 LIMIT 1");
    if (!q->bind(1, bucket.id).bind(2, key).step()) return std::nullopt;
  }
  ctx.db.query("INSERT INTO versions(bucket_id, key, seq, kind) VALUES(?1, ?2, ?3, 1)")
      ->bind(1, bucket.id)
      .bind(2, key)
      .bind(3, seq)
      .run();
  return seq;
}

Result<void> check_conditions(const WriteConditions& conditions,
                              std::optional<std::string_view> current_etag) {
  if (conditions.if_none_match_any && current_etag) {
    return failure(StoreErrc::precondition_failed, "If-None-Match: the key exists");
  }
  if (conditions.if_match) {
    if (!current_etag) return failure(StoreErrc::no_such_key, "If-Match: no such key");
    const auto& etags = *conditions.if_match;
    if (std::ranges::none_of(
            etags, [&](const std::string& etag) { return etag == "*" || etag == *current_etag; })) {
      return failure(StoreErrc::precondition_failed,
                     "If-Match: the ETag is " + std::string(*current_etag));
    }
  }
  return {};
}

Result<void> SqliteStore::check_current(WriteCtx& ctx, const BucketRow& bucket,
                                        std::string_view key, const WriteConditions& conditions) {
  if (conditions.empty()) return {};
  const auto found = resolve(ctx.db, chain(ctx.db, bucket.id, std::nullopt), key);
  return check_conditions(conditions,
                          found ? std::optional<std::string_view>(found->row.etag) : std::nullopt);
}

// The transaction body of put_object: the row of `object` (whose parts were written) in
// `bucket` if `conditions` hold, pins released on commit.
Result<ObjectInfo> SqliteStore::put_row(WriteCtx& ctx, std::string_view bucket,
                                        std::string_view key, NewObject& object,
                                        const WriteConditions& conditions) {
  for (const auto& part : object.parts)
    release_on_commit(ctx, part);
  const auto row = find_bucket(ctx.db, bucket);
  if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
  for (const auto& part : object.parts) {
    if (!present(part)) {
      return failure(StoreErrc::invalid_argument, "blob " + part.hash + " was not written");
    }
  }
  if (auto held = check_current(ctx, *row, key, conditions); !held) {
    return std::unexpected(std::move(held.error()));
  }
  const auto seq = insert_version(ctx, *row, key, &object);
  return written(key, seq, total_size(object.parts), object);
}

Result<ObjectInfo> SqliteStore::put_object(std::string_view bucket, std::string_view key,
                                           NewObject object, WriteConditions conditions) {
  if (!valid_key(key)) return failure(StoreErrc::invalid_argument, "invalid object key");
  return write([&](WriteCtx& ctx) { return put_row(ctx, bucket, key, object, conditions); });
}

void SqliteStore::put_object_async(std::string bucket, std::string key, NewObject object,
                                   std::function<void(Result<ObjectInfo>)> done,
                                   WriteConditions conditions) {
  if (!valid_key(key)) return done(failure(StoreErrc::invalid_argument, "invalid object key"));
  write_async([this, bucket = std::move(bucket), key = std::move(key), object = std::move(object),
               conditions = std::move(conditions)](
                  WriteCtx& ctx) mutable { return put_row(ctx, bucket, key, object, conditions); },
              std::move(done));
}

Result<void> SqliteStore::delete_object(std::string_view bucket, std::string_view key) {
  auto done = delete_object_version(bucket, key);
  if (!done) return std::unexpected(std::move(done.error()));
  return {};
}

Result<std::optional<Seq>> SqliteStore::delete_object_version(std::string_view bucket,
                                                              std::string_view key) {
  if (!valid_key(key)) return failure(StoreErrc::invalid_argument, "invalid object key");
  return write_freeing([&](WriteCtx& ctx) -> Result<std::optional<Seq>> {
    const auto row = find_bucket(ctx.db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    // §6.6: a tombstone only when the key is visible (through the chain); else a no-op.
    if (!resolve(ctx.db, chain(ctx.db, row->id, std::nullopt), key)) {
      return std::optional<Seq>();
    }
    return insert_version(ctx, *row, key, nullptr);
  });
}

Result<ObjectInfo> SqliteStore::copy_object(std::string_view src_bucket, std::string_view src_key,
                                            std::optional<Seq> src_at, std::string_view dst_bucket,
                                            std::string_view dst_key,
                                            std::optional<NewObject> replace,
                                            WriteConditions conditions) {
  if (!valid_key(dst_key)) return failure(StoreErrc::invalid_argument, "invalid object key");
  if (auto admitted = admit_data(0); !admitted) return std::unexpected(admitted.error());
  return write([&](WriteCtx& ctx) -> Result<ObjectInfo> {
    const auto src = find_bucket(ctx.db, src_bucket);
    if (!src)
      return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(src_bucket));
    const auto found = resolve(ctx.db, chain(ctx.db, src->id, src_at), src_key);
    if (!found) return failure(StoreErrc::no_such_key, "no such key " + std::string(src_key));
    const auto dst = find_bucket(ctx.db, dst_bucket);
    if (!dst)
      return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(dst_bucket));
    if (auto held = check_current(ctx, *dst, dst_key, conditions); !held) {
      return std::unexpected(std::move(held.error()));
    }

    // §6.6 CopyObject: O(1) in the object's size; the new version names the same blobs.
    const ObjectInfo source = object_info(ctx.db, found->bucket_id, src_key, found->row);
    NewObject object;
    object.etag = source.etag;
    object.parts = source.parts;
    if (replace) {
      object.content_type = std::move(replace->content_type);
      object.user_meta = std::move(replace->user_meta);
      // Checksums describe the content, which is unchanged, unless the caller says otherwise.
      object.checksums = replace->checksums.empty() ? source.checksums : replace->checksums;
    } else {
      object.content_type = source.content_type;
      object.user_meta = source.user_meta;
      object.checksums = source.checksums;
    }
    const auto seq = insert_version(ctx, *dst, dst_key, &object);
    return written(dst_key, seq, source.size, object);
  });
}

}  // namespace tfork::store
