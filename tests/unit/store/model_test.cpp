// SPDX-License-Identifier: Apache-2.0
// The store against a brute-force reference model over random operation sequences
// (server-design.md §6.10). The model keeps every bucket's full version history in plain
// std::maps plus fork parents and horizons, and answers reads by walking the chain key by
// key; listings are computed from the full visible set and compared page by page.

#include "tfork/crypto/hash.hpp"

#include <catch2/catch.hpp>

#include "store_test_support.hpp"
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace tfork::store::test {
namespace {

constexpr Seq k_inf = std::numeric_limits<Seq>::max();

struct MVersion {
  Seq seq = 0;
  bool tombstone = false;
  std::string content;
  std::string etag;                // "e" + content for a put, the multipart ETag for an upload
  std::vector<std::string> parts;  // the blobs' contents, in order

  // Two versions hold the same content when they have the same ETag and the same blobs in
  // the same order (what merge_fork compares).
  bool same_content(const MVersion& other) const {
    return etag == other.etag && parts == other.parts;
  }
};

MVersion put_version(Seq seq, const std::string& content) {
  return MVersion{seq, false, content, "e" + content, {content}};
}

MVersion tombstone_version(Seq seq) {
  return MVersion{seq, true, {}, {}, {}};
}

struct MBucket {
  std::string name;
  bool live = true;
  bool snapshot_enabled = true;  // regular roots prune history: only live reads are checked
  int parent = -1;
  Seq fork_seq = 0;
  std::map<std::string, std::vector<MVersion>> history;  // ascending seq per key
  std::set<Seq> snapshots;
};

class Mismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void expect(bool ok, const std::string& what) {
  if (!ok) throw Mismatch(what);
}

struct Model {
  std::vector<MBucket> buckets;  // index = model id, never reused
  std::set<Seq> seqs;            // every seq the store has reported
  // (after, at): a merge's writes took seqs in between that the store does not report; the
  // model records them all at `at`, so no read is made inside.
  std::vector<std::pair<Seq, Seq>> merge_windows;

  int find(const std::string& name) const {
    for (std::size_t i = 0; i < buckets.size(); ++i) {
      if (buckets[i].live && buckets[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }

  std::vector<std::pair<int, Seq>> chain(int bucket, Seq at) const {
    // `at` bounds the bucket's own layer; sources are read at the fork points only.
    std::vector<std::pair<int, Seq>> out;
    Seq horizon = at;
    Seq cap = std::numeric_limits<Seq>::max();
    for (int b = bucket; b >= 0; b = buckets[b].parent) {
      out.emplace_back(b, horizon);
      if (buckets[b].parent >= 0) {
        cap = std::min(cap, buckets[b].fork_seq);
        horizon = cap;
      }
    }
    return out;
  }

  // Content and seq of the visible version, or nullopt.
  std::optional<MVersion> get(int bucket, const std::string& key, Seq at) const {
    for (const auto& [b, horizon] : chain(bucket, at)) {
      const auto it = buckets[b].history.find(key);
      if (it == buckets[b].history.end()) continue;
      const MVersion* best = nullptr;
      for (const auto& version : it->second) {
        if (version.seq <= horizon) best = &version;
      }
      if (best == nullptr) continue;
      if (best->tombstone) return std::nullopt;
      return *best;
    }
    return std::nullopt;
  }

  std::map<std::string, MVersion> visible(int bucket, Seq at) const {
    std::set<std::string> keys;
    for (const auto& [b, horizon] : chain(bucket, at)) {
      for (const auto& [key, versions] : buckets[b].history)
        keys.insert(key);
    }
    std::map<std::string, MVersion> out;
    for (const auto& key : keys) {
      if (auto version = get(bucket, key, at)) out.emplace(key, *version);
    }
    return out;
  }

  bool has_live_children(int bucket) const {
    return std::ranges::any_of(buckets,
                               [&](const MBucket& b) { return b.live && b.parent == bucket; });
  }
};

const std::vector<std::string> k_keys = {"a", "a/b", "a/c", "a/b/d", "b/", "b/x", "c", "c/"};
const std::vector<std::string> k_contents = {"", "x", "yy", "zzz", "hello", "a/b"};
const std::vector<std::string> k_names = {"b0", "b1", "b2", "b3", "b4", "b5"};
const std::vector<std::string> k_prefixes = {"", "", "a", "a/", "b", "b/", "c", "x", "a/b"};

class Runner {
 public:
  Runner(std::uint32_t seed, const std::filesystem::path& dir)
      : rng_(seed), dir_(dir), store_(open_store(dir)) {}

  void run(int ops) {
    for (int i = 0; i < ops; ++i)
      step();
    // Final sweep: every live bucket fully listed and read, live and at a past seq.
    for (std::size_t b = 0; b < model_.buckets.size(); ++b) {
      if (!model_.buckets[b].live) continue;
      check_list(static_cast<int>(b), "", "", 1000, std::nullopt);
      check_list(static_cast<int>(b), "", "/", 3, random_past(static_cast<int>(b)));
      for (const auto& key : k_keys)
        check_get(static_cast<int>(b), key, std::nullopt);
    }
  }

  const std::vector<std::string>& log() const { return log_; }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  template <class T>
  const T& pick_from(const std::vector<T>& items) {
    return items[static_cast<std::size_t>(pick(static_cast<int>(items.size())))];
  }

  int random_live() {
    std::vector<int> live;
    for (std::size_t i = 0; i < model_.buckets.size(); ++i) {
      if (model_.buckets[i].live) live.push_back(static_cast<int>(i));
    }
    return live.empty() ? -1 : pick_from(live);
  }

  // A past timestamp: a seq the store reported, one next to it, or a point between two
  // (never inside a merge: moved to the merge's version).
  Seq random_past() {
    Seq at = random_seq();
    for (const auto& [after, version] : model_.merge_windows) {
      if (at > after && at < version) at = version;
    }
    return at;
  }

  Seq random_seq() {
    if (model_.seqs.empty()) return 1;
    std::vector<Seq> seqs(model_.seqs.begin(), model_.seqs.end());
    const auto i = static_cast<std::size_t>(pick(static_cast<int>(seqs.size())));
    switch (pick(4)) {
      case 0:
        return seqs[i] - 1;
      case 1:
        if (i + 1 < seqs.size()) {
          return std::uniform_int_distribution<Seq>(seqs[i], seqs[i + 1])(rng_);
        }
        return seqs[i];
      default:
        return seqs[i];
    }
  }

  // A past timestamp to read `bucket` at, or nullopt (live) for a regular bucket, which
  // keeps no history to compare.
  std::optional<Seq> random_past(int bucket) {
    if (!model_.buckets[bucket].snapshot_enabled) return std::nullopt;
    return random_past();
  }

  void note(const std::string& line) { log_.push_back(line); }

  void step() {
    const int choice = pick(100);
    const int b = random_live();
    if (choice < 6 || b < 0) return create_root();
    if (choice < 28) return put(b);
    if (choice < 36) return remove(b);
    if (choice < 42) return snapshot(b);
    if (choice < 52) return fork(b);
    const std::optional<Seq> at = pick(3) == 0 ? random_past(b) : std::nullopt;
    if (choice < 64) return check_get(b, pick_from(k_keys), at);
    if (choice < 78) {
      return check_list(b, pick_from(k_prefixes), pick(2) == 0 ? "" : "/", 1 + pick(7), at);
    }
    if (choice < 83) return delete_bucket(b);
    if (choice < 86) return delete_snapshot(b);
    if (choice < 89) return copy(b);
    if (choice < 91) return check_head(b);
    if (choice < 95) return merge(b);
    if (choice < 97) return rebase(b);
    if (choice < 99) return multipart(b);
    return reopen();
  }

  void create_root() {
    const std::string name = pick_from(k_names);
    const bool snapshot_enabled = pick(4) != 0;
    note("create_bucket " + name + (snapshot_enabled ? "" : " regular"));
    auto info = store_->create_bucket(name, snapshot_enabled);
    if (model_.find(name) >= 0) {
      expect(!info && info.error().code == StoreErrc::bucket_exists, "create over a live name");
      return;
    }
    expect(info.has_value(), "create_bucket failed");
    model_.seqs.insert(info->created);
    MBucket bucket;
    bucket.name = name;
    bucket.snapshot_enabled = snapshot_enabled;
    model_.buckets.push_back(std::move(bucket));
  }

  void put(int b) {
    const std::string& key = pick_from(k_keys);
    const std::string& content = pick_from(k_contents);
    note("put " + model_.buckets[b].name + " " + key + " = '" + content + "'");
    auto blob = store_->write_blob(content);
    expect(blob.has_value(), "write_blob");
    NewObject object;
    object.etag = "e" + content;
    object.parts = {*blob};
    auto info = store_->put_object(model_.buckets[b].name, key, std::move(object));
    expect(info.has_value(), "put_object failed");
    expect(model_.seqs.empty() || info->seq > *model_.seqs.rbegin(), "seq not increasing");
    model_.seqs.insert(info->seq);
    model_.buckets[b].history[key].push_back(put_version(info->seq, content));
  }

  void remove(int b) {
    const std::string& key = pick_from(k_keys);
    note("delete " + model_.buckets[b].name + " " + key);
    const bool visible = model_.get(b, key, k_inf).has_value();
    auto seq = store_->delete_object_version(model_.buckets[b].name, key);
    expect(seq.has_value(), "delete_object failed");
    if (!model_.buckets[b].snapshot_enabled) {
      // A regular bucket removes the rows; the model still records the delete (live view).
      expect(!seq->has_value(), "a regular bucket writes no delete marker");
      if (visible) {
        const Seq after = *model_.seqs.rbegin() + 1;
        model_.buckets[b].history[key].push_back(tombstone_version(after));
      }
      return;
    }
    expect(seq->has_value() == visible, "tombstone written iff the key was visible");
    if (*seq) {
      model_.seqs.insert(**seq);
      model_.buckets[b].history[key].push_back(tombstone_version(**seq));
    }
  }

  void snapshot(int b) {
    note("snapshot " + model_.buckets[b].name);
    auto snap = store_->take_snapshot(model_.buckets[b].name, std::nullopt);
    if (!model_.buckets[b].snapshot_enabled) {
      expect(!snap && snap.error().code == StoreErrc::not_snapshot_enabled, "regular snapshot");
      return;
    }
    expect(snap.has_value(), "take_snapshot failed");
    model_.seqs.insert(snap->version);
    model_.buckets[b].snapshots.insert(snap->version);
  }

  void fork(int source) {
    std::string name = pick_from(k_names) + "f" + std::to_string(pick(3));
    std::optional<Seq> at;
    const int how = pick(3);
    auto& src = model_.buckets[source];
    if (how == 0 && !src.snapshots.empty()) {
      std::vector<Seq> snaps(src.snapshots.begin(), src.snapshots.end());
      at = pick_from(snaps);
    } else if (how == 1) {
      at = random_past();
    }
    note("fork " + name + " from " + src.name + " at " + (at ? std::to_string(*at) : "now"));
    auto info = store_->create_fork(name, src.name, at);
    if (model_.find(name) >= 0) {
      expect(!info && info.error().code == StoreErrc::bucket_exists, "fork over a live name");
      return;
    }
    if (!src.snapshot_enabled) {
      expect(!info && info.error().code == StoreErrc::not_snapshot_enabled, "regular source");
      return;
    }
    if (at && src.parent >= 0 && *at < src.fork_seq) {
      // A fork of a fork never reaches behind the source's own fork point.
      expect(!info && info.error().code == StoreErrc::invalid_argument, "fork before fork point");
      return;
    }
    expect(info.has_value(), "create_fork failed: " + (info ? "" : info.error().message));
    expect(info->fork_source == src.name, "fork_source");
    expect(info->fork_snapshot.has_value(), "fork_snapshot");
    if (at) expect(*info->fork_snapshot == *at, "fork_snapshot is the given version");
    if (!at) {
      // The implicit snapshot is listed on the source.
      model_.seqs.insert(*info->fork_snapshot);
      model_.buckets[source].snapshots.insert(*info->fork_snapshot);
    }
    model_.seqs.insert(info->created);
    MBucket bucket;
    bucket.name = name;
    bucket.parent = source;
    bucket.fork_seq = *info->fork_snapshot;
    model_.buckets.push_back(std::move(bucket));
  }

  void check_get(int b, const std::string& key, std::optional<Seq> at) {
    note("get " + model_.buckets[b].name + " " + key + (at ? " at " + std::to_string(*at) : ""));
    const auto expected = model_.get(b, key, at.value_or(k_inf));
    auto info = store_->get_object(model_.buckets[b].name, key, at);
    if (!expected) {
      expect(!info && info.error().code == StoreErrc::no_such_key,
             "expected no such key, got " +
                 (info ? "'" + content_of(*store_, *info) + "'" : info.error().message));
      return;
    }
    expect(info.has_value(), "expected '" + expected->content + "', got an error");
    expect(info->seq == expected->seq, "version seq");
    expect(content_of(*store_, *info) == expected->content,
           "expected '" + expected->content + "', got '" + content_of(*store_, *info) + "'");
    expect(info->etag == expected->etag, "etag");
  }

  void check_list(int b, const std::string& prefix, const std::string& delimiter, int max_keys,
                  std::optional<Seq> at) {
    note("list " + model_.buckets[b].name + " prefix='" + prefix + "' delim='" + delimiter +
         "' max=" + std::to_string(max_keys) + (at ? " at " + std::to_string(*at) : ""));
    // Expected entries in order: key -> is a common prefix.
    std::map<std::string, bool> entries;
    std::map<std::string, MVersion> objects;
    for (const auto& [key, version] : model_.visible(b, at.value_or(k_inf))) {
      if (!key.starts_with(prefix)) continue;
      const auto pos = delimiter.empty() ? std::string::npos : key.find(delimiter, prefix.size());
      if (pos != std::string::npos) {
        entries[key.substr(0, pos + delimiter.size())] = true;
      } else {
        entries[key] = false;
        objects.emplace(key, version);
      }
    }
    std::vector<std::pair<std::string, bool>> want(entries.begin(), entries.end());

    ListQuery query;
    query.prefix = prefix;
    query.delimiter = delimiter;
    query.max_keys = max_keys;
    query.at = at;
    std::size_t seen = 0;
    for (int pages = 0;; ++pages) {
      expect(pages <= 64, "listing does not terminate");
      auto page = store_->list_objects(model_.buckets[b].name, query);
      expect(page.has_value(), "list_objects failed");
      std::vector<std::pair<std::string, bool>> got;
      for (const auto& object : page->objects) {
        got.emplace_back(object.key, false);
        const auto it = objects.find(object.key);
        expect(it != objects.end(), "listed an invisible key " + object.key);
        expect(object.seq == it->second.seq, "listed seq of " + object.key);
        expect(object.size == static_cast<std::int64_t>(it->second.content.size()), "size");
        expect(object.etag == it->second.etag, "listed etag of " + object.key);
      }
      for (const auto& common : page->common_prefixes)
        got.emplace_back(common, true);
      std::ranges::sort(got);
      expect(static_cast<int>(got.size()) <= max_keys, "page larger than max_keys");
      for (const auto& entry : got) {
        expect(seen < want.size(), "extra entry " + entry.first);
        expect(entry == want[seen], "entry " + std::to_string(seen) + ": expected " +
                                        want[seen].first + ", got " + entry.first);
        ++seen;
      }
      // A page cut short by its row bound may resume after deleted keys past its last entry.
      const bool full = static_cast<int>(got.size()) == max_keys;
      if (!got.empty() &&
          (page->last != got.back().first || page->last_is_prefix != got.back().second)) {
        expect(page->truncated && !full && !page->last_is_prefix && page->last > got.back().first,
               "resume point is the last entry");
      }
      if (!page->truncated) {
        expect(seen == want.size(),
               "not truncated but " + std::to_string(want.size() - seen) + " entries missing");
        return;
      }
      expect(full || page->rows_read >= max_keys + 1000, "a truncated page that is not full");
      query.after = page->last;
      query.after_is_prefix = page->last_is_prefix;
    }
  }

  void delete_bucket(int b) {
    const bool force = pick(2) == 0;
    const std::string name = model_.buckets[b].name;
    note("delete_bucket " + name + (force ? " force" : ""));
    auto done = store_->delete_bucket(name, force);
    if (model_.has_live_children(b)) {
      expect(!done && done.error().code == StoreErrc::bucket_has_forks, "expected has forks");
      return;
    }
    if (!force && !model_.visible(b, k_inf).empty()) {
      expect(!done && done.error().code == StoreErrc::bucket_not_empty, "expected not empty");
      return;
    }
    expect(done.has_value(), "delete_bucket failed");
    model_.buckets[b].live = false;
    expect(!store_->head_bucket(name), "deleted bucket still there");
  }

  void delete_snapshot(int b) {
    auto& bucket = model_.buckets[b];
    if (bucket.snapshots.empty()) return;
    std::vector<Seq> snaps(bucket.snapshots.begin(), bucket.snapshots.end());
    const Seq version = pick_from(snaps);
    note("delete_snapshot " + bucket.name + " " + std::to_string(version));
    expect(store_->delete_snapshot(bucket.name, version).has_value(), "delete_snapshot failed");
    bucket.snapshots.erase(version);
  }

  void copy(int dst) {
    const int src = random_live();
    const std::string& src_key = pick_from(k_keys);
    const std::string& dst_key = pick_from(k_keys);
    const std::optional<Seq> at = pick(2) == 0 ? random_past(src) : std::nullopt;
    note("copy " + model_.buckets[src].name + "/" + src_key +
         (at ? "@" + std::to_string(*at) : "") + " -> " + model_.buckets[dst].name + "/" + dst_key);
    const auto source = model_.get(src, src_key, at.value_or(k_inf));
    auto info = store_->copy_object(model_.buckets[src].name, src_key, at, model_.buckets[dst].name,
                                    dst_key, std::nullopt);
    if (!source) {
      expect(!info && info.error().code == StoreErrc::no_such_key, "copy of a missing key");
      return;
    }
    expect(info.has_value(), "copy_object failed");
    model_.seqs.insert(info->seq);
    MVersion copied = *source;
    copied.seq = info->seq;
    model_.buckets[dst].history[dst_key].push_back(std::move(copied));
  }

  void check_head(int b) {
    const auto& bucket = model_.buckets[b];
    note("head " + bucket.name);
    auto info = store_->head_bucket(bucket.name);
    expect(info.has_value(), "head_bucket failed");
    expect(info->snapshot_enabled == bucket.snapshot_enabled, "snapshot_enabled");
    expect(info->has_children == model_.has_live_children(b), "has_children");
    if (bucket.parent >= 0) {
      expect(info->fork_source == model_.buckets[bucket.parent].name, "fork_source");
      expect(info->fork_snapshot == bucket.fork_seq, "fork_snapshot");
    } else {
      expect(!info->fork_source && !info->fork_snapshot, "root has no fork info");
    }
    auto snaps = store_->list_snapshots(bucket.name);
    expect(snaps.has_value(), "list_snapshots failed");
    std::vector<Seq> got;
    for (const auto& snap : *snaps)
      got.push_back(snap.version);
    std::vector<Seq> want(bucket.snapshots.rbegin(), bucket.snapshots.rend());
    expect(got == want, "snapshot list (newest first)");
  }

  // merge_fork: each key the fork wrote or deleted lands in its parent unless it ends where
  // it started (a delete of a key absent at the fork point or already gone from the parent,
  // a write of what the fork point held); on a key changed on both sides the fork wins.
  void merge(int b) {
    const auto& fork = model_.buckets[b];
    const int target = fork.parent >= 0 ? fork.parent : random_live();
    note("merge " + fork.name + " into " + model_.buckets[target].name);
    auto merged = store_->merge_fork(model_.buckets[target].name, fork.name);
    if (fork.parent < 0) {
      expect(!merged && merged.error().code == StoreErrc::invalid_argument, "merge of a root");
      return;
    }
    expect(merged.has_value(), "merge_fork failed: " + (merged ? "" : merged.error().message));
    std::vector<std::pair<std::string, MVersion>> landed;
    std::int64_t written = 0;
    std::int64_t deleted = 0;
    for (const auto& [key, versions] : fork.history) {
      const MVersion& mine = versions.back();
      const auto base = model_.get(target, key, fork.fork_seq);
      if (mine.tombstone) {
        if (!base || !model_.get(target, key, k_inf)) continue;
        landed.emplace_back(key, tombstone_version(merged->version));
        ++deleted;
      } else if (!base || !base->same_content(mine)) {
        MVersion version = mine;
        version.seq = merged->version;
        landed.emplace_back(key, std::move(version));
        ++written;
      }
    }
    expect(merged->written == written, "merged writes: expected " + std::to_string(written) +
                                           ", got " + std::to_string(merged->written));
    expect(merged->deleted == deleted, "merged deletes: expected " + std::to_string(deleted) +
                                           ", got " + std::to_string(merged->deleted));
    expect(merged->version > *model_.seqs.rbegin(), "merge version not after every seq");
    model_.merge_windows.emplace_back(*model_.seqs.rbegin(), merged->version);
    model_.seqs.insert(merged->version);
    for (auto& [key, version] : landed) {
      // A merged write reports its own seq, inside the merge (no read is made there); the
      // model takes it from the store, and checks everything else about the write.
      if (!version.tombstone) {
        auto info = store_->get_object(model_.buckets[target].name, key, std::nullopt);
        expect(info.has_value(), "merged key " + key + " missing");
        expect(info->seq > model_.merge_windows.back().first && info->seq < merged->version,
               "merged write's seq outside the merge");
        version.seq = info->seq;
      }
      model_.buckets[target].history[key].push_back(std::move(version));
    }
  }

  // rebase_fork: the fork now reads its parent as of now; its own writes stay.
  void rebase(int b) {
    auto& fork = model_.buckets[b];
    note("rebase " + fork.name);
    auto rebased = store_->rebase_fork(fork.name);
    if (fork.parent < 0) {
      expect(!rebased && rebased.error().code == StoreErrc::invalid_argument, "rebase of a root");
      return;
    }
    if (model_.has_live_children(b)) {
      expect(!rebased && rebased.error().code == StoreErrc::bucket_has_forks,
             "rebase of a fork with forks");
      return;
    }
    expect(rebased.has_value(), "rebase_fork failed: " + (rebased ? "" : rebased.error().message));
    expect(rebased->fork_snapshot && *rebased->fork_snapshot > *model_.seqs.rbegin(),
           "rebased horizon not after every seq");
    fork.fork_seq = *rebased->fork_snapshot;
    model_.seqs.insert(fork.fork_seq);
  }

  // A multipart upload of 1..3 parts, a part sometimes uploaded twice (the later one counts),
  // completed as one version whose content is the parts in order.
  void multipart(int b) {
    const auto& bucket = model_.buckets[b];
    const std::string& key = pick_from(k_keys);
    const int count = 1 + pick(3);
    std::vector<std::string> parts;
    std::vector<std::pair<int, std::string>> etags;
    auto upload = store_->create_upload(bucket.name, key, NewObject{});
    expect(upload.has_value(), "create_upload failed");
    for (int number = 1; number <= count; ++number) {
      for (int attempt = pick(4) == 0 ? 2 : 1; attempt > 0; --attempt) {
        const std::string content = pick_from(k_contents) + std::to_string(number);
        auto blob = store_->write_blob(content);
        expect(blob.has_value(), "write_blob");
        const auto etag = crypto::to_hex(crypto::md5(content));
        expect(store_->put_part(upload->upload_id, number, *blob, etag).has_value(), "put_part");
        if (attempt == 1) {
          parts.push_back(content);
          etags.emplace_back(number, etag);
        }
      }
    }
    std::string content;
    std::vector<std::string> md5s;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      content += parts[i];
      md5s.push_back(etags[i].second);
    }
    note("multipart " + bucket.name + " " + key + " = '" + content + "' in " +
         std::to_string(count) + " parts");
    auto info = store_->complete_upload(upload->upload_id, etags);
    expect(info.has_value(), "complete_upload failed: " + (info ? "" : info.error().message));
    expect(model_.seqs.empty() || info->seq > *model_.seqs.rbegin(), "seq not increasing");
    const auto etag = multipart_etag(md5s);
    expect(etag && info->etag == *etag, "multipart ETag");
    model_.seqs.insert(info->seq);
    model_.buckets[b].history[key].push_back(
        MVersion{info->seq, false, content, info->etag, std::move(parts)});
  }

  void reopen() {
    note("reopen");
    store_.reset();
    store_ = open_store(dir_);
  }

  std::mt19937 rng_;
  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  Model model_;
  std::vector<std::string> log_;
};

TEST_CASE("the store matches a brute-force model over random operation sequences",
          "[store][model]") {
  // Fixed seeds 1..sequences; TFORK_STORE_MODEL_SEQUENCES overrides the count (a count that
  // is not a positive number fails: a model test that ran nothing must not pass).
  int sequences = 2000;
  if (const char* env = std::getenv("TFORK_STORE_MODEL_SEQUENCES")) sequences = std::atoi(env);
  REQUIRE(sequences > 0);
  constexpr int k_ops = 40;
  int failures = 0;
  std::map<std::string, int> ran;  // operations by kind, over every sequence
  for (int seed = 1; seed <= sequences && failures < 3; ++seed) {
    TempDir dir;
    Runner runner(static_cast<std::uint32_t>(seed), dir.path());
    try {
      runner.run(k_ops);
      for (const auto& line : runner.log())
        ++ran[line.substr(0, line.find(' '))];
    } catch (const Mismatch& mismatch) {
      ++failures;
      std::ostringstream out;
      out << "seed " << seed << ": " << mismatch.what() << "\noperations:\n";
      for (const auto& line : runner.log())
        out << "  " << line << "\n";
      FAIL_CHECK(out.str());
    }
  }
  CHECK(failures == 0);
  // Every kind of operation was exercised and judged (a short run may miss the rare ones).
  if (sequences >= 200) {
    for (const char* kind : {"put", "delete", "fork", "merge", "rebase", "multipart", "copy",
                             "list", "get", "snapshot", "delete_bucket", "reopen"}) {
      INFO(kind);
      CHECK(ran[kind] > 0);
    }
  }
}

}  // namespace
}  // namespace tfork::store::test
