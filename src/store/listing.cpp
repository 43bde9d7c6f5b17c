// SPDX-License-Identifier: Apache-2.0
// ListObjects through a fork chain: a k-way merge of one ordered cursor per layer
// (server-design.md §6.5, after lakeFS's CombinedIterator + FilterTombstoneIterator).

#include "sqlite_store.hpp"
#include <algorithm>
#include <string>

namespace tfork::store {

namespace {

// Rows a page may step over besides max-keys (issue 24 §2.2): tombstones, the versions they
// and nearer layers shadow, visible entries. Without a bound, a page of an emptied fork read
// every tombstone in it. S3 allows a truncated page with fewer keys than asked for, even
// none, and clients follow its continuation token.
constexpr int k_max_rows_beyond_keys = 1000;

// One chain layer's rows in key order: for each key, the newest version at or below the
// layer's horizon. SQLite takes the bare columns from the row holding max(seq) and streams
// GROUP BY in primary-key order (§3.2), so this is an index range scan that steps lazily.
// The layer number in the text gives each layer its own cached statement.
std::string layer_sql(bool inclusive, bool bounded, std::size_t depth) {
  std::string sql =
      "SELECT key, max(seq), kind, size, etag, content_type, checksums FROM versions "
      "WHERE bucket_id=?1 AND key";
  sql += inclusive ? ">=?2" : ">?2";
  if (bounded) sql += " AND key<?3";
  sql += " AND seq<=?4 GROUP BY key ORDER BY key /* layer ";
  sql += std::to_string(depth);
  sql += " */";
  return sql;
}

class Cursor {
 public:
  Cursor(sqlite::Db& db, Layer layer, std::size_t depth, const std::optional<std::string>& upper)
      : db_(&db), layer_(layer), depth_(depth), upper_(&upper) {}
  ~Cursor() {
    if (stmt_ != nullptr) stmt_->reset();
  }
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  Cursor(Cursor&& other) noexcept
      : db_(other.db_),
        layer_(other.layer_),
        depth_(other.depth_),
        upper_(other.upper_),
        stmt_(std::exchange(other.stmt_, nullptr)),
        valid_(other.valid_),
        key_(std::move(other.key_)) {}
  Cursor& operator=(Cursor&&) = delete;

  // Re-binds the lower bound (§6.5 seek): the next row is the first key >= (or >) `bound`.
  void seek(const std::string& bound, bool inclusive) {
    if (stmt_ != nullptr) stmt_->reset();
    stmt_ = &db_->statement(layer_sql(inclusive, upper_->has_value(), depth_));
    stmt_->bind(1, layer_.bucket_id).bind(2, std::string_view(bound)).bind(4, layer_.horizon);
    if (upper_->has_value()) stmt_->bind(3, std::string_view(**upper_));
    advance();
  }

  void advance() {
    valid_ = stmt_->step();
    if (valid_) key_.assign(stmt_->view(0));
  }

  bool valid() const noexcept { return valid_; }
  const std::string& key() const noexcept { return key_; }
  bool tombstone() const { return stmt_->int64(2) == k_kind_tombstone; }

  ObjectInfo object() const {
    ObjectInfo info;
    info.key = key_;
    info.seq = stmt_->int64(1);
    info.size = stmt_->int64(3);
    info.etag = stmt_->text(4);
    info.content_type = stmt_->text(5);
    info.checksums = decode_metadata(stmt_->opt_text(6));
    return info;
  }

 private:
  sqlite::Db* db_;
  Layer layer_;
  std::size_t depth_;
  const std::optional<std::string>* upper_;
  sqlite::Stmt* stmt_ = nullptr;
  bool valid_ = false;
  std::string key_;
};

struct Bound {
  std::string key;
  bool inclusive = true;
};

}  // namespace

bool ListQuery::names_common_prefix(std::string_view key) const {
  if (delimiter.empty() || key.size() <= prefix.size() || !key.starts_with(prefix) ||
      !key.ends_with(delimiter))
    return false;
  return key.find(delimiter, prefix.size()) == key.size() - delimiter.size();
}

Result<ListPage> SqliteStore::list_objects(std::string_view bucket, const ListQuery& query) {
  return read([&](sqlite::Db& db) -> Result<ListPage> {
    const auto row = find_bucket(db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    return list_in(db, *row, query);
  });
}

Result<BucketStats> SqliteStore::bucket_stats(std::string_view bucket) {
  // One read transaction: the counts are of one moment, whatever writers do meanwhile.
  return read([&](sqlite::Db& db) -> Result<BucketStats> {
    const auto row = find_bucket(db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    BucketStats stats;
    ListQuery query;
    while (true) {
      auto page = list_in(db, *row, query);
      if (!page) return std::unexpected(std::move(page.error()));
      for (const auto& object : page->objects) {
        ++stats.objects;
        stats.bytes += object.size;
      }
      if (!page->truncated) return stats;
      query.after = page->last;
    }
  });
}

Result<ListPage> SqliteStore::list_in(sqlite::Db& db, const BucketRow& bucket,
                                      const ListQuery& query) {
  if (query.max_keys < 0) return failure(StoreErrc::invalid_argument, "negative max-keys");
  ListPage page;
  if (query.max_keys == 0) return page;  // nothing asked for; never "truncated" (no resume point)

  // Where the page starts: the prefix, or just past the resume point when that is later.
  Bound start{query.prefix, true};
  if (!query.after.empty()) {
    Bound resume{query.after, false};
    if (query.after_is_prefix) {
      // §6.5: resuming after a common prefix skips its whole subtree.
      auto next = prefix_successor(query.after);
      if (!next) return page;
      resume = Bound{std::move(*next), true};
    }
    if (resume.key > start.key || (resume.key == start.key && !resume.inclusive)) {
      start = std::move(resume);
    }
  }
  const std::optional<std::string> upper =
      query.prefix.empty() ? std::nullopt : prefix_successor(query.prefix);
  if (upper && start.key >= *upper) return page;

  const auto layers = chain(db, bucket.id, query.at);
  std::vector<Cursor> cursors;
  cursors.reserve(layers.size());
  for (std::size_t depth = 0; depth < layers.size(); ++depth) {
    cursors.emplace_back(db, layers[depth], depth, upper);
    cursors.back().seek(start.key, start.inclusive);
  }

  int emitted = 0;
  std::int64_t rows = 0;  // stepped over, in every layer
  const std::int64_t max_rows = std::int64_t{query.max_keys} + k_max_rows_beyond_keys;
  // Deleted keys stepped over after page.last: the last one, and the last one the next page
  // may resume at (see ListPage::last).
  std::optional<std::string> deleted_after_last;
  std::optional<std::string> resumable_deleted;
  // Whether a page may resume at the deleted key `deleted` when `next` is the key after it:
  // not when a marker of it would skip keys under it still to be listed.
  const auto may_resume_at = [&](const std::string& deleted, std::string_view next) {
    return !next.starts_with(deleted) || !query.names_common_prefix(deleted);
  };
  while (true) {
    // The smallest head key; on equal keys the nearest layer (lowest depth) wins. Chains are
    // a handful of layers deep, so a linear scan beats a heap here.
    const Cursor* best = nullptr;
    for (const auto& cursor : cursors) {
      if (cursor.valid() && (best == nullptr || cursor.key() < best->key())) best = &cursor;
    }
    if (best == nullptr) break;
    const std::string key = best->key();
    const auto copies = std::ranges::count_if(
        cursors, [&](const Cursor& cursor) { return cursor.valid() && cursor.key() == key; });
    if (rows + copies > max_rows) {
      page.truncated = true;
      // The next page resumes after the deleted keys stepped over. Only the last can be
      // unfit (a deleted "dir/" with keys under it next), and a cut page has stepped over
      // ~1000 rows of deleted keys since its last entry, so an earlier one is there.
      if (deleted_after_last && !may_resume_at(*deleted_after_last, key))
        deleted_after_last = std::move(resumable_deleted);
      if (deleted_after_last) {
        page.last = std::move(*deleted_after_last);
        page.last_is_prefix = false;
      }
      break;
    }
    rows += copies;
    const bool tombstone = best->tombstone();
    ObjectInfo object;
    if (!tombstone) object = best->object();
    for (auto& cursor : cursors) {
      if (cursor.valid() && cursor.key() == key) cursor.advance();  // deeper copies are shadowed
    }
    if (tombstone) {
      if (deleted_after_last && may_resume_at(*deleted_after_last, key))
        resumable_deleted = std::move(deleted_after_last);
      deleted_after_last = key;  // absent, but it still shadowed the deeper layers
      continue;
    }

    std::optional<std::string> common;
    if (!query.delimiter.empty()) {
      const auto pos = key.find(query.delimiter, query.prefix.size());
      if (pos != std::string::npos) common = key.substr(0, pos + query.delimiter.size());
    }
    if (emitted == query.max_keys) {
      page.truncated = true;  // a further visible entry exists
      break;
    }
    ++emitted;
    deleted_after_last.reset();
    resumable_deleted.reset();
    if (common) {
      page.common_prefixes.push_back(*common);
      page.last = *common;
      page.last_is_prefix = true;
      // §6.5: emit the CommonPrefix once, then seek every layer past its subtree.
      const auto next = prefix_successor(*common);
      if (!next) break;
      for (auto& cursor : cursors) {
        if (cursor.valid() && cursor.key() < *next) cursor.seek(*next, true);
      }
    } else {
      page.objects.push_back(std::move(object));
      page.last = key;
      page.last_is_prefix = false;
    }
  }
  page.rows_read = rows;
  return page;
}

}  // namespace tfork::store
