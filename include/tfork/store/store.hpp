// SPDX-License-Identifier: Apache-2.0
#pragma once
// The local store's storage engine (server-design.md §6): SQLite (WAL) metadata plus
// content-addressed immutable blob files. A bucket is a chain of layers: a fork is one row
// (parent, horizon), reads fall through the chain at each layer's horizon, tombstones shadow,
// listings merge the layers in key order. Every storage choice lives behind this class.
//
// Rules callers rely on (implementation: src/store/):
// * Thread safety: every method may be called concurrently. Writes are serialised behind one
//   writer connection (BEGIN IMMEDIATE); each read runs in one SQLite read transaction, so a
//   call sees one consistent state (§6.8).
// * Seqs are assigned under the writer lock as max(now_ns, last_seq + 1) and persisted, so
//   they never repeat or go backwards, across restarts too.
// * Blobs: call write_blob (or adopt_blob for a file streamed into tmp_dir()) before the row
//   that names them, once per write: a write that fails (a condition, a missing bucket, a
//   full disk) unlinks the blob files it was given that no row names, so a retry writes its
//   blob again. A blob of at most k_max_db_blob bytes is kept in the metadata database,
//   in the transaction of the row that first names it: no file, no fsync, and never a row
//   without its bytes. An object of one such blob owns its bytes (no reference count, no
//   sharing: a copy copies at most k_max_db_blob bytes); parts of multipart objects and
//   uploads share theirs by hash. Its BlobRef carries the bytes (from write_blob, adopt_blob
//   and get_object alike). A larger blob is an immutable file; stream it from blob_path() with no
//   lock held. The file is unlinked once no row names it (an overwrite in a regular bucket, a
//   deleted fork), so open every part right after get_object (an open file stays readable)
//   and, if one is already gone (ENOENT), call get_object again: the newer state is consistent.
// * Errors: a second Store on the same directory fails with StoreErrc::io ("in use").
//   Keys are 1..1024 bytes without NUL (else invalid_argument). A row can never name a blob
//   that was not written (put_object/put_part answer invalid_argument).
// * ETags: put_object and put_part store the caller's etag (md5 hex of the content).
//   complete_upload computes the multipart ETag itself with multipart_etag() below — the one
//   place that rule lives.
// * Listing results carry key, seq, size, etag, content_type and checksums; user_meta and
//   parts are left empty (ListObjects does not return them; use get_object).
// * delete_bucket frees the name at once and returns; the rows the bucket itself wrote are
//   removed in short batches by a background thread (O(its own writes), never O(objects
//   visible through it)); an interrupted reclaim is resumed by the next open, which does not
//   wait for it. wait_for_reclaims() blocks until none is pending (tests, benchmarks).
// * A full disk (issue 24 §2.1): writes of new data (write_blob, adopt_blob, copy_object,
//   create_upload, complete_upload) answer no_space once the disk is nearly full, while
//   deletes (delete_object, delete_bucket, abort_upload, delete_snapshot) keep working in the
//   room StoreOptions::reserve_bytes kept for them, across restarts too.
// * Snapshot-enabled buckets (and all forks) keep every version, so any ns timestamp can be
//   read. A regular root bucket keeps only the live version of a key, plus versions pinned by
//   snapshots it took while it was snapshot-enabled; `at` reads there are best effort.

#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::store {

// Commit sequence numbers are Unix nanoseconds, unique and increasing; a snapshot version
// is one of them, and any such timestamp can be read ("fork at any ns timestamp").
using Seq = std::int64_t;

enum class StoreErrc {
  no_such_bucket,
  bucket_exists,         // the name is taken
  bucket_not_empty,      // plain delete of a bucket with visible objects
  bucket_has_forks,      // delete (even forced) of a bucket with live forks
  not_snapshot_enabled,  // snapshot or fork of a regular bucket
  no_such_snapshot,
  no_such_key,
  no_such_upload,
  // CompleteMultipartUpload names a part that was not uploaded, or with another etag
  invalid_part,
  invalid_part_order,
  no_such_access_key,
  precondition_failed,  // a write's WriteConditions did not hold: nothing was written
  invalid_argument,
  no_space,  // the disk (or the quota) is full, or too full for new data: nothing was written
  io,        // other disk or database failure
};

struct StoreError {
  StoreErrc code;
  std::string message;
};

template <class T>
using Result = std::expected<T, StoreError>;

struct BucketInfo {
  std::string name;
  Seq created = 0;
  bool snapshot_enabled = false;
  std::optional<std::string> fork_source;  // the parent bucket's name, for forks
  std::optional<Seq> fork_snapshot;        // the parent's horizon, for forks
  Seq fork_created = 0;                    // when the fork was made (forks only)
  bool has_children = false;               // live forks exist
};

// What a bucket holds as its readers see it (through its fork chain, tombstones applied).
struct BucketStats {
  std::int64_t objects = 0;  // visible keys
  std::int64_t bytes = 0;    // the sum of their sizes
};

struct SnapshotInfo {
  Seq version = 0;
  std::optional<std::string> name;  // nullopt when unnamed
  Seq created = 0;
};

// x-amz-meta-* (names lowercased, no prefix)
using Metadata = std::vector<std::pair<std::string, std::string>>;

// Blobs of at most this many bytes live in the metadata database, larger ones in files. Small
// objects then cost one SQLite transaction instead of a file created, written, fsynced and
// renamed. The bound keeps memory bounded too: a body is received in memory up to this size.
inline constexpr std::int64_t k_max_db_blob = 16 * 1024;

struct BlobRef {
  std::string hash;  // sha256 hex of the content
  std::int64_t size = 0;
  // As a part of a multipart object: the part's x-amz-checksum-* values, e.g. {"crc32",
  // "<base64>"}, kept after Complete (GetObjectAttributes and partNumber reads answer them).
  Metadata checksums{};
  // The content of a blob kept in the database (see k_max_db_blob); null for a blob file.
  std::shared_ptr<const std::string> bytes{};
  // Set when the bytes belong to one object version (its row's data_id), not to a shared blob.
  std::optional<std::int64_t> data_id{};
  // Where the content starts in the blob file: a part copied by reference (put_part_copy) is
  // `size` bytes of a larger blob from here; 0 for every other blob.
  std::int64_t offset = 0;
};

struct ObjectInfo {
  std::string key;
  Seq seq = 0;  // version; also the last-modified time in ns
  std::int64_t size = 0;
  std::string etag;  // without quotes; "<md5hex>" or "<md5hex>-<parts>"
  std::string content_type;
  Metadata user_meta;
  Metadata checksums;          // e.g. {"crc32", "<base64>"}
  std::vector<BlobRef> parts;  // the content in order: one blob, or one per multipart part
};

// What PutObject / CompleteMultipartUpload / CopyObject write.
struct NewObject {
  std::string etag;
  std::string content_type;
  Metadata user_meta;
  Metadata checksums;
  std::vector<BlobRef> parts;
};

// The conditions of a conditional write (S3's If-None-Match: * and If-Match on PutObject,
// CompleteMultipartUpload and CopyObject). The write evaluates them against the key's current
// version inside its own transaction, so of two racing writers only one can pass (style.md,
// "One road per request"); a write whose conditions fail leaves nothing behind.
struct WriteConditions {
  bool if_none_match_any = false;  // the key must not exist
  // Set: the key must exist with one of these ETags (unquoted; "*" matches any).
  std::optional<std::vector<std::string>> if_match;

  bool empty() const { return !if_none_match_any && !if_match; }
};

// The one rule of WriteConditions, given the current version's ETag (nullopt: no such key):
// precondition_failed when If-None-Match finds the key or If-Match another ETag, no_such_key
// when If-Match finds no key (S3 answers 404 there). The store applies it inside the write;
// a caller may apply it to a read first, to refuse early, but only the write's check counts.
Result<void> check_conditions(const WriteConditions& conditions,
                              std::optional<std::string_view> current_etag);

struct ListQuery {
  std::string prefix;
  std::string delimiter;
  // Resume point: only keys strictly greater than `after`. When `after_is_prefix`, `after`
  // was an emitted common prefix and its whole subtree is skipped.
  std::string after;
  bool after_is_prefix = false;
  int max_keys = 1000;    // keys plus common prefixes per page
  std::optional<Seq> at;  // X-Tigris-Snapshot-Version: list the bucket as of this time

  // Whether `key` has the shape of one of this listing's common prefixes (the prefix, then
  // one segment ending with the delimiter). A v1 marker of that shape is read as a common
  // prefix (S3 lists only entries after the marker, and everything under it rolls up into
  // it), so a page never resumes at a deleted key of that shape while keys under it remain.
  bool names_common_prefix(std::string_view key) const;
};

// A page steps over at most max_keys + 1000 rows (tombstones and the versions they shadow
// included), so its cost does not grow with the keys deleted before it: a page may be
// truncated with fewer entries than max_keys, even none (as S3 allows). Follow `truncated`.
struct ListPage {
  std::vector<ObjectInfo> objects;           // in key order
  std::vector<std::string> common_prefixes;  // in order
  bool truncated = false;
  // The resume point: the last key or prefix emitted, or a deleted key stepped over after it
  // (every key up to it has been listed; never one that names_common_prefix while keys under
  // it are still to come).
  std::string last;
  bool last_is_prefix = false;
  std::int64_t rows_read = 0;  // the rows the page stepped over, in every layer of the chain
};

// What merge_fork did: the target's version after the merge (reads at it see every merged
// write) and how many keys it wrote and deleted.
struct MergeResult {
  Seq version = 0;
  std::int64_t written = 0;
  std::int64_t deleted = 0;
};

struct UploadInfo {
  std::string upload_id;
  std::string bucket;
  std::string key;
  Seq created = 0;
  // The NewObject::checksums create_upload was given (the server keeps the checksum
  // algorithm its client asked for there, with an empty value).
  Metadata checksums;
};

struct PartInfo {
  int part_number = 0;
  BlobRef blob;
  std::string etag;    // md5 hex, no quotes
  Metadata checksums;  // as given to put_part
};

enum class Role { editor, read_only, namespace_admin };
struct BucketRole {
  std::string bucket;  // a bucket name, or "*" with namespace_admin
  Role role;
};

struct AccessKey {
  std::string id;      // "tid_..."
  std::string secret;  // "tsec_..."
  std::string name;
  bool active = true;
  Seq created = 0;
  std::vector<BucketRole> roles;
};

enum class Durability {
  full,    // fsync blob files and directories; SQLite synchronous=FULL
  normal,  // fsync blob files; SQLite synchronous=NORMAL (survives kill -9, the default)
  off,     // no fsync (benchmarks of clients only)
};

struct StoreOptions {
  Durability durability = Durability::normal;
  // The WAL is checkpointed in the background each time it has grown by this many frames
  // (pages), and writers are held for a last short pass once it holds 16 times as many.
  int checkpoint_frames = 1000;
  // Disk space kept in <dir>/reserve for deletes (issue 24 §2.1): new data is refused with
  // no_space once less than this is free besides it, and the reserve is then released so that
  // deletes, which SQLite must also write, can empty a full disk; 0: none.
  std::int64_t reserve_bytes = std::int64_t{4} << 20;
};

class Store {
 public:
  // Opens (creating if needed) <dir>/meta.db, blobs/ and tmp/; takes <dir>/LOCK with flock
  // (error when another server holds it); removes tmp/* and orphan blobs; makes <dir>/reserve
  // (StoreOptions::reserve_bytes) when the disk has room for it, else releases it.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& dir,
                                             const StoreOptions& options = {});
  virtual ~Store() = default;

  // ---- buckets, snapshots, forks (all O(1) in the number of objects)
  virtual Result<BucketInfo> create_bucket(std::string_view name, bool snapshot_enabled) = 0;
  virtual Result<BucketInfo> create_fork(std::string_view name, std::string_view source,
                                         std::optional<Seq> snapshot) = 0;
  virtual Result<BucketInfo> head_bucket(std::string_view name) = 0;
  virtual Result<std::vector<BucketInfo>> list_buckets() = 0;                       // by name
  virtual Result<std::vector<BucketInfo>> list_forks(std::string_view source) = 0;  // by name
  // force: remove the contents too. Either way a bucket with live forks is refused.
  virtual Result<void> delete_bucket(std::string_view name, bool force) = 0;
  virtual Result<void> set_snapshot_enabled(std::string_view name, bool enabled) = 0;

  virtual Result<SnapshotInfo> take_snapshot(std::string_view bucket,
                                             std::optional<std::string> name) = 0;
  // Newest first.
  virtual Result<std::vector<SnapshotInfo>> list_snapshots(std::string_view bucket) = 0;
  virtual Result<void> delete_snapshot(std::string_view bucket, Seq version) = 0;

  // ---- blobs: written before any row names them
  virtual Result<BlobRef> write_blob(std::string_view content) = 0;
  // The file of a blob without `bytes`.
  virtual std::filesystem::path blob_path(const BlobRef& blob) const = 0;
  // Every blob the store records (hash and size, no bytes): the shared ones by hash, then the
  // bytes objects own (with data_id). What `tfork serve --verify` checks.
  virtual Result<std::vector<BlobRef>> list_blobs() = 0;
  // The bytes of a blob kept in the database; nullopt when the blob is a file (or unknown).
  virtual Result<std::optional<std::string>> db_blob_bytes(const BlobRef& blob) = 0;
  // Who uses a blob, for a report (`serve --verify` of a corrupt one): "bucket/key" of up to
  // `limit` objects whose content, or a part of it, the blob is ("bucket/key (upload)" for an
  // unfinished upload's part), in the bucket whose version names it; forks that share that
  // version through their snapshot are not listed. Reads every version: for rare use.
  virtual Result<std::vector<std::string>> blob_users(const BlobRef& blob, std::size_t limit) = 0;

  // ---- objects
  // `conditions` are evaluated in the write's transaction (precondition_failed, no_such_key).
  virtual Result<ObjectInfo> put_object(std::string_view bucket, std::string_view key,
                                        NewObject object, WriteConditions conditions = {}) = 0;
  // put_object without waiting: the write joins the next group commit and `done` gets its
  // result on the store's committer thread (or at once, on the caller's, for an invalid key).
  // `done` must be quick and must not call the store: it runs between two batches of writes.
  virtual void put_object_async(std::string bucket, std::string key, NewObject object,
                                std::function<void(Result<ObjectInfo>)> done,
                                WriteConditions conditions = {}) = 0;
  virtual Result<ObjectInfo> get_object(std::string_view bucket, std::string_view key,
                                        std::optional<Seq> at = std::nullopt) = 0;
  // Inserts a tombstone when the key is visible; a no-op otherwise (S3 answers 204 either way).
  virtual Result<void> delete_object(std::string_view bucket, std::string_view key) = 0;
  virtual Result<ListPage> list_objects(std::string_view bucket, const ListQuery& query) = 0;
  // O(1): the new version refers to the source's blobs. `replace` set: use its metadata
  // (etag and parts are taken from the source). `conditions` are on the destination key.
  virtual Result<ObjectInfo> copy_object(std::string_view src_bucket, std::string_view src_key,
                                         std::optional<Seq> src_at, std::string_view dst_bucket,
                                         std::string_view dst_key, std::optional<NewObject> replace,
                                         WriteConditions conditions = {}) = 0;

  // ---- multipart
  virtual Result<UploadInfo> create_upload(std::string_view bucket, std::string_view key,
                                           NewObject meta) = 0;
  // Replaces an earlier part of the same number. `checksums` are kept with the part.
  virtual Result<PartInfo> put_part(std::string_view upload_id, int part_number, BlobRef blob,
                                    std::string etag, Metadata checksums = {}) = 0;
  virtual Result<std::vector<PartInfo>> list_parts(std::string_view upload_id) = 0;
  // UploadPartCopy by reference: the part is `range.size` bytes at `range.offset` of a blob
  // file the store holds (a part of get_object's answer, narrowed), so no data is written.
  // Refused (invalid_argument) for a blob kept in the database or no longer stored; callers
  // then copy the bytes through put_part. `etag` is the md5 of the range.
  virtual Result<PartInfo> put_part_copy(std::string_view upload_id, int part_number, BlobRef range,
                                         std::string etag, Metadata checksums = {}) {
    (void)upload_id, (void)part_number, (void)range, (void)etag, (void)checksums;
    return std::unexpected(
        StoreError{StoreErrc::invalid_argument, "this store copies no part by reference"});
  }
  // parts: (part number, etag) as the client sent them, ascending. `checksums`, when set,
  // are the object's (the caller computes a composite checksum); else the upload's are kept.
  // When `conditions` fail, the upload stays as it was.
  virtual Result<ObjectInfo> complete_upload(std::string_view upload_id,
                                             const std::vector<std::pair<int, std::string>>& parts,
                                             std::optional<Metadata> checksums = std::nullopt,
                                             WriteConditions conditions = {}) = 0;
  virtual Result<void> abort_upload(std::string_view upload_id) = 0;
  virtual Result<UploadInfo> get_upload(std::string_view upload_id) = 0;

  // ---- access keys (IAM)
  virtual Result<AccessKey> create_access_key(std::string_view name,
                                              std::vector<BucketRole> roles) = 0;
  virtual Result<AccessKey> get_access_key(std::string_view id) = 0;
  virtual Result<std::vector<AccessKey>> list_access_keys() = 0;
  virtual Result<void> delete_access_key(std::string_view id) = 0;
  virtual Result<void> update_access_key_roles(std::string_view id,
                                               std::vector<BucketRole> roles) = 0;

  // ---- additions (default implementations keep existing subclasses and fakes compiling)

  // Like delete_object, and says what it wrote: the tombstone's seq (the delete marker's
  // version id), or nullopt when nothing was visible or the rows were removed outright
  // (a regular root bucket keeps no delete markers).
  virtual Result<std::optional<Seq>> delete_object_version(std::string_view bucket,
                                                           std::string_view key) {
    auto done = delete_object(bucket, key);
    if (!done) return std::unexpected(std::move(done.error()));
    return std::nullopt;
  }

  // The uploads in progress in `bucket` whose key starts with `prefix`, by key then creation
  // (ListMultipartUploads).
  virtual Result<std::vector<UploadInfo>> list_uploads(std::string_view bucket,
                                                       std::string_view prefix) {
    (void)bucket;
    (void)prefix;
    return std::vector<UploadInfo>{};
  }

  // The visible objects of `bucket` and their total size: O(visible objects), read page by
  // page through list_objects here; one read transaction in the SQLite store.
  virtual Result<BucketStats> bucket_stats(std::string_view bucket);

  // Replaces an access key's secret with a fresh one (IAM RotateAccessKey); the old secret
  // stops working at once. Returns the key with its new secret.
  virtual Result<AccessKey> rotate_access_key(std::string_view id) {
    return std::unexpected(StoreError{
        StoreErrc::invalid_argument,
        "rotating access keys is not supported by this store (" + std::string(id) + ")"});
  }

  // Blocks until every deleted bucket's rows are reclaimed.
  virtual void wait_for_reclaims() {}

  // Whether `bytes` of new data would be stored now: no_space when the disk has not that much
  // room besides its reserve. Asked before a body is read, so that a big PUT on a nearly full
  // disk is refused at once rather than streamed into tmp/ first.
  virtual Result<void> admit_data(std::int64_t bytes) {
    (void)bytes;
    return {};
  }

  // Where a caller may stream an upload before adopt_blob (same filesystem as the blobs, so
  // adoption is a rename; emptied on every open).
  virtual std::filesystem::path tmp_dir() const { return std::filesystem::temp_directory_path(); }

  // Moves a fully written file into the blob store under `sha256_hex`, which the caller
  // computed while streaming (§6.6 steps 2-4); fsyncs per durability. The file is consumed
  // (a small one is read into the returned BlobRef's bytes and removed).
  virtual Result<BlobRef> adopt_blob(const std::filesystem::path& file,
                                     std::string_view sha256_hex);

  // ---- merge and rebase (tigris-wire §2.11)

  // Applies `fork`'s own changes since its fork point onto `target`, its direct parent, as new
  // writes in one transaction: each key the fork wrote or deleted (its newest row) is written
  // into the target, unless it ends where it started (the same content as at the fork point,
  // or absent then and now). The local store's rule for a key changed on both sides since the
  // fork point: the fork's version wins (Tigris does not publish its rule). O(rows the fork
  // wrote), never O(objects visible through either bucket). invalid_argument when `fork` is
  // not a direct fork of `target`; no_such_bucket when either is missing.
  virtual Result<MergeResult> merge_fork(std::string_view target, std::string_view fork) = 0;

  // Moves `fork`'s base to its parent's current state (a fresh horizon); the fork's own
  // writes stay and keep shadowing the parent. O(rows the fork wrote). Refused
  // (bucket_has_forks) while the fork has live forks of its own: their view of the grandparent
  // is capped by this fork's horizon and must not move under them (deleted ones still being
  // reclaimed do not count). invalid_argument when `fork` is not a fork.
  virtual Result<BucketInfo> rebase_fork(std::string_view fork) = 0;
};

// The S3 multipart ETag: md5 over the concatenated binary md5s of the parts, in hex, then
// "-<number of parts>" (e.g. "9b2cf535f27731c974343645a3985328-2"). `part_md5_hex` are the
// parts' etags without quotes. nullopt when one is not 32 hex digits.
std::optional<std::string> multipart_etag(const std::vector<std::string>& part_md5_hex);

}  // namespace tfork::store
