// SPDX-License-Identifier: Apache-2.0
#include "sqlite_store.hpp"

#include "tfork/crypto/hash.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <system_error>
#include <unistd.h>

namespace tfork::store {

namespace fs = std::filesystem;

namespace {

// server-design.md §6.2, with the additions the engine needs: `nparts` (multipart manifest
// in version_parts), AUTOINCREMENT so a bucket id is never reused, and a children index that
// also covers buckets being reclaimed (a parent row outlives its children's rows).
constexpr const char* k_schema = R"sql(
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS buckets(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  state INTEGER NOT NULL DEFAULT 0,            -- 0 live, 1 deleting (reclaim pending)
  snapshot_enabled INTEGER NOT NULL DEFAULT 0,
  parent_id INTEGER REFERENCES buckets(id),
  fork_seq INTEGER,                            -- horizon in the parent
  created_seq INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS buckets_live_name ON buckets(name) WHERE state=0;
CREATE INDEX IF NOT EXISTS buckets_children ON buckets(parent_id, fork_seq);
CREATE TABLE IF NOT EXISTS snapshots(
  bucket_id INTEGER NOT NULL REFERENCES buckets(id),
  seq INTEGER NOT NULL,
  name TEXT,
  PRIMARY KEY(bucket_id, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS versions(
  bucket_id INTEGER NOT NULL REFERENCES buckets(id),
  key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  kind INTEGER NOT NULL,                       -- 0 object, 1 tombstone
  blob TEXT,                                   -- single-blob content; NULL otherwise
  size INTEGER NOT NULL DEFAULT 0,
  nparts INTEGER NOT NULL DEFAULT 0,           -- > 0: content is version_parts 1..nparts
  etag TEXT,
  content_type TEXT,
  user_meta TEXT,
  checksums TEXT,
  data_id INTEGER,                             -- the bytes it owns in blob_data (no blobs row)
  PRIMARY KEY(bucket_id, key, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS version_parts(
  bucket_id INTEGER NOT NULL,
  key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  part_no INTEGER NOT NULL,
  blob TEXT NOT NULL,
  size INTEGER NOT NULL,
  checksums TEXT,                              -- the part's x-amz-checksum-* values
  blob_offset INTEGER NOT NULL DEFAULT 0,      -- the part is size bytes of blob from here
  PRIMARY KEY(bucket_id, key, seq, part_no),
  FOREIGN KEY(bucket_id, key, seq) REFERENCES versions(bucket_id, key, seq)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs(
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  refcnt INTEGER NOT NULL,
  data_id INTEGER) WITHOUT ROWID;              -- its bytes in blob_data; NULL: a file in blobs/
-- The bytes of small blobs (k_max_db_blob): of a shared blob (blobs.data_id, apart from its
-- refcount, which changes often and must not rewrite the bytes), or owned by the one version
-- of a small object (versions.data_id: no blobs row, whose page sits at a random place in the
-- index by hash, to write for its PUT and again for its overwrite). Keyed by an integer, so
-- new bytes go at the end of the table.
CREATE TABLE IF NOT EXISTS blob_data(
  id INTEGER PRIMARY KEY,
  data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS uploads(
  upload_id TEXT PRIMARY KEY,
  bucket_id INTEGER NOT NULL REFERENCES buckets(id),
  key TEXT NOT NULL,
  created INTEGER NOT NULL,
  content_type TEXT,
  user_meta TEXT,
  checksums TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS uploads_bucket ON uploads(bucket_id);
CREATE TABLE IF NOT EXISTS upload_parts(
  upload_id TEXT NOT NULL REFERENCES uploads(upload_id),
  part_no INTEGER NOT NULL,
  blob TEXT NOT NULL,
  size INTEGER NOT NULL,
  etag TEXT NOT NULL,
  checksums TEXT,
  blob_offset INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(upload_id, part_no)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS access_keys(
  id TEXT PRIMARY KEY,
  secret TEXT NOT NULL,
  name TEXT NOT NULL,
  active INTEGER NOT NULL DEFAULT 1,
  created INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS key_roles(
  key_id TEXT NOT NULL REFERENCES access_keys(id),
  bucket TEXT NOT NULL,
  role TEXT NOT NULL CHECK(role IN ('Editor','ReadOnly','NamespaceAdmin')),
  bucket_id INTEGER,                           -- the bucket granted; NULL for "*"
  PRIMARY KEY(key_id, bucket)) WITHOUT ROWID;
INSERT OR IGNORE INTO meta(k, v) VALUES('schema_version', 1);
INSERT OR IGNORE INTO meta(k, v) VALUES('last_seq', 0);
)sql";

// Rows deleted per transaction when reclaiming a deleted bucket, so the writer lock is never
// held for long (§6.7 "batches of about 10k rows"; smaller here because each row also
// touches blob refcounts).
constexpr int k_reclaim_batch = 500;

// Idle read connections kept; more are opened on demand and closed when returned.
constexpr std::size_t k_max_idle_readers = 256;
// Writes committed together at most (group commit): bounds the wait of the first one.
constexpr std::size_t k_max_write_batch = 64;

constexpr const char* k_bucket_columns =
    "id, name, snapshot_enabled, parent_id, fork_seq, created_seq";

// Data directories made before roles named bucket ids: bind each role to the bucket that
// has its name now (issue 9 §3), once.
void migrate_key_roles(sqlite::Db& db) {
  bool has_bucket_id = false;
  {
    auto q = db.query("SELECT name FROM pragma_table_info('key_roles')");
    while (q->step())
      has_bucket_id = has_bucket_id || q->view(0) == "bucket_id";
  }
  if (has_bucket_id) return;
  db.exec("ALTER TABLE key_roles ADD COLUMN bucket_id INTEGER");
  db.exec(
      "UPDATE key_roles SET bucket_id=(SELECT id FROM buckets WHERE buckets.name=key_roles.bucket "
      "AND state=0) WHERE bucket<>'*'");
}

// Data directories made before parts kept their x-amz-checksum-* values (while uploading,
// then in the completed object).
void migrate_part_checksums(sqlite::Db& db) {
  for (const std::string table : {"upload_parts", "version_parts"}) {
    bool has_checksums = false;
    {
      auto q = db.query("SELECT name FROM pragma_table_info('" + table + "')");
      while (q->step())
        has_checksums = has_checksums || q->view(0) == "checksums";
    }
    if (!has_checksums) db.exec(("ALTER TABLE " + table + " ADD COLUMN checksums TEXT").c_str());
  }
}

// Data directories made before a part could be a range of a blob (UploadPartCopy by reference).
void migrate_part_offsets(sqlite::Db& db) {
  for (const std::string table : {"upload_parts", "version_parts"}) {
    auto q = db.query("SELECT 1 FROM pragma_table_info('" + table + "') WHERE name='blob_offset'");
    if (!q->step()) {
      db.exec(
          ("ALTER TABLE " + table + " ADD COLUMN blob_offset INTEGER NOT NULL DEFAULT 0").c_str());
    }
  }
}

// Data directories made before small blobs' bytes were keyed by integer (blob_bytes, by hash):
// the bytes move to blob_data, once.
void migrate_blob_data(sqlite::Db& db) {
  if (!db.query("SELECT 1 FROM sqlite_master WHERE type='table' AND name='blob_bytes'")->step())
    return;
  db.exec("ALTER TABLE blobs ADD COLUMN data_id INTEGER");
  db.exec("INSERT INTO blob_data(id, data) SELECT rowid, data FROM blob_bytes");
  db.exec(
      "UPDATE blobs SET data_id=(SELECT rowid FROM blob_bytes WHERE blob_bytes.hash=blobs.hash)");
  db.exec("DROP TABLE blob_bytes");
}

// Data directories made before a small object owned its bytes: their versions name shared
// blobs, as they still may.
void migrate_version_data(sqlite::Db& db) {
  auto q = db.query("SELECT 1 FROM pragma_table_info('versions') WHERE name='data_id'");
  if (!q->step()) db.exec("ALTER TABLE versions ADD COLUMN data_id INTEGER");
}

BucketRow bucket_from(const sqlite::Stmt& s) {
  BucketRow row;
  row.id = s.int64(0);
  row.name = s.text(1);
  row.snapshot_enabled = s.int64(2) != 0;
  row.parent_id = s.opt_int64(3);
  row.fork_seq = s.opt_int64(4);
  row.created = s.int64(5);
  return row;
}

}  // namespace

// ---------------------------------------------------------------- open and connections

Result<std::unique_ptr<Store>> SqliteStore::open_at(const fs::path& dir,
                                                    const StoreOptions& options) {
  int lock_fd = -1;
  try {
    fs::create_directories(dir);
    const fs::path lock_path = dir / "LOCK";
    lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd < 0) {
      return failure(StoreErrc::io, "open " + lock_path.string() + ": " + std::strerror(errno));
    }
    // §6.1: one server per data directory. flock conflicts across open file descriptions,
    // so a second Store in the same process is refused too.
    if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
      const int saved = errno;
      ::close(lock_fd);
      if (saved == EWOULDBLOCK) {
        return failure(StoreErrc::io,
                       "data directory " + dir.string() + " is in use by another tfork serve");
      }
      return failure(StoreErrc::io, "flock " + lock_path.string() + ": " + std::strerror(saved));
    }
    std::unique_ptr<SqliteStore> store(new SqliteStore(dir, options, lock_fd));
    lock_fd = -1;  // owned by the store now
    store->initialise();
    return std::unique_ptr<Store>(std::move(store));
  } catch (const std::exception& e) {
    if (lock_fd >= 0) ::close(lock_fd);
    return failure(StoreErrc::io, std::string("opening the store: ") + e.what());
  }
}

SqliteStore::SqliteStore(fs::path dir, StoreOptions options, int lock_fd)
    : dir_(std::move(dir)),
      options_(options),
      lock_fd_(lock_fd),
      blobs_(dir_, options.durability),
      reserve_(dir_ / "reserve", options.reserve_bytes) {}

SqliteStore::~SqliteStore() {
  {
    std::lock_guard lock(reclaim_mu_);
    reclaim_stop_ = true;
  }
  reclaim_wake_.notify_all();
  if (reclaimer_.joinable()) reclaimer_.join();  // after the batch in flight, if any
  {
    std::lock_guard lock(queue_mu_);
    commit_stop_ = true;
  }
  queue_wake_.notify_all();
  if (committer_.joinable()) committer_.join();  // after every queued write
  {
    std::lock_guard lock(checkpoint_mu_);
    checkpoint_stop_ = true;
  }
  checkpoint_wake_.notify_all();
  if (checkpointer_.joinable()) checkpointer_.join();
  checkpoint_db_.reset();
  pool_.clear();
  writer_.reset();
  ::close(lock_fd_);  // releases the flock
}

void SqliteStore::initialise() {
  reserve_.settle();  // first: opening the database on a full disk needs the room it gives
  writer_ = std::make_unique<sqlite::Db>(dir_ / "meta.db", false);
  // §6.8 and the brief: NORMAL in WAL survives kill -9 (the WAL is written before COMMIT
  // returns; only power loss can drop the last commits); FULL also survives power loss.
  // Per connection: the checkpointer's decides how a checkpoint syncs.
  const auto synchronous = [this](sqlite::Db& db) {
    switch (options_.durability) {
      case Durability::full:
        return db.exec("PRAGMA synchronous=FULL");
      case Durability::normal:
        return db.exec("PRAGMA synchronous=NORMAL");
      case Durability::off:
        return db.exec("PRAGMA synchronous=OFF");
    }
  };
  synchronous(*writer_);
  // After synchronous, so switching a new file to WAL is already governed by it.
  writer_->exec("PRAGMA journal_mode=WAL");
  writer_->exec("PRAGMA foreign_keys=ON");
  // Only another process (sqlite3 on meta.db) can hold the write lock: writes wait for it up
  // to 30 s, inside an S3 client's usual 60 s read timeout, before they fail (500).
  writer_->exec("PRAGMA busy_timeout=30000");
  writer_->exec("PRAGMA temp_store=MEMORY");
  writer_->exec("PRAGMA cache_size=-16384");
  {
    sqlite::Transaction txn(*writer_, sqlite::Transaction::Kind::write);
    writer_->exec(k_schema);
    migrate_key_roles(*writer_);
    migrate_part_checksums(*writer_);
    migrate_blob_data(*writer_);
    migrate_version_data(*writer_);
    migrate_part_offsets(*writer_);
    auto q = writer_->query("SELECT v FROM meta WHERE k='last_seq'");
    if (q->step()) last_seq_ = q->int64(0);
    txn.commit();
  }

  // Reclaims of buckets whose deletion was interrupted (§6.7) resume in the background once
  // the sweep below is done: start-up does not wait for them.
  {
    auto q = writer_->query("SELECT id FROM buckets WHERE state=1 ORDER BY id DESC");
    while (q->step())
      reclaims_.push_back(q->int64(0));
  }

  // §6.7 blob sweep: tmp/ is emptied and files that no row names are orphans of a crash
  // between rename and commit (or of a put that never happened).
  blobs_.sweep([this](std::string_view hash) {
    auto q = writer_->query("SELECT 1 FROM blobs WHERE hash=?1");
    return q->bind(1, hash).step();
  });
  committer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "store-commit");  // as top -H and perf show them
    run_committer();
  });
  reclaimer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "store-reclaim");
    run_reclaimer();
  });

  checkpoint_db_ = std::make_unique<sqlite::Db>(dir_ / "meta.db", false);
  synchronous(*checkpoint_db_);
  sqlite3_wal_hook(writer_->handle(), &SqliteStore::on_wal_commit, this);  // replaces SQLite's
  checkpointer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "store-checkpoint");
    run_checkpointer();
  });
}

int SqliteStore::on_wal_commit(void* self, sqlite3*, const char*, int frames) {
  // Due once checkpoint_frames more frames than the last pass saw are in the WAL (counting
  // from the start again once a write has started the WAL over).
  auto& store = *static_cast<SqliteStore*>(self);
  int seen = store.checkpointed_frames_.load(std::memory_order_relaxed);
  if (frames < seen) seen = 0;
  if (frames >= seen + std::max(store.options_.checkpoint_frames, 1)) {
    {
      std::lock_guard lock(store.checkpoint_mu_);
      store.checkpoint_due_ = true;
    }
    store.checkpoint_wake_.notify_one();
  }
  return SQLITE_OK;
}

void SqliteStore::checkpoint(int& wal_frames, int& copied) {
  const int rc = sqlite3_wal_checkpoint_v2(checkpoint_db_->handle(), nullptr,
                                           SQLITE_CHECKPOINT_PASSIVE, &wal_frames, &copied);
  if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
    spdlog::warn("store: WAL checkpoint failed: {}", sqlite3_errstr(rc));
    // The database file could not grow: the next pass gets the reserve's room.
    if ((rc & 0xff) == SQLITE_FULL) reserve_.release();
  }
}

void SqliteStore::run_checkpointer() {
  int held_pass_frames = 0;  // the WAL's frames after the last pass with writers held
  std::unique_lock lock(checkpoint_mu_);
  while (true) {
    checkpoint_wake_.wait(lock, [this] { return checkpoint_stop_ || checkpoint_due_; });
    if (checkpoint_stop_) return;
    checkpoint_due_ = false;
    lock.unlock();
    // PASSIVE: copies what no reader still needs, beside writers and readers. A write starts
    // the WAL over only if all of it was copied before the write began, which a steady stream
    // of writes never leaves time for: once the WAL holds 16 times checkpoint_frames, a last
    // pass runs with writers held, and the WAL stays bounded.
    int wal_frames = 0;
    int copied = 0;
    checkpoint(wal_frames, copied);
    // (A WAL whose every frame the last held pass copied is started over by the next write:
    // nothing to hold writers for.)
    if (wal_frames >= std::max(options_.checkpoint_frames, 1) * 16 &&
        wal_frames != held_pass_frames) {
      // Beside the writers until a pass finds little new to copy. SQLite syncs the database
      // file only after a pass that copied the whole WAL, which passes beside writers seldom
      // do: the pages each pass copied are synced here, still beside the writers, so that
      // writers wait only for the last pass's own few frames and pages.
      for (int pass = 0; pass < 8; ++pass) {
        const int before = copied;
        checkpoint(wal_frames, copied);
        try {
          if (options_.durability != Durability::off) fsync_file(dir_ / "meta.db");
        } catch (const std::exception& e) {
          spdlog::warn("store: syncing before a checkpoint: {}", e.what());
        }
        if (wal_frames - before < 64) break;
      }
      std::lock_guard writing(write_mu_);
      checkpoint(wal_frames, copied);
      held_pass_frames = wal_frames;
    }
    checkpointed_frames_.store(wal_frames, std::memory_order_relaxed);
    lock.lock();
  }
}

std::unique_ptr<sqlite::Db> SqliteStore::acquire_reader() {
  {
    std::lock_guard lock(pool_mu_);
    if (!pool_.empty()) {
      auto db = std::move(pool_.back());
      pool_.pop_back();
      return db;
    }
  }
  auto db = std::make_unique<sqlite::Db>(dir_ / "meta.db", true);
  db->exec("PRAGMA cache_size=-2048");  // up to one reader per HTTP worker: keep them small
  return db;
}

void SqliteStore::release_reader(std::unique_ptr<sqlite::Db> db) {
  std::lock_guard lock(pool_mu_);
  if (pool_.size() < k_max_idle_readers) pool_.push_back(std::move(db));
}

StoreError failure_of(const std::exception& e, std::string_view doing) {
  bool full = false;
  if (const auto* db = dynamic_cast<const sqlite::DbError*>(&e)) {
    full = (db->code() & 0xff) == SQLITE_FULL;
  } else if (const auto* sys = dynamic_cast<const std::system_error*>(&e)) {
    // errno values, whether the category is generic (ours) or system (std::filesystem's).
    full = sys->code().value() == ENOSPC || sys->code().value() == EDQUOT;
  }
  return StoreError{full ? StoreErrc::no_space : StoreErrc::io,
                    std::string(doing) + ": " + e.what()};
}

// ---------------------------------------------------------------- group commit

void SqliteStore::run_queued(QueuedWrite& item) {
  std::unique_lock lock(queue_mu_);
  queue_.push_back(&item);
  queue_wake_.notify_one();
  item.wake.wait(lock, [&] { return item.done; });
}

void SqliteStore::run_committer() {
  std::unique_lock lock(queue_mu_);
  while (true) {
    queue_wake_.wait(lock, [this] { return commit_stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    // What waits, in arrival order.
    const auto take = std::min(queue_.size(), k_max_write_batch);
    const std::vector<QueuedWrite*> batch(queue_.begin(), queue_.begin() + take);
    queue_.erase(queue_.begin(), queue_.begin() + take);
    lock.unlock();
    run_batch(batch);
    std::vector<std::unique_ptr<QueuedWrite>> finished;  // the asynchronous ones
    lock.lock();
    for (auto* queued : batch) {
      if (queued->then) {
        finished.emplace_back(queued);
      } else {
        queued->done = true;  // its waiter may destroy it from here on
        queued->wake.notify_one();
      }
    }
    lock.unlock();
    for (const auto& queued : finished) {
      try {
        queued->then(*queued);
      } catch (const std::exception& e) {
        spdlog::error("store: after a write: {}", e.what());
      }
    }
    finished.clear();
    lock.lock();
  }
}

void SqliteStore::run_batch(const std::vector<QueuedWrite*>& batch) {
  std::lock_guard lock(write_mu_);
  std::vector<WriteCtx> contexts;
  contexts.reserve(batch.size());
  std::vector<bool> kept(batch.size(), false);
  const bool savepoints = batch.size() > 1;
  bool undone = false;  // some changes were rolled back
  try {
    sqlite::Transaction txn(*writer_, sqlite::Transaction::Kind::write);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto& ctx = contexts.emplace_back(WriteCtx{*writer_, {}, {}});
      if (savepoints) writer_->query("SAVEPOINT queued_write")->run();
      try {
        kept[i] = batch[i]->run(ctx);
      } catch (const std::exception& e) {
        batch[i]->failure = failure_of(e, "writing");
        // SQLite rolled the whole transaction back: the batch fails, below.
        if (!writer_->in_transaction()) throw;
      }
      if (!kept[i]) undone = true;
      if (savepoints) {
        if (!kept[i]) writer_->query("ROLLBACK TO queued_write")->run();
        writer_->query("RELEASE queued_write")->run();
      }
    }
    if (kept.front() || savepoints) txn.commit();  // else the destructor rolls back
  } catch (const std::exception& e) {
    // Nothing of this batch was committed: every body's result is void.
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!batch[i]->failure) batch[i]->failure = failure_of(e, "committing");
      kept[i] = false;
    }
    undone = true;
  }
  // A body may have cached a chain it read from rows that were then rolled back.
  if (undone) forget_all_chains();
  for (std::size_t i = 0; i < contexts.size(); ++i) {
    auto& ctx = contexts[i];
    // Still under the writer lock: a hash freed and re-referenced in the same transaction
    // has a row again and must stay (§6.7: unlink only what no row names).
    if (kept[i] && !ctx.freed.empty()) unlink_unnamed(ctx.freed);
    for (const auto& hash : ctx.consumed_pins)
      blobs_.release(hash);
    // An undone write (a failed condition, a missing bucket, a failed COMMIT): the files
    // written for it that no row names are unlinked now, not at the next start. One that a
    // write still in flight pinned is kept (remove_unreferenced skips it).
    if (!kept[i] && !ctx.consumed_pins.empty()) unlink_unnamed(ctx.consumed_pins);
  }
}

void SqliteStore::unlink_unnamed(const std::vector<std::string>& hashes) {
  std::vector<std::string> unlink;
  for (const auto& hash : hashes) {
    auto q = writer_->query("SELECT 1 FROM blobs WHERE hash=?1");
    if (!q->bind(1, std::string_view(hash)).step()) unlink.push_back(hash);
  }
  blobs_.remove_unreferenced(unlink);
}

Seq SqliteStore::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Seq SqliteStore::next_seq(sqlite::Db& db) {
  // §6.2: unique and increasing even if the clock steps back, persisted in the same
  // transaction as the row that uses it so a restart never reissues or lowers a seq.
  last_seq_ = std::max(now_ns(), last_seq_ + 1);
  auto q = db.query("UPDATE meta SET v=?1 WHERE k='last_seq'");
  q->bind(1, last_seq_).run();
  return last_seq_;
}

// ---------------------------------------------------------------- bucket rows and chains

std::optional<BucketRow> SqliteStore::find_bucket(sqlite::Db& db, std::string_view name) {
  auto q = db.query(std::string("SELECT ") + k_bucket_columns +
                    " FROM buckets WHERE name=?1 AND state=0");
  if (!q->bind(1, name).step()) return std::nullopt;
  return bucket_from(*q);
}

std::optional<BucketRow> SqliteStore::find_bucket_by_id(sqlite::Db& db, std::int64_t id) {
  auto q =
      db.query(std::string("SELECT ") + k_bucket_columns + " FROM buckets WHERE id=?1 AND state=0");
  if (!q->bind(1, id).step()) return std::nullopt;
  return bucket_from(*q);
}

bool SqliteStore::has_children(sqlite::Db& db, std::int64_t id, bool live_only) {
  auto q = db.query(live_only ? "SELECT 1 FROM buckets WHERE parent_id=?1 AND state=0 LIMIT 1"
                              : "SELECT 1 FROM buckets WHERE parent_id=?1 LIMIT 1");
  return q->bind(1, id).step();
}

BucketInfo SqliteStore::info_of(sqlite::Db& db, const BucketRow& row) {
  BucketInfo info;
  info.name = row.name;
  info.created = row.created;
  info.snapshot_enabled = row.snapshot_enabled;
  if (row.parent_id) {
    auto q = db.query("SELECT name FROM buckets WHERE id=?1");
    if (q->bind(1, *row.parent_id).step()) info.fork_source = q->text(0);
    info.fork_snapshot = row.fork_seq;
    info.fork_created = row.created;
  }
  info.has_children = has_children(db, row.id, true);
  return info;
}

std::shared_ptr<const Ancestry> SqliteStore::ancestry(sqlite::Db& db, std::int64_t bucket_id) {
  {
    std::shared_lock lock(chain_mu_);
    if (const auto it = chains_.find(bucket_id); it != chains_.end()) return it->second;
  }
  auto built = std::make_shared<Ancestry>();
  std::int64_t id = bucket_id;
  while (true) {
    built->ids.push_back(id);
    auto q = db.query("SELECT parent_id, fork_seq FROM buckets WHERE id=?1");
    if (!q->bind(1, id).step() || q->is_null(0)) break;
    built->caps.push_back(q->int64(1));
    id = q->int64(0);
  }
  std::unique_lock lock(chain_mu_);
  return chains_.try_emplace(bucket_id, std::move(built)).first->second;
}

std::vector<Layer> SqliteStore::chain(sqlite::Db& db, std::int64_t bucket_id,
                                      std::optional<Seq> at) {
  // §6.4: (b, h0), (parent, fork_seq_b), (grandparent, min(fork_seq_b, fork_seq_parent)).
  // `at` bounds the bucket's own layer only: through a fork, the source is always read at
  // the fork point, so no version of the source older than the fork is reachable from the
  // fork (issue 9 §3: a fork's key never sees its source's past).
  const auto anc = ancestry(db, bucket_id);
  std::vector<Layer> layers;
  layers.reserve(anc->ids.size());
  Seq horizon = at.value_or(k_seq_max);
  Seq cap = k_seq_max;
  for (std::size_t i = 0; i < anc->ids.size(); ++i) {
    layers.push_back(Layer{anc->ids[i], horizon});
    if (i < anc->caps.size()) {
      cap = std::min(cap, anc->caps[i]);
      horizon = cap;
    }
  }
  return layers;
}

void SqliteStore::forget_chain(std::int64_t bucket_id) {
  std::unique_lock lock(chain_mu_);
  chains_.erase(bucket_id);
}

void SqliteStore::forget_all_chains() {
  std::unique_lock lock(chain_mu_);
  chains_.clear();
}

// ---------------------------------------------------------------- buckets

Result<BucketInfo> SqliteStore::create_bucket(std::string_view name, bool snapshot_enabled) {
  if (name.empty()) return failure(StoreErrc::invalid_argument, "empty bucket name");
  return write([&](WriteCtx& ctx) -> Result<BucketInfo> {
    if (find_bucket(ctx.db, name)) {
      return failure(StoreErrc::bucket_exists, "bucket " + std::string(name) + " already exists");
    }
    const Seq seq = next_seq(ctx.db);
    auto q =
        ctx.db.query("INSERT INTO buckets(name, snapshot_enabled, created_seq) VALUES(?1, ?2, ?3)");
    q->bind(1, name).bind(2, std::int64_t{snapshot_enabled}).bind(3, seq).run();
    BucketInfo info;
    info.name = std::string(name);
    info.created = seq;
    info.snapshot_enabled = snapshot_enabled;
    return info;
  });
}

Result<BucketInfo> SqliteStore::create_fork(std::string_view name, std::string_view source,
                                            std::optional<Seq> snapshot) {
  if (name.empty()) return failure(StoreErrc::invalid_argument, "empty bucket name");
  return write([&](WriteCtx& ctx) -> Result<BucketInfo> {
    if (find_bucket(ctx.db, name)) {
      return failure(StoreErrc::bucket_exists, "bucket " + std::string(name) + " already exists");
    }
    const auto src = find_bucket(ctx.db, source);
    if (!src) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(source));
    if (!src->snapshot_enabled) {
      return failure(StoreErrc::not_snapshot_enabled,
                     "forks need a snapshot-enabled source; " + src->name + " is not");
    }
    Seq horizon = 0;
    Seq created = 0;
    if (snapshot) {
      // tigris-wire §1.4: any ns timestamp may be the fork point, but not one in the future:
      // the source's later writes must stay invisible, so every later seq is pushed above it.
      if (*snapshot < 0) return failure(StoreErrc::invalid_argument, "negative snapshot version");
      if (*snapshot > std::max(now_ns(), last_seq_)) {
        return failure(StoreErrc::invalid_argument, "snapshot version is in the future");
      }
      // Through a fork, nothing older than its own fork point is reachable (issue 9 §3).
      if (src->parent_id && src->fork_seq && *snapshot < *src->fork_seq) {
        return failure(StoreErrc::invalid_argument,
                       "snapshot version is older than " + src->name + "'s fork point");
      }
      horizon = *snapshot;
      last_seq_ = std::max(last_seq_, horizon);
      created = next_seq(ctx.db);
    } else {
      // §6.3: no version given → a fresh implicit snapshot of the source, listed (unnamed)
      // among the source's snapshots (tigris-wire §2.6, inferred yes).
      horizon = next_seq(ctx.db);
      created = horizon;
      auto q = ctx.db.query("INSERT INTO snapshots(bucket_id, seq, name) VALUES(?1, ?2, NULL)");
      q->bind(1, src->id).bind(2, horizon).run();
    }
    // §2.7 / §6.3: the whole fork is this one row; nothing is copied.
    auto q = ctx.db.query(
        "INSERT INTO buckets(name, snapshot_enabled, parent_id, fork_seq, created_seq) "
        "VALUES(?1, 1, ?2, ?3, ?4)");
    q->bind(1, name).bind(2, src->id).bind(3, horizon).bind(4, created).run();
    BucketInfo info;
    info.name = std::string(name);
    info.created = created;
    info.snapshot_enabled = true;
    info.fork_source = src->name;
    info.fork_snapshot = horizon;
    info.fork_created = created;
    return info;
  });
}

Result<BucketInfo> SqliteStore::head_bucket(std::string_view name) {
  return read([&](sqlite::Db& db) -> Result<BucketInfo> {
    const auto row = find_bucket(db, name);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(name));
    return info_of(db, *row);
  });
}

Result<std::vector<BucketInfo>> SqliteStore::list_buckets() {
  return read([&](sqlite::Db& db) -> Result<std::vector<BucketInfo>> {
    std::vector<BucketRow> rows;
    {
      auto q = db.query(std::string("SELECT ") + k_bucket_columns +
                        " FROM buckets WHERE state=0 ORDER BY name");
      while (q->step())
        rows.push_back(bucket_from(*q));
    }
    std::vector<BucketInfo> out;
    out.reserve(rows.size());
    for (const auto& row : rows)
      out.push_back(info_of(db, row));
    return out;
  });
}

Result<std::vector<BucketInfo>> SqliteStore::list_forks(std::string_view source) {
  return read([&](sqlite::Db& db) -> Result<std::vector<BucketInfo>> {
    const auto src = find_bucket(db, source);
    if (!src) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(source));
    std::vector<BucketRow> rows;
    {
      auto q = db.query(std::string("SELECT ") + k_bucket_columns +
                        " FROM buckets WHERE parent_id=?1 AND state=0 ORDER BY name");
      q->bind(1, src->id);
      while (q->step())
        rows.push_back(bucket_from(*q));
    }
    std::vector<BucketInfo> out;
    out.reserve(rows.size());
    for (const auto& row : rows)
      out.push_back(info_of(db, row));
    return out;
  });
}

Result<void> SqliteStore::delete_bucket(std::string_view name, bool force) {
  std::int64_t id = 0;
  auto marked = write_freeing([&](WriteCtx& ctx) -> Result<void> {
    const auto row = find_bucket(ctx.db, name);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(name));
    // tigris-wire §2.10: a source with live forks cannot be deleted, force or not. A fork
    // still being reclaimed does not count: the reclaimer removes its row first.
    if (has_children(ctx.db, row->id, true)) {
      return failure(StoreErrc::bucket_has_forks,
                     "bucket " + row->name + " has forks; delete them first");
    }
    if (!force) {
      // Pages of deleted keys only may come before the first visible one.
      ListQuery probe;
      probe.max_keys = 1;
      while (true) {
        auto page = list_in(ctx.db, *row, probe);
        if (!page) return std::unexpected(page.error());
        if (!page->objects.empty()) {
          return failure(StoreErrc::bucket_not_empty, "bucket " + row->name + " is not empty");
        }
        if (!page->truncated) break;
        probe.after = page->last;
      }
    }
    // §6.7: state=1 frees the name at once; the rows go in batches below. Snapshots and
    // unfinished uploads go with the bucket (tigris-wire §2.10).
    ctx.db.query("UPDATE buckets SET state=1 WHERE id=?1")->bind(1, row->id).run();
    ctx.db.query("DELETE FROM snapshots WHERE bucket_id=?1")->bind(1, row->id).run();
    // Grants go with the bucket: a later bucket of the same name is a different bucket.
    ctx.db.query("DELETE FROM key_roles WHERE bucket_id=?1")->bind(1, row->id).run();
    std::vector<std::string> uploads;
    {
      auto q = ctx.db.query("SELECT upload_id FROM uploads WHERE bucket_id=?1");
      q->bind(1, row->id);
      while (q->step())
        uploads.push_back(q->text(0));
    }
    for (const auto& upload : uploads)
      remove_upload(ctx, upload);
    id = row->id;
    return {};
  });
  if (!marked) return marked;
  queue_reclaim(id);
  return {};
}

void SqliteStore::queue_reclaim(std::int64_t bucket_id) {
  forget_chain(bucket_id);
  {
    std::lock_guard lock(reclaim_mu_);
    reclaims_.push_back(bucket_id);
  }
  reclaim_wake_.notify_all();
}

void SqliteStore::wait_for_reclaims() {
  std::unique_lock lock(reclaim_mu_);
  reclaim_idle_.wait(lock, [this] { return (reclaims_.empty() && !reclaiming_) || reclaim_stop_; });
}

void SqliteStore::run_reclaimer() {
  std::unique_lock lock(reclaim_mu_);
  while (true) {
    reclaim_wake_.wait(lock, [this] { return reclaim_stop_ || !reclaims_.empty(); });
    if (reclaim_stop_) break;
    const auto id = reclaims_.front();
    reclaims_.pop_front();
    reclaiming_ = true;
    lock.unlock();
    bool gone = false;
    try {
      gone = reclaim_batch(id);
    } catch (const std::exception&) {
      gone = true;  // a database failure: left for the next open (the state=1 row stays)
    }
    lock.lock();
    reclaiming_ = false;
    // Not finished (or waiting for a fork's reclaim): back of the queue, so the reclaims of
    // several buckets interleave and a fork's finishes before its source's bucket row goes.
    if (!gone) reclaims_.push_back(id);
    if (reclaims_.empty()) reclaim_idle_.notify_all();
  }
  reclaim_idle_.notify_all();
}

bool SqliteStore::reclaim_batch(std::int64_t bucket_id) {
  // §6.7: O(rows this bucket wrote), never O(rows visible through it). Blob files whose
  // refcount reaches 0 are unlinked after the batch commits.
  bool gone = false;
  auto batch = write_freeing([&](WriteCtx& ctx) -> Result<void> {
    std::vector<std::pair<std::string, Seq>> rows;
    {
      auto q = ctx.db.query("SELECT key, seq FROM versions WHERE bucket_id=?1 LIMIT ?2");
      q->bind(1, bucket_id).bind(2, std::int64_t{k_reclaim_batch});
      while (q->step())
        rows.emplace_back(q->text(0), q->int64(1));
    }
    for (const auto& [key, seq] : rows)
      remove_version(ctx, bucket_id, key, seq);
    if (rows.empty()) {
      // A deleted fork still being reclaimed names this bucket as its parent: it goes first.
      if (has_children(ctx.db, bucket_id, false)) return {};
      ctx.db.query("DELETE FROM buckets WHERE id=?1")->bind(1, bucket_id).run();
      gone = true;
    }
    return {};
  });
  if (!batch) throw sqlite::DbError(0, batch.error().message);
  return gone;
}

Result<void> SqliteStore::set_snapshot_enabled(std::string_view name, bool enabled) {
  return write([&](WriteCtx& ctx) -> Result<void> {
    const auto row = find_bucket(ctx.db, name);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(name));
    if (!enabled) {
      // tigris-wire §2.2: Snapshot → Regular is refused for fork parents and fork children
      // (a regular bucket prunes history that a fork or snapshot may rely on). A deleted fork
      // whose rows are still being reclaimed reads nothing any more, so it does not count.
      if (has_children(ctx.db, row->id, true)) {
        return failure(StoreErrc::bucket_has_forks,
                       "bucket " + row->name + " has forks; it must stay snapshot-enabled");
      }
      if (row->parent_id) {
        return failure(StoreErrc::invalid_argument,
                       "bucket " + row->name + " is a fork; it must stay snapshot-enabled");
      }
    }
    ctx.db.query("UPDATE buckets SET snapshot_enabled=?2 WHERE id=?1")
        ->bind(1, row->id)
        .bind(2, std::int64_t{enabled})
        .run();
    return {};
  });
}

// ---------------------------------------------------------------- snapshots

Result<SnapshotInfo> SqliteStore::take_snapshot(std::string_view bucket,
                                                std::optional<std::string> name) {
  return write([&](WriteCtx& ctx) -> Result<SnapshotInfo> {
    const auto row = find_bucket(ctx.db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    if (!row->snapshot_enabled) {
      return failure(StoreErrc::not_snapshot_enabled,
                     "bucket " + row->name + " is not snapshot-enabled");
    }
    // §6.3: a snapshot is just a fresh seq recorded against the bucket; O(1).
    const Seq seq = next_seq(ctx.db);
    auto q = ctx.db.query("INSERT INTO snapshots(bucket_id, seq, name) VALUES(?1, ?2, ?3)");
    std::optional<std::string_view> stored;
    if (name) stored = *name;
    q->bind(1, row->id).bind(2, seq).bind(3, stored).run();
    return SnapshotInfo{seq, std::move(name), seq};
  });
}

Result<std::vector<SnapshotInfo>> SqliteStore::list_snapshots(std::string_view bucket) {
  return read([&](sqlite::Db& db) -> Result<std::vector<SnapshotInfo>> {
    const auto row = find_bucket(db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    std::vector<SnapshotInfo> out;
    auto q = db.query("SELECT seq, name FROM snapshots WHERE bucket_id=?1 ORDER BY seq DESC");
    q->bind(1, row->id);
    while (q->step())
      out.push_back(SnapshotInfo{q->int64(0), q->opt_text(1), q->int64(0)});
    return out;
  });
}

Result<void> SqliteStore::delete_snapshot(std::string_view bucket, Seq version) {
  return write_freeing([&](WriteCtx& ctx) -> Result<void> {
    const auto row = find_bucket(ctx.db, bucket);
    if (!row) return failure(StoreErrc::no_such_bucket, "no such bucket " + std::string(bucket));
    // §6.7: forks made from this snapshot keep their own fork_seq; only the row goes.
    ctx.db.query("DELETE FROM snapshots WHERE bucket_id=?1 AND seq=?2")
        ->bind(1, row->id)
        .bind(2, version)
        .run();
    if (ctx.db.changes() == 0) {
      return failure(StoreErrc::no_such_snapshot,
                     "bucket " + row->name + " has no snapshot " + std::to_string(version));
    }
    return {};
  });
}

// ---------------------------------------------------------------- blobs

Result<void> SqliteStore::admit_data(std::int64_t bytes) {
  if (reserve_.admit_data(bytes)) return {};
  return failure(StoreErrc::no_space, "the disk of " + dir_.string() +
                                          " is full: new data is refused until space is freed");
}

Result<BlobRef> SqliteStore::write_blob(std::string_view content) {
  if (auto admitted = admit_data(0); !admitted) return std::unexpected(admitted.error());
  try {
    if (std::ssize(content) <= k_max_db_blob) {
      // Written with the row that first names it (add_ref), in one transaction.
      return BlobRef{crypto::sha256_hex(content),
                     std::ssize(content),
                     {},
                     std::make_shared<const std::string>(content)};
    }
    return blobs_.write(content);
  } catch (const std::exception& e) {
    return std::unexpected(failure_of(e, "writing a blob"));
  }
}

fs::path SqliteStore::blob_path(const BlobRef& blob) const {
  return blobs_.path_of(blob.hash);
}

Result<std::optional<std::string>> SqliteStore::db_blob_bytes(const BlobRef& blob) {
  return read([&](sqlite::Db& db) -> Result<std::optional<std::string>> {
    const auto bytes = bytes_of(db, blob);
    if (!bytes) return std::nullopt;
    return *bytes;
  });
}

Result<std::vector<std::string>> SqliteStore::blob_users(const BlobRef& blob, std::size_t limit) {
  return read([&](sqlite::Db& db) -> Result<std::vector<std::string>> {
    std::vector<std::string> users;
    const auto add_rows = [&](sqlite::Query& q, std::string_view suffix) {
      while (users.size() < limit && q->step())
        users.push_back(q->text(0) + "/" + q->text(1) + std::string(suffix));
    };
    if (blob.data_id) {
      auto q = db.query(
          "SELECT b.name, v.key FROM versions v JOIN buckets b ON b.id = v.bucket_id "
          "WHERE v.data_id = ?1 LIMIT ?2");
      q->bind(1, *blob.data_id).bind(2, static_cast<std::int64_t>(limit));
      add_rows(q, "");
      return users;
    }
    for (const auto* sql :
         {"SELECT DISTINCT b.name, v.key FROM versions v JOIN buckets b ON b.id = v.bucket_id "
          "WHERE v.blob = ?1 AND b.state = 0 LIMIT ?2",
          "SELECT DISTINCT b.name, p.key FROM version_parts p JOIN buckets b "
          "ON b.id = p.bucket_id WHERE p.blob = ?1 AND b.state = 0 LIMIT ?2"}) {
      auto q = db.query(sql);
      q->bind(1, std::string_view(blob.hash)).bind(2, static_cast<std::int64_t>(limit));
      add_rows(q, "");
    }
    auto q = db.query(
        "SELECT DISTINCT b.name, u.key FROM upload_parts p JOIN uploads u "
        "ON u.upload_id = p.upload_id JOIN buckets b ON b.id = u.bucket_id "
        "WHERE p.blob = ?1 LIMIT ?2");
    q->bind(1, std::string_view(blob.hash)).bind(2, static_cast<std::int64_t>(limit));
    add_rows(q, " (upload)");
    return users;
  });
}

Result<std::vector<BlobRef>> SqliteStore::list_blobs() {
  return read([&](sqlite::Db& db) -> Result<std::vector<BlobRef>> {
    std::vector<BlobRef> blobs;
    {
      auto q = db.query("SELECT hash, size FROM blobs ORDER BY hash");
      while (q->step())
        blobs.push_back(BlobRef{q->text(0), q->int64(1)});
    }
    auto q = db.query("SELECT blob, size, data_id FROM versions WHERE data_id IS NOT NULL");
    while (q->step())
      blobs.push_back(BlobRef{q->text(0), q->int64(1), {}, {}, q->int64(2)});
    return blobs;
  });
}

fs::path SqliteStore::tmp_dir() const {
  return blobs_.tmp_dir();
}

Result<BlobRef> SqliteStore::adopt_blob(const fs::path& file, std::string_view sha256_hex) {
  const bool hex =
      sha256_hex.size() == 64 && std::all_of(sha256_hex.begin(), sha256_hex.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      });
  if (!hex) return failure(StoreErrc::invalid_argument, "blob name must be lowercase sha256 hex");
  if (auto admitted = admit_data(0); !admitted) return std::unexpected(admitted.error());
  try {
    // A small upload joins the database like any small blob (read back and checked).
    if (std::error_code ec;
        fs::file_size(file, ec) <= static_cast<std::uintmax_t>(k_max_db_blob) && !ec) {
      return Store::adopt_blob(file, sha256_hex);
    }
    return blobs_.adopt(file, sha256_hex);
  } catch (const std::exception& e) {
    return std::unexpected(failure_of(e, "adopting a blob"));
  }
}

}  // namespace tfork::store
