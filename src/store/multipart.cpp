// SPDX-License-Identifier: Apache-2.0
// Multipart uploads (server-design.md §6.6): parts are ordinary blobs referenced by
// upload_parts; completion writes a version whose manifest is version_parts, so nothing is
// concatenated and GET streams the parts in order.

#include "tfork/crypto/hash.hpp"

#include "sqlite_store.hpp"
#include <algorithm>
#include <cctype>

namespace tfork::store {

namespace {

constexpr int k_max_part_number = 10000;  // S3's limit

struct UploadRow {
  std::int64_t bucket_id = 0;
  std::string key;
  Seq created = 0;
  std::string content_type;
  std::optional<std::string> user_meta;
  std::optional<std::string> checksums;
};

std::optional<UploadRow> find_upload(sqlite::Db& db, std::string_view upload_id) {
  auto q = db.query(
      "SELECT bucket_id, key, created, content_type, user_meta, checksums FROM uploads "
      "WHERE upload_id=?1");
  if (!q->bind(1, upload_id).step()) return std::nullopt;
  return UploadRow{q->int64(0), q->text(1),     q->int64(2),
                   q->text(3),  q->opt_text(4), q->opt_text(5)};
}

// Clients echo ETags quoted and sometimes upper-cased.
std::string normalise_etag(std::string_view etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  std::string out(etag);
  std::ranges::transform(out, out.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Result<void> check_part_number(int part_number) {
  if (part_number < 1 || part_number > k_max_part_number) {
    return failure(StoreErrc::invalid_argument,
                   "part number must be 1.." + std::to_string(k_max_part_number));
  }
  return {};
}

std::unexpected<StoreError> no_upload(std::string_view upload_id) {
  return failure(StoreErrc::no_such_upload, "no such upload " + std::string(upload_id));
}

}  // namespace

Result<UploadInfo> SqliteStore::create_upload(std::string_view bucket, std::string_view key,
                                              NewObject meta) {
  if (!valid_key(key)) return failure(StoreErrc::invalid_argument, "invalid object key");
  if (auto admitted = admit_data(0); !admitted) return std::unexpected(admitted.error());
  return write([&](WriteCtx& ctx) -> Result<UploadInfo> {
    const auto row = find_bucket(ctx.db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    UploadInfo info{crypto::random_hex(16), row->name, std::string(key), now_ns(), meta.checksums};
    const auto user_meta = encode_metadata(meta.user_meta);
    const auto checksums = encode_metadata(meta.checksums);
    ctx.db
        .query(
            "INSERT INTO uploads(upload_id, bucket_id, key, created, content_type, user_meta, "
            "checksums) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)")
        ->bind(1, std::string_view(info.upload_id))
        .bind(2, row->id)
        .bind(3, key)
        .bind(4, info.created)
        .bind(5, std::string_view(meta.content_type))
        .bind(6, user_meta ? std::optional<std::string_view>(*user_meta) : std::nullopt)
        .bind(7, checksums ? std::optional<std::string_view>(*checksums) : std::nullopt)
        .run();
    return info;
  });
}

Result<PartInfo> SqliteStore::put_part(std::string_view upload_id, int part_number, BlobRef blob,
                                       std::string etag, Metadata checksums) {
  if (auto valid = check_part_number(part_number); !valid) return std::unexpected(valid.error());
  return write([&](WriteCtx& ctx) -> Result<PartInfo> {
    release_on_commit(ctx, blob);
    if (!find_upload(ctx.db, upload_id)) return no_upload(upload_id);
    if (!present(blob)) {
      return failure(StoreErrc::invalid_argument, "blob " + blob.hash + " was not written");
    }
    return place_part(ctx, upload_id, part_number, std::move(blob), std::move(etag),
                      std::move(checksums));
  });
}

Result<PartInfo> SqliteStore::put_part_copy(std::string_view upload_id, int part_number,
                                            BlobRef range, std::string etag, Metadata checksums) {
  if (auto valid = check_part_number(part_number); !valid) return std::unexpected(valid.error());
  if (range.bytes || range.data_id || range.offset < 0 || range.size < 0) {
    return failure(StoreErrc::invalid_argument,
                   "only a range of a blob file is copied by reference");
  }
  if (auto admitted = admit_data(0); !admitted) return std::unexpected(admitted.error());
  return write([&](WriteCtx& ctx) -> Result<PartInfo> {
    if (!find_upload(ctx.db, upload_id)) return no_upload(upload_id);
    // A row names the blob (the source's, in this transaction) and its file is in place: it
    // cannot be unlinked before this part's reference is counted. Its recorded size bounds
    // the range.
    std::optional<std::int64_t> stored_size;
    {
      auto q = ctx.db.query("SELECT size FROM blobs WHERE hash=?1 AND data_id IS NULL");
      if (q->bind(1, std::string_view(range.hash)).step()) stored_size = q->int64(0);
    }
    if (!stored_size || !blobs_.exists(range.hash) || range.offset + range.size > *stored_size) {
      return failure(StoreErrc::invalid_argument, "blob " + range.hash + " is not stored");
    }
    return place_part(ctx, upload_id, part_number, std::move(range), std::move(etag),
                      std::move(checksums));
  });
}

PartInfo SqliteStore::place_part(WriteCtx& ctx, std::string_view upload_id, int part_number,
                                 BlobRef blob, std::string etag, Metadata checksums) {
  std::optional<std::string> replaced;
  {
    auto q = ctx.db.query("SELECT blob FROM upload_parts WHERE upload_id=?1 AND part_no=?2");
    if (q->bind(1, upload_id).bind(2, std::int64_t{part_number}).step()) replaced = q->text(0);
  }
  // Take the new reference before dropping the replaced part's (same content re-sent).
  add_ref(ctx, blob);
  if (replaced) drop_ref(ctx, *replaced);
  const auto encoded = encode_metadata(checksums);
  ctx.db
      .query(
          "INSERT OR REPLACE INTO upload_parts(upload_id, part_no, blob, size, etag, checksums, "
          "blob_offset) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)")
      ->bind(1, upload_id)
      .bind(2, std::int64_t{part_number})
      .bind(3, std::string_view(blob.hash))
      .bind(4, blob.size)
      .bind(5, std::string_view(etag))
      .bind(6, encoded ? std::optional<std::string_view>(*encoded) : std::nullopt)
      .bind(7, blob.offset)
      .run();
  return PartInfo{part_number, std::move(blob), std::move(etag), std::move(checksums)};
}

Result<std::vector<PartInfo>> SqliteStore::list_parts(std::string_view upload_id) {
  return read([&](sqlite::Db& db) -> Result<std::vector<PartInfo>> {
    if (!find_upload(db, upload_id)) return no_upload(upload_id);
    std::vector<PartInfo> parts;
    auto q = db.query(
        "SELECT part_no, blob, size, etag, checksums, blob_offset FROM upload_parts "
        "WHERE upload_id=?1 ORDER BY part_no");
    q->bind(1, upload_id);
    while (q->step()) {
      parts.push_back(PartInfo{static_cast<int>(q->int64(0)),
                               BlobRef{q->text(1), q->int64(2), {}, {}, {}, q->int64(5)},
                               q->text(3), decode_metadata(q->opt_text(4))});
    }
    return parts;
  });
}

Result<UploadInfo> SqliteStore::get_upload(std::string_view upload_id) {
  return read([&](sqlite::Db& db) -> Result<UploadInfo> {
    const auto upload = find_upload(db, upload_id);
    if (!upload) return no_upload(upload_id);
    auto q = db.query("SELECT name FROM buckets WHERE id=?1");
    std::string bucket = q->bind(1, upload->bucket_id).step() ? q->text(0) : std::string();
    return UploadInfo{std::string(upload_id), std::move(bucket), upload->key, upload->created,
                      decode_metadata(upload->checksums)};
  });
}

Result<std::vector<UploadInfo>> SqliteStore::list_uploads(std::string_view bucket,
                                                          std::string_view prefix) {
  return read([&](sqlite::Db& db) -> Result<std::vector<UploadInfo>> {
    const auto row = find_bucket(db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    std::vector<UploadInfo> uploads;
    auto q = db.query(
        "SELECT upload_id, key, created, checksums FROM uploads WHERE bucket_id=?1 "
        "ORDER BY key, created, upload_id");
    q->bind(1, row->id);
    while (q->step()) {
      auto key = q->text(1);
      if (!key.starts_with(prefix)) continue;
      uploads.push_back(UploadInfo{q->text(0), row->name, std::move(key), q->int64(2),
                                   decode_metadata(q->opt_text(3))});
    }
    return uploads;
  });
}

void SqliteStore::remove_upload(WriteCtx& ctx, std::string_view upload_id) {
  std::vector<std::string> blobs;
  {
    auto q = ctx.db.query("SELECT blob FROM upload_parts WHERE upload_id=?1");
    q->bind(1, upload_id);
    while (q->step())
      blobs.push_back(q->text(0));
  }
  for (const auto& blob : blobs)
    drop_ref(ctx, blob);
  ctx.db.query("DELETE FROM upload_parts WHERE upload_id=?1")->bind(1, upload_id).run();
  ctx.db.query("DELETE FROM uploads WHERE upload_id=?1")->bind(1, upload_id).run();
}

Result<ObjectInfo> SqliteStore::complete_upload(
    std::string_view upload_id, const std::vector<std::pair<int, std::string>>& parts,
    std::optional<Metadata> checksums, WriteConditions conditions) {
  if (auto admitted = admit_data(0); !admitted) return std::unexpected(admitted.error());
  return write([&](WriteCtx& ctx) -> Result<ObjectInfo> {
    const auto upload = find_upload(ctx.db, upload_id);
    if (!upload) return no_upload(upload_id);
    const auto bucket = find_bucket_by_id(ctx.db, upload->bucket_id);
    if (!bucket) return failure(StoreErrc::no_such_bucket, "the upload's bucket is gone");
    if (auto held = check_current(ctx, *bucket, upload->key, conditions); !held) {
      return std::unexpected(std::move(held.error()));
    }
    if (parts.empty()) {
      return failure(StoreErrc::invalid_argument, "a multipart upload needs at least one part");
    }
    NewObject object;
    std::vector<std::string> etags;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& [number, etag] = parts[i];
      if (i > 0 && number <= parts[i - 1].first) {
        return failure(StoreErrc::invalid_part_order, "parts must be listed in ascending order");
      }
      auto q = ctx.db.query(
          "SELECT blob, size, etag, checksums, blob_offset FROM upload_parts WHERE upload_id=?1 "
          "AND part_no=?2");
      if (!q->bind(1, upload_id).bind(2, std::int64_t{number}).step()) {
        return failure(StoreErrc::invalid_part, "part " + std::to_string(number) + " not uploaded");
      }
      const std::string stored = normalise_etag(q->view(2));
      if (stored != normalise_etag(etag)) {
        return failure(StoreErrc::invalid_part,
                       "part " + std::to_string(number) + " etag mismatch");
      }
      object.parts.push_back(
          BlobRef{q->text(0), q->int64(1), decode_metadata(q->opt_text(3)), {}, {}, q->int64(4)});
      etags.push_back(stored);
    }
    auto etag = multipart_etag(etags);
    if (!etag) return failure(StoreErrc::invalid_part, "a part's etag is not an md5");
    object.etag = std::move(*etag);
    object.content_type = upload->content_type;
    object.user_meta = decode_metadata(upload->user_meta);
    object.checksums = checksums ? std::move(*checksums) : decode_metadata(upload->checksums);

    // The version takes its references first, then the upload drops all of its own (parts
    // left out of the list lose their last reference and are unlinked after COMMIT).
    const auto seq = insert_version(ctx, *bucket, upload->key, &object);
    remove_upload(ctx, upload_id);

    std::int64_t size = 0;
    for (const auto& part : object.parts)
      size += part.size;
    return written(upload->key, seq, size, object);
  });
}

Result<void> SqliteStore::abort_upload(std::string_view upload_id) {
  return write_freeing([&](WriteCtx& ctx) -> Result<void> {
    if (!find_upload(ctx.db, upload_id)) return no_upload(upload_id);
    remove_upload(ctx, upload_id);
    return {};
  });
}

}  // namespace tfork::store
