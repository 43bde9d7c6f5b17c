// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Store implementation: SQLite metadata (WAL) + BlobFiles (server-design.md §6).
// Split over several .cpp files by concern: sqlite_store.cpp (open, connections, seq, buckets,
// snapshots), objects.cpp (chain reads and the write path), listing.cpp (the k-way merge),
// multipart.cpp, access_keys.cpp.

#include "tfork/store/store.hpp"

#include "blob_files.hpp"
#include "space_reserve.hpp"
#include "sqlite.hpp"
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tfork::store {

inline constexpr Seq k_seq_max = std::numeric_limits<Seq>::max();

// versions.kind
inline constexpr std::int64_t k_kind_object = 0;
inline constexpr std::int64_t k_kind_tombstone = 1;

// The error a store call returns (store calls return errors; the server's fail() throws).
inline std::unexpected<StoreError> failure(StoreErrc code, std::string message) {
  return std::unexpected(StoreError{code, std::move(message)});
}

// A live bucket row.
struct BucketRow {
  std::int64_t id = 0;
  std::string name;
  bool snapshot_enabled = false;
  std::optional<std::int64_t> parent_id;
  std::optional<Seq> fork_seq;
  Seq created = 0;
};

// One layer of a read chain: a bucket and the newest seq visible in it (§6.4).
struct Layer {
  std::int64_t bucket_id = 0;
  Seq horizon = k_seq_max;
};

// The immutable ancestry of a bucket: ids and the fork seq that caps the *next* layer.
// Immutable because a bucket's parent and fork_seq never change and ids are never reused,
// so it is cached by id without any invalidation except on delete (§6.4).
struct Ancestry {
  std::vector<std::int64_t> ids;  // ids[0] is the bucket itself
  std::vector<Seq> caps;          // caps[i] = fork_seq of ids[i] (horizon of ids[i+1])
};

// A version row as read back (object or tombstone).
struct VersionRow {
  Seq seq = 0;
  std::int64_t kind = k_kind_object;
  std::optional<std::string> blob;
  std::int64_t size = 0;
  std::int64_t nparts = 0;
  std::string etag;
  std::string content_type;
  std::optional<std::string> user_meta;  // encoded
  std::optional<std::string> checksums;  // encoded
  std::optional<std::int64_t> data_id;   // the bytes it owns in blob_data
};

// A visible version and the layer (bucket) that holds it.
struct Found {
  std::int64_t bucket_id = 0;
  VersionRow row;
};

// State of one write transaction: blobs whose last reference it dropped, unlinked after
// COMMIT (§6.7), and blobs whose write-pin it consumes (the files written for it: when its
// changes are undone, those no row names are unlinked, so a refused write leaves no file).
struct WriteCtx {
  sqlite::Db& db;
  std::vector<std::string> freed;
  std::vector<std::string> consumed_pins;
};

// An exception from the disk or SQLite as a store error: no_space when the disk or the quota
// is full (SQLITE_FULL, ENOSPC, EDQUOT), else io. `doing` starts the message.
StoreError failure_of(const std::exception& e, std::string_view doing);

// A write waiting for the writer connection (group commit, §6.8). One committer thread takes
// what waits, runs the bodies, each in a savepoint of one shared transaction, and commits once
// for all of them. A caller of write() sleeps until its batch is done; a write nobody waits
// for (write_async) has `then` instead, which the committer calls after the batch.
struct QueuedWrite {
  std::function<bool(WriteCtx&)> run;      // runs the body; true when its changes are to be kept
  std::optional<StoreError> failure;       // the body threw, or the batch's COMMIT failed
  std::function<void(QueuedWrite&)> then;  // set: asynchronous, owned by the queue
  // Guarded by the queue's mutex. Each waiter is woken alone, when its batch is done (a
  // wake-up of every waiter after each batch would have dozens of threads contend for the
  // cores the committer needs).
  bool done = false;
  std::condition_variable wake;
};

class SqliteStore final : public Store {
 public:
  static Result<std::unique_ptr<Store>> open_at(const std::filesystem::path& dir,
                                                const StoreOptions& options);
  ~SqliteStore() override;

  Result<BucketInfo> create_bucket(std::string_view name, bool snapshot_enabled) override;
  Result<BucketInfo> create_fork(std::string_view name, std::string_view source,
                                 std::optional<Seq> snapshot) override;
  Result<BucketInfo> head_bucket(std::string_view name) override;
  Result<std::vector<BucketInfo>> list_buckets() override;
  Result<std::vector<BucketInfo>> list_forks(std::string_view source) override;
  Result<void> delete_bucket(std::string_view name, bool force) override;
  void wait_for_reclaims() override;
  Result<void> set_snapshot_enabled(std::string_view name, bool enabled) override;

  Result<SnapshotInfo> take_snapshot(std::string_view bucket,
                                     std::optional<std::string> name) override;
  Result<std::vector<SnapshotInfo>> list_snapshots(std::string_view bucket) override;
  Result<void> delete_snapshot(std::string_view bucket, Seq version) override;

  Result<BlobRef> write_blob(std::string_view content) override;
  std::filesystem::path blob_path(const BlobRef& blob) const override;
  Result<std::vector<BlobRef>> list_blobs() override;
  Result<std::optional<std::string>> db_blob_bytes(const BlobRef& blob) override;
  Result<std::vector<std::string>> blob_users(const BlobRef& blob, std::size_t limit) override;
  std::filesystem::path tmp_dir() const override;
  Result<BlobRef> adopt_blob(const std::filesystem::path& file,
                             std::string_view sha256_hex) override;

  Result<ObjectInfo> put_object(std::string_view bucket, std::string_view key, NewObject object,
                                WriteConditions conditions = {}) override;
  void put_object_async(std::string bucket, std::string key, NewObject object,
                        std::function<void(Result<ObjectInfo>)> done,
                        WriteConditions conditions = {}) override;
  Result<ObjectInfo> get_object(std::string_view bucket, std::string_view key,
                                std::optional<Seq> at) override;
  Result<void> delete_object(std::string_view bucket, std::string_view key) override;
  Result<std::optional<Seq>> delete_object_version(std::string_view bucket,
                                                   std::string_view key) override;
  Result<ListPage> list_objects(std::string_view bucket, const ListQuery& query) override;
  Result<BucketStats> bucket_stats(std::string_view bucket) override;
  Result<ObjectInfo> copy_object(std::string_view src_bucket, std::string_view src_key,
                                 std::optional<Seq> src_at, std::string_view dst_bucket,
                                 std::string_view dst_key, std::optional<NewObject> replace,
                                 WriteConditions conditions = {}) override;

  Result<UploadInfo> create_upload(std::string_view bucket, std::string_view key,
                                   NewObject meta) override;
  Result<PartInfo> put_part(std::string_view upload_id, int part_number, BlobRef blob,
                            std::string etag, Metadata checksums = {}) override;
  Result<std::vector<PartInfo>> list_parts(std::string_view upload_id) override;
  Result<PartInfo> put_part_copy(std::string_view upload_id, int part_number, BlobRef range,
                                 std::string etag, Metadata checksums = {}) override;
  Result<ObjectInfo> complete_upload(std::string_view upload_id,
                                     const std::vector<std::pair<int, std::string>>& parts,
                                     std::optional<Metadata> checksums = std::nullopt,
                                     WriteConditions conditions = {}) override;
  Result<std::vector<UploadInfo>> list_uploads(std::string_view bucket,
                                               std::string_view prefix) override;
  Result<void> abort_upload(std::string_view upload_id) override;
  Result<UploadInfo> get_upload(std::string_view upload_id) override;

  Result<AccessKey> create_access_key(std::string_view name,
                                      std::vector<BucketRole> roles) override;
  Result<AccessKey> get_access_key(std::string_view id) override;
  Result<std::vector<AccessKey>> list_access_keys() override;
  Result<void> delete_access_key(std::string_view id) override;
  Result<void> update_access_key_roles(std::string_view id, std::vector<BucketRole> roles) override;
  Result<AccessKey> rotate_access_key(std::string_view id) override;

  Result<MergeResult> merge_fork(std::string_view target, std::string_view fork) override;
  Result<BucketInfo> rebase_fork(std::string_view fork) override;

 private:
  SqliteStore(std::filesystem::path dir, StoreOptions options, int lock_fd);
  void initialise();

  // ---- connections and transactions (§6.8)
  std::unique_ptr<sqlite::Db> acquire_reader();
  void release_reader(std::unique_ptr<sqlite::Db> db);

  // Runs `body(WriteCtx&) -> Result<T>` atomically on the writer connection and returns
  // once its changes are committed (when it succeeds) or undone (when it fails), then unlinks
  // the blobs it freed and releases the pins it consumed. Bodies that wait together are
  // committed together (one BEGIN IMMEDIATE ... COMMIT, a savepoint each).
  template <class F>
  auto write(F&& body) -> decltype(body(std::declval<WriteCtx&>()));
  // write() of a body that frees space, or at least adds none that a full disk must refuse:
  // when even it fails for want of space, the reserve is given up and it runs once more (so
  // `body` must be safe to run twice). After it, the reserve is made again if there is room.
  template <class F>
  auto write_freeing(F&& body) -> decltype(body(std::declval<WriteCtx&>()));
  // no_space unless the disk has room for `bytes` of new data (SpaceReserve::admit_data).
  Result<void> admit_data(std::int64_t bytes) override;
  // The same without waiting: `then(Result<T>)` runs on the committer thread once the body's
  // changes are committed or undone (and its freed blobs unlinked).
  template <class F, class Then>
  void write_async(F body, Then then);
  void run_queued(QueuedWrite& item);
  void run_committer();
  void run_batch(const std::vector<QueuedWrite*>& batch);
  // Unlinks the blob files of `hashes` that no row names (writer lock held, after the
  // transaction ended) unless a write in flight pinned them.
  void unlink_unnamed(const std::vector<std::string>& hashes);
  // Runs `body(sqlite::Db&) -> Result<T>` in one read transaction on a pooled connection.
  template <class F>
  auto read(F&& body) -> decltype(body(std::declval<sqlite::Db&>()));

  Seq next_seq(sqlite::Db& db);  // writer only, inside a transaction
  static Seq now_ns();

  // ---- buckets and chains
  static std::optional<BucketRow> find_bucket(sqlite::Db& db, std::string_view name);
  static std::optional<BucketRow> find_bucket_by_id(sqlite::Db& db, std::int64_t id);
  static bool has_children(sqlite::Db& db, std::int64_t id, bool live_only);
  static BucketInfo info_of(sqlite::Db& db, const BucketRow& row);
  std::shared_ptr<const Ancestry> ancestry(sqlite::Db& db, std::int64_t bucket_id);
  std::vector<Layer> chain(sqlite::Db& db, std::int64_t bucket_id, std::optional<Seq> at);
  void forget_chain(std::int64_t bucket_id);
  void forget_all_chains();
  // Deletes one batch of a deleted bucket's rows (state=1 already committed), or, when none
  // is left and no fork row still names it, the bucket row. True when the bucket is gone.
  bool reclaim_batch(std::int64_t bucket_id);
  // The background reclaimer: deleted buckets are queued, and their rows removed one short
  // transaction at a time, so the writer lock is never held for long and neither a delete
  // nor start-up waits for it (issue 9 §4). Interrupted by a crash, it resumes at the next
  // open (the state=1 rows persist).
  void queue_reclaim(std::int64_t bucket_id);
  void run_reclaimer();

  // ---- objects
  static std::optional<VersionRow> latest_in_layer(sqlite::Db& db, std::int64_t bucket_id,
                                                   std::string_view key, Seq horizon);
  // The visible version of `key` through the chain (§6.4): the first layer with a row at or
  // below its horizon decides; a tombstone there means "no such key" (nullopt).
  static std::optional<Found> resolve(sqlite::Db& db, const std::vector<Layer>& layers,
                                      std::string_view key);
  static bool pinned(sqlite::Db& db, std::int64_t bucket_id, Seq from, Seq to);
  // What a write of `object` as `key` at `seq` answers (its fields are moved out).
  static ObjectInfo written(std::string_view key, std::optional<Seq> seq, std::int64_t size,
                            NewObject& object);
  static ObjectInfo object_info(sqlite::Db& db, std::int64_t bucket_id, std::string_view key,
                                const VersionRow& row);
  static std::vector<BlobRef> version_parts(sqlite::Db& db, std::int64_t bucket_id,
                                            std::string_view key, Seq seq);
  Result<ObjectInfo> put_row(WriteCtx& ctx, std::string_view bucket, std::string_view key,
                             NewObject& object, const WriteConditions& conditions);
  // check_conditions against the version of `key` visible in `bucket` now, in the write's
  // transaction (after every write committed or batched before it).
  Result<void> check_current(WriteCtx& ctx, const BucketRow& bucket, std::string_view key,
                             const WriteConditions& conditions);
  // Inserts a version (object when `object` is set, else a tombstone) in `bucket` and, in a
  // regular root bucket, prunes the previous version unless a root pins it (§6.6 step 5,
  // §6.7). Returns the new seq, or nullopt when a delete left nothing to shadow.
  std::optional<Seq> insert_version(WriteCtx& ctx, const BucketRow& bucket, std::string_view key,
                                    const NewObject* object);
  // A new reference to `blob`; the first one also stores its bytes when it has them.
  static void add_ref(WriteCtx& ctx, const BlobRef& blob);
  static void drop_ref(WriteCtx& ctx, std::string_view hash, std::int64_t count = 1);
  // Whether a row may name `blob` now (its file exists, or its bytes come with it).
  bool present(const BlobRef& blob) const;
  // Releases the write pin of `blob`'s file once the transaction ends.
  static void release_on_commit(WriteCtx& ctx, const BlobRef& blob);
  // The bytes of a blob kept in the database (its own, an object's by data_id, or a shared
  // blob's by hash); null for a file or a row that is gone.
  static std::shared_ptr<const std::string> bytes_of(sqlite::Db& db, const BlobRef& blob);
  // Fills the bytes of the parts kept in the database.
  static void load_bytes(sqlite::Db& db, std::vector<BlobRef>& parts);
  // Removes one version row and its parts, dropping their blob references.
  static void remove_version(WriteCtx& ctx, std::int64_t bucket_id, std::string_view key, Seq seq);

  // The body of put_part and put_part_copy once `blob` may be named: (re)places the part.
  static PartInfo place_part(WriteCtx& ctx, std::string_view upload_id, int part_number,
                             BlobRef blob, std::string etag, Metadata checksums);
  // Drops every part's reference and the upload's rows.
  static void remove_upload(WriteCtx& ctx, std::string_view upload_id);

  // ---- listing
  Result<ListPage> list_in(sqlite::Db& db, const BucketRow& bucket, const ListQuery& query);

  std::filesystem::path dir_;
  StoreOptions options_;
  int lock_fd_;
  BlobFiles blobs_;
  SpaceReserve reserve_;

  std::mutex write_mu_;
  std::unique_ptr<sqlite::Db> writer_;
  Seq last_seq_ = 0;  // guarded by write_mu_

  // Writes waiting for the committer thread, which runs every batch. Guarded by queue_mu_.
  std::mutex queue_mu_;
  std::condition_variable queue_wake_;
  std::deque<QueuedWrite*> queue_;
  bool commit_stop_ = false;  // the committer ends once the queue is empty
  std::thread committer_;

  std::mutex pool_mu_;
  std::vector<std::unique_ptr<sqlite::Db>> pool_;

  std::shared_mutex chain_mu_;
  std::unordered_map<std::int64_t, std::shared_ptr<const Ancestry>> chains_;

  std::mutex reclaim_mu_;
  std::condition_variable reclaim_wake_;
  std::condition_variable reclaim_idle_;
  std::deque<std::int64_t> reclaims_;  // bucket ids, in deletion order
  bool reclaiming_ = false;            // a batch is running
  bool reclaim_stop_ = false;
  std::thread reclaimer_;

  // WAL checkpoints run on a connection and a thread of their own, never inside a writer's
  // COMMIT (SQLite's automatic checkpoint would copy pages and fsync while holding the write
  // lock, and every write queued behind it would wait). The writer's commit hook wakes the
  // checkpointer once the WAL holds k_checkpoint_frames frames.
  void run_checkpointer();
  void checkpoint(int& wal_frames, int& copied);  // one PASSIVE pass (SQLite's counts)
  static int on_wal_commit(void* self, sqlite3* db, const char* name, int frames);
  std::unique_ptr<sqlite::Db> checkpoint_db_;
  std::mutex checkpoint_mu_;
  std::condition_variable checkpoint_wake_;
  bool checkpoint_due_ = false;
  std::atomic<int> checkpointed_frames_{0};  // the WAL's frames at the last pass
  bool checkpoint_stop_ = false;
  std::thread checkpointer_;
};

template <class F>
auto SqliteStore::write(F&& body) -> decltype(body(std::declval<WriteCtx&>())) {
  using R = decltype(body(std::declval<WriteCtx&>()));
  std::optional<R> result;
  QueuedWrite item;
  item.run = [&](WriteCtx& ctx) {
    result.emplace(body(ctx));
    return result->has_value();
  };
  run_queued(item);
  if (item.failure) return std::unexpected(std::move(*item.failure));
  return std::move(*result);
}

template <class F>
auto SqliteStore::write_freeing(F&& body) -> decltype(body(std::declval<WriteCtx&>())) {
  auto result = write(body);
  if (!result && result.error().code == StoreErrc::no_space && reserve_.release()) {
    result = write(body);
  }
  if (result) reserve_.restore();
  return result;
}

template <class F, class Then>
void SqliteStore::write_async(F body, Then then) {
  using R = decltype(body(std::declval<WriteCtx&>()));
  auto result = std::make_shared<std::optional<R>>();
  auto item = std::make_unique<QueuedWrite>();
  item->run = [result, body = std::move(body)](WriteCtx& ctx) mutable {
    result->emplace(body(ctx));
    return (*result)->has_value();
  };
  item->then = [result, then = std::move(then)](QueuedWrite& done) mutable {
    if (done.failure) return then(R(std::unexpected(std::move(*done.failure))));
    then(std::move(**result));
  };
  std::lock_guard lock(queue_mu_);
  queue_.push_back(item.release());  // deleted by the committer after `then`
  queue_wake_.notify_one();
}

template <class F>
auto SqliteStore::read(F&& body) -> decltype(body(std::declval<sqlite::Db&>())) {
  try {
    auto db = acquire_reader();
    auto result = [&] {
      sqlite::Transaction txn(*db, sqlite::Transaction::Kind::read);
      auto r = body(*db);
      txn.commit();
      return r;
    }();
    release_reader(std::move(db));
    return result;
  } catch (const std::exception& e) {
    return std::unexpected(failure_of(e, "reading"));
  }
}

// Encoding of Metadata pairs in one TEXT column (JSON array of [name, value] pairs).
std::optional<std::string> encode_metadata(const Metadata& metadata);
Metadata decode_metadata(const std::optional<std::string>& text);

// Key rules of §6.2: 1..1024 bytes, no NUL.
bool valid_key(std::string_view key);

// The smallest string greater than every string that starts with `prefix`: the prefix with
// its last byte incremented after dropping trailing 0xff bytes; nullopt when none exists.
std::optional<std::string> prefix_successor(std::string_view prefix);

}  // namespace tfork::store
